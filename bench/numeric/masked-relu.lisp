;; The cost of masked products below selections: the gradient of a
;; three-layer network with relu, clamp and a where on its output (batch
;; 256, widths 128-512-512-10). Run it with two binaries to compare:
;;
;;   epsilon run bench/numeric/masked-relu.lisp
;;
;; With `smoke`: batch 8, widths 6-12-12-3, 2 calls a measurement, and the
;; gradient checked against central finite differences (check-grad).
(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define calls (if smoke? 2 200))
(define (wave shape scale) (* scale (sin (reshape (arange (apply * shape)) shape))))
(define X (if smoke? (wave '(8 6) 1.0) (wave '(256 128) 1.0)))
(define W1 (if smoke? (wave '(6 12) 0.5) (wave '(128 512) 0.1)))
(define W2 (if smoke? (wave '(12 12) 0.3) (wave '(512 512) 0.05)))
(define W3 (if smoke? (wave '(12 3) 0.5) (wave '(512 10) 0.1)))
(define (loss W1 W2 W3)
  (let* ((h1 (relu (matmul X W1)))
         (h2 (clamp (matmul h1 W2) -1 1))
         (out (matmul h2 W3)))
    (sum (* (where (> out 0) (log (+ 1 out)) (* 0.5 out)) out))))
(define g (grad loss :wrt '(0 1 2)))
(g W1 W2 W3)
(define (bench k)
  (let ((start (clock)))
    (let loop ((i 0)) (if (< i calls) (begin (g W1 W2 W3) (loop (+ i 1)))))
    (/ (- (clock) start) calls)))
(println "ms per gradient " (* 1000 (bench 0)) " " (* 1000 (bench 0)))
(println (assoc 'instructions (tape-stats g (list W1 W2 W3))))
(when smoke?
  (smoke-check "gradient against finite differences" (check-grad loss (list W1 W2 W3)) 1e-6)
  (smoke-check "replayed gradient against a new grad"
               (relative-difference (g W1 W2 W3) ((grad loss :wrt '(0 1 2)) W1 W2 W3)) 1e-12))

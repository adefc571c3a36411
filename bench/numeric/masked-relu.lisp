;; The cost of masked products below selections: the gradient of a
;; three-layer network with relu, clamp and a where on its output (batch
;; 256, widths 128-512-512-10). Run it with two binaries to compare:
;;
;;   epsilon run bench/numeric/masked-relu.lisp
(define (wave shape scale) (* scale (sin (reshape (arange (apply * shape)) shape))))
(define X (wave '(256 128) 1.0))
(define W1 (wave '(128 512) 0.1))
(define W2 (wave '(512 512) 0.05))
(define W3 (wave '(512 10) 0.1))
(define (loss W1 W2 W3)
  (let* ((h1 (relu (matmul X W1)))
         (h2 (clamp (matmul h1 W2) -1 1))
         (out (matmul h2 W3)))
    (sum (* (where (> out 0) (log (+ 1 out)) (* 0.5 out)) out))))
(define g (grad loss :wrt '(0 1 2)))
(g W1 W2 W3)
(define (bench k)
  (let ((start (clock)))
    (let loop ((i 0)) (if (< i 200) (begin (g W1 W2 W3) (loop (+ i 1)))))
    (/ (- (clock) start) 200)))
(println "ms per gradient " (* 1000 (bench 0)) " " (* 1000 (bench 0)))
(println (assoc 'instructions (tape-stats g (list W1 W2 W3))))

;; Per-step overhead of compiled loops (issue 17, item 3): 200,000 steps of
;; almost empty bodies, timed with (clock) around one call.
;;
;;   epsilon run bench/loops/overhead.lisp
;;
;; With `smoke`: 2,000 steps, and each loop's result checked against its
;; closed form (n after n steps of +1; the gradient of sum(a^n [1 1]) at
;; a = 1 is 2n).

(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define n (if smoke? 2000 200000))
(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define x0 (tensor 0.0 0.0))
(println "tensor state, +1: " (* 1e6 (/ (time-of (lambda () (scan (lambda (s i) (+ s 1.0)) x0 n))) n)) " us/step")
(println "number state, +1: " (* 1e6 (/ (time-of (lambda () (scan (lambda (s i) (+ s 1.0)) 0.0 n))) n)) " us/step")
(define xs (zeros (list n 2)))
(println "over rows, carry + row: " (* 1e6 (/ (time-of (lambda () (scan (lambda (c x) (list (+ c x) (sum x))) x0 xs))) n)) " us/step")
(define g (grad (lambda (a) (sum (scan (lambda (s i) (* a s)) (tensor 1.0 1.0) n :checkpoint 'store-all)))))
(g 1.0)
(println "tensor state grad store-all: " (* 1e6 (/ (time-of (lambda () (g 1.0))) n)) " us/step")
(when smoke?
  (smoke-check "tensor state +1 against n"
               (relative-difference (scan (lambda (s i) (+ s 1.0)) x0 n) (tensor n n)) 0.0)
  (smoke-check "number state +1 against n"
               (relative-difference (scan (lambda (s i) (+ s 1.0)) 0.0 n) n) 0.0)
  (let ((rows (scan (lambda (c x) (list (+ c x) (sum x))) x0 (+ xs 1.0))))
    (smoke-check "over rows, carry against n" (relative-difference (first rows) (tensor n n)) 0.0)
    (smoke-check "over rows, outputs against 2" (relative-difference (second rows) (full (list n) 2.0)) 0.0))
  (smoke-check "tensor state grad against 2n" (relative-difference (g 1.0) (* 2.0 n)) 1e-12))

;; Per-step overhead of compiled loops (issue 17, item 3): 200,000 steps of
;; almost empty bodies, timed with (clock) around one call.
;;
;;   epsilon run bench/loops/overhead.lisp

(define n 200000)
(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define x0 (tensor 0.0 0.0))
(println "tensor state, +1: " (* 1e6 (/ (time-of (lambda () (scan (lambda (s i) (+ s 1.0)) x0 n))) n)) " us/step")
(println "number state, +1: " (* 1e6 (/ (time-of (lambda () (scan (lambda (s i) (+ s 1.0)) 0.0 n))) n)) " us/step")
(define xs (zeros (list n 2)))
(println "over rows, carry + row: " (* 1e6 (/ (time-of (lambda () (scan (lambda (c x) (list (+ c x) (sum x))) x0 xs))) n)) " us/step")
(define g (grad (lambda (a) (sum (scan (lambda (s i) (* a s)) (tensor 1.0 1.0) n :checkpoint 'store-all)))))
(g 1.0)
(println "tensor state grad store-all: " (* 1e6 (/ (time-of (lambda () (g 1.0))) n)) " us/step")

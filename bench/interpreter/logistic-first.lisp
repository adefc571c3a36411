;; The first gradient call only (trace, sweep, optimize, compile, run) of
;; the logistic map as a plain Lisp loop of K = 10^5 steps, in a fresh
;; process: prints d x_K / d r, then the call's milliseconds.
;; Run: epsilon run bench/interpreter/logistic-first.lisp
(define K 100000)
(define (logistic r)
  (let ((x 0.3) (i 0))
    (while (< i K)
      (set! x (* r x (- 1.0 x)))
      (set! i (+ i 1)))
    x))
(define g (grad logistic))
(define start (clock))
(println (g 2.9))
(println (* 1000.0 (- (clock) start)))

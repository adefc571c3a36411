;; W6: logistic map x <- r x (1 - x), x0 = 0.3, r = 2.9, K = 10^5 steps, as a
;; plain Lisp loop (traced and unrolled under grad/jvp/jit); d x_K / d r in
;; reverse and forward mode (DESIGN.md; issue 4). JAX (lax.fori_loop) gives
;; d x_K / d r = 0.11890606420927814.

(define K 100000)
(define r0 2.9)

(define (logistic r)
  (let ((x 0.3) (i 0))
    (while (< i K)
      (set! x (* r x (- 1.0 x)))
      (set! i (+ i 1)))
    x))

(define logistic-jit (jit logistic))
(define logistic-grad (grad logistic))
(define (logistic-jvp r) (jvp logistic (list r) (list 1.0)))

(define (w6-check)
  (list (logistic r0) (logistic-jit r0) (logistic-grad r0) (second (logistic-jvp r0))))

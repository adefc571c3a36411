;; W6: logistic map x <- r x (1 - x), x0 = 0.3, r = 2.9, K = 10^5 steps, as a
;; plain Lisp loop (traced and unrolled under grad/jvp/jit; issue 4) and as a
;; `scan` (compiled once; issue 5); d x_K / d r in reverse and forward mode
;; (docs/design.md). JAX (lax.fori_loop) gives d x_K / d r = 0.11890606420927814.
;; benches/numeric.rs evaluates this file and calls (w6-check); run as a
;; script with `smoke` (epsilon run bench/numeric/w6-logistic.lisp smoke),
;; K = 2000 and (w6-check)'s values are checked against each other and
;; the derivative against the limit 1/r^2 (x_K is then at the fixed point).

(define smoke? (member "smoke" *args*))
(define K (if smoke? 2000 100000))
(define r0 2.9)

(define (logistic r)
  (let ((x 0.3) (i 0))
    (while (< i K)
      (set! x (* r x (- 1.0 x)))
      (set! i (+ i 1)))
    x))

(define logistic-jit (jit logistic))
(define logistic-grad (grad logistic))
;; A new `grad` each call: no replay, so each call traces the loop and runs
;; its straight-line gradient (what a first call costs).
(define (logistic-grad-traced r) ((grad logistic) r))
(define (logistic-jvp r) (jvp logistic (list r) (list 1.0)))

(define (logistic-scan r)
  (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K :checkpoint 'store-all))
(define (logistic-revolve r)
  (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K))
(define logistic-scan-grad (grad logistic-scan))
(define logistic-revolve-grad (grad logistic-revolve))
(define (logistic-scan-jvp r) (jvp logistic-revolve (list r) (list 1.0)))

(define (w6-check)
  (list (logistic r0) (logistic-jit r0) (logistic-grad r0) (second (logistic-jvp r0))
        (logistic-scan r0) (logistic-scan-grad r0) (logistic-revolve-grad r0)
        (second (logistic-scan-jvp r0))))

(when smoke?
  (load "../smoke.lisp")
  (let* ((v (w6-check)) (x-k (first v)) (slope (nth v 2)))
    (println "w6-check " v)
    (smoke-check "x_K jitted against interpreted" (relative-difference (nth v 1) x-k) 1e-15)
    (smoke-check "x_K scan against interpreted" (relative-difference (nth v 4) x-k) 1e-15)
    (smoke-check "grad against 1/r^2" (relative-difference slope (/ 1.0 (* r0 r0))) 1e-9)
    (for-each (lambda (k label)
                (smoke-check (str label " against grad") (relative-difference (nth v k) slope) 1e-12))
              '(3 5 6 7)
              '("jvp" "scan grad (store-all)" "scan grad (revolve)" "scan jvp"))))

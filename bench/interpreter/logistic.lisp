;; The gradient of the logistic map written as a plain Lisp loop (traced,
;; unrolled, compiled to a tape) next to the same map as a `scan`:
;; x <- r x (1 - x), x0 = 0.3, r = 2.9, K = 10^5 steps.
;; Prints the first call (trace + sweep + compile + run) and the median
;; of 20 later calls (replays of the compiled tape), in milliseconds.
;; Run: epsilon run bench/interpreter/logistic.lisp
;; With the argument `first` (epsilon run bench/interpreter/logistic.lisp
;; first) only the Lisp loop's first gradient call runs, in this fresh
;; process: it prints d x_K / d r, then the call's milliseconds.
;; With `smoke` among the arguments (after `first` or alone): K = 1000 and
;; 3 later calls, and each d x_K / d r is checked against the limit 1/r^2
;; (x_K is then at the fixed point 1 - 1/r) and, without `first`, the
;; loop's against the scan's.
(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define K (if smoke? 1000 100000))
(define later-calls (if smoke? 3 20))
(define (logistic r)
  (let ((x 0.3) (i 0))
    (while (< i K)
      (set! x (* r x (- 1.0 x)))
      (set! i (+ i 1)))
    x))
(define (logistic-scan r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K))

(define (ms-of thunk)
  (let ((start (clock)))
    (thunk)
    (* 1000.0 (- (clock) start))))

(define (median xs)
  (let ((sorted (sort xs <)))
    (nth sorted (quotient (length sorted) 2))))

(define (report name f)
  (let* ((first (ms-of (lambda () (f 2.9))))
         (later (map (lambda (k) (ms-of (lambda () (f 2.9)))) (range later-calls))))
    (println (format "{}: first call {:.1} ms, median of {} later calls {:.2} ms, d x_K / d r = {}"
                     name first later-calls (median later) (f 2.9)))))

(define limit (/ 1.0 (* 2.9 2.9)))
(if (member "first" *args*)
    (let* ((g (grad logistic))
           (start (clock))
           (slope (g 2.9))
           (ms (* 1000.0 (- (clock) start))))
      (println slope)
      (println ms)
      (when smoke? (smoke-check "Lisp loop grad against 1/r^2" (relative-difference slope limit) 1e-9)))
    (begin
      (report "Lisp loop grad" (grad logistic))
      (report "scan grad" (grad logistic-scan))
      (when smoke?
        (let ((loop-slope ((grad logistic) 2.9)) (scan-slope ((grad logistic-scan) 2.9)))
          (smoke-check "Lisp loop grad against 1/r^2" (relative-difference loop-slope limit) 1e-9)
          (smoke-check "scan grad against 1/r^2" (relative-difference scan-slope limit) 1e-9)
          (smoke-check "Lisp loop grad against scan grad" (relative-difference loop-slope scan-slope) 1e-12)))))

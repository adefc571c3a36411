;; Timing for the bench scripts that measure themselves (linalg/time.lisp,
;; gpu/arrays.lisp): `(time-calls workload name thunk)` calls thunk twice
;; to warm up (tracing, kernel compilation), then at least `least-calls`
;; times and for at least `least-seconds` (at most `most-calls` calls),
;; and prints "WORKLOAD NAME median_ms M min_ms M reps N", in the spirit of
;; bench/reference/linalg_workloads.py. With `smoke` among the script's
;; arguments: one timed call. A script may set the three limits after
;; loading this file.

(define (median-of xs)
  (let* ((sorted (sort xs)) (n (length sorted)))
    (if (= (mod n 2) 1)
        (nth sorted (quotient n 2))
        (* 0.5 (+ (nth sorted (- (quotient n 2) 1)) (nth sorted (quotient n 2)))))))

(define smoke? (member "smoke" *args*))
(define least-calls (if smoke? 1 10))
(define least-seconds (if smoke? 0.0 1.0))
(define most-calls 200)

(define (time-calls workload name thunk)
  (thunk)
  (thunk)
  (let ((start (clock)))
    (let loop ((times '()))
      (if (and (>= (length times) least-calls)
               (or (>= (- (clock) start) least-seconds) (>= (length times) most-calls)))
          (println workload name "median_ms" (* 1000 (median-of times))
                   "min_ms" (* 1000 (apply min times)) "reps" (length times))
          (let ((t0 (clock)))
            (thunk)
            (loop (cons (- (clock) t0) times)))))))

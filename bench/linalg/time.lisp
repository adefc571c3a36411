;; Times the linear-algebra workloads of issue 16 on whichever backend the
;; command line chose, so the same file measures the CPU and the GPU:
;;
;;   epsilon run bench/linalg/time.lisp --backend cpu
;;   epsilon run bench/linalg/time.lisp --backend cuda
;;
;; Each function is called twice to warm up (tracing, kernel compilation),
;; then at least 10 times and for at least 1 s (at most 200 calls); the
;; line printed gives the median and the minimum in milliseconds, in the
;; spirit of bench/reference/linalg_workloads.py. Each call returns its
;; results on the host, so the time includes copying them back.

(load "gmm.lisp")
(load "ba.lisp")
(load "gp.lisp")

(define (median-of xs)
  (let* ((sorted (sort xs)) (n (length sorted)))
    (if (= (mod n 2) 1)
        (nth sorted (quotient n 2))
        (* 0.5 (+ (nth sorted (- (quotient n 2) 1)) (nth sorted (quotient n 2)))))))

(define (time-calls workload name thunk)
  (thunk)
  (thunk)
  (let ((start (clock)))
    (let loop ((times '()))
      (if (and (>= (length times) 10)
               (or (>= (- (clock) start) 1.0) (>= (length times) 200)))
          (println workload name "median_ms" (* 1000 (median-of times))
                   "min_ms" (* 1000 (apply min times)) "reps" (length times))
          (let ((t0 (clock)))
            (thunk)
            (loop (cons (- (clock) t0) times)))))))

(time-calls "GMM" "f" (lambda () (gmm-f params)))
(time-calls "GMM" "grad" (lambda () (gmm-grad params)))
(time-calls "BA" "f" (lambda () (ba-f cams points)))
(time-calls "BA" "jacobian" (lambda () (ba-jacobian cams points)))
(time-calls "BA" "grad" (lambda () (ba-grad cams points)))
(time-calls "GP" "f" (lambda () (gp-f theta)))
(time-calls "GP" "vgrad" (lambda () (gp-vgrad theta)))

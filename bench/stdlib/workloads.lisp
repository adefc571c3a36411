;; The standard-library workloads of BENCHMARKS.md (issue 6), timed the
;; same way as bench/reference/stdlib_workloads.py: the work itself, best
;; of several runs, after one warm-up run (tapes compiled).
;;
;;   epsilon run bench/stdlib/workloads.lisp
;;
;; With `smoke`: one timed run after the warm-up, 3 epochs of the MLP, and
;; checks: L-BFGS's minimum at (1, 1), the MLP's gradient against central
;; finite differences and its loss going down, and the heat problem's
;; recovered kappa near the 0.7 that made the data.

(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define (best-of n thunk)
  (set! n (if smoke? 1 n))
  (thunk)
  (let loop ((k 0) (best inf))
    (if (= k n)
        best
        (let ((start (clock)))
          (thunk)
          (loop (+ k 1) (min best (- (clock) start)))))))

;; Rosenbrock from (-1.2, 1) by L-BFGS.
(define (rosenbrock p)
  (let ((x (index p 0)) (y (index p 1)))
    (+ (* 100 (pow (- y (* x x)) 2)) (pow (- 1 x) 2))))
(define r (lbfgs rosenbrock [-1.2 1.0] :gtol 1e-10))
(println (format "rosenbrock L-BFGS: {} iterations, {} evaluations, {:.2} ms"
                 (lookup r 'iterations) (lookup r 'evaluations)
                 (* 1000 (best-of 5 (lambda () (lbfgs rosenbrock [-1.2 1.0] :gtol 1e-10))))))
(when smoke?
  (smoke-check "rosenbrock L-BFGS minimum against (1, 1)" (relative-difference (lookup r 'x) [1.0 1.0]) 1e-6))

;; The digits MLP of examples/mlp.lisp: 30 epochs of Adam in batches of 64.
(define table (read-csv (str (source-directory) "/../../examples/data/digits.csv")))
(define images (/ (slice table 0 64 :axis 1) 16.0))
(define labels (flatten (slice table 64 65 :axis 1)))
(seed! 0)
(define train (first (train-test-split (list images labels) :test-fraction 0.25)))
(define (loss params x y) (softmax-cross-entropy (mlp params x) y))
(define epochs (if smoke? 3 30))
(define steps (* epochs (length (batches train 64))))
(define mlp-seconds
  (best-of 3 (lambda ()
               (seed! 0)
               (fit loss (mlp-init '(64 32 10)) train :optimizer (adam :lr 0.01) :epochs epochs :batch-size 64))))
(when smoke?
  (seed! 0)
  (let* ((start (mlp-init '(64 32 10)))
         (x (slice (first train) 0 16))
         (y (slice (second train) 0 16))
         (history (second (fit loss start train :optimizer (adam :lr 0.01) :epochs epochs :batch-size 64))))
    (smoke-check "digits MLP gradient against finite differences"
                 (check-grad (lambda (params) (loss params x y)) (list start)) 1e-6)
    (println "digits MLP mean loss by epoch " history)
    (smoke-check "digits MLP last epoch's loss over the first's"
                 (/ (nth history (- epochs 1)) (first history)) 0.5)))
(println (format "digits MLP fit: {} steps in {:.3} s ({:.0} steps/s)" steps mlp-seconds (/ steps mlp-seconds)))

;; The heat inverse problem of examples/heat.lisp (64 points, 993 steps, revolve with 10 snapshots).
(define points 64)
(define dx (/ 1.0 (- points 1)))
(define dt (* 0.2 dx dx))
(define n-steps (int (ceil (/ 0.05 dt))))
(define xs (linspace 0 1 points))
(define interior (* (> xs 0) (< xs 1)))
(define u0 (+ (sin (* pi xs)) (* 0.5 (sin (* 3 pi xs))) (* 0.25 (sin (* 7 pi xs)))))
(define (final-profile kappa strategy)
  (let ((r (* kappa (/ dt (* dx dx)))))
    (scan (lambda (u i) (+ u (* r interior (- (+ (roll u 1) (roll u -1)) (* 2 u)))))
          u0 n-steps :checkpoint strategy :snapshots 10)))
(seed! 42)
(define observed (+ (final-profile 0.7 'store-all) (* 0.001 (randn points))))
(define (misfit theta)
  (let ((r (- (final-profile (exp theta) 'revolve) observed)))
    (* 0.5 (sum (* r r)))))
(define h (lbfgs misfit (log 0.3) :gtol 1e-9))
(println (format "heat inverse problem: kappa = {:.6}, {} iterations, {} evaluations, {:.1} ms"
                 (exp (lookup h 'x)) (lookup h 'iterations) (lookup h 'evaluations)
                 (* 1000 (best-of 3 (lambda () (lbfgs misfit (log 0.3) :gtol 1e-9))))))
(when smoke?
  (smoke-check "heat inverse problem kappa against 0.7" (relative-difference (exp (lookup h 'x)) 0.7) 1e-2))

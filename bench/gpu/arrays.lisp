;; The array workloads of the GPU targets, timed on whichever backend the
;; command line chose (bench/gpu/run.sh runs it with --backend cuda):
;;
;;   epsilon run bench/gpu/arrays.lisp --backend cuda [smoke]
;;
;; W1: the Rosenbrock gradient at n = 10^6 (bench/numeric/w1-rosenbrock.lisp;
;; JAX: bench/reference/numeric_workloads.py W1). W4: the heat equation's
;; gradient, N = T = 10^4, revolve with 100 snapshots
;; (bench/numeric/w4-heat.lisp; JAX: bench/reference/heat_w4.py scan).
;; FFT: the transform of 2^20 complex points in a compiled call (cuFFT on
;; CUDA), the signal of bench/complex/workloads.lisp (JAX:
;; bench/reference/complex_workloads.py).
;; Each line: workload, name, median_ms, min_ms, reps, as time.lisp
;; prints them. With `smoke`: n = 1000, N = 100, T = 50, 64 points, one
;; call each.

(load "../timing.lisp")
(define least-calls (if smoke? 1 5))
(define most-calls 100)

(define n (if smoke? 1000 1000000))
(define x (linspace -1.0 1.0 n))
(define (rosenbrock x)
  (let ((a (slice x 0 -1)) (b (slice x 1)))
    (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))
(define rosenbrock-grad (grad rosenbrock))
(time-calls "W1" "grad" (lambda () (rosenbrock-grad x)))

(define N (if smoke? 100 10000))
(define T (if smoke? 50 10000))
(define index (linspace 0.0 (- N 1) N))
(define u0 (+ (sin (/ (* 2 3.141592653589793 index) N))
              (* 0.5 (exp (- (pow (/ (- index (/ N 3)) (/ N 50)) 2))))))
(define (heat-step a)
  (lambda (u i) (+ u (* a (+ (- (roll u 1 :axis 0) (* 2 u)) (roll u -1 :axis 0))))))
(define (heat-loss u0 a)
  (let ((u (scan (heat-step a) u0 T :checkpoint 'revolve :snapshots 100)))
    (sum (pow u 2))))
(define heat-grad (grad heat-loss :wrt '(0 1)))
(time-calls "W4" "revolve" (lambda () (heat-grad u0 0.25)))
(println "W4 value grad_u0_sum" (sum (first (heat-grad u0 0.25))))

(define points (if smoke? 64 1048576))
(define (wave m a b) (sin (+ (* a (arange (* 1.0 m))) b)))
(define signal (complex (wave points 0.0137 0.1) (wave points 0.0071 0.7)))
(define transform (jit (lambda (z) (fft z))))
(time-calls "FFT" "complex" (lambda () (transform signal)))

(when smoke?
  (load "../smoke.lisp")
  (smoke-check "FFT compiled against FFT eager"
               (max (abs (- (transform signal) (fft signal)))) 1e-12)
  (smoke-check "W1 gradient against finite differences" (check-grad rosenbrock (list x)) 1e-5)
  (smoke-check "W4 gradient against finite differences" (check-grad heat-loss (list u0 0.25)) 1e-6))

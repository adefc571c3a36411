;; W1: Rosenbrock function and gradient, n = 10^6 (docs/design.md; issue 4).
;; Same data as bench/reference/numeric_workloads.py: x = linspace(-1, 1, n).
;; Timed by benches/numeric.rs; `epsilon run bench/numeric/w1-rosenbrock.lisp`
;; prints the values to compare with the JAX script
;; (f = 54666680.66686734, grad_sum = -201999999.99960002).

(define n 1000000)
(define x (linspace -1.0 1.0 n))

(define (rosenbrock x)
  (let ((a (slice x 0 -1))
        (b (slice x 1)))
    (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))

(define rosenbrock-jit (jit rosenbrock))
(define rosenbrock-grad (grad rosenbrock))
(define rosenbrock-vgrad (value-and-grad rosenbrock))

;; The same function with its squares as products (JAX's `** 2` is an
;; integer power, which XLA computes as a product; Epsilon's (pow d 2) calls
;; libm's pow): timed alongside to show what strength reduction would give.
(define (rosenbrock-mul x)
  (let* ((a (slice x 0 -1))
         (b (slice x 1))
         (d (- b (* a a)))
         (e (- 1.0 a)))
    (sum (+ (* 100.0 (* d d)) (* e e)))))

(define rosenbrock-mul-jit (jit rosenbrock-mul))
(define rosenbrock-mul-grad (grad rosenbrock-mul))
(define rosenbrock-mul-vgrad (value-and-grad rosenbrock-mul))

(define (w1-check)
  (let* ((vg (rosenbrock-vgrad x))
         (g (rosenbrock-grad x)))
    (list (rosenbrock x) (rosenbrock-jit x) (first vg) (sum (second vg)) (sum g)
          (rosenbrock-mul-jit x) (sum (rosenbrock-mul-grad x)))))

;; W5: dense Hessian of logsumexp(A x) + |x|^2/2, A 400x200 (docs/design.md; issue 4).
;; x = linspace(-0.1, 0.1, 200) as in bench/reference/numeric_workloads.py; A is
;; Epsilon's own seeded randn, so the check is against the closed form
;; H = A^T (diag(p) - p p^T) A + I with p = softmax(A x).

(seed! 0)
(define A (randn '(400 200)))
(define x (linspace -0.1 0.1 200))

(define (f x a)
  (+ (logsumexp (matmul a x)) (* 0.5 (dot x x))))

(define f-hessian (hessian f))

(define (closed-form x a)
  (let* ((p (softmax (matmul a x)))
         (m (- (* (eye (size p)) p) (outer p p))))
    (+ (matmul (transpose a) (matmul m a)) (eye (size x)))))

(define (w5-check)
  (let ((h (f-hessian x A))
        (ref (closed-form x A)))
    (list (f x A) (trace h) (trace ref) (max (abs (- h ref))) (sum h))))

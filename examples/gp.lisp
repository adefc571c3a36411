;;; gp.lisp - Gaussian-process regression: fit the kernel's hyperparameters
;;; by the gradient of the marginal likelihood, then plot the posterior mean
;;; with its uncertainty band.
;;;
;;;   epsilon run examples/gp.lisp [--points 40] [--grid 200] [--plot gp.png]
;;;
;;; The picture goes to gp.png in the system's temporary folder unless
;;; --plot names a path; the script prints where it wrote it.
;;;
;;; Data: noisy samples of f(x) = sin(x) + 0.3 cos(3x) at random x in
;;; [-5, 5]. Model: a zero-mean GP with the squared-exponential kernel
;;;   k(x, x') = a^2 exp(-(x - x')^2 / (2 l^2)),  plus noise s^2 on the diagonal,
;;; with theta = (log l, log a, log s) so all three stay positive.
;;; The negative log marginal likelihood
;;;   0.5 y^T K^-1 y + sum(log diag L) + n/2 log(2 pi),  L = cholesky(K)
;;; is computed with one Cholesky factorization and two triangular solves;
;;; its gradient with respect to theta goes back through both (their reverse
;;; rules are operations too) and L-BFGS follows it.

(define points (script-option "--points" 40))
(define grid-size (script-option "--grid" 200))
(define plot-path (script-option "--plot" (temp-path "gp.png")))

(define (truth x) (+ (sin x) (* 0.3 (cos (* 3 x)))))
(seed! 3)
(define xs (- (* 10 (rand points)) 5))
(define noise-level 0.1)
(define ys (+ (truth xs) (* noise-level (randn points))))

;; The kernel between two sets of points (vectors): a matrix.
(define (kernel theta a b)
  (let* ((lengthscale (exp (index theta 0)))
         (amplitude (exp (index theta 1)))
         (gaps (- (reshape a (list (length a) 1)) (reshape b (list 1 (length b))))))
    (* amplitude amplitude (exp (/ (* -0.5 gaps gaps) (* lengthscale lengthscale))))))

(define (covariance theta)
  (let ((noise (exp (index theta 2))))
    (+ (kernel theta xs xs) (* noise noise (eye points)))))

(define (negative-log-likelihood theta)
  (let* ((l (cholesky (covariance theta)))
         (alpha (triangular-solve l (triangular-solve l ys) :transpose #t)))
    (+ (* 0.5 (dot ys alpha))
       (sum (log (diagonal l)))
       (* 0.5 points (log (* 2 pi))))))

(define theta0 (tensor 0.0 0.0 0.0))
(println (format "{} noisy samples; start: lengthscale 1, amplitude 1, noise 1, nll {:.4}"
                 points (negative-log-likelihood theta0)))
(println (format "gradient check at the start: max relative error {:.2e}"
                 (check-grad negative-log-likelihood (list theta0))))
(println " iter  lengthscale  amplitude     noise          nll   |gradient|")
(define result
  (lbfgs negative-log-likelihood theta0 :gtol 1e-6
         :callback (lambda (k theta fx gnorm)
                     (let ((h (to-list (exp theta))))
                       (println (format "{:>5}  {:>11.5}  {:>9.5}  {:>8.5}  {:>11.5}  {:>10.3e}"
                                        k (first h) (second h) (nth h 2) fx gnorm))))))
(define theta (lookup result 'x))
(define fitted (to-list (exp theta)))
(println (format "fitted: lengthscale {:.4}, amplitude {:.4}, noise {:.4} (the data's noise is {}); {}"
                 (first fitted) (second fitted) (nth fitted 2) noise-level (lookup result 'message)))

;; The posterior at a grid: mean K*ᵀ K⁻¹ y, variance k(x, x) - K*ᵀ K⁻¹ K*,
;; with the same factor: v = L⁻¹ K*.
(define grid (linspace -5.5 5.5 grid-size))
(define l (cholesky (covariance theta)))
(define cross-k (kernel theta xs grid))
(define alpha (triangular-solve l (triangular-solve l ys) :transpose #t))
(define posterior (matmul (transpose cross-k) alpha))
(define v (triangular-solve l cross-k))
(define variance (- (exp (* 2 (index theta 1))) (sum (* v v) :axis 0)))
(define band (* 2 (sqrt (clamp variance 0 1e300))))
(define errors (- posterior (truth grid)))
(define rmse (sqrt (mean (* errors errors))))
(println (format "posterior mean against the true function on the grid: rmse {:.4}" rmse))
(define inside (mean (<= (abs errors) band)))
(println (format "the true function lies within two standard deviations at {:.0}% of the grid"
                 (* 100 inside)))

(plot-lines grid (list (truth grid) posterior (list xs ys)) plot-path
            :labels (list "true f(x)" "posterior mean ± 2 sd" "samples")
            :style (list "line" "line" "scatter")
            :band (list #f (list (- posterior band) (+ posterior band)) #f)
            :title (format "GP regression, {} samples (fitted l = {:.3})" points (first fitted))
            :xlabel "x" :ylabel "f(x)")
(println "wrote" plot-path)

;; GP: the negative log marginal likelihood of a Gaussian process, n = 1000
;; 1-D inputs, RBF kernel with log lengthscale, log amplitude and log noise
;; (issue 16). The data are those of bench/reference/linalg_workloads.py.
;; With `smoke` among the script's arguments: n = 30 (see time.lisp).

(define n (if (member "smoke" *args*) 30 1000))
(define x (linspace -5.0 5.0 n))
(define y (+ (sin x) (* 0.3 (cos (* 3.1 x))) (* 0.1 (sin (* 37.0 (arange n))))))
(define theta (tensor (log 1.2) (log 0.9) (log 0.3)))
(define eye-n (eye n))
(define gaps (- (reshape x (list n 1)) (reshape x (list 1 n))))
(define squared-gaps (* gaps gaps))

(define (gp-nll theta)
  (let* ((lengthscale (exp (index theta 0)))
         (amplitude (exp (index theta 1)))
         (noise (exp (index theta 2)))
         (k (+ (* (* amplitude amplitude)
                  (exp (/ (* -0.5 squared-gaps) (* lengthscale lengthscale))))
               (* (* noise noise) eye-n)))
         (l (cholesky k))
         (z (triangular-solve l y))
         (alpha (triangular-solve l z :transpose #t)))
    (+ (* 0.5 (dot y alpha))
       (sum (log (diagonal l)))
       (* 0.5 n (log (* 2 pi))))))

(define gp-f (jit gp-nll))
(define gp-vgrad (value-and-grad gp-nll))

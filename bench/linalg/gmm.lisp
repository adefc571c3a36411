;; GMM: the negative log-likelihood of a Gaussian mixture (issue 16):
;; d = 10, K = 50, n = 10^4; log-sum-exp over components, the precisions'
;; Cholesky factors made with `tril` from a full parameter and exp of a
;; log-diagonal, a Wishart prior with `multigammaln`. The data are those of
;; bench/reference/linalg_workloads.py (closed-form). With `smoke` among
;; the script's arguments: d = 3, K = 4, n = 50 (see time.lisp).

(define smoke? (member "smoke" *args*))
(define n (if smoke? 50 10000))
(define d (if smoke? 3 10))
(define K (if smoke? 4 50))
(define wishart-gamma 1.0)
(define wishart-m 0)

(define rows (reshape (arange n) (list n 1)))
(define cols (reshape (arange d) (list 1 d)))
(define x (+ (sin (+ (* 0.37 rows) (* 1.3 cols)))
             (* 0.5 (cos (* (* 0.11 rows) (+ cols 1))))))
(define ks (reshape (arange K) (list K 1)))
(define alphas (* 0.1 (sin (arange K))))
(define means (sin (+ (* 1.7 ks) (* 0.3 cols))))
(define logdiag (* 0.1 (cos (+ ks cols))))
(define lower
  (* 0.05 (sin (+ (reshape (arange K) (list K 1 1))
                  (* 2 (reshape (arange d) (list 1 d 1)))
                  (* 3 (reshape (arange d) (list 1 1 d)))))))
(define params (list alphas means logdiag lower))

(define x-rows (reshape x (list 1 n d)))
(define n-prior (+ d wishart-m 1))

(define (gmm-objective params)
  (let* ((alphas (first params))
         (means (second params))
         (logdiag (nth params 2))
         (lower (nth params 3))
         (strict (tril lower -1))
         (factors (+ strict (diag (exp logdiag))))               ; [K d d]
         (centered (- x-rows (reshape means (list K 1 d))))      ; [K n d]
         (mapped (matmul centered (transpose factors '(0 2 1))))  ; [K n d]
         (sqsum (sum (* mapped mapped) :axis 2))                 ; [K n]
         (sum-qs (sum logdiag :axis 1))
         (inner (- (reshape (+ alphas sum-qs) (list K 1)) (* 0.5 sqsum)))
         (slse (sum (logsumexp inner :axis 0)))
         (const (* (- (* n d 0.5)) (log (* 2 pi))))
         (prior (sum (- (* 0.5 wishart-gamma wishart-gamma
                           (+ (sum (exp (* 2 logdiag)) :axis 1)
                              (sum (* strict strict) :axis '(1 2))))
                        (* wishart-m sum-qs))))
         (c (- (* n-prior d (- (log wishart-gamma) (* 0.5 (log 2.0))))
               (multigammaln (* 0.5 n-prior) d))))
    (+ const slse (* (- n) (logsumexp alphas)) prior (* (- K) c))))

(define gmm-f (jit gmm-objective))
(define gmm-grad (grad gmm-objective))
(define gmm-vgrad (value-and-grad gmm-objective))

;;; Laplacians by Taylor mode (issue 49): the trace of the Hessian of a
;;; scalar function, weighted (trace(A H)) or estimated from random
;;; directions, as a sum of second derivatives along directions, every
;;; direction in one Taylor-mode sweep of order 2 batched over them (vmap
;;; of jet). The 'hessian method takes the trace of the dense Hessian
;;; instead (the reference).

(define (second-derivatives f x directions)
  "(second-derivatives f x directions): the second derivatives d^2/dt^2 f(x + t v) at t = 0 for each direction v along the first axis of directions (shape (m) ++ shape(x)), as m numbers: one Taylor-mode sweep of order 2 batched over the directions."
  ((vmap (lambda (v) (third (taylor f x v 2)))) directions))

(define (unit-directions x)
  "(unit-directions x): the n unit vectors shaped as x (n the size of x, a number's being 1), stacked along a first axis: shape (n) ++ shape(x)."
  (let ((n (size x)))
    (reshape (eye n) (cons n (shape x)))))

(define (laplacian-weights who x a)
  "(laplacian-weights who x a): the eigenvectors (as rows, n x n) and eigenvalues of (A + Aᵀ)/2, A an n x n matrix for x of n elements: trace(A H) is the sum over them of the eigenvalue times the second derivative along the eigenvector (H is symmetric, so only A's symmetric part counts)."
  (let ((n (size x)))
    (if (not (equal? (shape a) (list n n)))
        (error (format "{}: the weights must be a {} x {} matrix for an argument of {} elements, got shape {}"
                       who n n n (shape a))))
    (let ((e (eigh a)))
      (list (transpose (second e)) (first e)))))

(define (laplacian f . opts)
  "(laplacian f :method 'auto :weights A :samples k :seed s): a function of x giving the Laplacian of the scalar function f at x, the trace of its Hessian (the sum of its second derivatives along the unit vectors). :method 'collapsed (one Taylor-mode sweep of order 2 batched over the n unit directions, its second-order coefficients summed over the directions as one propagated sum: collapsed-sum), 'forward (the same sweep with the second-order coefficients of every direction propagated and summed at the end), 'hessian (the trace of the dense Hessian, forward over reverse), or 'auto (the default: 'collapsed); all give the same value. :weights A (an n x n matrix, n the size of x) gives trace(A H) instead. :samples k gives Hutchinson's unbiased estimate from k random directions of entries +1 or -1 (seeded by :seed, default 0): the mean of vᵀ H v, whose variance is (2/k) times the sum of the squared off-diagonal entries of H (of A^(1/2) H A^(1/2) with weights, A then positive semidefinite). Works under grad, jit and vmap, and nests: (laplacian (laplacian f)) is the biharmonic."
  (let* ((o (options 'laplacian opts '((:method auto) (:weights #f) (:samples #f) (:seed 0))))
         (method (lookup o :method))
         (weights (lookup o :weights))
         (samples (lookup o :samples))
         (seed (lookup o :seed)))
    (cond ((not (or (eq? method 'auto) (eq? method 'collapsed) (eq? method 'forward) (eq? method 'hessian)))
           (error (format "laplacian: :method must be 'auto, 'collapsed, 'forward or 'hessian, got {}" method)))
          ((and samples (not (and (integer? samples) (> samples 0))))
           (error (format "laplacian: :samples must be a positive whole number, got {}" samples)))
          ((and samples (eq? method 'hessian))
           (error "laplacian: :samples estimates from random directions; it does not combine with :method 'hessian")))
    (let* ((collapse (not (eq? method 'forward)))
           ;; The sum over the directions of their second derivatives
           ;; (weighted), collapsed or taken at the end.
           (total (lambda (x directions w)
                    (let ((second (second-derivatives f x directions)))
                      (cond (collapse (if w (collapsed-sum second directions w) (collapsed-sum second directions)))
                            (w (sum (* w second)))
                            (else (sum second))))))
           (estimate
            (lambda (x)
              (cond
               (samples
                (let* ((n (size x))
                       (v (random-signs (list samples n) seed))
                       (directions
                        (if weights
                            ;; A^(1/2) v, through the symmetric square root of the
                            ;; weights (A positive semidefinite).
                            (let* ((w (laplacian-weights 'laplacian x weights))
                                   (root (matmul (matmul (transpose (first w)) (diag (sqrt (second w))))
                                                 (first w))))
                              (matmul v root))
                            v)))
                  (/ (total x (reshape directions (cons samples (shape x))) #f) samples)))
               ((eq? method 'hessian)
                (let* ((n (size x))
                       (h (reshape ((hessian f) x) (list n n))))
                  (if weights
                      (sum (* (* 0.5 (+ weights (transpose weights))) h))
                      (sum (diagonal h)))))
               (weights
                (let ((w (laplacian-weights 'laplacian x weights)))
                  (total x (reshape (first w) (cons (size x) (shape x))) (second w))))
               (else (total x (unit-directions x) #f))))))
      ;; Collapsing rewrites the traced program: trace it (jit) even when
      ;; called with plain values.
      (if collapse (jit estimate) estimate))))

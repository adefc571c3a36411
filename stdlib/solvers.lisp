;;; Solvers differentiated by the implicit function theorem (issue 18):
;;; fixed-point and root, and the linear solvers their rules use. The
;;; iterations are while-loops (traced once, run on the tape's backend, so
;;; they work inside jit, grad and scan steps); the derivatives solve one
;;; linear system at the solution and never differentiate the iterations.

(define (split-keywords args)
  "(split-keywords args): the positional arguments before the first keyword and the keyword options after them, as (positional . options)."
  (let loop ((rest args) (positional '()))
    (if (or (null? rest) (keyword? (car rest)))
        (cons (reverse positional) rest)
        (loop (cdr rest) (cons (car rest) positional)))))

(define (inner a b)
  "(inner a b): the sum of the elementwise product of two numbers or tensors of one shape."
  (sum (* a b)))

(define (safe-ratio a b)
  "(safe-ratio a b): a / b for numbers, and 0 where b is 0 (its gradient is finite there too). The test is a tensor comparison, so it is recorded, not decided, inside loop bodies."
  (let ((bt (reshape b '(1))))
    (sum (where (= bt 0) 0.0 (/ a bt)))))

(define (bicgstab apply-a b . opts)
  "(bicgstab apply-a b :tol 1e-10 :max-iter 1000 :who 'bicgstab): solves (apply-a x) = b for x, a number or tensor of b's shape, by the stabilized biconjugate gradient method: products with the matrix only, any square matrix, constant memory. One while-loop, so it runs inside traced functions and derivative rules. Stops when |b - A x| <= tol |b|; not converging within max-iter steps is an error naming who."
  (let* ((o (options 'bicgstab opts '((:tol 1e-10) (:max-iter 1000) (:who bicgstab))))
         (tol (lookup o :tol))
         (threshold (* tol (sqrt (inner b b))))
         (zero (* 0.0 b))
         (final
          (while-loop
           (lambda (s) (- 1 (<= (sqrt (inner (second s) (second s))) threshold)))
           (lambda (s)
             (let* ((x (nth s 0)) (r (nth s 1)) (p (nth s 2)) (v (nth s 3))
                    (rho (nth s 4)) (alpha (nth s 5)) (omega (nth s 6))
                    ;; The shadow residual is the first residual, b.
                    (rho1 (inner b r))
                    (beta (* (safe-ratio rho1 rho) (safe-ratio alpha omega)))
                    (p (+ r (* beta (- p (* omega v)))))
                    (v (apply-a p))
                    (alpha (safe-ratio rho1 (inner b v)))
                    (half (- r (* alpha v)))
                    (t (apply-a half))
                    (omega (safe-ratio (inner t half) (inner t t))))
               (list (+ x (* alpha p) (* omega half)) (- half (* omega t)) p v rho1 alpha omega)))
           (list zero b zero zero 1.0 1.0 1.0)
           :max-steps (lookup o :max-iter)
           :on-max-steps (format "{}: the linear solve (BiCGSTAB) did not converge within {} iterations"
                                 (lookup o :who) "{n}"))))
    (first final)))

(define (cg apply-a b . opts)
  "(cg apply-a b :tol 1e-10 :max-iter 1000 :who 'cg): solves (apply-a x) = b for x, a number or tensor of b's shape, by conjugate gradients: the matrix must be symmetric positive definite. One while-loop, so it runs inside traced functions and derivative rules. Stops when |b - A x| <= tol |b|; not converging within max-iter steps is an error naming who."
  (let* ((o (options 'cg opts '((:tol 1e-10) (:max-iter 1000) (:who cg))))
         (tol (lookup o :tol))
         (bb (inner b b))
         (threshold (* tol tol bb))
         (final
          (while-loop
           (lambda (s) (- 1 (<= (nth s 3) threshold)))
           (lambda (s)
             (let* ((x (nth s 0)) (r (nth s 1)) (p (nth s 2)) (rr (nth s 3))
                    (ap (apply-a p))
                    (alpha (safe-ratio rr (inner p ap)))
                    (r1 (- r (* alpha ap)))
                    (rr1 (inner r1 r1)))
               (list (+ x (* alpha p)) r1 (+ r1 (* (safe-ratio rr1 rr) p)) rr1)))
           (list (* 0.0 b) b b bb)
           :max-steps (lookup o :max-iter)
           :on-max-steps (format "{}: the linear solve (conjugate gradients) did not converge within {} iterations; is the matrix symmetric positive definite?"
                                 (lookup o :who) "{n}"))))
    (first final)))

(define (flat-jacobian f x)
  "(flat-jacobian f x): the Jacobian of f (from x's shape to x's shape) at x as an n x n matrix, n the size of x; a number when x is one."
  (let ((j ((jacobian f) x)))
    (if (number? x) j (reshape j (list (size x) (size x))))))

(define (flat-solve m b)
  "(flat-solve m b): the solution x, of b's shape, of m x = b with m an n x n matrix acting on b flattened (n its size); b / m when b is a number."
  (if (number? b)
      (/ b m)
      (reshape (solve m (reshape b (list (size b)))) (shape b))))

(define (implicit-linear-solve how who x apply-a b dense-matrix)
  "(implicit-linear-solve how who x apply-a b dense-matrix): solves A u = b for an implicit derivative at the solution x: (dense-matrix) builds A for how = 'dense, apply-a gives its products for 'bicgstab and 'cg, and 'auto is dense up to 64 unknowns and BiCGSTAB above."
  (let ((how (if (eq? how 'auto) (if (<= (size x) 64) 'dense 'bicgstab) how)))
    (cond ((eq? how 'dense) (flat-solve (dense-matrix) b))
          ((eq? how 'bicgstab) (bicgstab apply-a b :who who))
          ((eq? how 'cg) (cg apply-a b :who who))
          (else (error (format "{}: :solve must be 'auto, 'dense, 'bicgstab or 'cg, got {}" who how))))))

(define (split-tangents all)
  "(split-tangents all): a pushforward's arguments (args... tangents... value) as (args tangents value)."
  (let* ((m (quotient (- (length all) 1) 2)))
    (list (take all m) (take (drop all m) m) (last all))))

(define (implicit-function who residual iterate how)
  "(implicit-function who residual iterate how): the function of (x0 params...) computing (iterate x0 params...), an x with (residual x params...) = 0, differentiated with respect to the params by the implicit function theorem: with A = d residual / dx at the solution, reverse mode solves A^T u = g and gives the params -u^T d residual / d params; forward mode gives -A^{-1} (d residual / d params) t. The linear solves follow how (see implicit-linear-solve); x0 gets no derivative."
  (custom-vjp
   iterate
   (lambda (x0 . ps)
     (lambda (g xs)
       (let* ((rx (lambda (x) (apply residual x ps)))
              (u (implicit-linear-solve
                  how who xs
                  (lambda (v) (first (second (vjp rx (list xs) v))))
                  g
                  (lambda () (transpose (flat-jacobian rx xs))))))
         (cons '() (if (null? ps) '()
                       (second (vjp (lambda qs (apply residual xs qs)) ps (neg u))))))))
   who
   :jvp
   (lambda all
     (let* ((parts (split-tangents all)) (ps (cdr (first parts)))
            (tps (cdr (second parts))) (xs (nth parts 2))
            (rx (lambda (x) (apply residual x ps)))
            (rhs (if (null? ps) 0.0
                     (second (jvp (lambda qs (apply residual xs qs)) ps
                                  (map (lambda (p t) (if (null? t) (* 0.0 p) t)) ps tps))))))
       (neg (implicit-linear-solve
             how who xs
             (lambda (v) (second (jvp rx (list xs) (list v))))
             (+ (* 0.0 xs) rhs)
             (lambda () (flat-jacobian rx xs))))))))

(define (check-solver-options who o)
  "(check-solver-options who o): the options o of fixed-point or root when :tol is a positive number, :max-iter a whole number at least 1 and :solve one of the linear solvers; an error naming who and the option otherwise."
  (check-options who o
                 (list (list :tol positive-number? "a positive number")
                       (list :max-iter (lambda (n) (whole-number? n 1)) "a whole number at least 1")
                       (list :solve (lambda (s) (member s '(auto dense bicgstab cg))) "'auto, 'dense, 'bicgstab or 'cg"))))

(define (fixed-point f x0 . args)
  "(fixed-point f x0 params... :max-iter 1000 :tol 1e-10 :solve 'auto): the x with x = (f x params...), found by iterating from x0 (a number or tensor) until successive iterates differ by at most tol (relative to 1 + max|x|); no convergence within max-iter iterations is an error. Differentiable with respect to the params (numbers or tensors) by the implicit function theorem, in reverse and forward mode: one linear solve with I - df/dx at the solution, dense up to 64 unknowns and by BiCGSTAB above (:solve 'dense, 'bicgstab, or 'cg when df/dx is symmetric), never through the iterations. Values f closes over are differentiated through the iterations: pass what you differentiate as params."
  (let* ((split (split-keywords args))
         (o (check-solver-options 'fixed-point (options 'fixed-point (cdr split) '((:max-iter 1000) (:tol 1e-10) (:solve auto)))))
         (tol (lookup o :tol))
         (iterate
          (lambda (x0 . ps)
            (first
             (while-loop
              (lambda (s) (- 1 (<= (second s) tol)))
              (lambda (s)
                (let* ((x (first s)) (x1 (apply f x ps)))
                  (list x1 (/ (max (abs (- x1 x))) (+ 1.0 (max (abs x1)))))))
              (list x0 (+ tol 1.0))
              :max-steps (lookup o :max-iter)
              :on-max-steps "fixed-point: no convergence within :max-iter {n} iterations (does the map contract? raise :max-iter or :tol)")))))
    (apply (implicit-function 'fixed-point (lambda (x . ps) (- x (apply f x ps))) iterate (lookup o :solve))
           x0 (car split))))

(define (root f x0 . args)
  "(root f x0 params... :max-iter 100 :tol 1e-10 :solve 'auto): the x with (f x params...) = 0, by Newton's method from x0 (a number or tensor; f maps it to its own shape) with the dense Jacobian, until max|f| <= tol; no convergence within max-iter iterations is an error. Differentiable with respect to the params (numbers or tensors) by the implicit function theorem, in reverse and forward mode: one linear solve with df/dx at the root, dense up to 64 unknowns and by BiCGSTAB above (:solve 'dense, 'bicgstab or 'cg), never through the iterations. Values f closes over are differentiated through the iterations: pass what you differentiate as params."
  (let* ((split (split-keywords args))
         (o (check-solver-options 'root (options 'root (cdr split) '((:max-iter 100) (:tol 1e-10) (:solve auto)))))
         (tol (lookup o :tol))
         (newton
          (lambda (x0 . ps)
            (let ((fx (lambda (x) (apply f x ps))))
              (first
               (while-loop
                (lambda (s) (- 1 (<= (max (abs (second s))) tol)))
                (lambda (s)
                  (let ((x1 (- (first s) (flat-solve (flat-jacobian fx (first s)) (second s)))))
                    (list x1 (fx x1))))
                (list x0 (fx x0))
                :max-steps (lookup o :max-iter)
                :on-max-steps "root: Newton's method did not converge within :max-iter {n} iterations (max |f| still above :tol)"))))))
    (apply (implicit-function 'root f newton (lookup o :solve)) x0 (car split))))

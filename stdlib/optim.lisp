;;; optim: first-order optimizers, L-BFGS, and minimize.
;;;
;;; An optimizer such as (adam :lr 0.01) is a function (opt params grads)
;;; giving the updated parameters. It keeps its own state (moments, step
;;; count), made on the first call from the shape of params, so use one
;;; optimizer for one parameter tree. Parameters and gradients are trees:
;;; numbers, tensors, or nested lists of them.

(define (learning-rate? lr)
  "(learning-rate? lr): true for an optimizer's :lr, a positive number or a schedule function."
  (or (procedure? lr) (positive-number? lr)))

(define (unit-fraction? x)
  "(unit-fraction? x): true for a number in [0, 1), such as a moment's decay rate."
  (and (non-negative-number? x) (< x 1)))

(define (learning-rate lr step)
  "(learning-rate lr step): lr at a step (counted from 1): lr itself when it is a number, (lr step) when it is a schedule function."
  (if (procedure? lr) (lr step) lr))

(define (exponential-decay lr0 rate every)
  "(exponential-decay lr0 rate every): the schedule step -> lr0 * rate^(step / every), for an optimizer's :lr."
  (lambda (step) (* lr0 (pow rate (/ step every)))))

(define (sgd . opts)
  "(sgd :lr 0.01 :momentum 0 :nesterov #f :weight-decay 0): stochastic gradient descent, with heavy-ball or Nesterov momentum when :momentum > 0. Gives an optimizer: (opt params grads) returns the updated params."
  (let* ((o (check-options 'sgd (options 'sgd opts '((:lr 0.01) (:momentum 0) (:nesterov #f) (:weight-decay 0)))
                          (list (list :lr learning-rate? "a positive number or a schedule function")
                                (list :momentum non-negative-number? "a number at least 0")
                                (list :weight-decay non-negative-number? "a number at least 0"))))
         (lr (lookup o :lr)) (mu (lookup o :momentum))
         (nesterov (lookup o :nesterov)) (decay (lookup o :weight-decay))
         (velocity #f) (step 0))
    (lambda (params grads)
      (set! step (+ step 1))
      (let ((rate (learning-rate lr step))
            (g (if (= decay 0) grads (tree-map (lambda (g p) (+ g (* decay p))) grads params))))
        (if (= mu 0)
            (tree-map (lambda (p g) (- p (* rate g))) params g)
            (begin
              (set! velocity (if velocity
                                 (tree-map (lambda (v g) (+ (* mu v) g)) velocity g)
                                 g))
              (let ((direction (if nesterov
                                   (tree-map (lambda (v g) (+ g (* mu v))) velocity g)
                                   velocity)))
                (tree-map (lambda (p d) (- p (* rate d))) params direction))))))))

(define (momentum . opts)
  "(momentum :lr 0.01 :momentum 0.9 :nesterov #f): gradient descent with heavy-ball momentum; the same as sgd with :momentum 0.9 by default."
  (let ((o (options 'momentum opts '((:lr 0.01) (:momentum 0.9) (:nesterov #f)))))
    (sgd :lr (lookup o :lr) :momentum (lookup o :momentum) :nesterov (lookup o :nesterov))))

(define (adam . opts)
  "(adam :lr 0.001 :beta1 0.9 :beta2 0.999 :eps 1e-8 :weight-decay 0): Adam (Kingma and Ba) with bias-corrected moments; a non-zero :weight-decay is decoupled, as in AdamW. :lr may be a schedule such as (exponential-decay 0.1 0.5 1000). Gives an optimizer: (opt params grads) returns the updated params."
  (let* ((o (check-options 'adam (options 'adam opts '((:lr 0.001) (:beta1 0.9) (:beta2 0.999) (:eps 1e-8) (:weight-decay 0)))
                          (list (list :lr learning-rate? "a positive number or a schedule function")
                                (list :beta1 unit-fraction? "a number in [0, 1)")
                                (list :beta2 unit-fraction? "a number in [0, 1)")
                                (list :eps positive-number? "a positive number")
                                (list :weight-decay non-negative-number? "a number at least 0"))))
         (lr (lookup o :lr)) (b1 (lookup o :beta1)) (b2 (lookup o :beta2))
         (eps (lookup o :eps)) (decay (lookup o :weight-decay))
         (m #f) (v #f) (step 0))
    ;; The moments are kept as flat lists of leaves; adam-update does the
    ;; arithmetic of one leaf in one pass.
    (lambda (params grads)
      (set! step (+ step 1))
      (let ((p-leaves (tree-leaves params))
            (g-leaves (tree-leaves grads))
            (rate (learning-rate lr step)))
        (unless m
          (set! m (map (lambda (g) (* 0.0 g)) g-leaves))
          (set! v m))
        (unless (= (length p-leaves) (length g-leaves) (length m))
          (error "adam: the parameters and gradients do not match the tree this optimizer started with"))
        (let ((updates (map (lambda (p g m v) (adam-update p g m v step rate b1 b2 eps decay))
                            p-leaves g-leaves m v)))
          (set! m (map second updates))
          (set! v (map (lambda (u) (nth u 2)) updates))
          (tree-from-leaves params (map first updates)))))))

;;; L-BFGS with a strong Wolfe line search (Nocedal and Wright, Numerical
;;; Optimization, algorithms 7.4, 3.5 and 3.6). It works on the flattened
;;; parameter vector and reports in the caller's tree shape.

(define (cubic-minimizer a fa da b fb db)
  "(cubic-minimizer a fa da b fb db): the minimizer of the cubic through two points with values and slopes, or #f when it has none."
  (let* ((d1 (- (+ da db) (* 3 (/ (- fa fb) (- a b)))))
         (disc (- (* d1 d1) (* da db))))
    (if (< disc 0)
        #f
        (let* ((d2 (* (if (> b a) 1 -1) (sqrt disc)))
               (den (+ (- db da) (* 2 d2))))
          (if (= den 0) #f (- b (* (- b a) (/ (- (+ db d2) d1) den))))))))

(define (wolfe-search evaluate x f0 g0 d step0 max-steps)
  "(wolfe-search evaluate x f0 g0 d step0 max-steps): a step a along d satisfying the strong Wolfe conditions (c1 = 1e-4, c2 = 0.9), found by bracketing and zooming with safeguarded cubic interpolation. evaluate maps a vector to (value gradient). Gives (a f g), or #f when no acceptable step was found."
  (let* ((c1 1e-4) (c2 0.9)
         (slope0 (dot g0 d))
         (count 0))
    (define (probe a)
      (set! count (+ count 1))
      (let ((r (evaluate (+ x (* a d)))))
        (list a (first r) (second r) (dot (second r) d))))
    (define (sufficient? p) (<= (second p) (+ f0 (* c1 (first p) slope0))))
    (define (curvature? p) (<= (abs (nth p 3)) (* (- c2) slope0)))
    (define (zoom lo hi)
      (if (>= count max-steps)
          (if (sufficient? lo) (take lo 3) #f)
          (let* ((a-lo (first lo)) (a-hi (first hi))
                 (width (abs (- a-hi a-lo)))
                 (low (min a-lo a-hi)) (high (max a-lo a-hi))
                 (cubic (cubic-minimizer a-lo (second lo) (nth lo 3) a-hi (second hi) (nth hi 3)))
                 (a (if (and cubic (> cubic (+ low (* 0.1 width))) (< cubic (- high (* 0.1 width))))
                        cubic
                        (* 0.5 (+ a-lo a-hi))))
                 (p (probe a)))
            (cond ((or (not (sufficient? p)) (>= (second p) (second lo))) (zoom lo p))
                  ((curvature? p) (take p 3))
                  ((>= (* (nth p 3) (- a-hi a-lo)) 0) (zoom p lo))
                  (else (zoom p hi))))))
    (let loop ((prev (list 0.0 f0 g0 slope0)) (a step0) (first? #t))
      (if (>= count max-steps)
          ;; Out of probes while every step still lowered f: take the
          ;; longest, so a far minimum is approached (or an unbounded
          ;; function followed down) rather than the decrease lost.
          (if first? #f (take prev 3))
          (let ((p (probe a)))
            (cond ((or (not (finite? (second p))) (not (sufficient? p))
                       (and (not first?) (>= (second p) (second prev))))
                   (zoom prev p))
                  ((curvature? p) (take p 3))
                  ((>= (nth p 3) 0) (zoom p prev))
                  (else (loop p (* 2 a) #f))))))))

(define (finite? x)
  "(finite? x): true when the number x is neither infinite nor NaN."
  (and (= x x) (< (abs x) inf)))

(define (two-loop g history)
  "(two-loop g history): the L-BFGS direction -H g, with H the inverse-Hessian estimate from history, a list of (s y rho) pairs newest first."
  (if (null? history)
      (neg g)
      (let* ((alphas '())
             (q (foldl (lambda (q entry)
                         (let ((a (* (nth entry 2) (dot (first entry) q))))
                           (set! alphas (cons a alphas))
                           (- q (* a (second entry)))))
                       g history))
             (newest (first history))
             (gamma (/ (dot (first newest) (second newest)) (dot (second newest) (second newest))))
             (r (foldl (lambda (r entry-alpha)
                         (let* ((entry (first entry-alpha)) (a (second entry-alpha))
                                (b (* (nth entry 2) (dot (second entry) r))))
                           (+ r (* (- a b) (first entry)))))
                       (* gamma q)
                       (zip (reverse history) alphas))))
        (neg r))))

(define (lbfgs f x0 . opts)
  "(lbfgs f x0 :max-iter 500 :history 10 :gtol 1e-10 :ftol 0 :callback #f): minimizes f (a function of one argument: a number, tensor or tree of them) from x0 by L-BFGS with a strong Wolfe line search; gradients come from value-and-grad. Stops when the gradient norm is at most gtol, when f decreases by at most ftol * max(1, |f|) in an iteration, when no step decreases f, or after max-iter iterations. (callback k x fx gnorm) runs after each iteration. Gives an association list with x, value, gradient-norm, iterations, evaluations, converged and message; read it with lookup."
  (let* ((o (check-options 'lbfgs (options 'lbfgs opts '((:max-iter 500) (:history 10) (:gtol 1e-10) (:ftol 0) (:callback #f)))
                          (list (list :max-iter (lambda (n) (whole-number? n 0)) "a whole number at least 0")
                                (list :history (lambda (n) (whole-number? n 1)) "a whole number at least 1")
                                (list :gtol non-negative-number? "a number at least 0")
                                (list :ftol non-negative-number? "a number at least 0")
                                (list :callback (lambda (c) (or (not c) (procedure? c))) "a function or #f"))))
         (max-iter (lookup o :max-iter)) (memory (lookup o :history))
         (gtol (lookup o :gtol)) (ftol (lookup o :ftol)) (callback (lookup o :callback))
         (vg (value-and-grad f))
         (evaluations 0))
    (define (evaluate v)
      (set! evaluations (+ evaluations 1))
      (let ((r (vg (tree-unflatten x0 v))))
        (list (first r) (tree-flatten (second r)))))
    (define (result x fx g k converged message)
      (list (list 'x (tree-unflatten x0 x)) (list 'value fx) (list 'gradient-norm (sqrt (dot g g)))
            (list 'iterations k) (list 'evaluations evaluations)
            (list 'converged converged) (list 'message message)))
    (let* ((x (tree-flatten x0)) (start (evaluate x)))
      (let loop ((k 0) (x x) (fx (first start)) (g (second start)) (history '()))
        (let ((gnorm (sqrt (dot g g))))
          (cond ((= fx -inf) (result x fx g k #f "f reached -inf: the function is unbounded below"))
                ((not (finite? fx)) (result x fx g k #f "the function is not finite at the current point"))
                ((not (finite? gnorm)) (result x fx g k #f "the gradient is not finite at the current point"))
                ((<= gnorm gtol) (result x fx g k #t "gradient norm below gtol"))
                ((>= k max-iter) (result x fx g k #f "reached max-iter"))
                (else
                 (let* ((d0 (two-loop g history))
                        ;; A direction that does not descend restarts from steepest descent.
                        (restart (>= (dot d0 g) 0))
                        (d (if restart (neg g) d0))
                        (step0 (if (and (null? history) (> gnorm 0)) (min 1.0 (/ 1.0 gnorm)) 1.0))
                        (found (wolfe-search evaluate x fx g d step0 30)))
                   (if (not found)
                       (if (null? history)
                           (result x fx g k #f "the line search found no decrease")
                           (loop k x fx g '()))
                       (let* ((x1 (+ x (* (first found) d)))
                              (f1 (second found)) (g1 (nth found 2))
                              (s (- x1 x)) (y (- g1 g)) (sy (dot s y))
                              (history (if (> sy (* 1e-12 (dot y y)))
                                           (take (cons (list s y (/ 1 sy)) history) memory)
                                           history)))
                         (when callback (callback (+ k 1) (tree-unflatten x0 x1) f1 (sqrt (dot g1 g1))))
                         (if (and (> (sqrt (dot g1 g1)) gtol)
                                  (<= (- fx f1) (* ftol (max 1.0 (abs fx)))))
                             (if (> ftol 0)
                                 (result x1 f1 g1 (+ k 1) #t "f decreased by less than ftol")
                                 (result x1 f1 g1 (+ k 1) #f "f did not decrease: the gradient may be inaccurate"))
                             (loop (+ k 1) x1 f1 g1 history))))))))))))

(define (minimize f x0 . args)
  "(minimize f x0 params... :method 'lbfgs :max-iter 500 :tol 1e-10 :callback #f): minimizes (f x params...) over x from x0 (a number, tensor or tree; without params, f is a function of x alone). :method is 'lbfgs (the default) or an optimizer such as (adam :lr 0.01), run for at most max-iter steps or until the gradient norm is at most tol. (callback k x fx gnorm) runs after each iteration. Gives an association list with x, value, gradient-norm, iterations, evaluations, converged and message; read it with lookup. With params (numbers or tensors) and x a number or tensor, x is differentiable with respect to them (bilevel optimization): at the minimum the gradient of f in x is zero, so by the implicit function theorem one linear solve with the Hessian gives the derivative, never differentiating the iterations (the search itself runs on values, by opaque)."
  (let ((split (split-keywords args)))
    (if (null? (car split))
        (apply minimize-over f x0 (cdr split))
        (minimize-with-params f x0 (car split) (cdr split)))))

(define (minimize-with-params f x0 params opts)
  "(minimize-with-params f x0 params opts): minimize's result for (f x params...), its x differentiable with respect to params by the implicit function theorem on the gradient in x."
  (let* ((report #f)
         (search (lambda (x0 . ps)
                   (set! report (apply opaque (lambda (x0 . ps) (apply minimize-over (lambda (x) (apply f x ps)) x0 opts))
                                       x0 ps))
                   (lookup report 'x)))
         (stationary (lambda (x . ps) ((grad (lambda (y) (apply f y ps))) x)))
         (x (apply (implicit-function 'minimize stationary search 'auto) x0 params)))
    (cons (list 'x x) (cdr report))))

(define (minimize-over f x0 . opts)
  "(minimize-over f x0 :method 'lbfgs :max-iter 500 :tol 1e-10 :callback #f): minimize for a function of x alone."
  (let* ((o (check-options 'minimize (options 'minimize opts '((:method lbfgs) (:max-iter 500) (:tol 1e-10) (:callback #f)))
                          (list (list :max-iter (lambda (n) (whole-number? n 0)) "a whole number at least 0")
                                (list :tol non-negative-number? "a number at least 0")
                                (list :callback (lambda (c) (or (not c) (procedure? c))) "a function or #f"))))
         (method (lookup o :method)) (max-iter (lookup o :max-iter))
         (tol (lookup o :tol)) (callback (lookup o :callback)))
    (cond ((eq? method 'lbfgs)
           (lbfgs f x0 :max-iter max-iter :gtol tol :callback callback))
          ((procedure? method)
           (let ((vg (value-and-grad f)))
             (let loop ((k 0) (x x0))
               (let* ((r (vg x)) (fx (first r)) (g (second r)) (gnorm (tree-norm g)))
                 (define (result converged message)
                   (list (list 'x x) (list 'value fx) (list 'gradient-norm gnorm)
                         (list 'iterations k) (list 'evaluations (+ k 1))
                         (list 'converged converged) (list 'message message)))
                 (when (and callback (> k 0)) (callback k x fx gnorm))
                 (cond ((not (finite? fx)) (result #f "the function is not finite at the current point"))
                       ((not (finite? gnorm)) (result #f "the gradient is not finite at the current point"))
                       ((<= gnorm tol) (result #t "gradient norm below tol"))
                       ((>= k max-iter) (result #f "reached max-iter"))
                       (else
                        (loop (+ k 1) (method x g))))))))
          (else (error "minimize: :method must be 'lbfgs or an optimizer such as (adam :lr 0.01), got" method)))))

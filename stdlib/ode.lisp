;;; Ordinary differential equations (issue 18): odeint, by the adaptive
;;; Dormand-Prince 5(4) method or fixed-step RK4, differentiable with
;;; respect to the initial state and the parameters by the continuous
;;; adjoint ('backsolve) or through the solver's steps ('direct). The
;;; integration is one while-loop, so it runs inside jit, grad and scan.

;; Dormand-Prince 5(4): the stages' times, their coefficients, the fifth
;; order weights (the seventh stage is the next step's first), the error
;; weights (fifth minus fourth order) and the weights of the midpoint of
;; the step used by the dense output (Shampine's continuous extension).
(define dopri5-tableau
  '((0.2 (0.2))
    (0.3 (0.075 0.225))
    (0.8 (0.9777777777777777 -3.7333333333333334 3.5555555555555554))
    (0.8888888888888888 (2.9525986892242035 -11.595793324188385 9.822892851699436 -0.2908093278463649))
    (1.0 (2.8462752525252526 -10.757575757575758 8.906422717743473 0.2784090909090909 -0.2735313036020583))))
(define dopri5-weights '(0.09114583333333333 0.0 0.44923629829290207 0.6510416666666666 -0.322376179245283 0.13095238095238096))
(define dopri5-errors '(0.0012326388888888888 0.0 -0.0042527702905061394 0.03697916666666667 -0.05086379716981132 0.0419047619047619 -0.025))
(define dopri5-midpoint '(0.10013431883002395 0.0 0.3918321794184259 -0.02982460176594817 0.05893268337240795 -0.04497888809104361 0.023904308236133973))

(define (weighted-sum ws ks)
  "(weighted-sum ws ks): the sum of w k over the weights ws and the values ks, leaving out zero weights."
  (let loop ((ws ws) (ks ks) (total 0.0))
    (cond ((or (null? ws) (null? ks)) total)
          ((= (car ws) 0.0) (loop (cdr ws) (cdr ks) total))
          (else (loop (cdr ws) (cdr ks) (+ total (* (car ws) (car ks))))))))

(define (dopri5-step f y t h k1)
  "(dopri5-step f y t h k1): one Dormand-Prince step of size h from y at t, k1 = (f y t): (y1 k7 error midpoint) with k7 = (f y1 (+ t h))."
  (let loop ((rows dopri5-tableau) (ks (list k1)))
    (if (null? rows)
        (let* ((y1 (+ y (* h (weighted-sum dopri5-weights ks))))
               (k7 (f y1 (+ t h)))
               (all (append ks (list k7))))
          (list y1 k7 (* h (weighted-sum dopri5-errors all))
                (+ y (* h (weighted-sum dopri5-midpoint all)))))
        (let* ((row (car rows))
               (k (f (+ y (* h (weighted-sum (second row) ks))) (+ t (* (first row) h)))))
          (loop (cdr rows) (append ks (list k)))))))

(define (rk4-step f y t h k1)
  "(rk4-step f y t h k1): one classical Runge-Kutta step of size h from y at t, k1 = (f y t): (y1 (f y1 (+ t h)))."
  (let* ((k2 (f (+ y (* 0.5 h k1)) (+ t (* 0.5 h))))
         (k3 (f (+ y (* 0.5 h k2)) (+ t (* 0.5 h))))
         (k4 (f (+ y (* h k3)) (+ t h)))
         (y1 (+ y (* (/ h 6.0) (+ k1 (* 2.0 k2) (* 2.0 k3) k4)))))
    (list y1 (f y1 (+ t h)))))

(define (rms x)
  "(rms x): the root mean square of a number or tensor."
  (sqrt (mean (* x x))))

(define (as-tensor x)
  "(as-tensor x): x, a number made a one-element tensor (so comparisons on it are recorded inside loops), of the number's own type."
  (if (number? x) (reshape x '(1)) x))

(define (select c a b)
  "(select c a b): a where the number c is nonzero, b elsewhere; the test is recorded, not decided, inside loop bodies."
  (sum (where (as-tensor c) a b)))

(define (pick ok a b)
  "(pick ok a b): a where ok (a one-element comparison) holds, b elsewhere, for numbers and tensors alike."
  (if (number? a) (select ok a b) (where ok a b)))

(define (first-step f y0 t0 f0 rtol atol)
  "(first-step f y0 t0 f0 rtol atol): a first step size for an order-5 method (Hairer, Norsett and Wanner's estimate)."
  (let* ((scale (+ atol (* rtol (abs y0))))
         (d0 (rms (/ y0 scale)))
         (d1 (rms (/ f0 scale)))
         (h0 (select (* (> (as-tensor d0) 1e-5) (> (as-tensor d1) 1e-5)) (* 0.01 (/ d0 (max d1 1e-300))) 1e-6))
         (f1 (f (+ y0 (* h0 f0)) (+ t0 h0)))
         (d2 (/ (rms (/ (- f1 f0) scale)) h0))
         (h1 (select (* (<= (as-tensor d1) 1e-15) (<= (as-tensor d2) 1e-15))
                     (max 1e-6 (* h0 1e-3))
                     (pow (/ 0.01 (max d1 d2 1e-300)) 0.2))))
    (min (* 100 h0) h1)))

(define (time-shape ts y)
  "(time-shape ts y): ts reshaped to broadcast against stacked values of y's shape, (m 1 ... 1)."
  (reshape ts (cons (size ts) (map (lambda (d) 1) (shape y)))))

(define (dense-output y0 y1 ymid f0 f1 h theta)
  "(dense-output y0 y1 ymid f0 f1 h theta): the quartic through y0, the midpoint and y1 with slopes f0 and f1, at the fractions theta of the step."
  (let ((a (+ (* -2 h f0) (* 2 h f1) (* -8 y0) (* -8 y1) (* 16 ymid)))
        (b (+ (* 5 h f0) (* -3 h f1) (* 18 y0) (* 14 y1) (* -32 ymid)))
        (c (+ (* -4 h f0) (* h f1) (* -11 y0) (* -5 y1) (* 16 ymid))))
    (+ y0 (* theta (+ (* h f0) (* theta (+ c (* theta (+ b (* theta a))))))))))

(define (dopri5-advance f s target t-end rtol atol max-steps)
  "(dopri5-advance f s target t-end rtol atol max-steps): Dormand-Prince steps from the state s until its time reaches target, none past t-end (the step that reaches t-end lands on it). s is (y t h k ya ka ym ta ha accepted rejected): the solution y at t, the next step h, k = (f y t), and the last accepted step, from ya at ta of size ha with slope ka there and midpoint ym (what the dense output needs), and the step counts. A step is accepted when the root mean square of its error over atol + rtol |y| is at most 1. Step sizes are constants to derivatives. More than max-steps steps is an error."
  (while-loop
   (lambda (s) (< (nth s 1) target))
   (lambda (s)
     (let* ((y (nth s 0)) (t (nth s 1)) (h (min (nth s 2) (- t-end t))) (k1 (nth s 3))
            (step (dopri5-step f y t h k1))
            (y1 (first step))
            (scale (+ atol (* rtol (max (abs y) (abs y1)))))
            (ratio (stop-gradient (rms (/ (nth step 2) scale))))
            (ok (<= (as-tensor ratio) 1.0))
            (grow (min 10.0 (max 0.2 (* 0.9 (pow (max ratio 1e-10) -0.2)))))
            (factor (select ok grow (min 1.0 grow)))
            ;; The last step lands on the last time exactly.
            (t1 (select (>= (as-tensor (nth s 2)) (- t-end t)) t-end (+ t h))))
       (list (pick ok y1 y) (select ok t1 t) (stop-gradient (* h factor)) (pick ok (second step) k1)
             (pick ok y (nth s 4)) (pick ok k1 (nth s 5)) (pick ok (nth step 3) (nth s 6))
             (select ok t (nth s 7)) (select ok h (nth s 8))
             (+ (nth s 9) (sum ok)) (- (+ (nth s 10) 1) (sum ok)))))
   s
   :max-steps max-steps
   :on-max-steps "odeint: the integration did not reach the next output time within :max-steps {n} steps (the step size underflowed: a stiff or singular system, or f gives NaN?)"))

(define (dopri5-start y0 t0 f0 h0)
  "(dopri5-start y0 t0 f0 h0): the state dopri5-advance starts from: y0 at t0 with slope f0 and first step h0, no step taken."
  (list y0 t0 h0 f0 y0 f0 y0 t0 1.0 0.0 0.0))

(define (dopri5-at s target)
  "(dopri5-at s target): the solution at target from a dopri5-advance state whose last accepted step covers it: the state itself when it stands at target, the step's dense output otherwise."
  (let* ((y (nth s 0)) (t (nth s 1)) (ta (nth s 7)) (ha (nth s 8)))
    (pick (= (as-tensor t) target) y
          (dense-output (nth s 4) y (nth s 6) (nth s 5) (nth s 3) ha (/ (- target ta) ha)))))

(define (dopri5-run f y0 ts rtol atol max-steps . first-h)
  "(dopri5-run f y0 ts rtol atol max-steps [h0]): the Dormand-Prince integration of dy/dt = (f y t) through the increasing times ts: (y t h k outputs accepted rejected), the final state, time, next step and slope, the states at ts stacked, and the step counts. A scan over the output times, each a while-loop of dopri5-advance steps until the solution passes it; the value there comes from the dense output of the step that passed it (steps are not shortened to land on output times, except on the last). Starts from the step h0 if given (estimated otherwise). The step sizes are constants to derivatives. Differentiated in reverse, the scan keeps its state at every output time when that holds at most a million numbers (revolve checkpoints otherwise)."
  (let* ((m (size ts))
         (t0 (index ts 0))
         (t-end (index ts (- m 1)))
         (f0 (f y0 t0))
         (first-row (+ (zeros (cons 1 (shape y0)) :dtype (dtype y0)) y0))
         (h0 (stop-gradient (if (null? first-h) (first-step f y0 t0 f0 rtol atol) (car first-h))))
         (start (dopri5-start y0 t0 f0 h0)))
    (if (= m 1)
        (list y0 t0 h0 f0 first-row 0.0 0.0)
        (let* ((swept (scan (lambda (s target)
                              (let ((s1 (dopri5-advance f s target t-end rtol atol max-steps)))
                                (list s1 (dopri5-at s1 target))))
                            start (slice ts 1 m)
                            ;; The reverse keeps the state at every output
                            ;; time (a few times the outputs' own memory)
                            ;; unless that is large.
                            :checkpoint (if (<= (* m (size y0)) 1000000) 'store-all 'revolve)))
               (s (first swept)))
          (list (nth s 0) (nth s 1) (nth s 2) (nth s 3)
                (concat (list first-row (second swept))) (nth s 9) (nth s 10))))))

(define (integrate-dopri5 f y0 ts rtol atol max-steps)
  "(integrate-dopri5 f y0 ts rtol atol max-steps): the states at the times ts of dy/dt = (f y t), stacked (see dopri5-run)."
  (nth (dopri5-run f y0 ts rtol atol max-steps) 4))

(define (odeint-steps f y0 ts . args)
  "(odeint-steps f y0 ts params... :rtol 1e-8 :atol 1e-8 :max-steps 100000): the Dormand-Prince steps odeint takes for this problem, as (accepted rejected), two integers."
  (let* ((split (split-keywords args))
         (o (options 'odeint-steps (cdr split) '((:rtol 1e-8) (:atol 1e-8) (:max-steps 100000))))
         (final (dopri5-run (lambda (y t) (apply f y t (car split))) y0 ts
                            (lookup o :rtol) (lookup o :atol) (lookup o :max-steps))))
    (list (int (nth final 5)) (int (nth final 6)))))

(define (integrate-rk4 f y0 ts dt max-steps)
  "(integrate-rk4 f y0 ts dt max-steps): the states at the times ts (increasing, ts[0] the start) of dy/dt = (f y t), stacked: classical Runge-Kutta steps of at most dt, landing on each output time."
  (let* ((m (size ts))
         (slots (arange (* 1.0 m)))
         (rows (time-shape slots y0))
         (final
          (while-loop
           (lambda (s) (< (nth s 2) m))
           (lambda (s)
             (let* ((y (nth s 0)) (t (nth s 1)) (i (nth s 2))
                    (t-next (sum (where (= slots i) ts 0.0)))
                    (land (<= (as-tensor (- t-next t)) dt))
                    (h (min dt (- t-next t)))
                    (k1 (f y t))
                    (k2 (f (+ y (* 0.5 h k1)) (+ t (* 0.5 h))))
                    (k3 (f (+ y (* 0.5 h k2)) (+ t (* 0.5 h))))
                    (k4 (f (+ y (* h k3)) (+ t h)))
                    (y1 (+ y (* (/ h 6.0) (+ k1 (* 2.0 k2) (* 2.0 k3) k4)))))
               (list y1 (select land t-next (+ t h)) (+ i (sum land))
                     (where (* (sum land) (= rows i)) (+ (* 0.0 rows) y1) (nth s 3)))))
           (list y0 (index ts 0) 1.0 (+ (* 0.0 rows) y0))
           :max-steps max-steps
           :on-max-steps "odeint: the integration did not reach the last time within :max-steps {n} steps of :dt")))
    (nth final 3)))

(define (flat x)
  "(flat x): a number or tensor as a vector."
  (reshape (+ (zeros (shape x) :dtype (dtype x)) x) (list (size x))))

(define (unflat v start like)
  "(unflat v start like): the elements of the vector v from start, as many as like has, in like's shape (a number for a number)."
  (let ((piece (slice v start (+ start (size like)))))
    (if (number? like) (sum piece) (reshape piece (shape like)))))

(define (odeint-adjoint f stepper y0 ts ps g ys)
  "(odeint-adjoint f stepper y0 ts ps g ys): the cotangents of y0 and of the params ps given the cotangent g of the states ys at the times ts: the adjoint system integrated backward from the last time, one span between output times after another with the step size carried over, the state reset to the forward solution and the adjoint given g's row at each output time (the continuous adjoint, 'backsolve). stepper is (start run): (start f z t) a first step, (run f z span h) the state at the end of span and the next step."
  (let* ((m (size ts)) (n (size y0))
         (dynamics
          (lambda (z tau)
            (let* ((t (neg tau)) (y (unflat z 0 y0)) (a (unflat z n y0))
                   (r (vjp (lambda (y . qs) (apply f y t qs)) (cons y ps) a)))
              (concat (cons (flat (neg (first r))) (map flat (second r)))))))
         (z0 (concat (append (list (flat (index ys (- m 1))) (flat (index g (- m 1))))
                             (map (lambda (p) (zeros (list (size p)) :dtype (dtype p))) ps))))
         (swept
          (if (= m 1)
              z0
              (first
               (scan (lambda (state i)
                       (let* ((j (- (- m 1) i))
                              (tj (index ts j)) (tk (index ts (- j 1)))
                              (span (+ (* (neg tj) (tensor 1.0 0.0)) (* (neg tk) (tensor 0.0 1.0))))
                              (ran ((second stepper) dynamics (first state) span (second state)))
                              (z1 (first ran))
                              (y (flat (index ys (- j 1))))
                              (a (+ (slice z1 n (* 2 n)) (flat (index g (- j 1))))))
                         (list (concat (list y a (slice z1 (* 2 n) (size z1)))) (second ran))))
                     (list z0 ((first stepper) dynamics z0 (neg (index ts (- m 1)))))
                     (- m 1)))))
         (a0 (unflat swept n y0)))
    (let loop ((ps ps) (start (* 2 n)) (out '()))
      (if (null? ps)
          (cons a0 (cons '() (reverse out)))
          (loop (cdr ps) (+ start (size (car ps))) (cons (unflat swept start (car ps)) out))))))

(define (odeint-tangent f solve y0 ts ps ty0 tps)
  "(odeint-tangent f solve y0 ts ps ty0 tps): the tangent of the states at the times ts given the tangents ty0 of y0 and tps of the params (nil: zero), by integrating the forward sensitivities alongside the state."
  (let* ((n (size y0))
         (ty0 (if (null? ty0) (* 0.0 y0) ty0))
         (tps (map (lambda (p t) (if (null? t) (* 0.0 p) t)) ps tps))
         (dynamics
          (lambda (z t)
            (let* ((y (unflat z 0 y0)) (ty (unflat z n y0))
                   (r (jvp (lambda (y . qs) (apply f y t qs)) (cons y ps) (cons ty tps))))
              (concat (list (flat (first r)) (flat (second r)))))))
         (both (solve dynamics (concat (list (flat y0) (flat ty0))) ts))
         (m (size ts)))
    (reshape (slice both n (* 2 n) :axis 1) (cons m (shape y0)))))

(define (time-direction who ts)
  "(time-direction who ts): 1.0 when the times ts never decrease, -1.0 when they never increase and the last is before the first; an error naming who otherwise: no time at all, a NaN or infinite time, or the first pair out of order."
  (let ((m (size ts)))
    (unless (= (rank ts) 1)
      (error (format "{}: the times ts must be a vector, got shape {}" who (shape ts))))
    (when (= m 0)
      (error (format "{}: the times ts are empty; give at least the start time (one time gives y0 alone)" who)))
    (unless (= (sum (* 0.0 ts)) 0.0)
      (error (format "{}: the times ts hold a NaN or an infinite time: {}" who ts)))
    (let* ((sign (if (< (index ts (- m 1)) (index ts 0)) -1.0 1.0))
           (back (< (* sign (- (slice ts 1 m) (slice ts 0 (- m 1)))) 0.0)))
      (if (> (sum back) 0)
          (let ((i (+ (argmax back) 1)))
            (error (format "{}: the times ts must be increasing or decreasing: ts[{}] = {} is followed by ts[{}] = {}"
                           who (- i 1) (index ts (- i 1)) i (index ts i))))
          sign))))

(define (odeint f y0 ts . args)
  "(odeint f y0 ts params... :method 'dopri5 :rtol 1e-8 :atol 1e-8 (1e-6 for an f32 y0) :adjoint 'backsolve :dt #f :max-steps 100000): the solution of dy/dt = (f y t params...) from y0 (a number or tensor) at ts[0], at each of the times ts, stacked (ts's length first). The times increase, or decrease to integrate backward in time (as diffrax and SciPy's solve_ivp do); times out of order, NaN times or none are an error naming the first pair out of order; one time gives y0. :method 'dopri5 takes adaptive Dormand-Prince 5(4) steps under the error bound atol + rtol |y| and reads the times between steps from its dense output; 'rk4 takes classical Runge-Kutta steps of at most :dt, landing on each time. Differentiable with respect to y0 and the params (numbers or tensors): :adjoint 'backsolve integrates the adjoint system backward (the continuous adjoint; memory independent of the steps; forward mode integrates the sensitivities alongside), 'direct differentiates through the solver's steps (the discrete derivative; a while-loop reverse with online checkpointing). The times are taken in y0's type. Not reaching the next output time within :max-steps steps (the step size underflowed) is an error."
  (let* ((split (split-keywords args))
         (params (car split))
         (o (options 'odeint (cdr split)
                     '((:method dopri5) (:rtol auto) (:atol auto) (:adjoint backsolve) (:dt #f) (:max-steps 100000))))
         ;; The times in the state's type (an f32 state stays f32), and
         ;; tolerances f32 can meet by default.
         (ts (astype ts (dtype y0)))
         (direction (time-direction 'odeint ts)))
    (if (< direction 0)
        ;; Decreasing times: with s = -t the system dz/ds = -f(z, -s)
        ;; runs forward through the increasing times -ts, values,
        ;; adjoints and tangents alike.
        (apply odeint
               (lambda (y s . ps) (neg (apply f y (neg s) ps)))
               y0 (neg ts) args)
        (odeint-forward f y0 ts params o))))

(define (check-ode-options o method rtol atol dt)
  "(check-ode-options o method rtol atol dt): an error naming odeint and the option when a tolerance, the step :dt or :max-steps is out of range."
  (check-options 'odeint (list (list :rtol rtol) (list :atol atol) (list :max-steps (lookup o :max-steps)))
                 (list (list :rtol positive-number? "a positive number")
                       (list :atol non-negative-number? "a number at least 0")
                       (list :max-steps (lambda (n) (whole-number? n 1)) "a whole number at least 1")))
  (when (and dt (eq? method 'dopri5))
    (error "odeint: :dt sets the step of :method 'rk4; 'dopri5 chooses its own steps (leave :dt out, or use :rtol and :atol)"))
  #t)

(define (odeint-forward f y0 ts params o)
  "(odeint-forward f y0 ts params o): odeint through the increasing times ts (in y0's type) with the options o (an association list of odeint's keywords)."
  (let* ((default-tol (if (eq? (dtype y0) 'f32) 1e-6 1e-8))
         (method (lookup o :method))
         (rtol (if (eq? (lookup o :rtol) 'auto) default-tol (lookup o :rtol)))
         (atol (if (eq? (lookup o :atol) 'auto) default-tol (lookup o :atol)))
         (dt (lookup o :dt)) (max-steps (lookup o :max-steps))
         (checked (check-ode-options o method rtol atol dt))
         (solve
          (cond ((eq? method 'dopri5)
                 (lambda (g y0 ts) (integrate-dopri5 g y0 ts rtol atol max-steps)))
                ((and (eq? method 'rk4) (number? dt) (> dt 0))
                 (lambda (g y0 ts) (integrate-rk4 g y0 ts dt max-steps)))
                ((eq? method 'rk4) (error "odeint: :method 'rk4 needs a positive step :dt, got" dt))
                (else (error "odeint: :method must be 'dopri5 or 'rk4, got" method))))
         ;; The backward pass, span by span.
         (stepper
          (if (eq? method 'dopri5)
              (list (lambda (g z t) (stop-gradient (first-step g z t (g z t) rtol atol)))
                    (lambda (g z span h)
                      (let* ((t0 (index span 0)) (t1 (index span 1))
                             (final (dopri5-advance g (dopri5-start z t0 (g z t0) h) t1 t1
                                                    rtol atol max-steps)))
                        (list (first final) (nth final 2)))))
              (list (lambda (g z t) dt)
                    (lambda (g z span h) (list (index (integrate-rk4 g z span dt max-steps) 1) h)))))
         (adjoint (lookup o :adjoint)))
    (cond ((eq? adjoint 'direct) (solve (lambda (y t) (apply f y t params)) y0 ts))
          ((eq? adjoint 'backsolve)
           (apply (custom-vjp
                   (lambda (y0 ts . ps) (solve (lambda (y t) (apply f y t ps)) y0 ts))
                   (lambda (y0 ts . ps)
                     (lambda (g ys) (odeint-adjoint f stepper y0 ts ps g ys)))
                   'odeint
                   :jvp
                   (lambda all
                     (let* ((parts (split-tangents all)) (xs (first parts)) (tans (second parts)))
                       (odeint-tangent f solve (first xs) (second xs) (cdr (cdr xs))
                                       (first tans) (cdr (cdr tans))))))
                  y0 ts params))
          (else (error "odeint: :adjoint must be 'backsolve or 'direct, got" adjoint)))))

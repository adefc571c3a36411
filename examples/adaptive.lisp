;; Differentiating an adaptive-step integrator through its stopping test.
;;
;; A ball is thrown at angle theta into air with drag coefficient c; an
;; embedded Runge-Kutta pair (Bogacki-Shampine 3(2)) with step-size
;; control integrates its flight until it falls below the ground. How many
;; steps that takes, and which are rejected, depends on theta and c: the
;; loop is a while-loop, and its reverse keeps at most :snapshots states
;; (online checkpointing), however many steps the flight takes.
;;
;; The gradient of the landing distance with respect to (theta c) is
;; checked against central finite differences, then Newton's method on
;; theta hits a target distance.
;;
;;   epsilon run examples/adaptive.lisp [--target 6.0]

(define target (script-option "--target" 6.0))

(define gravity 9.81)
(define tolerance 1e-7)

;; The flight's right-hand side: y = [x z vx vz].
(define (rhs y c)
  (let* ((v (slice y 2 4))
         (speed (sqrt (sum (* v v))))
         (drag (* (- c) speed v)))
    (concat (list v (+ drag [0.0 -9.81])))))

;; One attempted step of size h from y: the third-order solution and the
;; norm of its difference from the embedded second-order one.
(define (bs32 y h c)
  (let* ((k1 (rhs y c))
         (k2 (rhs (+ y (* 0.5 h k1)) c))
         (k3 (rhs (+ y (* 0.75 h k2)) c))
         (y3 (+ y (* h (+ (* (/ 2 9) k1) (* (/ 1 3) k2) (* (/ 4 9) k3)))))
         (k4 (rhs y3 c))
         (y2 (+ y (* h (+ (* (/ 7 24) k1) (* 0.25 k2) (* (/ 1 3) k3) (* 0.125 k4)))))
         (d (- y3 y2)))
    (list y3 (sqrt (+ (sum (* d d) :keepdims #t) 1e-30)))))

;; The state: (y h), h a one-element tensor so that `where` can accept or
;; reject a step without looking at its value.
(define (step c)
  (lambda (state)
    (let* ((y (first state)) (h (second state))
           (attempt (bs32 y h c))
           (error (second attempt))
           (accepted (<= error tolerance))
           (factor (min 4.0 (max 0.2 (* 0.9 (pow (/ tolerance error) (/ 1 3)))))))
      (list (where accepted (first attempt) y) (* h factor)))))

(define (landing theta c)
  (let* ((speed 10.0)
         (y0 (concat (list [0.0 0.0] (* speed (tensor (cos theta) (sin theta))))))
         (final (while-loop (lambda (state) (>= (index (first state) 1) 0.0))
                            (step c)
                            (list y0 [0.01])
                            :snapshots 8 :max-steps 100000))
         (y (first final)))
    ;; Back along the last velocity to the ground: z + s vz = 0.
    (- (index y 0) (* (index y 1) (/ (index y 2) (index y 3))))))

(define theta 0.6)
(define c 0.05)
(println "landing distance at theta " theta ", drag " c ": " (landing theta c))

(define gradient ((grad landing :wrt 'all) theta c))
(define eps 1e-5)
(define fd (list (/ (- (landing (+ theta eps) c) (landing (- theta eps) c)) (* 2 eps))
                 (/ (- (landing theta (+ c eps)) (landing theta (- c eps))) (* 2 eps))))
(println "gradient (d/dtheta d/dc): " gradient)
(println "central differences:      " fd)
(println "largest relative difference: "
         (apply max (map (lambda (g f) (/ (abs (- g f)) (abs f))) gradient fd)))

;; Newton on theta: landing(theta) = target.
(define (aim theta k)
  (let* ((both ((value-and-grad landing) theta c))
         (miss (- (first both) target)))
    (println "  iteration " k ": theta " theta ", misses by " miss)
    (if (or (< (abs miss) 1e-9) (= k 20)) theta (aim (- theta (/ miss (second both))) (+ k 1)))))
(println "aiming at " target ":")
(define aimed (aim 0.3 0))
(println "angle for " target ": " aimed ", lands at " (landing aimed c))

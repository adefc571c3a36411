;; Issue 18 targets: odeint's value and gradient within 1.5x of diffrax
;; (JAX, CPU) at the same tolerances and step counts. The problems of
;; bench/reference/odeint.py: Lotka-Volterra (2 states, 101 output times in
;; [0, 10]) and a 1000-state periodic diffusion (11 output times in
;; [0, 10]), Dormand-Prince at rtol = atol = 1e-8. Prints the accepted and
;; rejected steps, the loss, the parameter gradient and the median
;; milliseconds of the jitted value and value-and-gradient ('direct and
;; 'backsolve).
;;
;;   epsilon run bench/implicit/odeint.lisp lv 15
;;   epsilon run bench/implicit/odeint.lisp diffusion 15
;;
;; With `smoke` after them (epsilon run bench/implicit/odeint.lisp lv 1
;; smoke): diffusion over 100 states instead of 1000, and the two adjoints'
;; gradients (in y0 and the parameters) checked against each other, their
;; values against the jitted value.
(define problem (if (null? *args*) "lv" (first *args*)))
(define rounds (if (< (length *args*) 2) 15 (string->number (second *args*))))
(define lv? (equal? problem "lv"))
(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define cells (if smoke? 100 1000))

(define (lv-field y t p)
  (let ((x (index y 0)) (z (index y 1)))
    (stack (list (- (* (index p 0) x) (* (index p 1) x z))
                 (- (* (index p 2) x z) (* (index p 3) z))))))
(define (diffusion-field u t p)
  (* (index p 0) (+ (roll u 1) (* -2.0 u) (roll u -1))))

(define field (if lv? lv-field diffusion-field))
(define y0 (if lv? (tensor 1.0 1.0)
               (let ((x (arange (* 1.0 cells)))) (exp (neg (pow (/ (- x (* 0.5 cells)) 4.0) 2))))))
(define params (if lv? (tensor 1.5 1.0 1.0 3.0) (ones (list 1))))
(define ts (if lv? (linspace 0.0 10.0 101) (linspace 0.0 10.0 11)))
(define target (if lv? (stack (list (+ 1.0 (* 0.5 (sin ts))) (+ 1.0 (* 0.5 (cos ts)))) :axis 1) 0.0))
(define (loss-of ys) (if lv? (sum (pow (- ys target) 2)) (sum (pow (index ys 10) 2))))

(define (loss y0 p adjoint) (loss-of (odeint field y0 ts p :rtol 1e-8 :atol 1e-8 :adjoint adjoint)))
(define value (jit (lambda (y0 p) (loss y0 p 'direct))))
(define direct (jit (value-and-grad (lambda (y0 p) (loss y0 p 'direct)) :wrt '(0 1))))
(define backsolve (jit (value-and-grad (lambda (y0 p) (loss y0 p 'backsolve)) :wrt '(0 1))))

(let ((steps (odeint-steps field y0 ts params)))
  (println problem " accepted steps " (first steps) " rejected " (second steps)))
(println "loss " (value y0 params))
(println "direct gradient in the parameters " (second (second (direct y0 params))))
(println "backsolve gradient in the parameters " (second (second (backsolve y0 params))))
(when smoke?
  (let ((d (direct y0 params)) (b (backsolve y0 params)) (v (value y0 params)))
    (smoke-check "backsolve gradient against direct" (relative-difference (second b) (second d)) 1e-5)
    (smoke-check "direct value against value" (relative-difference (first d) v) 1e-12)
    (smoke-check "backsolve value against value" (relative-difference (first b) v) 1e-12)))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(define (ms f)
  (f y0 params)
  (median (map (lambda (k) (let ((start (clock))) (f y0 params) (* 1000 (- (clock) start))))
               (range rounds))))
(println "value " (ms value) " ms direct " (ms direct) " ms backsolve " (ms backsolve) " ms")

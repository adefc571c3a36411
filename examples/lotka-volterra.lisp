;;; lotka-volterra.lisp - fit the four parameters of the Lotka-Volterra
;;; predator-prey equations to noisy observations, differentiating through
;;; the ODE solver by the continuous adjoint.
;;;
;;;   epsilon run examples/lotka-volterra.lisp [--points 40] [--noise 0.02] [--plot lotka-volterra.png]
;;;
;;; dx/dt = a x - b x y,  dy/dt = d x y - g y   (x prey, y predators)
;;;
;;; The data are the solution for (a b d g) = (1.5 1 1 3) from (1, 1) at
;;; `points` times in [0, 10], each value times (1 + noise * N(0, 1)). We
;;; fit the logarithms of the parameters (so they stay positive) from
;;; (1.2 0.8 0.8 2.5) by L-BFGS on the squared misfit. Each gradient solves
;;; the equations forward with adaptive Dormand-Prince steps (odeint), then
;;; integrates the adjoint equations backward from t = 10 (:adjoint
;;; 'backsolve), so its memory does not grow with the number of steps.

(define points (script-option "--points" 40))
(define noise (script-option "--noise" 0.02))
(define plot-path (script-option "--plot" #f))

(define truth (tensor 1.5 1.0 1.0 3.0))
(define y0 (tensor 1.0 1.0))
(define ts (linspace 0.0 10.0 points))

(define (field y t p)
  (let ((x (index y 0)) (z (index y 1)))
    (stack (list (- (* (index p 0) x) (* (index p 1) x z))
                 (- (* (index p 2) x z) (* (index p 3) z))))))

;; Tolerances tight enough that the adjoint gradient is accurate below the
;; L-BFGS stopping test (gtol 1e-6): looser ones leave the search stalling
;; on gradient error near the minimum.
(define (trajectory p) (odeint field y0 ts p :rtol 1e-10 :atol 1e-10))

(seed! 7)
(define observed (* (trajectory truth) (+ 1.0 (* noise (randn (list points 2))))))

(define (misfit theta)
  (let ((r (- (trajectory (exp theta)) observed)))
    (* 0.5 (sum (* r r)))))

(define start (log (tensor 1.2 0.8 0.8 2.5)))
(println (format "{} observations of prey and predators in [0, 10], noise {}" points noise))
(println (format "gradient at the start against central differences: largest relative difference {:.2e}"
                 (check-grad misfit (list start))))
(println " iter        a        b        d        g        misfit")
(define result
  (lbfgs misfit start :gtol 1e-6
         :callback (lambda (k theta fx gnorm)
                     (let ((p (exp theta)))
                       (println (format "{:>5} {:>8.4} {:>8.4} {:>8.4} {:>8.4}  {:>12.6e}"
                                        k (index p 0) (index p 1) (index p 2) (index p 3) fx))))))
(define fitted (exp (lookup result 'x)))
(println (format "fitted (a b d g) = ({:.4} {:.4} {:.4} {:.4}), true (1.5 1 1 3)"
                 (index fitted 0) (index fitted 1) (index fitted 2) (index fitted 3)))
(println (format "largest relative error of the parameters: {:.3e}"
                 (max (abs (/ (- fitted truth) truth)))))
(println (format "{} iterations, {}" (lookup result 'iterations) (lookup result 'message)))
(let ((steps (odeint-steps field y0 ts fitted :rtol 1e-10 :atol 1e-10)))
  (println (format "each solve: {} accepted and {} rejected Dormand-Prince steps"
                   (first steps) (second steps))))

(when plot-path
  (let ((curve (trajectory fitted)))
    (plot-lines ts
                (list (slice observed 0 1 :axis 1) (slice observed 1 2 :axis 1)
                      (slice curve 0 1 :axis 1) (slice curve 1 2 :axis 1))
                plot-path
                :labels (list "prey, observed" "predators, observed" "prey, fitted" "predators, fitted")
                :title "Lotka-Volterra: observations and the fitted model"
                :xlabel "time" :ylabel "population")
    (println "plot written to" plot-path)))

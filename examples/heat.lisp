;;; heat.lisp - an inverse problem: recover the diffusion coefficient of a
;;; 1-D heat equation from its final temperature profile.
;;;
;;;   epsilon run examples/heat.lisp [--points 64] [--snapshots 10] [--plot heat.png]
;;;
;;; The picture goes to heat.png in the system's temporary folder unless
;;; --plot names a path; the script prints where it wrote it.
;;;
;;; u_t = kappa u_xx on [0, 1], u = 0 at both ends, stepped explicitly
;;; (forward Euler in time, central differences in space) with `scan`.
;;; The data are the final profile for kappa = 0.7 plus 0.1% noise. We fit
;;; kappa = exp(theta) (so it stays positive) by L-BFGS on the squared misfit.
;;; Each gradient runs the loop forward, then backward under a binomial
;;; (revolve) checkpoint schedule: only a few states are stored and the rest
;;; are recomputed, so memory stays small whatever the number of steps.

(define points (script-option "--points" 64))
(define snapshots (script-option "--snapshots" 10))
(define true-kappa 0.7)
(define horizon 0.05)

(define dx (/ 1.0 (- points 1)))
(define dt (* 0.2 dx dx))                   ; stable for kappa up to 2.5
(define steps (int (ceil (/ horizon dt))))
(define xs (linspace 0 1 points))
(define interior (* (> xs 0) (< xs 1)))     ; 1 inside, 0 on the two ends
(define u0 (+ (sin (* pi xs)) (* 0.5 (sin (* 3 pi xs))) (* 0.25 (sin (* 7 pi xs)))))

(define (final-profile kappa strategy)
  (let ((r (* kappa (/ dt (* dx dx)))))
    (scan (lambda (u i)
            (+ u (* r interior (- (+ (roll u 1) (roll u -1)) (* 2 u)))))
          u0 steps :checkpoint strategy :snapshots snapshots)))

(seed! 42)
(define clean (final-profile true-kappa 'store-all))
(define observed (+ clean (* 0.001 (randn points))))

(define (misfit theta)
  (let ((r (- (final-profile (exp theta) 'revolve) observed)))
    (* 0.5 (sum (* r r)))))

(println (format "grid: {} points, {} time steps of {:.3e}; revolve with {} snapshots"
                 points steps dt snapshots))
(println "true kappa:" true-kappa " start: 0.3")
(println " iter      kappa         misfit    |d misfit / d theta|")
(define result
  (lbfgs misfit (log 0.3) :gtol 1e-9
         :callback (lambda (k theta fx gnorm)
                     (println (format "{:>5}  {:>10.6}  {:>13.6e}  {:>10.3e}" k (exp theta) fx gnorm)))))
(define kappa (exp (lookup result 'x)))
(println (format "recovered kappa = {:.6} (true {}), relative error {:.3e}"
                 kappa true-kappa (/ (abs (- kappa true-kappa)) true-kappa)))
(println (format "{} iterations, {} gradient evaluations, {}"
                 (lookup result 'iterations) (lookup result 'evaluations) (lookup result 'message)))

;; What the checkpoint schedule saved: states stored by the loop's reverse
;; pass under revolve, against storing every state.
(define (snapshot-bytes strategy)
  (lookup (tape-stats (lambda (theta) (sum (final-profile (exp theta) strategy))) (list 0.0))
          'snapshot-bytes))
(println (format "loop states kept for the gradient: revolve {} bytes, store-all {} bytes"
                 (snapshot-bytes 'revolve) (snapshot-bytes 'store-all)))

;; The initial profile, the data, and the final profile of the fitted model.
(define plot-path (script-option "--plot" (temp-path "heat.png")))
(plot-lines xs (list u0 observed (final-profile kappa 'revolve)) plot-path
            :labels (list "initial u(x, 0)" "observed u(x, T)" (format "fitted, kappa = {:.4}" kappa))
            :title "1-D heat equation: recovering kappa" :xlabel "x" :ylabel "temperature")
(println "wrote" plot-path)

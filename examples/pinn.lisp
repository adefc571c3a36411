;;; pinn.lisp - a physics-informed network for the Poisson equation on the
;;; unit square:
;;;
;;;   -(u_xx + u_yy) = 2 pi^2 sin(pi x) sin(pi y),   u = 0 on the edges,
;;;
;;; whose solution is u = sin(pi x) sin(pi y).
;;;
;;;   epsilon run examples/pinn.lisp [--steps 1500] [--side 12]
;;;                                  [--plot pinn.png] [--error-plot pinn-error.png]
;;;
;;; The pictures go to the system's temporary folder unless the options name
;;; paths; the script prints where it wrote them.
;;;
;;; The network is a tanh perceptron 2-24-24-1, multiplied by
;;; x (1 - x) y (1 - y) so that it vanishes on the edges whatever its
;;; weights. The loss is the mean squared residual of the equation at a
;;; side x side grid of points inside the square; its Laplacian is the
;;; collapsed Taylor-mode one, and the loss's gradient with respect to the
;;; weights is a reverse sweep over that program, compiled once (jit) and
;;; run at every Adam step.

(define steps (script-option "--steps" 1500))
(define side (script-option "--side" 12))
(define plot-path (script-option "--plot" (temp-path "pinn.png")))
(define error-path (script-option "--error-plot" (temp-path "pinn-error.png")))

(define (exact p) (* (sin (* pi (index p 0))) (sin (* pi (index p 1)))))
(define (source p) (* 2 pi pi (exact p)))

;; The trial solution: zero on the edges by construction.
(define (u params p)
  (let ((x (index p 0)) (y (index p 1)))
    (* x (- 1 x) y (- 1 y) (sum (mlp params p)))))

;; Collocation points: the centres of a side x side grid of cells.
(define centres (/ (+ (arange side) 0.5) side))
(define interior
  (reshape (stack (list (reshape (* (ones (list side 1)) centres) (list (* side side)))
                        (reshape (* (reshape centres (list side 1)) (ones side)) (list (* side side))))
                  :axis 1)
           (list (* side side) 2)))

(define (residuals params)
  ((vmap (lambda (p) (+ ((laplacian (lambda (q) (u params q))) p) (source p)))) interior))
(define (loss params) (mean (square (residuals params))))
(define loss-and-gradient (jit (value-and-grad loss)))

(seed! 3)
(define initial (mlp-init (list 2 24 24 1)))
(define optimizer (adam :lr (exponential-decay 0.01 0.5 500)))
(println (format "{} collocation points, {} Adam steps" (* side side) steps))
(println " step          loss")
(define (train params k)
  (let* ((lg (loss-and-gradient params))
         (value (first lg)))
    (when (or (= k 0) (= (remainder (+ k 1) (max 1 (quotient steps 10))) 0))
      (println (format "{:>5}  {:>12.4e}" (+ k 1) value)))
    (if (= (+ k 1) steps)
        (list (optimizer params (second lg)) value)
        (train (optimizer params (second lg)) (+ k 1)))))
(define trained (train initial 0))
(define params (first trained))

;; The fitted solution against the exact one on a grid over the whole
;; square, edges included.
(define grid 41)
(define ticks (linspace 0 1 grid))
(define points
  (reshape (stack (list (reshape (* (ones (list grid 1)) ticks) (list (* grid grid)))
                        (reshape (* (reshape ticks (list grid 1)) (ones grid)) (list (* grid grid))))
                  :axis 1)
           (list (* grid grid) 2)))
(define fitted ((vmap (lambda (p) (u params p))) points))
(define wanted ((vmap exact) points))
(define difference (- fitted wanted))
(define max-error (max (abs difference)))
(define relative-l2 (/ (sqrt (sum (square difference))) (sqrt (sum (square wanted)))))
(println (format "error on a {} x {} grid: max |u - exact| = {:.3e}, relative L2 = {:.3e}"
                 grid grid max-error relative-l2))
(println (format "mean squared residual at the collocation points: {:.3e}" (loss params)))

;; Along the middle line y = 1/2, and the error over the square.
(define middle (quotient grid 2))
(define (row-of values) (index (reshape values (list grid grid)) middle))
(plot-lines ticks (list (row-of wanted) (row-of fitted)) plot-path
            :labels (list "exact sin(pi x) sin(pi y)" "network") :style (list "line" "scatter")
            :title "Poisson on the unit square: u(x, 1/2)" :xlabel "x" :ylabel "u")
(println "wrote" plot-path)
(heatmap (reshape difference (list grid grid)) error-path
         :x-range (list 0 1) :y-range (list 0 1) :title "network - exact" :xlabel "x" :ylabel "y")
(println "wrote" error-path)

;;; rosenbrock.lisp - minimizing Rosenbrock's banana function from the
;;; classic start (-1.2, 1) with L-BFGS and with Adam.
;;;
;;;   epsilon run examples/rosenbrock.lisp [--adam-steps 20000]
;;;
;;; f(x, y) = 100 (y - x^2)^2 + (1 - x)^2 has its minimum 0 at (1, 1), at the
;;; end of a long curved valley that first-order methods crawl along.
;;; Gradients come from (value-and-grad f), compiled once to a tape.

(define (rosenbrock p)
  (let ((x (index p 0)) (y (index p 1)))
    (+ (* 100 (pow (- y (* x x)) 2)) (pow (- 1 x) 2))))

(define start [-1.2 1.0])
(define (distance p) (sqrt (sum (pow (- p [1.0 1.0]) 2))))

(println "Rosenbrock from" start ", f =" (rosenbrock start))

(println "\n== L-BFGS (strong Wolfe line search, 10 pairs of history) ==")
(println " iter             x              y          f(x, y)     |grad f|")
(define (show k p fx gnorm)
  (println (format "{:>5}  {:>13.10}  {:>13.10}  {:>14.6e}  {:>10.3e}"
                   k (index p 0) (index p 1) fx gnorm)))
(define lbfgs-result (minimize rosenbrock start :method 'lbfgs :tol 1e-10 :callback show))
(define lbfgs-x (lookup lbfgs-result 'x))
(println (format "L-BFGS: {} after {} iterations and {} evaluations of f and its gradient"
                 (lookup lbfgs-result 'message) (lookup lbfgs-result 'iterations)
                 (lookup lbfgs-result 'evaluations)))
(println (format "L-BFGS minimum: x = {:.12} y = {:.12}, distance to (1, 1) = {:.3e}"
                 (index lbfgs-x 0) (index lbfgs-x 1) (distance lbfgs-x)))

(println "\n== Adam (lr 0.02, halved every 2,000 steps) ==")
(define adam-steps (script-option "--adam-steps" 20000))
(define (every-2000 k p fx gnorm)
  (when (= (mod k 2000) 0)
    (println (format "{:>5}  {:>13.10}  {:>13.10}  {:>14.6e}  {:>10.3e}"
                     k (index p 0) (index p 1) fx gnorm))))
(define adam-result
  (minimize rosenbrock start
            :method (adam :lr (exponential-decay 0.02 0.5 2000))
            :max-iter adam-steps :tol 1e-10 :callback every-2000))
(define adam-x (lookup adam-result 'x))
(println (format "Adam: {} after {} steps" (lookup adam-result 'message) (lookup adam-result 'iterations)))
(println (format "Adam minimum: x = {:.12} y = {:.12}, distance to (1, 1) = {:.3e}"
                 (index adam-x 0) (index adam-x 1) (distance adam-x)))

;;; quickstart.lisp - a first tour of Epsilon.
;;; Run it with:  cargo run --release -- run examples/quickstart.lisp
;;;
;;; Epsilon is a small Lisp built for differentiation. This tour shows the
;;; language and its tensors, symbolic derivatives of formulas, numeric
;;; derivatives of functions, and a model fitted with them. The other
;;; examples go further: rosenbrock, mlp, heat, hyperelastic, attention.

(println "== numbers ==")
(println "(+ 1 2)       =>" (+ 1 2))
(println "(/ 1 2)       =>" (/ 1 2) "  ; division always gives a float")
(println "(sqrt 2)      =>" (sqrt 2))
(println "(/ 1 0.0)     =>" (/ 1 0.0) "  ; IEEE, while (/ 1 0) is an error")

(println "\n== functions and closures ==")
(define (square x)
  "The square of x."
  (* x x))
(println "(square 7)    =>" (square 7))
(define (make-counter)
  (let ((count 0))
    (lambda () (set! count (+ count 1)) count)))
(define tick (make-counter))
(tick) (tick)
(println "a counter after three ticks:" (tick))

;; Tail calls run in constant stack: this loop takes a million steps.
(define (count-up i n)
  (if (= i n) i (count-up (+ i 1) n)))
(println "a million tail calls:" (count-up 0 1000000))

(println "\n== lists ==")
(define xs (range 1 11))
(println "xs               =>" xs)
(println "squares of evens =>" (->> xs (filter even?) (map square)))
(println "sum              =>" (reduce + 0 xs))

(println "\n== tensors (f64, NumPy broadcasting) ==")
(define A [[1 2] [3 4]])
(println "A              =>" A)
(println "(matmul A A)   =>" (matmul A A))
(println "A + [10 20]    =>" (+ A [10 20]))
(println "column sums    =>" (sum A :axis 0))
(println "softmax        =>" (softmax [1 2 3]))

(println "\n== symbolic derivatives ==")
;; Quoted formulas are differentiated and simplified on an e-graph.
(println "d/dx x sin x     =" (diff '(* x (sin x)) 'x))
(println "grad x sin y     =" (grad '(* x (sin y)) '(x y)))
(println "d3/dx3 exp(2x)   =" (diff '(exp (* 2 x)) 'x 3))
(println "hessian x^2 y    =" (hessian '(* x x y) '(x y)))
(println "sqrt(x^2)        =" (simplify '(sqrt (* x x))) "  (not x: domains are kept)")
;; The Gaussian's derivative, checked against a central finite difference.
(define gauss '(exp (neg (/ (* x x) 2))))
(define d-gauss (lambdify '(x) (diff gauss 'x)))
(define gauss-fn (lambdify '(x) gauss))
(define h 1e-6)
(println (format "at x = 0.7: symbolic {:.8}, finite difference {:.8}"
                 (d-gauss 0.7) (/ (- (gauss-fn (+ 0.7 h)) (gauss-fn (- 0.7 h))) (* 2 h))))

(println "\n== numeric derivatives of Lisp functions ==")
;; (grad f) traces f, builds its gradient program and compiles it to a tape.
(define (rosenbrock v)
  (let ((a (slice v 0 -1)) (b (slice v 1 nil)))
    (sum (+ (* 100 (pow (- b (* a a)) 2)) (pow (- 1 a) 2)))))
(println "grad rosenbrock at [-1.2 1] =" ((grad rosenbrock) [-1.2 1.0]))
(println "hessian at the minimum      =" ((hessian rosenbrock) [1.0 1.0]))
(println "check-grad (max rel. error) =" (check-grad rosenbrock (list [0.5 -0.3 0.8])))
(println "branches follow the values  =" (map (grad (lambda (t) (if (> t 0) (* t t) (- t)))) '(3.0 -3.0)))

(println "\n== a small model fitted by gradient descent ==")
;; Fit y = w x + b to noisy data: (grad loss :wrt 'all) traces the loss
;; once, compiles its gradient to a tape, and reruns the tape every step.
(seed! 7)
(define x (linspace 0 1 50))
(define y (+ (* 3 x) 0.5 (* 0.05 (randn 50))))
(define (loss w b) (mean (pow (- (+ (* w x) b) y) 2)))
(define loss-grad (grad loss :wrt 'all))
(define (descend w b steps rate)
  (if (= steps 0)
      (list w b)
      (let ((g (loss-grad w b)))
        (descend (- w (* rate (first g))) (- b (* rate (second g))) (- steps 1) rate))))
(define fitted (descend 0.0 0.0 2000 0.5))
(println (format "w = {:.3}, b = {:.3}  (the data were made with w = 3, b = 0.5)"
                 (first fitted) (second fitted)))
;; The standard library does the loop for you: minimize runs L-BFGS (or an
;; optimizer such as (adam :lr 0.01)) on a function of one argument, here a
;; list of parameters. See examples/rosenbrock.lisp and examples/mlp.lisp.
(define best (minimize (lambda (p) (loss (first p) (second p))) (list 0.0 0.0)))
(println (format "minimize (L-BFGS): w = {:.3}, b = {:.3} in {} iterations"
                 (first (lookup best 'x)) (second (lookup best 'x)) (lookup best 'iterations)))

(println "\n== errors point at their source ==")
(println (try (car 42) (catch (e) (str "caught: " e))))
(println "\nDone. Start the REPL with `epsilon` and type :help.")

;;; Numeric differentiation (SPEC section 4 "Numeric"): the forms, the
;;; structure of their results and their errors. Derivatives here are of
;;; small polynomials, exact in floating point; tests/numeric.rs checks
;;; every op against finite differences.

(define (f x y) (* (sum (* x x)) y))
(define x [1 2 3])

;; ---- grad ----
((grad (lambda (t) (* t t t))) 2.0)
;=> 12.0
((grad f) x 2.0)
;=> [4.0 8.0 12.0]
((grad f :wrt 1) x 2.0)
;=> 14.0
((grad f :wrt '(1 0)) x 2.0)
;=> (14.0 [4.0 8.0 12.0])
((grad f :wrt 'all) x 2.0)
;=> ([4.0 8.0 12.0] 14.0)
((grad (lambda (t) 3.0)) 2.0)
;=> 0.0
((grad (grad (lambda (t) (* t t t)))) 2.0)
;=> 12.0
;; A gradient has the shape of its argument.
(shape ((grad (lambda (m) (sum (* m m)))) [[1 2] [3 4]]))
;=> (2 2)

;; ---- value-and-grad, vjp, jvp, hvp ----
((value-and-grad f) x 2.0)
;=> (28.0 [4.0 8.0 12.0])
(vjp (lambda (t) (* t t)) (list [1 2]) [1 10])
;=> ([1.0 4.0] ([2.0 40.0]))
(vjp (lambda (a b) (list (* a b) b)) (list 2.0 3.0) (list 1.0 1.0))
;=> ((6.0 3.0) (3.0 3.0))
(jvp (lambda (t) (* t t)) (list [1 2]) (list [1 10]))
;=> ([1.0 4.0] [2.0 40.0])
(jvp f (list x 2.0) (list [0 0 0] 1.0))
;=> (28.0 14.0)
(hvp (lambda (t) (sum (* t t t))) (list [1 2]) [1 1])
;=> [6.0 12.0]

;; ---- jacobian, hessian ----
((jacobian (lambda (t) (* t t))) [1 2])
;=> [[2.0 0.0] [0.0 4.0]]
((hessian (lambda (t) (* (sum t) (sum t)))) [1 2])
;=> [[2.0 2.0] [2.0 2.0]]
((hessian (lambda (t) (* t t t))) 2.0)
;=> 12.0

;; ---- stop-gradient, jit, check-grad ----
((grad (lambda (t) (* t (stop-gradient t)))) 3.0)
;=> 3.0
(stop-gradient [1 2])
;=> [1.0 2.0]
((jit f) x 2.0)
;=> 28.0
(< (check-grad f (list x 2.0)) 1e-6)
;=> #t
(> (check-grad (lambda (t) (* t (stop-gradient t))) (list 3.0)) 0.1)
;=> #t

;; ---- the tape cache ----
(define (g t) (if (> (sum t) 0) (sum (* t t)) (sum (sin t))))
(assoc 'cached (tape-stats g (list [1 2])))
;=> (cached #f)
(assoc 'cached (tape-stats g (list [3 4])))
;=> (cached #t)
(assoc 'cached (tape-stats g (list [-3 -4])))
;=> (cached #f)
(assoc 'cached (tape-stats g (list [1 2 3])))
;=> (cached #f)
(string? (show-tape g (list [1 2])))
;=> #t

;; ---- defderiv: one rule for reverse and forward mode ----
(defderiv softclip (x) (tanh x) ((- 1 (pow (tanh x) 2))))
;=> softclip
((grad (lambda (x) (sum (softclip x)))) [0 0])
;=> [1.0 1.0]
(defderiv seven (x) (sin x) (7))
;=> seven
((grad seven) 1.0)
;=> 7.0
((grad (grad seven)) 1.0)
;=> 0.0
(second (jvp seven (list 1.0) (list 2)))
;=> 14.0
(softclip 1 2)
;!! softclip takes 1 argument, got 2
(defderiv sin (x) (sin x) ((cos x)))
;!! sin is a built-in function

;; ---- errors ----
((grad (lambda (t) (* t 2))) [1 2])
;!! grad needs a function returning a number, this one returned shape [2]
((grad f :wrt 2) x 2.0)
;!! unknown :wrt position 2
((grad (lambda (t) (+ t [1 2 3]))) [1 2])
;!! do not broadcast
((grad (lambda (t) (sum (sort t)))) [3 1 2])
;!! sort has no derivative
(vjp f x 1.0)
;!! must be a list of arguments
(vjp (lambda (t) (* 2 t)) (list [1 2]) [1 2 3])
;!! the cotangent has shape [3], the result has shape [2]
(jvp f (list x 2.0) (list [1 0 0]))
;!! 1 tangents for 2 arguments
(hvp (lambda (t) (sum (* t t))) (list [1 2]) [1 2 3])
;!! the vector has shape [3], the argument has shape [2]

;; check-grad takes nested lists of parameters, as grad does
(< (check-grad (lambda (p) (* (sum (car p)) (sin (second p)))) (list (list [1.0 2.0] 0.5))) 1e-6)
;=> #t

;; ---- regressions found while writing the standard library and its guide ----
;; Predicates look at a traced value itself, not at a list holding one.
((grad (lambda (x) (if (number? (list x)) 0.0 (* x x)))) 3.0)
;=> 6.0
((grad (lambda (x) (if (tensor? (list x)) 0.0 (* x x)))) 3.0)
;=> 6.0
;; (tensor x) of a traced number is 0-dimensional, as it is untraced.
((grad (lambda (x) (if (equal? (shape (tensor x)) '()) (* x x) 0.0))) 3.0)
;=> 6.0

;; ---- set-backend! ----
(set-backend! 'cpu)
;=> cpu
;; auto is cuda on a machine with a usable GPU, cpu elsewhere.
(if (member (set-backend! 'auto) '(cpu cuda)) 'chosen 'neither)
;=> chosen
(set-backend! 'cpu)
;=> cpu
(set-backend! 'tpu)
;!! unknown backend tpu
(set-backend! 42)
;!! expected 'cpu, 'cuda or 'auto

;;; Symbolic bugs found while writing symbolic.lisp: each case asserts the
;;; behaviour that should be, and fails today. When a bug is fixed, move its
;;; case into symbolic.lisp.

;; ---- a panic: + * take no arguments, but - / min max with none index past the end ----
;; Today: internal error "range start index 1 out of range for slice of length 0"
;; (src/lisp/symbolic.rs, call_node's fold).
(simplify '(-))
;!! argument
(diff '(/) 'x)
;!! argument
(simplify '(min))
;!! argument
(evaluate '(max) '())
;!! argument

;; ---- a list headed by an unknown symbol is read as a list of expressions ----
;; diff reports (foo x) well; simplify, evaluate and lambdify read it as the
;; two expressions foo and x, so a misspelt operator passes silently.
;; Today: (sinn x)
(simplify '(sinn (+ x 0)))
;!! sinn is not a differentiable operator
;; Today: "no value for variable foo"
(lambdify '(x) '(foo x))
;!! foo is not a differentiable operator
;; Today: ((0 0) (1 0) (0 1)), the rows of *, x and y as three expressions.
(jacobian '(* x y) '(x y))
;!! list of expressions

;; ---- improper lists of expressions are cut short ----
;; Today: (x) and (2.0): the tail z is dropped.
(simplify (cons '(* x 1) 'z))
;!! proper list
(evaluate (cons '(* x 1) 'z) '((x 2)))
;!! proper list

;; ---- grad of an expression without its variables ----
;; Today: (), as if no variables were asked for.
(grad '(* x y))
;!! variables

;; ---- defrule accepts what an expression would refuse ----
;; Today: accepted; the string becomes the variable s, so a rule
;; (sin ?a) => (+ ?a "s") makes (simplify '(sin x)) give (+ x s).
(defrule rule-s '(+ ?a "s") '?a)
;!! string
;; Today: accepted; nan becomes a variable named nan.
(defrule rule-n '(sin ?a) '(+ ?a nan))
;!! finite
;; Today: accepted; #t becomes a variable named #t.
(defrule rule-b '(sin #t) '(cos #t))
;!! boolean
;; Today: "rule rule-v: Rewrite user/rule-v refers to unbound var ?a"
;; (patterns are printed and re-parsed, so [1.0 2.0] reads as an operator call).
(defrule rule-v [1 2] '?a)
;!! tensor

;; ---- expr-size does not check its argument ----
;; Today: 3 and 1.
(expr-size '(sin x y))
;!! sin takes 1 argument
(expr-size "a")
;!! string
;; 1.0 and 1 are the same constant once parsed; today 3.
(expr-size '(+ 1.0 1))
;=> 2

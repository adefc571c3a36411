;;; The special functions of SPEC section 7: lgamma, digamma, polygamma,
;;; erf, erfc and multigammaln, on numbers and tensors, at their poles,
;;; in symbolic expressions and under grad. Values were checked against
;;; SciPy (tests/special_functions.rs compares many more with mpmath).

;; ---- values ----
(lgamma 1)
;=> 0.0
(lgamma 2)
;=> 0.0
(lgamma 0.5)
;=> 0.5723649429247001
(lgamma 5)
;=> 3.1780538303479458
(lgamma -2.5)
;=> -0.05624371649767412
(lgamma [1 2 3 4])
;=> [0.0 0.0 0.6931471805599453 1.791759469228055]
(digamma 1)
;=> -0.5772156649015329
(digamma 0.5)
;=> -1.9635100260214235
(polygamma 1 1)
;=> 1.6449340668482264
(polygamma 0 1)
;=> -0.5772156649015329
(polygamma 2 [1 2])
;=> [-2.404113806319188 -0.40411380631918853]
(erf 0)
;=> 0.0
(erf 1)
;=> 0.8427007929497149
(erf -0.5)
;=> -0.5204998778130465
(erfc 1)
;=> 0.15729920705028513
(erfc 10)
;=> 2.088487583762545e-45
(erfc -1)
;=> 1.8427007929497148
(multigammaln 3 3)
;=> 2.694924879806965
(multigammaln [2.5 4.0] 2)
;=> [0.8570478133976193 3.565098014499829]

;; ---- poles, the domain of multigammaln, bad arguments ----
(lgamma 0)
;=> inf
(lgamma -2)
;=> inf
(digamma 0.0)
;=> -inf
(digamma -3)
;=> nan
(polygamma 1 0)
;=> inf
(multigammaln 1 3)
;=> inf
(multigammaln 0.9 3)
;=> nan
(polygamma 1.5 2)
;!! the order n must be a whole number >= 0
(multigammaln 2 0)
;!! the dimension p must be a whole number from 1 to 10000
(erf "one")
;!! expected a number or tensor

;; ---- symbolic ----
(diff '(lgamma x) 'x)
;=> (digamma x)
(diff '(digamma x) 'x)
;=> (polygamma 1 x)
(diff '(lgamma x) 'x 3)
;=> (polygamma 2 x)
(diff '(polygamma 2 (* 2 x)) 'x)
;=> (* 2 (polygamma 3 (* 2 x)))
(diff '(multigammaln x 2) 'x)
;=> (+ (digamma x) (digamma (- x 0.5)))
(simplify '(multigammaln x 1))
;=> (lgamma x)
(evaluate '(lgamma x) '((x 5)))
;=> 3.1780538303479458
((lambdify '(x) '(erf x)) 0.5)
;=> 0.5204998778130465
(evaluate (diff '(erf x) 'x) '((x 0.0)))
;=> 1.1283791670955126

;; ---- numeric derivatives ----
((grad (lambda (x) (lgamma x))) 5.0)
;=> 1.5061176684318003
((grad (lambda (x) (sum (erfc x)))) [0.0])
;=> [-1.1283791670955126]
((grad (lambda (x) (sum (multigammaln x 2)))) [3.0])
;=> [1.6259409757437102]
((jit (lambda (x) (digamma x))) 1.0)
;=> -0.5772156649015329

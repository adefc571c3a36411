; W3 sincos-grad: f = sin(cos(exp(x y)))^3 / (1 + x^2 + y^2), gradient w.r.t. (x, y). Run: epsilon run bench/w3/sincos-grad.lisp
(define f '(/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (pow x 2) (pow y 2))))
(define vars '(x y))
(define g (time (grad f vars)))
(println (expr-size g))

; W3 sincos-hessian: Hessian of f = sin(cos(exp(x y)))^3 / (1 + x^2 + y^2) w.r.t. (x, y); SymPy reference counts the 3 distinct entries (xx, xy, yy). Run: epsilon run bench/w3/sincos-hessian.lisp
(define f '(/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (pow x 2) (pow y 2))))
(define vars '(x y))
(define g (time (hessian f vars)))
(println (expr-size g))

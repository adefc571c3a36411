; diff of 10,000 nested sin calls: a program over the 5,000-node saturation
; threshold (sharing and constant folding only). Run: epsilon run bench/deep-diff.lisp
(define (nest n e) (if (= n 0) e (nest (- n 1) (list 'sin e))))
(define deep (nest 10000 'x))
(define d (time (diff deep 'x)))
(println (expr-size d))

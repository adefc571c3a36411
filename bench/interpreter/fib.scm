;; (fib 30) in Scheme (Guile, Chez), for bench/interpreter/compare.sh.
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(display (fib 30))
(newline)

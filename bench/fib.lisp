;; Naive recursive Fibonacci: a measure of interpreter call overhead.
;; Run: epsilon run bench/fib.lisp 25
(define (fib n)
  (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(println (fib (int (if (null? *args*) "25" (first *args*)))))

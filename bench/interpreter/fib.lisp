;; (fib n), naive recursion: the cost of a non-tail call and of integer
;; arithmetic and comparison. Run: epsilon run bench/interpreter/fib.lisp 30
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(println (fib (int (if (null? *args*) "30" (first *args*)))))

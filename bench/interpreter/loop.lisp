;; A named let of n float steps: the cost of a tail call and of float
;; arithmetic. Run: epsilon run bench/interpreter/loop.lisp 1000000
(define (run n)
  (let loop ((i 0) (x 0.0))
    (if (< i n) (loop (+ i 1) (+ (* x 0.999) 1.0)) x)))
(println (run (int (if (null? *args*) "1000000" (first *args*)))))

;; The float loop of loop.lisp in Scheme (Guile, Chez).
(define (run n)
  (let loop ((i 0) (x 0.0))
    (if (< i n) (loop (+ i 1) (+ (* x 0.999) 1.0)) x)))
(display (run 1000000))
(newline)

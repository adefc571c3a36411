; diff of 10,000 nested sin calls: a program over the 5,000-node saturation
; threshold (sharing and constant folding only). Run: epsilon run bench/deep-diff.lisp
; With `smoke`: 6,000 nested calls (still over the threshold), and the
; derivative at x = 0.7 checked against the chain rule run as a loop.
(define smoke? (member "smoke" *args*))
(when smoke? (load "smoke.lisp"))
(define depth (if smoke? 6000 10000))
(define (nest n e) (if (= n 0) e (nest (- n 1) (list 'sin e))))
(define deep (nest depth 'x))
(define d (time (diff deep 'x)))
(println (expr-size d))
(when smoke?
  (let loop ((k 0) (y 0.7) (dy 1.0))
    (if (< k depth)
        (loop (+ k 1) (sin y) (* (cos y) dy))
        (smoke-check "derivative at 0.7 against the chain rule"
                     (relative-difference (evaluate d '((x 0.7))) dy) 1e-12))))

;; Loaded by load_outer.lisp.
(define inner-value 41)
(define (inner-square v) "Squares v." (* v v))

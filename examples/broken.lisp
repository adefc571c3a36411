;; An example with a mistake, to show how errors are reported.
(define (f x)
  (* x (sin y)))
(f 2)

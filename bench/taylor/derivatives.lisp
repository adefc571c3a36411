;; Issue 49: `derivatives` of order 10 of a scalar function of 200
;; operations (50 rounds of four), against the function's own value, both
;; compiled (jit) and called `rounds` times after the first. Prints the
;; derivatives' checksum, the median seconds of each and their ratio, and
;; the tapes' instruction counts.
;;
;;   epsilon run bench/taylor/derivatives.lisp 10 2000
;;
;; With `smoke` after them (epsilon run bench/taylor/derivatives.lisp 10 3
;; smoke), orders 1 and 2 are checked against nested gradients.
(define order (if (null? *args*) 10 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 2000 (string->number (second *args*))))
(define (chain x)
  (let loop ((i 0) (y x))
    (if (= i 50) y
        (loop (+ i 1) (+ (* 0.9 (sin y)) (* 0.3 (exp (* -0.1 y))))))))
(define value (jit chain))
(define series (jit (lambda (x) (derivatives chain x order))))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(define (seconds f)
  (f)
  (median (map (lambda (k) (let ((start (clock))) (f) (- (clock) start))) (range rounds))))
(define (instructions f) (second (assoc 'instructions (tape-stats f (list 0.3)))))
(println "derivatives " (series 0.3))
(define v (seconds (lambda () (value 0.3))))
(define d (seconds (lambda () (series 0.3))))
(println "value seconds " v " instructions " (instructions chain))
(println "order " order " seconds " d " instructions "
         (instructions (lambda (x) (derivatives chain x order))) " ratio " (/ d v))
(when (member "smoke" *args*)
  (load "../smoke.lisp")
  (let ((d (series 0.3)))
    (smoke-check "order 1 against grad" (relative-difference (second d) ((grad chain) 0.3)) 1e-8)
    (smoke-check "order 2 against grad of grad" (relative-difference (nth d 2) ((grad (grad chain)) 0.3)) 1e-8)))

;; Issue 19, item 3: the sparse Jacobian of a 1-D periodic diffusion
;; residual of size n (default 10^5), r(u) = u[i-1] + u[i+1] - 2 u[i] +
;; 0.1 u[i]^2: three non-zeros a row, three colours. Prints the number of
;; non-zeros, a checksum of the values and the median seconds of `rounds`
;; warm calls of sparse-jacobian (pattern read from the program, colouring,
;; one batched forward pass, recovery).
;;
;;   epsilon run bench/sparse/stencil.lisp 100000 9
(define n (if (null? *args*) 100000 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 9 (string->number (second *args*))))
(define (residual u) (+ (roll u 1) (roll u -1) (* -2.0 u) (* 0.1 u u)))
(define u (sin (* 0.001 (arange (* 1.0 n)))))
(define j (sparse-jacobian residual u))
(println "n " n " non-zeros " (size (nth j 2)) " checksum " (sum (nth j 2)))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(println "seconds "
         (median (map (lambda (k) (let ((start (clock))) (sparse-jacobian residual u) (- (clock) start)))
                      (range rounds))))

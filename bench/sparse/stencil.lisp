;; Issue 19, item 3: sparse derivatives of a 1-D periodic diffusion
;; problem of size n (default 10^5).
;;   residual r(u) = u[i-1] + u[i+1] - 2 u[i] + 0.1 u[i]^2 (Jacobian: three
;;   non-zeros a row, three colours);
;;   energy E(u) = sum 0.5 (u[i+1] - u[i])^2 + 0.025 u[i]^4 (Hessian:
;;   cyclic tridiagonal, three star colours).
;; Prints the non-zeros, a checksum, the first call's seconds (the pattern
;; read from the program and coloured, the tape compiled) and the median
;; seconds of `rounds` later calls (pattern and colouring found again for
;; the same program, one batched pass, recovery); for n <= 4000 also the
;; dense `jacobian` (one forward pass per column, batched) for comparison.
;;
;;   epsilon run bench/sparse/stencil.lisp 100000 9
;;
;; With `smoke` after them (epsilon run bench/sparse/stencil.lisp 200 1
;; smoke): the sparse Jacobian and Hessian are checked against the dense
;; ones (`jacobian`, `hessian`): the entries listed, and nothing outside.
(define n (if (null? *args*) 100000 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 9 (string->number (second *args*))))
(define (residual u) (+ (roll u 1) (roll u -1) (* -2.0 u) (* 0.1 u u)))
(define (energy u)
  (let ((d (- (roll u -1) u)))
    (sum (+ (* 0.5 d d) (* 0.025 u u u u)))))
(define u (sin (* 0.001 (arange (* 1.0 n)))))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(define (seconds thunk) (let ((start (clock))) (thunk) (- (clock) start)))
(define (measure name thunk)
  (let* ((start (clock))
         (result (thunk))
         (first-call (- (clock) start))
         (warm (median (map (lambda (k) (seconds thunk)) (range rounds)))))
    (println name " n " n " non-zeros " (size (nth result 2)) " checksum " (sum (nth result 2))
             " first " first-call " seconds " warm)))
(measure "sparse-jacobian" (lambda () (sparse-jacobian residual u)))
(measure "sparse-hessian" (lambda () (sparse-hessian energy u)))
(when (<= n 4000)
  (let* ((start (clock))
         (dense ((jacobian residual) u))
         (first-call (- (clock) start))
         (warm (median (map (lambda (k) (seconds (lambda () ((jacobian residual) u)))) (range rounds)))))
    (println "dense-jacobian n " n " first " first-call " seconds " warm)))
(when (member "smoke" *args*)
  (load "../smoke.lisp")
  (define (against-dense label sparse dense)
    (let ((listed (gather (flatten dense) (+ (* n (first sparse)) (second sparse)))))
      (smoke-check (str label " entries against dense") (relative-difference (nth sparse 2) listed) 1e-12)
      (smoke-check (str label " has no entry outside its pattern")
                   (relative-difference (sum (abs (nth sparse 2))) (sum (abs dense))) 1e-12)))
  (against-dense "sparse-jacobian" (sparse-jacobian residual u) ((jacobian residual) u))
  (against-dense "sparse-hessian" (sparse-hessian energy u) ((hessian energy) u)))

;; Issue 18 target: the implicit gradient of a 1000-dimensional fixed point
;; costs at most 3x the forward solve. x = tanh(W x + b) with W scaled so the
;; map contracts (|W| about 0.6), solved to tol 1e-10; the gradient of
;; sum(c * x*) with respect to W and b solves one linear system with
;; I - df/dx at the solution (BiCGSTAB, products by vjp), after the forward
;; solve it also runs. Both are jitted; medians of alternated rounds.
;;
;;   epsilon run bench/implicit/fixed-point.lisp [n] [rounds]
;;
;; With `smoke` after them (epsilon run bench/implicit/fixed-point.lisp
;; 20 1 smoke): the implicit gradient is checked against central finite
;; differences (check-grad) and the jitted one against the one not jitted.
(define n (if (null? *args*) 1000 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 15 (string->number (second *args*))))
;; The data of bench/reference/fixed_point.py: pseudo-random, the same in
;; both (sin of a quadratic).
(define (scrambled count scale)
  (let ((k (arange (* 1.0 count))))
    (* scale (sqrt 2.0) (sin (+ (* k k 0.001) k)))))
(define W (reshape (scrambled (* n n) (/ 0.6 (sqrt n))) (list n n)))
(define b (scrambled n 0.5))
(define c (scrambled n 1.0))
(define x0 (zeros (list n)))
(define (cell x W b) (tanh (+ (matmul W x) b)))
(define forward (jit (lambda (W b) (sum (* c (fixed-point cell x0 W b))))))
(define gradient (jit (grad (lambda (W b) (sum (* c (fixed-point cell x0 W b)))) :wrt '(0 1))))
(define (seconds f)
  (let ((start (clock))) (f W b) (- (clock) start)))
(println "loss " (forward W b) " gradient checksum "
         (let ((g (gradient W b))) (+ (sum (first g)) (sum (second g)))))
(when (member "smoke" *args*)
  (load "../smoke.lisp")
  (let ((objective (lambda (W b) (sum (* c (fixed-point cell x0 W b))))))
    (smoke-check "implicit gradient against finite differences" (check-grad objective (list W b)) 1e-6)
    (smoke-check "jitted gradient against not jitted"
                 (relative-difference (gradient W b) ((grad objective :wrt '(0 1)) W b)) 1e-12)
    (smoke-check "jitted loss against not jitted" (relative-difference (forward W b) (objective W b)) 1e-12)))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(let loop ((k 0) (fs '()) (gs '()))
  (if (< k rounds)
      (let* ((tf (seconds forward)) (tg (seconds gradient)))
        (loop (+ k 1) (cons tf fs) (cons tg gs)))
      (let ((mf (median fs)) (mg (median gs)))
        (println "n " n ": forward solve " (* 1000 mf) " ms, value and implicit gradient "
                 (* 1000 mg) " ms, ratio " (/ mg mf)))))

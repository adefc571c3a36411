;; Shared by the MPI test scripts: every rank can build every rank's
;; input, so the one-process result is computed on each rank and compared.

(define me (mpi-rank))
(define ranks (mpi-size))

(define (fail . parts)
  (error (apply format parts)))

(define (check-close what got want tol)
  (let* ((scale (max 1.0 (max (abs want))))
         (err (/ (max (abs (- got want))) scale)))
    (unless (<= err tol)
      (fail "{}: rank {} got {} want {} (relative error {:.3e})" what me got want err))))

(define (ok what)
  (println "ok" what))

;; The input of rank q: a 3x4 block that differs from rank to rank.
(define (block q)
  (sin (+ (* 0.7 (reshape (linspace 0.0 11.0 12) '(3 4))) (* 1.3 q))))

;; Every rank's block stacked along a new axis 0.
(define stacked (stack (map block (range 0 ranks))))
(define x (block me))

;; Row q of a stacked tensor.
(define (row t q) (reshape (slice t q (+ q 1)) (cdr (shape t))))

;; The global objective of a per-rank function (SPMD: the sum over ranks),
;; with this rank's input perturbed only when it is `owner`.
(define (global f owner dx)
  (allreduce (f (if (= me owner) (+ x dx) x))))

;; Whether `text` contains `part`.
(define (mentions? text part) (> (length (string-split text part)) 1))

;; Central differences of the global objective at a few elements of each
;; rank's block, against the gradient each rank computed.
(define (check-finite-differences what f gradient)
  (dolist (q (range 0 ranks))
    (dolist (k '(0 5 11))
      (let* ((e (reshape (one-hot (tensor (list k)) 12) (list 3 4)))
             (h 1e-6)
             (fd (/ (- (global f q (* h e)) (global f q (* (- h) e))) (* 2 h)))
             (mine (if (= me q) (sum (* gradient e)) 0.0))
             (claimed (allreduce mine)))
        (unless (<= (abs (- fd claimed)) (* 1e-6 (max 1.0 (abs fd))))
          (fail "{}: d/dx[{}] of rank {}: gradient {} finite differences {}" what k q claimed fd))))))

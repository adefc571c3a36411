;; W4's heat equation split across the ranks of an MPI job: each rank holds
;; n cells of a periodic rod of N = n * ranks cells, trades one cell with
;; each neighbour every step (halo-exchange inside scan, reversed under
;; revolve), and differentiates sum(u_T^2) with respect to its part of u_0
;; and the diffusion number alpha. Build with the feature mpi, then
;;
;;   mpirun -np P epsilon run bench/distributed/heat.lisp MODE [n T]
;;
;; MODE check: the gradient gathered from all ranks against the gradient
;; of the one-process program (W4's, with roll) on rank 0; prints the
;; largest relative difference. MODE time: three timed gradient calls.
;; Both print the bytes this rank sent per time step. n defaults to 64
;; cells per rank, T to 200 steps.

(define mode (if (null? *args*) "check" (car *args*)))
(define n (if (> (length *args*) 1) (string->number (second *args*)) 64))
(define T (if (> (length *args*) 2) (string->number (nth *args* 2)) 200))
(define ranks (mpi-size))
(define me (mpi-rank))
(define N (* n ranks))
(define alpha 0.25)
(define u0-global (sin (* 3.0 (linspace 0.0 1.0 N))))
(define u0 (slice u0-global (* me n) (* (+ me 1) n)))

;; The decomposed step: the neighbours' boundary cells come by halo
;; exchange where the one-process step rolls.
(define (local-step a)
  (lambda (u i)
    (let ((p (halo-exchange u 1 :periodic #t)))
      (+ u (* a (- (+ (slice p 0 n) (slice p 2 (+ n 2))) (* 2.0 u)))))))

;; Each rank returns its part of the objective: gradients are of the sum
;; over ranks (SPMD), so the parts of u_0's gradient are exact and alpha's
;; is this rank's share.
(define (local-loss u0 a)
  (let ((u (scan (local-step a) u0 T :checkpoint 'revolve :snapshots snapshots)))
    (sum (* u u))))

(define snapshots 20)
(define local-grad (grad local-loss :wrt '(0 1)))

(define (distributed-gradient)
  (let ((g (local-grad u0 alpha)))
    (list (reshape (allgather (first g)) (list N))
          (allreduce (second g)))))

(define (one-process-gradient)
  (let ((step (lambda (u i) (+ u (* alpha (- (+ (roll u 1) (roll u -1)) (* 2.0 u)))))))
    ((grad (lambda (u0 a)
             (let ((u (scan (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2.0 u)))))
                            u0 T :checkpoint 'revolve :snapshots 20)))
               (sum (* u u))))
           :wrt '(0 1))
     u0-global alpha)))

(define (relative a b) (/ (max (abs (- a b))) (max (abs b))))

(define before (lookup (mpi-traffic) 'bytes))
(define g (distributed-gradient))
(define sent (- (lookup (mpi-traffic) 'bytes) before))
;; Collectives of the gathering itself: allgather of n numbers and an
;; allreduce of one (nothing is sent in a job of one rank).
(define gather-bytes (if (= ranks 1) 0 (* 8 (+ n 1))))

;; The cost model's count: the value's forward sweep (T exchanges), the
;; gradient's forward sweep storing states (T - 1, plus revolve's R
;; recomputed steps), and two per reversed step (the halo of the restored
;; state, for alpha's partial, and the return of the halo's cotangent);
;; each exchange sends a slab of one cell (8 bytes) to each neighbour.
(define (choose a b) (if (= b 0) 1 (/ (* (choose a (- b 1)) (- a (- b 1))) b)))
(define (revolve-recomputations steps s)
  (let loop ((t 0))
    (if (>= (choose (+ s t) t) steps)
        (- (* t steps) (choose (+ s t) (- t 1)) (- steps 1))
        (loop (+ t 1)))))
(define exchanges (+ (* 4 T) -1 (revolve-recomputations T snapshots)))
(define model-bytes (if (= ranks 1) 0 (* exchanges 2 8)))
(println (format "ranks {} cells {} (per rank {}) steps {}" ranks N n T))
(println (format "halo bytes sent per step by rank 0: measured {} model {}"
                 (/ (- sent gather-bytes) T 1.0) (/ model-bytes T 1.0)))
(cond ((equal? mode "check")
       (let ((one (one-process-gradient)))
         (println (format "relative difference: u0 {:.3e} alpha {:.3e}"
                          (relative (first g) (first one))
                          (abs (/ (- (second g) (second one)) (second one)))))
         (println (format "gradient alpha {:.12e} sum u0 {:.12e}" (second g) (sum (first g))))))
      (else
       (dotimes (k 3)
         (let ((start (clock)))
           (local-grad u0 alpha)
           (println (format "seconds {:.4}" (- (clock) start)))))))

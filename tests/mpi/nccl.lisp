;; allreduce of GPU memory (run with --backend cuda on a build with the
;; feature nccl, one GPU per rank): values and gradients against the
;; one-process result; prints how many allreduces went through NCCL.
(load "common.lisp")

(define big (+ (reshape (linspace 0.0 1.0 4096) '(64 64)) me))
(define all (stack (map (lambda (q) (+ (reshape (linspace 0.0 1.0 4096) '(64 64)) q))
                        (range 0 ranks))))
(define reduce-squares (jit (lambda (t) (allreduce (* t t)))))
(check-close "nccl sum" (reduce-squares big) (sum (* all all) :axis 0) 1e-12)
(check-close "nccl mean" ((jit (lambda (t) (allreduce t :op 'mean))) big) (mean all :axis 0) 1e-12)
(check-close "nccl max" ((jit (lambda (t) (allreduce t :op 'max))) big) (max all :axis 0) 0.0)
(define wts (cos big))
(define (f t) (sum (* wts (sin (allreduce (* t t))))))
(define ws (stack (map (lambda (q) (cos (+ (reshape (linspace 0.0 1.0 4096) '(64 64)) q)))
                       (range 0 ranks))))
(define (f-all ts) (sum (* ws (sin (sum (* ts ts) :axis 0)))))
(check-close "nccl gradient" ((grad f) big) (row ((grad f-all) all) me) 1e-10)
(ok "nccl")
(println "nccl allreduces" (lookup (mpi-traffic) 'nccl))

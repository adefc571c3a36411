;; allreduce and allgather: values against the one-process result, and
;; their derivatives (reverse, forward, under jit, in a scan, under vmap)
;; against the one-process gradient and central differences.
(load "common.lisp")

;; ---- values ----
(check-close "allreduce sum" (allreduce x) (sum stacked :axis 0) 1e-14)
(check-close "allreduce default op" (allreduce x :op 'sum) (sum stacked :axis 0) 1e-14)
(check-close "allreduce mean" (allreduce x :op 'mean) (mean stacked :axis 0) 1e-14)
(check-close "allreduce max" (allreduce x :op 'max) (max stacked :axis 0) 0.0)
(check-close "allreduce min" (allreduce x :op "min") (min stacked :axis 0) 0.0)
(check-close "allreduce number" (allreduce (+ me 1.0)) (/ (* ranks (+ ranks 1)) 2.0) 0.0)
(check-close "allgather" (allgather x) stacked 0.0)
(check-close "allgather axis 1" (allgather x :axis 1) (transpose stacked '(1 0 2)) 0.0)
(check-close "allgather axis 2" (allgather x :axis 2) (transpose stacked '(1 2 0)) 0.0)
(unless (equal? (shape (allgather x :axis -1)) (list 3 4 ranks))
  (fail "allgather :axis -1 gave shape {}" (shape (allgather x :axis -1))))
(ok "values")

;; ---- gradients: the sum over ranks of each rank's value ----
(define w (cos (+ x 0.5)))                      ; differs from rank to rank
(define v (reshape (linspace -1.0 1.0 (* ranks 12)) (list ranks 3 4)))
(define (f x)
  (+ (sum (* w (sin (allreduce (* x x)))))
     (sum (* v (allgather (* x x x))))
     (sum (* w (allreduce (exp x) :op 'max)))
     (* 0.5 (sum (* w (allreduce (tanh x) :op 'mean))))))

;; One process: the same objective over the stacked inputs.
(define ws (stack (map (lambda (q) (cos (+ (block q) 0.5))) (range 0 ranks))))
(define (f-all xs)
  (let ((s (sum (* xs xs) :axis 0))
        (m (max (exp xs) :axis 0))
        (a (mean (tanh xs) :axis 0)))
    (+ (sum (* ws (sin s)))
       (* ranks (sum (* v (* xs xs xs))))
       (sum (* ws m))
       (* 0.5 (sum (* ws a))))))

(define g ((grad f) x))
(define g-all ((grad f-all) stacked))
(check-close "gradient against one process" g (row g-all me) 1e-12)
(check-close "gradient under jit" ((jit (grad f)) x) g 1e-12)
(check-finite-differences "gradient" f g)
(ok "reverse")

;; Forward mode: the tangent of the sum over ranks is the sum of tangents.
(define dx (cos (* 3.0 x)))
(define tangent (second (jvp f (list x) (list dx))))
(check-close "forward mode" (allreduce tangent) (allreduce (sum (* g dx))) 1e-12)
(ok "forward")

;; In a scan: an allreduce every step, reversed under revolve.
(define (looped x)
  (let ((r (scan (lambda (c i) (* 0.9 (+ c (sin (allreduce (* c x))))))
                 x 12 :checkpoint 'revolve :snapshots 3)))
    (sum (* w r))))
(define g-scan ((grad looped) x))
(check-finite-differences "scan" looped g-scan)
(define (looped-all xs)
  (let ((r (scan (lambda (c i)
                   (* 0.9 (+ c (sin (expand-dims (sum (* c xs) :axis 0) 0)))))
                 xs 12 :checkpoint 'store-all)))
    (sum (* ws r))))
(check-close "scan against one process" g-scan (row ((grad looped-all) stacked) me) 1e-12)
(ok "scan")

;; vmap: a batch of tensors reduced over ranks element by element.
(define batch (stack (list x (* 2.0 x) (- x))))
(check-close "vmap allreduce" ((vmap (lambda (b) (allreduce b))) batch)
             (stack (list (allreduce x) (allreduce (* 2.0 x)) (allreduce (- x)))) 1e-14)
(check-close "vmap allgather" ((vmap (lambda (b) (allgather b))) batch)
             (stack (list (allgather x) (allgather (* 2.0 x)) (allgather (- x)))) 0.0)
(ok "vmap")

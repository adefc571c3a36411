;; halo-exchange: values against slices of the one-process padded domain
;; (zeros at the ends, or wrapped around), and derivatives through it.
(load "common.lisp")

;; The whole domain: every rank's block side by side along `axis`.
(define (domain axis) (concat (map block (range 0 ranks)) :axis axis))

;; The one-process halo of this rank's block: its window of the domain
;; extended by w cells on each side (zeros, or the other end's cells).
(define (expected axis w periodic)
  (let* ((d (domain axis))
         (len (nth (shape d) axis))
         (n (nth (shape x) axis))
         (padded (if periodic
                     (concat (list (slice d (- len w) len :axis axis) d (slice d 0 w :axis axis))
                                  :axis axis)
                     (concat (list (* 0.0 (slice d 0 w :axis axis)) d
                                        (* 0.0 (slice d 0 w :axis axis)))
                                  :axis axis))))
    (slice padded (* me n) (+ (* me n) n (* 2 w)) :axis axis)))

(dolist (case (list '(0 1 #f) '(0 1 #t) '(1 1 #f) '(1 2 #t) '(1 3 #f) '(0 3 #t) '(1 0 #t)))
  (let ((axis (first case)) (w (second case)) (periodic (nth case 2)))
    (check-close (format "halo axis {} width {} periodic {}" axis w periodic)
                 (halo-exchange x w :axis axis :periodic periodic)
                 (expected axis w periodic) 0.0)))
(check-close "halo axis -1" (halo-exchange x 1 :axis -1) (expected 1 1 #f) 0.0)
(ok "values")

;; Gradients: a stencil over the exchanged block, weighted differently on
;; every rank, against central differences of the sum over ranks.
(define wts (cos (+ (block me) 0.25)))
(define (stencil x)
  (let* ((p (halo-exchange x 2 :axis 1 :periodic #t))
         (q (halo-exchange (* x x) 1 :axis 1)))
    (+ (sum (* wts (sin (- (slice p 0 4 :axis 1) (* 2.0 (slice p 3 7 :axis 1))))))
       (sum (* wts (slice q 2 6 :axis 1) (slice q 0 4 :axis 1))))))
(define g ((grad stencil) x))
(check-finite-differences "halo gradient" stencil g)
(check-close "halo gradient under jit" ((jit (grad stencil)) x) g 1e-12)
(define dx (sin (* 2.0 x)))
(check-close "halo forward mode"
             (allreduce (second (jvp stencil (list x) (list dx))))
             (allreduce (sum (* g dx))) 1e-12)
(ok "gradients")

;; A loop: a periodic diffusion step per iteration, reversed under revolve
;; and under store-all (the same gradient), checked by differences.
(define (diffuse strategy)
  (lambda (x)
    (let ((u (scan (lambda (u i)
                     (let ((p (halo-exchange u 1 :axis 1 :periodic #t)))
                       (+ u (* 0.2 (- (+ (slice p 0 4 :axis 1) (slice p 2 6 :axis 1)) (* 2.0 u))))))
                   x 30 :checkpoint strategy :snapshots 4)))
      (sum (* wts u u)))))
(define g-revolve ((grad (diffuse 'revolve)) x))
(check-close "scan revolve against store-all" g-revolve ((grad (diffuse 'store-all)) x) 1e-12)
(check-finite-differences "scan gradient" (diffuse 'revolve) g-revolve)
(ok "scan")

;; vmap: each example's block exchanged with the same example's neighbours.
(define batch (stack (list x (* 3.0 x))))
(check-close "vmap halo" ((vmap (lambda (b) (halo-exchange b 1 :axis 1 :periodic #t))) batch)
             (stack (list (halo-exchange x 1 :axis 1 :periodic #t)
                          (halo-exchange (* 3.0 x) 1 :axis 1 :periodic #t))) 0.0)
(ok "vmap")

;; Bad input: a halo wider than the block.
(let ((message (try (halo-exchange x 5 :axis 1) (catch (e) e))))
  (unless (mentions? message "needs at least 5 cells")
    (fail "wide halo: {}" message)))
(ok "errors")

;; Random cases (shapes, axes, widths, ends drawn alike on every rank, the
;; data differently): the exchange and its reverse are adjoint,
;; sum over ranks of <H x, y> = sum over ranks of <x, H^T y>, with H^T y
;; the gradient of <H x, y>; and so are allgather and its reverse.
(define (draw-int lo hi) (+ lo (int (floor (* (- hi lo) (item (rand 1)))))))
(dotimes (case 40)
  (seed! (+ 1000 case))
  (let* ((rank-count (draw-int 1 4))
         (dims (map (lambda (k) (draw-int 1 5)) (range 0 rank-count)))
         (axis (draw-int 0 rank-count))
         (w (draw-int 0 (+ 1 (nth dims axis))))
         (periodic (< (item (rand 1)) 0.5)))
    (seed! (+ 5000 (* 10 case) me))
    (let* ((x (randn dims))
           (hx (halo-exchange x w :axis axis :periodic periodic))
           (y (randn (shape hx)))
           (hty ((grad (lambda (x) (sum (* (halo-exchange x w :axis axis :periodic periodic) y)))) x))
           (left (allreduce (sum (* hx y))))
           (right (allreduce (sum (* x hty)))))
      (unless (<= (abs (- left right)) (* 1e-12 (max 1.0 (abs left))))
        (fail "adjoint, case {} dims {} axis {} width {} periodic {}: {} vs {}"
              case dims axis w periodic left right))
      (let* ((gx (allgather x :axis axis))
             (z (randn (shape gx)))
             (gtz ((grad (lambda (x) (sum (* (allgather x :axis axis) z)))) x)))
        (unless (<= (abs (- (allreduce (sum (* gx z))) (allreduce (sum (* x gtz)))))
                    (* 1e-12 (max 1.0 (abs (allreduce (sum (* gx z)))))))
          (fail "allgather adjoint, case {}" case))))))
(ok "adjoint pairs")

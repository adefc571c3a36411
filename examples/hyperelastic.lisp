;;; hyperelastic.lisp - a compressible Neo-Hookean material, differentiated
;;; symbolically: the stress is the gradient of the strain energy and the
;;; tangent (the elasticity tensor) is its Hessian. Both are checked against
;;; central finite differences, and the stress against numeric reverse mode.
;;;
;;;   epsilon run examples/hyperelastic.lisp
;;;
;;; W(F) = mu/2 (I1 - 3) - mu log J + lam/2 (log J)^2, with I1 = tr(F^T F)
;;; and J = det F, for the deformation gradient F (entries f11 ... f33, row
;;; by row). The first Piola-Kirchhoff stress is P = dW/dF and the tangent
;;; A = d^2 W / dF dF, a symmetric 9 x 9 matrix.

(define F-vars '(f11 f12 f13 f21 f22 f23 f31 f32 f33))
(define I1 (cons '+ (map (lambda (f) (list '* f f)) F-vars)))
(define J '(+ (* f11 (- (* f22 f33) (* f23 f32)))
              (neg (* f12 (- (* f21 f33) (* f23 f31))))
              (* f13 (- (* f21 f32) (* f22 f31)))))
(define W `(+ (* (/ mu 2) (- ,I1 3))
              (neg (* mu (log ,J)))
              (* (/ lam 2) (pow (log ,J) 2))))

(println "== symbolic stress and tangent ==")
(define P (grad W F-vars))
(define A (hessian W F-vars))
(println "P11 = dW/df11 =" (first P))
(println (format "the stress takes {} nodes as a DAG (all nine entries), the tangent {} (all 81)"
                 (expr-size P) (expr-size A)))

;; Compiled numeric functions of the nine entries of F (a list) and the
;; Lamé parameters.
(define params '(mu lam))
(define W-fn (lambdify (append F-vars params) W))
(define P-fn (lambdify (append F-vars params) P))
(define A-fn (lambdify (append F-vars params) (apply append A)))
(define J-fn (lambdify F-vars J))
(define mu 1.0)
(define lam 2.0)
(define (energy F) (apply W-fn (append F (list mu lam))))
(define (stress F) (apply P-fn (append F (list mu lam))))
(define (tangent F) (apply A-fn (append F (list mu lam))))

;; Central differences: entry j of F moved by +-h.
(define h 1e-6)
(define (nudge F j dh) (map (lambda (f k) (if (= k j) (+ f dh) f)) F (range 9)))
(define (fd-stress F)
  (map (lambda (j) (/ (- (energy (nudge F j h)) (energy (nudge F j (- h)))) (* 2 h))) (range 9)))
(define (fd-tangent F)
  (apply append
         (map (lambda (j)
                (map (lambda (a b) (/ (- a b) (* 2 h)))
                     (stress (nudge F j h)) (stress (nudge F j (- h)))))
              (range 9))))
(define (max-abs xs) (reduce max 0.0 (map abs xs)))
(define (relative-error xs ref) (/ (max-abs (map - xs ref)) (max 1.0 (max-abs ref))))

;; The same stress from numeric reverse mode on a Lisp function of a 3 x 3 tensor.
(define (energy-of-tensor F)
  (let* ((f (lambda (i j) (index F i j)))
         (det (+ (* (f 0 0) (- (* (f 1 1) (f 2 2)) (* (f 1 2) (f 2 1))))
                 (neg (* (f 0 1) (- (* (f 1 0) (f 2 2)) (* (f 1 2) (f 2 0)))))
                 (* (f 0 2) (- (* (f 1 0) (f 2 1)) (* (f 1 1) (f 2 0)))))))
    (+ (* (/ mu 2) (- (sum (* F F)) 3)) (neg (* mu (log det))) (* (/ lam 2) (pow (log det) 2)))))
(define numeric-stress (grad energy-of-tensor))

(println "\n== checks at three deformations (mu = 1, lam = 2) ==")
(define deformations
  (list (list "stretch and shear" '(1.1 0.1 0.0 0.05 0.95 0.02 0.0 0.03 1.05))
        (list "compression" '(0.8 0.0 0.0 0.0 0.9 0.0 0.0 0.0 0.85))
        (list "large shear" '(1.0 0.6 0.0 0.0 1.0 0.0 0.1 0.0 1.2))))
(define worst 0.0)
(dolist (case deformations)
  (let* ((F (second case))
         (p (stress F))
         (stress-error (relative-error p (fd-stress F)))
         (tangent-error (relative-error (tangent F) (fd-tangent F)))
         (numeric-error (relative-error p (to-list (flatten (numeric-stress (reshape (tensor F) '(3 3))))))))
    (set! worst (max worst stress-error tangent-error numeric-error))
    (println (format "{:<18} J = {:.4}  stress vs finite differences {:.1e}, vs reverse mode {:.1e}; tangent vs finite differences {:.1e}"
                     (first case) (apply J-fn F) stress-error numeric-error tangent-error))))
(println (format "largest relative error: {:.1e}" worst))

;; At F = I the material is unstressed and its tangent is the tensor of
;; linear elasticity, lam d_ij d_kl + mu (d_ik d_jl + d_il d_jk).
(define identity-F '(1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0))
(define (delta a b) (if (= a b) 1.0 0.0))
(define linear-elastic
  (apply append
         (map (lambda (ij)
                (map (lambda (kl)
                       (let ((i (quotient ij 3)) (j (mod ij 3)) (k (quotient kl 3)) (l (mod kl 3)))
                         (+ (* lam (delta i j) (delta k l))
                            (* mu (+ (* (delta i k) (delta j l)) (* (delta i l) (delta j k)))))))
                     (range 9)))
              (range 9))))
(println "\n== the reference configuration ==")
(println (format "at F = I: largest |P| = {:.1e}; tangent minus linear elasticity: {:.1e}"
                 (max-abs (stress identity-F))
                 (max-abs (map - (tangent identity-F) linear-elastic))))

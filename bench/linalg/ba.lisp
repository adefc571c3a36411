;; BA: bundle-adjustment residuals (issue 16), ADBench's camera model
;; (Rodrigues rotation with cross products, radial distortion); cameras and
;; points picked per observation with `gather`. Measured: the residuals, the
;; per-observation Jacobian blocks d r_i / d (camera_i, point_i) (2 x 14
;; each, one forward pass per column: the Jacobian of the residuals with
;; respect to a shift added to every picked row), and the gradient of half
;; the squared residuals with respect to all cameras and points (through
;; gather's reverse, a scatter-add). Data as in
;; bench/reference/linalg_workloads.py. With `smoke` among the script's
;; arguments: 4 cameras, 20 points, 60 observations (see time.lisp).

(define n-cams (if (member "smoke" *args*) 4 50))
(define n-points (if (member "smoke" *args*) 20 10000))
(define n-obs (if (member "smoke" *args*) 60 50000))

(define c (reshape (arange n-cams) (list n-cams 1)))
(define cams
  (concat (list (* 0.1 (sin (+ c (arange 3))))
                (cos (+ (* 0.5 c) (arange 3)))
                (+ 500.0 (* 10.0 (sin c)))
                (* 0.1 (cos (+ c (arange 2))))
                (* 1e-3 (sin (+ (* 2 c) (arange 2)))))
          :axis 1))
(define p (reshape (arange n-points) (list n-points 1)))
(define points (+ (sin (+ (* 0.01 p) (arange 3))) [0.0 0.0 6.0]))
(define o (arange n-obs))
(define cam-idx (mod (* o 7) n-cams))
(define pt-idx (mod (* o 13) n-points))
(define features (* 0.5 (stack (list (sin (* 0.3 o)) (cos (* 0.7 o))) :axis 1)))
(define weights (reshape (+ 1.0 (* 0.1 (sin o))) (list n-obs 1)))

(define (columns m start end) (slice m start end :axis 1))

(define (rodrigues-rotate rot x)
  (let* ((theta (sqrt (sum (* rot rot) :axis 1 :keepdims #t)))
         (cos-t (cos theta))
         (sin-t (sin theta))
         (w (/ rot theta))
         (tmp (* (sum (* w x) :axis 1 :keepdims #t) (- 1.0 cos-t))))
    (+ (* x cos-t) (* (cross w x) sin-t) (* w tmp))))

(define (residuals picked-cams picked-points)
  (let* ((rotated (rodrigues-rotate (columns picked-cams 0 3)
                                    (- picked-points (columns picked-cams 3 6))))
         (projected (/ (columns rotated 0 2) (columns rotated 2 3)))
         (rsq (sum (* projected projected) :axis 1 :keepdims #t))
         (distortion (+ 1.0 (* (columns picked-cams 9 10) rsq)
                        (* (columns picked-cams 10 11) rsq rsq)))
         (predicted (+ (* projected distortion (columns picked-cams 6 7))
                       (columns picked-cams 7 9))))
    (* weights (- predicted features))))

(define (ba-picked cams points)
  (residuals (gather cams cam-idx) (gather points pt-idx)))

;; The Jacobian blocks: residuals of the picked rows shifted by delta, one
;; forward direction per column of a block.
(define delta0 (zeros (list 14)))
(define (ba-jacobian cams points)
  (let ((picked-cams (gather cams cam-idx))
        (picked-points (gather points pt-idx)))
    ((jacobian (lambda (delta)
                 (residuals (+ picked-cams (slice delta 0 11))
                            (+ picked-points (slice delta 11 14)))))
     delta0)))

(define (ba-loss cams points)
  (let ((r (ba-picked cams points))) (* 0.5 (sum (* r r)))))

(define ba-f (jit ba-picked))
(define ba-grad (grad ba-loss :wrt '(0 1)))

;; Issue 50's workloads: the FFT of 2^20 complex points, the rfft of 2^20
;; real points, a complex 512 x 512 matrix product, and the gradient of a
;; variational energy <psi|H|psi> / <psi|psi> with psi of 2^10 complex
;; amplitudes and a dense Hermitian H. Same sizes and data as
;; bench/reference/complex_workloads.py. Prints checksums and the median
;; seconds of `rounds` calls after the first.
;;
;;   epsilon run bench/complex/workloads.lisp 5
;;   JAX_PLATFORMS=cpu python3 bench/reference/complex_workloads.py 5
;;
;; With `smoke` after the rounds (epsilon run bench/complex/workloads.lisp
;; 1 smoke), the sizes shrink and the results are checked: the transforms
;; against their definition, the product against its parts, the gradient
;; against central differences.
(define rounds (if (null? *args*) 5 (string->number (first *args*))))
(define smoke? (member "smoke" *args*))
(define points (if smoke? 64 1048576))
(define side (if smoke? 8 512))
(define dimension (if smoke? 16 1024))
(define (wave n a b) (sin (+ (* a (arange (* 1.0 n))) b)))
(define signal (complex (wave points 0.0137 0.1) (wave points 0.0071 0.7)))
(define real-signal (wave points 0.0093 0.3))
(define (matrix n a b) (reshape (wave (* n n) a b) (list n n)))
(define a (complex (matrix side 0.00031 0.2) (matrix side 0.00057 0.9)))
(define b (complex (matrix side 0.00043 0.4) (matrix side 0.00029 1.1)))
(define hr (matrix dimension 0.00011 0.5))
(define hi (matrix dimension 0.00023 0.8))
;; H = (K + K^H) / 2 with K = hr + i hi: Hermitian.
(define h (complex (* 0.5 (+ hr (transpose hr))) (* 0.5 (- hi (transpose hi)))))
(define psi (complex (wave dimension 0.013 0.2) (wave dimension 0.029 0.6)))
(define (energy psi)
  (/ (real (vdot psi (matmul h psi))) (real (vdot psi psi))))
(define energy-grad (jit (grad energy)))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(define (checksum z) (if (complex? z) (+ (sum (real z)) (* 0.5 (sum (imag z)))) (sum z)))
(define (timed name f)
  (let ((out (f)))
    (println name " checksum " (checksum out)
             " seconds " (median (map (lambda (k) (let ((start (clock))) (f) (- (clock) start)))
                                      (range rounds))))))
(timed "fft" (lambda () (fft signal)))
(timed "rfft" (lambda () (rfft real-signal)))
(timed "matmul" (lambda () (matmul a b)))
(timed "energy-grad" (lambda () (energy-grad psi)))
(when smoke?
  (load "../smoke.lisp")
  ;; The DFT's definition: y_k = sum_j x_j e^(-2 pi i jk/n).
  (define (dft x)
    (let* ((n (size (real x)))
           (k (reshape (arange (* 1.0 n)) (list n 1)))
           (phase (* (/ (* -2 pi) n) (* k (arange (* 1.0 n))))))
      (matmul (complex (cos phase) (sin phase)) x)))
  (define (difference z w) (/ (sum (abs (- z w))) (sum (abs w))))
  (smoke-check "fft against the DFT" (difference (fft signal) (dft signal)) 1e-12)
  (smoke-check "rfft against the DFT's first half"
               (difference (rfft real-signal) (slice (dft (complex real-signal 0.0)) 0 (+ 1 (quotient points 2)))) 1e-12)
  (smoke-check "matmul against its parts"
               (difference (matmul a b)
                           (complex (- (matmul (real a) (real b)) (matmul (imag a) (imag b)))
                                    (+ (matmul (real a) (imag b)) (matmul (imag a) (real b))))) 1e-14)
  ;; d E / d(re psi_0) and d E / d(im psi_0) by central differences; the
  ;; gradient is their combination re - i im.
  (define step 1e-6)
  (define (energy-at dx dy)
    (energy (+ psi (* (complex dx dy) (- 1.0 (sign (arange (* 1.0 dimension))))))))
  (define dx (/ (- (energy-at step 0.0) (energy-at (- step) 0.0)) (* 2 step)))
  (define dy (/ (- (energy-at 0.0 step) (energy-at 0.0 (- step))) (* 2 step)))
  (define g (energy-grad psi))
  (smoke-check "energy gradient against central differences"
               (+ (abs (- (real (index g 0)) dx)) (abs (+ (imag (index g 0)) dy))) 1e-6))

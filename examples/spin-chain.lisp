;; The ground state of the transverse-field Ising chain
;;
;;   H = -J sum_i Z_i Z_(i+1) - h sum_i X_i     (10 sites, periodic)
;;
;; approximated by a complex variational state: a restricted Boltzmann
;; machine (Carleo and Troyer, Science 355, 2017) with complex weights,
;;
;;   psi(s) = exp(sum_i a_i s_i) prod_j 2 cosh(b_j + sum_i W_ji s_i),
;;
;; evaluated on all 2^10 spin configurations. Its energy
;; <psi|H|psi> / <psi|psi> is minimized by Adam on the real and imaginary
;; parts of a, b and W, with the gradient of that real function of
;; complex amplitudes computed through the complex arithmetic. The result
;; is compared with the lowest eigenvalue of the dense Hamiltonian
;; (eigh; H is real in this basis).
;;
;;   epsilon run examples/spin-chain.lisp
;;   epsilon run examples/spin-chain.lisp --steps 300 --field 0.5
(define sites 10)
(define coupling 1.0)
(define field (script-option "--field" 1.0))
(define hidden (script-option "--hidden" 20))
(define steps (script-option "--steps" 800))
(define count (pow 2 sites))

;; Spins s_i = +1 or -1 of every configuration: bit i of its index.
(define indices (arange (* 1.0 count)))
(define (bit i) (mod (floor (/ indices (pow 2 i))) 2))
(define spins (stack (map (lambda (i) (- 1 (* 2 (bit i)))) (range sites)) :axis 1))

;; H: the bonds on the diagonal, the field flipping one spin at a time.
(define bonds (- (* coupling (sum (* spins (roll spins -1 :axis 1)) :axis 1))))
(define (flipped i) (+ indices (* (index (transpose spins) i) (pow 2 i))))
(define identity (eye count))
(define hamiltonian
  (+ (* identity bonds)
     (* (- field) (reduce + (map (lambda (i) (gather identity (flipped i) :axis 0)) (range sites))))))

;; The variational state and its energy.
(define (amplitudes params)
  (let* ((a (complex (nth params 0) (nth params 1)))
         (b (complex (nth params 2) (nth params 3)))
         (w (complex (nth params 4) (nth params 5)))
         (theta (+ (matmul spins (transpose w)) b)))
    (* (exp (matmul spins a)) (prod (* 2 (cosh theta)) :axis 1))))
(define (energy params)
  (let ((psi (amplitudes params)))
    (/ (real (vdot psi (matmul hamiltonian psi))) (real (vdot psi psi)))))
(define energy-and-gradient (jit (value-and-grad energy)))

(seed! 7)
(define (small . shape) (* 0.01 (randn shape)))
(define initial (list (small sites) (small sites) (small hidden) (small hidden)
                      (small hidden sites) (small hidden sites)))
(define optimizer (adam :lr (exponential-decay 0.02 0.3 steps)))

(define exact (first (to-list (first (eigh hamiltonian)))))
(println (format "{} sites, J = {}, h = {}: {} configurations, {} hidden units, {} Adam steps"
                 sites coupling field count hidden steps))
(println (format "lowest eigenvalue of H (eigh): {:.10}" exact))
(println " step        energy    relative error")
(define (train params k)
  (let* ((eg (energy-and-gradient params))
         (value (first eg)))
    (when (or (= k 0) (= (remainder (+ k 1) (max 1 (quotient steps 8))) 0))
      (println (format "{:>5}  {:>12.8}  {:>14.3e}" (+ k 1) value (abs (/ (- value exact) exact)))))
    (if (= (+ k 1) steps)
        (optimizer params (second eg))
        (train (optimizer params (second eg)) (+ k 1)))))
(define params (train initial 0))
(define final (energy params))
(println (format "variational energy {:.10}, exact {:.10}, relative error {:.3e}"
                 final exact (abs (/ (- final exact) exact))))
;; The amplitudes are complex: their phases are a gauge the energy does
;; not see, but their moduli are the ground state's.
(define psi (amplitudes params))
(define probabilities (/ (square (abs psi)) (real (vdot psi psi))))
(define ground (second (eigh hamiltonian)))
(define overlap (abs (vdot (/ psi (sqrt (real (vdot psi psi)))) (index (transpose ground) 0))))
(println (format "overlap |<psi|ground>| = {:.6}; largest probability {:.4} (all spins aligned: {:.4})"
                 overlap (max probabilities) (index probabilities 0)))

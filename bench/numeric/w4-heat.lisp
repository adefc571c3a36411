;; W4: heat equation, N = 10^4 grid points, T = 10^4 explicit steps; the
;; gradient of sum(u_T^2) with respect to u_0 and alpha (docs/design.md).
;; Same data as bench/reference/heat_w4.py.
;;
;;   epsilon run bench/numeric/w4-heat.lisp STRATEGY [N T]
;;
;; STRATEGY is store-all, revolve (100 snapshots), or auto (a 10 MB budget);
;; forward times the loss alone (no gradient).
;; Prints the loss, the gradient's checksums and the time of each of three
;; gradient calls; run it under `/usr/bin/time -v` for the peak RSS.
;; With `smoke` after the sizes (epsilon run bench/numeric/w4-heat.lisp
;; revolve 50 40 smoke): the gradient is checked against central finite
;; differences (check-grad); tests/bench_scripts.rs also compares the
;; strategies' printed numbers.

(define strategy (if (null? *args*) "revolve" (car *args*)))
(define N (if (> (length *args*) 1) (string->number (second *args*)) 10000))
(define T (if (> (length *args*) 2) (string->number (nth *args* 2)) 10000))
(define alpha 0.25)
;; The workload as docs/design.md states it: u_0[i] = sin(2 pi i / N)
;; + 0.5 exp(-((i - N/3) / (N/50))^2), and the step written as there.
(define pi 3.141592653589793)
(define index (linspace 0.0 (- N 1) N))
(define u0 (+ (sin (/ (* 2 pi index) N))
              (* 0.5 (exp (- (pow (/ (- index (/ N 3)) (/ N 50)) 2))))))

(define (heat-step a)
  (lambda (u i) (+ u (* a (+ (- (roll u 1 :axis 0) (* 2 u)) (roll u -1 :axis 0))))))

(define (loss u0 a)
  (let ((u (cond ((equal? strategy "store-all")
                  (scan (heat-step a) u0 T :checkpoint 'store-all))
                 ((equal? strategy "auto")
                  (scan (heat-step a) u0 T :checkpoint 'auto :memory-budget 10000000))
                 (else (scan (heat-step a) u0 T :checkpoint 'revolve :snapshots 100)))))
    (sum (pow u 2))))

(define g (if (equal? strategy "forward")
              (lambda (u0 a) (list (loss u0 a) 0.0))
              (grad loss :wrt '(0 1))))
(define (report)
  (let ((grads (g u0 alpha)))
    (display (list 'strategy strategy 'N N 'T T 'loss (loss u0 alpha)
                   'grad-u0-sum (sum (car grads)) 'grad-alpha (second grads)))
    (newline)))
(report)
(when (and (member "smoke" *args*) (not (equal? strategy "forward")))
  (load "../smoke.lisp")
  (smoke-check "gradient against finite differences" (check-grad loss (list u0 alpha)) 1e-6))
(dotimes (k 3)
  (let ((start (clock)))
    (g u0 alpha)
    (display (list 'seconds (- (clock) start)))
    (newline)))

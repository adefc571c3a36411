;; Loop bodies run from plans against the general executor, by the size of
;; the step's values (issue 17; the limit `planned::LARGEST`): 2,000 steps
;; of a `tanh` and `roll` step on states of 16 to 4,096 numbers.
;;
;;   epsilon run bench/loops/plan-sizes.lisp                  # plans (bodies up to the limit)
;;   EPSILON_PLANS=0 epsilon run bench/loops/plan-sizes.lisp  # general executor only
;;
;; With `smoke`: 20 steps on states of 16 and 256 numbers, each scan's
;; state checked against the same steps run as a plain Lisp loop.

(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define steps (if smoke? 20 2000))
(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define (step s i) (+ (* 0.5 (tanh s)) (* 0.25 (roll s 1)) 0.01))
(define (run size n)
  (let ((x0 (* 0.001 (arange size))))
    (scan step x0 n)))
(run 10 10)
(for-each (lambda (size)
            (println size " numbers: " (* 1e6 (/ (time-of (lambda () (run size steps))) steps)) " us/step")
            (when smoke?
              (smoke-check (format "scan of {} numbers against a Lisp loop" size)
                           (relative-difference
                            (run size steps)
                            (let loop ((s (* 0.001 (arange size))) (i 0))
                              (if (= i steps) s (loop (step s i) (+ i 1)))))
                           1e-12)))
          (if smoke? (list 16 256) (list 16 256 1024 4096)))

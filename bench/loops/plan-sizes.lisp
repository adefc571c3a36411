;; Loop bodies run from plans against the general executor, by the size of
;; the step's values (issue 17; the limit `planned::LARGEST`): 2,000 steps
;; of a `tanh` and `roll` step on states of 16 to 4,096 numbers.
;;
;;   epsilon run bench/loops/plan-sizes.lisp                  # plans (bodies up to the limit)
;;   EPSILON_PLANS=0 epsilon run bench/loops/plan-sizes.lisp  # general executor only

(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define (run size n)
  (let ((x0 (* 0.001 (arange size))))
    (scan (lambda (s i) (+ (* 0.5 (tanh s)) (* 0.25 (roll s 1)) 0.01)) x0 n)))
(run 10 10)
(for-each (lambda (size)
            (println size " numbers: " (* 1e6 (/ (time-of (lambda () (run size 2000))) 2000)) " us/step"))
          (list 16 256 1024 4096))

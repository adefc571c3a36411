;; A loop body traced from a Lisp loop of many steps (3 operations each):
;; the time of the first `scan` over it, which plans the body and compiles
;; its native programs. Issue 23: a body of 66,000 operations took minutes
;; (a kernel compiled per step, one program for the whole body).
;;
;;   epsilon run bench/loops/long-body.lisp
;;   EPSILON_NATIVE=0 epsilon run bench/loops/long-body.lisp   (interpreted)
;;
;; With `smoke`: bodies of 50 and 250 steps, each scan's state checked
;; against the step function called twice as plain Lisp.

(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define (step-of k)
  (lambda (s i)
    (let loop ((x s) (j 0))
      (if (= j k) x (loop (+ (* x 0.9999) (* 0.0001 (+ j 1))) (+ j 1))))))
(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(for-each
  (lambda (k)
    (let ((step (step-of k)))
      (println k " steps traced, first scan: "
               (time-of (lambda () (scan step [0.5] 2))) " s, again: "
               (time-of (lambda () (scan step [0.5] 2))) " s")
      (when smoke?
        (smoke-check (format "scan of {} steps against plain calls" k)
                     (relative-difference (scan step [0.5] 2) (step (step [0.5] 0) 1)) 1e-12))))
  (if smoke? '(50 250) '(250 1000 4000 22000)))

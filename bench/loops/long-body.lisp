;; A loop body traced from a Lisp loop of many steps (3 operations each):
;; the time of the first `scan` over it, which plans the body and compiles
;; its native programs. Issue 23: a body of 66,000 operations took minutes
;; (a kernel compiled per step, one program for the whole body).
;;
;;   epsilon run bench/loops/long-body.lisp
;;   EPSILON_NATIVE=0 epsilon run bench/loops/long-body.lisp   (interpreted)

(define (time-of f) (let ((start (clock))) (f) (- (clock) start)))
(define (step-of k)
  (lambda (s i)
    (let loop ((x s) (j 0))
      (if (= j k) x (loop (+ (* x 0.9999) (* 0.0001 (+ j 1))) (+ j 1))))))
(for-each
  (lambda (k)
    (let ((step (step-of k)))
      (println k " steps traced, first scan: "
               (time-of (lambda () (scan step [0.5] 2))) " s, again: "
               (time-of (lambda () (scan step [0.5] 2))) " s")))
  '(250 1000 4000 22000))

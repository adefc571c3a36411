;; W5's Hessian timed from the command line (the criterion bench is
;; `cargo bench --bench numeric`): the function of w5-hessian.lisp, its
;; Hessian called as bench/timing.lisp does (median and minimum of at least
;; 200 calls), then checked against the closed form.
;;
;;   epsilon run bench/numeric/w5-time.lisp [smoke]
;;   taskset -c 1 epsilon run bench/numeric/w5-time.lisp   (one core)

(load "w5-hessian.lisp")
(load "../timing.lisp")
(define least-calls (if smoke? 1 200))
(define most-calls (if smoke? 1 400))
(time-calls "W5" "hessian" (lambda () (f-hessian x A)))
(define error-vs-closed-form (nth (w5-check) 3))
(println "W5 max_err_vs_closed_form" error-vs-closed-form)
(when smoke?
  (load "../smoke.lisp")
  (smoke-check "the Hessian against its closed form" error-vs-closed-form 1e-12))

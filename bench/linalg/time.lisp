;; Times the linear-algebra workloads of issue 16 on whichever backend the
;; command line chose, so the same file measures the CPU and the GPU:
;;
;;   epsilon run bench/linalg/time.lisp --backend cpu
;;   epsilon run bench/linalg/time.lisp --backend cuda
;;
;; Each function is called twice to warm up (tracing, kernel compilation),
;; then at least 10 times and for at least 1 s (at most 200 calls); the
;; line printed gives the median and the minimum in milliseconds, in the
;; spirit of bench/reference/linalg_workloads.py. Each call returns its
;; results on the host, so the time includes copying them back.
;;
;; With `smoke` after the options (epsilon run bench/linalg/time.lisp
;; --backend cpu smoke): the workloads at small sizes (see each file),
;; one timed call each, and checks: each gradient against central finite
;; differences (check-grad), the Jacobian blocks against the gradient they
;; make up, and each jitted function against the same not jitted.

(load "gmm.lisp")
(load "ba.lisp")
(load "gp.lisp")

(load "../timing.lisp")

(time-calls "GMM" "f" (lambda () (gmm-f params)))
(time-calls "GMM" "grad" (lambda () (gmm-grad params)))
(time-calls "BA" "f" (lambda () (ba-f cams points)))
(time-calls "BA" "jacobian" (lambda () (ba-jacobian cams points)))
(time-calls "BA" "grad" (lambda () (ba-grad cams points)))
(time-calls "GP" "f" (lambda () (gp-f theta)))
(time-calls "GP" "vgrad" (lambda () (gp-vgrad theta)))

(when smoke?
  (load "../smoke.lisp")
  (smoke-check "GMM gradient against finite differences" (check-grad gmm-objective (list params)) 1e-6)
  (smoke-check "GMM jitted against not jitted" (relative-difference (gmm-f params) (gmm-objective params)) 1e-12)
  ;; BA's gradient entries are large (focal lengths of 500): finite
  ;; differences are off by 1e-5, so the reverse sweep is checked against
  ;; forward mode along a direction, and the forward-mode Jacobian blocks
  ;; against the reverse sweep of half the squared residuals in the shift.
  (let* ((dc (cos (reshape (arange (* 1.0 (size cams))) (shape cams))))
         (dp (sin (reshape (arange (* 1.0 (size points))) (shape points))))
         (along (second (jvp ba-loss (list cams points) (list dc dp)))))
    (smoke-check "BA gradient against forward mode" (relative-difference (tree-dot (ba-grad cams points) (list dc dp)) along) 1e-12))
  (let* ((picked-cams (gather cams cam-idx))
         (picked-points (gather points pt-idx))
         (shifted (lambda (delta) (residuals (+ picked-cams (slice delta 0 11))
                                             (+ picked-points (slice delta 11 14)))))
         (r (shifted delta0))
         (reverse ((grad (lambda (delta) (let ((r (shifted delta))) (* 0.5 (sum (* r r)))))) delta0)))
    (smoke-check "BA Jacobian blocks against reverse mode"
                 (relative-difference (sum (* (ba-jacobian cams points) (reshape r (list n-obs 2 1))) :axis '(0 1))
                                      reverse)
                 1e-12))
  (smoke-check "BA jitted against not jitted"
               (relative-difference (ba-f cams points) (ba-picked cams points)) 1e-12)
  (smoke-check "GP gradient against finite differences" (check-grad gp-nll (list theta)) 1e-6)
  (smoke-check "GP value and gradient against grad"
               (relative-difference (gp-vgrad theta) (list (gp-nll theta) ((grad gp-nll) theta))) 1e-12)
  (smoke-check "GP jitted against not jitted" (relative-difference (gp-f theta) (gp-nll theta)) 1e-12))

;; W6: the gradient (default revolve schedule, and 'store-all) and the jvp
;; of 10^5 logistic steps as a scan, best of 20 calls after a first one
;; (issue 17's W6 figures in BENCHMARKS.md).
;;
;;   epsilon run bench/loops/w6-revolve.lisp
;;
;; With `smoke`: K = 1000 and best of 2, and the three derivatives checked
;; against each other and against the limit 1/r^2 (x_K is then at the
;; fixed point 1 - 1/r).

(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define calls (if smoke? 2 20))
(define K (if smoke? 1000 100000))
(define (logistic-revolve r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K))
(define g (grad logistic-revolve))
(define (logistic-stored r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K :checkpoint 'store-all))
(define gs (grad logistic-stored))
(gs 2.9)
(define (j r) (jvp logistic-revolve (list r) (list 1.0)))
(g 2.9) (j 2.9)
(define (best f n) (let loop ((k 0) (b 1e9)) (if (= k n) b (let ((s (clock))) (f 2.9) (loop (+ k 1) (min b (- (clock) s)))))))
(println "revolve grad ms " (* 1000 (best g calls)) " store-all grad ms " (* 1000 (best gs calls))
         " jvp ms " (* 1000 (best j calls)) " grad " (g 2.9) " " (gs 2.9))
(when smoke?
  (let ((limit (/ 1.0 (* 2.9 2.9))))
    (smoke-check "revolve grad against 1/r^2" (relative-difference (g 2.9) limit) 1e-9)
    (smoke-check "store-all grad against revolve" (relative-difference (gs 2.9) (g 2.9)) 1e-12)
    (smoke-check "jvp against revolve grad" (relative-difference (second (j 2.9)) (g 2.9)) 1e-12)))

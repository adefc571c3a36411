;; W6: the gradient (default revolve schedule, and 'store-all) and the jvp
;; of 10^5 logistic steps as a scan, best of 20 calls after a first one
;; (issue 17's W6 figures in BENCHMARKS.md).
;;
;;   epsilon run bench/loops/w6-revolve.lisp

(define K 100000)
(define (logistic-revolve r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K))
(define g (grad logistic-revolve))
(define (logistic-stored r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K :checkpoint 'store-all))
(define gs (grad logistic-stored))
(gs 2.9)
(define (j r) (jvp logistic-revolve (list r) (list 1.0)))
(g 2.9) (j 2.9)
(define (best f n) (let loop ((k 0) (b 1e9)) (if (= k n) b (let ((s (clock))) (f 2.9) (loop (+ k 1) (min b (- (clock) s)))))))
(println "revolve grad ms " (* 1000 (best g 20)) " store-all grad ms " (* 1000 (best gs 20))
         " jvp ms " (* 1000 (best j 20)) " grad " (g 2.9) " " (gs 2.9))

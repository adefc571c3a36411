;; Issue 49: the Laplacian of a tanh MLP (input 64, two hidden layers of
;; 256, a number out) at a batch of points, jitted and vmapped, by each
;; method; and the gradient of a PINN-style loss (the mean squared
;; Laplacian over the batch) with respect to the parameters, through the
;; collapsed Laplacian. Same sizes, parameters and points as
;; bench/reference/laplacian.py (folx's forward Laplacian and JAX's
;; vmap(trace(hessian))). Prints checksums and the median seconds of
;; `rounds` calls after the first.
;;
;;   epsilon run bench/taylor/laplacian.lisp 256 5
;;   JAX_PLATFORMS=cpu python3 bench/reference/laplacian.py 256 5
;;
;; With `smoke` after them (epsilon run bench/taylor/laplacian.lisp 4 1
;; smoke), every method is checked against the trace of the Hessian.
(define batch (if (null? *args*) 256 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 5 (string->number (second *args*))))
(define (init-layer in out k)
  (list (reshape (* (/ 1.0 (sqrt in)) (sin (* 0.37 (+ k (arange (* 1.0 in out)))))) (list in out))
        (* 0.01 (cos (* 0.11 (arange (* 1.0 out)))))))
(define params (list (init-layer 64 256 1) (init-layer 256 256 2) (init-layer 256 1 3)))
(define xs (reshape (sin (* 0.013 (arange (* 64.0 batch)))) (list batch 64)))
(define (mlp p x)
  (let* ((h1 (tanh (+ (matmul x (first (first p))) (second (first p)))))
         (h2 (tanh (+ (matmul h1 (first (second p))) (second (second p))))))
    (sum (+ (matmul h2 (first (nth p 2))) (second (nth p 2))))))
(define (laplacians method)
  (jit (vmap (laplacian (lambda (x) (mlp params x)) :method method))))
(define collapsed (laplacians 'collapsed))
(define forward (laplacians 'forward))
(define by-hessian (laplacians 'hessian))
(define (pinn-loss p)
  (mean (square ((vmap (laplacian (lambda (x) (mlp p x)))) xs))))
(define pinn-grad (jit (grad pinn-loss)))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(define (timed name f)
  (let ((out (f)))
    (println name " checksum " (if (list? out)
                                    (reduce + (map (lambda (layer) (+ (sum (first layer)) (sum (second layer)))) out))
                                    (sum out))
             " seconds " (median (map (lambda (k) (let ((start (clock))) (f) (- (clock) start)))
                                      (range rounds))))))
(timed "collapsed" (lambda () (collapsed xs)))
(timed "forward" (lambda () (forward xs)))
(timed "hessian" (lambda () (by-hessian xs)))
(timed "pinn-grad" (lambda () (pinn-grad params)))
;; The one product the collapsed Laplacian cannot avoid: each point's 64
;; first-order terms times the second layer's weights.
(define tangents (reshape (sin (* 0.37 (arange (* 64.0 batch 256)))) (list (* 64 batch) 256)))
(define product (jit (lambda (a b) (matmul a b))))
(timed "product" (lambda () (product tangents (first (second params)))))
(when (member "smoke" *args*)
  (load "../smoke.lisp")
  (let ((want (by-hessian xs)))
    (smoke-check "collapsed against the Hessian's trace" (relative-difference (collapsed xs) want) 1e-10)
    (smoke-check "forward against the Hessian's trace" (relative-difference (forward xs) want) 1e-10)))

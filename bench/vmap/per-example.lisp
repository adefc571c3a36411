;; Issue 19, item 4: per-example gradients of a multilayer perceptron
;; (tanh hidden layers, softmax cross-entropy against one-hot rows): the
;; gradient of each example's loss with respect to every parameter, for a
;; batch of `batch` examples at once, by (vmap (grad loss) :in-axes '(#f 0 0)).
;; Sizes: in-hidden-hidden-out = 64-256-256-10 (the reference script uses
;; the same). Prints a checksum and the median seconds of `rounds` calls
;; after the first.
;;
;;   epsilon run bench/vmap/per-example.lisp 128 15
;;   JAX_PLATFORMS=cpu python3 bench/reference/per_example.py 128 15
;;
;; With `smoke` after them (epsilon run bench/vmap/per-example.lisp 4 1
;; smoke): each example's gradient is checked against `grad` of that
;; example's loss alone, and one against central finite differences.
(define batch (if (null? *args*) 128 (string->number (first *args*))))
(define rounds (if (< (length *args*) 2) 15 (string->number (second *args*))))
(define sizes '(64 256 256 10))
(define (init-layer in out k)
  (list (reshape (* (/ 1.0 (sqrt in)) (sin (* 0.37 (+ k (arange (* 1.0 in out)))))) (list in out))
        (* 0.01 (cos (* 0.11 (arange (* 1.0 out)))))))
(define params (list (init-layer 64 256 1) (init-layer 256 256 2) (init-layer 256 10 3)))
(define xs (reshape (sin (* 0.013 (arange (* 64.0 batch)))) (list batch 64)))
(define ys (one-hot (mod (arange batch) 10) 10))
(define (forward p x)
  (let* ((h1 (tanh (+ (matmul x (first (first p))) (second (first p)))))
         (h2 (tanh (+ (matmul h1 (first (second p))) (second (second p))))))
    (+ (matmul h2 (first (nth p 2))) (second (nth p 2)))))
(define (loss p x y) (neg (sum (* y (log-softmax (forward p x))))))
(define per-example (vmap (grad loss) :in-axes '(#f 0 0)))
(define (checksum grads) (reduce + (map (lambda (layer) (+ (sum (first layer)) (sum (second layer)))) grads)))
(define g (per-example params xs ys))
(println "batch " batch " gradient shapes " (map (lambda (layer) (map shape layer)) g)
         " checksum " (checksum g))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(println "seconds "
         (median (map (lambda (k) (let ((start (clock))) (per-example params xs ys) (- (clock) start)))
                      (range rounds))))
(when (member "smoke" *args*)
  (load "../smoke.lisp")
  (let ((row (lambda (tree k) (tree-map (lambda (leaf) (index leaf k)) tree))))
    (for-each (lambda (k)
                (smoke-check (format "example {} against grad of its loss" k)
                             (relative-difference (row g k) ((grad loss) params (index xs k) (index ys k)))
                             1e-12))
              (range batch))
    (smoke-check "example 0 against finite differences"
                 (check-grad (lambda (p) (loss p (index xs 0) (index ys 0))) (list params)) 1e-6)))

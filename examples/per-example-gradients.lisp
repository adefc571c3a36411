;;; per-example-gradients.lisp - each example's own gradient, as one batch.
;;;
;;;   epsilon run examples/per-example-gradients.lisp [--epochs 8] [--clip 1.0]
;;;
;;; Differentially private training (DP-SGD) needs the gradient of every
;;; example separately, to bound each one's influence by clipping its norm
;;; before they are averaged. (vmap (grad loss) :in-axes '(#f 0 0)) gives
;;; them all at once: the per-example gradient program is traced once and
;;; rewritten over the batch, so the batch runs as one compiled program.
;;; The example checks that the per-example gradients average to the batch
;;; gradient, then trains a 64-32-10 perceptron on the digits with clipped
;;; per-example gradients and Gaussian noise.

(define epochs (script-option "--epochs" 8))
(define clip (script-option "--clip" 1.0))
(define noise (script-option "--noise" 0.5))

(define table (read-csv (str (source-directory) "/data/digits.csv")))
(define images (/ (slice table 0 64 :axis 1) 16.0))
(define labels (one-hot (flatten (slice table 64 65 :axis 1)) 10))
(seed! 0)
(define split (train-test-split (list images labels) :test-fraction 0.25))
(define train (first split))
(define test (second split))

;; One example's loss: x a vector of 64 pixels, y a one-hot row.
(define (loss params x y) (neg (sum (* y (log-softmax (mlp params x))))))
(define per-example (vmap (grad loss) :in-axes '(#f 0 0)))

;; The check: on 32 examples, the mean of the per-example gradients is the
;; gradient of the mean loss.
(define params (mlp-init '(64 32 10)))
(define xs (slice (first train) 0 32))
(define ys (slice (second train) 0 32))
(define (batch-loss p) (mean ((vmap loss :in-axes '(#f 0 0)) p xs ys)))
(define mean-of-each (tree-map (lambda (g) (mean g :axis 0)) (per-example params xs ys)))
(define of-the-mean ((grad batch-loss) params))
(define gap (apply max (map (lambda (a b) (max (abs (- a b)))) (tree-leaves mean-of-each) (tree-leaves of-the-mean))))
(println (format "per-example gradients of {} examples: mean differs from the batch gradient by {:.2e}" 32 gap))

;; DP-SGD: each example's gradient scaled to norm at most `clip`, summed,
;; noised, averaged.
(define (clipped grads)
  (let* ((leaves (tree-leaves grads))
         (norms (sqrt (reduce + (map (lambda (g) (sum (* g g) :axis (cdr (range (length (shape g)))))) leaves))))
         (scale (min 1.0 (/ clip (+ norms 1e-12)))))
    (tree-map (lambda (g) (* g (reshape scale (cons (size scale) (map (lambda (d) 1) (cdr (shape g))))))) grads)))
(define (private-step params xs ys lr)
  (let* ((each (clipped (per-example params xs ys)))
         (n (first (shape xs))))
    (tree-map (lambda (p g) (- p (* lr (/ (+ (sum g :axis 0) (* noise clip (randn (shape p)))) n))))
              params each)))

(define batch 64)
(define n (examples train))
(define start (clock))
(define trained
  (let loop ((epoch 1) (params params))
    (if (> epoch epochs)
        params
        (let ((next (let steps ((k 0) (p params))
                      (if (>= (+ k batch) n)
                          p
                          (steps (+ k batch)
                                 (private-step p (slice (first train) k (+ k batch))
                                               (slice (second train) k (+ k batch)) 0.5))))))
          (when (or (= epoch 1) (= epoch epochs))
            (println (format "epoch {:>2}  held-out accuracy {:.3}" epoch
                             (accuracy (mlp next (first test)) (argmax (second test) :axis 1)))))
          (loop (+ epoch 1) next)))))
(println (format "trained with clipped per-example gradients in {:.2} s" (- (clock) start)))

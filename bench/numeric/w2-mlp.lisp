;; W2: one SGD training step of an MLP 784-512-512-10, tanh, mean softmax
;; cross-entropy, batch 256, learning rate 0.01 (docs/design.md; issue 4).
;; Shapes as in bench/reference/numeric_workloads.py; the data are Epsilon's
;; own seeded randn (the numbers differ from NumPy's).

(seed! 0)
(define sizes '(784 512 512 10))
(define batch 256)
(define lr 0.01)

(define (layer fan-in fan-out)
  (list (/ (randn (list fan-in fan-out)) (sqrt fan-in)) (zeros fan-out)))

(define params
  (append (layer 784 512) (layer 512 512) (layer 512 10)))
(define x (randn (list batch 784)))
;; One-hot labels: integer labels in [0, 10) compared against (arange 10).
(define labels (floor (* 10.0 (rand (list batch 1)))))
(define y (= labels (arange 10)))

(define (loss params x y)
  (let* ((w1 (nth params 0)) (b1 (nth params 1))
         (w2 (nth params 2)) (b2 (nth params 3))
         (w3 (nth params 4)) (b3 (nth params 5))
         (h1 (tanh (+ (matmul x w1) b1)))
         (h2 (tanh (+ (matmul h1 w2) b2)))
         (logits (+ (matmul h2 w3) b3)))
    (neg (mean (sum (* y (log-softmax logits :axis 1)) :axis 1)))))

(define loss-vgrad (value-and-grad loss))

;; The step: (new-params loss). The gradient is a list shaped like params.
(define (step params x y)
  (let* ((vg (loss-vgrad params x y))
         (grads (second vg)))
    (list (map (lambda (p g) (- p (* lr g))) params grads) (first vg))))

(define loss-jit (jit loss))
;; The whole step in one tape (value-and-grad inside a jitted function
;; appends to the enclosing trace), as JAX's jit(mlp_step).
(define step-jit (jit step))

(define (w2-check)
  (let* ((s (step params x y))
         (s-jit (step-jit params x y))
         (new (first s))
         (grad-sum (/ (reduce + 0.0 (map (lambda (p q) (sum (- p q))) params new)) lr)))
    (list (loss params x y) (loss-jit params x y) (second s) (second s-jit)
          (loss-jit new x y) grad-sum)))

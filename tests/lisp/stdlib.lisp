;;; The standard library in Epsilon (stdlib/*.lisp): options, trees, nn,
;;; losses, optimizers, data helpers, fit. Gradients of the differentiable
;;; functions are checked numerically in tests/stdlib.rs.

;; ---- options and lookup ----
(define o (options 'demo '(:b 5) '((:a 1) (:b 2))))
(lookup o :a)
;=> 1
(lookup o :b)
;=> 5
(options 'demo '(:c 1) '((:a 1) (:b 2)))
;!! demo: unknown option :c; it takes :a :b
(options 'demo '(:a) '((:a 1)))
;!! demo: option :a needs a value
(lookup o :z)
;!! lookup: no entry :z among (:a :b)
(adam :learning-rate 0.1)
;!! adam: unknown option :learning-rate
(script-option "--epochs" 7)
;=> 7

;; ---- trees ----
(define tree (list [[1 2] [3 4]] 5.0 (list [6 7])))
(tree-leaves tree)
;=> ([[1.0 2.0] [3.0 4.0]] 5.0 [6.0 7.0])
(tree-flatten tree)
;=> [1.0 2.0 3.0 4.0 5.0 6.0 7.0]
(tree-unflatten tree (* 2 (tree-flatten tree)))
;=> ([[2.0 4.0] [6.0 8.0]] 10.0 ([12.0 14.0]))
(tree-map + tree tree)
;=> ([[2.0 4.0] [6.0 8.0]] 10.0 ([12.0 14.0]))
(tree-dot tree tree)
;=> 140.0
(tree-map - (list 1 "x"))
;!! tree-map: leaves must be numbers or tensors, got "x"

;; ---- nn ----
(one-hot [2 0 1] 3)
;=> [[0.0 0.0 1.0] [1.0 0.0 0.0] [0.0 1.0 0.0]]
(seed! 1)
(define net (mlp-init '(4 5 3)))
(map (lambda (layer) (map shape layer)) net)
;=> (((4 5) (5)) ((5 3) (3)))
(shape (mlp net (ones '(7 4))))
;=> (7 3)
(shape (mlp net (ones 4) :activation relu))
;=> (3)
(dense (list [[1 0] [0 2]] [10 20]) [3 4])
;=> [13.0 28.0]
(leaky-relu [-2 3] :slope 0.5)
;=> [-1.0 3.0]
(silu 0.0)
;=> 0.0
(gelu 0.0)
;=> 0.0
(mean (layer-norm [[1 2 3] [10 20 60]]) :axis -1)
;=> [0.0 0.0]
(attention [[1 0]] [[1 0] [0 1]] [[1 2] [3 4]])
;=> [[1.6604769013466862 2.6604769013466862]]
(let ((w (glorot-uniform 30 10))) (list (shape w) (<= (max (abs w)) (sqrt 0.15))))
;=> ((30 10) #t)
(shape (he-normal 3 4))
;=> (3 4)

;; ---- losses ----
(mse [1 2 3] [1 2 5])
;=> 1.3333333333333333
(huber [0 0] [0.5 3])
;=> 1.3125
(huber [0 0] [0.5 3] :delta 2)
;=> 2.0625
(softmax-cross-entropy [[0 0]] [1])
;=> 0.6931471805599453
(softmax-cross-entropy [[0 0]] [[0 1]])
;=> 0.6931471805599453
(softmax-cross-entropy [[1000 0]] [0])
;=> 0.0
(sigmoid-cross-entropy [0] [1])
;=> 0.6931471805599453
(accuracy [[1 2] [3 0] [0 1]] [1 0 0])
;=> 0.6666666666666666
(accuracy [[1 2] [3 0]] [[0 1] [1 0]])
;=> 1.0
(l2-penalty (list [1 2] 3))
;=> 14.0

;; ---- optimizers ----
(define (bowl p) (+ (sum (* (- (first p) [1 2]) (- (first p) [1 2]))) (* 3 (pow (- (second p) 4) 2))))
(define (close? a b) (< (tree-norm (tree-map - a b)) 1e-6))
(close? (lookup (minimize bowl (list [0 0] 0.0)) 'x) (list [1 2] 4.0))
;=> #t
(close? (lookup (minimize bowl (list [0 0] 0.0) :method (adam :lr 0.1) :max-iter 5000 :tol 1e-9) 'x) (list [1 2] 4.0))
;=> #t
(close? (lookup (minimize bowl (list [0 0] 0.0) :method (sgd :lr 0.1) :max-iter 5000 :tol 1e-9) 'x) (list [1 2] 4.0))
;=> #t
(close? (lookup (minimize bowl (list [0 0] 0.0) :method (momentum :lr 0.05 :nesterov #t) :max-iter 5000 :tol 1e-9) 'x) (list [1 2] 4.0))
;=> #t
(lookup (minimize bowl (list [0 0] 0.0)) 'converged)
;=> #t
(lookup (minimize bowl (list [0 0] 0.0) :method (sgd :lr 0.01) :max-iter 3) 'message)
;=> "reached max-iter"
(lookup (minimize bowl (list [0 0] 0.0) :method (sgd :lr 0.01) :max-iter 3) 'iterations)
;=> 3
((sgd :lr 0.5) [1 2] [2 2])
;=> [0.0 1.0]
((adam :lr 0.1) [1 2] [5 -7])
;=> [0.9000000001999999 2.099999999857143]
((exponential-decay 1.0 0.5 10) 20)
;=> 0.25
(lookup (lbfgs (lambda (x) (* (- x 3) (- x 3))) 0.0) 'x)
;=> 3.0
(lookup (lbfgs (lambda (x) (- x)) 0.0 :max-iter 5) 'converged)
;=> #f
(lookup (lbfgs (lambda (x) (log x)) 1.0) 'message)
;=> "f reached -inf: the function is unbounded below"
(lookup (lbfgs (lambda (x) (sqrt x)) -1.0) 'message)
;=> "the function is not finite at the current point"
(minimize bowl (list [0 0] 0.0) :method 'newton)
;!! minimize: :method must be 'lbfgs or an optimizer

;; ---- data ----
(define xs (reshape (arange 12) '(6 2)))
(define ys (arange 6))
(examples (list xs ys))
;=> 6
(examples (list xs [1 2]))
;!! examples: the tensors of a dataset need the same number of rows, got (6 2)
(gather xs '(5 0 -1))
;=> [[10.0 11.0] [0.0 1.0] [10.0 11.0]]
(gather xs [1] :axis 1)
;=> [[1.0] [3.0] [5.0] [7.0] [9.0] [11.0]]
(gather xs '(6))
;!! gather: index 6 is out of range for an axis of length 6
(gather xs '(1.5))
;!! not a whole number
(sort (to-list (permutation 6)))
;=> (0.0 1.0 2.0 3.0 4.0 5.0)
(permutation -1)
;!! permutation needs a count of 0 or more
(let ((s (shuffle (list xs ys))))
  (equal? (first s) (reshape (concat (list (* 2 (second s)) (+ 1 (* 2 (second s))))) '(2 6))))
;=> #f
(let ((s (shuffle (list xs ys))))
  (equal? (first s) (transpose (stack (list (* 2 (second s)) (+ 1 (* 2 (second s))))))))
;=> #t
(map (lambda (part) (map shape part)) (train-test-split (list xs ys) :test-fraction 0.5))
;=> (((3 2) (3)) ((3 2) (3)))
(train-test-split (list xs ys) :test-fraction 2)
;!! between 0 and 1
(map (lambda (b) (shape (first b))) (batches (list xs ys) 4))
;=> ((4 2) (2 2))
(batches (list xs ys) 0)
;!! the batch size must be a positive integer
(map shape (batches xs 5))
;=> ((5 2) (1 2))
(standardize [[1 5] [3 5]])
;=> [[-1.0 0.0] [1.0 0.0]]
(standardize [[2 5]] [[1 5] [3 5]])
;=> [[0.0 0.0]]
(string? (source-directory))
;=> #t

;; ---- fit ----
(seed! 2)
(define data-x (randn '(40 3)))
(define data-y (matmul data-x [1 -2 0.5]))
(define (linear-loss w x y) (mse (matmul x w) y))
(define fitted (fit linear-loss (zeros 3) (list data-x data-y) :optimizer (adam :lr 0.1) :epochs 60 :batch-size 8))
(< (tree-norm (- (first fitted) [1 -2 0.5])) 1e-2)
;=> #t
(length (second fitted))
;=> 60
(< (last (second fitted)) (* 0.001 (first (second fitted))))
;=> #t
(fit linear-loss (zeros 3) (list data-x data-y) :epoch 3)
;!! fit: unknown option :epoch

;; ---- adam-update: one leaf's Adam step in one pass, as the formula says ----
(adam-update 1.0 5.0 0.0 0.0 1 0.1 0.9 0.999 1e-8 0)
;=> (0.9000000001999999 0.4999999999999999 0.025000000000000022)
(let* ((p [[1.0 2.0] [3.0 4.0]]) (g [[0.5 -1.0] [2.0 0.1]]) (m (* 0.1 g)) (v (* 0.01 g g))
       (u (adam-update (transpose p) (transpose g) (transpose m) (transpose v) 3 0.01 0.9 0.999 1e-8 0.01))
       (m2 (+ (* 0.9 m) (* 0.1 g))) (v2 (+ (* 0.999 v) (* 0.001 g g)))
       (p2 (- p (* 0.01 (+ (/ (/ m2 (- 1 (pow 0.9 3))) (+ (sqrt (/ v2 (- 1 (pow 0.999 3)))) 1e-8)) (* 0.01 p))))))
  (list (< (max (abs (- (first u) (transpose p2)))) 1e-15)
        (< (max (abs (- (second u) (transpose m2)))) 1e-15)
        (< (max (abs (- (nth u 2) (transpose v2)))) 1e-15)))
;=> (#t #t #t)
(adam-update [1 2] [1 2 3] [0 0] [0 0] 1 0.1 0.9 0.999 1e-8 0)
;!! need one shape
;; f32 leaves: each element is the f64 step rounded once, for large leaves
;; (updated in parallel blocks) and transposed ones alike.
(let* ((k (arange 1.0 120001.0))
       (leaf (lambda (x) (astype (transpose (reshape x '(300 400))) 'f32)))
       (p (leaf (sin k))) (g (leaf (cos k))) (m (leaf (* 0.1 (sin (* 3 k)))))
       (v (leaf (* 0.01 (cos k) (cos k))))
       (u (adam-update p g m v 3 0.01 0.9 0.999 1e-8 0.01))
       (w (adam-update (astype p 'f64) (astype g 'f64) (astype m 'f64) (astype v 'f64)
                       3 0.01 0.9 0.999 1e-8 0.01)))
  (list (map dtype u) (shape (first u))
        (map (lambda (a b) (equal? a (astype b 'f32))) u w)))
;=> ((f32 f32 f32) (400 300) (#t #t #t))
(tree-from-leaves (list [1 2] (list 3.0)) (list 10.0 [4 5]))
;=> (10.0 ([4.0 5.0]))
(tree-from-leaves (list 1.0 2.0) (list 3.0))
;!! fewer leaves
(let ((opt (adam :lr 0.1))) (opt [1.0] [1.0]) (opt (list 1.0 2.0) (list 1.0 1.0)))
;!! do not match the tree this optimizer started with

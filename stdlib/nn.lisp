;;; nn: neural-network building blocks in Epsilon.
;;; Parameters are trees (nested lists of tensors), so grad, value-and-grad,
;;; the optimizers and fit take them as they are.

;;; Initializers: each gives a fan-in x fan-out weight matrix.

(define (glorot-uniform fan-in fan-out)
  "(glorot-uniform fan-in fan-out): a fan-in x fan-out matrix drawn uniformly from ±sqrt(6 / (fan-in + fan-out)) (Glorot and Bengio), suited to tanh and sigmoid layers."
  (let ((limit (sqrt (/ 6 (+ fan-in fan-out)))))
    (* limit (- (* 2 (rand (list fan-in fan-out))) 1))))

(define (he-normal fan-in fan-out)
  "(he-normal fan-in fan-out): a fan-in x fan-out matrix of normal draws with variance 2 / fan-in (He et al.), suited to relu layers."
  (* (sqrt (/ 2 fan-in)) (randn (list fan-in fan-out))))

(define (lecun-normal fan-in fan-out)
  "(lecun-normal fan-in fan-out): a fan-in x fan-out matrix of normal draws with variance 1 / fan-in."
  (* (sqrt (/ 1 fan-in)) (randn (list fan-in fan-out))))

;;; Activations beyond the built-in relu, tanh, sigmoid and softplus.

(define (leaky-relu x . opts)
  "(leaky-relu x :slope 0.01): x where x > 0, slope * x elsewhere."
  (let ((slope (lookup (options 'leaky-relu opts '((:slope 0.01))) :slope)))
    (where (> x 0) x (* slope x))))

(define (silu x)
  "(silu x): x * sigmoid(x), also called swish."
  (* x (sigmoid x)))

(define (gelu x)
  "(gelu x): the Gaussian error linear unit in its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."
  (* 0.5 x (+ 1 (tanh (* 0.7978845608028654 (+ x (* 0.044715 x x x)))))))

;;; Layers.

(define (dense-init in out . opts)
  "(dense-init in out :init glorot-uniform): the parameters (W b) of a dense layer from in to out features: W from the initializer (a function of fan-in and fan-out), b zero."
  (let ((init (lookup (options 'dense-init opts (list (list :init glorot-uniform))) :init)))
    (list (init in out) (zeros (list out)))))

(define (dense layer x)
  "(dense layer x): x W + b for a layer (W b) made by dense-init; x is one example (a vector) or a batch (a matrix, one example a row)."
  (+ (matmul x (first layer)) (second layer)))

(define (mlp-init sizes . opts)
  "(mlp-init '(in h1 ... out) :init glorot-uniform): the parameters of a multilayer perceptron, one (W b) layer for each pair of consecutive sizes."
  (let ((init (lookup (options 'mlp-init opts (list (list :init glorot-uniform))) :init)))
    (map (lambda (in out) (dense-init in out :init init))
         (reverse (rest (reverse sizes)))
         (rest sizes))))

(define (mlp params x . opts)
  "(mlp params x :activation tanh): the perceptron made by mlp-init applied to x: every layer but the last followed by the activation, the last left linear (logits or regression outputs)."
  (let ((act (lookup (options 'mlp opts (list (list :activation tanh))) :activation)))
    (let loop ((layers params) (h x))
      (if (null? (rest layers))
          (dense (first layers) h)
          (loop (rest layers) (act (dense (first layers) h)))))))

(define (layer-norm x . opts)
  "(layer-norm x :eps 1e-5): x shifted and scaled to mean 0 and variance 1 along its last axis."
  (let* ((eps (lookup (options 'layer-norm opts '((:eps 1e-5))) :eps))
         (mu (mean x :axis -1 :keepdims #t))
         (centered (- x mu))
         (var (mean (* centered centered) :axis -1 :keepdims #t)))
    (/ centered (sqrt (+ var eps)))))

(define (attention q k v)
  "(attention q k v): scaled dot-product attention, softmax(q k^T / sqrt(d)) v, for matrices with one query, key or value a row and d the width of q."
  (let ((d (last (shape q))))
    (matmul (softmax (/ (matmul q (transpose k)) (sqrt d)) :axis -1) v)))

(define (one-hot labels k)
  "(one-hot labels k): the n x k matrix whose row i is 1 in column labels[i] and 0 elsewhere, for a vector of n class numbers 0 to k-1; a label that is not a whole number in that range is an error."
  (unless (= (rank labels) 1)
    (error "one-hot: labels must be a vector of class numbers, got shape" (shape labels)))
  ;; One short chain, as one-hot runs on every training batch: a label that
  ;; is not a whole number in range moves when rounded and clamped (NaN too,
  ;; as no comparison with NaN holds).
  ;; The message names no count: inside fit the labels are traced, and a
  ;; traced count cannot be printed as a number.
  (unless (<= (max (abs (- labels (clamp (round labels) 0 (- k 1))))) 0)
    (error (format "one-hot: the labels must be whole numbers from 0 to {}, and some are not" (- k 1))))
  (= (reshape labels (list (first (shape labels)) 1)) (arange k)))

;;; Losses: each gives the mean over the examples of a batch.

(define (mse pred target)
  "(mse pred target): the mean squared error, mean((pred - target)^2)."
  (let ((r (- pred target)))
    (mean (* r r))))

(define (huber pred target . opts)
  "(huber pred target :delta 1.0): the mean Huber loss: r^2/2 for residuals |r| <= delta, delta (|r| - delta/2) beyond, so outliers count linearly."
  (let* ((delta (lookup (options 'huber opts '((:delta 1.0))) :delta))
         (r (abs (- pred target))))
    (mean (where (<= r delta) (* 0.5 r r) (* delta (- r (* 0.5 delta)))))))

(define (class-targets targets logits)
  "(class-targets targets logits): targets as a one-hot matrix matching logits: class numbers (a vector, one per row of logits) become one-hot rows; one-hot or probability rows are kept."
  (if (< (rank targets) (rank logits))
      (one-hot targets (last (shape logits)))
      targets))

(define (softmax-cross-entropy logits targets)
  "(softmax-cross-entropy logits targets): the mean over rows of -sum(targets * log-softmax(logits)), with targets given as class numbers (a vector) or as one-hot or probability rows. Computed through log-softmax, so large logits do not overflow."
  (let ((t (class-targets targets logits)))
    (mean (sum (* t (neg (log-softmax logits :axis -1))) :axis -1))))

(define (sigmoid-cross-entropy logits targets)
  "(sigmoid-cross-entropy logits targets): the mean binary cross-entropy of probabilities sigmoid(logits) against targets in [0, 1], as softplus(x) - t x, which does not overflow."
  (mean (- (softplus logits) (* targets logits))))

(define (accuracy logits targets)
  "(accuracy logits targets): the fraction of rows whose largest logit is at the target class (targets as class numbers or one-hot rows)."
  (let ((classes (if (< (rank targets) (rank logits)) targets (argmax targets :axis -1))))
    (mean (= (argmax logits :axis -1) classes))))

(define (l2-penalty params)
  "(l2-penalty params): the sum of squares of every leaf of a parameter tree (add lambda times it to a loss for weight decay)."
  (foldl + 0.0 (map (lambda (p) (sum (* p p))) (tree-leaves params))))

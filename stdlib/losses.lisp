;;; Losses: each gives the mean over the examples of a batch.

(define (residual who pred target)
  "(residual who pred target): pred - target for a loss named who, when both have one shape or one of them is a number; other shapes are an error rather than a silent broadcast (an n x 1 column of predictions against n targets would compare every prediction with every target)."
  (unless (or (number? target) (number? pred) (equal? (shape-of pred) (shape-of target)))
    (error (format "{}: predictions of shape {} and targets of shape {} differ; reshape one of them"
                   who (shape-of pred) (shape-of target))))
  (- pred target))

(define (shape-of x)
  "(shape-of x): the shape of a tensor, () for a number."
  (if (number? x) '() (shape x)))

(define (mse pred target)
  "(mse pred target): the mean squared error, mean((pred - target)^2), for predictions and targets of one shape (either may be a number)."
  (let ((r (residual 'mse pred target)))
    (mean (* r r))))

(define (huber pred target . opts)
  "(huber pred target :delta 1.0): the mean Huber loss: r^2/2 for residuals |r| <= delta, delta (|r| - delta/2) beyond, so outliers count linearly. Predictions and targets have one shape (either may be a number)."
  (let* ((delta (lookup (options 'huber opts '((:delta 1.0))) :delta))
         (r (abs (residual 'huber pred target))))
    (mean (where (<= r delta) (* 0.5 r r) (* delta (- r (* 0.5 delta)))))))

(define (class-batch logits targets)
  "(class-batch logits targets): (list logits targets) as an n x k matrix of logits, one example a row, and n x k one-hot (or probability) rows. A single example (a vector of logits) becomes one row. Targets may be class numbers (a vector, an n x 1 column, or one number for a single example) or one-hot or probability rows; other shapes are an error."
  (let* ((single (= (rank logits) 1))
         (logits (if single (reshape logits (list 1 (first (shape logits)))) logits))
         (n (first (shape logits)))
         (k (last (shape logits)))
         (t-shape (shape-of targets))
         (classes (lambda (c) (one-hot (reshape c (list n)) k))))
    (list logits
          (cond ((and single (null? t-shape)) (classes (* targets (ones 1))))
                ((and single (equal? t-shape (list k))) (reshape targets (list 1 k)))
                ((equal? t-shape (list n)) (classes targets))
                ((and (equal? t-shape (list n 1)) (> k 1)) (classes targets))
                ((equal? t-shape (list n k)) targets)
                (else (error (format "targets of shape {} do not match logits of shape {}: give class numbers (a vector of {}) or one-hot rows ({} x {})"
                                     t-shape (shape logits) n n k)))))))

(define (softmax-cross-entropy logits targets)
  "(softmax-cross-entropy logits targets): the mean over rows of -sum(targets * log-softmax(logits)), with targets given as class numbers (a vector or a column) or as one-hot or probability rows; a vector of logits is one example. Computed through log-softmax, so large logits do not overflow."
  (let* ((batch (class-batch logits targets)))
    (mean (sum (* (second batch) (neg (log-softmax (first batch) :axis -1))) :axis -1))))

(define (sigmoid-cross-entropy logits targets)
  "(sigmoid-cross-entropy logits targets): the mean binary cross-entropy of probabilities sigmoid(logits) against targets in [0, 1], as softplus(x) - t x, which does not overflow."
  (mean (- (softplus logits) (* targets logits))))

(define (accuracy logits targets)
  "(accuracy logits targets): the fraction of rows whose largest logit is at the target class (targets as for softmax-cross-entropy: class numbers or one-hot rows)."
  (let ((batch (class-batch logits targets)))
    (mean (= (argmax (first batch) :axis -1) (argmax (second batch) :axis -1)))))

(define (l2-penalty params)
  "(l2-penalty params): the sum of squares of every leaf of a parameter tree (add lambda times it to a loss for weight decay)."
  (foldl + 0.0 (map (lambda (p) (sum (* p p))) (tree-leaves params))))

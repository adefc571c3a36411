;;; Data helpers. A dataset is a list of tensors whose first axes run over
;;; the same examples, such as (list x y).

(define (examples data)
  "(examples data): the number of examples in a dataset (a tensor, or a list of tensors sharing their first axis); an error when the lengths differ."
  (if (tensor? data)
      (first (shape data))
      (let ((counts (map (lambda (t) (first (shape t))) data)))
        (unless (all-equal? counts)
          (error "examples: the tensors of a dataset need the same number of rows, got" counts))
        (first counts))))

(define (all-equal? xs)
  "(all-equal? xs): true when every element of the list equals the first."
  (or (null? xs) (null? (filter (lambda (x) (not (= x (first xs)))) xs))))

(define (take-examples data picks)
  "(take-examples data picks): the examples at the positions picks (a list or vector of integers) of a tensor or a dataset."
  (if (tensor? data)
      (gather data picks)
      (map (lambda (t) (gather t picks)) data)))

(define (shuffle data)
  "(shuffle data): the rows of a tensor, or the examples of a dataset (list x y ...) permuted together, in random order (reproducible after seed!)."
  (take-examples data (permutation (examples data))))

(define (train-test-split data . opts)
  "(train-test-split data :test-fraction 0.2 :shuffle #t): a dataset split into (train test), with the examples shuffled first unless :shuffle is #f."
  (let* ((o (options 'train-test-split opts '((:test-fraction 0.2) (:shuffle #t))))
         (fraction (lookup o :test-fraction))
         (n (examples data))
         (order (if (lookup o :shuffle) (permutation n) (arange n)))
         (n-test (int (round (* fraction n)))))
    (unless (and (>= fraction 0) (<= fraction 1))
      (error "train-test-split: :test-fraction must be between 0 and 1, got" fraction))
    (list (take-examples data (slice order n-test ()))
          (take-examples data (slice order 0 n-test)))))

(define (batches data size . opts)
  "(batches data size :shuffle #f): the dataset cut into consecutive batches of size examples (the last may be smaller), as a list of datasets; shuffled first with :shuffle #t."
  (let* ((o (options 'batches opts '((:shuffle #f))))
         (data (if (lookup o :shuffle) (shuffle data) data))
         (n (examples data)))
    (unless (and (integer? size) (> size 0))
      (error "batches: the batch size must be a positive integer, got" size))
    (map (lambda (start)
           (let ((end (min n (+ start size))))
             (if (tensor? data)
                 (slice data start end)
                 (map (lambda (t) (slice t start end)) data))))
         (range 0 n size))))

(define (standardize x . reference)
  "(standardize x [reference]): the columns of x shifted to mean 0 and scaled to standard deviation 1, using the column statistics of reference (default x itself; pass the training data to scale test data alike). Constant columns are only shifted."
  (let* ((r (if (null? reference) x (first reference)))
         (mu (mean r :axis 0))
         (sd (sqrt (mean (pow (- r mu) 2) :axis 0))))
    (/ (- x mu) (where (> sd 1e-12) sd 1.0))))

;;; Array helpers over reshape and gather, so they differentiate, trace and
;;; batch as those do: dropping and adding axes of length 1, and a column
;;; of a matrix as a vector.

(define (squeeze t . opts)
  "(squeeze t :axis k): t without its axes of length 1, as NumPy's squeeze; with :axis, without axis k only (negative counts from the end), which must have length 1. A (3 1) column becomes a vector of 3."
  (let* ((axis (lookup (options 'squeeze opts '((:axis ()))) :axis))
         (dims (shape t))
         (r (length dims)))
    (if (null? axis)
        (reshape t (filter (lambda (d) (not (= d 1))) dims))
        (let ((k (if (< axis 0) (+ axis r) axis)))
          (cond ((or (< k 0) (>= k r))
                 (error (format "squeeze: axis {} is out of range for a tensor of shape {}" axis dims)))
                ((not (= (nth dims k) 1))
                 (error (format "squeeze: axis {} of a tensor of shape {} has length {}, not 1" axis dims (nth dims k))))
                (else (reshape t (append (take dims k) (drop dims (+ k 1))))))))))

(define (expand-dims t axis)
  "(expand-dims t axis): t with a new axis of length 1 at position axis (0 to its rank; negative counts from the end, -1 meaning after the last), as NumPy's expand_dims: a vector of 3 becomes a (1 3) row with axis 0 and a (3 1) column with axis 1 or -1."
  (let* ((dims (shape t))
         (r (length dims))
         (k (if (< axis 0) (+ axis r 1) axis)))
    (if (or (< k 0) (> k r))
        (error (format "expand-dims: axis {} is out of range for a tensor of shape {} (from {} to {})" axis dims (- (+ r 1)) r))
        (reshape t (append (take dims k) (list 1) (drop dims k))))))

(define (column m j)
  "(column m j): column j of the matrix m as a vector (NumPy's m[:, j]; negative j counts from the end). (slice m j (+ j 1) :axis 1) keeps the axis and gives an n x 1 matrix instead."
  (unless (= (rank m) 2)
    (error (format "column: expected a matrix, got a tensor of shape {}" (shape m))))
  (gather m j :axis 1))

;;; fit: the training loop.

(define (fit loss params data . opts)
  "(fit loss params data :optimizer (adam) :epochs 10 :batch-size 32 :shuffle #t :on-epoch #f :label \"fit\" :distributed #f): trains params by minimizing (loss params x y ...) over the batches of data, a dataset (list x y ...). Each epoch shuffles the examples (unless :shuffle #f), cuts them into batches, and takes one optimizer step per batch with gradients from value-and-grad. On a terminal a progress bar shows the epoch, the running loss and the rate; it stays silent when output is not a terminal. (on-epoch epoch params mean-loss) runs after each epoch (epochs count from 1). Gives (list params history), history being the mean training loss of each epoch. With :distributed #t (under mpirun, a build with the feature mpi) every rank holds the whole dataset and takes its share of each global batch; the ranks' gradients and losses, weighted by their shares, are summed by one allreduce per step, so the parameters (rank 0's at the start) stay the same on every rank and the loss curve is the one-process curve of the same batches."
  (let* ((o (options 'fit opts (list (list :optimizer #f) '(:epochs 10) '(:batch-size 32)
                                     '(:shuffle #t) '(:on-epoch #f) '(:label "fit")
                                     '(:distributed #f))))
         (opt (or (lookup o :optimizer) (adam)))
         (epochs (lookup o :epochs)) (size (lookup o :batch-size))
         (on-epoch (lookup o :on-epoch))
         (_ (unless (and (pair? data) (list? data))
              (error (format "fit: data is a dataset, a list (x y ...) of tensors with the examples along axis 0; got {} (wrap one tensor as (list x))"
                             (type-of data)))))
         (n (examples data))
         (_ (cond ((= n 0) (error "fit: the dataset has no examples"))
                  ((not (and (integer? size) (> size 0)))
                   (error "fit: :batch-size must be a positive integer, got" size))))
         (per-epoch (length (range 0 n size)))
         (distributed (lookup o :distributed))
         (vg (if distributed
                 (distributed-value-and-grad (value-and-grad loss) params)
                 (value-and-grad loss)))
         (params (if distributed (from-rank-0 params) params))
         (bar (progress (* epochs per-epoch) :label (lookup o :label)))
         (history '()))
    ;; The bar is finished however the loop ends, an error in the loss included.
    (dynamic-wind
     (lambda () #f)
     (lambda ()
       (dotimes (e epochs)
         (let ((total 0.0))
           (dolist (batch (if distributed
                              (batches (take-examples data (epoch-order n (lookup o :shuffle))) size)
                              (batches data size :shuffle (lookup o :shuffle))))
             (let* ((r (apply vg params batch))
                    (count (examples batch)))
               (set! params (opt params (second r)))
               (set! total (+ total (* count (first r))))
               (progress-inc! bar 1 :message (format "epoch {}/{} loss {:.4}" (+ e 1) epochs (first r)))))
           (set! history (cons (/ total n) history))
           (when on-epoch (on-epoch (+ e 1) params (/ total n))))))
     (lambda ()
       (progress-finish! bar :message (if (null? history) "no epochs" (format "loss {:.4}" (first history))))))
    (list params (reverse history))))

;;; Data-parallel training (fit :distributed #t).

(define (from-rank-0 tree)
  "(from-rank-0 tree): rank 0's tree (numbers and tensors) on every rank, by one allreduce."
  (let ((v (tree-flatten tree)))
    (tree-unflatten tree (allreduce (if (= (mpi-rank) 0) v (* 0.0 v))))))

(define (epoch-order n shuffle)
  "(epoch-order n shuffle): the order of the n examples for one epoch, the same on every rank: rank 0's permutation (the one a one-process fit draws), or 0..n-1."
  (if shuffle
      (let ((order (permutation n)))
        (allreduce (if (= (mpi-rank) 0) order (* 0 order))))
      (arange n)))

(define (distributed-value-and-grad vg like)
  "(distributed-value-and-grad vg like): a function like (value-and-grad loss) over a global batch, of which this rank computes its share (a contiguous run of examples); the shares' losses and gradients (trees shaped like like), each weighted by its fraction of the batch, are packed into one vector and summed by one allreduce, giving the global batch's mean loss and its gradient on every rank."
  (let ((zero (* 0.0 (tree-flatten like))))
    (lambda (params . batch)
      (let* ((total (examples batch))
             (ranks (mpi-size)) (me (mpi-rank))
             (lo (quotient (* me total) ranks))
             (hi (quotient (* (+ me 1) total) ranks))
             (weight (/ (- hi lo) (* 1.0 total)))
             (r (if (> hi lo)
                    (apply vg params (take-examples batch (range lo hi)))
                    (list 0.0 (tree-unflatten like zero))))
             (packed (concat (list (reshape (* weight (first r)) '(1))
                                   (* weight (tree-flatten (second r))))))
             (summed (allreduce packed)))
        (list (item (slice summed 0 1)) (tree-unflatten like (slice summed 1 ())))))))

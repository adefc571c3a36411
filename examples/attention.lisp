;;; attention.lisp - one self-attention block learns to look one token back.
;;;
;;;   epsilon run examples/attention.lisp [--steps 300]
;;;
;;; Each example is a sequence of 8 random vectors of width 16. The target at
;;; position i is the input at position i-1 (wrapping around): a "previous
;;; token" head, which has to attend by position. Queries and keys are made
;;; from sinusoidal position codes, values from the tokens. Parameters: the
;;; query, key, value and output projections (16 x 16 each). Trained with
;;; Adam on softmax(Q K^T / sqrt(d)) V, batched over sequences with 3-D
;;; matmuls, on a fresh batch of random sequences at every step.

(define steps (script-option "--steps" 300))
(define width 16)
(define seq-length 8)
(define batch 64)

;; Sinusoidal position codes (Vaswani et al.), one row per position.
(define positions
  (let* ((pos (reshape (arange seq-length) (list seq-length 1)))
         (dims (arange width))
         (freq (pow 10000.0 (neg (/ (* 2 (floor (/ dims 2))) width))))
         (angle (* pos freq)))
    (where (= (mod dims 2) 0) (sin angle) (cos angle))))

(define (batched-attention q k v)
  (let ((scores (/ (matmul q (transpose k)) (sqrt width))))
    (matmul (softmax scores :axis -1) v)))

(define (block params x)
  (let* ((q (matmul positions (nth params 0)))
         (k (matmul positions (nth params 1)))
         (v (matmul x (nth params 2))))
    (matmul (batched-attention q k v) (nth params 3))))

(define (previous-token x) (roll x 1 :axis 1))
(define (loss params x y) (mse (block params x) y))

(seed! 3)
(define params (map (lambda (i) (glorot-uniform width width)) (range 4)))
(define test-x (randn (list batch seq-length width)))
(define opt (adam :lr 0.01))
(define vg (value-and-grad loss))

(println (format "{} sequences of {} tokens of width {}; predicting zeros scores {:.3}"
                 batch seq-length width (mse 0.0 (previous-token test-x))))
(println " step   train loss   held-out loss")
(define first-loss #f)
(define last-loss #f)
(dotimes (step (+ steps 1))
  (let* ((x (randn (list batch seq-length width)))        ; a fresh batch each step
         (r (vg params x (previous-token x))))
    (unless first-loss (set! first-loss (first r)))
    (set! last-loss (first r))
    (when (= (mod step (max 1 (quotient steps 6))) 0)
      (println (format "{:>5}  {:>11.5}  {:>14.5}" step (first r)
                       (loss params test-x (previous-token test-x)))))
    (set! params (opt params (second r)))))
(println (format "train loss fell from {:.4} to {:.4}; held-out loss {:.4}"
                 first-loss last-loss (loss params test-x (previous-token test-x))))
(println (format "attention check-grad: {:.1e}" (check-grad loss (list params (slice test-x 0 4) (previous-token (slice test-x 0 4))))))

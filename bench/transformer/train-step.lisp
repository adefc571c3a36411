;; Issue 19, item 4: one training step of a small transformer language
;; model (examples/attention.lisp grown): 4 pre-norm layers of width 256
;; with 4 causal attention heads of 64 and a 256-1024-256 tanh-GELU
;; perceptron, learned token and position embeddings, next-token
;; cross-entropy over a vocabulary of 64; batch 32 sequences of 128
;; tokens. A step is (value-and-grad loss) and an Adam update. Prints the
;; loss of the first steps and the median seconds of `rounds` steps after
;; the first (compilation). bench/reference/transformer.py is the same
;; model in JAX.
;;
;;   epsilon run bench/transformer/train-step.lisp 5 [f64|f32]
;;
;; With `smoke` after them (epsilon run bench/transformer/train-step.lisp
;; 2 f64 smoke): 2 layers of width 16 with 2 heads, a 16-32-16
;; perceptron, vocabulary 8, batch 2 sequences of 6 tokens; the gradient
;; is checked along a direction against forward mode (jvp) and central
;; finite differences, and the value of value-and-grad against the loss.
(define rounds (if (null? *args*) 5 (string->number (first *args*))))
;; The number type of the parameters and targets (the reference makes its
;; tables in f64 and converts them the same way).
(define number-type (if (< (length *args*) 2) 'f64 (string->symbol (second *args*))))
(define smoke? (member "smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define layers (if smoke? 2 4))
(define width (if smoke? 16 256))
(define heads (if smoke? 2 4))
(define head-width (quotient width heads))
(define hidden (if smoke? 32 1024))
(define vocab (if smoke? 8 64))
(define seq (if smoke? 6 128))
(define batch (if smoke? 2 32))

;; Deterministic parameters and data (the reference makes the same).
(define (table rows cols k scale)
  (reshape (* scale (sin (* 0.7 (+ k (arange (* 1.0 rows cols)))))) (list rows cols)))
(define (layer-params l)
  (let ((s (/ 1.0 (sqrt width))))
    (list (table width width (+ (* 10 l) 1) s) (table width width (+ (* 10 l) 2) s)
          (table width width (+ (* 10 l) 3) s) (table width width (+ (* 10 l) 4) s)
          (table width hidden (+ (* 10 l) 5) s) (zeros (list hidden))
          (table hidden width (+ (* 10 l) 6) (/ 1.0 (sqrt hidden))) (zeros (list width)))))
(define params
  (astype (list (table vocab width 101 0.1) (table seq width 102 0.1)
                (map layer-params (range layers))
                (table width vocab 103 (/ 1.0 (sqrt width))))
          number-type))
(define tokens (mod (+ (* 7 (reshape (arange (* batch (+ seq 1))) (list batch (+ seq 1)))) 3) vocab))
(define inputs (slice tokens 0 seq :axis 1))
(define targets (astype (one-hot (flatten (slice tokens 1 (+ seq 1) :axis 1)) vocab) number-type))
(define causal (tril (ones (list seq seq))))

(define (split-heads x)   ; [B T D] -> [B H T d]
  (transpose (reshape x (list batch seq heads head-width)) '(0 2 1 3)))
(define (merge-heads x)   ; [B H T d] -> [B T D]
  (reshape (transpose x '(0 2 1 3)) (list batch seq width)))
(define (self-attention p x)
  (let* ((q (split-heads (matmul x (nth p 0))))
         (k (split-heads (matmul x (nth p 1))))
         (v (split-heads (matmul x (nth p 2))))
         (scores (/ (matmul q (transpose k '(0 1 3 2))) (sqrt head-width)))
         (masked (where causal scores -1e9)))
    (matmul (merge-heads (matmul (softmax masked :axis -1) v)) (nth p 3))))
(define (feed-forward p x)
  (+ (matmul (gelu (+ (matmul x (nth p 4)) (nth p 5))) (nth p 6)) (nth p 7)))
(define (layer p x)
  (let ((h (+ x (self-attention p (layer-norm x)))))
    (+ h (feed-forward p (layer-norm h)))))
(define (loss params inputs targets)
  (let* ((x (+ (gather (first params) inputs :axis 0) (second params)))
         (h (let loop ((ls (nth params 2)) (h x)) (if (null? ls) h (loop (rest ls) (layer (first ls) h)))))
         (logits (reshape (matmul (layer-norm h) (nth params 3)) (list (* batch seq) vocab))))
    (neg (mean (sum (* targets (log-softmax logits :axis -1)) :axis -1)))))

(define step (value-and-grad loss))
(define opt (adam :lr 0.001))
(define (train-step params)
  (let ((r (step params inputs targets)))
    (list (first r) (opt params (second r)))))
(define (median xs) (nth (sort xs <) (quotient (length xs) 2)))
(when smoke?
  (let* ((direction (tree-map (lambda (leaf) (cos (* 1.3 (reshape (arange (* 1.0 (size leaf))) (shape leaf)))))
                              params))
         (of-params (lambda (p) (loss p inputs targets)))
         (r (step params inputs targets))
         (along (tree-dot (second r) direction))
         (forward (second (jvp of-params (list params) (list direction))))
         (h 1e-7)
         (moved (lambda (sign) (of-params (tree-map (lambda (p d) (+ p (* sign h d))) params direction))))
         (central (/ (- (moved 1.0) (moved -1.0)) (* 2.0 h)))
         (tolerance (if (equal? number-type 'f64) 1e-12 1e-5)))
    (smoke-check "value of value-and-grad against the loss"
                 (relative-difference (first r) (of-params params)) tolerance)
    (smoke-check "gradient along a direction against forward mode"
                 (relative-difference along forward) tolerance)
    (when (equal? number-type 'f64)
      (smoke-check "gradient along a direction against finite differences"
                   (relative-difference along central) 1e-6))))
(define state (train-step params))
(println "number type " number-type)
(println "first loss " (first state))
(define times
  (map (lambda (k)
         (let ((start (clock)))
           (set! state (train-step (second state)))
           (- (clock) start)))
       (range rounds)))
(println "loss after " (+ rounds 1) " steps " (first state))
(println "seconds " (median times))

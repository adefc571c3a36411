;; Issue 17's LSTM targets, as scans over sequences (`(scan step init xs)`):
;;
;;   adbench: ADBench's LSTM objective (l = 2 layers, c = 1024 characters,
;;            b = 14: diagonal gates, teacher forcing, log-softmax loss);
;;   char:    a character LSTM (hidden 256, sequence 512, batch 32,
;;            vocabulary 64: gates from two matrix products a step).
;;
;; Data and parameters are deterministic (sines and a one-hot pattern), the
;; same as bench/reference/lstm.py builds, so the two print the same loss
;; and gradient checksum.
;;
;;   epsilon run bench/loops/lstm.lisp [--model adbench|char] [--runs 5]
;;       [--checkpoint store-all|revolve]
;;
;; JAX's lax.scan keeps every step's residuals, as 'store-all keeps every
;; state (and recomputes each step's intermediates in its reverse step);
;; 'revolve keeps ceil(sqrt n) states and recomputes the rest.
;;
;; With --smoke: small sizes (adbench c = 16, b = 4; char T = 6, B = 3,
;; H = 8, V = 5), one run unless --runs says otherwise, and the gradient
;; checked against central finite differences (check-grad).

(define smoke? (member "--smoke" *args*))
(when smoke? (load "../smoke.lisp"))
(define model (script-option "--model" "adbench"))
(define runs (script-option "--runs" (if smoke? 1 5)))
(define checkpoint (string->symbol (script-option "--checkpoint" "store-all")))

(define (wave shape scale)
  (* scale (sin (reshape (arange (apply * shape)) shape))))
(define (one-hot ids width)
  (where (= (reshape ids (append (shape ids) (list 1))) (arange width)) 1.0 0.0))
(define (pattern length width)
  (let ((k (+ (* 7 (arange length)) 3)))
    (- k (* width (floor (/ k width))))))

;; ADBench: main parameters [2l, 4b] (a weight and a bias row per layer),
;; extra [3, b], state [2l, b] (hidden and cell per layer).
(define (adbench-layer w b h c x)
  (let* ((gates (reshape (+ (* (concat (list x h x h)) w) b) (list 4 (size h))))
         (cell (+ (* c (sigmoid (index gates 0))) (* (sigmoid (index gates 1)) (tanh (index gates 3))))))
    (list (* (sigmoid (index gates 2)) (tanh cell)) cell)))
(define (adbench-loss main extra state sequence)
  (let* ((c (first (shape sequence)))
         (inputs (slice sequence 0 (- c 1)))
         (golds (slice sequence 1 c))
         (step (lambda (s row)
                 (let* ((x (* (first row) (index extra 0)))
                        (l1 (adbench-layer (index main 0) (index main 1) (first s) (second s) x))
                        (l2 (adbench-layer (index main 2) (index main 3) (index-list s 2) (index-list s 3) (first l1)))
                        (ypred (+ (* (first l2) (index extra 1)) (index extra 2))))
                   (list (list (first l1) (second l1) (first l2) (second l2))
                         (sum (* (second row) (- ypred (logsumexp ypred))))))))
         (r (scan step (list (index state 0) (index state 1) (index state 2) (index state 3))
                  (list inputs golds) :checkpoint checkpoint)))
    (/ (- (sum (second r))) (* (- c 1) (second (shape sequence))))))

;; The character LSTM: inputs one-hot [T, B, V], weights Wx [V, 4H],
;; Wh [H, 4H], bias [4H], output Wo [H, V].
(define (char-loss Wx Wh bias Wo inputs targets)
  (let* ((batch (second (shape inputs)))
         (hidden (first (shape Wh)))
         (step (lambda (s row)
                 (let* ((gates (+ (matmul (first row) Wx) (matmul (first s) Wh) bias))
                        (g (reshape gates (list batch 4 hidden)))
                        (cell (+ (* (second s) (sigmoid (index-gate g 0)))
                                 (* (sigmoid (index-gate g 1)) (tanh (index-gate g 3)))))
                        (h (* (sigmoid (index-gate g 2)) (tanh cell)))
                        (logits (matmul h Wo)))
                   (list (list h cell)
                         (sum (* (second row) (- logits (logsumexp logits :axis 1 :keepdims #t))))))))
         (zero (zeros (list batch hidden)))
         (r (scan step (list zero zero) (list inputs targets) :checkpoint checkpoint)))
    (/ (- (sum (second r))) (* (first (shape inputs)) batch))))
(define (index-list l k) (if (= k 0) (first l) (index-list (cdr l) (- k 1))))
(define (index-gate g k) (reshape (slice g k (+ k 1) :axis 1) (list (first (shape g)) (index-list (shape g) 2))))

(define (time-it name f args)
  (let ((result (apply f args)))
    (println name " gradient checksum " (apply + (map sum result)))
    (let loop ((k 0) (times '()))
      (if (= k runs)
          (println name " seconds " (reverse times))
          (let ((start (clock)))
            (apply f args)
            (loop (+ k 1) (cons (- (clock) start) times)))))))

(cond
  ((equal? model "adbench")
   (let* ((l 2) (c (if smoke? 16 1024)) (b (if smoke? 4 14))
          (main (wave (list (* 2 l) (* 4 b)) 0.5))
          (extra (wave (list 3 b) 0.5))
          (state (wave (list (* 2 l) b) 0.1))
          (sequence (one-hot (pattern c b) b)))
     (println "adbench loss " (adbench-loss main extra state sequence))
     (time-it "adbench" (grad adbench-loss :wrt '(0 1)) (list main extra state sequence))
     (when smoke?
       (smoke-check "adbench gradient against finite differences"
                    (check-grad adbench-loss (list main extra state sequence)) 1e-6))))
  (else
   (let* ((T (if smoke? 6 512)) (B (if smoke? 3 32)) (H (if smoke? 8 256)) (V (if smoke? 5 64))
          (Wx (wave (list V (* 4 H)) 0.1))
          (Wh (wave (list H (* 4 H)) 0.05))
          (bias (wave (list (* 4 H)) 0.1))
          (Wo (wave (list H V)  0.1))
          (ids (reshape (pattern (* (+ T 1) B) V) (list (+ T 1) B)))
          (tokens (one-hot ids V))
          (inputs (slice tokens 0 T))
          (targets (slice tokens 1 (+ T 1))))
     (println "char loss " (char-loss Wx Wh bias Wo inputs targets))
     (time-it "char" (grad char-loss :wrt '(0 1 2 3)) (list Wx Wh bias Wo inputs targets))
     (when smoke?
       (smoke-check "char gradient against finite differences"
                    (check-grad char-loss (list Wx Wh bias Wo inputs targets)) 1e-6)))))

;; fit :distributed #t: the loss curve equals the one-process fit on the
;; same global batches, and the parameters are the same on every rank
;; after every step.
(load "common.lisp")

(seed! 11)
(define xs (randn 90 3))
(define ys (+ (* 0.5 (sum (* xs (tensor '(1.0 -2.0 0.5))) :axis 1)) 0.3 (* 0.1 (randn 90))))
(define (loss params x y)
  (let* ((h (tanh (+ (matmul x (first params)) (second params))))
         (pred (matmul h (nth params 2))))
    (mean (* (- pred y) (- pred y)))))
(define (init) (list (* 0.5 (randn 3 4)) (zeros 4) (* 0.5 (randn 4))))

;; One process: every rank fits the whole batches itself.
(seed! 5)
(define one (fit loss (init) (list xs ys) :epochs 4 :batch-size 16 :optimizer (adam :lr 0.05)))

;; Distributed: each rank takes its share of every batch (90 examples in
;; batches of 16: shares of 4, and of 3 or 2 on 4 ranks at the last batch).
(seed! 5)
(define same-params-every-step #t)
(define dist
  (fit loss (init) (list xs ys) :epochs 4 :batch-size 16 :optimizer (adam :lr 0.05)
       :distributed #t
       :on-epoch (lambda (epoch params mean-loss)
                   (let* ((v (tree-flatten params))
                          (all (allgather v)))
                     (unless (= 0.0 (max (abs (- all (expand-dims v 0)))))
                       (set! same-params-every-step #f))))))

(check-close "loss curve" (tensor (second dist)) (tensor (second one)) 1e-12)
(check-close "parameters" (tree-flatten (first dist)) (tree-flatten (first one)) 1e-10)
(unless same-params-every-step (fail "the parameters differ between ranks"))
(let* ((v (tree-flatten (first dist))) (all (allgather v)))
  (unless (= 0.0 (max (abs (- all (expand-dims v 0)))))
    (fail "the final parameters differ between ranks")))
(ok "fit")

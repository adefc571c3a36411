;;; mlp.lisp - a small neural network classifies handwritten digits.
;;;
;;;   epsilon run examples/mlp.lisp [--epochs 30] [--hidden 32] [--plot loss.png]
;;;
;;; The data are 1,797 8x8 images of the digits 0-9 (examples/data/digits.csv,
;;; CC BY 4.0; see examples/data/README.md). A quarter is held out; the rest
;;; trains a 64-32-10 perceptron with tanh hidden units under softmax
;;; cross-entropy, by Adam in batches of 64. `fit` shows a progress bar on a
;;; terminal; the loss per epoch is plotted to loss.png, and the graph of a
;;; training step's gradient saved as mlp.dot and mlp.svg, in the system's
;;; temporary folder unless --plot and --graph name paths; the script
;;; prints where it wrote them.

(define epochs (script-option "--epochs" 30))
(define hidden (script-option "--hidden" 32))
(define plot-path (script-option "--plot" (temp-path "loss.png")))

(define table (read-csv (str (source-directory) "/data/digits.csv")))
(define images (/ (slice table 0 64 :axis 1) 16.0))   ; pixel counts 0-16 scaled to 0-1
(define labels (flatten (slice table 64 65 :axis 1)))
(println (format "{} images of {} pixels" (first (shape images)) (second (shape images))))

(seed! 0)
(define split (train-test-split (list images labels) :test-fraction 0.25))
(define train (first split))
(define test (second split))
(println (format "training on {}, holding out {}" (examples train) (examples test)))

(define (loss params x y)
  (softmax-cross-entropy (mlp params x) y))

(define initial (mlp-init (list 64 hidden 10)))
(define start (clock))
(define result
  (fit loss initial train
       :optimizer (adam :lr 0.01) :epochs epochs :batch-size 64 :label "digits"
       :on-epoch (lambda (epoch params mean-loss)
                   (when (or (= epoch 1) (= (mod epoch 5) 0))
                     (println (format "epoch {:>3}  loss {:.4}  held-out accuracy {:.3}"
                                      epoch mean-loss
                                      (accuracy (mlp params (first test)) (second test))))))))
(define params (first result))
(define history (second result))
(println (format "trained in {:.2} s" (- (clock) start)))

(define train-accuracy (accuracy (mlp params (first train)) (second train)))
(define test-accuracy (accuracy (mlp params (first test)) (second test)))
(println (format "train accuracy {:.4}, held-out accuracy {:.4}" train-accuracy test-accuracy))

(plot (arange 1 (+ epochs 1)) (tensor history) plot-path
      :title "digits: training loss" :xlabel "epoch" :ylabel "mean cross-entropy" :log-y #t)
(println "wrote" plot-path)

;; The computation graph of one training step's gradient, as Graphviz DOT
;; (and an SVG picture of it beside the DOT file).
(define graph-path (script-option "--graph" (temp-path "mlp.dot")))
(save-dot loss (list params (slice (first test) 0 8) (slice (second test) 0 8)) graph-path)
(println "wrote" graph-path)
(let ((n (string-length graph-path)))
  (when (and (> n 4) (equal? (substring graph-path (- n 4)) ".dot"))
    (println "wrote" (str (substring graph-path 0 (- n 4)) ".svg"))))

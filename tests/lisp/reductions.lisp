;;; Reductions over all axes (a float) or :axis k (also a list of axes),
;;; with :keepdims; argmax; softmax, log-softmax, logsumexp.

;; ---- sum ----
(sum [1 2])
;=> 3.0
(sum [[1 2] [3 4]])
;=> 10.0
(sum [[1 2] [3 4]] :axis 0)
;=> [4.0 6.0]
(sum [[1 2] [3 4]] :axis 1)
;=> [3.0 7.0]
(sum [[1 2] [3 4]] :axis -1)
;=> [3.0 7.0]
(sum [[1 2] [3 4]] :axis 0 :keepdims #t)
;=> [[4.0 6.0]]
(sum [[1 2] [3 4]] :axis 1 :keepdims #t)
;=> [[3.0] [7.0]]
(sum [[1 2] [3 4]] :keepdims #t)
;=> [[10.0]]
(sum [[1 2] [3 4]] :axis '(0 1))
;=> 10.0
(sum (ones '(2 3 4)) :axis '(0 2))
;=> [8.0 8.0 8.0]
(shape (sum (ones '(2 3 4)) :axis 1))
;=> (2 4)
(shape (sum (ones '(2 3 4)) :axis 1 :keepdims #t))
;=> (2 1 4)
(sum [1 2] :axis 0)
;=> 3.0
(sum [1 2] :axis 0 :keepdims #t)
;=> [3.0]
(sum (zeros '(0)))
;=> 0.0
(sum [1 2] :axis 1)
;!! out of range

;; ---- mean, prod ----
(mean [1 2 3 4])
;=> 2.5
(mean [[1 2] [3 4]] :axis 0)
;=> [2.0 3.0]
(mean [[1 2] [3 4]] :axis 1 :keepdims #t)
;=> [[1.5] [3.5]]
(mean [[1 2] [3 4]] :axis '(0 1))
;=> 2.5
(prod [1 2 3 4])
;=> 24.0
(prod [[1 2] [3 4]] :axis 1)
;=> [2.0 12.0]
(prod [[1 2] [3 4]] :axis 0)
;=> [3.0 8.0]

;; ---- max, min ----
(max [3 1 4 1 5])
;=> 5.0
(min [3 1 4 1 5])
;=> 1.0
(max [[1 5] [7 2]])
;=> 7.0
(max [[1 5] [7 2]] :axis 0)
;=> [7.0 5.0]
(min [[1 5] [7 2]] :axis 1)
;=> [1.0 2.0]
(max [[1 5] [7 2]] :axis 1 :keepdims #t)
;=> [[5.0] [7.0]]
(min [-1 (/ 0.0 0.0) 1])
;=> nan

;; ---- argmax ----
(argmax [3 1 4 1 5])
;=> 4
(argmax [1 3 3])
;=> 1
(argmax [[1 9] [7 2]])
;=> 1
(argmax [[1 9] [7 2]] :axis 0)
;=> [1.0 0.0]
(argmax [[1 9] [7 2]] :axis 1)
;=> [1.0 0.0]
(integer? (argmax [0.5 0.25]))
;=> #t
(argmax [[1 9] [7 2]] :axis 1 :keepdims #t)
;=> [[1.0] [0.0]]

;; ---- softmax, log-softmax, logsumexp ----
(softmax [0 0])
;=> [0.5 0.5]
(softmax [1 1 1 1])
;=> [0.25 0.25 0.25 0.25]
(softmax [1000 1000])
;=> [0.5 0.5]
(softmax [[0 0] [1 1]])
;=> [[0.5 0.5] [0.5 0.5]]
(softmax [[1 3] [1 3]] :axis 0)
;=> [[0.5 0.5] [0.5 0.5]]
(round (* 1000000 (sum (softmax [1 2 3]))))
;=> 1000000.0
(argmax (softmax [0.1 2 0.3]))
;=> 1
(= (logsumexp [0 0]) (log 2))
;=> #t
(logsumexp [5])
;=> 5.0
(< 1000 (logsumexp [1000 1000]) 1001)
;=> #t
(logsumexp [[0 0] [0 0]] :axis 1)
;=> [0.6931471805599453 0.6931471805599453]
(shape (logsumexp [[0 0] [0 0]] :axis 1 :keepdims #t))
;=> (2 1)
(log-softmax [0 0])
;=> [-0.6931471805599453 -0.6931471805599453]
(< (max (abs (- (log-softmax [1000 1000]) (log 0.5)))) 1e-12)
;=> #t
(round (* 1000000 (log-softmax [[3 3] [1 1]] :axis 0)))
;=> [[-126928.0 -126928.0] [-2126928.0 -2126928.0]]
(round (* 1000000 (sum (exp (log-softmax [1 2 3])))))
;=> 1000000.0

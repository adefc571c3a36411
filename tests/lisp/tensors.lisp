;;; Tensors: literals, constructors, shape functions, products, NumPy
;;; broadcasting, elementwise math, comparison masks, where, joining,
;;; slicing, indexing, rolling, conversion and printing.

;; ---- literals (elements are evaluated) ----
[1 2 3]
;=> [1.0 2.0 3.0]
[[1 2] [3 4]]
;=> [[1.0 2.0] [3.0 4.0]]
[[[1] [2]] [[3] [4]]]
;=> [[[1.0] [2.0]] [[3.0] [4.0]]]
(define a 2)
[a (+ a 1)]
;=> [2.0 3.0]
[[a 0] [0 a]]
;=> [[2.0 0.0] [0.0 2.0]]
[0.5 -1.5e3]
;=> [0.5 -1500.0]
[[1 2] [3]]
;!! ragged

;; ---- constructors ----
(tensor '((1 2) (3 4)))
;=> [[1.0 2.0] [3.0 4.0]]
(tensor 1 2 3)
;=> [1.0 2.0 3.0]
(tensor '(1.5))
;=> [1.5]
(zeros '(2 3))
;=> [[0.0 0.0 0.0] [0.0 0.0 0.0]]
(zeros 3)
;=> [0.0 0.0 0.0]
(ones '(2))
;=> [1.0 1.0]
(ones '(1 2))
;=> [[1.0 1.0]]
(full '(2 2) 7)
;=> [[7.0 7.0] [7.0 7.0]]
(eye 2)
;=> [[1.0 0.0] [0.0 1.0]]
(eye 2 3)
;=> [[1.0 0.0 0.0] [0.0 1.0 0.0]]
(linspace 0 1 5)
;=> [0.0 0.25 0.5 0.75 1.0]
(linspace 2 3 3)
;=> [2.0 2.5 3.0]
(arange 4)
;=> [0.0 1.0 2.0 3.0]
(arange 1 3)
;=> [1.0 2.0]
(arange 0 1 0.25)
;=> [0.0 0.25 0.5 0.75]
(arange 5 0 -2)
;=> [5.0 3.0 1.0]

;; ---- random draws (shapes, ranges, reproducibility) ----
(seed! 42)
(shape (rand '(3 4)))
;=> (3 4)
(shape (randn '(3 4)))
;=> (3 4)
(shape (randn 2 5))
;=> (2 5)
(let ((r (rand '(1000)))) (and (>= (min r) 0.0) (< (max r) 1.0)))
;=> #t
(let ((r (randn '(10000)))) (< (abs (mean r)) 0.1))
;=> #t
(number? (rand))
;=> #t
(equal? (begin (seed! 1) (randn '(3 4))) (begin (seed! 1) (randn '(3 4))))
;=> #t
(equal? (begin (seed! 1) (rand 3)) (begin (seed! 1) (rand 3)))
;=> #t
(equal? (begin (seed! 1) (rand 3)) (begin (seed! 2) (rand 3)))
;=> #f

;; ---- shape, rank, size, reshape, transpose ----
(shape (zeros '(2 3 4)))
;=> (2 3 4)
(shape [1 2])
;=> (2)
(rank [[1 2] [3 4]])
;=> 2
(rank [1 2])
;=> 1
(size (zeros '(2 3 4)))
;=> 24
(reshape (arange 6) '(2 3))
;=> [[0.0 1.0 2.0] [3.0 4.0 5.0]]
(reshape (arange 6) '(3 -1))
;=> [[0.0 1.0] [2.0 3.0] [4.0 5.0]]
(reshape [[1 2] [3 4]] '(4))
;=> [1.0 2.0 3.0 4.0]
(transpose [[1 2 3] [4 5 6]])
;=> [[1.0 4.0] [2.0 5.0] [3.0 6.0]]
(transpose [1 2])
;=> [1.0 2.0]
(shape (transpose (zeros '(2 3 4))))
;=> (4 3 2)

;; ---- products ----
(matmul [[1 2] [3 4]] [[5 6] [7 8]])
;=> [[19.0 22.0] [43.0 50.0]]
(matmul [[1 2] [3 4]] [1 1])
;=> [3.0 7.0]
(matmul [1 1] [[1 2] [3 4]])
;=> [4.0 6.0]
(matmul [1 2] [3 4])
;=> 11.0
(matmul (eye 2) [[1 2 3] [4 5 6]])
;=> [[1.0 2.0 3.0] [4.0 5.0 6.0]]
(shape (matmul (ones '(5 2 3)) (ones '(3 4))))
;=> (5 2 4)
(dot [1 2 3] [4 5 6])
;=> 32.0
(outer [1 2] [3 4 5])
;=> [[3.0 4.0 5.0] [6.0 8.0 10.0]]
(trace [[1 2] [3 4]])
;=> 5.0
(trace (eye 3))
;=> 3.0

;; ---- arithmetic with NumPy broadcasting ----
(+ [1 2 3] 1)
;=> [2.0 3.0 4.0]
(* 2 [1 2])
;=> [2.0 4.0]
(- [5 5] [1 2])
;=> [4.0 3.0]
(- [1 -2])
;=> [-1.0 2.0]
(+ [[1 2 3] [4 5 6]] [10 20 30])
;=> [[11.0 22.0 33.0] [14.0 25.0 36.0]]
(+ [[1] [2]] [10 20])
;=> [[11.0 21.0] [12.0 22.0]]
(* [[1 2] [3 4]] [[1 2] [3 4]])
;=> [[1.0 4.0] [9.0 16.0]]
(+ [1 2] [3 4] [5 6])
;=> [9.0 12.0]
(/ [1 2] 2)
;=> [0.5 1.0]
(/ 1 [2 4])
;=> [0.5 0.25]
(/ [1 -1 0] 0.0)
;=> [inf -inf nan]
(+ [1 2 3] [1 2])
;!! cannot be broadcast
(shape (+ (zeros '(3 1)) (zeros '(1 4))))
;=> (3 4)

;; ---- elementwise functions ----
(sqrt [4 9])
;=> [2.0 3.0]
(exp [0 0])
;=> [1.0 1.0]
(log [1 1])
;=> [0.0 0.0]
(neg [1 -2])
;=> [-1.0 2.0]
(abs [-1 2])
;=> [1.0 2.0]
(sign [-3 0 2])
;=> [-1.0 0.0 1.0]
(relu [-1 0 2])
;=> [0.0 0.0 2.0]
(sigmoid [0 0])
;=> [0.5 0.5]
(tanh [0])
;=> [0.0]
(pow [1 2 3] 2)
;=> [1.0 4.0 9.0]
(pow 2 [1 2 3])
;=> [2.0 4.0 8.0]
(clamp [-1 0.5 2] 0 1)
;=> [0.0 0.5 1.0]
(max [1 5] [3 2])
;=> [3.0 5.0]
(min [1 5] 2)
;=> [1.0 2.0]
(floor [1.5 -1.5])
;=> [1.0 -2.0]
(round [0.5 1.5 2.4])
;=> [0.0 2.0 2.0]

;; ---- comparisons give 0.0/1.0 masks; where takes them ----
(< [1 2 3] 2)
;=> [1.0 0.0 0.0]
(> [1 2 3] 2)
;=> [0.0 0.0 1.0]
(= [1 2 3] [1 0 3])
;=> [1.0 0.0 1.0]
(>= [1 2 3] 2)
;=> [0.0 1.0 1.0]
(/= [1 2] [1 3])
;=> [0.0 1.0]
(<= [[1 5] [3 2]] 2)
;=> [[1.0 0.0] [0.0 1.0]]
(where (> [1 -2 3] 0) [1 -2 3] 0)
;=> [1.0 0.0 3.0]
(where [1 0] [1 2] [3 4])
;=> [1.0 4.0]
(where (< [[1 5] [3 2]] 3) 1 [[10 20] [30 40]])
;=> [[1.0 20.0] [30.0 1.0]]
(* [1 2 3] (> [1 2 3] 1))
;=> [0.0 2.0 3.0]

;; ---- concat, stack ----
(concat (list [1 2] [3]))
;=> [1.0 2.0 3.0]
(concat (list [[1 2]] [[3 4]]) :axis 0)
;=> [[1.0 2.0] [3.0 4.0]]
(concat (list [[1] [2]] [[3] [4]]) :axis 1)
;=> [[1.0 3.0] [2.0 4.0]]
(stack (list [1 2] [3 4]))
;=> [[1.0 2.0] [3.0 4.0]]
(stack (list [1 2] [3 4]) :axis 1)
;=> [[1.0 3.0] [2.0 4.0]]
(stack (list [1 2] [3]))
;!! equal shapes

;; ---- slice (end excluded), index, roll ----
(slice [0 1 2 3 4] 1 3)
;=> [1.0 2.0]
(slice [[1 2 3] [4 5 6]] 1 3 :axis 1)
;=> [[2.0 3.0] [5.0 6.0]]
(slice [[1 2 3] [4 5 6]] 0 1)
;=> [[1.0 2.0 3.0]]
(slice [0 1 2 3 4] -2 5)
;=> [3.0 4.0]
(index [[1 2] [3 4]] 1 0)
;=> 3.0
(index [[1 2] [3 4]] 1)
;=> [3.0 4.0]
(index [1 2 3] -1)
;=> 3.0
(index [1 2 3] 3)
;!! out of range
(roll [1 2 3 4] 1)
;=> [4.0 1.0 2.0 3.0]
(roll [1 2 3 4] -1)
;=> [2.0 3.0 4.0 1.0]
(roll [1 2 3 4] 5)
;=> [4.0 1.0 2.0 3.0]
(roll [[1 2] [3 4]] 1 :axis 1)
;=> [[2.0 1.0] [4.0 3.0]]
(roll [[1 2] [3 4]] 1 :axis 0)
;=> [[3.0 4.0] [1.0 2.0]]
(roll [[1 2] [3 4]] 1)
;=> [[4.0 1.0] [2.0 3.0]]

;; ---- broadcast-to, to-list, item ----
(broadcast-to [1 2] '(2 2))
;=> [[1.0 2.0] [1.0 2.0]]
(broadcast-to [[1] [2]] '(2 3))
;=> [[1.0 1.0 1.0] [2.0 2.0 2.0]]
(broadcast-to 5 '(3))
;=> [5.0 5.0 5.0]
(broadcast-to [1 2 3] '(2))
;!! cannot broadcast
(to-list [[1 2] [3 4]])
;=> ((1.0 2.0) (3.0 4.0))
(to-list [1.5])
;=> (1.5)
(item [2.5])
;=> 2.5
(item [[7]])
;=> 7.0
(item [1 2])
;!! one element

;; ---- tensors with list functions, equality, sort ----
(nth [[1 2] [3 4]] 1)
;=> [3.0 4.0]
(length [[1 2] [3 4] [5 6]])
;=> 3
(equal? [1 2] [1 2])
;=> #t
(equal? [1 2] [[1 2]])
;=> #f
(sort [3 1 2])
;=> [1.0 2.0 3.0]

;; ---- printing: up to 100 elements in full, above a summary ----
(reshape (arange 4) '(2 2))
;=> [[0.0 1.0] [2.0 3.0]]
(substring (str (arange 100)) 0 9)
;=> "[0.0 1.0 "
(substring (str (zeros '(1000 1000))) 0 24)
;=> "#<tensor f64 [1000 1000]"
(substring (str (arange 101)) 0 18)
;=> "#<tensor f64 [101]"
(read (str [[1.5 2] [3 4]]))
;=> [[1.5 2.0] [3.0 4.0]]
[1e16 0.5 1e-10]
;=> [1e16 0.5 1e-10]
(/ [1 -1] 0.0)
;=> [inf -inf]
(read "[1.0 inf]")
;=> [1.0 inf]
;; Keyword options pass through apply.
(apply sum (list [[1 2] [3 4]] :axis 0))
;=> [4.0 6.0]

;; ---- squeeze, expand-dims, column: axes of length 1 and columns as vectors ----
(define m [[1 2 3] [4 5 6]])
(column m 1)
;=> [2.0 5.0]
(column m -1)
;=> [3.0 6.0]
(shape (slice m 1 2 :axis 1))
;=> (2 1)
(squeeze (slice m 1 2 :axis 1))
;=> [2.0 5.0]
(shape (squeeze (reshape m '(1 2 1 3 1))))
;=> (2 3)
(shape (squeeze (reshape m '(1 2 1 3 1)) :axis 2))
;=> (1 2 3 1)
(shape (squeeze (reshape m '(1 2 3 1)) :axis -1))
;=> (1 2 3)
(squeeze [[7]])
;=> 7.0
(shape (expand-dims [1 2 3] 0))
;=> (1 3)
(shape (expand-dims [1 2 3] 1))
;=> (3 1)
(shape (expand-dims [1 2 3] -1))
;=> (3 1)
(shape (expand-dims m -3))
;=> (1 2 3)
(squeeze m :axis 1)
;!! squeeze: axis 1 of a tensor of shape (2 3) has length 3, not 1
(squeeze m :axis 2)
;!! squeeze: axis 2 is out of range for a tensor of shape (2 3)
(expand-dims m 3)
;!! expand-dims: axis 3 is out of range for a tensor of shape (2 3) (from -3 to 2)
(column [1 2 3] 0)
;!! column: expected a matrix, got a tensor of shape (3)
(column m 3)
;!! 3

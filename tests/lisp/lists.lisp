;;; Lists and the list builtins of SPEC section 3, with their argument
;;; orders: (nth lst k), (assoc key alist), (range start end [step]),
;;; (reduce f init lst), (map f lst...). Also predicates and sort.

;; ---- construction and access ----
(list 1 2 3)
;=> (1 2 3)
(list)
;=> ()
(list 1 "two" 'three 4.0 '(5))
;=> (1 "two" three 4.0 (5))
(cons 1 '(2 3))
;=> (1 2 3)
(cons 1 '())
;=> (1)
(cons 1 2)
;=> (1 . 2)
(car '(1 2 3))
;=> 1
(cdr '(1 2 3))
;=> (2 3)
(cdr '(1))
;=> ()
(cdr (cons 1 2))
;=> 2
(first '(a b c))
;=> a
(second '(a b c))
;=> b
(third '(a b c))
;=> c
(third '(a b))
;!! third of a two-element list
(third '(a))
;!! third of a one-element list
(second '(a b c))
;=> b
(rest '(a b c))
;=> (b c)
(rest '())
;=> ()
(nth '(a b c) 0)
;=> a
(nth '(a b c) 2)
;=> c
(nth '(a b c) 3)
;!! out of range
(length '(1 2 3))
;=> 3
(length '())
;=> 0

;; ---- append, reverse ----
(append '(1 2) '(3) '() '(4 5))
;=> (1 2 3 4 5)
(append)
;=> ()
(append '(1) '(2 3))
;=> (1 2 3)
(define base-list '(1 2))
(append base-list '(3))
base-list
;=> (1 2)
(reverse '(1 2 3))
;=> (3 2 1)
(reverse '())
;=> ()

;; ---- map, filter, reduce, foldl ----
(map (lambda (x) (* x x)) '(1 2 3))
;=> (1 4 9)
(map + '(1 2 3) '(10 20 30))
;=> (11 22 33)
(map list '(1 2) '(a b))
;=> ((1 a) (2 b))
(map car '((1 2) (3 4)))
;=> (1 3)
(map (lambda (x) x) '())
;=> ()
(filter (lambda (x) (> x 2)) '(1 2 3 4))
;=> (3 4)
(filter number? '(1 a "s" 2.5))
;=> (1 2.5)
(filter (lambda (x) #f) '(1 2))
;=> ()
(reduce + 0 '(1 2 3 4))
;=> 10
(reduce + 0 '())
;=> 0
(reduce (lambda (acc x) (cons x acc)) '() '(1 2 3))
;=> (3 2 1)
(reduce - 0 '(1 2 3))
;=> -6
(foldl - 0 '(1 2 3))
;=> -6
(foldl (lambda (acc x) (+ (* acc 10) x)) 0 '(1 2 3))
;=> 123
(foldl cons '() '(1 2))
;=> ((() . 1) . 2)

;; ---- range ----
(range 5)
;=> (0 1 2 3 4)
(range 0)
;=> ()
(range 2 5)
;=> (2 3 4)
(range 0 10 3)
;=> (0 3 6 9)
(range 5 0 -2)
;=> (5 3 1)
(range 0 1 0.25)
;=> (0.0 0.25 0.5 0.75)
(length (range 100000))
;=> 100000

;; ---- apply ----
(apply + '(1 2 3))
;=> 6
(apply + '())
;=> 0
(apply max 4 '(1 9 2))
;=> 9
(apply list 1 2 '(3))
;=> (1 2 3)
(apply (lambda (a . rest) rest) '(1 2 3))
;=> (2 3)

;; ---- assoc ----
(assoc 'b '((a 1) (b 2)))
;=> (b 2)
(assoc "y" '(("x" . 1) ("y" . 2)))
;=> ("y" . 2)
(assoc 2 '((1 one) (2 two)))
;=> (2 two)
(assoc 'z '((a 1)))
;=> #f
(assoc '(1 2) '(((1 2) found)))
;=> ((1 2) found)

;; ---- predicates ----
(list? '(1 2))
;=> #t
(list? '())
;=> #t
(list? (cons 1 2))
;=> #f
(list? 5)
;=> #f
(null? '())
;=> #t
(null? nil)
;=> #t
(null? '(1))
;=> #f
(null? #f)
;=> #f
(number? 3)
;=> #t
(number? 2.5)
;=> #t
(number? 'a)
;=> #f
(number? "1")
;=> #f
(symbol? 'a)
;=> #t
(symbol? "a")
;=> #f
(symbol? :key)
;=> #f
(string? "a")
;=> #t
(string? 'a)
;=> #f
(procedure? car)
;=> #t
(procedure? (lambda (x) x))
;=> #t
(procedure? 'car)
;=> #f
(procedure? identity)
;=> #t
(tensor? [1 2])
;=> #t
(tensor? '(1 2))
;=> #f
(tensor? 1.0)
;=> #f

;; ---- sort ----
(sort '(3 1 2))
;=> (1 2 3)
(sort '(3 1 2) >)
;=> (3 2 1)
(sort '())
;=> ()
(sort '("pear" "apple" "fig"))
;=> ("apple" "fig" "pear")
(sort '(2.5 1 -3))
;=> (-3 1 2.5)
(sort '((b 2) (a 1) (c 3)) (lambda (x y) (< (second x) (second y))))
;=> ((a 1) (b 2) (c 3))
;; Stable: equal keys keep their order.
(sort '((1 a) (0 b) (1 c) (0 d)) (lambda (x y) (< (car x) (car y))))
;=> ((0 b) (0 d) (1 a) (1 c))
;; Not destructive.
(let ((l '(3 1 2))) (sort l) l)
;=> (3 1 2)

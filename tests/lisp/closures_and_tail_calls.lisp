;;; Closures, lexical scope, recursion and proper tail calls.

;; ---- counters ----
(define (make-counter)
  (let ((n 0))
    (lambda () (set! n (+ n 1)) n)))
(define c1 (make-counter))
(define c2 (make-counter))
(c1)
;=> 1
(c1)
;=> 2
(c2)
;=> 1
(c1)
;=> 3

;; Two closures sharing one binding.
(define (make-account balance)
  (list (lambda (amount) (set! balance (+ balance amount)) balance)
        (lambda () balance)))
(define account (make-account 100))
((first account) 50)
;=> 150
((second account))
;=> 150

(define (make-adder k) (lambda (v) (+ v k)))
((make-adder 10) 5)
;=> 15
(map (make-adder 1) '(1 2 3))
;=> (2 3 4)
(((lambda (a) (lambda (b) (lambda (c) (list a b c)))) 1) 2)
;=> #<procedure lambda>
((((lambda (a) (lambda (b) (lambda (c) (list a b c)))) 1) 2) 3)
;=> (1 2 3)

;; Each loop iteration gets a fresh binding.
(define thunks '())
(dotimes (k 3) (set! thunks (cons (lambda () k) thunks)))
(map (lambda (thunk) (thunk)) thunks)
;=> (2 1 0)

;; ---- lexical, not dynamic, scope ----
(define y 1)
(define (get-y) y)
(let ((y 2)) (get-y))
;=> 1
(define (shadow y) (let ((y (* y 10))) y))
(shadow 4)
;=> 40
(let ((car (lambda (l) 'mine))) (car '(1 2)))
;=> mine
(car '(1 2))
;=> 1

;; ---- higher-order ----
((compose (lambda (v) (* v 2)) (lambda (v) (+ v 1))) 5)
;=> 12
(identity 'same)
;=> same
(define (twice-f g) (lambda (v) (g (g v))))
((twice-f (twice-f (lambda (v) (* v 2)))) 1)
;=> 16

;; ---- recursion ----
(define (fact n) (if (= n 0) 1 (* n (fact (- n 1)))))
(fact 10)
;=> 3628800
(fact 20)
;=> 2432902008176640000
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(fib 20)
;=> 6765
(define (sum-to n) (if (= n 0) 0 (+ n (sum-to (- n 1)))))
(sum-to 10000)
;=> 50005000
(define (flatten-list tree)
  (cond ((null? tree) '())
        ((list? (car tree)) (append (flatten-list (car tree)) (flatten-list (cdr tree))))
        (else (cons (car tree) (flatten-list (cdr tree))))))
(flatten-list '(1 (2 (3 4)) ((5))))
;=> (1 2 3 4 5)

;; ---- mutual recursion ----
(define (my-even? n) (if (= n 0) #t (my-odd? (- n 1))))
(define (my-odd? n) (if (= n 0) #f (my-even? (- n 1))))
(my-even? 10)
;=> #t
;; A million mutually tail-recursive calls.
(my-even? 1000001)
;=> #f
(letrec ((ping (lambda (n) (if (= n 0) 'ping (pong (- n 1)))))
         (pong (lambda (n) (if (= n 0) 'pong (ping (- n 1))))))
  (ping 1000001))
;=> pong

;; ---- tail calls do not grow the stack ----
(define (count-up k n) (if (= k n) k (count-up (+ k 1) n)))
(count-up 0 1000000)
;=> 1000000
(define (loop-cond k) (cond ((= k 0) 'done) (else (loop-cond (- k 1)))))
(loop-cond 1000000)
;=> done
(define (loop-let k acc)
  (let ((j (- k 1)))
    (if (< j 0) acc (loop-let j (+ acc 1)))))
(loop-let 1000000 0)
;=> 1000000
(define (loop-let* k) (let* ((j (- k 1)) (done (< j 0))) (if done 'let*-done (loop-let* j))))
(loop-let* 1000000)
;=> let*-done
(define (loop-unless k) (unless (= k 0) (loop-unless (- k 1))))
(loop-unless 1000000)
;=> ()
(define (loop-begin k) (begin (if (= k 0) 'ok (loop-begin (- k 1)))))
(loop-begin 1000000)
;=> ok
(define (loop-when k) (when (> k 0) (loop-when (- k 1))))
(loop-when 1000000)
;=> ()
(define (loop-and k) (and #t (if (= k 0) 'and-done (loop-and (- k 1)))))
(loop-and 1000000)
;=> and-done
(let loop ((k 0) (acc 0))
  (if (= k 1000000) acc (loop (+ k 1) (+ acc k))))
;=> 499999500000
(define (all-zero? lst) (or (null? lst) (and (= (car lst) 0) (all-zero? (cdr lst)))))
(all-zero? (map (lambda (v) 0) (range 100000)))
;=> #t

;; ---- runaway recursion is an error, and the engine survives it ----
(define (forever n) (+ 1 (forever n)))
(forever 0)
;!! recursion deeper than
(+ 1 2)
;=> 3

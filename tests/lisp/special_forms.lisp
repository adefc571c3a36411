;;; Special forms of SPEC section 2, and the reader syntax of section 1.
;;; Each form is followed by ;=> (its echo), ;!! (an error substring) or
;;; ;>> (an output line); a form with none of these is only evaluated.

;; ---- reader literals ----
42
;=> 42
-7
;=> -7
1.5
;=> 1.5
3.
;=> 3.0
-2e-3
;=> -0.002
#t
;=> #t
true
;=> #t
false
;=> #f
nil
;=> ()
()
;=> ()
:wrt
;=> :wrt
"a\n\"b\""
;=> "a\n\"b\""
#| a block
   comment |# 7
;=> 7

;; ---- quote ----
'x
;=> x
(quote (1 2 . 3))
;=> (1 2 . 3)
'(a "s" 1.5 #t ())
;=> (a "s" 1.5 #t ())
'()
;=> ()
(car ''a)
;=> quote

;; ---- define, docstrings ----
(define x 10)
x
;=> 10
(define (add a b)
  "Adds two numbers."
  (+ a b))
(add 2 3)
;=> 5
(doc 'add)
;>> (add a b)
;>>   Adds two numbers.
add
;=> #<procedure add>
car
;=> #<builtin car>
;; A lone string body is the value, not a docstring.
(define (greeting) "hello")
(greeting)
;=> "hello"

;; ---- set! ----
(set! x 11)
x
;=> 11
(let ((y 1)) (set! y (+ y 1)) y)
;=> 2

;; ---- lambda, fn, rest arguments ----
((lambda (a b) (* a b)) 3 4)
;=> 12
((fn (a) (+ a 1)) 41)
;=> 42
((lambda (a . rest) rest) 1 2 3)
;=> (2 3)
((lambda (a . rest) rest) 1)
;=> ()
((lambda (a b . rest) (list a b rest)) 1 2 3 4)
;=> (1 2 (3 4))
(define (count-args . xs) (length xs))
(count-args)
;=> 0
(count-args 'a 'b 'c)
;=> 3
((lambda () 5))
;=> 5

;; ---- let, let*, letrec, named let ----
(let ((a 1) (b 2)) (+ a b))
;=> 3
(let ((a 1)) (let ((a 2) (b a)) b))
;=> 1
(let* ((a 1) (b (+ a 1)) (c (* b 10))) (list a b c))
;=> (1 2 20)
(letrec ((ev? (lambda (n) (if (= n 0) #t (od? (- n 1)))))
         (od? (lambda (n) (if (= n 0) #f (ev? (- n 1))))))
  (list (ev? 10) (od? 7) (ev? 3)))
;=> (#t #t #f)
(let loop ((i 0) (acc '()))
  (if (= i 3) (reverse acc) (loop (+ i 1) (cons i acc))))
;=> (0 1 2)
(let () 5)
;=> 5
(let* ((a 1) (a (+ a 1))) a)
;=> 2
(let ((a 1)) (define b 2) (+ a b))
;=> 3

;; ---- if ----
(if #t 1 2)
;=> 1
(if #f 1 2)
;=> 2
(if 0 'yes 'no)
;=> yes
(if "" 'yes 'no)
;=> yes
(if '() 'yes 'no)
;=> no
(if nil 'yes 'no)
;=> no
(if #f 1)
;=> ()

;; ---- cond ----
(define (classify n)
  (cond ((< n 0) 'negative)
        ((= n 0) 'zero)
        (else 'positive)))
(list (classify -5) (classify 0) (classify 7))
;=> (negative zero positive)
(cond (#f 1))
;=> ()
(cond ((assoc 'b '((a 1) (b 2))) => second) (else 'none))
;=> 2
(cond (42))
;=> 42
(cond (#f 1) (else 2 3))
;=> 3

;; ---- when, unless ----
(when (> 3 2) 'a 'b)
;=> b
(when #f 'a)
;=> ()
(unless #f 1 2)
;=> 2
(unless #t 1)
;=> ()

;; ---- and, or ----
(and)
;=> #t
(or)
;=> #f
(and 1 2 3)
;=> 3
(and 1 #f 3)
;=> #f
(or #f 2 3)
;=> 2
(or #f '())
;=> ()
(or 1 (car '()))
;=> 1
(and #f (car '()))
;=> #f

;; ---- begin ----
(begin 1 2 3)
;=> 3
(begin (define in-begin 4) (* in-begin 2))
;=> 8

;; ---- while ----
(define i 0)
(define total 0)
(while (< i 5)
  (set! total (+ total i))
  (set! i (+ i 1)))
total
;=> 10
(while #f (error "never runs"))

;; ---- internal defines and mutual recursion ----
(define (f n)
  (define (helper k) (* k 2))
  (define base 1)
  (+ base (helper n)))
(f 5)
;=> 11
(define (parity n)
  (define (ev? k) (if (= k 0) #t (od? (- k 1))))
  (define (od? k) (if (= k 0) #f (ev? (- k 1))))
  (if (ev? n) 'even 'odd))
(list (parity 7) (parity 10))
;=> (odd even)

;; ---- defmacro (more in macros_quasiquote.lisp) ----
(defmacro twice (e) `(begin ,e ,e))
(define hits 0)
(twice (set! hits (+ hits 1)))
hits
;=> 2

;; ---- try / catch ----
(try (car '()) (catch (e) "caught"))
;=> "caught"
(try (+ 1 2) (catch (e) 'never))
;=> 3
(try (error "boom") (catch (e) e))
;=> "boom"
(try (error "boom" 1 'x) (catch (e) (string? e)))
;=> #t
(try
  (try (error "inner") (catch (e) (error (str "outer " e))))
  (catch (e) e))
;=> "outer inner"
(try (define t1 1) (+ t1 1) (catch (e) 'no))
;=> 2

;; ---- time ----
(time (+ 1 2))
;=> 3
(time (define timed 5))
timed
;=> 5

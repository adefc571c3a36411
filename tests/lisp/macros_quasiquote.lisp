;;; Quasiquote templates, defmacro, and the prelude macros
;;; (dotimes dolist -> ->> assert).

;; ---- quasiquote ----
`(1 2 3)
;=> (1 2 3)
`x
;=> x
(define x 5)
(define xs '(1 2 3))
`(a ,x)
;=> (a 5)
`,x
;=> 5
`(a ,@xs b)
;=> (a 1 2 3 b)
`(a ,@'() b)
;=> (a b)
`(,@xs)
;=> (1 2 3)
`(1 ,(+ 1 1) ,@(list 3 4))
;=> (1 2 3 4)
`(nested (list ,x) (,@xs))
;=> (nested (list 5) (1 2 3))
`(1 . ,x)
;=> (1 . 5)
`(,x . ,xs)
;=> (5 1 2 3)
`(quote ,x)
;=> (quote 5)
(quasiquote (a (unquote x)))
;=> (a 5)
;; Nested quasiquote: the inner level stays a template.
`(a `(b ,(c ,x)))
;=> (a (quasiquote (b (unquote (c 5)))))
(let ((y 7)) `(y is ,y))
;=> (y is 7)

;; ---- defmacro ----
(defmacro my-if (c a b) `(cond (,c ,a) (else ,b)))
(my-if #t 1 2)
;=> 1
(my-if #f 1 2)
;=> 2
;; Only the chosen branch is evaluated.
(my-if #t 'ok (error "not evaluated"))
;=> ok

(defmacro swap! (a b)
  (let ((tmp (gensym)))
    `(let ((,tmp ,a)) (set! ,a ,b) (set! ,b ,tmp))))
(define p 1)
(define q 2)
(swap! p q)
(list p q)
;=> (2 1)

(defmacro unless2 (test . body)
  "Like unless: the body runs when test is false."
  `(if ,test () (begin ,@body)))
(unless2 #f 'a 'b)
;=> b
(doc 'unless2)
;>> (unless2 test . body)
;>>   macro: Like unless: the body runs when test is false.

(defmacro def-const (name value) `(define ,name ,value))
(def-const k 42)
k
;=> 42

(defmacro rev-call (f . args) `(,f ,@(reverse args)))
(rev-call list 1 2 3)
;=> (3 2 1)
(rev-call - 1 10)
;=> 9

;; A macro whose expansion uses another macro.
(defmacro my-while-sum (var n)
  `(let ((total 0)) (dotimes (,var ,n) (set! total (+ total ,var))) total))
(my-while-sum j 5)
;=> 10

;; Macros see their arguments unevaluated.
(defmacro quote-it (e) `(quote ,e))
(quote-it (+ 1 2))
;=> (+ 1 2)
(symbol? (gensym))
;=> #t
(eq? (gensym) (gensym))
;=> #f

;; ---- dotimes ----
(define acc '())
(dotimes (i 4) (set! acc (cons i acc)))
acc
;=> (3 2 1 0)
(dotimes (i 0) (error "never runs"))
(define n-runs 0)
(dotimes (i (+ 2 1)) (set! n-runs (+ n-runs 1)))
n-runs
;=> 3

;; ---- dolist ----
(define total 0)
(dolist (v '(1 2 3 4)) (set! total (+ total v)))
total
;=> 10
(dolist (v '(a b)) (println v))
;>> a
;>> b

;; ---- -> and ->> ----
(-> 5 (- 2) (* 10))
;=> 30
(->> 5 (- 2) (* 10))
;=> -30
(-> '(1 2 3) reverse car)
;=> 3
(->> (range 5) (map (lambda (v) (* v v))) (filter (lambda (v) (> v 3))))
;=> (4 9 16)
(-> 1)
;=> 1

;; ---- assert ----
(assert (= 1 1))
(assert (= 1 2))
;!! assertion failed
(assert (> 0 1) "custom message")
;!! custom message
(try (assert (= 1 2)) (catch (e) e))
;=> "assertion failed: (= 1 2)"

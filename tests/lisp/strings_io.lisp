;;; Strings and output: str format display print println newline,
;;; *args*, clock, time, sync, string->number number->string read eval,
;;; doc. Output lines are checked with ;>>.

;; ---- strings echo quoted ----
"hello"
;=> "hello"
"tab\there"
;=> "tab\there"
""
;=> ""

;; ---- str ----
(str "a" 1 'b 2.5)
;=> "a1b2.5"
(str)
;=> ""
(str "x = " '(1 "s"))
;=> "x = (1 s)"
(str [1 2])
;=> "[1.0 2.0]"
(str #t " " #f)
;=> "#t #f"

;; ---- format ----
(format "x = {} y = {}" 1 2.5)
;=> "x = 1 y = 2.5"
(format "{} and {}" "raw" 'sym)
;=> "raw and sym"
(format "{}" [1 2])
;=> "[1.0 2.0]"
(format "{}" 3.0)
;=> "3.0"
(format "no holes")
;=> "no holes"
(format "{:.2}" pi)
;=> "3.14"
(format "{} {}" 1)
;!! holes
(format "{:.3e}" 12345.678)
;=> "1.235e4"
(format "[{:8.2}]" pi)
;=> "[    3.14]"
(format "[{:<6}|{:>6}|{:^6}]" 'ab 42 "mid")
;=> "[ab    |    42| mid  ]"
(format "[{:6}]" "left")
;=> "[left  ]"
(format "[{:10.2e}]" -0.000123)
;=> "[  -1.23e-4]"
(format "{:2}" 12345)
;=> "12345"
(format "{:x}" 1)
;!! unknown hole

;; ---- println, print, display, newline ----
(println "hello" 42 "world")
;>> hello 42 world
(println "a\"b")
;>> a"b
(display "raw string")
;>> raw string
(begin (display "x") (newline) (display 'y) (newline))
;>> x
;>> y
(print 1 "two" 3.0)
;>> 1 two 3.0
(begin (print "no newline") (print "-more") (newline))
;>> no newline-more
(println '(1 "two" 3.0))
;>> (1 two 3.0)
(println [[1 2] [3 4]])
;>> [[1.0 2.0] [3.0 4.0]]
(println 0.1 1e-10 1e16 (/ 1 0.0) (/ 0.0 0.0))
;>> 0.1 1e-10 1e16 inf nan
(println #t #f '() 'sym :key)
;>> #t #f () sym :key
(println 3 3.0 -0.5)
;>> 3 3.0 -0.5
(println)
;>>
(begin (println "one") (println "two") 'done)
;>> one
;>> two
;=> done
(define (say-hi) (println "hi") 5)
(say-hi)
;>> hi
;=> 5

;; ---- *args*, clock, time, sync ----
*args*
;=> ()
(number? (clock))
;=> #t
(>= (clock) 0.0)
;=> #t
(let ((t0 (clock))) (<= t0 (clock)))
;=> #t
(sync)
(time (* 6 7))
;=> 42
(time (begin (println "inside") 1))
;>> inside
;=> 1

;; ---- string <-> number ----
(string->number "42")
;=> 42
(string->number "-2.5")
;=> -2.5
(string->number "1e3")
;=> 1000.0
(string->number "abc")
;=> #f
(number->string 42)
;=> "42"
(number->string 2.5)
;=> "2.5"
(number->string 3.0)
;=> "3.0"
(number->string 1e-10)
;=> "1e-10"
(string->number (number->string 0.1))
;=> 0.1

;; ---- read, eval ----
(read "(+ 1 2)")
;=> (+ 1 2)
(eval (read "(+ 1 2)"))
;=> 3
(read "foo")
;=> foo
(read "\"s\"")
;=> "s"
(read "[1 2]")
;=> [1.0 2.0]
(read "'x")
;=> (quote x)
(symbol? (car (read "(a b)")))
;=> #t
(eval '(* 6 7))
;=> 42
(eval (list '+ 1 2 3))
;=> 6
(eval 5)
;=> 5
(eval '(define evald 9))
evald
;=> 9
(let ((code (list 'lambda '(v) '(* v v)))) ((eval code) 7))
;=> 49

;; ---- doc ----
(doc 'car)
;>> (car lst)
;>>   The first element of a non-empty list.
(doc 'if)
;>> (if test then [else])
;>>   special form: Evaluates then when test is true (anything but #f and ()), else otherwise.
(doc 'identity)
;>> (identity x)
;>>   Returns its argument.
(doc 'dotimes)
;>> (dotimes spec . body)
;>>   macro: (dotimes (i n) body...): evaluates body with i = 0, 1, ..., n-1.
(define (documented a) "Squares a." (* a a))
(doc 'documented)
;>> (documented a)
;>>   Squares a.

;; Every name of SPEC section 3 (and the prelude macros) is bound and has
;; documentation: the list of names for which (doc 'name) fails is empty.
(define spec-names
  '(+ - * / pow neg abs sign sqrt exp log log1p expm1 sin cos tan asin acos
    atan atan2 sinh cosh tanh sigmoid relu softplus min max clamp floor ceil
    round quotient remainder mod = /= < > <= >= not eq? equal? list cons car
    cdr first second rest nth length append reverse map filter reduce foldl
    range apply assoc list? null? number? symbol? string? procedure? tensor?
    str format display print println newline load exit clock time sync
    string->number number->string read eval error try read-csv write-csv
    load-npy save-npy sort pi trace tensor zeros ones full eye linspace arange
    rand randn seed! shape rank size reshape transpose matmul dot outer sum
    mean prod argmax softmax log-softmax logsumexp where concat stack slice
    index roll broadcast-to to-list item doc dotimes dolist -> ->> assert))
(filter (lambda (name) (try (begin (doc name) #f) (catch (e) #t))) spec-names)
;=> ()
(format "{:.1}" [[1 2] [3 4]])
;=> "[[1.0 2.0] [3.0 4.0]]"
(format "{:.2e}" [0.5])
;=> "[5.00e-1]"

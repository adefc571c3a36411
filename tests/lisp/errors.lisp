;;; Errors: each case asserts a substring of the error's one-line message.
;;; The engine stays usable after every error.

;; ---- unbound names ----
undefined-thing
;!! unbound symbol: undefined-thing
(undefined-fn 1)
;!! unbound symbol: undefined-fn
(set! never-defined 1)
;!! not defined
(eval '(undefined-in-eval))
;!! unbound symbol: undefined-in-eval
(letrec ((a b) (b 1)) a)
;!! used before its definition

;; ---- arity ----
(define (two a b) a)
(two 1)
;!! expects 2 arguments
(two 1 2 3)
;!! expects 2 arguments
((lambda (x . r) x))
;!! expects at least 1 argument
(car '(1) '(2))
;!! expects 1 argument
(cons 1)
;!! expects 2 arguments
(defmacro one-arg (v) v)
(one-arg)
;!! expects 1 argument

;; ---- types ----
(car '())
;!! empty list
(car 5)
;!! expected a list
(+ 1 "a")
;!! expected a number
(+ 'a 1)
;!! expected a number
(< 1 'b)
;!! expected a number
(5 3)
;!! not a procedure
("f")
;!! not a procedure
(string->number 5)
;!! expected a string
(apply + 1 2)
;!! list
(tensor '(1 "a"))
;!! tensor elements must be numbers

;; ---- arithmetic ----
(/ 5 0)
;!! division by the integer 0
(quotient 5 0)
;!! by the integer 0
(+ 9223372036854775807 1)
;!! integer overflow

;; ---- lists and tensors ----
(nth '(1 2) 5)
;!! out of range
(matmul [1 2 3] [1 2])
;!! do not align
(reshape [1 2 3] '(2 2))
;!! cannot reshape
(concat (list [[1 2]] [[1 2 3]]))
;!! differ
(index [1 2] 0 0)
;!! 2 indices for a tensor of rank 1
;; An unknown option is named, with the options the builtin accepts.
(sum [1 2] :bogus 1)
;!! unknown option :bogus (accepted: :axis, :keepdims)
(* [1 2] [1 2 3])
;!! cannot be broadcast

;; ---- reading at run time ----
(read "(1 2")
;!! unclosed '('
(read "99999999999999999999")
;!! does not fit in 64 bits
(read "")
;!! holds no datum

;; ---- syntax ----
(define)
;!! define needs a name
(if)
;!! if takes
(let ((x)) x)
;!! each binding is (name value)
(lambda)
;!! lambda needs a parameter list
(lambda (1) 1)
;!! parameters must be symbols
(unquote x)
;!! unquote
(quote)
;!! quote takes 1 form
(try (+ 1 2))
;!! catch
(cond (else 1) (#t 2))
;!! else must be the last clause

;; ---- error and try ----
(error "custom failure" 42)
;!! custom failure 42
(error "plain")
;!! plain
(try (error "oops") (catch (e) e))
;=> "oops"
(try (error "oops:" 'a "b" 1.5) (catch (e) e))
;=> "oops: a \"b\" 1.5"
(try (undefined-x) (catch (e) e))
;=> "unbound symbol: undefined-x"
(string? (try (car '()) (catch (e) e)))
;=> #t
;; Errors raised inside a built-in name it.
(try (/ 1 0) (catch (e) (str "caught: " e)))
;=> "caught: /: division by the integer 0"
(define (deep n) (if (= n 0) (error "bottom") (+ 1 (deep (- n 1)))))
(try (deep 100) (catch (e) e))
;=> "bottom"
(try (car '()) (catch (e) (error "rethrown")))
;!! rethrown
;; The handler's variable is local to the handler.
(try (error "x") (catch (msg) 1))
;=> 1
msg
;!! unbound symbol: msg

;; ---- files ----
(load "no/such/file.lisp")
;!! no/such/file.lisp
(read-csv "no/such/file.csv")
;!! no/such/file.csv

;; ---- exit is not caught by try ----
(try (exit 3) (catch (e) 'caught))
;!! exit

;; ---- the engine still works ----
(+ 1 1)
;=> 2

;; ---- derivatives with more than 64 axes are refused before they are built ----
(define deep-ones (ones (map (lambda (i) 1) (range 40))))
((jacfwd (lambda (x) (sin x))) deep-ones)
;!! jacfwd: the derivative of a 40-axis result by a 40-axis argument would have 80 axes; a tensor may have at most 64 axes
((jacrev (lambda (x) (sin x))) deep-ones)
;!! jacrev: the derivative of a 40-axis result by a 40-axis argument would have 80 axes
((jacobian (lambda (x) (sin x))) deep-ones)
;!! would have 80 axes
((hessian (lambda (x) (sum (sin x)))) (ones (map (lambda (i) 1) (range 33))))
;!! hessian: the derivative of a 33-axis result by a 33-axis argument would have 66 axes
(shape ((jacfwd (lambda (x) (sin x))) (ones (map (lambda (i) 1) (range 32)))))
;=> (1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1)

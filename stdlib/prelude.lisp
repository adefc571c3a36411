;;; The Epsilon prelude: loaded at start-up, before any user code.
;;; Macros and small functions that read best in Epsilon itself.

(defmacro dotimes (spec . body)
  "(dotimes (i n) body...): evaluates body with i = 0, 1, ..., n-1."
  (let ((var (car spec))
        (count (gensym "count"))
        (next (gensym "next")))
    `(let ((,count ,(second spec)))
       (let ,next ((,var 0))
         (if (< ,var ,count)
             (begin ,@body (,next (+ ,var 1)))
             (void))))))

(defmacro dolist (spec . body)
  "(dolist (x lst) body...): evaluates body with x bound to each element of lst."
  `(for-each (lambda (,(car spec)) ,@body) ,(second spec)))

(defmacro -> (x . forms)
  "(-> x (f a) g): threads x through the forms as their first argument, giving (g (f x a))."
  (reduce (lambda (acc form)
            (if (pair? form)
                `(,(car form) ,acc ,@(cdr form))
                (list form acc)))
          x forms))

(defmacro ->> (x . forms)
  "(->> x (f a) g): threads x through the forms as their last argument, giving (g (f a x))."
  (reduce (lambda (acc form)
            (if (pair? form)
                `(,@form ,acc)
                (list form acc)))
          x forms))

(defmacro assert (test . message)
  "(assert test [message]): raises an error naming the test when it is false."
  `(unless ,test
     (error ,(if (null? message) "assertion failed:" (car message)) ',test)))

(define (identity x)
  "Returns its argument."
  x)

(define (compose . fs)
  "(compose f g ...): the function x -> (f (g ... x))."
  (lambda (x) (foldr (lambda (f acc) (f acc)) x fs)))

(defmacro defrule (name lhs rhs)
  "(defrule name lhs rhs): adds the rewrite lhs => rhs to the simplifier, in egg pattern syntax with ?a for pattern variables, e.g. (defrule log-exp '(log (exp ?a)) '?a). A rule of the same name is replaced."
  `(add-rule! ',name ,lhs ,rhs))

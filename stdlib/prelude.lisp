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

(defmacro defderiv (name params . rest)
  "(defderiv name (x y) [docstring] body (d-dx d-dy)): defines the function name of x, y computing body, with its partial derivatives declared as expressions in the arguments, e.g. (defderiv softclip (x) (tanh x) ((- 1 (pow (tanh x) 2)))). The one rule serves symbolic diff, grad and hessian (name becomes an operator of quoted expressions), reverse and forward mode, and derivatives of any order: derivatives come from the partials, never from differentiating body. The function applies elementwise: on tensors the partials broadcast like those of built-in elementwise functions. Redefining name replaces it; special forms, built-ins and macros cannot be redefined."
  (let* ((doc (if (and (= (length rest) 3) (string? (car rest))) (car rest) '()))
         (rest (if (null? doc) rest (cdr rest))))
    (unless (= (length rest) 2)
      (error "defderiv takes a name, a parameter list, an optional docstring, a body and a list of partial derivatives, got"
             (cons 'defderiv (cons name (cons params rest)))))
    (let ((body (car rest))
          (partials (second rest)))
      `(define-with-derivatives! ',name ',params ',body ',partials
         (lambda ,params ,body)
         ,(if (list? partials)
              `(list ,@(map (lambda (p) `(lambda ,params ,p)) partials))
              ''())
         ',doc))))

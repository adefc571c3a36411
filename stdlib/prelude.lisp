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

;;; Keyword options for functions written in Epsilon.

(define (lookup alist key)
  "(lookup alist key): the value stored under key in an association list of (key value) entries, such as the results of minimize or options; an error when key is missing."
  (let ((entry (assoc key alist)))
    (if entry
        (second entry)
        (error (format "lookup: no entry {} among" key) (map car alist)))))

(define (options who args defaults)
  "(options 'who args '((:key default) ...)): reads the keyword arguments a function received as its rest argument, such as (:lr 0.1 :epochs 5). Gives an association list of every key in defaults with its given or default value, read with lookup. An unknown key, or a key without a value, is an error naming who and the keys it takes."
  (let loop ((rest args) (given '()))
    (cond ((null? rest)
           (map (lambda (d) (or (assoc (car d) given) d)) defaults))
          ((not (assoc (car rest) defaults))
           (error (format "{}: unknown option {}; it takes {}" who (car rest)
                          (string-join (map (lambda (d) (str (car d))) defaults) " "))))
          ((null? (cdr rest))
           (error (format "{}: option {} needs a value" who (car rest))))
          (else (loop (cdr (cdr rest)) (cons (list (car rest) (second rest)) given))))))

(define (positive-number? x)
  "(positive-number? x): true for a finite number above 0."
  (and (number? x) (= (* 0.0 x) 0.0) (> x 0)))

(define (non-negative-number? x)
  "(non-negative-number? x): true for a finite number at least 0."
  (and (number? x) (= (* 0.0 x) 0.0) (>= x 0)))

(define (whole-number? x low)
  "(whole-number? x low): true for a whole number (an integer or a float without fraction) at least low."
  (and (number? x) (= (* 0.0 x) 0.0) (= x (floor x)) (>= x low)))

(define (check-options who o rules)
  "(check-options who o rules): the options o (from options) when each (key test what) of rules holds, (test value) true for the key's value; otherwise an error naming who, the key, what it must be and the value given."
  (for-each (lambda (rule)
              (let ((value (lookup o (car rule))))
                (unless ((second rule) value)
                  (error (format "{}: {} must be {}, got {}" who (car rule) (nth rule 2) value)))))
            rules)
  o)

;;; Trees: parameters as nested lists whose leaves are numbers and tensors.

(define (leaf? x)
  "(leaf? x): true for the leaves of a tree (numbers and tensors, traced or not)."
  (or (number? x) (tensor? x)))

(define (tree-map f tree . more)
  "(tree-map f tree more...): the tree of (f leaf more-leaves...) over trees of one structure (nested lists whose leaves are numbers and tensors); trees of different structures are an error."
  (cond ((leaf? tree) (unless (null? more) (check-alike leaf? tree more)) (apply f tree more))
        ((null? tree) (unless (null? more) (check-alike null? tree more)) '())
        ((pair? tree)
         (unless (null? more) (check-alike pair? tree more))
         (cons (apply tree-map f (car tree) (map car more))
               (apply tree-map f (cdr tree) (map cdr more))))
        (else (error "tree-map: leaves must be numbers or tensors, got" tree))))

(define (check-alike kind? tree others)
  "(check-alike kind? tree others): an error unless every tree in others is of the kind kind? that tree is (for tree-map over trees of one structure)."
  (let ((odd (filter (lambda (t) (not (kind? t))) others)))
    (unless (null? odd)
      (error (format "tree-map: the trees differ in structure: where one has {}, another has {}"
                     tree (first odd))))))

(define (tree-leaves tree)
  "(tree-leaves tree): the leaves of a tree, depth first, as a flat list."
  ;; One pass over an explicit stack of the subtrees still to visit, the
  ;; leaves gathered in reverse: linear in the tree's size however it
  ;; nests, with no recursion.
  (let walk ((pending (list tree)) (found '()))
    (if (null? pending)
        (reverse found)
        (let ((t (car pending)) (rest (cdr pending)))
          (cond ((leaf? t) (walk rest (cons t found)))
                ((null? t) (walk rest found))
                ((pair? t) (walk (cons (car t) (cons (cdr t) rest)) found))
                (else (error "tree-leaves: leaves must be numbers or tensors, got" t)))))))

(define (tree-from-leaves like leaves)
  "(tree-from-leaves like leaves): the tree with the structure of like whose leaves are taken in order from the list leaves (the inverse of tree-leaves)."
  (let ((rest leaves))
    (tree-map (lambda (leaf)
                (when (null? rest)
                  (error "tree-from-leaves: fewer leaves than the tree holds"))
                (let ((next (car rest)))
                  (set! rest (cdr rest))
                  next))
              like)))

(define (tree-flatten tree)
  "(tree-flatten tree): every leaf of a tree, flattened and joined into one vector (see tree-unflatten)."
  (concat (map flatten (tree-leaves tree))))

(define (tree-unflatten like vec)
  "(tree-unflatten like vec): the tree with the structure and leaf shapes of like, filled from the vector vec in tree-flatten's order."
  (let ((offset 0))
    (tree-map (lambda (leaf)
                (let* ((n (if (number? leaf) 1 (size leaf)))
                       (piece (slice vec offset (+ offset n))))
                  (set! offset (+ offset n))
                  (if (number? leaf) (item piece) (reshape piece (shape leaf)))))
              like)))

(define (tree-dot a b)
  "(tree-dot a b): the sum of elementwise products over two trees of one structure."
  (foldl + 0.0 (map (lambda (x y) (sum (* x y))) (tree-leaves a) (tree-leaves b))))

(define (tree-norm tree)
  "(tree-norm tree): the Euclidean norm of all the leaves of a tree together."
  (sqrt (tree-dot tree tree)))

;;; Script arguments.

(define (script-option name default)
  "(script-option \"--epochs\" 30): the argument after name among the script's arguments (*args*), read as a number when default is a number; default when name is not given. For `epsilon run file.lisp --epochs 5`."
  (let ((tail (member name *args*)))
    (cond ((not tail) default)
          ((null? (cdr tail)) (error (format "{} needs a value" name)))
          ((number? default)
           (let ((n (string->number (second tail))))
             (if n n (error (format "{} needs a number, got" name) (second tail)))))
          (else (second tail)))))

(defmacro defderiv (name params . rest)
  "(defderiv name (x y) [docstring] body (d-dx d-dy)): defines the function name of x, y computing body, with its partial derivatives declared as expressions in the arguments, e.g. (defderiv softclip (x) (tanh x) ((- 1 (pow (tanh x) 2)))). The one rule serves symbolic diff, grad and hessian (name becomes an operator of quoted expressions), reverse and forward mode: derivatives come from the partials, never from differentiating body, to any order when the partials do not call name itself. A partial that calls name (as exp's would) is followed to order 4 numerically (symbolic diff, to any order); beyond that, numeric derivatives differentiate body. The function applies elementwise: on tensors the partials broadcast like those of built-in elementwise functions. Redefining name replaces it; special forms, built-ins and macros cannot be redefined."
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

(defmacro defvjp (name params body pullback)
  "(defvjp name (args...) body pullback): defines the function name of args computing body, with a reverse rule: pullback, evaluated with the arguments bound, is a function of the result's cotangent g, or (lambda (g y) ...) to read the result y too, returning the list of the arguments' cotangents, one per argument, each of its argument's shape (nil: zero). The rule serves grad, vjp, jit and scan; forward mode (jvp, hessian) uses its transpose. Works on any tensor function (several arguments, several results as a list); arguments that are not numbers or tensors are passed as they are and get no cotangent from the rule. E.g. (defvjp clip-grad (x) x (lambda (g) (list (clip g -1 1))))."
  `(begin (define ,name (custom-vjp (lambda ,params ,body) (lambda ,params ,pullback) ',name)) ',name))

(defmacro defjvp (name params body pushforward)
  "(defjvp name (args...) body pushforward): defines the function name of args computing body, with a forward rule: pushforward is (lambda (args... tangents...) tangent-out), one tangent per argument (nil for one that is not a number or tensor). The rule serves jvp and hessian; reverse mode (grad, vjp) transposes it when it is linear in the tangents, so one rule gives both modes. E.g. (defjvp my-exp (x) (exp x) (lambda (x t) (* (exp x) t)))."
  `(begin (define ,name (custom-jvp (lambda ,params ,body) ,pushforward ',name)) ',name))

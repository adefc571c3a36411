;;; Loading code and data files: load (relative to the calling file),
;;; read-csv (header skipped), write-csv, save-npy and load-npy.
;;; The harness binds *tmp* to a fresh temporary directory; paths without
;;; a directory are relative to the working directory (the crate root).

;; ---- load ----
(load "tests/lisp/data/load_outer.lisp")
outer-value
;=> 42
inner-value
;=> 41
(inner-square 3)
;=> 9
(load "tests/lisp/data/missing.lisp")
;!! missing.lisp

;; ---- read-csv ----
(read-csv "tests/lisp/data/no_header.csv")
;=> [[1.0 2.0 3.0] [4.0 5.0 6.0]]
(read-csv "tests/lisp/data/with_header.csv")
;=> [[1.0 2.0] [3.0 4.5]]
(shape (read-csv "tests/lisp/data/with_header.csv"))
;=> (2 2)

;; ---- read-csv with a header, text columns, missing values, a delimiter ----
(define table (read-csv "tests/lisp/data/mixed.csv" :header #t :delimiter ";"))
(define (nan? v) (not (= v v)))
(car table)
;=> ("species" "length" "width")
(shape (second table))
;=> (3 3)
(index (second table) 0 1)
;=> 5.1
(nan? (index (second table) 1 1))
;=> #t
(nan? (index (second table) 2 2))
;=> #t
(nan? (index (second table) 0 0))
;=> #t
(nth table 2)
;=> (("species" "setosa" "versicolor" "virginica"))
(car (read-csv "tests/lisp/data/with_header.csv" :header #t))
;=> ("x" "y")
(shape (read-csv "tests/lisp/data/no_header.csv" :header #f))
;=> (2 3)
(read-csv "tests/lisp/data/ragged.csv" :header #t)
;!! ragged.csv:3: 1 fields where the first row has 2
(read-csv "tests/lisp/data/mixed.csv" :delimiter ";")
;!! mixed.csv:2: the field "setosa" is not a number
(read-csv "tests/lisp/data/mixed.csv" :delimiter ";;")
;!! :delimiter is one character

;; ---- write-csv then read-csv ----
(define csv-path (str *tmp* "/m.csv"))
(write-csv [[1 2.5] [-3 1e-10]] csv-path)
(read-csv csv-path)
;=> [[1.0 2.5] [-3.0 1e-10]]
(write-csv (eye 3) csv-path)
(equal? (read-csv csv-path) (eye 3))
;=> #t

;; ---- save-npy then load-npy ----
(define npy-path (str *tmp* "/t.npy"))
(save-npy (reshape (arange 24) '(2 3 4)) npy-path)
(shape (load-npy npy-path))
;=> (2 3 4)
(equal? (load-npy npy-path) (reshape (arange 24) '(2 3 4)))
;=> #t
(save-npy [0.1 -2.5] npy-path)
(load-npy npy-path)
;=> [0.1 -2.5]
(load-npy (str *tmp* "/missing.npy"))
;!! missing.npy

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

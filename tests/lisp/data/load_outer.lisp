;; Loaded by data_files.lisp: the relative path below is resolved against
;; this file's directory, not the working directory.
(load "load_inner.lisp")
(define outer-value (+ inner-value 1))

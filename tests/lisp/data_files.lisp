;;; Loading code and data files: load (relative to the calling file),
;;; read-csv (header skipped), write-csv, save-npy and load-npy (every
;;; number kind NumPy writes, from files np.save made), load-tree of an
;;; .npz of named arrays, and whole text files (write-file, append-file,
;;; read-file, temp-path).
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
(save-npy (astype [0.1 -2.5] 'f32) npy-path)
(dtype (load-npy npy-path))
;=> f32
(equal? (load-npy npy-path) (astype [0.1 -2.5] 'f32))
;=> #t
(dtype (load-npy npy-path :dtype 'f64))
;=> f64

;; ---- .npy files as NumPy writes them (tests/lisp/data/npy, made by np.save) ----
;; Integers and bools load as f64 tensors, float32 as f32.
(define (npy name) (load-npy (str "tests/lisp/data/npy/" name ".npy")))
(map (lambda (kind) (list (dtype (npy kind)) (npy kind))) '("int8" "int16" "int32" "int64"))
;=> ((f64 [[-3.0 -1.0 0.0] [1.0 2.0 127.0]]) (f64 [[-3.0 -1.0 0.0] [1.0 2.0 127.0]]) (f64 [[-3.0 -1.0 0.0] [1.0 2.0 127.0]]) (f64 [[-3.0 -1.0 0.0] [1.0 2.0 127.0]]))
(map (lambda (kind) (npy kind)) '("uint8" "uint16" "uint32" "uint64"))
;=> ([[0.0 1.0 2.0] [200.0 255.0 7.0]] [[0.0 1.0 2.0] [200.0 255.0 7.0]] [[0.0 1.0 2.0] [200.0 255.0 7.0]] [[0.0 1.0 2.0] [200.0 255.0 7.0]])
(npy "bool")
;=> [1.0 0.0 1.0]
(dtype (npy "float32"))
;=> f32
(equal? (npy "float32") (astype [0.1 -2.5 3.0] 'f32))
;=> #t
(npy "big_endian")
;=> [[1.5 -2.0]]
(npy "fortran")
;=> [[0.0 1.0 2.0] [3.0 4.0 5.0]]
(dtype (load-npy "tests/lisp/data/npy/int16.npy" :dtype 'f32))
;=> f32
(npy "past_2_53")
;!! int64 9007199254740993, which float64 cannot represent exactly
(npy "complex")
;=> [#c(1.0 2.0)]
(npy "huge_header")
;!! huge_header.npy: its header's shape (4000000000,) of float64 needs 32000000000 bytes of data, and the file holds 16
(load-npy "tests/lisp/data/mixed.csv")
;!! mixed.csv: not a NumPy .npy file
(npy "deep_shape")
;!! deep_shape.npy: its header's shape has 65 axes; a tensor may have at most 64

;; ---- a JSON tree whose tensor claims more than 64 axes ----
(define deep-json (str *tmp* "/deep.json"))
(write-file deep-json (str "{\"shape\": [" (string-join (map (lambda (i) "1") (range 65)) ", ") "], \"data\": [1.0]}"))
(load-tree deep-json)
;!! a tensor's shape has 65 axes; a tensor may have at most 64

;; ---- an .npz of arrays named by np.savez(f, w=..., b=..., steps=...) ----
(load-tree "tests/lisp/data/npy/named.npz")
;=> (("w" [[1.0 2.0] [3.0 4.0]]) ("b" [1.0 2.0]) ("steps" 12))
(lookup (load-tree "tests/lisp/data/npy/named.npz") "w")
;=> [[1.0 2.0] [3.0 4.0]]

;; ---- whole text files ----
(define text-path (str *tmp* "/notes.txt"))
(write-file text-path "first line\n")
(read-file text-path)
;=> "first line\n"
(append-file text-path "second line\n")
(append-file text-path "third")
(read-file text-path)
;=> "first line\nsecond line\nthird"
(write-file text-path "replaced")
(read-file text-path)
;=> "replaced"
(append-file (str *tmp* "/new.txt") "made by append")
(read-file (str *tmp* "/new.txt"))
;=> "made by append"
(write-file text-path 42)
;!! write-file writes a string, got integer 42
(read-file (str *tmp* "/missing.txt"))
;!! cannot read
(write-file (str *tmp* "/no/such/dir.txt") "x")
;!! cannot write
(read-file "tests/lisp/data/npy/int8.npy")
;!! int8.npy is not UTF-8 text
(read-file text-path)
;=> "replaced"
(define plot-path (temp-path "plot.png"))
(substring plot-path (- (string-length plot-path) 9))
;=> "/plot.png"
(string? (temp-path))
;=> #t

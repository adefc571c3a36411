;; Issue 20: the Neo-Hookean gradient (W3) as C, for the timing against
;; CasADi's generated C (bench/reference/casadi_codegen.py writes both and
;; times them). Prints the C source of `neo_hookean_grad`.
;;   epsilon run bench/codegen/neo-hookean.lisp
;; With `smoke` (which W3's file also checks), the C source is followed by
;; a point and the gradient there, for a test that compiles the C:
;;   point: F11 ... F33 mu lam
;;   gradient: dW/dF11 ... dW/dF33
(load "../w3/neo-hookean.lisp")
(display (codegen g (append vars '(mu lam)) :lang 'c :name "neo_hookean_grad"))
(when smoke?
  (newline)
  (println "point: " (apply str (map (lambda (v) (str v " ")) (append point material))))
  (println "gradient: "
           (apply str (map (lambda (v) (str v " "))
                           (evaluate g (map list (append vars '(mu lam)) (append point material)))))))

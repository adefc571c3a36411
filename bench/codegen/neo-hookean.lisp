;; Issue 20: the Neo-Hookean gradient (W3) as C, for the timing against
;; CasADi's generated C (bench/reference/casadi_codegen.py writes both and
;; times them). Prints the C source of `neo_hookean_grad`.
;;   epsilon run bench/codegen/neo-hookean.lisp
(load "../w3/neo-hookean.lisp")
(display (codegen g (append vars '(mu lam)) :lang 'c :name "neo_hookean_grad"))

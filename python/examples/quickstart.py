"""Epsilon from Python in a minute: an engine, a Lisp function, its
compiled gradient on NumPy arrays, and formulas.

    python3 python/examples/quickstart.py
"""

import numpy as np

import epsilon

eng = epsilon.Engine()
eng.eval("(define (loss w) (sum (* w w)))")
g = eng.grad("loss")
print("gradient of sum(w^2) at [0 1 2]:", g(np.arange(3.0)))
print("loss at ones(3):", eng.call("loss", np.ones(3)))

value, grad = eng.value_and_grad("(lambda (w) (sum (sin w)))")(np.array([0.0, np.pi]))
print("value and gradient of sum(sin w):", value, grad)

d = epsilon.diff("(* x (sin x))", "x")
print("d/dx x sin x =", d, "=", d.latex())
print("its gradient in x and y:", epsilon.gradient("(* x (sin y))", ["x", "y"]))

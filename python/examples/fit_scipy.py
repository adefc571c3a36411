"""Fitting a model with SciPy's `minimize`, Epsilon giving the gradient.

The model y = a exp(-b t) + c is written in Lisp; `value_and_grad` gives
SciPy the loss and its exact gradient in one call (`jac=True`).

    python3 python/examples/fit_scipy.py
"""

import numpy as np
from scipy.optimize import minimize

import epsilon

rng = np.random.default_rng(0)
t = np.linspace(0.0, 4.0, 200)
truth = np.array([2.0, 1.3, 0.5])
y = truth[0] * np.exp(-truth[1] * t) + truth[2] + 0.01 * rng.standard_normal(t.size)

eng = epsilon.Engine()
eng.define("t", t)
eng.define("y", y)
eng.eval(
    """
    (define (loss p)
      (let ((model (+ (* (index p 0) (exp (neg (* (index p 1) t)))) (index p 2))))
        (mean (square (- model y)))))
    """
)
loss_and_grad = eng.value_and_grad("loss")


def fun(p):
    value, grad = loss_and_grad(p)
    return value, grad


result = minimize(fun, x0=np.array([1.0, 1.0, 0.0]), jac=True, method="BFGS")
print("fitted (a, b, c):", np.round(result.x, 3), "true:", truth)
print("iterations:", result.nit, "gradient evaluations:", result.njev)
assert np.allclose(result.x, truth, atol=0.05), result.x

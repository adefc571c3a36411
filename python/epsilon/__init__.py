"""Epsilon from Python: a differentiation engine inside a small Lisp.

    >>> import numpy as np, epsilon
    >>> eng = epsilon.Engine()
    >>> eng.eval("(define (loss w) (sum (* w w)))")
    >>> g = eng.grad("loss")
    >>> g(np.arange(3.0))
    array([0., 2., 4.])
    >>> epsilon.diff("(* x (sin x))", "x")
    '(+ (sin x) (* x (cos x)))'

Formulas are s-expression strings; arrays cross as NumPy arrays. Errors
raise ``epsilon.EpsilonError`` with the ``file:line:col`` report.
"""

from ._native import (
    Engine,
    EpsilonError,
    Function,
    codegen,
    diff,
    explain,
    gradient,
    hessian,
    latex,
    simplify,
)

__all__ = [
    "Engine",
    "EpsilonError",
    "Function",
    "codegen",
    "diff",
    "explain",
    "gradient",
    "hessian",
    "latex",
    "simplify",
    "to_sympy",
]

def to_sympy(expr):
    """The SymPy expression of an Epsilon formula string (SymPy is imported
    here, only when this is called)."""
    import sympy

    return _to_sympy(sympy, _read(expr))


def _read(text):
    """An s-expression string as nested Python lists of atoms."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) < 2:
                raise ValueError(f"unbalanced parentheses in {text!r}")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError(f"not one expression: {text!r}")
    return stack[0][0]


def _to_sympy(sympy, node):
    if isinstance(node, str):
        return _atom(sympy, node)
    head, *args = node
    args = [_to_sympy(sympy, a) for a in args]
    special = {
        "+": lambda *a: sympy.Add(*a),
        "*": lambda *a: sympy.Mul(*a),
        "-": lambda x, *rest: x - sympy.Add(*rest) if rest else -x,
        "/": lambda x, *rest: x / sympy.Mul(*rest) if rest else 1 / x,
        "pow": sympy.Pow,
        "neg": lambda x: -x,
        "square": lambda x: x**2,
        "log1p": lambda x: sympy.log(1 + x),
        "expm1": lambda x: sympy.exp(x) - 1,
        "abs": sympy.Abs,
        "sigmoid": lambda x: 1 / (1 + sympy.exp(-x)),
    }
    function = special.get(head) or getattr(sympy, head, None)
    if function is None:
        raise ValueError(f"no SymPy function for {head!r}")
    return function(*args)


def _atom(sympy, token):
    for number in (sympy.Integer, lambda t: sympy.Float(float(t))):
        try:
            return number(token)
        except (ValueError, TypeError):
            pass
    if token == "pi":
        return sympy.pi
    return sympy.Symbol(token)

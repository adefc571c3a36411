"""Epsilon from Python: a differentiation engine inside a small Lisp.

    >>> import numpy as np, epsilon
    >>> eng = epsilon.Engine()
    >>> eng.eval("(define (loss w) (sum (* w w)))")
    >>> g = eng.grad("loss")
    >>> g(np.arange(3.0))
    Tensor([0., 2., 4.])
    >>> epsilon.diff("(* x (sin x))", "x")
    '(+ (sin x) (* x (cos x)))'

Formulas are s-expression strings; arrays cross as NumPy arrays. Errors
raise ``epsilon.EpsilonError`` with the ``file:line:col`` report.
"""

from . import _native
from ._native import Engine, EpsilonError, Function
from ._tensor import Tensor

__all__ = [
    "Engine",
    "EpsilonError",
    "Formula",
    "Function",
    "Tensor",
    "codegen",
    "diff",
    "explain",
    "from_dlpack",
    "from_sympy",
    "gradient",
    "hessian",
    "latex",
    "simplify",
    "to_sympy",
]


class Formula(str):
    """An Epsilon formula: its s-expression text (a ``str``), shown as
    LaTeX by Jupyter."""

    def _repr_latex_(self):
        return "$" + _native.latex(str(self)) + "$"

    def latex(self):
        """The formula as LaTeX."""
        return _native.latex(str(self))

    def to_sympy(self):
        """The formula as a SymPy expression."""
        return to_sympy(self)


def _formulas(value):
    if isinstance(value, list):
        return [_formulas(v) for v in value]
    return Formula(value)


_OPTIMIZE = """

    ``optimize`` says how hard to simplify (the Lisp ``set-optimize!``): 0
    gives the derivative as Epsilon builds it (one reverse sweep sharing
    subterms, with everywhere-true identities such as ``x*1 = x``; no
    e-graph, the fastest), 1 (the default) bounded equality saturation, 2
    saturation for longer."""


def diff(expr, var, n=1, *, optimize=1):
    return _formulas(_native.diff(expr, var, n, optimize=optimize))


diff.__doc__ = """The n-th derivative of the formula ``expr`` with respect to ``var``,
    simplified: a ``Formula``.""" + _OPTIMIZE


def simplify(expr, *, optimize=1):
    return _formulas(_native.simplify(expr, optimize=optimize))


simplify.__doc__ = """``expr`` (or a list of formulas, jointly) simplified.""" + _OPTIMIZE


def gradient(expr, vars, *, optimize=1):
    return _formulas(_native.gradient(expr, vars, optimize=optimize))


gradient.__doc__ = """The partial derivatives of ``expr`` with respect to each of ``vars``,
    simplified together: a list of ``Formula``.""" + _OPTIMIZE


def hessian(expr, vars, *, optimize=1):
    return _formulas(_native.hessian(expr, vars, optimize=optimize))


hessian.__doc__ = """The Hessian of ``expr`` in ``vars``: a list of rows of ``Formula``.""" + _OPTIMIZE


def latex(expr):
    """``expr`` (or a list of formulas) as LaTeX."""
    return _native.latex(expr)


def codegen(expr, vars, lang="c", name="f"):
    """Source of a function of ``vars`` computing ``expr`` (or a list of
    formulas) with shared subterms as temporaries, in ``lang`` (``"c"``,
    ``"rust"`` or ``"python"``)."""
    return _native.codegen(expr, vars, lang, name)


def explain(expr, wrt=None):
    """The rewrites from ``expr`` to its simplified form, one a line (with
    ``wrt``, first the derivative rule at each step)."""
    return _native.explain(expr, wrt)


def _document():
    """Appends each Lisp built-in's own documentation to its Python
    counterpart's docstring."""
    engine = Engine()
    pairs = [
        (diff, "diff"),
        (simplify, "simplify"),
        (gradient, "grad"),
        (hessian, "hessian"),
        (latex, "latex"),
        (codegen, "codegen"),
        (explain, "explain"),
    ]
    for function, name in pairs:
        text = engine.doc(name)
        if text:
            function.__doc__ = function.__doc__.rstrip() + "\n\nThe Lisp built-in:\n\n" + text


_document()


def to_sympy(expr):
    """The SymPy expression of an Epsilon formula string (SymPy is imported
    here, only when this is called)."""
    import sympy

    return _to_sympy(sympy, _read(expr))


def from_dlpack(x):
    """An array from any DLPack producer (PyTorch, JAX, CuPy, NumPy) as a
    NumPy array, ready to pass to an engine: sharing the producer's memory
    when it is on the CPU, copied to the host when it is on a GPU
    (Epsilon's values live on the host between calls; a CUDA tape copies
    its inputs to the device). Epsilon's results are NumPy arrays, which
    are DLPack producers themselves (``__dlpack__``), so
    ``torch.from_dlpack`` and ``jax.dlpack.from_dlpack`` take them without
    a copy."""
    import numpy

    device = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
    # DLPack's device types the host can read: 1 the CPU, 3 CUDA's pinned
    # host memory, 11 ROCm's, 13 CUDA's managed memory.
    if device[0] in (1, 3, 11, 13):
        return numpy.from_dlpack(x)
    how = "copy it first (x.cpu() in PyTorch, cupy.asnumpy(x), jax.device_get(x))"
    try:
        return numpy.from_dlpack(x, device="cpu", copy=True)
    except TypeError as old:
        raise EpsilonError(
            f"epsilon.from_dlpack: the array is on a device (DLPack device {tuple(device)}) "
            f"and NumPy {numpy.__version__} cannot ask for a host copy (NumPy 2.1 can); {how}"
        ) from old
    except (BufferError, ValueError) as refused:
        raise EpsilonError(
            f"epsilon.from_dlpack: the array is on a device (DLPack device {tuple(device)}) "
            f"and its library would not copy it to the host; {how}"
        ) from refused


def from_sympy(expr):
    """The Epsilon formula (s-expression text) of a SymPy expression."""
    import sympy

    return Formula(_from_sympy(sympy, sympy.sympify(expr)))


def _from_sympy(sympy, e):
    if e.is_Symbol:
        return e.name
    if e.is_Integer:
        return str(int(e))
    if e.is_Rational:
        return f"(/ {int(e.p)} {int(e.q)})"
    if e.is_Number:
        return repr(float(e))
    if e is sympy.pi:
        return "pi"
    if e is sympy.E:
        return "(exp 1)"
    args = " ".join(_from_sympy(sympy, a) for a in e.args)
    if e.is_Add:
        return f"(+ {args})"
    if e.is_Mul:
        return f"(* {args})"
    if e.is_Pow:
        return f"(pow {args})"
    names = {"Abs": "abs"}
    name = names.get(type(e).__name__, type(e).__name__.lower())
    return f"({name} {args})"


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
        "softplus": lambda x: sympy.log(1 + sympy.exp(x)),
        "heaviside": lambda x, at_zero=sympy.Rational(1, 2): sympy.Heaviside(x, at_zero),
        "xlogy": lambda x, y: x * sympy.log(y),
        "lgamma": sympy.loggamma,
        "relu": lambda x: sympy.Max(x, 0),
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

"""Tiny translator for Epsilon's symbolic expression syntax (SPEC section 4).

Shared by derivative_table.py and symbolic_w3.py. Three things:

* ``parse(text)`` reads one prefix s-expression and validates it against the
  scalar op set below (names and arities), returning nested tuples
  ``(op, arg, ...)``, ``('num', text)`` or ``('sym', name)``;
* ``to_sympy(tree, symbols)`` builds the SymPy expression (numbers become exact
  rationals, ``+ - *`` with more than two arguments fold left);
* ``evaluate(tree, env)`` computes the value in plain float arithmetic with the
  ``math`` module (independent of SymPy; used for finite differences). It raises
  ``DomainError`` when a point is outside an op's domain or within ``KINK`` of a
  kink of abs / relu / min / max. The special functions (lgamma, digamma,
  polygamma, erf, erfc, multigammaln) come from ``math`` and
  ``scipy.special``; their arguments must stay on the positive axis.

``to_text(tree)`` prints a tree back in canonical spelling (one space between
items), so a string is valid exactly when ``to_text(parse(s)) == s``.
"""
import math
import re

import scipy.special
import sympy

NARY = {"+", "-", "*"}  # binary, or n-ary folded left
BINARY = {"/", "pow", "atan2", "min", "max", "polygamma", "multigammaln"}
UNARY = {
    "neg", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu", "softplus", "abs",
    "lgamma", "digamma", "erf", "erfc",
}
# Operators whose argument at this position must be a whole-number literal:
# the order of polygamma, the dimension of multigammaln.
INTEGER_ARGUMENT = {"polygamma": 0, "multigammaln": 1}
OPS = NARY | BINARY | UNARY

NUMBER_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?\Z")
SYMBOL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
KINK = 1e-3


class DomainError(ValueError):
    pass


def _tokens(text):
    return re.findall(r"\(|\)|[^\s()]+", text)


def parse(text):
    toks = _tokens(text)
    pos = 0

    def atom(tok):
        if NUMBER_RE.match(tok):
            return ("num", tok)
        if SYMBOL_RE.match(tok) and tok not in OPS:
            return ("sym", tok)
        raise SyntaxError(f"bad atom {tok!r} in {text!r}")

    def read():
        nonlocal pos
        if pos >= len(toks):
            raise SyntaxError(f"unexpected end of {text!r}")
        tok = toks[pos]
        pos += 1
        if tok == ")":
            raise SyntaxError(f"unexpected ')' in {text!r}")
        if tok != "(":
            return atom(tok)
        if pos >= len(toks) or toks[pos] in "()":
            raise SyntaxError(f"missing operator in {text!r}")
        op = toks[pos]
        pos += 1
        if op not in OPS:
            raise SyntaxError(f"unknown op {op!r} in {text!r}")
        args = []
        while True:
            if pos >= len(toks):
                raise SyntaxError(f"unclosed '(' in {text!r}")
            if toks[pos] == ")":
                pos += 1
                break
            args.append(read())
        n = len(args)
        if (op in UNARY and n != 1) or (op in BINARY and n != 2) or (op in NARY and n < 2):
            raise SyntaxError(f"{op} with {n} arguments in {text!r}")
        if op in INTEGER_ARGUMENT and not _is_int_literal(args[INTEGER_ARGUMENT[op]]):
            raise SyntaxError(f"{op} needs a whole-number literal in {text!r}")
        return (op, *args)

    tree = read()
    if pos != len(toks):
        raise SyntaxError(f"trailing tokens in {text!r}")
    return tree


def to_text(tree):
    if tree[0] in ("num", "sym"):
        return tree[1]
    return "(" + " ".join([tree[0]] + [to_text(a) for a in tree[1:]]) + ")"


def symbols_of(tree, acc=None):
    acc = set() if acc is None else acc
    if tree[0] == "sym":
        acc.add(tree[1])
    elif tree[0] != "num":
        for a in tree[1:]:
            symbols_of(a, acc)
    return acc


def ops_of(tree, acc=None):
    acc = set() if acc is None else acc
    if tree[0] not in ("num", "sym"):
        acc.add(tree[0])
        for a in tree[1:]:
            ops_of(a, acc)
    return acc


def _fold(f, xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


def to_sympy(tree, syms=None, **assumptions):
    """SymPy expression for a parsed tree; ``syms`` maps names to Symbols and is
    filled in as needed (created with ``assumptions``, e.g. real=True)."""
    syms = {} if syms is None else syms
    op = tree[0]
    if op == "num":
        return sympy.Rational(tree[1])
    if op == "sym":
        if tree[1] not in syms:
            syms[tree[1]] = sympy.Symbol(tree[1], **assumptions)
        return syms[tree[1]]
    a = [to_sympy(t, syms, **assumptions) for t in tree[1:]]
    if op == "+":
        return _fold(lambda p, q: p + q, a)
    if op == "-":
        return _fold(lambda p, q: p - q, a)
    if op == "*":
        return _fold(lambda p, q: p * q, a)
    if op == "/":
        return a[0] / a[1]
    if op == "pow":
        return a[0] ** a[1]
    if op == "atan2":
        return sympy.atan2(a[0], a[1])
    if op == "min":
        return sympy.Min(a[0], a[1])
    if op == "max":
        return sympy.Max(a[0], a[1])
    if op == "polygamma":
        return sympy.polygamma(a[0], a[1])
    if op == "multigammaln":
        p = int(tree[2][1])
        return p * (p - 1) * sympy.log(sympy.pi) / 4 + sum(
            sympy.loggamma(a[0] + sympy.Rational(1 - j, 2)) for j in range(1, p + 1))
    (u,) = a
    return {
        "neg": lambda: -u,
        "exp": lambda: sympy.exp(u),
        "log": lambda: sympy.log(u),
        "log1p": lambda: sympy.log(1 + u),
        "expm1": lambda: sympy.exp(u) - 1,
        "sqrt": lambda: sympy.sqrt(u),
        "sin": lambda: sympy.sin(u),
        "cos": lambda: sympy.cos(u),
        "tan": lambda: sympy.tan(u),
        "asin": lambda: sympy.asin(u),
        "acos": lambda: sympy.acos(u),
        "atan": lambda: sympy.atan(u),
        "sinh": lambda: sympy.sinh(u),
        "cosh": lambda: sympy.cosh(u),
        "tanh": lambda: sympy.tanh(u),
        "sigmoid": lambda: 1 / (1 + sympy.exp(-u)),
        "relu": lambda: sympy.Max(u, 0),
        "softplus": lambda: sympy.log(1 + sympy.exp(u)),
        "abs": lambda: sympy.Abs(u),
        "lgamma": lambda: sympy.loggamma(u),
        "digamma": lambda: sympy.polygamma(0, u),
        "erf": lambda: sympy.erf(u),
        "erfc": lambda: sympy.erfc(u),
    }[op]()


def _is_int_literal(tree):
    return tree[0] == "num" and "." not in tree[1]


def evaluate(tree, env):
    """Float value of a tree at ``env`` (name -> float), checking domains."""
    op = tree[0]
    if op == "num":
        return float(tree[1])
    if op == "sym":
        return float(env[tree[1]])
    a = [evaluate(t, env) for t in tree[1:]]
    if op == "+":
        return _fold(lambda p, q: p + q, a)
    if op == "-":
        return _fold(lambda p, q: p - q, a)
    if op == "*":
        return _fold(lambda p, q: p * q, a)
    if op == "/":
        if a[1] == 0:
            raise DomainError("division by zero")
        return a[0] / a[1]
    if op == "pow":
        if not _is_int_literal(tree[2]) and a[0] <= 0:
            raise DomainError(f"pow with non-integer exponent on base {a[0]}")
        if a[0] == 0:
            raise DomainError("pow of zero")
        return math.pow(a[0], a[1])
    if op == "atan2":
        if a[0] == 0 and a[1] <= 0:
            raise DomainError("atan2 on its branch cut")
        return math.atan2(a[0], a[1])
    if op in ("min", "max"):
        if abs(a[0] - a[1]) < KINK:
            raise DomainError(f"{op} within {KINK} of its kink")
        return min(a) if op == "min" else max(a)
    if op == "polygamma":
        if a[1] <= 0:
            raise DomainError(f"polygamma of {a[1]}")
        return float(scipy.special.polygamma(int(a[0]), a[1]))
    if op == "multigammaln":
        p = int(a[1])
        if a[0] <= (p - 1) / 2:
            raise DomainError(f"multigammaln of {a[0]} in dimension {p}")
        return p * (p - 1) / 4 * math.log(math.pi) + sum(
            math.lgamma(a[0] + (1 - j) / 2) for j in range(1, p + 1))
    (u,) = a
    if op in ("lgamma", "digamma") and u <= 0:
        raise DomainError(f"{op} of {u}")
    if op in ("abs", "relu") and abs(u) < KINK:
        raise DomainError(f"{op} within {KINK} of its kink")
    if op in ("log", "sqrt") and u <= 0:
        raise DomainError(f"{op} of {u}")
    if op == "log1p" and u <= -1:
        raise DomainError(f"log1p of {u}")
    if op in ("asin", "acos") and not -1 < u < 1:
        raise DomainError(f"{op} of {u}")
    if op == "tan" and abs(math.cos(u)) < 1e-6:
        raise DomainError(f"tan at a pole {u}")
    return {
        "neg": lambda: -u,
        "exp": lambda: math.exp(u),
        "log": lambda: math.log(u),
        "log1p": lambda: math.log1p(u),
        "expm1": lambda: math.expm1(u),
        "sqrt": lambda: math.sqrt(u),
        "sin": lambda: math.sin(u),
        "cos": lambda: math.cos(u),
        "tan": lambda: math.tan(u),
        "asin": lambda: math.asin(u),
        "acos": lambda: math.acos(u),
        "atan": lambda: math.atan(u),
        "sinh": lambda: math.sinh(u),
        "cosh": lambda: math.cosh(u),
        "tanh": lambda: math.tanh(u),
        "sigmoid": lambda: 1.0 / (1.0 + math.exp(-u)),
        "relu": lambda: max(u, 0.0),
        "softplus": lambda: math.log1p(math.exp(u)),
        "abs": lambda: abs(u),
        "lgamma": lambda: math.lgamma(u),
        "digamma": lambda: float(scipy.special.psi(u)),
        "erf": lambda: math.erf(u),
        "erfc": lambda: math.erfc(u),
    }[op]()

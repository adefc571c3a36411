"""Generate tests/data/derivatives.tsv: first derivatives of Epsilon expressions
computed with SymPy and checked against central finite differences.

Run (from the repository root):
    python3 bench/reference/derivative_table.py            # writes the table
    python3 bench/reference/derivative_table.py --check    # only verify the file is up to date

Columns: expr, var, point, expected (tab separated, one header line), as in the
shared starting table: `point` is `name=value` pairs separated by single spaces,
`expected` is repr() of a Python float. Every expression is parsed by the tiny
translator in sexpr.py (which rejects anything outside Epsilon's scalar op set)
and that translation is what SymPy differentiates. Each row is evaluated to 50
significant digits and asserted to agree with a central finite difference
(h = 1e-6, relative tolerance 1e-5, absolute floor 1e-8 * max(1, |f|) for
derivatives that are zero or nearly so), computed in plain float arithmetic by an
evaluator independent of SymPy that also rejects points outside an op's domain or
within 1e-3 of a kink of abs / relu / min / max.
"""
import math
import os
import sys

import sympy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sexpr  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "derivatives.tsv")
SHARED = "/work/shared/data/derivative-table.tsv"  # cross-checked when present
HEADER = "expr\tvar\tpoint\texpected"

H = 1e-6
RTOL = 1e-5
ATOL = 1e-8
MAX_ABS = 1e6
DIGITS = 50

# The 45 (expr, var) cases of the shared starting table, with its points.
SHARED_CASES = [
    ('(* x x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(+ (* 3 x) 2)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(pow x 5)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(pow x -2)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(- (pow x 3) (* 7 (pow x 2)))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(/ 1 x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(/ x (+ 1 (* x x)))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sqrt x)', 'x', ['x=0.7', 'x=1.9', 'x=0.35']),
    ('(exp (* 2 x))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(log x)', 'x', ['x=0.7', 'x=1.9', 'x=0.35']),
    ('(log (+ 1 (* x x)))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sin x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(cos (* 3 x))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(tan x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(asin (/ x 3))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(acos (/ x 3))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(atan x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sinh x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(cosh x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(tanh x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sigmoid x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(softplus x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(log1p x)', 'x', ['x=0.7', 'x=1.9', 'x=0.35']),
    ('(expm1 x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(abs x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(relu x)', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(neg (sin x))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(* x (sin y))', 'x', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(* x (sin y))', 'y', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(pow x y)', 'y', ['x=0.7 y=1.3', 'x=1.9 y=0.4', 'x=0.45 y=2.2']),
    ('(pow x y)', 'x', ['x=0.7 y=1.3', 'x=1.9 y=0.4', 'x=0.45 y=2.2']),
    ('(atan2 y x)', 'x', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(atan2 y x)', 'y', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(max x y)', 'x', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(min x y)', 'y', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(* x y z)', 'z', ['x=0.7 y=-1.3 z=0.5', 'x=1.9 y=0.4 z=-2.0', 'x=-0.4 y=2.2 z=1.1']),
    ('(exp (* x y z))', 'y', ['x=0.7 y=-1.3 z=0.5', 'x=1.9 y=0.4 z=-2.0', 'x=-0.4 y=2.2 z=1.1']),
    ('(/ (sin x) (cos y))', 'y', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(* (exp x) (sin x))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sin (sin (sin x)))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(exp (neg (* x x)))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(log (sigmoid x))', 'x', ['x=0.7', 'x=1.9', 'x=-0.4']),
    ('(sqrt (+ (* x x) (* y y)))', 'x', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(tanh (+ (* 2 x) (* 3 y)))', 'y', ['x=0.7 y=-1.3', 'x=1.9 y=0.4', 'x=-0.4 y=2.2']),
    ('(- x y z)', 'y', ['x=0.7 y=-1.3 z=0.5', 'x=1.9 y=0.4 z=-2.0', 'x=-0.4 y=2.2 z=1.1']),
]

# Common point sets.
X3 = ["x=0.7", "x=1.3", "x=-0.4"]
XPOS = ["x=0.7", "x=1.9", "x=0.35"]
XY3 = ["x=0.7 y=-1.3", "x=1.9 y=0.4", "x=-0.4 y=2.2"]
XYPOS = ["x=0.7 y=1.3", "x=1.9 y=0.4", "x=0.45 y=2.2"]
XYZ3 = ["x=0.7 y=-1.3 z=0.5", "x=1.9 y=0.4 z=-2.0", "x=-0.4 y=2.2 z=1.1"]
XYZW = ["x=0.7 y=-1.3 z=0.5 w=1.2", "x=1.9 y=0.4 z=-2.0 w=-0.6", "x=-0.4 y=2.2 z=1.1 w=0.3"]

# New cases: (expr, variables to differentiate by, points). Each variable gives
# one (expr, var) case.
NEW_CASES = [
    # quotients and rational functions
    ("(/ (+ (* x x) 1) (- (* x x) 4))", "x", X3),
    ("(/ (* 3 (pow x 3)) (+ 1 (pow x 4)))", "x", X3),
    ("(/ (- x y) (+ x y z))", "xyz", XYZ3),
    ("(- (/ x y) (/ y x))", "xy", XY3),
    ("(/ 1 (+ 1 (pow x 2) (pow y 4)))", "xy", XY3),
    ("(/ (- (pow x 3) (* 2 x)) (+ (pow x 2) (* x y) 3))", "xy", XYPOS),
    # powers: non-integer and symbolic exponents
    ("(pow x 2.5)", "x", XPOS),
    ("(pow (+ 1 (* x x)) -1.5)", "x", X3),
    ("(pow x (sin x))", "x", XPOS),
    ("(pow (+ 2 (sin x)) (cos y))", "xy", XY3),
    ("(pow (+ (* x x) (* y y)) (/ z 2))", "xz", XYZ3),
    ("(pow (sqrt x) 3)", "x", XPOS),
    ("(pow 2 x)", "x", X3),
    ("(pow (exp x) (* y y))", "xy", XY3),
    # nested compositions 3-4 deep
    ("(exp (sin (log (+ 2 (* x x)))))", "x", X3),
    ("(log (cosh (tanh (sin x))))", "x", X3),
    ("(sqrt (+ 1 (pow (atan (exp x)) 2)))", "x", X3),
    ("(sin (exp (cos (* 2 x))))", "x", X3),
    ("(log (log (+ 3 (* x x))))", "x", X3),
    ("(sqrt (sqrt (+ 1 (pow x 4))))", "x", X3),
    ("(tanh (sinh (cosh x)))", "x", X3),
    ("(sin (+ x (sin (+ x (sin x)))))", "x", X3),
    # products of 3-4 factors
    ("(* x (sin x) (exp x) (log (+ 2 x)))", "x", X3),
    ("(* (+ x 1) (- x 2) (+ x 3) (- x 4))", "x", X3),
    ("(* x y z w)", "wx", XYZW),
    ("(* (sin x) (cos y) (exp z) (tanh w))", "xzw", XYZW),
    # the variable appearing many times
    ("(+ (* x (sin x)) (/ x (+ 1 (* x x))) (pow x 3) (exp (neg x)) (* x x x))", "x", X3),
    ("(* (- x 1) (/ (+ x 2) (- (* x x) 5)) (sqrt (+ (* x x) x 1)))", "x", X3),
    # log1p / expm1
    ("(log1p (* x x))", "x", X3),
    ("(log1p (exp (neg x)))", "x", X3),
    ("(expm1 (* x (log1p y)))", "xy", XYPOS),
    ("(/ (expm1 x) x)", "x", X3),
    ("(expm1 (sin x))", "x", X3),
    ("(log1p (sigmoid x))", "x", X3),
    # sigmoid / softplus
    ("(* (sigmoid x) (- 1 (sigmoid x)))", "x", X3),
    ("(sigmoid (* w x))", "wx", ["x=0.7 w=1.2", "x=1.9 w=-0.6", "x=-0.4 w=0.3"]),
    ("(log (- 1 (sigmoid x)))", "x", X3),
    ("(sigmoid (softplus x))", "x", X3),
    ("(softplus (sin x))", "x", X3),
    ("(- (softplus x) (softplus (neg x)))", "x", X3),
    ("(softplus (log1p (* x x)))", "x", X3),
    # atan2 with the variable in either argument
    ("(atan2 (sin x) (+ 2 (cos y)))", "xy", XY3),
    ("(atan2 y (+ x 1))", "xy", XY3),
    ("(cos (atan2 y x))", "xy", XY3),
    ("(atan2 (* x y) (- (* x x) (* y y)))", "xy", XY3),
    # min / max / abs / relu away from their kinks
    ("(max (sin x) (cos x))", "x", ["x=0.3", "x=1.2", "x=-0.4"]),
    ("(min (* x x) (+ x 1))", "x", X3),
    ("(abs (- (* x x) 1))", "x", X3),
    ("(relu (sin (* 2 x)))", "x", ["x=0.7", "x=1.9", "x=-0.4", "x=1.2"]),
    ("(* x (relu (- x 0.5)))", "x", ["x=0.7", "x=1.9", "x=0.2"]),
    ("(max (max x y) z)", "xz", XYZ3 + ["x=0.1 y=0.2 z=0.9"]),
    ("(min (abs x) (abs y))", "xy", XY3),
    ("(- (min x y) (max x y))", "x", XY3),
    ("(abs (* x (sin y)))", "y", XY3),
    ("(relu (- (* x y) 0.2))", "xy", XY3 + ["x=1.1 y=0.9"]),
    # norms: sqrt of sums of squares
    ("(sqrt (+ (* x x) (* y y) (* z z)))", "xz", XYZ3),
    ("(sqrt (+ (pow (- x y) 2) (pow (- z w) 2)))", "xw", XYZW),
    ("(log (+ (* x x) (* y y) (* z z) (* w w)))", "yw", XYZW),
    # hyperbolic
    ("(* (sinh x) (cosh y))", "xy", XY3),
    ("(/ (sinh x) (cosh x))", "x", X3),
    ("(- (pow (cosh x) 2) (pow (sinh x) 2))", "x", X3),
    ("(tanh (* x y z))", "z", XYZ3),
    # trigonometric and inverse trigonometric
    ("(tan (* x y))", "xy", XY3),
    ("(asin (tanh x))", "x", X3),
    ("(acos (/ x (sqrt (+ 1 (* x x)))))", "x", X3),
    ("(asin (* x y))", "xy", XY3),
    ("(atan (/ y x))", "x", XY3),
    ("(acos (sin x))", "x", X3),
    ("(+ (pow (sin x) 2) (pow (cos x) 2))", "x", X3),
    ("(tan (sqrt x))", "x", XPOS),
    ("(cos (* x (sin (* y (cos x)))))", "xy", XY3),
    # neg / exp
    ("(neg (exp (neg x)))", "x", X3),
    ("(neg (pow (neg x) 3))", "x", X3),
    ("(exp (* -0.5 (+ (* x x) (* y y))))", "y", XY3),
    ("(log (+ (exp x) (exp y) (exp z)))", "xy", XYZ3),
    # physics
    ("(- (pow r -12) (pow r -6))", "r", ["r=1.1", "r=1.3", "r=0.95"]),
    ("(* 4 e (- (pow (/ s r) 12) (pow (/ s r) 6)))", "rs",
     ["r=1.1 s=1.0 e=0.5", "r=1.3 s=0.9 e=1.0", "r=0.95 s=1.0 e=0.2"]),
    ("(/ (exp (neg (/ (pow (- x m) 2) (* 2 (* s s))))) (* s (sqrt (* 2 3.141592653589793))))", "xms",
     ["x=0.7 m=0.2 s=0.8", "x=1.9 m=1.0 s=1.5", "x=-0.4 m=0.3 s=0.6"]),
    ("(softplus (neg (* y (+ (* w x) b))))", "wbx",
     ["x=0.7 y=1 w=0.3 b=-0.2", "x=1.9 y=-1 w=-0.6 b=0.5", "x=-0.4 y=1 w=1.2 b=0.1"]),
    ("(* 0.5 k (pow (- (sqrt (+ (* x x) (* y y))) 1) 2))", "xk",
     ["x=0.7 y=-1.3 k=2.0", "x=1.9 y=0.4 k=0.5", "x=-0.4 y=2.2 k=3.0"]),
    ("(- (* 0.5 m (* l l) (* w w)) (* m 9.81 l (cos x)))", "xwl",
     ["x=0.7 w=1.2 m=1.5 l=0.8", "x=1.9 w=-0.6 m=0.5 l=1.2", "x=-0.4 w=0.3 m=2.0 l=0.5"]),
    ("(neg (/ 1 (sqrt (+ (* x x) (* y y) (* z z)))))", "xy", XYZ3),
    ("(neg (+ (* x (log x)) (* (- 1 x) (log (- 1 x)))))", "x", ["x=0.3", "x=0.7", "x=0.45"]),
    # special functions (arguments of the gamma family kept positive)
    ("(lgamma x)", "x", XPOS),
    ("(lgamma (+ 1 (* x x)))", "x", X3),
    ("(* x (lgamma (+ 2 y)))", "xy", XY3),
    ("(digamma (+ 2 x))", "x", X3),
    ("(digamma (exp x))", "x", X3),
    ("(polygamma 1 (+ 1 (* x x)))", "x", X3),
    ("(polygamma 2 (+ 3 x))", "x", X3),
    ("(erf x)", "x", X3),
    ("(erf (* x y))", "xy", XY3),
    ("(erfc (* 2 x))", "x", X3),
    ("(- 1 (erfc (sin x)))", "x", X3),
    ("(multigammaln (+ 2 (* x x)) 3)", "x", X3),
    ("(multigammaln (exp x) 1)", "x", X3),
    ("(- (lgamma (+ x y)) (lgamma x) (lgamma y))", "xy", XYPOS),
]


def parse_point(point):
    env = {}
    for item in point.split(" "):
        name, value = item.split("=")
        assert name not in env, point
        sexpr.NUMBER_RE.match(value) or sys.exit(f"bad number in point {point!r}")
        env[name] = value
    return env


def sympy_value(dexpr, syms, env):
    subs = {syms[n]: sympy.Rational(v) for n, v in env.items() if n in syms}
    val = sympy.N(dexpr.subs(subs), DIGITS)
    re, im = val.as_real_imag()
    assert abs(im) < sympy.Float(10) ** (-30), (dexpr, env, val)
    if abs(re) < sympy.Float(10) ** (-30):  # identically zero up to rounding
        return 0.0
    return float(re)


def central_difference(tree, var, env):
    fenv = {n: float(v) for n, v in env.items()}
    f0 = sexpr.evaluate(tree, fenv)  # raises DomainError outside the domain
    hi = dict(fenv, **{var: fenv[var] + H})
    lo = dict(fenv, **{var: fenv[var] - H})
    return (sexpr.evaluate(tree, hi) - sexpr.evaluate(tree, lo)) / (2 * H), f0


def build_rows():
    cases = []  # (expr, var, points, is_new)
    for expr, var, points in SHARED_CASES:
        cases.append((expr, var, points, False))
    for expr, variables, points in NEW_CASES:
        for var in variables:
            cases.append((expr, var, points, True))

    keys = [(e, v) for e, v, _, _ in cases]
    assert len(keys) == len(set(keys)), "duplicate (expr, var) case"

    rows = []
    ops_in_new = {}
    for expr, var, points, is_new in cases:
        tree = sexpr.parse(expr)
        assert sexpr.to_text(tree) == expr, f"non-canonical spelling: {expr!r}"
        names = sexpr.symbols_of(tree)
        assert var in names, (expr, var)
        assert len(points) >= 3 and len(set(points)) == len(points), (expr, points)
        if is_new:
            for op in sexpr.ops_of(tree):
                ops_in_new.setdefault(op, set()).add(expr)
        syms = {}
        f = sexpr.to_sympy(tree, syms, real=True)
        d = sympy.diff(f, syms[var])
        for point in points:
            env = parse_point(point)
            assert set(env) == names, f"{expr}: point {point} does not bind exactly {sorted(names)}"
            expected = sympy_value(d, syms, env)
            assert math.isfinite(expected) and abs(expected) < MAX_ABS, (expr, var, point, expected)
            fd, f0 = central_difference(tree, var, env)
            tol = RTOL * abs(expected) + ATOL * max(1.0, abs(f0))
            assert abs(fd - expected) <= tol, (
                f"finite difference disagrees: {expr} d/d{var} at {point}: "
                f"sympy {expected!r}, fd {fd!r}")
            rows.append((expr, var, point, repr(expected)))

    missing = sorted(op for op in sexpr.OPS if len(ops_in_new.get(op, ())) < 2)
    assert not missing, f"ops used in fewer than 2 new expressions: {missing}"
    n_new = sum(1 for c in cases if c[3])
    assert n_new >= 60, n_new
    assert len(cases) >= 105, len(cases)
    return rows, len(cases), n_new


def cross_check_shared(rows):
    """Our SymPy values for the shared cases agree with the shared table."""
    if not os.path.exists(SHARED):
        return
    ours = {(e, v, p): float(x) for e, v, p, x in rows}
    with open(SHARED) as fh:
        lines = fh.read().splitlines()
    assert lines[0] == HEADER, lines[0]
    for line in lines[1:]:
        e, v, p, x = line.split("\t")
        assert (e, v, p) in ours, f"shared row missing: {line}"
        theirs = float(x)
        assert abs(ours[(e, v, p)] - theirs) <= 1e-12 * max(1.0, abs(theirs)), (line, ours[(e, v, p)])


def render(rows):
    return HEADER + "\n" + "".join("\t".join(r) + "\n" for r in rows)


def main():
    rows, n_cases, n_new = build_rows()
    cross_check_shared(rows)
    text = render(rows)
    if "--check" in sys.argv[1:]:
        with open(OUT) as fh:
            assert fh.read() == text, f"{OUT} is out of date; rerun without --check"
        print(f"{OUT} is up to date")
    else:
        os.makedirs(os.path.dirname(OUT), exist_ok=True)
        with open(OUT, "w") as fh:
            fh.write(text)
        print(f"wrote {os.path.relpath(OUT, ROOT)}")
    print(f"{n_cases} distinct (expr, var) cases ({n_cases - n_new} shared, {n_new} new), "
          f"{len(rows)} rows, all checked against central differences")


if __name__ == "__main__":
    main()

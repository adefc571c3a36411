"""SymPy reference for the W3 symbolic-gradient workloads (docs/design.md, W3).

Run (from the repository root):
    python3 bench/reference/symbolic_w3.py

For each workload it runs sympy.diff on every requested partial and then
sympy.simplify on each result; the whole diff+simplify is timed with
time.perf_counter, once per run, SymPy's cache cleared before every run (so later
runs do not just look results up). It prints a table with the first run and the
best of 3, and the size of the simplified results:

* DAG nodes: distinct subexpressions over all results of the workload jointly
  (every node of sympy.preorder_traversal, atoms included, put in one set) --
  the same measure as Epsilon's (expr-size g) on the list of partials;
* tree nodes: the same walk without de-duplication;
* count_ops: sum of sympy.count_ops over the results;
* DAG before simplify: the DAG count of the raw diff results.

It also writes each workload's input expression, in Epsilon's s-expression
syntax, to bench/w3/<workload>.lisp, and checks that the file's expression (read
back by the translator in sexpr.py) equals the SymPy expression numerically.
"""
import os
import random
import sys
import time

import sympy
from sympy.core.cache import clear_cache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sexpr  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
W3_DIR = os.path.join(ROOT, "bench", "w3")
RUNS = 3


# --- Epsilon text helpers -------------------------------------------------

def call(op, *args):
    return "(" + " ".join([op, *args]) + ")"


def pretty(text, width=88, indent=0):
    """Break a long s-expression over several lines, one argument per line."""
    tree = sexpr.parse(text)

    def go(t, ind):
        flat = sexpr.to_text(t)
        if t[0] in ("num", "sym") or ind + len(flat) <= width:
            return flat
        pad = " " * (ind + len(t[0]) + 2)
        parts = [go(a, ind + len(t[0]) + 2) for a in t[1:]]
        return "(" + t[0] + " " + ("\n" + pad).join(parts) + ")"

    return go(tree, indent)


# --- workloads --------------------------------------------------------------

def neo_hookean():
    names = [f"F{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    F = sympy.Matrix(3, 3, sympy.symbols(" ".join(names)))
    mu, lam = sympy.symbols("mu lam")
    I1 = (F.T * F).trace()
    J = F.det()
    W = mu / 2 * (I1 - 3) - mu * sympy.log(J) + lam / 2 * sympy.log(J) ** 2

    I1_e = call("+", *[call("pow", n, "2") for n in names])
    J_e = call("-",
               call("+", call("*", "F11", "F22", "F33"), call("*", "F12", "F23", "F31"),
                    call("*", "F13", "F21", "F32")),
               call("*", "F13", "F22", "F31"), call("*", "F11", "F23", "F32"),
               call("*", "F12", "F21", "F33"))
    W_e = call("+",
               call("-", call("*", call("/", "mu", "2"), call("-", I1_e, "3")),
                    call("*", "mu", call("log", J_e))),
               call("*", call("/", "lam", "2"), call("pow", call("log", J_e), "2")))
    wrt = list(F)
    return dict(
        name="neo-hookean",
        desc="compressible Neo-Hookean strain energy W = mu/2 (I1 - 3) - mu log J + lam/2 (log J)^2, "
             "I1 = tr(F^T F), J = det F, gradient w.r.t. the 9 entries of the 3x3 deformation gradient F",
        f=W, text=W_e, wrt=wrt, kind="grad",
        # points with det F > 0 (F near the identity)
        sample=lambda rnd: {**{s: (1.0 if s.name[1] == s.name[2] else 0.0) + rnd.uniform(-0.2, 0.2)
                               for s in wrt}, mu: rnd.uniform(0.5, 2), lam: rnd.uniform(0.5, 2)},
    )


def sincos(kind):
    x, y = sympy.symbols("x y")
    f = sympy.sin(sympy.cos(sympy.exp(x * y))) ** 3 / (1 + x ** 2 + y ** 2)
    text = call("/", call("pow", call("sin", call("cos", call("exp", call("*", "x", "y")))), "3"),
                call("+", "1", call("pow", "x", "2"), call("pow", "y", "2")))
    base = dict(f=f, text=text, wrt=[x, y],
                sample=lambda rnd: {x: rnd.uniform(-1.5, 1.5), y: rnd.uniform(-1.5, 1.5)})
    if kind == "grad":
        return dict(base, name="sincos-grad", kind="grad",
                    desc="f = sin(cos(exp(x y)))^3 / (1 + x^2 + y^2), gradient w.r.t. (x, y)")
    if kind == "hessian":
        return dict(base, name="sincos-hessian", kind="hessian",
                    desc="Hessian of f = sin(cos(exp(x y)))^3 / (1 + x^2 + y^2) w.r.t. (x, y); "
                         "SymPy reference counts the 3 distinct entries (xx, xy, yy)")
    return dict(base, name="sincos-hessian-all4", kind="hessian4", lisp=False,
                desc="the same Hessian, all 4 entries (xx, xy, yx, yy), yx differentiated separately")


def cyclic_product():
    xs = sympy.symbols("x0:8")
    f = sympy.Mul(*[xs[i] + xs[(i + 1) % 8] for i in range(8)])
    text = call("*", *[call("+", f"x{i}", f"x{(i + 1) % 8}") for i in range(8)])
    return dict(name="cyclic-product", kind="grad",
                desc="8-term cyclic product f = prod_{i=0..7} (x_i + x_{(i+1) mod 8}), "
                     "gradient w.r.t. x0..x7",
                f=f, text=text, wrt=list(xs),
                sample=lambda rnd: {s: rnd.uniform(-2, 2) for s in xs})


WORKLOADS = [neo_hookean(), sincos("grad"), sincos("hessian"), sincos("all4"), cyclic_product()]


# --- measurement ------------------------------------------------------------

def partials(w):
    f, v = w["f"], w["wrt"]
    if w["kind"] == "grad":
        return [(f, (s,)) for s in v]
    x, y = v
    if w["kind"] == "hessian":
        return [(f, (x, x)), (f, (x, y)), (f, (y, y))]
    return [(f, (x, x)), (f, (x, y)), (f, (y, x)), (f, (y, y))]


def run_once(w):
    clear_cache()
    jobs = partials(w)
    t0 = time.perf_counter()
    raw = [sympy.diff(f, *wrt) for f, wrt in jobs]
    simp = [sympy.simplify(d) for d in raw]
    return time.perf_counter() - t0, raw, simp


def dag_nodes(exprs):
    seen = set()
    for e in exprs:
        for node in sympy.preorder_traversal(e):
            seen.add(node)
    return len(seen)


def tree_nodes(exprs):
    return sum(1 for e in exprs for _ in sympy.preorder_traversal(e))


def check_text(w, rnd):
    """The Epsilon expression equals the SymPy one (numerically, 5 points)."""
    tree = sexpr.parse(w["text"])
    assert sexpr.to_text(tree) == w["text"]
    syms = {s.name: s for s in w["f"].free_symbols}
    g = sexpr.to_sympy(tree, dict(syms))
    assert g.free_symbols == w["f"].free_symbols, (g.free_symbols, w["f"].free_symbols)
    for _ in range(5):
        pt = w["sample"](rnd)
        a, b = complex(w["f"].evalf(30, subs=pt)), complex(g.evalf(30, subs=pt))
        assert abs(a - b) <= 1e-12 * max(1.0, abs(a)), (w["name"], pt, a, b)


def check_results(w, simp, rnd):
    """Simplified partials agree with the raw ones and with finite differences."""
    jobs = partials(w)
    for (f, wrt), s in zip(jobs, simp):
        pt = w["sample"](rnd)
        val = complex(s.evalf(30, subs=pt))
        # central difference of the (analytic) lower-order derivative
        inner = sympy.diff(f, *wrt[:-1]) if len(wrt) > 1 else f
        v, h = wrt[-1], sympy.Rational(1, 10 ** 8)
        hi, lo = dict(pt), dict(pt)
        hi[v] = sympy.Rational(pt[v]) + h
        lo[v] = sympy.Rational(pt[v]) - h
        fd = complex((inner.evalf(40, subs=hi) - inner.evalf(40, subs=lo)) / (2 * h))
        assert abs(val - fd) <= 1e-6 * max(1.0, abs(val)), (w["name"], wrt, val, fd)


def write_lisp(w):
    if w.get("lisp") is False:
        return None
    op = "hessian" if w["kind"] == "hessian" else "grad"
    vars_ = " ".join(s.name for s in w["wrt"])
    body = pretty(w["text"], indent=len("(define f '"))
    path = os.path.join(W3_DIR, w["name"] + ".lisp")
    with open(path, "w") as fh:
        fh.write(f"; W3 {w['name']}: {w['desc']}. Run: epsilon run bench/w3/{w['name']}.lisp\n")
        fh.write(f"(define f '{body})\n")
        fh.write(f"(define vars '({vars_}))\n")
        fh.write(f"(define g (time ({op} f vars)))\n")
        fh.write("(println (expr-size g))\n")
    return os.path.relpath(path, ROOT)


def main():
    os.makedirs(W3_DIR, exist_ok=True)
    rnd = random.Random(20240601)
    header = ("workload", "partials", "sympy ms best-of-3", "single run ms",
              "DAG nodes", "tree nodes", "count_ops", "DAG before simplify")
    rows, written = [], []
    for w in WORKLOADS:
        check_text(w, rnd)
        times = []
        for _ in range(RUNS):
            t, raw, simp = run_once(w)
            times.append(t)
        check_results(w, simp, rnd)
        rows.append((w["name"], str(len(simp)), f"{min(times) * 1e3:.1f}", f"{times[0] * 1e3:.1f}",
                     str(dag_nodes(simp)), str(tree_nodes(simp)),
                     str(sum(sympy.count_ops(s) for s in simp)), str(dag_nodes(raw))))
        p = write_lisp(w)
        if p:
            written.append(p)

    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(wd) for c, wd in zip(r, widths)) + " |"
    print(f"SymPy {sympy.__version__}, Python {sys.version.split()[0]}; diff+simplify per workload, "
          f"cache cleared before each of {RUNS} runs")
    print(line(header))
    print("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    for r in rows:
        print(line(r))
    print("wrote " + ", ".join(written))


if __name__ == "__main__":
    main()

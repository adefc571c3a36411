"""Reference values of Epsilon's special functions, computed with mpmath.

Run (from the repository root):
    python3 bench/reference/special_functions.py                  # writes the table
    python3 bench/reference/special_functions.py --check          # only verify it is up to date
    python3 bench/reference/special_functions.py --coefficients   # print the kernels' coefficients

The table, tests/data/special_functions.tsv, has one header line and the
columns: function, arguments (space separated: `x` for lgamma, digamma, erf,
erfc; `n x` for polygamma; `x p` for multigammaln), expected (repr() of the
value rounded to a Python float from 40 significant digits), rtol (the
relative tolerance the Rust test allows for that row). Points are exact
binary floats (written with repr()), drawn from a seeded generator over the
ranges each function's kernel treats differently: near the zeros of lgamma
(1 and 2) and digamma (1.4616...), tiny and huge arguments, negative
arguments away from the zeros there, the far tail of erfc.

`--coefficients` prints the series the kernels in src/scalar/{gamma,erf}.rs
use (lgamma around 2, digamma around its zero, erf's Taylor series and
erfc's Chebyshev fit), so they can be regenerated and checked.
"""
import os
import random
import sys

import mpmath as mp

mp.mp.dps = 40

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "special_functions.tsv")
HEADER = "function\targs\texpected\trtol"

TIGHT = 1e-13  # lgamma, erf, erfc, multigammaln on their normal ranges
GAMMA = 1e-12  # digamma and polygamma


def lgamma(x):
    return mp.re(mp.loggamma(x))


def erfc_g(t):
    """ln(erfc(z) / t) + z^2 with z = 2/t - 2: the function erfc's
    Chebyshev series fits on t in [0, 1]."""
    if t == 0:
        return mp.log(1 / (2 * mp.sqrt(mp.pi)))
    z = 2 / t - 2
    return mp.log(mp.erfc(z) / t) + z * z


def coefficients():
    def show(name, values):
        print(f"{name}:")
        for v in values:
            print(f"    {float(v)!r},")

    show("LGAMMA_2P (lgamma(2 + z) = sum c[k-1] z^k)",
         [1 - mp.euler] + [(-1) ** k * (mp.zeta(k) - 1) / k for k in range(2, 29)])
    x0 = mp.findroot(mp.digamma, 1.46)
    print(f"X0_HI = {float(x0)!r}, X0_LO = {float(x0 - float(x0))!r}")
    show("DIGAMMA_ROOT (psi(x0 + z) = sum c[k-1] z^k)",
         [mp.polygamma(k, x0) / mp.factorial(k) for k in range(1, 26)])
    show("BERNOULLI_OVER_FACTORIAL (B_2k / (2k)!)",
         [mp.bernoulli(2 * k) / mp.factorial(2 * k) for k in range(1, 17)])
    show("ERF_TAYLOR (erf(x) = x sum c[n] x^2n)",
         [2 / mp.sqrt(mp.pi) * (-1) ** n / (mp.factorial(n) * (2 * n + 1)) for n in range(14)])
    n = 80
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    values = [erfc_g((u + 1) / 2) for u in nodes]
    cheb = []
    for k in range(30):
        s = mp.fsum(values[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j in range(n))
        cheb.append(2 * s / n)
    cheb[0] /= 2
    show("ERFC_CHEBYSHEV (g = sum c[k] T_k(u), u = (2 - z)/(2 + z))", cheb)


def rows():
    rng = random.Random(16)
    out = []

    def add(function, args, value, rtol):
        text = " ".join(repr(float(a)) if not isinstance(a, int) else str(a) for a in args)
        value = float(value)
        out.append((function, text, repr(value), repr(rtol)))

    def uniform(lo, hi, k):
        return [rng.uniform(lo, hi) for _ in range(k)]

    def log_uniform(lo, hi, k):
        return [10 ** rng.uniform(lo, hi) for _ in range(k)]

    # lgamma
    xs = uniform(1e-3, 0.5, 12) + uniform(0.5, 3.0, 30) + uniform(3.0, 10.0, 20)
    xs += uniform(10.0, 1000.0, 20) + log_uniform(3, 300, 20) + log_uniform(-300, -3, 10)
    xs += [1 + d for d in log_uniform(-15, -1, 8)] + [1 - d for d in log_uniform(-15, -1, 8)]
    xs += [2 + d for d in log_uniform(-15, -1, 8)] + [2 - d for d in log_uniform(-15, -1, 8)]
    xs += [0.5, 1.5, 2.5, 3.0, 10.0, 100.0]
    negatives = uniform(-0.5, -1e-3, 8) + uniform(-170.0, -0.5, 40) + [-2.25, -0.75, -10.5, -100.1]
    for x in xs:
        add("lgamma", [x], lgamma(x), TIGHT)
    for x in negatives:
        value = lgamma(x)
        if abs(value) > 0.1:  # away from the zeros of lgamma on the negative axis
            add("lgamma", [x], value, TIGHT)
    # digamma
    xs = log_uniform(-300, -1, 12) + uniform(0.1, 1.2, 12) + uniform(1.7, 10.0, 20)
    xs += uniform(10.0, 1000.0, 12) + log_uniform(3, 300, 12)
    xs += [1.4616321449683622 + d for d in log_uniform(-15, -1, 6)]
    xs += [1.4616321449683622 - d for d in log_uniform(-15, -1, 6)]
    xs += uniform(1.2, 1.7, 12) + [1.0, 2.0, 0.5, 1.4616321449683622]
    for x in xs + uniform(-50.0, -1e-3, 30):
        value = mp.digamma(x)
        if x > 0 or abs(value) > 0.1:
            add("digamma", [x], value, GAMMA)
    # polygamma
    for n in [1, 2, 3, 4, 5, 6, 10, 20]:
        xs = log_uniform(-3, 0, 4) + uniform(0.5, 10.0, 6) + uniform(10.0, 200.0, 3)
        xs += log_uniform(3, 50, 2)
        for x in xs + uniform(-20.0, -0.1, 4):
            value = mp.polygamma(n, x)
            if x > 0 or abs(value) > 0.1:
                add("polygamma", [n, x], value, GAMMA)
    # erf and erfc
    xs = log_uniform(-300, -1, 12) + uniform(0.1, 0.5, 8) + uniform(0.5, 6.0, 30)
    xs += [0.5, 1.0, 2.0, 3.0, 5.9]
    for x in xs:
        add("erf", [x], mp.erf(x), TIGHT)
        add("erf", [-x], mp.erf(-x), TIGHT)
    xs = log_uniform(-300, -1, 8) + uniform(0.1, 6.0, 30) + uniform(6.0, 26.5, 30)
    xs += uniform(-6.0, -0.1, 10) + [0.5, 1.0, 5.0, 10.0, 20.0, 26.0]
    for x in xs:
        add("erfc", [x], mp.erfc(x), TIGHT)
    # multigammaln
    for p in [1, 2, 3, 5, 10]:
        low = (p - 1) / 2
        for x in [low + d for d in log_uniform(-3, 0, 3)] + uniform(low + 1, low + 50, 4):
            value = p * (p - 1) / mp.mpf(4) * mp.log(mp.pi)
            value += mp.fsum(lgamma(mp.mpf(x) - mp.mpf(j - 1) / 2) for j in range(1, p + 1))
            add("multigammaln", [x, p], value, TIGHT)
    return out


def render(table):
    return HEADER + "\n" + "".join("\t".join(r) + "\n" for r in table)


def main():
    if "--coefficients" in sys.argv[1:]:
        coefficients()
        return
    text = render(rows())
    if "--check" in sys.argv[1:]:
        with open(OUT) as fh:
            assert fh.read() == text, f"{OUT} is out of date; rerun without --check"
        print(f"{OUT} is up to date")
        return
    with open(OUT, "w") as fh:
        fh.write(text)
    print(f"wrote {os.path.relpath(OUT, ROOT)} ({text.count(chr(10)) - 1} rows)")


if __name__ == "__main__":
    main()

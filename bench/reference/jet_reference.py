"""Reference Taylor coefficients for tests/taylor.rs: tests/data/jet.tsv.

For every elementwise function of Epsilon's table (and the arithmetic
operators), a composition F(x) = f(u(x)) with u(x) = 0.4 + 0.3 sin(x) (so
that u stays in every function's domain), and the curve

    x(t) = 0.8 + 0.7 t - 0.3 t^2/2! + 0.2 t^3/3! + 0.1 t^4/4! - 0.05 t^5/5! + 0.02 t^6/6!

each row holds d^k/dt^k F(x(t)) at t = 0 for k = 0..6, computed in float64
by JAX: nested forward-mode derivatives of t -> F(x(t)) (a method that
does not share code with Taylor mode), checked against
jax.experimental.jet where JAX has rules for every primitive involved.

    python3 bench/reference/jet_reference.py > tests/data/jet.tsv
"""

import math
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jss  # noqa: E402
from jax.experimental import jet  # noqa: E402

X0 = 0.8
TERMS = [0.7, -0.3, 0.2, 0.1, -0.05, 0.02]
ORDER = len(TERMS)


def u(x):
    return 0.4 + 0.3 * jnp.sin(x)


def v(x):
    return 0.9 + 0.2 * jnp.cos(x)


# (name, Lisp body in x with u and v spelled out, JAX function of x)
U = "(+ 0.4 (* 0.3 (sin x)))"
V = "(+ 0.9 (* 0.2 (cos x)))"
CASES = [
    ("add", f"(+ {U} {V})", lambda x: u(x) + v(x)),
    ("sub", f"(- {U} {V})", lambda x: u(x) - v(x)),
    ("mul", f"(* {U} {V})", lambda x: u(x) * v(x)),
    ("div", f"(/ {U} {V})", lambda x: u(x) / v(x)),
    ("neg", f"(- {U})", lambda x: -u(x)),
    ("pow-const", f"(pow {U} 2.5)", lambda x: u(x) ** 2.5),
    ("pow-whole", f"(pow {U} 3)", lambda x: u(x) ** 3),
    ("pow-both", f"(pow {U} {V})", lambda x: u(x) ** v(x)),
    ("exp", f"(exp {U})", lambda x: jnp.exp(u(x))),
    ("log", f"(log {U})", lambda x: jnp.log(u(x))),
    ("log1p", f"(log1p {U})", lambda x: jnp.log1p(u(x))),
    ("expm1", f"(expm1 {U})", lambda x: jnp.expm1(u(x))),
    ("sqrt", f"(sqrt {U})", lambda x: jnp.sqrt(u(x))),
    ("sin", f"(sin {U})", lambda x: jnp.sin(u(x))),
    ("cos", f"(cos {U})", lambda x: jnp.cos(u(x))),
    ("tan", f"(tan {U})", lambda x: jnp.tan(u(x))),
    ("asin", f"(asin {U})", lambda x: jnp.arcsin(u(x))),
    ("acos", f"(acos {U})", lambda x: jnp.arccos(u(x))),
    ("atan", f"(atan {U})", lambda x: jnp.arctan(u(x))),
    ("atan2", f"(atan2 {U} {V})", lambda x: jnp.arctan2(u(x), v(x))),
    ("sinh", f"(sinh {U})", lambda x: jnp.sinh(u(x))),
    ("cosh", f"(cosh {U})", lambda x: jnp.cosh(u(x))),
    ("tanh", f"(tanh {U})", lambda x: jnp.tanh(u(x))),
    ("sigmoid", f"(sigmoid {U})", lambda x: jax.nn.sigmoid(u(x))),
    ("relu", f"(relu {U})", lambda x: jax.nn.relu(u(x))),
    ("softplus", f"(softplus {U})", lambda x: jax.nn.softplus(u(x))),
    ("abs", f"(abs (- {U}))", lambda x: jnp.abs(-u(x))),
    ("sign", f"(* (sign {U}) {V})", lambda x: jnp.sign(u(x)) * v(x)),
    ("xlogy", f"(xlogy {U} {V})", lambda x: jss.xlogy(u(x), v(x))),
    ("min", f"(min {U} {V})", lambda x: jnp.minimum(u(x), v(x))),
    ("max", f"(max {U} {V})", lambda x: jnp.maximum(u(x), v(x))),
    ("lgamma", f"(lgamma {U})", lambda x: jss.gammaln(u(x))),
    ("digamma", f"(digamma {U})", lambda x: jss.digamma(u(x))),
    ("polygamma", f"(polygamma 1 {U})", lambda x: jss.polygamma(1, u(x))),
    ("erf", f"(erf {U})", lambda x: jss.erf(u(x))),
    ("erfc", f"(erfc {U})", lambda x: jss.erfc(u(x))),
    ("square", f"(square {U})", lambda x: jnp.square(u(x))),
    ("cbrt", f"(cbrt {U})", lambda x: jnp.cbrt(u(x))),
    ("exp2", f"(exp2 {U})", lambda x: jnp.exp2(u(x))),
    ("hypot", f"(hypot {U} {V})", lambda x: jnp.hypot(u(x), v(x))),
    ("logaddexp", f"(logaddexp {U} {V})", lambda x: jnp.logaddexp(u(x), v(x))),
    ("logaddexp2", f"(logaddexp2 {U} {V})", lambda x: jnp.logaddexp2(u(x), v(x))),
    ("sinc", f"(sinc {U})", lambda x: jnp.sinc(u(x))),
    ("deg2rad", f"(deg2rad {U})", lambda x: jnp.deg2rad(u(x))),
    ("rad2deg", f"(rad2deg {U})", lambda x: jnp.rad2deg(u(x))),
    ("nested", f"(tanh (* (exp {U}) (sin (sqrt {V}))))", lambda x: jnp.tanh(jnp.exp(u(x)) * jnp.sin(jnp.sqrt(v(x))))),
]


def curve(t):
    return X0 + sum(c * t ** (k + 1) / math.factorial(k + 1) for k, c in enumerate(TERMS))


def derivatives(f):
    """d^k/dt^k f(curve(t)) at 0, k = 0..ORDER, by nested jacfwd."""
    g = lambda t: f(curve(t))  # noqa: E731
    out = []
    for _ in range(ORDER + 1):
        out.append(float(g(0.0)))
        g = jax.jacfwd(g)
    return out


def by_jet(f):
    try:
        primal, series = jet.jet(f, (X0,), ([jnp.float64(c) for c in TERMS],))
    except Exception:  # a primitive without a jet rule
        return None
    return [float(primal)] + [float(s) for s in series]


def main():
    out = sys.stdout
    out.write("# d^k/dt^k F(x(t)) at t = 0, k = 0..6: bench/reference/jet_reference.py\n")
    for name, lisp, f in CASES:
        want = derivatives(f)
        check = by_jet(f)
        if check is not None:
            for k, (a, b) in enumerate(zip(want, check)):
                assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (name, k, a, b)
        out.write("\t".join([name, lisp] + [repr(x) for x in want]) + "\n")


if __name__ == "__main__":
    main()

"""JAX reference for bench/implicit/fixed-point.lisp (issue 18's target:
the implicit gradient of a 1000-dimensional fixed point <= 3x the forward
solve). CPU, float64. The same deterministic data: x = tanh(W x + b),
solved by a `lax.while_loop` to tol 1e-10 (successive iterates relative
to 1 + max|x|); the gradient of sum(c * x*) in W and b by `jax.custom_vjp`
whose backward pass solves (I - df/dx)^T u = g with
`jax.scipy.sparse.linalg.bicgstab` (products by `jax.vjp`), as Epsilon's
rule does. Prints the forward iterations, a checksum, and the median
milliseconds of the jitted forward solve and gradient.

    JAX_PLATFORMS=cpu python3 bench/reference/fixed_point.py 1000 15
"""
import os
import sys
import time
from functools import partial

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.scipy.sparse.linalg import bicgstab  # noqa: E402

jax.config.update("jax_enable_x64", True)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
TOL = 1e-10


def scrambled(count, scale):
    k = jnp.arange(count, dtype=jnp.float64)
    return scale * 1.4142135623730951 * jnp.sin(k * k * 0.001 + k)


W = scrambled(n * n, 0.6 / n**0.5).reshape(n, n)
b = scrambled(n, 0.5)
c = scrambled(n, 1.0)
x0 = jnp.zeros(n)


def cell(x, W, b):
    return jnp.tanh(W @ x + b)


def iterate(x0, W, b):
    def cond(s):
        return s[1] > TOL

    def body(s):
        x = s[0]
        x1 = cell(x, W, b)
        return x1, jnp.max(jnp.abs(x1 - x)) / (1.0 + jnp.max(jnp.abs(x1))), s[2] + 1

    x, _, k = lax.while_loop(cond, body, (x0, jnp.asarray(TOL + 1.0), 0))
    return x, k


@partial(jax.custom_vjp)
def fixed_point(x0, W, b):
    return iterate(x0, W, b)[0]


def fixed_point_fwd(x0, W, b):
    xs = fixed_point(x0, W, b)
    return xs, (xs, W, b)


def fixed_point_bwd(res, g):
    xs, W, b = res
    _, vjp_x = jax.vjp(lambda x: cell(x, W, b), xs)
    u, _ = bicgstab(lambda v: v - vjp_x(v)[0], g, tol=TOL)
    _, vjp_p = jax.vjp(lambda W, b: cell(xs, W, b), W, b)
    dW, db = vjp_p(u)
    return jnp.zeros_like(xs), dW, db


fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)


def loss(W, b):
    return jnp.sum(c * fixed_point(x0, W, b))


forward = jax.jit(loss)
gradient = jax.jit(jax.grad(loss, argnums=(0, 1)))

print("n", n, "forward iterations", int(jax.jit(iterate)(x0, W, b)[1]))
forward(W, b).block_until_ready()
gW, gb = gradient(W, b)
gb.block_until_ready()
print("loss", float(forward(W, b)), "gradient checksum", float(jnp.sum(gW) + jnp.sum(gb)))
fs, gs = [], []
for _ in range(rounds):
    start = time.perf_counter()
    forward(W, b).block_until_ready()
    fs.append(time.perf_counter() - start)
    start = time.perf_counter()
    jax.block_until_ready(gradient(W, b))
    gs.append(time.perf_counter() - start)
fs.sort()
gs.sort()
mf, mg = fs[len(fs) // 2], gs[len(gs) // 2]
print(f"forward solve {1000 * mf:.3f} ms, gradient {1000 * mg:.3f} ms, ratio {mg / mf:.2f}")

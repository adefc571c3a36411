"""The Laplacian of the tanh MLP of bench/taylor/laplacian.lisp in JAX (CPU,
float64), by folx's forward Laplacian (jit(vmap(forward_laplacian(f))))
and by jit(vmap(trace(hessian(f)))), and the gradient of the PINN-style
loss mean(laplacian(x)^2) over the batch through folx. Same sizes (64-256-
256-1), parameters and points. Prints checksums and the median seconds of
`rounds` calls after the first. Needs folx (`pip install folx`).

    JAX_PLATFORMS=cpu python3 bench/reference/laplacian.py 256 5
"""

import sys
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
import folx  # noqa: E402


def init_layer(n_in, n_out, k):
    w = (1.0 / jnp.sqrt(n_in)) * jnp.sin(0.37 * (k + jnp.arange(n_in * n_out, dtype=jnp.float64)))
    b = 0.01 * jnp.cos(0.11 * jnp.arange(n_out, dtype=jnp.float64))
    return (w.reshape(n_in, n_out), b)


def mlp(p, x):
    h1 = jnp.tanh(x @ p[0][0] + p[0][1])
    h2 = jnp.tanh(h1 @ p[1][0] + p[1][1])
    return jnp.sum(h2 @ p[2][0] + p[2][1])


def folx_laplacian(p, x):
    return folx.forward_laplacian(lambda y: mlp(p, y))(x).laplacian


def hessian_laplacian(p, x):
    return jnp.trace(jax.hessian(lambda y: mlp(p, y))(x))


def timed(name, f, checksum):
    out = f()
    jax.block_until_ready(out)
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"{name} checksum {checksum(out)} seconds {times[len(times) // 2]:.6f}")


def main():
    global ROUNDS
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    params = [init_layer(64, 256, 1), init_layer(256, 256, 2), init_layer(256, 1, 3)]
    xs = jnp.sin(0.013 * jnp.arange(64 * batch, dtype=jnp.float64)).reshape(batch, 64)
    by_folx = jax.jit(jax.vmap(folx_laplacian, in_axes=(None, 0)))
    by_hessian = jax.jit(jax.vmap(hessian_laplacian, in_axes=(None, 0)))

    def pinn_loss(p):
        return jnp.mean(jax.vmap(folx_laplacian, in_axes=(None, 0))(p, xs) ** 2)

    pinn_grad = jax.jit(jax.grad(pinn_loss))
    total = lambda out: float(jnp.sum(out))  # noqa: E731
    timed("folx", lambda: by_folx(params, xs), total)
    timed("hessian", lambda: by_hessian(params, xs), total)
    timed("pinn-grad", lambda: pinn_grad(params),
          lambda g: sum(float(jnp.sum(w) + jnp.sum(b)) for (w, b) in g))
    # The one product the collapsed Laplacian cannot avoid: each point's
    # 64 first-order terms times the second layer's weights.
    tangents = jnp.sin(0.37 * jnp.arange(64 * batch * 256, dtype=jnp.float64)).reshape(64 * batch, 256)
    product = jax.jit(lambda a, b: a @ b)
    timed("product", lambda: product(tangents, params[1][0]), total)


if __name__ == "__main__":
    main()

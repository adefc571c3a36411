"""Per-example gradients of the multilayer perceptron of
bench/vmap/per-example.lisp in JAX (CPU, float64):
jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))), the same sizes
(64-256-256-10), parameters and data. Prints a checksum and the median
seconds of `rounds` calls after the first.

    JAX_PLATFORMS=cpu python3 bench/reference/per_example.py 128 15
"""

import sys
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)


def init_layer(n_in, n_out, k):
    w = (1.0 / jnp.sqrt(n_in)) * jnp.sin(0.37 * (k + jnp.arange(n_in * n_out, dtype=jnp.float64)))
    b = 0.01 * jnp.cos(0.11 * jnp.arange(n_out, dtype=jnp.float64))
    return (w.reshape(n_in, n_out), b)


def forward(p, x):
    h1 = jnp.tanh(x @ p[0][0] + p[0][1])
    h2 = jnp.tanh(h1 @ p[1][0] + p[1][1])
    return h2 @ p[2][0] + p[2][1]


def loss(p, x, y):
    return -jnp.sum(y * jax.nn.log_softmax(forward(p, x)))


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    params = [init_layer(64, 256, 1), init_layer(256, 256, 2), init_layer(256, 10, 3)]
    xs = jnp.sin(0.013 * jnp.arange(64 * batch, dtype=jnp.float64)).reshape(batch, 64)
    ys = jax.nn.one_hot(jnp.arange(batch) % 10, 10, dtype=jnp.float64)
    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    g = per_example(params, xs, ys)
    jax.block_until_ready(g)
    checksum = sum(float(jnp.sum(w) + jnp.sum(b)) for (w, b) in g)
    print(f"batch {batch} checksum {checksum}")
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        jax.block_until_ready(per_example(params, xs, ys))
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"seconds {times[len(times) // 2]:.6f}")


if __name__ == "__main__":
    main()

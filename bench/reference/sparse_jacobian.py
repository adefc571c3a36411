"""Dense Jacobians and Hessians of the 1-D diffusion problem of
bench/sparse/stencil.lisp in JAX (CPU, float64), for issue 19's sparse
derivative benchmark. JAX has no sparse Jacobian: `jax.jacfwd` pushes one
tangent per column (batched by vmap), `jax.hessian` is forward over
reverse with one direction per column. Each is jitted; prints the first
call's seconds (compilation included) and the median of `rounds` later
calls, with the checksum of the non-zeros.

    JAX_PLATFORMS=cpu python3 bench/reference/sparse_jacobian.py 2000 9

At n = 10^5 the dense matrices would hold 10^10 numbers (80 GB): not run.
"""

import sys
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)


def residual(u):
    return jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u + 0.1 * u * u


def energy(u):
    d = jnp.roll(u, -1) - u
    return jnp.sum(0.5 * d * d + 0.025 * u * u * u * u)


def measure(name, f, u, rounds):
    start = time.perf_counter()
    result = f(u).block_until_ready()
    first = time.perf_counter() - start
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        f(u).block_until_ready()
        times.append(time.perf_counter() - start)
    times.sort()
    print(
        f"{name} n {u.shape[0]} checksum {float(jnp.sum(result))} "
        f"first {first:.6f} seconds {times[len(times) // 2]:.6f}"
    )


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    u = jnp.sin(0.001 * jnp.arange(n, dtype=jnp.float64))
    measure("jax-jacfwd", jax.jit(jax.jacfwd(residual)), u, rounds)
    measure("jax-hessian", jax.jit(jax.hessian(energy)), u, rounds)


if __name__ == "__main__":
    main()

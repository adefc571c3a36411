"""JAX reference for Epsilon's W4: heat equation, N = 10^4, T = 10^4, the
gradient of sum(u_T^2) with respect to u_0 and alpha (CPU, float64).

Run one variant per process, under /usr/bin/time for the peak RSS:

    JAX_PLATFORMS=cpu /usr/bin/time -v python3 bench/reference/heat_w4.py scan
    JAX_PLATFORMS=cpu /usr/bin/time -v python3 bench/reference/heat_w4.py checkpoint

`scan` is lax.scan (its reverse keeps every step's residuals); `checkpoint`
wraps the step in jax.checkpoint (the reverse recomputes each step from the
stored state); `nested` checkpoints blocks of sqrt(T) steps (100 blocks of
100: each block's states are recomputed in the reverse); `forward` times the jitted loss alone. Prints the loss, the gradient's checksums (to compare with
bench/numeric/w4-heat.lisp) and the time of three gradient calls after a
compiling one.
"""
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # JAX_PLATFORMS=cuda times the GPU

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

variant = sys.argv[1] if len(sys.argv) > 1 else "scan"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
T = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
ALPHA = 0.25
i = jnp.arange(N, dtype=jnp.float64)
u0 = jnp.sin(2 * jnp.pi * i / N) + 0.5 * jnp.exp(-(((i - N / 3) / (N / 50)) ** 2))


def step(carry, _):
    u, a = carry
    return (u + a * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)), a), None


body = jax.checkpoint(step) if variant == "checkpoint" else step


def loss(u0, a):
    if variant == "nested":
        # Two-level checkpointing: sqrt(T) blocks of sqrt(T) steps, each
        # block a jax.checkpoint of its inner scan (its states recomputed
        # in the reverse), as revolve with sqrt(T) snapshots would.
        block = int(round(T**0.5))
        assert block * block == T, "nested takes a square T"

        @jax.checkpoint
        def inner(carry, _):
            return lax.scan(step, carry, None, length=block)[0], None

        (u, _), _ = lax.scan(inner, (u0, a), None, length=block)
    else:
        (u, _), _ = lax.scan(body, (u0, a), None, length=T)
    return jnp.sum(u**2)


if variant == "forward":
    forward = jax.jit(loss)

    def g(u0, a):
        return forward(u0, a), jnp.float64(0.0)
else:
    g = jax.jit(jax.grad(loss, argnums=(0, 1)))
gu, ga = jax.block_until_ready(g(u0, ALPHA))
print(f"variant={variant} N={N} T={T} loss={float(loss(u0, ALPHA))!r} "
      f"grad_u0_sum={float(jnp.sum(gu))!r} grad_alpha={float(ga)!r}", flush=True)
for _ in range(3):
    t0 = time.perf_counter()
    jax.block_until_ready(g(u0, ALPHA))
    print(f"seconds={time.perf_counter() - t0:.4f}", flush=True)

"""JAX reference for bench/loops/lstm.lisp (issue 17's LSTM targets), CPU,
float64: the same deterministic data and parameters, `lax.scan` over the
sequence, `jax.jit(jax.grad(...))`. Prints the loss, the gradient checksum
and the seconds of `--runs` gradient calls after a compiling one.

    JAX_PLATFORMS=cpu python3 bench/reference/lstm.py adbench 5
    JAX_PLATFORMS=cpu python3 bench/reference/lstm.py char 5
"""
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

model = sys.argv[1] if len(sys.argv) > 1 else "adbench"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def wave(shape, scale):
    n = 1
    for s in shape:
        n *= s
    return scale * jnp.sin(jnp.arange(n, dtype=jnp.float64).reshape(shape))


def pattern(length, width):
    return (7 * jnp.arange(length) + 3) % width


def one_hot(ids, width):
    return (ids[..., None] == jnp.arange(width)).astype(jnp.float64)


def adbench_layer(w, b, h, c, x):
    gates = (jnp.concatenate([x, h, x, h]) * w + b).reshape(4, h.shape[0])
    cell = c * jax.nn.sigmoid(gates[0]) + jax.nn.sigmoid(gates[1]) * jnp.tanh(gates[3])
    return jax.nn.sigmoid(gates[2]) * jnp.tanh(cell), cell


def adbench_loss(main, extra, state, sequence):
    c, b = sequence.shape

    def step(s, row):
        x_in, gold = row
        x = x_in * extra[0]
        h1, c1 = adbench_layer(main[0], main[1], s[0], s[1], x)
        h2, c2 = adbench_layer(main[2], main[3], s[2], s[3], h1)
        ypred = h2 * extra[1] + extra[2]
        return (h1, c1, h2, c2), jnp.sum(gold * (ypred - jax.nn.logsumexp(ypred)))

    _, ys = lax.scan(step, (state[0], state[1], state[2], state[3]),
                     (sequence[:-1], sequence[1:]))
    return -jnp.sum(ys) / ((c - 1) * b)


def char_loss(wx, wh, bias, wo, inputs, targets):
    batch, hidden = inputs.shape[1], wh.shape[0]

    def step(s, row):
        x, target = row
        h, cell = s
        g = (x @ wx + h @ wh + bias).reshape(batch, 4, hidden)
        cell = cell * jax.nn.sigmoid(g[:, 0]) + jax.nn.sigmoid(g[:, 1]) * jnp.tanh(g[:, 3])
        h = jax.nn.sigmoid(g[:, 2]) * jnp.tanh(cell)
        logits = h @ wo
        return (h, cell), jnp.sum(target * (logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)))

    zero = jnp.zeros((batch, hidden))
    _, ys = lax.scan(step, (zero, zero), (inputs, targets))
    return -jnp.sum(ys) / (inputs.shape[0] * batch)


if model == "adbench":
    l, c, b = 2, 1024, 14
    args = (wave((2 * l, 4 * b), 0.5), wave((3, b), 0.5), wave((2 * l, b), 0.1),
            one_hot(pattern(c, b), b))
    loss, wrt = adbench_loss, (0, 1)
else:
    T, B, H, V = 512, 32, 256, 64
    tokens = one_hot(pattern((T + 1) * B, V).reshape(T + 1, B), V)
    args = (wave((V, 4 * H), 0.1), wave((H, 4 * H), 0.05), wave((4 * H,), 0.1),
            wave((H, V), 0.1), tokens[:T], tokens[1:])
    loss, wrt = char_loss, (0, 1, 2, 3)

g = jax.jit(jax.grad(loss, argnums=wrt))
grads = jax.block_until_ready(g(*args))
print(f"{model} loss {float(loss(*args))!r}")
print(f"{model} gradient checksum {float(sum(jnp.sum(x) for x in grads))!r}")
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    jax.block_until_ready(g(*args))
    times.append(time.perf_counter() - t0)
print(f"{model} seconds {times}")

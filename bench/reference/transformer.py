"""One training step of the transformer language model of
bench/transformer/train-step.lisp in JAX on the CPU: the same sizes (4
pre-norm layers of width 256, 4 causal heads, a 256-1024-256 tanh-GELU
perceptron, vocabulary 64, batch 32 of 128 tokens), parameters, data,
loss and Adam step (optax's defaults: b1 0.9, b2 0.999, eps 1e-8, written
out here), jitted as one function. Prints the first loss, the loss after
the timed steps and the median seconds of `rounds` steps after the
first.

    JAX_PLATFORMS=cpu python3 bench/reference/transformer.py 5 float64
    JAX_PLATFORMS=cpu python3 bench/reference/transformer.py 5 float32
"""

import sys
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

LAYERS, WIDTH, HEADS, HIDDEN, VOCAB, SEQ, BATCH = 4, 256, 4, 1024, 64, 128, 32
HEAD = WIDTH // HEADS


def table(rows, cols, k, scale, dtype):
    x = scale * jnp.sin(0.7 * (k + jnp.arange(rows * cols, dtype=jnp.float64)))
    return x.reshape(rows, cols).astype(dtype)


def make_params(dtype):
    s = 1.0 / jnp.sqrt(WIDTH)

    def layer(l):
        return [
            table(WIDTH, WIDTH, 10 * l + 1, s, dtype),
            table(WIDTH, WIDTH, 10 * l + 2, s, dtype),
            table(WIDTH, WIDTH, 10 * l + 3, s, dtype),
            table(WIDTH, WIDTH, 10 * l + 4, s, dtype),
            table(WIDTH, HIDDEN, 10 * l + 5, s, dtype),
            jnp.zeros(HIDDEN, dtype),
            table(HIDDEN, WIDTH, 10 * l + 6, 1.0 / jnp.sqrt(HIDDEN), dtype),
            jnp.zeros(WIDTH, dtype),
        ]

    return [
        table(VOCAB, WIDTH, 101, 0.1, dtype),
        table(SEQ, WIDTH, 102, 0.1, dtype),
        [layer(l) for l in range(LAYERS)],
        table(WIDTH, VOCAB, 103, 1.0 / jnp.sqrt(WIDTH), dtype),
    ]


def layer_norm(x, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    c = x - mu
    var = jnp.mean(c * c, axis=-1, keepdims=True)
    return c / jnp.sqrt(var + eps)


def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def split_heads(x):
    return x.reshape(BATCH, SEQ, HEADS, HEAD).transpose(0, 2, 1, 3)


def merge_heads(x):
    return x.transpose(0, 2, 1, 3).reshape(BATCH, SEQ, WIDTH)


def self_attention(p, x, causal):
    q, k, v = (split_heads(x @ p[i]) for i in range(3))
    scores = (q @ k.transpose(0, 1, 3, 2)) / jnp.sqrt(HEAD).astype(x.dtype)
    masked = jnp.where(causal, scores, -1e9)
    return merge_heads(jax.nn.softmax(masked, axis=-1) @ v) @ p[3]


def layer(p, x, causal):
    h = x + self_attention(p, layer_norm(x), causal)
    f = gelu(layer_norm(h) @ p[4] + p[5]) @ p[6] + p[7]
    return h + f


def loss(params, inputs, targets, causal):
    x = params[0][inputs] + params[1]
    for p in params[2]:
        x = layer(p, x, causal)
    logits = (layer_norm(x) @ params[3]).reshape(BATCH * SEQ, VOCAB)
    return -jnp.mean(jnp.sum(targets * jax.nn.log_softmax(logits, axis=-1), axis=-1))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    dtype = jnp.float32 if (len(sys.argv) > 2 and sys.argv[2] == "float32") else jnp.float64
    params = make_params(dtype)
    tokens = (7 * jnp.arange(BATCH * (SEQ + 1)).reshape(BATCH, SEQ + 1) + 3) % VOCAB
    inputs = tokens[:, :SEQ]
    targets = jax.nn.one_hot(tokens[:, 1:].reshape(-1), VOCAB, dtype=dtype)
    causal = jnp.tril(jnp.ones((SEQ, SEQ), dtype=bool))
    lr, b1, b2, eps = 0.001, 0.9, 0.999, 1e-8

    @jax.jit
    def train_step(params, m, v, t):
        value, grads = jax.value_and_grad(loss)(params, inputs, targets, causal)
        t = t + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        mhat = jax.tree.map(lambda m: m / (1 - b1**t), m)
        vhat = jax.tree.map(lambda v: v / (1 - b2**t), v)
        params = jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + eps), params, mhat, vhat)
        return value, params, m, v, t

    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)
    t = jnp.array(0, dtype)
    value, params, m, v, t = train_step(params, m, v, t)
    jax.block_until_ready(params)
    print(f"{jnp.dtype(dtype).name} first loss {float(value)}")
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        value, params, m, v, t = train_step(params, m, v, t)
        jax.block_until_ready(params)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"loss after {rounds + 1} steps {float(value)}")
    print(f"seconds {times[len(times) // 2]:.4f}")


if __name__ == "__main__":
    main()

"""JAX reference for Epsilon's numeric workloads W1, W2, W5 and W6 (CPU, float64).

Tested with jax 0.10.2, jaxlib 0.10.2, numpy 2.4.6, Python 3.11.7
(`python3 -m pip install "jax[cpu]"`).

Run: JAX_PLATFORMS=cpu python3 bench/reference/numeric_workloads.py [W1 W2 W5 W6] [--json]

Every measured function is jitted and called once (compile + warm-up) before
timing; each timed call ends in block_until_ready. A measurement repeats until it
has at least --min-reps calls and --min-time seconds (capped at --max-reps calls)
and reports the median and the minimum in milliseconds. Output, one line each:

    W1 grad  median_ms=... min_ms=... reps=...
    W1 value f=... grad_sum=...

The `value` lines are for checking Epsilon's results. W2 and W5 draw their data
from numpy's default_rng (PCG64) with a fixed seed, so only JAX and NumPy
reproduce those numbers exactly; W1 and W6 use closed-form data.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # JAX_PLATFORMS=cuda times the GPU

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jaxlib  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)

SEED = 0
RESULTS = []  # dicts: {"workload", "name", ...}
OPTS = None


def emit(workload, name, **fields):
    RESULTS.append({"workload": workload, "name": name, **fields})
    if not OPTS.json:
        parts = " ".join(f"{k}={fmt(v)}" for k, v in fields.items())
        print(f"{workload} {name:<6} {parts}", flush=True)


def fmt(v):
    return repr(v) if isinstance(v, float) else str(v)  # floats round-trip exactly


def bench(workload, name, fn, *args):
    """Compile and warm up fn(*args), then time repeated calls."""
    jax.block_until_ready(fn(*args))
    times = []
    start = time.perf_counter()
    while len(times) < OPTS.max_reps:
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
        if len(times) >= OPTS.min_reps and time.perf_counter() - start >= OPTS.min_time:
            break
    ms = [t * 1e3 for t in times]
    med, lo = statistics.median(ms), min(ms)
    emit(workload, name, median_ms=round(med, 4), min_ms=round(lo, 4), reps=len(ms))
    return med


# ---------------------------------------------------------------- W1 Rosenbrock

def rosenbrock(x):
    a, b = x[:-1], x[1:]
    return jnp.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)


def rosenbrock_grad_np(x):
    """Hand-written gradient, to check jax.grad."""
    a, b = x[:-1], x[1:]
    r = b - a * a
    g = np.zeros_like(x)
    g[:-1] += -400.0 * r * a - 2.0 * (1.0 - a)
    g[1:] += 200.0 * r
    return g


def w1():
    n = 10**6
    x = jnp.linspace(-1.0, 1.0, n, dtype=jnp.float64)
    f = jax.jit(rosenbrock)
    g = jax.jit(jax.grad(rosenbrock))
    vg = jax.jit(jax.value_and_grad(rosenbrock))
    t_f = bench("W1", "f", f, x)
    t_g = bench("W1", "grad", g, x)
    # grad alone never forms the sum (XLA drops the unused value), so it is a
    # parallel elementwise map and can beat f; value_and_grad keeps the reduction.
    t_vg = bench("W1", "vgrad", vg, x)
    emit("W1", "ratio", grad_over_f=round(t_g / t_f, 3), vgrad_over_f=round(t_vg / t_f, 3))
    gx = np.asarray(g(x))
    err = float(np.max(np.abs(gx - rosenbrock_grad_np(np.asarray(x)))))
    emit("W1", "value", n=n, f=float(f(x)), grad_sum=float(gx.sum()),
         grad_norm=float(np.linalg.norm(gx)), grad_0=float(gx[0]),
         max_err_vs_hand=err)


# ------------------------------------------------------------ W2 MLP train step

LR = 0.01
SIZES = (784, 512, 512, 10)
BATCH = 256


def mlp_loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h = jnp.tanh(x @ w1 + b1)
    h = jnp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=1))


def mlp_step(params, x, y):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
    new = tuple(p - LR * g for p, g in zip(params, grads))
    return new, loss


def w2():
    rng = np.random.default_rng(SEED)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        params.append(jnp.asarray(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)))
        params.append(jnp.zeros(fan_out, dtype=jnp.float64))
    params = tuple(params)
    x = jnp.asarray(rng.standard_normal((BATCH, SIZES[0])))
    labels = rng.integers(0, SIZES[-1], size=BATCH)
    y = jnp.asarray(np.eye(SIZES[-1])[labels])
    loss = jax.jit(mlp_loss)
    step = jax.jit(mlp_step)
    t_l = bench("W2", "loss", loss, params, x, y)
    t_s = bench("W2", "step", step, params, x, y)
    emit("W2", "ratio", step_over_loss=round(t_s / t_l, 3))
    new, l0 = step(params, x, y)
    grad_sum = sum(float(jnp.sum(p - q)) for p, q in zip(params, new)) / LR
    emit("W2", "value", loss=float(l0), loss_after_step=float(loss(new, x, y)),
         grad_sum=grad_sum)


# ------------------------------------------------------------ W5 dense Hessian

def w5_f(x, a):
    return jax.nn.logsumexp(a @ x) + 0.5 * jnp.dot(x, x)


def w5():
    m, n = 400, 200
    rng = np.random.default_rng(SEED)
    a = jnp.asarray(rng.standard_normal((m, n)))
    x = jnp.linspace(-0.1, 0.1, n, dtype=jnp.float64)
    hess = jax.jit(jax.hessian(w5_f))
    bench("W5", "hess", hess, x, a)
    h = np.asarray(hess(x, a))
    # Closed form: H = A^T (diag(p) - p p^T) A + I, p = softmax(A x).
    an = np.asarray(a)
    z = an @ np.asarray(x)
    p = np.exp(z - z.max())
    p /= p.sum()
    h_ref = an.T @ (np.diag(p) - np.outer(p, p)) @ an + np.eye(n)
    emit("W5", "value", f=float(jax.jit(w5_f)(x, a)), hess_trace=float(np.trace(h)),
         hess_sum=float(h.sum()), max_err_vs_closed_form=float(np.max(np.abs(h - h_ref))))


# ------------------------------------------------------------ W6 logistic map

K = 10**5
X0 = 0.3
R = 2.9


def logistic_final(r):
    return lax.fori_loop(0, K, lambda i, x: r * x * (1.0 - x), jnp.float64(X0))


def w6():
    r = jnp.float64(R)
    f = jax.jit(logistic_final)
    fwd = jax.jit(lambda r: jax.jvp(logistic_final, (r,), (jnp.float64(1.0),)))
    rev = jax.jit(jax.grad(logistic_final))
    t_f = bench("W6", "f", f, r)
    t_fwd = bench("W6", "fwd", fwd, r)
    t_rev = bench("W6", "rev", rev, r)
    emit("W6", "ratio", fwd_over_f=round(t_fwd / t_f, 3), rev_over_f=round(t_rev / t_f, 3))
    xk, d_fwd = fwd(r)
    # x_K converges to the fixed point 1 - 1/r, whose derivative is 1/r^2.
    emit("W6", "value", K=K, x_K=float(xk), dxK_dr_fwd=float(d_fwd),
         dxK_dr_rev=float(rev(r)), fixed_point_deriv=1.0 / R**2)


WORKLOADS = {"W1": w1, "W2": w2, "W5": w5, "W6": w6}


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", metavar="W", help="subset of " + " ".join(WORKLOADS))
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    ap.add_argument("--min-reps", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("--max-reps", type=int, default=1000)
    OPTS = ap.parse_args()
    chosen = [w.upper() for w in OPTS.workloads] or list(WORKLOADS)
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {' '.join(unknown)}; choose from {' '.join(WORKLOADS)}")

    meta = {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "threads_available": len(os.sched_getaffinity(0)),
        "x64": bool(jax.config.jax_enable_x64),
    }
    if not OPTS.json:
        print(" ".join(f"{k}={v}" for k, v in meta.items() if k != "devices"), flush=True)
    for w in chosen:
        WORKLOADS[w]()
    if OPTS.json:
        print(json.dumps({"meta": meta, "results": RESULTS}, indent=1))


if __name__ == "__main__":
    main()

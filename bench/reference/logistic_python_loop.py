"""JAX reference for `bench/interpreter/logistic.lisp`: the gradient of the
logistic map x <- r x (1 - x), x0 = 0.3, r = 2.9, written as a plain Python
`for` loop (which JAX unrolls when it traces, as Epsilon unrolls the Lisp
`while` loop), next to the same map as `lax.fori_loop` (CPU, float64).

Run: JAX_PLATFORMS=cpu python3 bench/reference/logistic_python_loop.py [K ...]

For each K (default 1000 and 10000; 100000 takes minutes) it prints, in ms:
- `grad` first call: `jax.grad(f)(r)`, no `jit` (the loop runs op by op
  under JAX's tracers; every call is a first call);
- `jit(grad)` first call: trace, lower and compile the unrolled program,
  then run it (skipped past K = 2000 unless `--compile-large` is given:
  it took 16 s at K = 1000 on the 2-core machine of BENCHMARKS.md);
- `jit(grad)` later calls: median of 20;
- `fori_loop` `jit(grad)` first call and the median of 20 later calls.
The gradients are printed too (all agree to rounding).
"""

import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

R = 2.9
X0 = 0.3


def unrolled(k):
    def f(r):
        x = jnp.float64(X0)
        for _ in range(k):
            x = r * x * (1.0 - x)
        return x

    return f


def looped(k):
    def f(r):
        return lax.fori_loop(0, k, lambda i, x: r * x * (1.0 - x), jnp.float64(X0))

    return f


def ms(thunk):
    start = time.perf_counter()
    value = thunk()
    jax.block_until_ready(value)
    return 1000.0 * (time.perf_counter() - start), value


def later(fn, r):
    times = [ms(lambda: fn(r))[0] for _ in range(20)]
    return statistics.median(times)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    compile_large = "--compile-large" in sys.argv
    ks = [int(a) for a in args] or [1_000, 10_000]
    r = jnp.float64(R)
    for k in ks:
        t_grad, g_grad = ms(lambda: jax.grad(unrolled(k))(r))
        print(f"K={k} grad (no jit), Python loop, first call: {t_grad:.1f} ms, d x_K / d r = {float(g_grad)}")
        if k <= 2_000 or compile_large:
            jitted = jax.jit(jax.grad(unrolled(k)))
            t_first, g_jit = ms(lambda: jitted(r))
            print(f"K={k} jit(grad), Python loop, first call: {t_first:.1f} ms, later calls {later(jitted, r):.3f} ms, d x_K / d r = {float(g_jit)}")
        scanned = jax.jit(jax.grad(looped(k)))
        t_scan, g_scan = ms(lambda: scanned(r))
        print(f"K={k} jit(grad), fori_loop, first call: {t_scan:.1f} ms, later calls {later(scanned, r):.3f} ms, d x_K / d r = {float(g_scan)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

"""JAX and NumPy references for Epsilon's array benchmarks (issue 16, item 4).

Tested with jax 0.10.2, jaxlib 0.10.2, numpy 2.4.6, Python 3.11.7, on the CPU
in float64.

Run:
    JAX_PLATFORMS=cpu python3 bench/reference/array_workloads.py [FILTER ...]
    python3 bench/reference/array_workloads.py --compare CRITERION_DIR JAX_OUTPUT...

Cases (the same names as `benches/arrays.rs`, whose criterion ids are
`arrays_<kind>/<case>` with `<kind>` one of `jit`, `eager`):

- `reduce/<op>/<shape>/<axes>`: `jnp.sum mean max min prod` and
  `jax.nn.logsumexp` over the axes (joined by `+`), jitted, of
  x = 1 + 0.001 sin(i) (i the row-major index; values near 1 so that `prod`
  neither underflows nor overflows). Shapes 1000x1000, 100x100x100,
  1000000x8, 8x1000000, 4096x256.
- `reduce_grad/<op>/<shape>/<axes>`: `jit(grad(lambda x: sum(op(x, axes)**2)))`:
  the forward reduction and the broadcast of its cotangent.
- `matmul/<a>@<b>`: `jnp.matmul`, jitted; batched stacks, a broadcast batch
  and plain matrices (`t` in a name: the first operand transposed inside the
  function). `matmul_grad/...`: gradient of `sum(a @ b)` in both operands.
- `gather/<rows>x<cols>`: `np.take(t, idx, axis=0)` (NumPy) and `t[idx]`
  jitted (JAX), idx 10^6 random rows (numpy default_rng(0)).
- `scatter_add/<rows>x<cols>`: `np.add.at(t, idx, u)` (in place, as NumPy
  does it), the faster NumPy idiom `t + bincount(idx, u[:, j])` per column
  (a new array, as Epsilon's `scatter-add` gives), and JAX
  `t.at[idx].add(u)` jitted.

Each case is warmed up (compiled) first, then timed until it has at least
--min-reps calls and --min-time seconds (at most --max-reps); one line each:

    jax   reduce/sum/1000x1000/1  median_ms=... min_ms=... reps=...

`--compare` reads criterion's estimates (`<dir>/<group>/<case>/new/estimates.json`,
the median; `--baseline A,B` reads baselines saved with `--save-baseline A` and `B`, the median over them) and one or more saved outputs of this script (the median over
them of each case's median), and prints a Markdown table of Epsilon / reference.
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

OPTS = None

REDUCE_SHAPES = [
    ((1000, 1000), [(0,), (1,)]),
    ((100, 100, 100), [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2)]),
    ((1000000, 8), [(0,), (1,)]),
    ((8, 1000000), [(0,), (1,)]),
    ((4096, 256), [(0,), (1,)]),
]
REDUCE_OPS = ["sum", "mean", "max", "min", "prod", "logsumexp"]
GRAD_CASES = [
    ("sum", (1000, 1000), (0,)),
    ("sum", (1000, 1000), (1,)),
    ("sum", (100, 100, 100), (1,)),
    ("sum", (1000000, 8), (1,)),
    ("sum", (8, 1000000), (1,)),
    ("sum", (4096, 256), (1,)),
    ("logsumexp", (4096, 256), (1,)),
]
MATMUL_CASES = [
    ((64, 128, 128), (64, 128, 128), False),
    ((1000, 10, 10), (1000, 10, 10), False),
    ((32, 256, 64), (64, 32), False),
    ((8, 512, 512), (8, 512, 512), False),
    ((512, 512), (512, 512), False),
    ((1000, 1000), (1000, 1000), False),
    ((512, 512), (512, 512), True),
]
MATMUL_GRAD_CASES = [((64, 128, 128), (64, 128, 128)), ((1000, 10, 10), (1000, 10, 10))]
INDEX_SHAPES = [(1000000, 8), (1000000, 3)]


def shape_name(shape):
    return "x".join(str(d) for d in shape)


def axes_name(axes):
    return "+".join(str(a) for a in axes)


def reduce_case(kind, op, shape, axes):
    return f"{kind}/{op}/{shape_name(shape)}/{axes_name(axes)}"


def matmul_case(a, b, ta):
    return f"matmul/{'t' if ta else ''}{shape_name(a)}@{shape_name(b)}"


def data(shape):
    """1 + 0.001 sin(i) over the row-major index i (the bench builds the same)."""
    n = int(np.prod(shape))
    return (1.0 + 0.001 * np.sin(np.arange(n, dtype=np.float64))).reshape(shape)


def emit(side, case, times):
    ms = [t * 1e3 for t in times]
    med, lo = statistics.median(ms), min(ms)
    print(f"{side:<5} {case:<40} median_ms={med:.4f} min_ms={lo:.4f} reps={len(ms)}", flush=True)


def timed(side, case, fn, block=lambda r: r):
    """Warm up fn() once, then time it."""
    block(fn())
    times = []
    start = time.perf_counter()
    while len(times) < OPTS.max_reps:
        t0 = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - t0)
        if len(times) >= OPTS.min_reps and time.perf_counter() - start >= OPTS.min_time:
            break
    emit(side, case, times)


def wanted(case):
    return not OPTS.filters or any(f in case for f in OPTS.filters)


def run_jax():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    block = jax.block_until_ready
    print(f"# jax {jax.__version__} numpy {np.__version__} devices {jax.devices()}", flush=True)

    def reducer(op, axes):
        if op == "logsumexp":
            return lambda x: jax.nn.logsumexp(x, axis=axes)
        f = getattr(jnp, op)
        return lambda x: f(x, axis=axes)

    for shape, axes_list in REDUCE_SHAPES:
        if not any(wanted(reduce_case("reduce", op, shape, a)) for op in REDUCE_OPS for a in axes_list):
            continue
        x = jnp.asarray(data(shape))
        for axes in axes_list:
            for op in REDUCE_OPS:
                case = reduce_case("reduce", op, shape, axes)
                if wanted(case):
                    f = jax.jit(reducer(op, axes))
                    timed("jax", case, lambda: f(x), block)
    for op, shape, axes in GRAD_CASES:
        case = reduce_case("reduce_grad", op, shape, axes)
        if wanted(case):
            x = jnp.asarray(data(shape))
            red = reducer(op, axes)
            g = jax.jit(jax.grad(lambda x: jnp.sum(red(x) ** 2)))
            timed("jax", case, lambda: g(x), block)

    for a_shape, b_shape, ta in MATMUL_CASES:
        case = matmul_case(a_shape, b_shape, ta)
        if wanted(case):
            a, b = jnp.asarray(data(a_shape)), jnp.asarray(data(b_shape))
            f = jax.jit((lambda a, b: jnp.matmul(a.T, b)) if ta else jnp.matmul)
            timed("jax", case, lambda: f(a, b), block)
    for a_shape, b_shape in MATMUL_GRAD_CASES:
        case = "matmul_grad/" + matmul_case(a_shape, b_shape, False).split("/", 1)[1]
        if wanted(case):
            a, b = jnp.asarray(data(a_shape)), jnp.asarray(data(b_shape))
            g = jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.matmul(a, b)), argnums=(0, 1)))
            timed("jax", case, lambda: g(a, b), block)

    rng = np.random.default_rng(0)
    for shape in INDEX_SHAPES:
        t = jnp.asarray(data(shape))
        idx = jnp.asarray(rng.integers(0, shape[0], shape[0]))
        u = jnp.asarray(data(shape))
        case = f"gather/{shape_name(shape)}"
        if wanted(case):
            f = jax.jit(lambda t, idx: t[idx])
            timed("jax", case, lambda: f(t, idx), block)
        case = f"scatter_add/{shape_name(shape)}"
        if wanted(case):
            f = jax.jit(lambda t, idx, u: t.at[idx].add(u))
            timed("jax", case, lambda: f(t, idx, u), block)


def run_numpy():
    print(f"# numpy {np.__version__}", flush=True)
    rng = np.random.default_rng(0)
    for shape in INDEX_SHAPES:
        t = data(shape)
        idx = rng.integers(0, shape[0], shape[0])
        u = data(shape)
        case = f"gather/{shape_name(shape)}"
        if wanted(case):
            timed("numpy", case, lambda: np.take(t, idx, axis=0))
        case = f"scatter_add/{shape_name(shape)}"
        if wanted(case):
            target = t.copy()
            timed("numpy", case, lambda: np.add.at(target, idx, u))

            def bincount():
                added = np.stack(
                    [np.bincount(idx, weights=u[:, j], minlength=shape[0]) for j in range(shape[1])],
                    axis=1,
                )
                return t + added

            check = t.copy()
            np.add.at(check, idx, u)
            assert np.allclose(bincount(), check)
            timed("np-bc", case, bincount)


def compare(criterion_dir, outputs, baseline):
    """Markdown table: Epsilon's criterion medians against the reference medians."""
    ref = {}
    for path in outputs:
        with open(path) as f:
            for line in f:
                m = re.match(r"(\S+)\s+(\S+)\s+median_ms=([0-9.]+)", line)
                if m:
                    ref.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
    ref = {k: statistics.median(v) for k, v in ref.items()}
    eps = {}
    baselines = baseline.split(",")
    for kind in ("jit", "eager"):
        group_dir = os.path.join(criterion_dir, f"arrays_{kind}")
        for root, _dirs, files in os.walk(group_dir):
            if "estimates.json" in files and os.path.basename(root) in baselines:
                with open(os.path.join(root, "benchmark.json")) as f:
                    case = json.load(f)["function_id"]
                with open(os.path.join(root, "estimates.json")) as f:
                    median = json.load(f)["median"]["point_estimate"] / 1e6
                eps.setdefault((kind, case), []).append(median)
    eps = {k: statistics.median(v) for k, v in eps.items()}
    cases = sorted({c for (_, c) in ref} | {c for (_, c) in eps}, key=sort_key)
    print("| case | Epsilon jit | Epsilon eager | reference | jit / ref | eager / ref |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        j, e = eps.get(("jit", case)), eps.get(("eager", case))
        sides = ["numpy", "np-bc", "jax"] if case.startswith(("gather", "scatter")) else ["jax"]
        for side in sides:
            r = ref.get((side, case))
            if r is None and side != "jax":
                continue
            ratio = lambda x: f"{x / r:.2f}" if x is not None and r else "—"  # noqa: E731
            ms = lambda x: f"{x:.3f}" if x is not None else "—"  # noqa: E731
            print(f"| {case} | {ms(j)} | {ms(e)} | {side} {ms(r)} | {ratio(j)} | {ratio(e)} |")


def sort_key(case):
    kinds = ["reduce/", "reduce_grad/", "matmul/", "matmul_grad/", "gather/", "scatter_add/"]
    rank = next((i for i, k in enumerate(kinds) if case.startswith(k)), len(kinds))
    return (rank, case)


def main():
    global OPTS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("filters", nargs="*", help="substrings of case names to run")
    parser.add_argument("--min-reps", type=int, default=10)
    parser.add_argument("--max-reps", type=int, default=1000)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--no-jax", action="store_true", help="NumPy cases only")
    parser.add_argument("--compare", metavar="CRITERION_DIR", help="print the ratio table")
    parser.add_argument(
        "--baseline",
        default="new",
        help="criterion's saved baselines to read, comma-separated (the median over them; default: the last run)",
    )
    OPTS = parser.parse_args()
    if OPTS.compare:
        compare(OPTS.compare, OPTS.filters, OPTS.baseline)
        return
    run_numpy()
    if not OPTS.no_jax:
        run_jax()


if __name__ == "__main__":
    sys.exit(main())

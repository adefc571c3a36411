"""The table of bench/gpu/run.sh: each GPU workload's median time for
Epsilon and JAX in each round, the ratio of the medians over rounds, and
the target the project set (issue "The GPU at JAX's speed").

    python3 bench/gpu/table.py OUT > OUT/table.md
"""

import glob
import os
import re
import statistics
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "bench/gpu/out"

# (label, Epsilon file stem and pattern, JAX file stem and pattern, target)
WORKLOADS = [
    ("GMM objective", "eps-linalg", r"^GMM f ", "jax-linalg", r"^GMM f ", None),
    ("GMM gradient", "eps-linalg", r"^GMM grad ", "jax-linalg", r"^GMM grad ", 1.0),
    ("BA residuals", "eps-linalg", r"^BA f ", "jax-linalg", r"^BA f ", None),
    ("BA Jacobian", "eps-linalg", r"^BA jacobian ", "jax-linalg", r"^BA jacobian ", 1.5),
    ("BA gradient", "eps-linalg", r"^BA grad ", "jax-linalg", r"^BA grad ", None),
    ("GP objective", "eps-linalg", r"^GP f ", "jax-linalg", r"^GP f ", None),
    ("GP value and gradient (n = 1000)", "eps-linalg", r"^GP vgrad ", "jax-linalg", r"^GP vgrad ", 1.5),
    ("W1 Rosenbrock gradient (10^6)", "eps-arrays", r"^W1 grad ", "jax-w1", r"^W1 grad ", 1.0),
    ("W4 heat gradient, revolve (10^4 x 10^4)", "eps-arrays", r"^W4 revolve ", "jax-w4", None, 1.5),
    ("transformer train step, f32", "eps-transformer", None, "jax-transformer", None, 1.2),
    ("FFT, 2^20 complex points (cuFFT)", "eps-arrays", r"^FFT complex ", "jax-complex", r"^fft\s", None),
]


def median_ms(path, pattern):
    """The median time in ms a run's output gives for a workload."""
    try:
        text = open(path).read()
    except OSError:
        return None
    if pattern is None:
        # `seconds X` (the transformer) or `seconds=X` lines (heat_w4.py).
        found = [float(s) for s in re.findall(r"^seconds[ =]+([0-9.eE+-]+)", text, re.M)]
        return statistics.median(found) * 1e3 if found else None
    for line in text.splitlines():
        if re.match(pattern, line):
            m = re.search(r"median_ms[ =]+([0-9.eE+-]+)", line)
            if m:
                return float(m.group(1))
            # `name checksum X seconds Y` (complex_workloads.py).
            m = re.search(r"seconds\s+([0-9.eE+-]+)", line)
            if m:
                return float(m.group(1)) * 1e3
    return None


def rounds(stem, pattern):
    paths = sorted(glob.glob(os.path.join(OUT, f"{stem}-*.txt")))
    return [t for t in (median_ms(p, pattern) for p in paths) if t is not None]


def show(times):
    return ", ".join(f"{t:.3g}" for t in times) if times else "—"


gpu = open(os.path.join(OUT, "gpu.txt")).read().strip() if os.path.exists(os.path.join(OUT, "gpu.txt")) else "?"
print(f"GPU: {gpu}\n")
print("| workload | Epsilon ms (rounds) | JAX ms (rounds) | Epsilon / JAX | target |")
print("|---|---|---|---|---|")
for label, eps_stem, eps_pattern, jax_stem, jax_pattern, target in WORKLOADS:
    eps = rounds(eps_stem, eps_pattern)
    jax = rounds(jax_stem, jax_pattern)
    ratio = f"{statistics.median(eps) / statistics.median(jax):.2f}" if eps and jax else "—"
    print(f"| {label} | {show(eps)} | {show(jax)} | {ratio} | {'<= ' + str(target) if target else '—'} |")
for suite in ("cuda_backend", "cuda_kernels"):
    path = os.path.join(OUT, f"test-{suite}.log")
    if os.path.exists(path):
        text = open(path).read()
        result = re.findall(r"^test result: .*$", text, re.M)
        print(f"\n{suite}: {result[-1] if result else 'no result'}")

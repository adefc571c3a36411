"""Reference run for benches/interpreter.rs: the same workloads in CPython/NumPy.

Run: python3 bench/reference/interpreter.py
Prints the best of several repeats for each workload, in milliseconds.
"""
import timeit

import numpy as np


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def count_up(n):
    i = 0
    while i != n:
        i += 1
    return i


rng = np.random.default_rng(0)
a = rng.standard_normal((1000, 1000))
v = rng.standard_normal(1000)

workloads = {
    "calls/fib_25": lambda: fib(25),
    "calls/loop_1e6 (while loop; Python has no tail calls)": lambda: count_up(1_000_000),
    "tensors/elementwise_1e6": lambda: np.sum(np.exp(a) * (a + 1)),
    "tensors/matvec_1000": lambda: a @ v,
}
for name, work in workloads.items():
    best = min(timeit.repeat(work, number=1, repeat=15))
    print(f"{name}: {best * 1e3:.3f} ms")

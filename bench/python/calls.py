"""The Python module's call costs (issue 51's targets), on one engine:

- the per-call overhead of a compiled gradient on a 3-element array;
- the W1 Rosenbrock gradient at n = 10^6 called from Python (a NumPy array
  in, a NumPy array out) against the same compiled function called from
  Lisp on an array the engine holds, alternated call by call, medians of
  31 calls a round.

    pip install ./python && python3 bench/python/calls.py [rounds]
"""

import statistics
import sys
import time

import numpy as np

import epsilon

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def main():
    eng = epsilon.Engine()
    eng.eval("(define (loss w) (sum (* w w)))")
    small = eng.grad("loss")
    x3 = np.arange(3.0)
    for _ in range(1000):
        small(x3)
    calls = 20000
    start = time.perf_counter()
    for _ in range(calls):
        small(x3)
    per_call = (time.perf_counter() - start) / calls
    print(f"overhead grad-3 per_call_us {per_call * 1e6:.2f}")

    eng.eval(
        "(define (rosenbrock x)"
        "  (let ((a (slice x 0 -1)) (b (slice x 1)))"
        "    (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))"
        "(define rosenbrock-grad (grad rosenbrock))"
    )
    x = np.linspace(-1.0, 1.0, 1_000_000)
    eng.define("x", x)
    python_grad = eng.get("rosenbrock-grad")
    np.testing.assert_allclose(python_grad(x), eng.eval("(rosenbrock-grad x)"))
    from_lisp = "(let ((s (clock))) (rosenbrock-grad x) (- (clock) s))"
    for round_ in range(ROUNDS):
        # Call by call, alternated, so both sides see the same machine.
        py, lisp = [], []
        for _ in range(31):
            start = time.perf_counter()
            python_grad(x)
            py.append(time.perf_counter() - start)
            lisp.append(eng.eval(from_lisp))
        py, lisp = statistics.median(py), statistics.median(lisp)
        print(
            f"W1 round {round_ + 1} python_ms {py * 1e3:.3f} lisp_ms {lisp * 1e3:.3f} ratio {py / lisp:.2f}"
        )


if __name__ == "__main__":
    main()

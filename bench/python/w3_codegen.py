"""Issue 51's symbolic target: the gradient of the W3 Neo-Hookean energy
(bench/w3/neo-hookean.lisp) as C source, from Python: Epsilon's
`epsilon.gradient` + `epsilon.codegen` against SymPy's `diff` of each
partial + `cse` + `ccode`, alternated, SymPy's cache cleared before each of
its runs. Epsilon runs at its default level (bounded saturation) and at
`optimize=0` (the derivative as built, no e-graph: what SymPy's `diff` +
`cse` also do). Prints each run's seconds, the medians' ratios, and the
arithmetic operations in each C function (a cross-tool size).

    pip install ./python sympy && python3 bench/python/w3_codegen.py [rounds]
"""

import os
import re
import statistics
import sys
import time

import sympy
from sympy.core.cache import clear_cache

import epsilon

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def main():
    eng = epsilon.Engine()
    script = open(os.path.join(ROOT, "bench", "w3", "neo-hookean.lisp")).read()
    # The definitions of the expression and its variables, not the timing.
    eng.eval(script[: script.index("(define g ")])
    text = eng.get("f")
    wrt = eng.eval("(map symbol->string vars)")
    expression = epsilon.to_sympy(text)
    symbols = {str(s): s for s in expression.free_symbols}
    names = sorted(symbols)

    def with_epsilon(level=1):
        partials = epsilon.gradient(text, wrt, optimize=level)
        return epsilon.codegen(partials, names, lang="c", name="grad")

    def with_sympy():
        clear_cache()
        partials = [sympy.diff(expression, symbols[n]) for n in wrt]
        temporaries, results = sympy.cse(partials)
        lines = [sympy.ccode(value, assign_to=str(name)) for name, value in temporaries]
        lines += [sympy.ccode(r, assign_to=f"out[{k}]") for k, r in enumerate(results)]
        return "\n".join(lines)

    times = {"epsilon": [], "epsilon_optimize_0": [], "sympy": []}
    runs = {
        "epsilon": with_epsilon,
        "epsilon_optimize_0": lambda: with_epsilon(0),
        "sympy": with_sympy,
    }
    sources = {}
    for round_ in range(ROUNDS):
        for name, run in runs.items():
            start = time.perf_counter()
            sources[name] = run()
            times[name].append(time.perf_counter() - start)
        print(f"round {round_ + 1} " + " ".join(f"{n}_s {t[-1]:.4f}" for n, t in times.items()))
    assert "grad" in sources["epsilon"] and "out[8]" in sources["sympy"]
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name in ("epsilon", "epsilon_optimize_0"):
        print(
            f"W3 diff+codegen median {name}_s {medians[name]:.5f} "
            f"sympy_s {medians['sympy']:.4f} ratio {medians[name] / medians['sympy']:.4f}"
        )
    print("operations " + " ".join(f"{n} {operations(src)}" for n, src in sources.items()))


def operations(c_source):
    """Arithmetic operations and calls in a C function's body (binary and
    unary operators, math functions): the same count for each tool."""
    body = c_source[c_source.find("{") + 1 :]
    body = re.sub(r"\b\d+\.?\d*(e[-+]?\d+)?", "1", body)  # numbers, exponents included
    body = re.sub(r"\[\d+\]", "", body)  # out[k]
    return len(re.findall(r"[-+*/]|\b(?:log|pow|exp|sqrt|sin|cos)\(", body))


if __name__ == "__main__":
    main()

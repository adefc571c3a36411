"""Issue 51's symbolic target: the gradient of the W3 Neo-Hookean energy
(bench/w3/neo-hookean.lisp) as C source, from Python: Epsilon's
`epsilon.gradient` + `epsilon.codegen` against SymPy's `diff` of each
partial + `cse` + `ccode`, alternated, SymPy's cache cleared before each of
its runs. Prints each run's seconds and the medians' ratio.

    pip install ./python sympy && python3 bench/python/w3_codegen.py [rounds]
"""

import os
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

    def with_epsilon():
        partials = epsilon.gradient(text, wrt)
        return epsilon.codegen(partials, names, lang="c", name="grad")

    def with_sympy():
        clear_cache()
        partials = [sympy.diff(expression, symbols[n]) for n in wrt]
        temporaries, results = sympy.cse(partials)
        lines = [sympy.ccode(value, assign_to=str(name)) for name, value in temporaries]
        lines += [sympy.ccode(r, assign_to=f"out[{k}]") for k, r in enumerate(results)]
        return "\n".join(lines)

    eps_times, sympy_times = [], []
    for round_ in range(ROUNDS):
        start = time.perf_counter()
        source = with_epsilon()
        eps_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        reference = with_sympy()
        sympy_times.append(time.perf_counter() - start)
        print(f"round {round_ + 1} epsilon_s {eps_times[-1]:.4f} sympy_s {sympy_times[-1]:.4f}")
    assert "grad" in source and "out[8]" in reference
    ratio = statistics.median(eps_times) / statistics.median(sympy_times)
    print(f"W3 diff+codegen median epsilon_s {statistics.median(eps_times):.4f} "
          f"sympy_s {statistics.median(sympy_times):.4f} ratio {ratio:.3f}")


if __name__ == "__main__":
    main()

"""SymPy's `cse` on the W3 workloads (issue 20's size target).

Run (from the repository root):
    python3 bench/reference/sympy_cse.py

For each workload of symbolic_w3.py: sympy.diff of every partial, then
sympy.cse over all of them jointly (with and without sympy.simplify
first). The size of a cse result is its DAG node count: the distinct
subexpressions of the replacement expressions and the reduced
expressions together (sympy.preorder_traversal, atoms included, each
temporary symbol one atom), the measure symbolic_w3.py uses and Epsilon's
`(expr-size (cse g))` counts (a let*'s names are atoms there too, and
each definition is counted once).
"""
import os
import sys

import sympy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from symbolic_w3 import WORKLOADS, dag_nodes, partials  # noqa: E402


def cse_size(exprs):
    replacements, reduced = sympy.cse(exprs)
    return dag_nodes([rhs for _, rhs in replacements] + list(reduced)), len(replacements)


def main():
    print(f"SymPy {sympy.__version__}")
    print("| workload | partials | cse of diff: DAG nodes (temporaries) | cse of diff+simplify: DAG nodes (temporaries) |")
    print("|---|---|---|---|")
    for w in WORKLOADS:
        raw = [sympy.diff(f, *wrt) for f, wrt in partials(w)]
        simplified = [sympy.simplify(e) for e in raw]
        (a, ta), (b, tb) = cse_size(raw), cse_size(simplified)
        print(f"| {w['name']} | {len(raw)} | {a} ({ta}) | {b} ({tb}) |")


if __name__ == "__main__":
    main()

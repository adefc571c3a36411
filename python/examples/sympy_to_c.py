"""A SymPy expression's gradient exported as C: the expression goes to
Epsilon (`from_sympy`), which differentiates and simplifies it and writes
one C function computing every partial with shared subterms.

    python3 python/examples/sympy_to_c.py
"""

import sympy

import epsilon

x, y, z = sympy.symbols("x y z")
energy = sympy.exp(x * y) * sympy.sin(z) / (1 + x**2 + y**2)

text = epsilon.from_sympy(energy)
partials = epsilon.gradient(text, ["x", "y", "z"])
print(epsilon.codegen(partials, ["x", "y", "z"], lang="c", name="energy_gradient"))

# The partials agree with SymPy's own.
point = {x: 0.3, y: -0.7, z: 1.1}
for var, partial in zip((x, y, z), partials):
    ours = float(epsilon.to_sympy(partial).subs(point))
    theirs = float(sympy.diff(energy, var).subs(point))
    assert abs(ours - theirs) <= 1e-12 * max(1.0, abs(theirs)), (var, ours, theirs)
print("// checked against sympy.diff at", point)

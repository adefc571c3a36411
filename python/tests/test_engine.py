"""The Python module: the SPEC's snippet, values and gradients against
NumPy finite differences, types in and out, errors and their fields,
engines on several threads, and the formula functions."""

import threading

import numpy as np
import pytest

import epsilon


def central_differences(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = h
        grad.flat[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def test_the_spec_snippet():
    eng = epsilon.Engine()
    assert eng.eval("(define (loss w) (sum (* w w)))") is None
    g = eng.grad("loss")
    assert isinstance(g, epsilon.Function)
    np.testing.assert_array_equal(g(np.arange(3.0)), [0.0, 2.0, 4.0])
    assert eng.call("loss", np.ones(3)) == 3.0
    assert epsilon.diff("(* x (sin x))", "x") == "(+ (sin x) (* x (cos x)))"


def test_gradients_match_central_differences():
    eng = epsilon.Engine()
    eng.eval(
        "(define (rosenbrock x)"
        "  (let ((a (slice x 0 -1)) (b (slice x 1)))"
        "    (sum (+ (* 100 (pow (- b (* a a)) 2)) (pow (- 1 a) 2)))))"
    )
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 7)
    f = lambda v: eng.call("rosenbrock", v)  # noqa: E731
    want = central_differences(f, x)
    np.testing.assert_allclose(eng.grad("rosenbrock")(x), want, rtol=1e-6, atol=1e-6)
    value, grad = eng.value_and_grad("rosenbrock")(x)
    assert value == pytest.approx(f(x), rel=1e-15)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
    compiled = eng.jit(eng.grad("rosenbrock"))
    np.testing.assert_allclose(compiled(x), want, rtol=1e-6, atol=1e-6)


def test_gradient_with_respect_to_several_arguments_of_lambda_text():
    eng = epsilon.Engine()
    g = eng.grad("(lambda (x y) (sum (* x (sin y))))", wrt=[0, 1])
    x, y = np.array([1.0, 2.0]), np.array([0.3, -0.4])
    gx, gy = g(x, y)
    np.testing.assert_allclose(gx, np.sin(y), rtol=1e-15)
    np.testing.assert_allclose(gy, x * np.cos(y), rtol=1e-15)


def test_vmap_maps_over_the_leading_axis():
    eng = epsilon.Engine()
    per_row = eng.vmap("(lambda (r) (sum (* r r)))")
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(per_row(m), (m * m).sum(axis=1))
    shared = eng.vmap("(lambda (r s) (* r s))", in_axes=[0, None])
    np.testing.assert_allclose(shared(m, 2.0), 2 * m)


def test_types_in_and_out():
    eng = epsilon.Engine()
    out = eng.eval('(list 1 2.5 "s" #t (quote (a b)) [1.0 2.0] #c(1.0 2.0))')
    assert out[:4] == [1, 2.5, "s", True]
    assert out[4] == "(a b)"
    np.testing.assert_array_equal(out[5], [1.0, 2.0])
    assert out[6] == 1 + 2j
    single = eng.call("*", np.ones(3, dtype=np.float32), 2.0)
    assert single.dtype == np.float32
    assert eng.call("+", np.arange(3), 1.0).dtype == np.float64
    z = eng.call("*", np.array([1 + 1j, 2 - 1j]), 1j)
    np.testing.assert_allclose(z, np.array([1 + 1j, 2 - 1j]) * 1j)
    assert eng.call("conj", np.array([1 + 2j], dtype=np.complex64)).dtype == np.complex64
    # A result Epsilon holds alone is handed over, writeable and owned by NumPy.
    made = eng.eval("(linspace 0 1 5)")
    assert made.flags.writeable and made.flags.c_contiguous
    # Strided input is read correctly.
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(eng.call("*", m[:, ::2], 1.0), m[:, ::2])
    np.testing.assert_array_equal(eng.call("*", m.T, 1.0), m.T)


def test_globals_and_files(tmp_path):
    eng = epsilon.Engine()
    eng.define("k", np.array([1.0, 2.0]))
    assert eng.eval("(sum k)") == 3.0
    eng.set("k", 4.0)
    assert eng.get("k") == 4.0
    assert eng.get("unbound-name") is None
    assert eng.get("unbound-name", 7) == 7
    assert "sum" in eng.globals()
    script = tmp_path / "s.lisp"
    script.write_text("(define (twice x) (* 2 x))\n(twice 21)\n")
    assert eng.run_file(str(script)) == 42
    assert eng.call("twice", 1.5) == 3.0


def test_errors_carry_the_report_and_location():
    eng = epsilon.Engine()
    with pytest.raises(epsilon.EpsilonError) as caught:
        eng.eval("(define x 1)\n(car 5)")
    e = caught.value
    assert (e.file, e.line, e.column) == ("<python>", 2, 1)
    assert e.message == "car: expected a list, got integer 5"
    assert str(e).startswith("<python>:2:1: error: car:")
    assert "(car 5)" in e.report
    with pytest.raises(epsilon.EpsilonError, match="shapes"):
        eng.call("+", np.ones(2), np.ones(3))
    with pytest.raises(epsilon.EpsilonError, match="unbound"):
        eng.call("no-such-function", 1.0)
    with pytest.raises(TypeError, match="cannot take a value of type object"):
        eng.call("+", object(), 1.0)
    with pytest.raises(TypeError, match="dtype"):
        eng.call("+", np.array(["a"]), 1.0)


def test_engines_on_several_threads_at_once():
    results, errors = {}, []

    def work(k):
        try:
            eng = epsilon.Engine()
            eng.eval(f"(define (f w) (* {k} (sum (* w w))))")
            results[k] = eng.grad("f")(np.ones(1000))[0]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {k: 2.0 * k for k in range(4)}


def test_an_engine_belongs_to_its_thread():
    eng = epsilon.Engine()
    caught = []

    def other():
        try:
            eng.eval("1")
        except Exception as e:
            caught.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert caught and isinstance(caught[0], epsilon.EpsilonError), caught
    assert "belongs to the thread that made it" in str(caught[0])


def test_formulas():
    assert epsilon.gradient("(* x (sin y))", ["x", "y"]) == ["(sin y)", "(* x (cos y))"]
    rows = epsilon.hessian("(* x y)", ["x", "y"])
    assert rows == [["0", "1"], ["1", "0"]]
    assert epsilon.simplify("(+ x x)") == "(* 2 x)"
    assert epsilon.latex("(/ x (sqrt y))") == r"\frac{x}{\sqrt{y}}"
    assert epsilon.diff("(pow x 3)", "x", 2) == "(* 6 x)"
    source = epsilon.codegen("(* x (sin y))", ["x", "y"], lang="python", name="g")
    namespace = {}
    exec(source, namespace)
    assert namespace["g"](2.0, 0.5) == pytest.approx(2.0 * np.sin(0.5))
    assert "sin" in epsilon.explain("(* x (sin x))", wrt="x")
    with pytest.raises(epsilon.EpsilonError):
        epsilon.diff("(* x (sin x)", "x")


def test_to_sympy():
    sympy = pytest.importorskip("sympy", reason="SymPy is not installed")
    x = sympy.Symbol("x")
    expr = epsilon.to_sympy(epsilon.diff("(* x (sin x))", "x"))
    assert sympy.simplify(expr - sympy.diff(x * sympy.sin(x), x)) == 0
    assert epsilon.to_sympy("(pow (- x 1) 2)") == (x - 1) ** 2
    with pytest.raises(ValueError):
        epsilon.to_sympy("(* x")


def test_printing_goes_to_sys_stdout(capsys):
    eng = epsilon.Engine()
    eng.eval('(println "hello" (+ 1 2))')
    assert capsys.readouterr().out == "hello 3\n"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        eng.eval('(print "captured")')
    assert buffer.getvalue() == "captured"


def test_ctrl_c_interrupts_an_endless_loop():
    import os
    import signal
    import time

    eng = epsilon.Engine()
    eng.eval("(define (spin n) (spin (+ n 1)))")

    def interrupt():
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        eng.call("spin", 0)
    t.join()
    assert time.perf_counter() - start < 10
    # The engine is usable after, and Python's own handler is back.
    assert eng.eval("(+ 1 2)") == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def resident_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


@pytest.mark.skipif(resident_kib() is None, reason="no /proc/self/status here")
def test_no_leak_over_many_calls():
    eng = epsilon.Engine()
    eng.eval("(define (f w) (sum (* w (sin w))))")
    g = eng.grad("f")
    x = np.linspace(0.0, 1.0, 1000)
    for _ in range(20000):
        g(x)
    before = resident_kib()
    for _ in range(100000):
        g(x)
        eng.call("f", x)
    grown = resident_kib() - before
    # 10^5 calls moving 8 KB arrays each way: a leak of one array per
    # call would be 800 MB.
    assert grown < 20000, f"resident memory grew by {grown} KiB"


def test_formulas_are_text_with_latex():
    d = epsilon.diff("(* x (sin x))", "x")
    assert isinstance(d, epsilon.Formula) and isinstance(d, str)
    assert d._repr_latex_().startswith("$") and "\\sin" in d._repr_latex_()
    assert all(isinstance(p, epsilon.Formula) for p in epsilon.gradient("(* x y)", ["x", "y"]))
    assert "derivative" in epsilon.diff.__doc__
    assert "The Lisp built-in" in epsilon.diff.__doc__


def test_from_sympy_round_trips():
    sympy = pytest.importorskip("sympy", reason="SymPy is not installed")
    x, y = sympy.symbols("x y")
    for expr in [x * sympy.sin(y) + sympy.Rational(1, 3) * x**2, sympy.exp(-x) / (1 + y**2)]:
        back = epsilon.to_sympy(epsilon.from_sympy(expr))
        assert sympy.simplify(back - expr) == 0


@pytest.mark.parametrize("example", ["quickstart.py", "fit_scipy.py", "sympy_to_c.py"])
def test_examples_run(example):
    import pathlib
    import subprocess
    import sys

    needs = {"fit_scipy.py": "scipy", "sympy_to_c.py": "sympy"}
    if example in needs:
        pytest.importorskip(needs[example], reason=f"{needs[example]} is not installed")
    path = pathlib.Path(__file__).parent.parent / "examples" / example
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout


def test_dlpack_both_ways():
    eng = epsilon.Engine()
    x = np.linspace(0.0, 1.0, 5)
    shared = epsilon.from_dlpack(x)
    assert np.shares_memory(shared, x)
    result = eng.call("*", shared, 2.0)
    back = np.from_dlpack(result)
    assert np.shares_memory(back, result)
    np.testing.assert_array_equal(back, 2 * x)


def test_dlpack_with_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    eng = epsilon.Engine()
    result = eng.call("*", np.linspace(0.0, 1.0, 5), 2.0)
    t = torch.from_dlpack(result)
    assert t.data_ptr() == result.ctypes.data
    np.testing.assert_array_equal(eng.call("*", epsilon.from_dlpack(t), 1.0), result)


def test_dlpack_with_jax():
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    eng = epsilon.Engine()
    x = jax.numpy.linspace(0.0, 1.0, 5)
    # JAX's array goes in without a copy, Epsilon's result back to JAX.
    shared = epsilon.from_dlpack(x)
    assert shared.ctypes.data == x.unsafe_buffer_pointer()
    g = eng.grad("(lambda (w) (sum (* w (sin w))))")(shared)
    back = jax.dlpack.from_dlpack(g)
    expected = jax.grad(lambda w: (w * jax.numpy.sin(w)).sum())(x)
    np.testing.assert_allclose(np.asarray(back), np.asarray(expected), rtol=1e-14)


def test_the_notebook_runs_in_the_python_kernel():
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed")
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "examples" / "notebook.ipynb"
    notebook = nbformat.read(str(path), as_version=4)
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    grad = code[0].outputs[-1]["data"]
    assert grad["text/plain"].startswith("Tensor([")
    # Jupyter shows a tensor as a table.
    assert "<table>" in grad["text/html"] and "shape (4,)" in grad["text/html"]
    printed = "".join(o.get("text", "") for o in code[1].outputs if o["output_type"] == "stream")
    assert printed == "printed by Lisp\n"
    formula = code[2].outputs[-1]["data"]
    assert formula["text/latex"].startswith("$") and "\\sin" in formula["text/latex"]


def test_formula_text_is_read_as_data_not_run():
    with pytest.raises(epsilon.EpsilonError, match="no matching opening bracket"):
        epsilon.diff("x 'x 1) (define (diff . a) 42) ('x", "x")
    with pytest.raises(epsilon.EpsilonError, match="expected one expression, found 2"):
        epsilon.diff("x (define (diff . a) 42)", "x")
    assert epsilon.diff("(* x x)", "x") == "(* 2 x)"
    with pytest.raises(epsilon.EpsilonError, match="no matching opening bracket"):
        epsilon.gradient("(* x y)", ['x) (display "no") \'(y'])
    with pytest.raises(epsilon.EpsilonError, match="not a variable name"):
        epsilon.gradient("(* x y)", ["(+ x 1)"])
    assert epsilon.diff("(* x x) ; a comment", "x") == "(* 2 x)"
    with pytest.raises(epsilon.EpsilonError, match="expected one expression, found 3"):
        epsilon.codegen("(* x y)", ["x", "y"], lang='c :name "zz"')
    for name in ["latex", "codegen", "explain", "gradient"]:
        assert "The Lisp built-in" in getattr(epsilon, name).__doc__


def test_deep_and_self_holding_lists_are_errors():
    eng = epsilon.Engine()
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested more than"):
        eng.call("length", loop)
    deep = [1.0]
    for _ in range(10000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than"):
        eng.call("length", deep)
    with pytest.raises(ValueError, match="nested more than"):
        eng.eval("(let loop ((i 0) (acc '())) (if (< i 10000) (loop (+ i 1) (list acc)) acc))")


def test_numpy_scalars_keep_their_kind():
    eng = epsilon.Engine()
    assert eng.call("+", np.int64(3), 0) == 3 and isinstance(eng.call("+", np.int64(3), 0), int)
    assert eng.call("boolean?", np.bool_(True)) is True
    assert eng.call("*", np.complex64(1 + 2j), 1.0) == 1 + 2j
    assert eng.call("*", np.float32(0.5), 2.0) == 1.0
    g = eng.grad("(lambda (x y) (* x y))", wrt=np.int64(1))
    assert g(3.0, 4.0) == 3.0
    big_endian = np.arange(3.0).astype(">f8")
    np.testing.assert_array_equal(eng.call("*", big_endian, 2.0), [0.0, 2.0, 4.0])


def test_a_program_handler_for_sigint_is_kept():
    import signal

    seen = []
    previous = signal.signal(signal.SIGINT, lambda *a: seen.append(a))
    try:
        eng = epsilon.Engine()
        assert eng.eval("(+ 1 2)") == 3
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_to_sympy_reads_what_epsilon_writes():
    sympy = pytest.importorskip("sympy", reason="SymPy is not installed")
    assert epsilon.to_sympy(epsilon.diff("(relu x)", "x")).has(sympy.Heaviside)
    x = sympy.Symbol("x")
    back = epsilon.to_sympy(epsilon.diff("(pow x x)", "x"))
    assert abs(float(back.subs(x, 1.7)) - float(sympy.diff(x**x, x).subs(x, 1.7))) < 1e-12


def test_repr_of_a_function_never_raises():
    eng = epsilon.Engine()
    f = eng.grad("(lambda (w) (sum w))")
    shown = []
    t = threading.Thread(target=lambda: shown.append(repr(f)))
    t.start()
    t.join()
    assert shown == ["<epsilon.Function of another thread>"]


def test_arrays_are_read_in_place_and_never_written():
    eng = epsilon.Engine()
    identity = eng.eval("(lambda (x) x)")
    for dtype in (np.float64, np.float32):
        x = np.linspace(0.0, 1.0, 7, dtype=dtype)
        out = identity(x)
        # A lent tensor given back is a view of the argument's memory.
        assert np.shares_memory(out, x) and out is not x and out.dtype == dtype
    # Through a compiled tape too (float64: float32 tapes compute in float64).
    x = np.linspace(0.0, 1.0, 7)
    assert np.shares_memory(eng.jit("(lambda (x) x)")(x), x)
    # A tensor the engine keeps reads the array's memory, as a view would,
    # and keeps it alive.
    eng.eval("(define kept #f) (define (keep x) (set! kept x) (sum x))")
    x = np.arange(4.0)
    assert eng.call("keep", x) == 6.0
    x[0] = 10.0
    assert eng.eval("(sum kept)") == 16.0
    del x, out
    import gc

    gc.collect()
    np.testing.assert_array_equal(eng.eval("(* kept 1.0)"), [10.0, 1.0, 2.0, 3.0])
    eng.eval("(set! kept #f)")
    # Whatever the engine does with a lent array, the array is unchanged:
    # it never reuses the storage of an argument for its results.
    programs = [
        "(lambda (x) (+ x 1.0))",
        "(lambda (x) (* (sin x) x))",
        "(grad (lambda (x) (sum (* x x))))",
        "(jit (lambda (x) (exp (- x))))",
        "(lambda (x) (scan (lambda (v i) (* 0.5 v)) x 10))",
        "(vmap (lambda (r) (* r 2.0)))",
    ]
    for text in programs:
        f = eng.eval(text)
        for dtype in (np.float64, np.float32):
            x = np.linspace(-1.0, 1.0, 4096, dtype=dtype).reshape(64, 64)
            before = x.copy()
            for _ in range(3):
                f(x)
            np.testing.assert_array_equal(x, before, err_msg=text)
    # Read-only, strided, unaligned and empty arrays are read correctly.
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    np.testing.assert_array_equal(eng.call("*", frozen, 2.0), [0.0, 2.0, 4.0])
    raw = np.zeros(8 * 3 + 1, dtype=np.uint8)
    unaligned = np.frombuffer(raw.data, dtype=np.float64, count=3, offset=1)
    np.testing.assert_array_equal(eng.call("+", unaligned, 1.0), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(eng.call("*", np.arange(10.0)[::3], 1.0), [0.0, 3.0, 6.0, 9.0])
    assert eng.call("*", np.zeros((0, 3)), 1.0).shape == (0, 3)


def test_tensors_are_numpy_arrays_shown_as_tables():
    eng = epsilon.Engine()
    m = eng.eval("(reshape (linspace 0 1 6) '(2 3))")
    assert isinstance(m, epsilon.Tensor) and isinstance(m, np.ndarray)
    # Operations on a tensor give plain NumPy arrays and scalars.
    assert type(m + 1) is np.ndarray and type(m.sum()) is np.float64
    table = m._repr_html_()
    assert "float64, shape (2, 3)" in table and table.count("<tr>") == 2
    assert table.count("<td>") == 6 and "<td>0.4</td>" in table
    vector = eng.call("*", np.arange(3.0), 1.0)._repr_html_()
    assert vector.count("<tr>") == 1 and vector.count("<td>") == 3
    z = eng.call("*", np.array([1 + 2j]), 1.0)
    assert isinstance(z, epsilon.Tensor) and "1+2j" in z._repr_html_()
    # Large ones are summarised: shape, range and NumPy's abbreviated text.
    big = eng.eval("(linspace 0 1 10000)")._repr_html_()
    assert "shape (10000,)" in big and "max 1" in big and "..." in big and "<td>" not in big
    single = eng.call("*", np.ones(3, dtype=np.float32), 2.0)
    assert isinstance(single, epsilon.Tensor) and "float32" in single._repr_html_()
    assert "all NaN" in eng.call("*", np.full(500, np.nan), 1.0)._repr_html_()


class _DeviceArray:
    """A DLPack producer standing for an array on a CUDA device: it hands
    over a host copy only when asked for one (as PyTorch and CuPy do), or
    never (`copies=False`, an older library)."""

    def __init__(self, host, copies):
        self.host, self.copies = host, copies

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if not self.copies or dl_device is None or tuple(dl_device)[0] != 1:
            raise BufferError("this array lives on the GPU")
        return self.host.__dlpack__(max_version=max_version, copy=True)


def test_dlpack_from_a_device_copies_to_the_host():
    eng = epsilon.Engine()
    host = np.linspace(0.0, 1.0, 4)
    on_device = epsilon.from_dlpack(_DeviceArray(host, copies=True))
    assert not np.shares_memory(on_device, host)
    np.testing.assert_array_equal(eng.call("*", on_device, 2.0), 2 * host)
    with pytest.raises(epsilon.EpsilonError, match=r"device \(2, 0\).*x\.cpu\(\)"):
        epsilon.from_dlpack(_DeviceArray(host, copies=False))


def test_tensors_follow_numpy_rules_for_out_and_scalars():
    eng = epsilon.Engine()
    t = eng.call("*", np.arange(3.0), 1.0)
    same = t
    t += 1.0
    assert t is same and isinstance(t, epsilon.Tensor)
    np.testing.assert_array_equal(t, [1.0, 2.0, 3.0])
    assert np.add(t, 1.0, out=t) is t
    assert type(t.max()) is np.float64
    ints = t.astype(np.int64) * 41152263
    assert "123456789" in eng.call("*", ints, 1.0).astype(np.int64)._repr_html_()
    edges = eng.call("*", np.array([np.inf, -np.inf, 1.0] * 100), 1.0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "max inf" in edges._repr_html_()
    assert "empty" in eng.call("*", np.zeros((0, 3)), 1.0)._repr_html_()


def test_an_engine_dropped_before_its_functions_frees_what_they_read():
    import gc
    import weakref

    eng = epsilon.Engine()
    eng.eval("(define (adder x) (lambda (y) (+ x y)))")
    x = np.arange(3.0)
    freed = []
    weakref.finalize(x, freed.append, True)
    add = eng.call("adder", x)
    np.testing.assert_array_equal(add(1.0), [1.0, 2.0, 3.0])
    del x, eng
    gc.collect()
    assert not freed
    del add
    gc.collect()
    assert freed == [True]


def test_arrays_an_engine_kept_are_freed_once_it_drops_them():
    import gc
    import weakref

    eng = epsilon.Engine()
    eng.eval("(define history '()) (define (keep x) (set! history (cons x history)) 0.0)")
    freed = []
    for k in range(20):
        x = np.full(3, float(k))
        weakref.finalize(x, freed.append, k)
        eng.call("keep", x)
    del x
    gc.collect()
    assert not freed
    assert eng.eval("(sum (apply + history))") == 3 * sum(range(20))
    eng.eval("(set! history '())")
    for _ in range(20):
        eng.call("+", np.ones(2), 1.0)
    gc.collect()
    assert sorted(freed) == list(range(20))


@pytest.mark.parametrize("script", ["calls.py", "w3_codegen.py"])
def test_benchmark_scripts_run(script):
    import pathlib
    import subprocess
    import sys

    if script == "w3_codegen.py":
        pytest.importorskip("sympy", reason="SymPy is not installed")
    root = pathlib.Path(__file__).resolve().parents[2]
    path = root / "bench" / "python" / script
    done = subprocess.run(
        [sys.executable, str(path), "1"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "ratio" in done.stdout


def test_formulas_at_each_simplification_level():
    expr = "(+ (* (/ mu 2) (- (+ (pow a 2) (pow b 2)) 2)) (* lam (pow (log (* a b)) 2)))"
    names = ["a", "b", "mu", "lam"]
    point = {"a": 1.3, "b": 0.7, "mu": 0.9, "lam": 1.7}
    exact = [
        point["mu"] * point["a"] + 2 * point["lam"] * np.log(point["a"] * point["b"]) / point["a"],
        point["mu"] * point["b"] + 2 * point["lam"] * np.log(point["a"] * point["b"]) / point["b"],
    ]
    sizes = {}
    for level in (0, 1, 2):
        partials = epsilon.gradient(expr, ["a", "b"], optimize=level)
        source = epsilon.codegen(partials, names, lang="python", name="g")
        scope = {}
        exec(source, scope)
        np.testing.assert_allclose(scope["g"](**point), exact, rtol=1e-13)
        sizes[level] = sum(len(p) for p in partials)
    # Level 0 is the derivative as built; saturation gives a smaller one.
    assert sizes[1] < sizes[0]
    assert epsilon.diff("(* x 1)", "x", optimize=0) == "1"
    with pytest.raises(epsilon.EpsilonError):
        epsilon.simplify("(+ x x)", optimize=7)
    assert "set-optimize!" in epsilon.gradient.__doc__

//! `epsilon.Engine`, one Lisp engine, and `epsilon.Function`, a Lisp
//! procedure called from Python.
//!
//! An engine belongs to the thread that made it (Epsilon's values are not
//! shared between threads: `owned`); other threads make engines of their
//! own, and engines on different threads run at once: the GIL is released
//! while Epsilon computes.

use crate::convert::{arguments, result_to_python, to_python, to_value};
use crate::errors::raised;
use crate::interrupt::Watch;
use crate::lending::{Kept, Loans};
use crate::output::PythonStream;
use crate::owned::Owned;
use epsilon::Value;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Work on an engine carried across `Python::detach`.
struct Unshared<T>(T);

// SAFETY: `detach` runs its closure on the calling thread, the one the
// engine and its values belong to (`Owned` checks that before a borrow
// is taken); nothing the closure holds is seen by another thread while
// the GIL is released. Callers pass closures over engines and Lisp values
// only, never over Python objects.
unsafe impl<T> Send for Unshared<T> {}

impl<T> Unshared<T> {
    fn into_inner(self) -> T {
        self.0
    }
}

/// Runs `work` with the GIL released.
pub(crate) fn released<T>(py: Python<'_>, work: impl FnOnce() -> T) -> T {
    let task = Unshared(work);
    py.detach(move || Unshared(task.into_inner()()))
        .into_inner()
}

/// A Lisp engine: its globals, its compiled functions and its output.
///
/// >>> eng = epsilon.Engine()
/// >>> eng.eval("(define (loss w) (sum (* w w)))")
/// >>> eng.call("loss", numpy.ones(3))
/// 3.0
#[pyclass(frozen, module = "epsilon")]
pub struct Engine {
    // Dropped first: the loans below outlive every value of the engine.
    inner: Owned<epsilon::Engine>,
    /// Arrays lent to calls whose tensors the engine kept (`lending`).
    kept: Owned<Kept>,
}

/// Runs `work` on the engine of `slf` with the GIL released and gives its
/// value to Python.
fn run(
    slf: &Bound<'_, Engine>,
    work: impl FnOnce(&mut epsilon::Engine) -> Result<Value, epsilon::Error>,
) -> PyResult<Py<PyAny>> {
    run_lent(slf, Loans::default(), work)
}

/// As [`run`], for a call whose arguments lent arrays (`loans`): a result
/// that is a lent tensor goes back as a view of its array, and the loans
/// end, or stay with the engine when it kept their tensors.
fn run_lent(
    slf: &Bound<'_, Engine>,
    loans: Loans,
    work: impl FnOnce(&mut epsilon::Engine) -> Result<Value, epsilon::Error>,
) -> PyResult<Py<PyAny>> {
    let given = finish(slf, work)
        .and_then(|value| result_to_python(slf.py(), value, &slf.clone().unbind(), &loans));
    let ended = loans.settle(&mut *slf.get().kept.get("Engine")?);
    // Dropped with `kept` no longer borrowed (a finalizer may call in).
    drop(ended);
    given
}

/// Runs `work` with the GIL released: its value, or the Python exception
/// its error or an interrupt raises.
fn finish(
    slf: &Bound<'_, Engine>,
    work: impl FnOnce(&mut epsilon::Engine) -> Result<Value, epsilon::Error>,
) -> PyResult<Value> {
    let py = slf.py();
    let (result, interrupted) = {
        let mut engine = slf.get().inner.get("Engine")?;
        let watch = Watch::start(py, engine.interrupt_handle());
        let engine = &mut *engine;
        let result = released(py, move || work(engine));
        (result, watch.interrupted())
    };
    let stopped =
        matches!(&result, Err(e) if matches!(e.kind(), epsilon::EvalErrorKind::Interrupted));
    match result {
        _ if interrupted || stopped => Err(PyKeyboardInterrupt::new_err(
            "Epsilon's computation was interrupted",
        )),
        Ok(value) => Ok(value),
        Err(error) => Err(raised(py, &error)),
    }
}

/// The procedure `f` names: a `Function`, a global's name, or the text of
/// an expression (`"(lambda (w) (sum (* w w)))"`).
fn procedure(slf: &Bound<'_, Engine>, f: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(function) = f.cast::<Function>() {
        return function.get().value();
    }
    let text: String = f.extract()?;
    let mut engine = slf.get().inner.get("Engine")?;
    let found = match engine.get(text.trim()) {
        Some(value) => Ok(value),
        None => engine.eval_named(&text, "<python>"),
    };
    found.map_err(|e| raised(slf.py(), &e))
}

/// A transformation (`grad`, `jit`, ...) of the procedure `f`, with
/// keyword options: a `Function`.
fn transformed(
    slf: &Bound<'_, Engine>,
    name: &str,
    f: &Bound<'_, PyAny>,
    options: &[(&str, Option<Value>)],
) -> PyResult<Py<PyAny>> {
    let mut args = vec![procedure(slf, f)?];
    for (key, value) in options {
        if let Some(value) = value {
            args.push(Value::Keyword(epsilon::lisp::symbol::Symbol::intern(key)));
            args.push(value.clone());
        }
    }
    run(slf, |engine| engine.call_named(name, &args))
}

/// An optional Python argument as a Lisp value.
fn option(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    value.map(to_value).transpose()
}

#[pymethods]
impl Engine {
    #[new]
    fn new() -> Self {
        let mut engine = epsilon::Engine::new();
        engine.set_output(Box::new(PythonStream::stdout()));
        engine.set_error_output(Box::new(PythonStream::stderr()));
        Engine {
            inner: Owned::new(engine),
            kept: Owned::new(Kept::default()),
        }
    }

    /// Evaluates Lisp source (every form) and returns the last value.
    fn eval(slf: &Bound<'_, Self>, source: &str) -> PyResult<Py<PyAny>> {
        let source = source.to_string();
        run(slf, move |engine| engine.eval_named(&source, "<python>"))
    }

    /// Calls the global function `name` with the arguments.
    #[pyo3(signature = (name, *args))]
    fn call(slf: &Bound<'_, Self>, name: &str, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let (args, loans) = arguments(args)?;
        let name = name.to_string();
        run_lent(slf, loans, move |engine| engine.call_named(&name, &args))
    }

    /// Binds the global `name` to `value`.
    fn define(&self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = to_value(value)?;
        self.inner.get("Engine")?.set(name, value);
        Ok(())
    }

    /// Binds the global `name` to `value` (as `define`).
    fn set(&self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.define(name, value)
    }

    /// The value of the global `name`, or `default` when it is unbound.
    #[pyo3(signature = (name, default = None))]
    fn get(slf: &Bound<'_, Self>, name: &str, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let value = slf.get().inner.get("Engine")?.get(name);
        match value {
            Some(value) => to_python(py, value, &slf.clone().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// Evaluates the Lisp file at `path` and returns its last value.
    fn run_file(slf: &Bound<'_, Self>, path: std::path::PathBuf) -> PyResult<Py<PyAny>> {
        run(slf, move |engine| engine.run_file(&path))
    }

    /// The gradient of `f` (a `Function`, a global's name or lambda text)
    /// with respect to argument `wrt` (an index or a list of them), as a
    /// compiled Python callable.
    #[pyo3(signature = (f, wrt = None))]
    fn grad(
        slf: &Bound<'_, Self>,
        f: &Bound<'_, PyAny>,
        wrt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        transformed(slf, "grad", f, &[("wrt", option(wrt)?)])
    }

    /// `f`'s value and gradient, as a callable returning `[value, gradient]`.
    #[pyo3(signature = (f, wrt = None))]
    fn value_and_grad(
        slf: &Bound<'_, Self>,
        f: &Bound<'_, PyAny>,
        wrt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        transformed(slf, "value-and-grad", f, &[("wrt", option(wrt)?)])
    }

    /// `f` compiled to a tape (traced once per argument shape).
    fn jit(slf: &Bound<'_, Self>, f: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        transformed(slf, "jit", f, &[])
    }

    /// `f` mapped over an axis of its arguments (`in_axes`: an axis per
    /// argument, None for one shared by every example).
    #[pyo3(signature = (f, in_axes = None, out_axes = None))]
    fn vmap(
        slf: &Bound<'_, Self>,
        f: &Bound<'_, PyAny>,
        in_axes: Option<&Bound<'_, PyAny>>,
        out_axes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let axes = |axes: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Value>> {
            Ok(option(axes)?.map(|v| match v {
                // None inside the list means "not mapped": #f in Lisp.
                Value::Nil => Value::Bool(false),
                other => other,
            }))
        };
        transformed(
            slf,
            "vmap",
            f,
            &[("in-axes", axes(in_axes)?), ("out-axes", axes(out_axes)?)],
        )
    }

    /// The documentation of a built-in or documented global (its usage
    /// line and text), or None.
    fn doc(&self, name: &str) -> PyResult<Option<String>> {
        Ok(self.inner.get("Engine")?.doc(name))
    }

    /// The names of the engine's globals.
    fn globals(&self) -> PyResult<Vec<&'static str>> {
        Ok(self.inner.get("Engine")?.global_names())
    }

    fn __repr__(&self) -> String {
        "<epsilon.Engine>".to_string()
    }
}

/// A Lisp procedure, called from Python with Python arguments.
#[pyclass(frozen, module = "epsilon")]
pub struct Function {
    // Dropped before the engine: the engine may be the last holder of the
    // arrays this value reads (`lending`).
    value: Owned<Value>,
    engine: Py<Engine>,
}

impl Function {
    pub fn new(engine: Py<Engine>, value: Value) -> Self {
        Function {
            value: Owned::new(value),
            engine,
        }
    }

    /// The procedure (on its engine's thread).
    pub fn value(&self) -> PyResult<Value> {
        Ok(self.value.get("Function")?.clone())
    }
}

#[pymethods]
impl Function {
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        // The procedure first: an error after arrays are lent would drop
        // the loans before the arguments holding them.
        let procedure = self.value()?;
        let (args, loans) = arguments(args)?;
        let engine = self.engine.bind(py);
        run_lent(engine, loans, move |engine| engine.call(&procedure, &args))
    }

    fn __repr__(&self) -> String {
        match self.value() {
            Ok(value) => format!("<epsilon.Function {}>", value.short()),
            Err(_) => "<epsilon.Function of another thread>".to_string(),
        }
    }
}

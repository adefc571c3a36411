//! The symbolic engine on formula strings: `diff`, `simplify`,
//! `gradient`, `hessian`, `latex`, `codegen`, `explain`. Each takes
//! expressions as s-expression text (`"(* x (sin y))"`) and gives text
//! back (lists for several): the text is read as data and given to the
//! built-ins of one engine per thread kept for these functions (no text
//! is evaluated, so none can run code or change that engine).

use crate::errors::{EpsilonError, raised};
use epsilon::Value;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::cell::RefCell;

thread_local! {
    static FORMULAS: RefCell<Option<epsilon::Engine>> = const { RefCell::new(None) };
}

/// The value of the built-in `name` on `args`, on this thread's formula
/// engine, with the GIL released. Expressions arrive as data read from
/// their text (`datum`), never pasted into source, so no text can run
/// code or redefine a built-in.
fn call(py: Python<'_>, name: &str, args: Vec<Value>) -> PyResult<Value> {
    call_at(py, DEFAULT_LEVEL, name, args)
}

/// The simplification level of the formula functions unless told (as the
/// engine's: bounded saturation).
const DEFAULT_LEVEL: u8 = 1;

/// As [`call`], simplifying at `level` (SPEC's `set-optimize!`: 0 no
/// e-graph, 1 bounded saturation, 2 longer).
fn call_at(py: Python<'_>, level: u8, name: &str, args: Vec<Value>) -> PyResult<Value> {
    let result = crate::engine::released(py, move || {
        FORMULAS.with(|cell| {
            let mut slot = cell.borrow_mut();
            let engine = slot.get_or_insert_with(epsilon::Engine::new);
            engine.call_named("set-optimize!", &[Value::Int(i64::from(level))])?;
            engine.call_named(name, &args)
        })
    });
    result.map_err(|e| raised(py, &e))
}

/// The one expression written in `text`.
fn datum(text: &str) -> PyResult<Value> {
    let read = epsilon::reader::read_all(text, epsilon::reader::FileId::NONE)
        .map_err(|e| EpsilonError::new_err(format!("{text:?}: {e}")))?;
    match read.as_slice() {
        [one] => Ok(epsilon::lisp::convert::sexp_to_value(one)),
        other => Err(EpsilonError::new_err(format!(
            "{text:?}: expected one expression, found {}",
            other.len()
        ))),
    }
}

/// The symbol named by `text`.
fn symbol(text: &str) -> PyResult<Value> {
    match datum(text)? {
        symbol @ Value::Symbol(_) => Ok(symbol),
        _ => Err(EpsilonError::new_err(format!(
            "{text:?} is not a variable name"
        ))),
    }
}

/// A keyword argument.
fn keyword(name: &str) -> Value {
    Value::Keyword(epsilon::lisp::symbol::Symbol::intern(name))
}

/// The text of an expression, or for `depth` > 0 a list (of lists, to
/// that depth) of the texts of the items: results that are lists of
/// expressions (a gradient, a Hessian's rows) are split by what they
/// are, not by how they look (`(y x)` is a gradient, not a call of `y`).
fn texts(py: Python<'_>, value: &Value, depth: usize) -> PyResult<Py<PyAny>> {
    match value {
        Value::Str(s) => Ok(s.as_str().into_pyobject(py)?.into_any().unbind()),
        Value::Pair(_) | Value::Nil if depth > 0 && value.is_list() => {
            let items = value
                .iter()
                .map(|(item, _)| texts(py, item, depth - 1))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any().unbind())
        }
        other => Ok(other.to_string().into_pyobject(py)?.into_any().unbind()),
    }
}

/// 1 for a list of expressions given as a Python list, else 0.
fn depth_of(expr: &Bound<'_, PyAny>) -> usize {
    usize::from(expr.extract::<String>().is_err())
}

/// The list of symbols `vars` names (one name or a list of them).
fn symbols(vars: &Bound<'_, PyAny>) -> PyResult<Value> {
    let names: Vec<String> = match vars.extract::<String>() {
        Ok(one) => vec![one],
        Err(_) => vars.extract()?,
    };
    let items = names
        .iter()
        .map(|n| symbol(n))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Value::list(items))
}

/// The expression written in `expr`, or the list of those in a list.
fn expressions(expr: &Bound<'_, PyAny>) -> PyResult<Value> {
    match expr.extract::<String>() {
        Ok(one) => datum(&one),
        Err(_) => {
            let many: Vec<String> = expr.extract()?;
            let items = many
                .iter()
                .map(|e| datum(e))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(Value::list(items))
        }
    }
}

/// The (n-th) derivative of `expr` with respect to `var`, simplified.
///
/// >>> epsilon.diff("(* x (sin x))", "x")
/// '(+ (sin x) (* x (cos x)))'
#[pyfunction]
#[pyo3(signature = (expr, var, n = 1, *, optimize = DEFAULT_LEVEL))]
fn diff(py: Python<'_>, expr: &str, var: &str, n: u32, optimize: u8) -> PyResult<Py<PyAny>> {
    let value = call_at(
        py,
        optimize,
        "diff",
        vec![datum(expr)?, symbol(var)?, Value::Int(i64::from(n))],
    )?;
    texts(py, &value, 0)
}

/// `expr` (or a list of expressions, jointly) simplified.
#[pyfunction]
#[pyo3(signature = (expr, *, optimize = DEFAULT_LEVEL))]
fn simplify(py: Python<'_>, expr: &Bound<'_, PyAny>, optimize: u8) -> PyResult<Py<PyAny>> {
    let value = call_at(py, optimize, "simplify", vec![expressions(expr)?])?;
    texts(py, &value, depth_of(expr))
}

/// The partial derivatives of `expr` with respect to each of `vars`,
/// simplified together: a list of expressions.
#[pyfunction]
#[pyo3(signature = (expr, vars, *, optimize = DEFAULT_LEVEL))]
fn gradient(
    py: Python<'_>,
    expr: &str,
    vars: &Bound<'_, PyAny>,
    optimize: u8,
) -> PyResult<Py<PyAny>> {
    derivatives(py, "grad", expr, vars, optimize, 1)
}

/// The Hessian of `expr` in `vars`: a list of rows of expressions.
#[pyfunction]
#[pyo3(signature = (expr, vars, *, optimize = DEFAULT_LEVEL))]
fn hessian(
    py: Python<'_>,
    expr: &str,
    vars: &Bound<'_, PyAny>,
    optimize: u8,
) -> PyResult<Py<PyAny>> {
    derivatives(py, "hessian", expr, vars, optimize, 2)
}

/// The built-in `name` (`grad`, `hessian`) of `expr` in `vars`, as texts
/// nested `depth` deep.
fn derivatives(
    py: Python<'_>,
    name: &str,
    expr: &str,
    vars: &Bound<'_, PyAny>,
    optimize: u8,
    depth: usize,
) -> PyResult<Py<PyAny>> {
    let value = call_at(py, optimize, name, vec![datum(expr)?, symbols(vars)?])?;
    texts(py, &value, depth)
}

/// `expr` as LaTeX.
#[pyfunction]
fn latex(py: Python<'_>, expr: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let value = call(py, "latex", vec![expressions(expr)?])?;
    texts(py, &value, depth_of(expr))
}

/// Source of a function of `vars` computing `expr` (or a list of
/// expressions) with shared subterms as temporaries, in `lang` (`"c"`,
/// `"rust"` or `"python"`).
#[pyfunction]
#[pyo3(signature = (expr, vars, lang = "c", name = "f"))]
fn codegen(
    py: Python<'_>,
    expr: &Bound<'_, PyAny>,
    vars: &Bound<'_, PyAny>,
    lang: &str,
    name: &str,
) -> PyResult<Py<PyAny>> {
    let args = vec![
        expressions(expr)?,
        symbols(vars)?,
        keyword("lang"),
        symbol(lang)?,
        keyword("name"),
        Value::string(name),
    ];
    let value = call(py, "codegen", args)?;
    texts(py, &value, 0)
}

/// The rewrites from `expr` to its simplified form (with `wrt`, first the
/// derivative rule at each step), one a line.
#[pyfunction]
#[pyo3(signature = (expr, wrt = None))]
fn explain(py: Python<'_>, expr: &str, wrt: Option<&str>) -> PyResult<Py<PyAny>> {
    let mut args = vec![datum(expr)?];
    if let Some(var) = wrt {
        args.extend([keyword("wrt"), symbol(var)?]);
    }
    let value = call(py, "explain", args)?;
    texts(py, &value, 0)
}

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(simplify, m)?)?;
    m.add_function(wrap_pyfunction!(gradient, m)?)?;
    m.add_function(wrap_pyfunction!(hessian, m)?)?;
    m.add_function(wrap_pyfunction!(latex, m)?)?;
    m.add_function(wrap_pyfunction!(codegen, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    Ok(())
}

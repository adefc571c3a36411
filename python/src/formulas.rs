//! The symbolic engine on formula strings: `diff`, `simplify`,
//! `gradient`, `hessian`, `latex`, `codegen`, `explain`. Each takes
//! expressions as s-expression text (`"(* x (sin y))"`) and gives text
//! back (lists for several), evaluated by one engine per thread kept for
//! these functions.

use crate::errors::raised;
use epsilon::Value;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::cell::RefCell;

thread_local! {
    static FORMULAS: RefCell<Option<epsilon::Engine>> = const { RefCell::new(None) };
}

/// The value of the Lisp `source` on this thread's formula engine.
fn evaluate(py: Python<'_>, source: &str) -> PyResult<Value> {
    FORMULAS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let engine = slot.get_or_insert_with(epsilon::Engine::new);
        engine
            .eval_named(source, "<formula>")
            .map_err(|e| raised(py, &e))
    })
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

/// `'(a b c)` from a symbol name or a list of them.
fn symbols(vars: &Bound<'_, PyAny>) -> PyResult<String> {
    match vars.extract::<String>() {
        Ok(one) => Ok(format!("'({one})")),
        Err(_) => {
            let many: Vec<String> = vars.extract()?;
            Ok(format!("'({})", many.join(" ")))
        }
    }
}

/// `'expr`, or `'(e1 e2 ...)` for a list of expressions.
fn quoted(expr: &Bound<'_, PyAny>) -> PyResult<String> {
    match expr.extract::<String>() {
        Ok(one) => Ok(format!("'{one}")),
        Err(_) => {
            let many: Vec<String> = expr.extract()?;
            Ok(format!("'({})", many.join(" ")))
        }
    }
}

/// The (n-th) derivative of `expr` with respect to `var`, simplified.
///
/// >>> epsilon.diff("(* x (sin x))", "x")
/// '(+ (sin x) (* x (cos x)))'
#[pyfunction]
#[pyo3(signature = (expr, var, n = 1))]
fn diff(py: Python<'_>, expr: &str, var: &str, n: u32) -> PyResult<Py<PyAny>> {
    let value = evaluate(py, &format!("(diff '{expr} '{var} {n})"))?;
    texts(py, &value, 0)
}

/// `expr` (or a list of expressions, jointly) simplified.
#[pyfunction]
fn simplify(py: Python<'_>, expr: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let value = evaluate(py, &format!("(simplify {})", quoted(expr)?))?;
    texts(py, &value, depth_of(expr))
}

/// The partial derivatives of `expr` with respect to each of `vars`,
/// simplified together: a list of expressions.
#[pyfunction]
fn gradient(py: Python<'_>, expr: &str, vars: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let value = evaluate(py, &format!("(grad '{expr} {})", symbols(vars)?))?;
    texts(py, &value, 1)
}

/// The Hessian of `expr` in `vars`: a list of rows of expressions.
#[pyfunction]
fn hessian(py: Python<'_>, expr: &str, vars: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let value = evaluate(py, &format!("(hessian '{expr} {})", symbols(vars)?))?;
    texts(py, &value, 2)
}

/// `expr` as LaTeX.
#[pyfunction]
fn latex(py: Python<'_>, expr: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let value = evaluate(py, &format!("(latex {})", quoted(expr)?))?;
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
    let name = name.replace('\\', "\\\\").replace('"', "\\\"");
    let source = format!(
        "(codegen {} {} :lang '{lang} :name \"{name}\")",
        quoted(expr)?,
        symbols(vars)?
    );
    let value = evaluate(py, &source)?;
    texts(py, &value, 0)
}

/// The rewrites from `expr` to its simplified form (with `wrt`, first the
/// derivative rule at each step), one a line.
#[pyfunction]
#[pyo3(signature = (expr, wrt = None))]
fn explain(py: Python<'_>, expr: &str, wrt: Option<&str>) -> PyResult<Py<PyAny>> {
    let source = match wrt {
        Some(var) => format!("(explain '{expr} :wrt '{var})"),
        None => format!("(explain '{expr})"),
    };
    let value = evaluate(py, &source)?;
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

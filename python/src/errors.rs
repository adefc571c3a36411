//! `epsilon.EpsilonError`: every error of the engine, raised with its
//! rendered report (the `file:line:col` header and the source excerpt) as
//! the message and the location as attributes.

use pyo3::BoundObject;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    epsilon,
    EpsilonError,
    PyException,
    "An error from Epsilon: bad input or a failed evaluation. `str(e)` is the \
     report; `e.file`, `e.line` and `e.column` say where (None when unknown), \
     `e.report` is the report and `e.message` the message alone."
);

/// The Python exception for an engine error.
pub fn raised(py: Python<'_>, error: &epsilon::Error) -> PyErr {
    let report = error.render();
    let err = EpsilonError::new_err(report.clone());
    let value = err.value(py);
    let location = error.location();
    let attributes = [
        ("file", object(py, location.map(|l| l.file.clone()))),
        ("line", object(py, location.map(|l| l.line))),
        ("column", object(py, location.map(|l| l.col))),
        ("report", object(py, report)),
        ("message", object(py, error.message())),
    ];
    for (name, attribute) in attributes {
        // A failed setattr leaves the attribute out; the message stays.
        let _ = value.setattr(name, attribute);
    }
    err
}

/// `value` as a Python object (None where it cannot be made).
fn object<'py, T: IntoPyObject<'py>>(py: Python<'py>, value: T) -> Py<PyAny> {
    value
        .into_pyobject(py)
        .map(|v| v.into_any().unbind())
        .unwrap_or_else(|_| py.None())
}

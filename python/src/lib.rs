//! `epsilon._native`: the Epsilon engine as a CPython extension module
//! (pyo3, the stable ABI from Python 3.9). The Python package `epsilon`
//! (`python/epsilon/__init__.py`) re-exports what is here and adds what is
//! plain Python (`to_sympy`).
//!
//! - `engine`: `Engine` (one Lisp engine: eval, call, globals, files) and
//!   `Function` (a Lisp procedure as a Python callable: `grad`, `jit`, ...).
//! - `convert`: Python values and NumPy arrays to Lisp values and back.
//! - `errors`: `EpsilonError`, with the report and its file, line, column.
//! - `owned`: values only the thread that made them may use.
//! - `interrupt`: Ctrl-C stops a computation (`KeyboardInterrupt`).
//! - `output`: Lisp printing goes to `sys.stdout` and `sys.stderr`.
//! - `formulas`: `diff`, `simplify`, `gradient`, `hessian`, `latex`,
//!   `codegen`, `explain` on formula strings.

mod convert;
mod engine;
mod errors;
mod formulas;
mod interrupt;
mod lending;
mod output;
mod owned;

use pyo3::prelude::*;

/// The engine's allocator, as in the `epsilon` command: tensors of
/// megabytes are allocated and freed on every call of a compiled function,
/// and the system allocator hands their pages back to the system each time
/// (a compiled W1 gradient on 10^6 points took 10 ms with it, 0.8 ms with
/// mimalloc); arrays of a few kilobytes go to the system allocator
/// (`epsilon::allocator` says why). Python's own objects keep Python's
/// allocator.
#[global_allocator]
static ALLOCATOR: epsilon::allocator::BySize<mimalloc::MiMalloc> =
    epsilon::allocator::BySize(mimalloc::MiMalloc);

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<engine::Engine>()?;
    m.add_class::<engine::Function>()?;
    m.add("EpsilonError", m.py().get_type::<errors::EpsilonError>())?;
    formulas::register(m)?;
    Ok(())
}

//! The built-ins of the elementwise table (`ir::math::elementwise`): one per
//! row whose built-in is a plain elementwise map (`exp`, `sin`, `hypot`,
//! `logaddexp`, ...), with the row's usage line and docstring. Numbers
//! and tensors (broadcasting, for two operands) give floats through the
//! row's scalar function; inside a traced function the tracer records the
//! row's operator instead (`trace::ops`), so the same call works under
//! `grad`, `jvp`, `jit` and in `scan` bodies.

use super::numeric::{binary, float_unary};
use crate::ir::math::elementwise::{Row, ScalarFn, plain_builtins};
use crate::lisp::error::EvalResult;
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, BuiltinFn};
use crate::lisp::value::Value;

/// The built-in of `row`.
const fn builtin_row(
    row: &Row,
    usage: &'static str,
    doc: &'static str,
    func: BuiltinFn,
) -> Builtin {
    super::builtin(row.name, usage, doc, row.arity, Some(row.arity), func)
}

/// `row`'s value over the arguments, elementwise.
fn plain(_: &mut Interp, args: &Args, row: &Row) -> EvalResult<Value> {
    match row.value {
        ScalarFn::Unary(f) => float_unary(&args[0], f),
        ScalarFn::Binary(f) => binary(&args[0], &args[1], None, f),
    }
}

/// The built-ins of this family, with their docstrings (from the rows).
pub const BUILTINS: &[Builtin] = &plain_builtins!();

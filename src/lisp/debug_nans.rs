//! `(debug-nans #t)` (SPEC section 7): the first operation that makes a
//! NaN or an infinity from finite operands is an error naming the
//! operation, the pass (the function's own, or the derivative of which
//! call) and the call's source location.
//!
//! Eager calls are checked here, after each built-in returns. Traced
//! functions (`grad`, `jit`, `jvp`, ...) are evaluated node by node on the
//! CPU instead of compiled (`Trace::checked_values`), with each node's
//! call recorded while tracing (`Trace::sources`) and each derivative node
//! traced back to the node it differentiates (`TensorGraph::derived_from`).
//! A loop (`scan`, `while-loop`) is one node: a failure inside it names
//! the loop.

use super::error::{EvalError, EvalResult};
use super::value::Value;

/// The first non-finite number of a number or tensor, if any.
fn non_finite(value: &Value) -> Option<f64> {
    match value {
        Value::Float(x) => (!x.is_finite()).then_some(*x),
        Value::Tensor(t) => t.iter().copied().find(|x| !x.is_finite()),
        Value::TensorF32(t) => t.iter().map(|&x| f64::from(x)).find(|x| !x.is_finite()),
        _ => None,
    }
}

/// `value`, the result of built-in `name` on `args`, or the error for a
/// NaN or infinity it made from finite arguments.
pub fn check_call(name: &str, args: &[Value], value: Value) -> EvalResult<Value> {
    let Some(bad) = non_finite(&value) else {
        return Ok(value);
    };
    if args.iter().any(|a| non_finite(a).is_some()) {
        return Ok(value);
    }
    let made = if bad.is_nan() {
        "NaN".to_string()
    } else {
        bad.to_string()
    };
    Err(EvalError::range(format!(
        "debug-nans: ({name} ...) made {made} (forward pass)"
    )))
}

//! The chart built-ins of a build without the `plot` feature: each name is
//! bound, and a call says that this build draws no charts (the full
//! definitions are in `plot` and `charts`).

use super::builtin;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;

/// What every chart built-in answers here.
fn no_charts(_interp: &mut Interp, _args: &Args) -> EvalResult<Value> {
    Err(EvalError::io(
        "this build of Epsilon draws no charts: it was built without the `plot` feature",
    ))
}

const DOC: &str = "Draws a chart; unavailable in this build (without the `plot` feature).";

/// The chart built-ins, each refusing with the same message.
pub const BUILTINS: &[Builtin] = &[
    builtin("plot", "(plot [xs] ys [path] ...)", DOC, 0, None, no_charts),
    builtin(
        "plot-lines",
        "(plot-lines [xs] series [path] ...)",
        DOC,
        0,
        None,
        no_charts,
    ),
    builtin(
        "histogram",
        "(histogram data [path] ...)",
        DOC,
        0,
        None,
        no_charts,
    ),
    builtin("heatmap", "(heatmap t [path] ...)", DOC, 0, None, no_charts),
    builtin("contour", "(contour t [path] ...)", DOC, 0, None, no_charts),
];

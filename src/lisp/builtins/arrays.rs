//! Array functions of SPEC section 7 ("Indexing and arrays") that are one
//! operation of the table or a short composition of operations:
//! triangles and diagonals, cumulative sums and products, flips. Each
//! works eagerly and inside traced functions alike (`apply`).

use super::apply::Apply;
use super::indexing::axis_option;
use super::{builtin, with_options};
use crate::ir::ops::Op;
use crate::ir::ops::linalg::{Diag, Diagonal, Triangle};
use crate::ir::ops::sequence::{Flip, Recurrence};
use crate::ir::{Shape, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;

/// The diagonal offset argument `k` (default 0).
fn offset(args: &Args, at: usize) -> EvalResult<i64> {
    match args.get(at) {
        None | Some(Value::Nil) => Ok(0),
        Some(k) => k.as_i64(),
    }
}

fn triangle(interp: &mut Interp, args: &Args, lower: bool) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let k = offset(args, 1)?;
    apply.table(Op::Triangle(Triangle { lower, k }), &[&args[0]])
}

fn tril(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    triangle(interp, args, true)
}

fn triu(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    triangle(interp, args, false)
}

fn diag(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = apply.shape(&args[0])?;
    match shape.last() {
        Some(&n) => apply.table(Op::Diag(Diag { rows: n, cols: n }), &[&args[0]]),
        None => Err(EvalError::shape(
            "diag needs a vector (or a stack of them), got a number",
        )),
    }
}

fn diagonal(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    apply.table(Op::Diagonal(Diagonal), &[&args[0]])
}

/// The axis of a call along a tensor's axes (default 0), with a number
/// refused.
fn sequence_axis(apply: &Apply, args: &Args, what: &str) -> EvalResult<(Shape, usize)> {
    let shape = apply.shape(&args[0])?;
    if shape.is_empty() {
        return Err(EvalError::shape(format!(
            "{what} needs a tensor, got a number"
        )));
    }
    let axis = axis_option(args, shape.len(), 0)?;
    Ok((shape, axis))
}

fn cumsum(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let (_, axis) = sequence_axis(&apply, args, "cumsum")?;
    let op = Recurrence {
        axis: axis as u8,
        reverse: false,
    };
    apply.table(Op::Recurrence(op), &[&Apply::number(1.0), &args[0]])
}

fn cumprod(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let (shape, axis) = sequence_axis(&apply, args, "cumprod")?;
    let len = shape[axis];
    if len == 0 {
        return Ok(args[0].clone());
    }
    // h[0] = x[0], h[i] = x[i] h[i-1]: the first element drives, the
    // others multiply.
    let first = apply.op(
        TOp::Slice {
            axis: axis as u8,
            start: 0,
            end: 1,
        },
        &[&args[0]],
    )?;
    let driver = apply.op(
        TOp::Pad {
            axis: axis as u8,
            before: 0,
            after: len - 1,
        },
        &[&first],
    )?;
    let op = Recurrence {
        axis: axis as u8,
        reverse: false,
    };
    apply.table(Op::Recurrence(op), &[&args[0], &driver])
}

fn flip(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = apply.shape(&args[0])?;
    if shape.is_empty() {
        return Ok(args[0].clone());
    }
    match args.option("axis") {
        Some(_) => {
            let axis = axis_option(args, shape.len(), 0)?;
            apply.table(Op::Flip(Flip { axis: axis as u8 }), &[&args[0]])
        }
        None => {
            // NumPy: every axis.
            let mut value = args[0].clone();
            for axis in 0..shape.len() {
                value = apply.table(Op::Flip(Flip { axis: axis as u8 }), &[&value])?;
            }
            Ok(value)
        }
    }
}

/// A matrix argument's shape, or an error naming `what`.
pub(crate) fn matrix_shape(apply: &Apply, value: &Value, what: &str) -> EvalResult<Shape> {
    let shape = apply.shape(value)?;
    if shape.len() < 2 {
        return Err(EvalError::shape(format!(
            "{what} needs a matrix (or a stack of them), got shape {}",
            format_shape(&shape)
        )));
    }
    Ok(shape)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("tril", "(tril m [k])", "The lower triangle of each matrix of m (its last two axes): entries on and below diagonal k (0 the main one, -1 below it, 1 above), zeros elsewhere.", 1, Some(2), tril),
    builtin("triu", "(triu m [k])", "The upper triangle of each matrix of m: entries on and above diagonal k, zeros elsewhere.", 1, Some(2), triu),
    builtin("diag", "(diag v)", "The square matrix with the vector v on its diagonal (for a stack of vectors, a stack of matrices).", 1, Some(1), diag),
    builtin("diagonal", "(diagonal m)", "The main diagonal of each matrix of m (of length min(rows, cols)).", 1, Some(1), diagonal),
    with_options(builtin("cumsum", "(cumsum t :axis k)", "Cumulative sums along axis k (default 0): element i is the sum of elements 0..i.", 1, Some(1), cumsum), &["axis"]),
    with_options(builtin("cumprod", "(cumprod t :axis k)", "Cumulative products along axis k (default 0): element i is the product of elements 0..i. Its derivative is exact where elements are zero.", 1, Some(1), cumprod), &["axis"]),
    with_options(builtin("flip", "(flip t :axis k)", "The elements in reverse order along axis k; without :axis, along every axis (NumPy's flip).", 1, Some(1), flip), &["axis"]),
];

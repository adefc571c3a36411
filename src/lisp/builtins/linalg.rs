//! Dense linear algebra (SPEC section 7, "Linear algebra"), batched over
//! leading axes: each function is an operation of the table
//! (`crate::ops::linalg`) or a composition of them, so it is
//! differentiable in both modes and works in `jit` and `scan` bodies.
//!
//! A right-hand side is a vector when it has one axis (NumPy 2's rule);
//! for a stack of vectors give it a trailing axis of length 1.

use super::apply::Apply;
use super::arrays::matrix_shape;
use super::{builtin, with_options};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use crate::ops::Op;
use crate::ops::linalg::{Cholesky, Solve, TriangularSolve};
use std::rc::Rc;

/// A boolean option (default `default`).
fn flag(args: &Args, name: &str, default: bool) -> bool {
    args.option(name).map_or(default, Value::is_truthy)
}

/// The side of square matrices, or an error naming `what` and the shape.
fn square(apply: &Apply, value: &Value, what: &str) -> EvalResult<usize> {
    let shape = matrix_shape(apply, value, what)?;
    let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    if rows != cols {
        return Err(EvalError::shape(format!(
            "{what} needs square matrices, got shape {}",
            format_shape(&shape)
        )));
    }
    Ok(rows)
}

/// Whether the right-hand side `b` is a vector (one axis).
fn is_vector(apply: &Apply, b: &Value) -> EvalResult<bool> {
    let shape = apply.shape(b)?;
    if shape.is_empty() {
        return Err(EvalError::shape(
            "the right-hand side must be a vector or a matrix, got a number",
        ));
    }
    Ok(shape.len() == 1)
}

fn cholesky(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    square(&apply, &args[0], "cholesky")?;
    let op = Cholesky { site: apply.site() };
    apply.table(Op::Cholesky(op), &[&args[0]])
}

fn triangular_solve(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    square(&apply, &args[0], "triangular-solve")?;
    let op = TriangularSolve {
        lower: flag(args, "lower", true),
        transpose: flag(args, "transpose", false),
        vector: is_vector(&apply, &args[1])?,
        site: apply.site(),
    };
    apply.table(Op::TriangularSolve(op), &[&args[0], &args[1]])
}

fn solve(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    square(&apply, &args[0], "solve")?;
    let op = Solve {
        transpose: false,
        vector: is_vector(&apply, &args[1])?,
        site: apply.site(),
    };
    apply.table(Op::Solve(op), &[&args[0], &args[1]])
}

fn inv(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let n = square(&apply, &args[0], "inv")?;
    let eye = Value::Tensor(Rc::new(ndarray::Array2::<f64>::eye(n).into_dyn()));
    let op = Solve {
        transpose: false,
        vector: false,
        site: apply.site(),
    };
    apply.table(Op::Solve(op), &[&args[0], &eye])
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("cholesky", "(cholesky a)", "The lower Cholesky factor l of each symmetric positive definite matrix of a (l lᵀ = a; the factor of (a + aᵀ)/2). A matrix that is not positive definite is an error naming the failing pivot. Differentiable (Murray 2016).", 1, Some(1), cholesky),
    with_options(builtin("triangular-solve", "(triangular-solve a b :lower #t :transpose #f)", "The solution x of a x = b (aᵀ x = b with :transpose #t) for triangular a: only its lower (or, with :lower #f, upper) triangle is read. b is a vector or a stack of matrices; leading axes broadcast. A zero on the diagonal is an error.", 2, Some(2), triangular_solve), &["lower", "transpose"]),
    builtin("solve", "(solve a b)", "The solution x of a x = b for square a (LU with partial pivoting). b is a vector (one axis) or a stack of matrices; leading axes broadcast. A singular matrix is an error naming the zero pivot.", 2, Some(2), solve),
    builtin("inv", "(inv a)", "The inverse of each square matrix of a (a solve against the identity). A singular matrix is an error.", 1, Some(1), inv),
];

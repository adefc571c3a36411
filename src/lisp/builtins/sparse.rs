//! Sparse derivatives (SPEC section 7, "Transformations and number
//! types"): `sparse-jacobian` and `sparse-hessian`, the pattern read from
//! the traced program, its columns coloured, all colours' directions in
//! one batched pass.

use super::builtin;
use crate::ad::sparse::{Triplets, recover_columns, recover_symmetric};
use crate::lisp::autodiff::{self, Request, SparseKind};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};

/// The most non-zeros a sparse Jacobian may hold (a denser one is better
/// computed densely).
const MAX_NNZ: usize = 50_000_000;

/// `(sparse-jacobian f x)`: the Jacobian of f at x as `(rows cols values)`.
fn sparse_jacobian(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    sparse_derivative(interp, args, SparseKind::Jacobian)
}

/// `(sparse-hessian f x)`: the Hessian of f at x as `(rows cols values)`.
fn sparse_hessian(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    sparse_derivative(interp, args, SparseKind::Hessian)
}

/// The pattern read from the program, its columns coloured (distance-1
/// for a Jacobian, a star colouring of a Hessian's symmetric pattern), the
/// colours' directions as one batch of forward-mode products (over one
/// reverse sweep for a Hessian), the entries recovered.
fn sparse_derivative(interp: &mut Interp, args: &Args, kind: SparseKind) -> EvalResult<Value> {
    let form = kind.form();
    let f = &args[0];
    if !matches!(f, Value::Procedure(_)) {
        return Err(EvalError::type_error(format!(
            "{form}: expected a function, got {} {}",
            f.type_name(),
            f.short()
        )));
    }
    // An integer x is a point like any other (not a static argument).
    let x = match &args[1] {
        Value::Int(n) => Value::Float(*n as f64),
        other => other.clone(),
    };
    let shape: Vec<usize> = match &x {
        Value::Tensor(t) => t.shape().to_vec(),
        Value::Float(_) => Vec::new(),
        other => {
            return Err(EvalError::type_error(format!(
                "{form}: x must be a number or tensor, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    let x = std::slice::from_ref(&x);
    let compression = autodiff::derivative_sparsity(interp, f, x, kind, MAX_NNZ)?;
    let (pattern, colouring) = (&compression.pattern, &compression.colouring);
    let count = colouring.count;
    // All colours' directions as one batch: one pass.
    let seed = seeds_of(&shape, &colouring.groups())?;
    let request = match kind {
        SparseKind::Jacobian => Request::JvpBatch,
        SparseKind::Hessian => Request::HvpBatch,
    };
    let outcome = autodiff::run(interp, f, x, &request, &[seed])?;
    let products = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    let numbers = numbers_of(&products, form)?;
    // [count, rows] to rows of `count` numbers.
    let rows = pattern.nrows();
    let mut compressed = vec![0.0; count * rows];
    for (c, column) in numbers.chunks_exact(rows.max(1)).enumerate().take(count) {
        for (i, &value) in column.iter().enumerate() {
            compressed[i * count + c] = value;
        }
    }
    Ok(triplets_value(match kind {
        SparseKind::Jacobian => recover_columns(pattern, colouring, &compressed),
        SparseKind::Hessian => recover_symmetric(pattern, colouring, &compressed),
    }))
}

/// The directions of the colours, stacked: direction `c` has ones at the
/// flat positions of x in `groups[c]`.
fn seeds_of(shape: &[usize], groups: &[Vec<usize>]) -> EvalResult<Value> {
    let full: Vec<usize> = std::iter::once(groups.len())
        .chain(shape.iter().copied())
        .collect();
    // As many directions as colours: a pattern with a dense row needs as
    // many as x has elements.
    crate::lisp::tensor::check_allocation(&full)?;
    let n: usize = shape.iter().product();
    let mut data = vec![0.0; groups.len() * n];
    for (c, columns) in groups.iter().enumerate() {
        for &j in columns {
            data[c * n + j] = 1.0;
        }
    }
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&full), data).expect("p directions of x's shape"),
    ))
}

/// A number's or tensor's numbers, row-major.
fn numbers_of(value: &Value, form: &str) -> EvalResult<Vec<f64>> {
    match value {
        Value::Tensor(t) => Ok(t.iter().copied().collect()),
        Value::Float(x) => Ok(vec![*x]),
        Value::Int(n) => Ok(vec![*n as f64]),
        other => Err(EvalError::type_error(format!(
            "{form} needs a function returning one number or tensor, this one returned {}",
            other.short()
        ))),
    }
}

/// `(rows cols values)` as three vectors.
fn triplets_value(t: Triplets) -> Value {
    let vector = |data: Vec<f64>| {
        Value::tensor(ArrayD::from_shape_vec(IxDyn(&[data.len()]), data).expect("a vector"))
    };
    let index = |v: &[usize]| vector(v.iter().map(|&i| i as f64).collect());
    Value::list([index(&t.rows), index(&t.cols), vector(t.values)])
}

pub const BUILTINS: &[Builtin] = &[
    builtin(
        "sparse-jacobian",
        "(sparse-jacobian f x)",
        "The Jacobian of f (one number or tensor out) at x as (rows cols values): three vectors listing its entries that may be non-zero, row-major (rows and cols are flat positions in f's result and in x). The pattern is read from the traced program, not probed; the columns are coloured so that no two of a colour share a row, and each colour is one direction of a single batched forward-mode pass: a tridiagonal Jacobian of any size takes three.",
        2,
        Some(2),
        sparse_jacobian,
    ),
    builtin(
        "sparse-hessian",
        "(sparse-hessian f x)",
        "The Hessian of f (one number out) at x as (rows cols values): three vectors listing its entries that may be non-zero, row-major (rows and cols are flat positions in x). The pattern is read from the program of f's gradient (no probing) and made symmetric; a star colouring groups the columns so that each entry can be read from one Hessian-vector product per colour, and all colours run as one batch, forward over one reverse sweep: a tridiagonal Hessian of any size takes three.",
        2,
        Some(2),
        sparse_hessian,
    ),
];

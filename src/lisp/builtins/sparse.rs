//! Sparse derivatives (SPEC section 7, "Transformations and number
//! types"): `sparse-jacobian`, its pattern read from the traced program,
//! its columns coloured, all colours' directions in one batched forward
//! pass.

use super::builtin;
use crate::lisp::autodiff::{self, Request};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use crate::sparse::{Triplets, column_colouring, recover_columns};
use ndarray::{ArrayD, IxDyn};

/// The most non-zeros a sparse Jacobian may hold (a denser one is better
/// computed densely).
const MAX_NNZ: usize = 50_000_000;

/// `(sparse-jacobian f x)`: the Jacobian of f at x as `(rows cols values)`.
fn sparse_jacobian(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (f, x) = (&args[0], &args[1]);
    if !matches!(f, Value::Procedure(_)) {
        return Err(EvalError::type_error(format!(
            "sparse-jacobian: expected a function, got {} {}",
            f.type_name(),
            f.short()
        )));
    }
    let shape: Vec<usize> = match x {
        Value::Tensor(t) => t.shape().to_vec(),
        Value::Float(_) | Value::Int(_) => Vec::new(),
        other => {
            return Err(EvalError::type_error(format!(
                "sparse-jacobian: x must be a number or tensor, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    let pattern = autodiff::jacobian_sparsity(interp, f, std::slice::from_ref(x), MAX_NNZ)?;
    let colouring = column_colouring(&pattern);
    let count = colouring.count;
    // All colours' directions as one batch: one forward pass.
    let seed = seeds_of(&shape, &colouring.groups())?;
    let outcome = autodiff::run(
        interp,
        f,
        std::slice::from_ref(x),
        &Request::JvpBatch,
        &[seed],
    )?;
    let products = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    let numbers = numbers_of(&products)?;
    // [count, rows] to rows of `count` numbers.
    let rows = pattern.nrows();
    let mut compressed = vec![0.0; count * rows];
    for (c, column) in numbers.chunks_exact(rows.max(1)).enumerate().take(count) {
        for (i, &value) in column.iter().enumerate() {
            compressed[i * count + c] = value;
        }
    }
    Ok(triplets_value(recover_columns(
        &pattern,
        &colouring,
        &compressed,
    )))
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
fn numbers_of(value: &Value) -> EvalResult<Vec<f64>> {
    match value {
        Value::Tensor(t) => Ok(t.iter().copied().collect()),
        Value::Float(x) => Ok(vec![*x]),
        Value::Int(n) => Ok(vec![*n as f64]),
        other => Err(EvalError::type_error(format!(
            "sparse-jacobian needs a function returning one number or tensor, this one returned {}",
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

pub const BUILTINS: &[Builtin] = &[builtin(
    "sparse-jacobian",
    "(sparse-jacobian f x)",
    "The Jacobian of f (one number or tensor out) at x as (rows cols values): three vectors listing its entries that may be non-zero, row-major (rows and cols are flat positions in f's result and in x). The pattern is read from the traced program, not probed; the columns are coloured so that no two of a colour share a row, and each colour is one direction of a single batched forward-mode pass: a tridiagonal Jacobian of any size takes three.",
    2,
    Some(2),
    sparse_jacobian,
)];

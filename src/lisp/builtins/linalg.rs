//! Dense linear algebra (SPEC section 7, "Linear algebra"), batched over
//! leading axes: each function is an operation of the table
//! (`crate::ir::ops::linalg`) or a composition of them, so it is
//! differentiable in both modes and works in `jit` and `scan` bodies.
//!
//! A right-hand side is a vector when it has one axis (NumPy 2's rule);
//! for a stack of vectors give it a trailing axis of length 1.
//!
//! Operations with several results (`slogdet`, `eigh`, `svd`, `qr`) are
//! one packed operation whose parts are sliced out here into a list;
//! `lstsq` is a composition of `qr`, a rank check and triangular solves.

use super::apply::Apply;
use super::arrays::matrix_shape;
use super::{builtin, with_options};
use crate::ir::ops::Op;
use crate::ir::ops::linalg::{
    Cholesky, Det, Eigh, FullRank, MatrixExp, Qr, Slogdet, Solve, Svd, TriangularSolve,
};
use crate::ir::{Shape, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use smallvec::SmallVec;
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
    // The identity in the matrix's type (an f32 matrix's inverse is f32).
    crate::lisp::tensor::check_allocation(&[n, n])?;
    let eye = Value::Tensor(Rc::new(ndarray::Array2::<f64>::eye(n).into_dyn()));
    let eye = super::dtype::converted(&eye, crate::lisp::trace::value_dtype(&args[0]).strong());
    let op = Solve {
        transpose: false,
        vector: false,
        site: apply.site(),
    };
    apply.table(Op::Solve(op), &[&args[0], &eye])
}

/// The packed result of a table operation as a list of its parts (shapes
/// in order).
pub(crate) fn unpacked(apply: &Apply, packed: &Value, parts: &[Shape]) -> EvalResult<Value> {
    let mut offset = 0;
    let mut items = Vec::with_capacity(parts.len());
    for shape in parts {
        let len: usize = shape.iter().product();
        let slice = TOp::Slice {
            axis: 0,
            start: offset,
            end: offset + len,
        };
        let piece = apply.op(slice, &[packed])?;
        items.push(apply.op(TOp::Reshape(shape.clone()), &[&piece])?);
        offset += len;
    }
    Ok(Value::list(items))
}

/// `lead` followed by `core`.
fn stacked(lead: &[usize], core: &[usize]) -> Shape {
    lead.iter().chain(core).copied().collect()
}

/// The last two axes of `value` swapped.
fn transposed(apply: &Apply, value: &Value) -> EvalResult<Value> {
    let rank = apply.shape(value)?.len() as u8;
    let perm: SmallVec<[u8; 4]> = (0..rank - 2).chain([rank - 1, rank - 2]).collect();
    apply.op(TOp::Transpose(perm), &[value])
}

fn det(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    square(&apply, &args[0], "det")?;
    let op = Det { site: apply.site() };
    apply.table(Op::Det(op), &[&args[0]])
}

fn slogdet(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = matrix_shape(&apply, &args[0], "slogdet")?;
    square(&apply, &args[0], "slogdet")?;
    let lead: Shape = shape[..shape.len() - 2].iter().copied().collect();
    let op = Slogdet { site: apply.site() };
    let packed = apply.table(Op::Slogdet(op), &[&args[0]])?;
    unpacked(&apply, &packed, &[lead.clone(), lead])
}

fn eigh(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = matrix_shape(&apply, &args[0], "eigh")?;
    let n = square(&apply, &args[0], "eigh")?;
    let lead = &shape[..shape.len() - 2];
    let op = Eigh { site: apply.site() };
    let packed = apply.table(Op::Eigh(op), &[&args[0]])?;
    unpacked(
        &apply,
        &packed,
        &[stacked(lead, &[n]), stacked(lead, &[n, n])],
    )
}

fn svd(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = matrix_shape(&apply, &args[0], "svd")?;
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let k = m.min(n);
    let lead = &shape[..shape.len() - 2];
    let op = Svd { site: apply.site() };
    let packed = apply.table(Op::Svd(op), &[&args[0]])?;
    let parts = [
        stacked(lead, &[m, k]),
        stacked(lead, &[k]),
        stacked(lead, &[k, n]),
    ];
    unpacked(&apply, &packed, &parts)
}

/// `(q r)` of the thin QR factorization of `a` (of shape `shape`), as
/// values.
fn qr_parts(apply: &Apply, a: &Value, shape: &[usize]) -> EvalResult<Vec<Value>> {
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let k = m.min(n);
    let lead = &shape[..shape.len() - 2];
    let op = Qr { site: apply.site() };
    let packed = apply.table(Op::Qr(op), &[a])?;
    let parts = [stacked(lead, &[m, k]), stacked(lead, &[k, n])];
    unpacked(apply, &packed, &parts)?.list_to_vec()
}

fn qr(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = matrix_shape(&apply, &args[0], "qr")?;
    Ok(Value::list(qr_parts(&apply, &args[0], &shape)?))
}

fn lstsq(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = matrix_shape(&apply, &args[0], "lstsq")?;
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let vector = is_vector(&apply, &args[1])?;
    let b_shape = apply.shape(&args[1])?;
    let rows = b_shape[b_shape.len() - usize::from(!vector) - 1];
    if rows != m {
        let expected = if vector {
            format!("[.. {m}]")
        } else {
            format!("[.. {m} k]")
        };
        return Err(EvalError::shape(format!(
            "a matrix of shape {} and a right-hand side of shape {} do not fit (expected {expected})",
            format_shape(&shape),
            format_shape(&b_shape)
        )));
    }
    let b = if vector {
        apply.op(TOp::Reshape(SmallVec::from_slice(&[m, 1])), &[&args[1]])?
    } else {
        args[1].clone()
    };
    let site = apply.site();
    let upper = |transpose: bool| {
        Op::TriangularSolve(TriangularSolve {
            lower: false,
            transpose,
            vector: false,
            site,
        })
    };
    let check = Op::FullRank(FullRank {
        size: m.max(n),
        site,
    });
    let x = if m >= n {
        // x = R⁻¹ Qᵀ b
        let parts = qr_parts(&apply, &args[0], &shape)?;
        let r = apply.table(check, &[&parts[1]])?;
        let qt = transposed(&apply, &parts[0])?;
        let c = apply.op(TOp::MatMul, &[&qt, &b])?;
        apply.table(upper(false), &[&r, &c])?
    } else {
        // aᵀ = Q R, so the minimum-norm x = Q R⁻ᵀ b.
        let at = transposed(&apply, &args[0])?;
        let at_shape = apply.shape(&at)?;
        let parts = qr_parts(&apply, &at, &at_shape)?;
        let r = apply.table(check, &[&parts[1]])?;
        let z = apply.table(upper(true), &[&r, &b])?;
        apply.op(TOp::MatMul, &[&parts[0], &z])?
    };
    if !vector {
        return Ok(x);
    }
    let x_shape = apply.shape(&x)?;
    let target: Shape = x_shape[..x_shape.len() - 1].iter().copied().collect();
    apply.op(TOp::Reshape(target), &[&x])
}

fn matrix_exp(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    square(&apply, &args[0], "matrix-exp")?;
    let op = MatrixExp { site: apply.site() };
    apply.table(Op::MatrixExp(op), &[&args[0]])
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("cholesky", "(cholesky a)", "The lower Cholesky factor l of each symmetric positive definite matrix of a (l lᵀ = a; the factor of (a + aᵀ)/2). A matrix that is not positive definite is an error naming the failing pivot. Differentiable (Murray 2016). Of a complex Hermitian positive definite matrix: l lᴴ = (a + aᴴ)/2, the diagonal real and positive (docs/complex.md).", 1, Some(1), cholesky),
    with_options(builtin("triangular-solve", "(triangular-solve a b :lower #t :transpose #f)", "The solution x of a x = b (aᵀ x = b with :transpose #t) for triangular a: only its lower (or, with :lower #f, upper) triangle is read. b is a vector or a stack of matrices; leading axes broadcast. A zero on the diagonal is an error.", 2, Some(2), triangular_solve), &["lower", "transpose"]),
    builtin("solve", "(solve a b)", "The solution x of a x = b for square a (LU with partial pivoting). b is a vector (one axis) or a stack of matrices; leading axes broadcast. A singular matrix is an error naming the zero pivot.", 2, Some(2), solve),
    builtin("inv", "(inv a)", "The inverse of each square matrix of a (a solve against the identity). A singular matrix is an error.", 1, Some(1), inv),
    builtin("det", "(det a)", "The determinant of each square matrix of a (LU with partial pivoting); 0 for a singular matrix; complex for a complex matrix (sign * exp(logabsdet), see slogdet). Differentiable everywhere: the derivative is the adjugate (transposed), taken from the SVD so it is finite at singular matrices too.", 1, Some(1), det),
    builtin("slogdet", "(slogdet a)", "The list (sign logabsdet) of each square matrix of a: det a = sign * exp(logabsdet), without overflow; for a complex matrix the sign is complex, of modulus 1 (NumPy's slogdet). A singular matrix gives (0 -inf). The sign has derivative 0; logabsdet has derivative a⁻ᵀ, an error at a singular matrix.", 1, Some(1), slogdet),
    builtin("eigh", "(eigh a)", "The list (eigenvalues eigenvectors) of each symmetric matrix of a (of (a + aᵀ)/2; of a complex Hermitian matrix, real eigenvalues and complex eigenvectors, each with its largest-magnitude entry real and positive, and a matrix that is not Hermitian is an error): eigenvalues in ascending order, eigenvectors as the columns of an orthogonal matrix, each with its largest-magnitude entry positive. Differentiable; at repeated eigenvalues the derivative is finite (never NaN), exact for functions of the eigenvalues, and drops the coupling between eigenvectors of a repeated eigenvalue (docs/linear-algebra.md).", 1, Some(1), eigh),
    builtin("svd", "(svd a)", "The list (u s vt) of the thin singular value decomposition of each m x n matrix of a: a = u diag(s) vt, k = min(m, n), u m x k and vt k x n with orthonormal columns (rows), s non-negative and descending; the largest-magnitude entry of each column of u is positive. Differentiable; at repeated or zero singular values the derivative is finite (never NaN), exact for functions of s, and drops the coupling between vectors of a repeated or zero singular value (docs/linear-algebra.md). Of a complex matrix: (u s vh), a = u diag(s) vh, s real; the largest-magnitude entry of each column of u is real and positive (docs/complex.md).", 1, Some(1), svd),
    builtin("qr", "(qr a)", "The list (q r) of the thin QR factorization of each m x n matrix of a: a = q r, k = min(m, n), q m x k with orthonormal columns, r k x n upper triangular with a non-negative diagonal. Differentiable where the leading k x k block of r is invertible. Of a complex matrix: q has orthonormal columns (qᴴ q = I) and r a real non-negative diagonal (docs/complex.md).", 1, Some(1), qr),
    builtin("lstsq", "(lstsq a b)", "The least-squares solution x of a x = b: for a tall or square a of full column rank the x minimizing |a x - b| (from the QR factorization of a), for a wide a of full row rank the solution of smallest norm (from the QR factorization of aᵀ). b is a vector (one axis) or a stack of matrices; leading axes broadcast. A rank-deficient a is an error. Differentiable.", 2, Some(2), lstsq),
    builtin("matrix-exp", "(matrix-exp a)", "The exponential of each square matrix of a (scaling and squaring with a Padé approximant, Higham 2005). Differentiable to any order (the Fréchet derivative is a block of the exponential of a matrix twice the size).", 1, Some(1), matrix_exp),
];

//! Linear algebra of complex matrices through their real embedding
//!
//! ```text
//! A = Ar + i Ai   ->   M = [[Ar, -Ai], [Ai, Ar]]   (2n x 2n, real)
//! ```
//!
//! which maps sums, products and inverses of complex matrices to those of
//! real ones, and a complex vector `x` to `[xr; xi]` with the same norm.
//! So `A x = b` is `M [xr; xi] = [br; bi]`, the inverse and the
//! exponential of `A` are blocks of those of `M`, and a least-squares
//! problem keeps its minimizer. These are the real operations with their
//! own derivative rules, so the complex results are differentiated
//! exactly; the price is a real problem twice the size (twice a complex
//! LU's flops). A real matrix with a complex right-hand side is one real
//! solve per part. The factorizations are the exception (the embedding
//! doubles every eigenvalue and singular value, and its factors are not
//! the embeddings of complex factors): `eigh`, `det`/`slogdet`,
//! `cholesky`, `qr` and `svd` are operations of their own on the two
//! parts (`ir::ops::linalg::EighHermitian`, `SlogdetComplex`,
//! `CholeskyComplex`, `QrComplex`, `SvdComplex`), called by `on_parts`.

use super::lowering::Call;
use super::{Lower, Parts, shape_of};
use crate::ir::Shape;
use crate::ir::ops::Op;
use crate::ir::ops::linalg::{
    CholeskyComplex, EighHermitian, QrComplex, SlogdetComplex, SvdComplex,
};
use crate::lisp::builtins::apply::Apply;
use crate::lisp::builtins::linalg::unpacked;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::symbol::Symbol;
use crate::lisp::value::Value;

fn keyword(name: &str) -> Value {
    Value::Keyword(Symbol::intern(name))
}

/// `concat` of `parts` along `axis` (negative from the end).
fn join(lower: &mut Lower, parts: Vec<Value>, axis: i64) -> EvalResult<Value> {
    lower.call(
        "concat",
        &[Value::list(parts), keyword("axis"), Value::Int(axis)],
    )
}

/// Elements `start..end` of `value` along `axis`.
fn cut(lower: &mut Lower, value: &Value, start: usize, end: usize, axis: i64) -> EvalResult<Value> {
    lower.call(
        "slice",
        &[
            value.clone(),
            Value::Int(start as i64),
            Value::Int(end as i64),
            keyword("axis"),
            Value::Int(axis),
        ],
    )
}

/// The imaginary part, made when it is zero.
fn imaginary(lower: &mut Lower, z: &Parts) -> EvalResult<Value> {
    match &z.im {
        Some(im) => Ok(im.clone()),
        None => lower.zeros_like(&z.re),
    }
}

/// `M = [[Ar, -Ai], [Ai, Ar]]` of each matrix of `a`.
fn embedded(lower: &mut Lower, a: &Parts) -> EvalResult<Value> {
    let ai = imaginary(lower, a)?;
    let minus = lower.call("-", std::slice::from_ref(&ai))?;
    let top = join(lower, vec![a.re.clone(), minus], -1)?;
    let bottom = join(lower, vec![ai, a.re.clone()], -1)?;
    join(lower, vec![top, bottom], -2)
}

/// The axis along which a right-hand side is stacked: its only axis for
/// a vector, its rows for a stack of matrices.
fn rhs_axis(b: &Value) -> EvalResult<i64> {
    Ok(match shape_of(b)?.len() {
        1 => -1,
        _ => -2,
    })
}

/// `[br; bi]`, stacked along the rows (or the vector's axis).
fn stacked(lower: &mut Lower, b: &Parts) -> EvalResult<(Value, i64)> {
    let axis = rhs_axis(&b.re)?;
    let bi = imaginary(lower, b)?;
    Ok((join(lower, vec![b.re.clone(), bi], axis)?, axis))
}

/// `[xr; xi]` (of `2n` along `axis`) as the complex value `xr + i xi`.
fn unstacked(lower: &mut Lower, x: &Value, axis: i64) -> EvalResult<Value> {
    let shape = shape_of(x)?;
    let at = (shape.len() as i64 + axis) as usize;
    let n = shape[at] / 2;
    let re = cut(lower, x, 0, n, axis)?;
    let im = cut(lower, x, n, 2 * n, axis)?;
    Ok(Value::complex(re, im))
}

/// The complex matrix whose embedding is `m`: its first block column.
fn from_embedding(lower: &mut Lower, m: &Value) -> EvalResult<Value> {
    let shape = shape_of(m)?;
    let rows = shape[shape.len() - 2] / 2;
    let cols = shape[shape.len() - 1] / 2;
    let column = cut(lower, m, 0, cols, -1)?;
    let re = cut(lower, &column, 0, rows, -2)?;
    let im = cut(lower, &column, rows, 2 * rows, -2)?;
    Ok(Value::complex(re, im))
}

/// The matrix and right-hand side of a solve-like call.
fn operands<'a>(call: &'a Call) -> EvalResult<(&'a Value, &'a Value)> {
    match call.positional {
        [a, b] => Ok((a, b)),
        _ => Err(EvalError::type_error(format!(
            "{} takes a matrix and a right-hand side",
            call.name
        ))),
    }
}

/// A solve-like call (`solve`, `lstsq`) of `a` and `b`, either complex.
fn solved(lower: &mut Lower, call: &Call, a: &Value, b: &Value) -> EvalResult<Value> {
    let (a, b) = (Parts::of(a), Parts::of(b));
    let with_options = |mut args: Vec<Value>| {
        args.extend(call.options.iter().cloned());
        args
    };
    if a.im.is_none() {
        // Linear in b: one real solve per part.
        let re = lower.call(call.name, &with_options(vec![a.re.clone(), b.re.clone()]))?;
        let im = match &b.im {
            Some(im) => Some(lower.call(call.name, &with_options(vec![a.re.clone(), im.clone()]))?),
            None => None,
        };
        return lower.value(re, im);
    }
    let m = embedded(lower, &a)?;
    let (rhs, axis) = stacked(lower, &b)?;
    let x = lower.call(call.name, &with_options(vec![m, rhs]))?;
    unstacked(lower, &x, axis)
}

pub(super) fn solve(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let (a, b) = operands(call)?;
    solved(lower, call, a, b)
}

pub(super) fn lstsq(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let (a, b) = operands(call)?;
    solved(lower, call, a, b)
}

/// The triangle `triangular-solve` reads (`:lower`, default #t), and
/// whether it is transposed (`:transpose`, not conjugated), from the
/// call's options.
fn triangle_options(call: &Call) -> (bool, bool) {
    let (mut lower, mut transpose) = (true, false);
    for pair in call.options.chunks(2) {
        if let [Value::Keyword(k), value] = pair {
            match k.name() {
                "lower" => lower = value.is_truthy(),
                "transpose" => transpose = value.is_truthy(),
                _ => {}
            }
        }
    }
    (lower, transpose)
}

/// A complex triangular matrix: its triangle kept (the other one is not
/// read, as for real matrices), transposed when asked, then solved as a
/// general complex system (the embedding of a triangular matrix is not
/// triangular: this costs a general solve).
pub(super) fn triangular_solve(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let (a, b) = operands(call)?;
    let (lower_triangle, transpose) = triangle_options(call);
    let z = Parts::of(a);
    if z.im.is_none() {
        let solve = Call {
            name: call.name,
            positional: call.positional,
            options: call.options,
        };
        return solved(lower, &solve, a, b);
    }
    let triangle = if lower_triangle { "tril" } else { "triu" };
    let part = |lower: &mut Lower, part: &Value| -> EvalResult<Value> {
        let kept = lower.call(triangle, std::slice::from_ref(part))?;
        match transpose {
            true => {
                let rank = shape_of(&kept)?.len();
                let mut axes: Vec<Value> = (0..rank).map(|k| Value::Int(k as i64)).collect();
                axes.swap(rank - 2, rank - 1);
                lower.call("transpose", &[kept, Value::list(axes)])
            }
            false => Ok(kept),
        }
    };
    let re = part(lower, &z.re)?;
    let im = match &z.im {
        Some(im) => Some(part(lower, im)?),
        None => None,
    };
    let matrix = lower.value(re, im)?;
    let solve = Call {
        name: "solve",
        positional: &[],
        options: &[],
    };
    solved(lower, &solve, &matrix, b)
}

/// A function of one matrix that the embedding carries over (`inv`,
/// `matrix-exp`): computed on `M`, read from its first block column.
pub(super) fn of_embedding(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [a] = call.positional else {
        return Err(EvalError::type_error(format!(
            "{} takes one matrix",
            call.name
        )));
    };
    let z = Parts::of(a);
    let m = embedded(lower, &z)?;
    let result = lower.call(call.name, &[m])?;
    from_embedding(lower, &result)
}

/// The packed results of the table operation `op` (made with the call's
/// site) on the two parts of the complex matrices `a`, as values of the
/// shapes `parts` gives for the matrices' shape.
fn on_parts(
    lower: &mut Lower,
    call: &Call,
    op: fn(crate::ir::ops::Site) -> Op,
    parts: fn(&[usize]) -> Vec<Shape>,
) -> EvalResult<Vec<Value>> {
    let [a] = call.positional else {
        return Err(EvalError::type_error(format!(
            "{} takes one matrix",
            call.name
        )));
    };
    let z = Parts::of(a);
    let im = imaginary(lower, &z)?;
    let shape = shape_of(&z.re)?;
    // Run-time failures name this call.
    let saved = std::mem::replace(&mut lower.interp.call_span, lower.span);
    let result = (|| {
        let apply = Apply::new(lower.interp, &[z.re.clone(), im.clone()]);
        let packed = apply.table(op(apply.site()), &[&z.re, &im])?;
        unpacked(&apply, &packed, &parts(&shape))?.list_to_vec()
    })();
    lower.interp.call_span = saved;
    // Computed in f64; c64 matrices give results of their own precision.
    match crate::lisp::trace::value_dtype(&z.re) {
        crate::dtype::DType::F32 => result?
            .into_iter()
            .map(|item| lower.call("astype", &[item, Value::symbol("f32")]))
            .collect(),
        _ => result,
    }
}

/// The leading axes of matrices of `shape`, followed by `core`.
fn with_lead(shape: &[usize], core: &[usize]) -> Shape {
    shape[..shape.len().saturating_sub(2)]
        .iter()
        .chain(core)
        .copied()
        .collect()
}

/// `eigh` of a complex Hermitian matrix: the table's Hermitian
/// eigendecomposition on the two parts (not the embedding, whose
/// eigenvalues are all doubled): `(w V)`, `w` real and ascending, `V`
/// complex with each column's largest entry real and positive.
pub(super) fn eigh(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let items = on_parts(
        lower,
        call,
        |site| Op::EighHermitian(EighHermitian { site }),
        EighHermitian::parts,
    )?;
    let vectors = lower.value(items[1].clone(), Some(items[2].clone()))?;
    Ok(Value::list([items[0].clone(), vectors]))
}

/// `(sign log)` of the determinant of each complex matrix: the table's
/// complex `slogdet` on the two parts, the sign complex.
fn sign_and_log(lower: &mut Lower, call: &Call) -> EvalResult<(Value, Value)> {
    let items = on_parts(
        lower,
        call,
        |site| Op::SlogdetComplex(SlogdetComplex { site }),
        |shape| vec![with_lead(shape, &[]); 3],
    )?;
    let sign = lower.value(items[0].clone(), Some(items[1].clone()))?;
    Ok((sign, items[2].clone()))
}

/// NumPy's `slogdet` of complex matrices: `(sign log)`, the sign complex
/// of modulus 1 (0 for a singular matrix).
pub(super) fn slogdet(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let (sign, log) = sign_and_log(lower, call)?;
    Ok(Value::list([sign, log]))
}

/// The determinant of complex matrices: `sign * exp(log)`.
pub(super) fn det(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let (sign, log) = sign_and_log(lower, call)?;
    let size = lower.call("exp", &[log])?;
    lower.call("*", &[sign, size])
}

/// The lower Cholesky factor of each complex Hermitian positive definite
/// matrix (of its Hermitian part): the table's complex factorization on
/// the two parts, the diagonal real and positive.
pub(super) fn cholesky(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let items = on_parts(
        lower,
        call,
        |site| Op::CholeskyComplex(CholeskyComplex { site }),
        CholeskyComplex::parts,
    )?;
    lower.value(items[0].clone(), Some(items[1].clone()))
}

/// `(q r)` of the thin QR factorization of complex matrices: `q` with
/// orthonormal columns, `r` upper triangular with a real non-negative
/// diagonal.
pub(super) fn qr(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let items = on_parts(
        lower,
        call,
        |site| Op::QrComplex(QrComplex { site }),
        QrComplex::parts,
    )?;
    let q = lower.value(items[0].clone(), Some(items[1].clone()))?;
    let r = lower.value(items[2].clone(), Some(items[3].clone()))?;
    Ok(Value::list([q, r]))
}

/// `(u s vh)` of the thin SVD of complex matrices, `s` real and
/// descending, each column of `u`'s largest entry real and positive.
pub(super) fn svd(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let items = on_parts(
        lower,
        call,
        |site| Op::SvdComplex(SvdComplex { site }),
        SvdComplex::parts,
    )?;
    let u = lower.value(items[0].clone(), Some(items[1].clone()))?;
    let vh = lower.value(items[3].clone(), Some(items[4].clone()))?;
    Ok(Value::list([u, items[2].clone(), vh]))
}

//! Array functions of SPEC section 7 written as compositions of existing
//! operations, so their derivatives (both modes, any order) come from the
//! rules those operations already have: `cross` (rolls and products),
//! `var` and `std` (sums), `norm` (vector norms of any order, matrix
//! norms from sums and extrema). Square roots and powers are guarded
//! with the double `where` — the argument is replaced where it would give
//! an infinite slope, and the result selected — so gradients at the origin
//! are finite (the subgradient 0), never NaN.

use super::apply::Apply;
use super::reduce::{keepdims, reduced_axes};
use super::{builtin, with_options};
use crate::ir::math::language::Math;
use crate::ir::op::map_op;
use crate::ir::shape::broadcast;
use crate::ir::{CmpOp, ReduceOp, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{format_shape, normalize_axis};
use crate::lisp::value::Value;
use egg::Id;

/// Operations over values for one call (recorded or computed, `Apply`).
struct Compose {
    apply: Apply,
}

/// A placeholder child for `Math` nodes (the operands are the node's own).
fn hole() -> Id {
    Id::from(0)
}

impl Compose {
    fn map1(&self, math: Math, x: &Value) -> EvalResult<Value> {
        self.apply.op(map_op(&math), &[x])
    }

    fn map2(&self, math: Math, a: &Value, b: &Value) -> EvalResult<Value> {
        self.apply.op(map_op(&math), &[a, b])
    }

    fn mul(&self, a: &Value, b: &Value) -> EvalResult<Value> {
        self.map2(Math::Mul([hole(); 2]), a, b)
    }

    fn sub(&self, a: &Value, b: &Value) -> EvalResult<Value> {
        self.map2(Math::Sub([hole(); 2]), a, b)
    }

    fn div(&self, a: &Value, b: &Value) -> EvalResult<Value> {
        self.map2(Math::Div([hole(); 2]), a, b)
    }

    fn abs(&self, x: &Value) -> EvalResult<Value> {
        self.map1(Math::Abs([hole()]), x)
    }

    fn compare(&self, op: CmpOp, a: &Value, b: &Value) -> EvalResult<Value> {
        self.apply.op(TOp::Compare(op), &[a, b])
    }

    fn select(&self, cond: &Value, a: &Value, b: &Value) -> EvalResult<Value> {
        self.apply.op(TOp::Where, &[cond, a, b])
    }

    fn reduce(&self, op: ReduceOp, x: &Value, axes: &[usize], keep: bool) -> EvalResult<Value> {
        let axes = axes.iter().map(|&a| a as u8).collect();
        self.apply.op(
            TOp::Reduce {
                op,
                axes,
                keepdims: keep,
            },
            &[x],
        )
    }

    fn sum(&self, x: &Value, axes: &[usize], keep: bool) -> EvalResult<Value> {
        self.reduce(ReduceOp::Sum, x, axes, keep)
    }

    /// `x^p` for `x >= 0` with a finite slope at 0: where `x` is 0 the
    /// power is evaluated at 1 and the result replaced by `at_zero`.
    fn safe_pow(&self, x: &Value, p: f64, at_zero: f64) -> EvalResult<Value> {
        let zero = Value::Float(0.0);
        let positive = self.compare(CmpOp::Gt, x, &zero)?;
        let safe = self.select(&positive, x, &Value::Float(1.0))?;
        let powered = if p == 0.5 {
            self.map1(Math::Sqrt([hole()]), &safe)?
        } else {
            self.map2(Math::Pow([hole(); 2]), &safe, &Value::Float(p))?
        };
        self.select(&positive, &powered, &Value::Float(at_zero))
    }

    /// `sqrt(s)` for `s >= 0`, with gradient 0 (not infinity) at 0.
    fn safe_sqrt(&self, s: &Value) -> EvalResult<Value> {
        self.safe_pow(s, 0.5, 0.0)
    }
}

fn compose(interp: &Interp, args: &Args) -> Compose {
    Compose {
        apply: Apply::new(interp, args.values),
    }
}

fn cross(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let c = compose(interp, args);
    let (a, b) = (c.apply.tensor_of(&args[0])?, c.apply.tensor_of(&args[1])?);
    let (sa, sb) = (c.apply.shape(&a)?, c.apply.shape(&b)?);
    if sa.last() != Some(&3) || sb.last() != Some(&3) {
        return Err(EvalError::shape(format!(
            "needs vectors of length 3 along the last axis, got shapes {} and {}",
            format_shape(&sa),
            format_shape(&sb)
        )));
    }
    if broadcast(&sa, &sb).is_err() {
        return Err(EvalError::shape(format!(
            "the leading axes of shapes {} and {} do not broadcast",
            format_shape(&sa),
            format_shape(&sb)
        )));
    }
    // c[i] = a[i+1] b[i+2] - a[i+2] b[i+1]: rolling by 2 brings element
    // i+1 to place i, rolling by 1 element i+2.
    let roll = |x: &Value, rank: usize, shift: usize| {
        let axis = (rank - 1) as u8;
        c.apply.op(TOp::Roll { axis, shift }, &[x])
    };
    let (a1, a2) = (roll(&a, sa.len(), 2)?, roll(&a, sa.len(), 1)?);
    let (b1, b2) = (roll(&b, sb.len(), 2)?, roll(&b, sb.len(), 1)?);
    let left = c.mul(&a1, &b2)?;
    let right = c.mul(&a2, &b1)?;
    c.sub(&left, &right)
}

/// The `:ddof` option (default 0).
fn ddof(args: &Args) -> EvalResult<f64> {
    args.option("ddof").map_or(Ok(0.0), Value::as_f64)
}

/// The variance over the axes of `args`, NumPy's way: the mean of the
/// squared deviations, divided by `n - ddof`.
fn variance(c: &Compose, args: &Args) -> EvalResult<Value> {
    let x = &c.apply.tensor_of(&args[0])?;
    let shape = c.apply.shape(x)?;
    let axes = reduced_axes(args, shape.len())?;
    let n: usize = axes.iter().map(|&a| shape[a]).product();
    let total = c.sum(x, &axes, true)?;
    let mean = c.div(&total, &Value::Float(n as f64))?;
    let deviation = c.sub(x, &mean)?;
    let squares = c.mul(&deviation, &deviation)?;
    let s = c.sum(&squares, &axes, keepdims(args))?;
    c.div(&s, &Value::Float(n as f64 - ddof(args)?))
}

fn var(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let c = compose(interp, args);
    variance(&c, args)
}

fn std(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let c = compose(interp, args);
    let v = variance(&c, args)?;
    c.safe_sqrt(&v)
}

/// The order of a norm.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    /// A number (`inf` and `-inf` included).
    P(f64),
    /// Frobenius.
    Fro,
    /// Nuclear (sum of singular values).
    Nuc,
}

fn order(args: &Args) -> EvalResult<Option<Order>> {
    let Some(value) = args.option("ord") else {
        return Ok(None);
    };
    let name = match value {
        Value::Nil => return Ok(None),
        Value::Int(_) | Value::Float(_) => return Ok(Some(Order::P(value.as_f64()?))),
        Value::Symbol(s) => s.name().to_string(),
        Value::Str(s) => s.to_string(),
        other => other.short(),
    };
    match name.as_str() {
        "fro" => Ok(Some(Order::Fro)),
        "nuc" => Ok(Some(Order::Nuc)),
        _ => Err(EvalError::type_error(format!(
            ":ord must be a number, inf, -inf, 'fro or 'nuc, got {name}"
        ))),
    }
}

/// The vector norm of order `p` of `x` over `axes`.
fn vector_norm(c: &Compose, x: &Value, axes: &[usize], p: f64, keep: bool) -> EvalResult<Value> {
    let zero = Value::Float(0.0);
    if p.is_infinite() {
        let op = if p > 0.0 {
            ReduceOp::Max
        } else {
            ReduceOp::Min
        };
        return c.reduce(op, &c.abs(x)?, axes, keep);
    }
    if p == 0.0 {
        let nonzero = c.compare(CmpOp::Ne, x, &zero)?;
        return c.sum(&nonzero, axes, keep);
    }
    if p == 1.0 {
        return c.sum(&c.abs(x)?, axes, keep);
    }
    if p == 2.0 {
        let s = c.sum(&c.mul(x, x)?, axes, keep)?;
        return c.safe_sqrt(&s);
    }
    if p.is_nan() {
        return Err(EvalError::range("the order of a norm cannot be nan"));
    }
    // (sum |x|^p)^(1/p); for p < 0 a zero element makes the sum infinite
    // and the norm 0, as in NumPy.
    let at_zero = if p > 0.0 { 0.0 } else { f64::INFINITY };
    let powers = c.safe_pow(&c.abs(x)?, p, at_zero)?;
    let s = c.sum(&powers, axes, keep)?;
    c.safe_pow(&s, 1.0 / p, 0.0)
}

/// The matrix norm of order `ord` over `rows` and `cols` axes.
fn matrix_norm(
    c: &Compose,
    x: &Value,
    (rows, cols): (usize, usize),
    ord: Order,
    keep: bool,
) -> EvalResult<Value> {
    let mut both = [rows, cols];
    both.sort_unstable();
    let p = match ord {
        Order::Fro => return vector_norm(c, x, &both, 2.0, keep),
        Order::Nuc => f64::NAN,
        Order::P(p) => p,
    };
    // Sums of |x| over one axis, then their extreme over the other.
    let (summed, extreme) = match p {
        1.0 | -1.0 => (rows, cols),
        f64::INFINITY | f64::NEG_INFINITY => (cols, rows),
        _ => {
            let name = match ord {
                Order::Nuc => "'nuc".to_string(),
                _ => format!("{p:?}"),
            };
            return Err(EvalError::range(format!(
                "the matrix norm of order {name} needs singular values, which norm does not compute; orders 'fro, 1, -1, inf and -inf are supported"
            )));
        }
    };
    let op = if p > 0.0 {
        ReduceOp::Max
    } else {
        ReduceOp::Min
    };
    let sums = c.sum(&c.abs(x)?, &[summed], keep)?;
    let extreme = if !keep && summed < extreme {
        extreme - 1
    } else {
        extreme
    };
    c.reduce(op, &sums, &[extreme], keep)
}

/// The axes of a `norm` call: none, one (a vector norm) or two (a matrix
/// norm).
fn norm_axes(args: &Args, rank: usize) -> EvalResult<Option<Vec<usize>>> {
    let given = match args.option("axis") {
        None | Some(Value::Nil) => return Ok(None),
        Some(list @ Value::Pair(_)) => list.list_to_vec()?,
        Some(axis) => vec![axis.clone()],
    };
    let axes = given
        .iter()
        .map(|a| normalize_axis(a.as_i64()?, rank))
        .collect::<EvalResult<Vec<usize>>>()?;
    match axes.as_slice() {
        [_] => Ok(Some(axes)),
        [a, b] if a != b => Ok(Some(axes)),
        _ => Err(EvalError::range(format!(
            ":axis must be one axis or a list of two different axes, got {} axes",
            axes.len()
        ))),
    }
}

fn norm(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let c = compose(interp, args);
    let x = c.apply.tensor_of(&args[0])?;
    let shape = c.apply.shape(&x)?;
    let rank = shape.len();
    let keep = keepdims(args);
    let ord = order(args)?;
    let all: Vec<usize> = (0..rank).collect();
    match (norm_axes(args, rank)?, ord) {
        (None, None | Some(Order::Fro)) => vector_norm(&c, &x, &all, 2.0, keep),
        (None, Some(Order::P(p))) if rank <= 1 => vector_norm(&c, &x, &all, p, keep),
        (None, Some(ord)) if rank == 2 => matrix_norm(&c, &x, (0, 1), ord, keep),
        (None, Some(_)) => Err(EvalError::shape(format!(
            "with :ord, a tensor of shape {} needs :axis (one axis for a vector norm, a list of two for a matrix norm)",
            format_shape(&shape)
        ))),
        (Some(axes), None) if axes.len() == 1 => vector_norm(&c, &x, &axes, 2.0, keep),
        (Some(axes), Some(Order::P(p))) if axes.len() == 1 => vector_norm(&c, &x, &axes, p, keep),
        (Some(axes), Some(_)) if axes.len() == 1 => Err(EvalError::range(
            "'fro and 'nuc are matrix norms: give :axis as a list of two axes",
        )),
        (Some(axes), ord) => {
            matrix_norm(&c, &x, (axes[0], axes[1]), ord.unwrap_or(Order::Fro), keep)
        }
    }
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("cross", "(cross a b)", "The cross product of 3-vectors along the last axis of a and b; leading axes broadcast (a stack of vectors against one vector, say). Other lengths are an error naming both shapes. Differentiable in a and b.", 2, Some(2), cross),
    with_options(builtin("var", "(var t :axis k :ddof 0 :keepdims #f)", "The variance of t's elements over axis k (an axis, a list of axes, or all when omitted): the sum of squared deviations from the mean divided by n - ddof (ddof 0, the default, gives the population variance; 1 the unbiased estimate). A number when every axis is reduced. Differentiable.", 1, Some(1), var), &["axis", "ddof", "keepdims"]),
    with_options(builtin("std", "(std t :axis k :ddof 0 :keepdims #f)", "The standard deviation: the square root of (var t :axis k :ddof d). Its gradient where every element is equal (std 0) is 0, not NaN.", 1, Some(1), std), &["axis", "ddof", "keepdims"]),
    with_options(builtin("norm", "(norm t :ord 2 :axis k :keepdims #f)", "A vector or matrix norm (NumPy's linalg.norm). Without :axis and :ord, the 2-norm of all elements (Frobenius for a matrix). Vector norms (a vector, or :axis k): :ord 2 (default), 1, inf (largest |x|), -inf (smallest), 0 (count of non-zeros), any other p: (sum |x|^p)^(1/p). Matrix norms (a matrix, or :axis as a list of two axes): 'fro (default), 1 and -1 (largest / smallest column sum of |x|), inf and -inf (row sums). Orders 2, -2 and 'nuc of matrices need singular values and are an error. Gradients are finite everywhere: at a zero vector the 2-norm's gradient is 0.", 1, Some(1), norm), &["ord", "axis", "keepdims"]),
];

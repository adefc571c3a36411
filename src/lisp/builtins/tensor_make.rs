//! Making tensors (from lists, constants, ranges, random draws) and changing
//! their shape (reshape, transpose, broadcast), plus conversion back to lists.

use super::builtin;
use super::dtype::with_dtype;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{
    MAX_ELEMENTS, check_allocation, format_shape, shape_from_args, shape_from_list, stack_elements,
    to_value,
};
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// Converts a number, tensor or (nested) list of numbers into an array.
pub fn array_from(value: &Value) -> EvalResult<ArrayD<f64>> {
    nested_array(value, 0)
}

/// [`array_from`] for a list `depth` levels inside the outermost one:
/// a list nested deeper than a tensor's axes can go is an error before
/// the recursion goes further.
fn nested_array(value: &Value, depth: usize) -> EvalResult<ArrayD<f64>> {
    if depth > crate::lisp::tensor::MAX_RANK {
        return Err(EvalError::range(format!(
            "a list nested more than {} deep cannot be a tensor (a tensor may have at most {} axes)",
            crate::lisp::tensor::MAX_RANK,
            crate::lisp::tensor::MAX_RANK
        )));
    }
    match value {
        Value::Int(_) | Value::Float(_) => Ok(ArrayD::from_elem(IxDyn(&[]), value.as_f64()?)),
        Value::Tensor(t) => Ok((**t).clone()),
        Value::Nil => Ok(ArrayD::zeros(IxDyn(&[0]))),
        Value::Pair(_) => {
            let elements = value
                .list_to_vec()?
                .iter()
                .map(|item| match item {
                    Value::Pair(_) | Value::Nil => nested_array(item, depth + 1).map(Value::tensor),
                    other => Ok(other.clone()),
                })
                .collect::<EvalResult<Vec<_>>>()?;
            stack_elements(&elements)
        }
        other => Err(EvalError::type_error(format!(
            "cannot make a tensor from {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn tensor(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[..] {
        [single] => array_from(single).map(Value::tensor),
        many => stack_elements(many).map(Value::tensor),
    }
}

fn filled(args: &[Value], value: f64) -> EvalResult<Value> {
    let shape = shape_from_args(args)?;
    check_allocation(&shape)?;
    Ok(Value::tensor(ArrayD::from_elem(IxDyn(&shape), value)))
}

fn zeros(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    filled(args, 0.0)
}

fn ones(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    filled(args, 1.0)
}

fn full(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (value, shape) = args
        .split_last()
        .ok_or_else(|| EvalError::type_error("usage: (full shape value)"))?;
    filled(shape, value.as_f64()?)
}

fn eye(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let rows = usize::try_from(args[0].as_i64()?)
        .map_err(|_| EvalError::range("eye needs a non-negative size"))?;
    let cols = match args.get(1) {
        Some(c) => usize::try_from(c.as_i64()?)
            .map_err(|_| EvalError::range("eye needs a non-negative size"))?,
        None => rows,
    };
    check_allocation(&[rows, cols])?;
    let mut out = ArrayD::zeros(IxDyn(&[rows, cols]));
    for k in 0..rows.min(cols) {
        out[[k, k].as_slice()] = 1.0;
    }
    Ok(Value::tensor(out))
}

fn linspace(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (start, end) = (args[0].as_f64()?, args[1].as_f64()?);
    let count = usize::try_from(args[2].as_i64()?)
        .map_err(|_| EvalError::range("linspace needs a non-negative count"))?;
    check_allocation(&[count])?;
    let step = if count > 1 {
        (end - start) / (count - 1) as f64
    } else {
        0.0
    };
    let mut values: Vec<f64> = (0..count).map(|k| start + step * k as f64).collect();
    if count > 1 {
        values[count - 1] = end;
    }
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&[count]), values)
            .map_err(|e| EvalError::shape(e.to_string()))?,
    ))
}

fn arange(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (start, end, step) = match &args[..] {
        [end] => (0.0, end.as_f64()?, 1.0),
        [start, end] => (start.as_f64()?, end.as_f64()?, 1.0),
        [start, end, step] => (start.as_f64()?, end.as_f64()?, step.as_f64()?),
        _ => return Err(EvalError::type_error("usage: (arange [start] end [step])")),
    };
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
        return Err(EvalError::range(
            "arange needs finite bounds and a non-zero step",
        ));
    }
    let count = ((end - start) / step).ceil().max(0.0);
    if count > MAX_ELEMENTS as f64 {
        return Err(EvalError::range("arange would make too many elements"));
    }
    // More than memory holds is an error, not an abort (found by
    // tests/grammar_fuzz.rs: `(arange 4294967296)` asked for 32 GiB).
    check_allocation(&[count as usize])?;
    let values: Vec<f64> = (0..count as usize)
        .map(|k| start + step * k as f64)
        .collect();
    let len = values.len();
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&[len]), values)
            .map_err(|e| EvalError::shape(e.to_string()))?,
    ))
}

fn random_tensor(
    interp: &mut Interp,
    args: &Args,
    draw: fn(&mut Xoshiro256PlusPlus) -> f64,
) -> EvalResult<Value> {
    if interp
        .numeric
        .trace
        .as_ref()
        .is_some_and(|t| t.borrow().loop_body)
    {
        return Err(EvalError::type_error(
            "random numbers inside a scan step, a checkpointed function or a vmapped function would be drawn once, when it is traced, not at each step or for each example: draw them outside and pass them in",
        ));
    }
    if args.is_empty() {
        return Ok(Value::Float(draw(&mut interp.rng)));
    }
    let shape = shape_from_args(args)?;
    let len = check_allocation(&shape)?;
    let values: Vec<f64> = (0..len).map(|_| draw(&mut interp.rng)).collect();
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&shape), values)
            .map_err(|e| EvalError::shape(e.to_string()))?,
    ))
}

fn rand_fn(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    random_tensor(interp, args, |rng| rng.random::<f64>())
}

fn randn(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    random_tensor(interp, args, |rng| StandardNormal.sample(rng))
}

fn permutation(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let n = args[0].as_i64()?;
    if n < 0 {
        return Err(EvalError::range(format!(
            "permutation needs a count of 0 or more, got {n}"
        )));
    }
    let shape = vec![n as usize];
    check_allocation(&shape)?;
    let mut order: Vec<f64> = (0..n).map(|k| k as f64).collect();
    // Fisher and Yates: each position takes a uniformly drawn remaining element.
    for i in (1..order.len()).rev() {
        let j = interp.rng.random_range(0..=i);
        order.swap(i, j);
    }
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&shape), order)
            .map_err(|e| EvalError::shape(e.to_string()))?,
    ))
}

fn seed(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    interp.rng = Xoshiro256PlusPlus::seed_from_u64(args[0].as_i64()? as u64);
    Ok(Value::Void)
}

fn shape(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    Ok(Value::list(
        t.shape()
            .iter()
            .map(|d| Value::Int(*d as i64))
            .collect::<Vec<_>>(),
    ))
}

fn rank(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Int(args[0].as_tensor()?.ndim() as i64))
}

fn size(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Int(args[0].as_tensor()?.len() as i64))
}

/// Resolves a requested shape with at most one -1 against `len` elements.
pub(crate) fn resolve_shape(
    requested: &Value,
    len: usize,
    from: &[usize],
) -> EvalResult<Vec<usize>> {
    let dims: Vec<i64> = match requested {
        Value::Int(n) => vec![*n],
        other => other
            .list_to_vec()?
            .iter()
            .map(Value::as_i64)
            .collect::<EvalResult<_>>()?,
    };
    let unknown = dims.iter().filter(|d| **d == -1).count();
    if unknown > 1 || dims.iter().any(|d| *d < -1) {
        return Err(EvalError::shape(
            "reshape: dimensions must be non-negative, with at most one -1",
        ));
    }
    let known = dims
        .iter()
        .filter(|d| **d >= 0)
        .try_fold(1usize, |acc, d| acc.checked_mul(*d as usize))
        .unwrap_or(usize::MAX);
    let mismatch = || {
        EvalError::shape(format!(
            "cannot reshape a tensor of shape {} ({len} elements) to {}",
            format_shape(from),
            requested.short()
        ))
    };
    let shape: Vec<usize> = if unknown == 1 {
        if known == 0 || !len.is_multiple_of(known) {
            return Err(mismatch());
        }
        dims.iter()
            .map(|d| if *d == -1 { len / known } else { *d as usize })
            .collect()
    } else {
        dims.iter().map(|d| *d as usize).collect()
    };
    let count = shape.iter().try_fold(1usize, |acc, d| acc.checked_mul(*d));
    if count != Some(len) {
        return Err(mismatch());
    }
    crate::lisp::tensor::check_rank(shape.len())?;
    Ok(shape)
}

fn reshape(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let shape = resolve_shape(&args[1], t.len(), t.shape())?;
    let values: Vec<f64> = t.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(&shape), values)
        .map(to_value)
        .map_err(|e| EvalError::shape(e.to_string()))
}

fn flatten(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    check_allocation(t.shape())?;
    let values: Vec<f64> = t.iter().copied().collect();
    let len = values.len();
    ArrayD::from_shape_vec(IxDyn(&[len]), values)
        .map(Value::tensor)
        .map_err(|e| EvalError::shape(e.to_string()))
}

fn transpose(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let ndim = t.ndim();
    let axes: Vec<usize> = match args.get(1) {
        None => (0..ndim).rev().collect(),
        Some(perm) => {
            let axes: Vec<usize> = perm
                .list_to_vec()?
                .iter()
                .map(|a| crate::lisp::tensor::normalize_axis(a.as_i64()?, ndim))
                .collect::<EvalResult<_>>()?;
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            if sorted != (0..ndim).collect::<Vec<_>>() {
                return Err(EvalError::shape(format!(
                    "transpose: {} is not a permutation of the {ndim} axes",
                    perm.short()
                )));
            }
            axes
        }
    };
    check_allocation(t.shape())?;
    let permuted = t.view().permuted_axes(IxDyn(&axes));
    Ok(to_value(permuted.as_standard_layout().into_owned()))
}

fn broadcast_to(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let shape = shape_from_list(&args[1])?;
    check_allocation(&shape)?;
    let view = t.broadcast(IxDyn(&shape)).ok_or_else(|| {
        EvalError::shape(format!(
            "cannot broadcast shape {} to {}",
            format_shape(t.shape()),
            format_shape(&shape)
        ))
    })?;
    Ok(to_value(view.to_owned()))
}

fn to_list(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Tensor(t) => {
            // A list cell per element and one per row of every axis but
            // the last: about the elements, plus the rows.
            let rows: usize = t.shape().iter().rev().skip(1).product::<usize>();
            crate::lisp::memory::room_for(t.len().saturating_add(rows))?;
            Ok(nested_list(
                t.shape(),
                &t.iter().copied().collect::<Vec<_>>(),
            ))
        }
        Value::Int(_) | Value::Float(_) | Value::Nil | Value::Pair(_) => Ok(args[0].clone()),
        other => Err(EvalError::type_error(format!(
            "expected a tensor, got {}",
            other.type_name()
        ))),
    }
}

fn nested_list(shape: &[usize], values: &[f64]) -> Value {
    match shape {
        [] => Value::Float(values.first().copied().unwrap_or(f64::NAN)),
        [_] => Value::list(values.iter().map(|x| Value::Float(*x)).collect::<Vec<_>>()),
        [rows, inner @ ..] => {
            let stride: usize = inner.iter().product();
            Value::list(
                (0..*rows)
                    .map(|r| {
                        nested_list(
                            inner,
                            values.get(r * stride..(r + 1) * stride).unwrap_or(&[]),
                        )
                    })
                    .collect::<Vec<_>>(),
            )
        }
    }
}

fn item(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Int(_) | Value::Float(_) => Ok(args[0].clone()),
        Value::Tensor(t) if t.len() == 1 => {
            Ok(Value::Float(t.iter().next().copied().unwrap_or(f64::NAN)))
        }
        Value::Tensor(t) => Err(EvalError::shape(format!(
            "item needs a tensor of one element, got shape {}",
            format_shape(t.shape())
        ))),
        other => Err(EvalError::type_error(format!(
            "expected a tensor, got {}",
            other.type_name()
        ))),
    }
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_dtype(builtin("tensor", "(tensor x...)", "A tensor from a number, a nested list of numbers, or several elements: (tensor '((1 2) (3 4))), (tensor 1 2 3).", 1, None, tensor)),
    with_dtype(builtin("zeros", "(zeros shape)", "A tensor of zeros; shape is a list (zeros '(2 3)) or sizes (zeros 2 3).", 0, None, zeros)),
    with_dtype(builtin("ones", "(ones shape)", "A tensor of ones; shape is a list or sizes.", 0, None, ones)),
    with_dtype(builtin("full", "(full shape value)", "A tensor of the given shape filled with value.", 2, None, full)),
    with_dtype(builtin("eye", "(eye n [m])", "The n-by-m identity matrix (square by default).", 1, Some(2), eye)),
    with_dtype(builtin("linspace", "(linspace start end n)", "n evenly spaced values from start to end inclusive.", 3, Some(3), linspace)),
    with_dtype(builtin("arange", "(arange [start] end [step])", "Values from start (default 0) below end, by step (default 1), as a tensor.", 1, Some(3), arange)),
    with_dtype(builtin("rand", "(rand [shape])", "Uniform random values in [0, 1): a float with no argument, else a tensor; reproducible after seed!.", 0, None, rand_fn)),
    with_dtype(builtin("randn", "(randn [shape])", "Standard normal random values: a float with no argument, else a tensor; reproducible after seed!.", 0, None, randn)),
    builtin("permutation", "(permutation n)", "The integers 0 to n-1 in random order, as a vector (reproducible after seed!); with gather, it shuffles rows.", 1, Some(1), permutation),
    builtin("seed!", "(seed! n)", "Seeds the random generator behind rand and randn.", 1, Some(1), seed),
    builtin("shape", "(shape t)", "The shape of a tensor as a list of sizes (() for a number).", 1, Some(1), shape),
    builtin("rank", "(rank t)", "The number of axes of a tensor (0 for a number).", 1, Some(1), rank),
    builtin("size", "(size t)", "The number of elements of a tensor (1 for a number).", 1, Some(1), size),
    builtin("reshape", "(reshape t shape)", "The elements of t in row-major order, in a new shape; one size may be -1.", 2, Some(2), reshape),
    builtin("flatten", "(flatten t)", "The elements of t as a vector, in row-major order.", 1, Some(1), flatten),
    builtin("transpose", "(transpose t [axes])", "t with its axes reversed, or permuted as the list axes says.", 1, Some(2), transpose),
    builtin("broadcast-to", "(broadcast-to t shape)", "t repeated along new or unit axes to the given shape (NumPy rules).", 2, Some(2), broadcast_to),
    builtin("to-list", "(to-list t)", "The elements of a tensor as (nested) lists of floats.", 1, Some(1), to_list),
    builtin("item", "(item t)", "The single element of a one-element tensor, as a float.", 1, Some(1), item),
];

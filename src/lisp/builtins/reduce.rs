//! Reductions (`sum mean prod max min argmax argmin logsumexp`) with
//! `:axis` (an integer or a list) and `:keepdims`, and the normalisations
//! along an axis (`softmax`, `log-softmax`). A reduction over every axis
//! gives a float, not a 0-dimensional tensor.

use super::numeric::binary;
use super::{builtin, with_options};
use crate::backends::cpu::reduce;
use crate::ir::ReduceOp;
use crate::ir::ops::Op;
use crate::ir::ops::reduction::LogSumExp;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{format_shape, normalize_axis, to_value};
use crate::lisp::value::Value;
use crate::scalar::{nan_max, nan_min};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMut1, Axis, IxDyn};

/// The axes to reduce: all, or those named by `:axis`, sorted and distinct.
pub(crate) fn reduced_axes(args: &Args, ndim: usize) -> EvalResult<Vec<usize>> {
    let mut axes = match args.option("axis") {
        None | Some(Value::Nil) => (0..ndim).collect(),
        Some(Value::Pair(_)) => args
            .option("axis")
            .map(Value::list_to_vec)
            .transpose()?
            .unwrap_or_default()
            .iter()
            .map(|a| normalize_axis(a.as_i64()?, ndim))
            .collect::<EvalResult<Vec<_>>>()?,
        Some(axis) => vec![normalize_axis(axis.as_i64()?, ndim)?],
    };
    axes.sort_unstable();
    axes.dedup();
    Ok(axes)
}

pub(crate) fn keepdims(args: &Args) -> bool {
    args.option("keepdims").is_some_and(Value::is_truthy)
}

/// The axes of a reduction as the CPU kernel takes them, and the result's
/// shape with the reduced axes kept as length 1.
fn kernel_axes(t: &ArrayD<f64>, axes: &[usize]) -> EvalResult<(Vec<u8>, Vec<usize>)> {
    let narrow = axes
        .iter()
        .map(|&a| u8::try_from(a).map_err(|_| EvalError::shape(format!("axis {a} is too large"))))
        .collect::<EvalResult<Vec<u8>>>()?;
    let mut kept = t.shape().to_vec();
    for &axis in axes {
        kept[axis] = 1;
    }
    Ok((narrow, kept))
}

/// The result of a reduction whose kept-axes form is `kept`: as it is
/// with `:keepdims`, without the reduced axes otherwise.
fn finish(args: &Args, t: &ArrayD<f64>, axes: &[usize], kept: ArrayD<f64>) -> EvalResult<Value> {
    if keepdims(args) {
        return Ok(to_value(kept));
    }
    let shape: Vec<usize> = t
        .shape()
        .iter()
        .enumerate()
        .filter(|(axis, _)| !axes.contains(axis))
        .map(|(_, d)| *d)
        .collect();
    kept.into_shape_with_order(IxDyn(&shape))
        .map(to_value)
        .map_err(|e| EvalError::shape(e.to_string()))
}

/// `t` reduced by `op` over the chosen axes, with the CPU backend's kernel
/// (the one compiled tapes run).
fn reduce_op(args: &Args, t: &ArrayD<f64>, op: ReduceOp) -> EvalResult<(Vec<usize>, ArrayD<f64>)> {
    let axes = reduced_axes(args, t.ndim())?;
    let (narrow, kept) = kernel_axes(t, &axes)?;
    Ok((axes, reduce(op, &t.view(), &narrow, &kept)))
}

fn sum(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let (axes, total) = reduce_op(args, &t, ReduceOp::Sum)?;
    finish(args, &t, &axes, total)
}

fn mean(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let (axes, mut total) = reduce_op(args, &t, ReduceOp::Sum)?;
    // An empty lane gives 0 / 0, NaN.
    let count: usize = axes.iter().map(|&a| t.shape()[a]).product();
    total.mapv_inplace(|x| x / count as f64);
    finish(args, &t, &axes, total)
}

fn prod(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let (axes, product) = reduce_op(args, &t, ReduceOp::Prod)?;
    finish(args, &t, &axes, product)
}

/// `max`/`min`: elementwise over several arguments, a reduction over one tensor.
fn extremum(args: &Args, pick: fn(f64, f64) -> f64, name: &str) -> EvalResult<Value> {
    if args.len() == 1 {
        return match &args[0] {
            Value::Tensor(t) => {
                if t.is_empty() {
                    return Err(EvalError::shape(format!("{name} of an empty tensor")));
                }
                let has_empty_lane = reduced_axes(args, t.ndim())?
                    .iter()
                    .any(|a| t.shape()[*a] == 0);
                if has_empty_lane {
                    return Err(EvalError::shape(format!(
                        "{name} over an empty axis of shape {}",
                        format_shape(t.shape())
                    )));
                }
                let op = if name == "max" {
                    ReduceOp::Max
                } else {
                    ReduceOp::Min
                };
                let (axes, extreme) = reduce_op(args, t, op)?;
                finish(args, t, &axes, extreme)
            }
            other => {
                super::numeric::operand(other)?;
                Ok(other.clone())
            }
        };
    }
    if !args.options.is_empty() {
        return Err(EvalError::type_error(format!(
            "{name} with :axis reduces one tensor; with several arguments it is elementwise"
        )));
    }
    let int_pick: fn(i64, i64) -> Option<i64> = if name == "max" {
        |a, b| Some(a.max(b))
    } else {
        |a, b| Some(a.min(b))
    };
    let mut acc = args[0].clone();
    for x in &args[1..] {
        acc = binary(&acc, x, Some(int_pick), pick)?;
    }
    Ok(acc)
}

fn max(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    extremum(args, nan_max, "max")
}

fn min(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    extremum(args, nan_min, "min")
}

/// Index of the first extreme element (NaN counts as extreme, as in NumPy).
fn arg_extreme(lane: ArrayViewD<'_, f64>, better: fn(f64, f64) -> bool) -> usize {
    let mut best = 0;
    let mut best_value = f64::NAN;
    for (position, value) in lane.iter().enumerate() {
        if position == 0 || (!best_value.is_nan() && (value.is_nan() || better(*value, best_value)))
        {
            best = position;
            best_value = *value;
        }
    }
    best
}

fn arg_reduce(args: &Args, better: fn(f64, f64) -> bool) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    if t.is_empty() {
        return Err(EvalError::shape("argmax/argmin of an empty tensor"));
    }
    match args.option("axis") {
        None => {
            let flat = t
                .view()
                .into_shape_with_order(IxDyn(&[t.len()]))
                .map_err(|e| EvalError::shape(e.to_string()));
            let flat = match flat {
                Ok(view) => view.to_owned(),
                Err(_) => ArrayD::from_shape_vec(IxDyn(&[t.len()]), t.iter().copied().collect())
                    .map_err(|e| EvalError::shape(e.to_string()))?,
            };
            Ok(Value::Int(arg_extreme(flat.view(), better) as i64))
        }
        Some(axis) => {
            let axis = normalize_axis(axis.as_i64()?, t.ndim())?;
            let out = t.map_axis(Axis(axis), |lane| {
                arg_extreme(lane.into_dyn(), better) as f64
            });
            Ok(to_value(if keepdims(args) {
                out.insert_axis(Axis(axis))
            } else {
                out
            }))
        }
    }
}

fn argmax(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    arg_reduce(args, |a, b| a > b)
}

fn argmin(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    arg_reduce(args, |a, b| a < b)
}

/// The largest element and log(sum(exp(x - largest))): their sum is
/// log(sum(exp(x))) without overflow.
fn shifted_logsumexp<'a>(lane: impl Iterator<Item = &'a f64> + Clone) -> (f64, f64) {
    let top = lane.clone().copied().fold(f64::NEG_INFINITY, nan_max);
    if !top.is_finite() {
        return (top, 0.0);
    }
    (top, lane.map(|x| (x - top).exp()).sum::<f64>().ln())
}

/// log(sum(exp(t))) over the chosen axes without overflow, by the
/// operation compiled tapes run (`ops::reduction::LogSumExp`): each lane
/// is shifted by its largest element when that is finite.
fn logsumexp(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let axes = reduced_axes(args, t.ndim())?;
    let (narrow, kept) = kernel_axes(&t, &axes)?;
    let op = Op::LogSumExp(LogSumExp {
        axes: narrow.into_iter().collect(),
    });
    let lse = op
        .cpu(&[t.view()], &kept)
        .map_err(|e| EvalError::shape(e.message))?;
    finish(args, &t, &axes, lse)
}

/// Applies `normalise` to every lane along the axis (default -1).
fn along_axis(args: &Args, normalise: fn(ArrayViewMut1<'_, f64>)) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    if t.ndim() == 0 {
        let mut one = ArrayD::from_elem(IxDyn(&[1]), t.iter().next().copied().unwrap_or(f64::NAN));
        one.lanes_mut(Axis(0)).into_iter().for_each(normalise);
        return Ok(Value::Float(one[[0].as_slice()]));
    }
    let axis = match args.option("axis") {
        Some(axis) => normalize_axis(axis.as_i64()?, t.ndim())?,
        None => t.ndim() - 1,
    };
    let mut out = (*t).clone();
    out.lanes_mut(Axis(axis)).into_iter().for_each(normalise);
    Ok(Value::tensor(out))
}

fn softmax(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    along_axis(args, |mut lane| {
        let top = lane.iter().copied().fold(f64::NEG_INFINITY, nan_max);
        lane.mapv_inplace(|x| (x - top).exp());
        let total = lane.sum();
        lane.mapv_inplace(|x| x / total);
    })
}

fn log_softmax(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    along_axis(args, |mut lane| {
        let (top, rest) = shifted_logsumexp(lane.iter());
        lane.mapv_inplace(|x| (x - top) - rest);
    })
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("sum", "(sum t :axis k :keepdims #t)", "Sum of the elements, over all axes (a float) or over :axis (an integer or a list of them).", 1, Some(1), sum), &["axis", "keepdims"]),
    with_options(builtin("mean", "(mean t :axis k :keepdims #t)", "Arithmetic mean, over all axes or over :axis.", 1, Some(1), mean), &["axis", "keepdims"]),
    with_options(builtin("prod", "(prod t :axis k :keepdims #t)", "Product of the elements, over all axes or over :axis.", 1, Some(1), prod), &["axis", "keepdims"]),
    with_options(builtin("max", "(max t :axis k) or (max x y...)", "The largest element of one tensor (over all axes or :axis), or the elementwise maximum of several arguments; NaN propagates.", 1, None, max), &["axis", "keepdims"]),
    with_options(builtin("min", "(min t :axis k) or (min x y...)", "The smallest element of one tensor (over all axes or :axis), or the elementwise minimum of several arguments; NaN propagates.", 1, None, min), &["axis", "keepdims"]),
    with_options(builtin("argmax", "(argmax t :axis k :keepdims #t)", "Index of the largest element: an integer index into the flattened tensor, or a tensor of indices along :axis.", 1, Some(1), argmax), &["axis", "keepdims"]),
    with_options(builtin("argmin", "(argmin t :axis k :keepdims #t)", "Index of the smallest element, like argmax.", 1, Some(1), argmin), &["axis", "keepdims"]),
    with_options(builtin("logsumexp", "(logsumexp t :axis k :keepdims #t)", "log(sum(exp(t))) computed without overflow, over all axes or :axis.", 1, Some(1), logsumexp), &["axis", "keepdims"]),
    with_options(builtin("softmax", "(softmax t :axis k)", "exp(t) normalised to sum to 1 along :axis (default the last), computed without overflow.", 1, Some(1), softmax), &["axis"]),
    with_options(builtin("log-softmax", "(log-softmax t :axis k)", "The logarithm of softmax along :axis (default the last), computed stably.", 1, Some(1), log_softmax), &["axis"]),
];

//! Sorting lists (by `<`, or by a user comparison) and tensors (along their
//! last axis). The sort is stable; an error raised by the comparison stops it.

use super::builtin;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use ndarray::Axis;

fn natural_less(a: &Value, b: &Value) -> EvalResult<bool> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        (Value::Symbol(x), Value::Symbol(y)) => Ok(x.name() < y.name()),
        _ => Ok(a.as_f64()? < b.as_f64()?),
    }
}

/// Merge sort driven by a fallible "less than".
fn merge_sort(
    items: Vec<Value>,
    less: &mut dyn FnMut(&Value, &Value) -> EvalResult<bool>,
) -> EvalResult<Vec<Value>> {
    if items.len() <= 1 {
        return Ok(items);
    }
    let mut right = items;
    let left = right.drain(..right.len() / 2).collect();
    let left = merge_sort(left, less)?;
    let right = merge_sort(right, less)?;
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        if less(r, l)? {
            merged.extend(right.next());
        } else {
            merged.extend(left.next());
        }
    }
    merged.extend(left);
    merged.extend(right);
    Ok(merged)
}

fn sort(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let Value::Tensor(t) = &args[0] {
        if args.len() > 1 {
            return Err(EvalError::type_error(
                "sorting a tensor takes no comparison",
            ));
        }
        if t.ndim() == 0 {
            return Ok(args[0].clone());
        }
        crate::lisp::tensor::check_allocation(t.shape())?;
        let mut out = t.as_standard_layout().into_owned();
        let last = Axis(out.ndim() - 1);
        for mut lane in out.lanes_mut(last) {
            // A standard layout's last axis is contiguous: sorted in place.
            match lane.as_slice_mut() {
                Some(values) => values.sort_by(f64::total_cmp),
                None => {
                    let mut values: Vec<f64> = lane.iter().copied().collect();
                    values.sort_by(f64::total_cmp);
                    lane.iter_mut().zip(values).for_each(|(slot, v)| *slot = v);
                }
            }
        }
        return Ok(Value::tensor(out));
    }
    let items = args[0].list_to_vec()?;
    let sorted = match args.get(1) {
        None => merge_sort(items, &mut |a, b| natural_less(a, b))?,
        Some(compare) => {
            let compare = compare.clone();
            merge_sort(items, &mut |a, b| {
                Ok(interp
                    .apply(&compare, vec![a.clone(), b.clone()])?
                    .is_truthy())
            })?
        }
    };
    Ok(Value::list(sorted))
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("sort", "(sort lst [less?])", "The list sorted ascending (numbers, strings or symbols), or by (less? a b); a tensor is sorted along its last axis. Stable.", 1, Some(2), sort),
];

//! Indexing with integer tensors (SPEC section 7, "Indexing and arrays"):
//! `gather`, `scatter-add`, `index-set`, `take-along`. Each is one
//! operation of the table (`crate::ir::ops::indexing`, `crate::ir::ops::along`),
//! recorded inside traced functions and computed at once otherwise
//! (`apply`).

use super::apply::Apply;
use super::{builtin, with_options};
use crate::ir::ops::Op;
use crate::ir::ops::along::TakeAlong;
use crate::ir::ops::indexing::{Gather, IndexSet, ScatterAdd, check_positions, positions};
use crate::ir::{Shape, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{format_shape, normalize_axis};
use crate::lisp::value::Value;

/// The `:axis` option (default `default`; negative counts from the end).
pub(crate) fn axis_option(args: &Args, rank: usize, default: i64) -> EvalResult<usize> {
    let axis = match args.option("axis") {
        Some(value) => value.as_i64()?,
        None => default,
    };
    normalize_axis(axis, rank)
}

/// The indices of a call, as a tensor value; when they are known now
/// (not traced) but the operation is recorded, checked against an axis of
/// length `len`, so a bad index is reported at the call. (An operation
/// computed at once reports it from its kernel, with the same message.)
fn indices(apply: &Apply, value: &Value, len: usize) -> EvalResult<Value> {
    let idx = apply.tensor_of(value)?;
    if let Value::Tensor(t) = &idx
        && apply.records()
    {
        check_positions(&t.view(), len).map_err(|e| EvalError::range(e.message))?;
    }
    if let Value::Int(_) | Value::Float(_) = &idx {
        let k = idx.as_f64()?;
        let one = ndarray::arr0(k).into_dyn();
        positions(&one.view(), len).map_err(|e| EvalError::range(e.message))?;
    }
    Ok(idx)
}

/// The tensor and axis of an indexing call.
fn target(apply: &Apply, args: &Args, what: &str) -> EvalResult<(Shape, usize)> {
    let shape = apply.shape(&args[0])?;
    if shape.is_empty() {
        return Err(EvalError::shape(format!("cannot {what} a number")));
    }
    let axis = axis_option(args, shape.len(), 0)?;
    Ok((shape, axis))
}

fn gather(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let (shape, axis) = target(&apply, args, "gather from")?;
    let idx = indices(&apply, &args[1], shape[axis])?;
    let op = Gather {
        axis: axis as u8,
        site: apply.site(),
    };
    apply.table(Op::Gather(op), &[&args[0], &idx])
}

/// Whether an index or slice bound is traced (a scan's step index, or a
/// number computed from it): `index` and `slice` then gather.
pub(crate) fn traced_position(args: &[Value]) -> bool {
    args.iter().any(|v| matches!(v, Value::Traced(_)))
}

/// `(index t i j ...)` where some index is traced: one gather along the
/// leading axis per index (an index out of range is an error at run time
/// that names it).
pub(crate) fn index_traced(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let mut x = args[0].clone();
    let rank = apply.shape(&x)?.len();
    let positions = &args.values[1..];
    if positions.len() > rank {
        return Err(EvalError::range(format!(
            "{} indices for a tensor of rank {rank}",
            positions.len()
        )));
    }
    for position in positions {
        let len = apply.shape(&x)?[0];
        let idx = indices(&apply, position, len)?;
        let op = Gather {
            axis: 0,
            site: apply.site(),
        };
        x = apply.table(Op::Gather(op), &[&x, &idx])?;
    }
    Ok(x)
}

/// `(slice t start end :axis k)` where a bound is traced: the elements at
/// start, start + 1, ... gathered along the axis. The length must be known
/// when the call is traced, so end is start plus a whole number
/// (`(slice t i (+ i 3))`).
pub(crate) fn slice_traced(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if args
        .option("step")
        .is_some_and(|s| !matches!(s, Value::Int(1)))
    {
        return Err(EvalError::type_error(
            "slice with :step at a traced position is not supported; gather the positions instead",
        ));
    }
    let apply = Apply::new(interp, args.values);
    let (_, axis) = target(&apply, args, "slice")?;
    let (start, end) = (&args[1], args.get(2).unwrap_or(&Value::Nil));
    let length = match (start, end) {
        (Value::Traced(_), _) => length_after(interp, start, end),
        _ => None,
    }
    .ok_or_else(|| {
        EvalError::shape(format!(
            "slice at a traced position (a scan's step index) needs a length known when it is traced: write the end as the start plus a whole number, (slice t i (+ i 3)); got start {} and end {}",
            start.short(),
            end.short()
        ))
    })?;
    let offsets: Vec<f64> = (0..length).map(|k| k as f64).collect();
    let offsets = Value::tensor(ndarray::Array1::from(offsets).into_dyn());
    let plus = crate::ir::op::map_op(&crate::ir::math::language::Math::Add([egg::Id::from(0); 2]));
    let idx = apply.op(plus, &[start, &offsets])?;
    let op = Gather {
        axis: axis as u8,
        site: apply.site(),
    };
    apply.table(Op::Gather(op), &[&args[0], &idx])
}

/// The whole number `end - start` when the trace shows `end` as `start`
/// plus a constant.
fn length_after(interp: &Interp, start: &Value, end: &Value) -> Option<usize> {
    let trace = interp.numeric.trace.as_ref()?;
    let start = crate::lisp::trace::node_of(trace, start).ok()?;
    let end = crate::lisp::trace::node_of(trace, end).ok()?;
    let t = trace.borrow();
    let node = t.graph.node(end);
    let TOp::Map(crate::ir::math::language::Math::Add(_)) = node.op else {
        return None;
    };
    let offset = match node.children[..] {
        [a, b] if a == start => t.graph.constant(b),
        [a, b] if b == start => t.graph.constant(a),
        _ => None,
    }?;
    (offset >= 0.0 && offset.fract() == 0.0).then_some(offset as usize)
}

/// The updates of a scatter, broadcast to the shape the indices select.
fn updates(
    apply: &Apply,
    t: &[usize],
    idx: &Value,
    axis: usize,
    values: &Value,
) -> EvalResult<Value> {
    let mut selected: Shape = t[..axis].iter().copied().collect();
    selected.extend_from_slice(&apply.shape(idx)?);
    selected.extend_from_slice(&t[axis + 1..]);
    let given = apply.shape(values)?;
    if given == selected {
        return Ok(values.clone());
    }
    if !crate::ir::shape::broadcasts_to(&given, &selected) {
        return Err(EvalError::shape(format!(
            "the values have shape {}, the positions select {} from a tensor of shape {}",
            format_shape(&given),
            format_shape(&selected),
            format_shape(t)
        )));
    }
    apply.op(TOp::Broadcast(selected), &[values])
}

fn scatter_add(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let (shape, axis) = target(&apply, args, "scatter into")?;
    let idx = indices(&apply, &args[1], shape[axis])?;
    let values = updates(&apply, &shape, &idx, axis, &args[2])?;
    let op = ScatterAdd {
        axis: axis as u8,
        site: apply.site(),
    };
    apply.table(Op::ScatterAdd(op), &[&args[0], &idx, &values])
}

fn index_set(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let (shape, axis) = target(&apply, args, "set elements of")?;
    let idx = indices(&apply, &args[1], shape[axis])?;
    let values = updates(&apply, &shape, &idx, axis, &args[2])?;
    let op = IndexSet {
        axis: axis as u8,
        site: apply.site(),
    };
    apply.table(Op::IndexSet(op), &[&args[0], &idx, &values])
}

fn take_along(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let apply = Apply::new(interp, args.values);
    let shape = apply.shape(&args[0])?;
    if shape.is_empty() {
        return Err(EvalError::shape("cannot take along a number"));
    }
    let idx = apply.tensor_of(&args[1])?;
    let idx_shape = apply.shape(&idx)?;
    let axis = axis_option(args, shape.len(), -1)?;
    let misfit = || {
        EvalError::shape(format!(
            "positions of shape {} do not fit a tensor of shape {} along axis {axis} (the same rank, other axes equal or 1)",
            format_shape(&idx_shape),
            format_shape(&shape)
        ))
    };
    if idx_shape.len() != shape.len() {
        return Err(misfit());
    }
    // NumPy: the axes other than `axis` broadcast against each other.
    let (mut t_target, mut idx_target) = (shape.clone(), idx_shape.clone());
    for d in (0..shape.len()).filter(|&d| d != axis) {
        match (shape[d], idx_shape[d]) {
            (a, b) if a == b => {}
            (1, b) => t_target[d] = b,
            (a, 1) => idx_target[d] = a,
            _ => return Err(misfit()),
        }
    }
    let t = if t_target == shape {
        args[0].clone()
    } else {
        apply.op(TOp::Broadcast(t_target), &[&args[0]])?
    };
    // Positions known now are checked at the call when the tensor is
    // traced (the kernel runs later); otherwise the kernel, run at once,
    // checks them.
    let idx = if crate::lisp::trace::ops::involves_traced(&args[0]) {
        indices(&apply, &idx, shape[axis])?
    } else {
        idx
    };
    let idx = if idx_target == idx_shape {
        idx
    } else {
        apply.op(TOp::Broadcast(idx_target), &[&idx])?
    };
    let op = TakeAlong {
        axis: axis as u8,
        site: apply.site(),
    };
    apply.table(Op::TakeAlong(op), &[&t, &idx])
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("gather", "(gather t idx :axis k)", "The slices of t at integer positions idx along axis k (default 0). idx is a list or a tensor of any shape of whole numbers (negative ones count from the end); the result is t's shape with axis k replaced by idx's shape: (gather x (permutation n)) shuffles rows, (gather table ids) looks up rows. Differentiable in t (its reverse adds the cotangent back at the positions); an index out of range is an error naming it.", 2, Some(2), gather), &["axis"]),
    with_options(builtin("scatter-add", "(scatter-add t idx updates :axis k)", "A new tensor: t with each slice of updates added at its position in idx along axis k (default 0); repeated positions add up. updates has the shape gather would give (or broadcasts to it). t itself is unchanged. Differentiable in t and updates.", 3, Some(3), scatter_add), &["axis"]),
    with_options(builtin("index-set", "(index-set t idx values :axis k)", "A new tensor: t with the slices at positions idx along axis k (default 0) replaced by values (of gather's shape, or broadcasting to it); of repeated positions the last one wins. t itself is unchanged. Differentiable in t and values.", 3, Some(3), index_set), &["axis"]),
    with_options(builtin("take-along", "(take-along t idx :axis k)", "NumPy's take_along_axis: in each 1-d slice of t along axis k (default -1, the last), the elements at the positions in the matching slice of idx. idx has t's rank; along k it may have any length (the result's), and its other axes equal t's or are 1 (either side broadcasts). (take-along x (argmax x :axis 1 :keepdims #t) :axis 1) gives the row maxima, (take-along p (reshape labels '(n 1)) :axis 1) picks one column per row. Differentiable in t (its reverse adds the cotangent back at the positions); an index that is not whole or out of range is an error naming it.", 2, Some(2), take_along), &["axis"]),
];

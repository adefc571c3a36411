//! `vmap` on Lisp functions: the function traced once on one example's
//! shapes (a body trace, like a loop step's, that captures the enclosing
//! trace's values), then its program rewritten over the batch by
//! `crate::ad::vmap` into the enclosing trace. At top level the call is itself
//! traced (and replayed by argument signature, as `jit` is), so a vmapped
//! function is one compiled program; inside `grad`, `jit`, a loop's step
//! or another `vmap` its batched nodes join the program being traced.

use super::loops::{Origin, captured, leaf_shape, zeros};
use super::tree::{Tree, flatten, rebuild_in_order};
use crate::ad::vmap::{Batched, batch_axis_first, batch_program, move_batch_axis, with_batch};
use crate::ir::Shape;
use crate::ir::shape::show;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::trace::{Trace, TraceRef, node_of, traced};
use crate::lisp::value::Value;
use egg::Id;
use std::cell::RefCell;
use std::rc::Rc;

/// Which axis of an argument (or of a result) is the batch's: `None` for
/// an argument shared by every example (a result the same for all).
pub type Axis = Option<i64>;

/// `:in-axes` or `:out-axes`: one axis for every argument (result), or
/// one per argument (per element of a list of results).
#[derive(Clone, Debug, PartialEq)]
pub enum Axes {
    /// The same for all.
    All(Axis),
    /// One per argument, or per element of the result list.
    Each(Vec<Axis>),
}

/// Calls the vmapped `f` on `args` inside the active trace: its batched
/// program joins that trace, and the results are traced values of it.
pub fn vmap_in_trace(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    in_axes: &Axes,
    out_axes: &Axes,
) -> EvalResult<Value> {
    let outer = interp
        .numeric
        .trace
        .clone()
        .ok_or_else(|| EvalError::type_error("internal: vmap_in_trace outside a trace"))?;
    let per_argument: Vec<Axis> = match in_axes {
        Axes::All(axis) => vec![*axis; args.len()],
        Axes::Each(axes) if axes.len() == args.len() => axes.clone(),
        Axes::Each(axes) => {
            return Err(EvalError::type_error(format!(
                "vmap: :in-axes has {} entries, the function was called with {} arguments",
                axes.len(),
                args.len()
            )));
        }
    };
    // Each argument's leaves and the axis mapped in each.
    let mut leaves = Vec::new();
    let mut trees: Vec<Tree> = Vec::with_capacity(args.len());
    let mut mapped: Vec<Option<usize>> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (position, (arg, axis)) in args.iter().zip(&per_argument).enumerate() {
        let start = leaves.len();
        trees.push(flatten(
            arg,
            &mut leaves,
            "arguments of a vmapped function",
        )?);
        for leaf in &leaves[start..] {
            let shape = leaf_shape(leaf);
            mapped.push(match axis {
                None => None,
                Some(axis) => Some(resolve_axis(*axis, &shape).ok_or_else(|| {
                    EvalError::shape(format!(
                        "vmap: :in-axes maps axis {axis} of argument {position}, which has shape {}",
                        show(&shape)
                    ))
                })?),
            });
            owner.push(position);
        }
    }
    let size = batch_size(&leaves, &mapped, &owner)?;
    // The body: one example of each mapped leaf as an input, the shared
    // leaves as they are (captured when the body reads them).
    let body: TraceRef = Rc::new(RefCell::new(Trace::loop_body(Some(Rc::clone(&outer)))));
    let mut body_leaves = Vec::with_capacity(leaves.len());
    let mut bindings: Vec<Batched> = Vec::new();
    for (leaf, axis) in leaves.iter().zip(&mapped) {
        match axis {
            None => body_leaves.push(leaf.clone()),
            Some(axis) => {
                let shape = leaf_shape(leaf);
                let example: Shape = shape
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| k != *axis)
                    .map(|(_, &d)| d)
                    .collect();
                let dtype = crate::lisp::trace::value_dtype(leaf);
                let id = body.borrow_mut().add_typed_input(zeros(&example), dtype);
                body_leaves.push(traced(&body, id));
                let outer_id = node_of(&outer, leaf)?;
                let first = batch_axis_first(&mut outer.borrow_mut().graph, outer_id, *axis);
                bindings.push(Batched::mapped(first));
            }
        }
    }
    let mut supply = body_leaves.into_iter();
    let call_args: Vec<Value> = trees
        .iter()
        .map(|tree| rebuild_in_order(tree, &mut supply))
        .collect();
    let saved = interp.numeric.trace.replace(Rc::clone(&body));
    let result = interp.apply(f, call_args);
    interp.numeric.trace = saved;
    let result = result?;
    let mut out_leaves = Vec::new();
    let out_tree = flatten(
        &result,
        &mut out_leaves,
        "the results of a vmapped function",
    )?;
    let roots: Vec<Id> = out_leaves
        .iter()
        .map(|v| node_of(&body, v))
        .collect::<EvalResult<_>>()?;
    let b = body.borrow();
    if b.inspected {
        return Err(EvalError::type_error(
            "vmap: the function looks at the values of its mapped arguments (if, while, a comparison of numbers, printing), which differ from one example to the next; use where on tensors",
        ));
    }
    let captures: Vec<(Origin, Shape)> = captured(&b, bindings.len())?;
    for (origin, _) in &captures {
        bindings.push(Batched::shared(origin.node_in(&outer)?));
    }
    let (nodes, shapes) = (b.graph.nodes().to_vec(), b.graph.shapes().to_vec());
    drop(b);
    let mut o = outer.borrow_mut();
    let batched = batch_program(&nodes, &shapes, &roots, &bindings, size, &mut o.graph)
        .map_err(|e| EvalError::type_error(e.to_string()))?;
    let leaf_axes = result_axes(out_axes, &out_tree)?;
    let mut ids = Vec::with_capacity(batched.len());
    for (k, (value, axis)) in batched.into_iter().zip(leaf_axes).enumerate() {
        ids.push(match axis {
            None if value.batched => {
                return Err(EvalError::shape(format!(
                    "vmap: :out-axes is #f for result {k}, which differs from one example to the next"
                )));
            }
            None => value.id,
            Some(axis) => {
                let id = with_batch(&mut o.graph, value, size);
                let shape = o.graph.shape(id).clone();
                let at = resolve_axis(axis, &shape).ok_or_else(|| {
                    EvalError::shape(format!(
                        "vmap: :out-axes puts the batch at axis {axis} of result {k}, whose batched shape is {}",
                        show(&shape)
                    ))
                })?;
                move_batch_axis(&mut o.graph, id, at)
            }
        });
    }
    drop(o);
    let mut values = ids.into_iter().map(|id| traced(&outer, id));
    Ok(rebuild_in_order(&out_tree, &mut values))
}

/// A possibly negative axis of a value of `shape`, in range.
fn resolve_axis(axis: i64, shape: &[usize]) -> Option<usize> {
    let rank = shape.len() as i64;
    let k = if axis < 0 { axis + rank } else { axis };
    (0..rank).contains(&k).then_some(k as usize)
}

/// The one length of every mapped axis, or an error listing them.
fn batch_size(leaves: &[Value], mapped: &[Option<usize>], owner: &[usize]) -> EvalResult<usize> {
    let lengths: Vec<(usize, Shape, usize)> = leaves
        .iter()
        .zip(mapped)
        .zip(owner)
        .filter_map(|((leaf, axis), &p)| axis.map(|a| (p, leaf_shape(leaf), a)))
        .collect();
    let Some((_, first_shape, first_axis)) = lengths.first() else {
        return Err(EvalError::type_error(
            "vmap needs at least one mapped argument: :in-axes are all #f",
        ));
    };
    let size = first_shape[*first_axis];
    if lengths.iter().any(|(_, shape, axis)| shape[*axis] != size) {
        let listed: Vec<String> = lengths
            .iter()
            .map(|(p, shape, axis)| {
                format!(
                    "argument {p} of shape {} has {} along axis {axis}",
                    show(shape),
                    shape[*axis]
                )
            })
            .collect();
        return Err(EvalError::shape(format!(
            "vmap: mapped axes of different sizes: {}",
            listed.join(", ")
        )));
    }
    Ok(size)
}

/// The batch axis of each result leaf: `:out-axes` one for all, or one per
/// element of a list of results (applying to all its leaves).
fn result_axes(out_axes: &Axes, tree: &Tree) -> EvalResult<Vec<Axis>> {
    let count = |t: &Tree| {
        let mut v = Vec::new();
        super::tree::leaf_indices(t, &mut v);
        v.len()
    };
    match (out_axes, tree) {
        (Axes::All(axis), _) => Ok(vec![*axis; count(tree)]),
        (Axes::Each(axes), Tree::List(items)) if axes.len() == items.len() => Ok(items
            .iter()
            .zip(axes)
            .flat_map(|(item, axis)| std::iter::repeat_n(*axis, count(item)))
            .collect()),
        (Axes::Each(axes), _) => Err(EvalError::type_error(format!(
            "vmap: :out-axes has {} entries, the function returned {}",
            axes.len(),
            match tree {
                Tree::List(items) => format!("a list of {}", items.len()),
                Tree::Leaf(_) | Tree::Complex(..) => "one value".to_string(),
            }
        ))),
    }
}

//! Loop-invariant code motion: a loop body's values computed from its
//! captures alone (not from the state, the step index or the sequence
//! rows) are computed once, in the enclosing trace, and enter the body as
//! captures. A solver's step that multiplies by a matrix built from
//! captured values, or a reverse rule that linearizes at a fixed point
//! inside its linear solver's loop, then does that work once instead of
//! once per step. Derivatives are unchanged: the loop's reverse gives the
//! new captures their cotangents and the enclosing trace carries them
//! back through the hoisted computation.

use super::loops::Origin;
use crate::ir::{Shape, TNode, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::trace::{TraceRef, buf_to_value, node_of, traced};
use egg::Id;
use smallvec::SmallVec;

/// Moves the invariant values of a body (`nodes`, roots `roots`, inputs
/// from `first_capture` on being `captures`) into the enclosing trace
/// `outer`, appending them to `captures`; returns the body's new nodes
/// (the same ids, each hoisted node now an input).
pub(super) fn hoist_invariants(
    nodes: &[TNode],
    shapes: &[Shape],
    roots: &[Id],
    first_capture: usize,
    captures: &mut Vec<(Origin, Shape)>,
    outer: &TraceRef,
) -> EvalResult<Vec<TNode>> {
    let invariant: Vec<bool> = invariants(nodes, first_capture);
    let mut used_by_variant = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        if !invariant[i] {
            for &c in &node.children {
                used_by_variant[usize::from(c)] = true;
            }
        }
    }
    for &root in roots {
        used_by_variant[usize::from(root)] = true;
    }
    let hoisted: Vec<usize> = (0..nodes.len())
        .filter(|&i| invariant[i] && used_by_variant[i] && worth_hoisting(nodes, shapes, i))
        .collect();
    if hoisted.is_empty() {
        return Ok(nodes.to_vec());
    }
    // The invariant nodes rebuilt in the enclosing trace.
    let mut outside: Vec<Option<Id>> = vec![None; nodes.len()];
    let mut differentiable = vec![false; nodes.len()];
    let last = *hoisted.last().expect("not empty");
    for i in 0..=last {
        if !invariant[i] {
            continue;
        }
        let node = &nodes[i];
        let id = match &node.op {
            TOp::Input { index, .. } => {
                let (origin, _) = &captures[*index as usize - first_capture];
                differentiable[i] = origin.differentiable();
                origin.node_in(outer)?
            }
            op => {
                let children: SmallVec<[Id; 3]> = node
                    .children
                    .iter()
                    .map(|&c| outside[usize::from(c)].expect("invariant operands come first"))
                    .collect();
                differentiable[i] = node
                    .children
                    .iter()
                    .any(|&c| differentiable[usize::from(c)]);
                outer
                    .borrow_mut()
                    .graph
                    .add(op.clone(), &children)
                    .map_err(|e| EvalError::shape(e.0))?
            }
        };
        outside[i] = Some(id);
    }
    let mut body = nodes.to_vec();
    let dtypes = crate::ir::dtypes::dtypes_of(nodes);
    for &i in &hoisted {
        let index = (first_capture + captures.len()) as u32;
        let value = traced(outer, outside[i].expect("built above"));
        let origin = match differentiable[i] {
            true => Origin::Traced(value),
            false => Origin::Constant(value),
        };
        captures.push((origin, shapes[i].clone()));
        body[i] = TNode::new(
            TOp::Input {
                index,
                shape: shapes[i].clone(),
                dtype: dtypes[i],
            },
            &[],
        );
    }
    Ok(body)
}

/// Which nodes depend on no input below `first_capture` (and on no
/// placeholder of a derivative rule, which only means something in its own
/// graph).
fn invariants(nodes: &[TNode], first_capture: usize) -> Vec<bool> {
    let mut invariant = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        invariant[i] = match &node.op {
            TOp::Input { index, .. } => *index as usize >= first_capture,
            TOp::Placeholder { .. } => false,
            _ => node.children.iter().all(|&c| invariant[usize::from(c)]),
        };
    }
    invariant
}

/// Whether computing node `i` once outside saves work: not a leaf, and
/// not a view of a single number (a broadcast constant stays a uniform
/// operand the body's fused loops read for free).
fn worth_hoisting(nodes: &[TNode], shapes: &[Shape], i: usize) -> bool {
    match &nodes[i].op {
        TOp::Input { .. } | TOp::Scalar(_) => false,
        TOp::Broadcast(_) | TOp::Reshape(_) | TOp::Transpose(_) => {
            let operand = usize::from(nodes[i].children[0]);
            shapes[operand].iter().product::<usize>() > 1
                && !matches!(nodes[operand].op, TOp::Input { .. })
        }
        _ => true,
    }
}

impl Origin {
    /// Whether derivatives flow to this captured value.
    pub(super) fn differentiable(&self) -> bool {
        matches!(self, Origin::Traced(_))
    }

    /// Its node in the enclosing trace.
    pub(super) fn node_in(&self, outer: &TraceRef) -> EvalResult<Id> {
        match self {
            Origin::Traced(value) | Origin::Constant(value) => node_of(outer, value),
            // An f32 value is held widened: an input of its own type.
            Origin::Known(buf, crate::dtype::DType::F32) => Ok(outer
                .borrow_mut()
                .add_typed_input(buf.clone(), crate::dtype::DType::F32)),
            Origin::Known(buf, _) => node_of(outer, &buf_to_value(buf.clone())),
        }
    }
}

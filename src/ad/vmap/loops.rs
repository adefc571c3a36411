//! The batching rules of loops (`TOp::Scan`, `TOp::ScanVjp`): a loop over
//! a batch is one loop whose body is the batched body.
//!
//! Which state leaves are batched is found by a fixed point: a leaf shared
//! at the start becomes batched when the step makes it from a batched
//! value. A `while-loop` whose condition differs between examples runs
//! while any example's holds, each example's state frozen (a `where` on
//! its condition) once its own fails, as that example alone would stop.
//! The reverse of a loop (`ScanVjp`) is the reverse of the batched loop
//! with every state leaf, sequence and differentiated capture batched, so
//! that each example gets its own cotangents rather than their sum.
//!
//! Results are laid out again per example: a loop packs its final state
//! and stacked outputs into one vector; over a batch each example's
//! packed vector is a row of `[size, packed length]` (stacked outputs,
//! whose steps run along the first axis, moved behind the batch axis).

use super::{BatchError, Batched, batch_program, with_batch};
use crate::egraph::tensor::optimize::optimize_body;
use crate::ir::loops::{Body, Scan, ScanSpec};
use crate::ir::{CmpOp, ReduceOp, Shape, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;
use std::sync::Arc;

/// What is batched in a loop over a batch.
struct Plan {
    leaves: Vec<bool>,
    xs: Vec<bool>,
    captures: Vec<bool>,
}

fn batched_shape(size: usize, shape: &[usize]) -> Shape {
    std::iter::once(size).chain(shape.iter().copied()).collect()
}

/// Swaps a stacked value's first two axes (steps and batch).
fn swap_first(graph: &mut TensorGraph, id: Id) -> Id {
    let rank = graph.shape(id).len() as u8;
    let perm: SmallVec<[u8; 4]> = [1, 0].into_iter().chain(2..rank).collect();
    graph.add_valid(TOp::Transpose(perm), &[id])
}

/// The batched loop of `spec` for a batch of `size`, given which of its
/// operands are batched (`all_batched`: every state leaf, sequence and
/// differentiated capture, for a reverse). Returns the batched spec and
/// the plan.
fn batched_spec(
    spec: &ScanSpec,
    operands: &[Batched],
    size: usize,
    all_batched: bool,
) -> Result<(ScanSpec, Plan), BatchError> {
    let (n_leaves, n_xs) = (spec.leaves.len(), spec.xs.len());
    let mut plan = Plan {
        leaves: (0..n_leaves)
            .map(|k| all_batched || operands[k].batched)
            .collect(),
        xs: (0..n_xs)
            .map(|k| all_batched || operands[n_leaves + k].batched)
            .collect(),
        captures: (0..spec.captures.len())
            .map(|k| {
                operands[n_leaves + n_xs + k].batched || (all_batched && spec.differentiable[k])
            })
            .collect(),
    };
    loop {
        let (body, condition) = match batched_body(spec, &plan, size)? {
            Stepped::Grown(grown) => {
                plan.leaves = grown;
                continue;
            }
            Stepped::Done { body, condition } => (body, condition),
        };
        let leaves = spec
            .leaves
            .iter()
            .zip(&plan.leaves)
            .map(|(s, &b)| if b { batched_shape(size, s) } else { s.clone() })
            .collect();
        let captures = spec
            .captures
            .iter()
            .zip(&plan.captures)
            .map(|(s, &b)| if b { batched_shape(size, s) } else { s.clone() })
            .collect();
        let xs = spec
            .xs
            .iter()
            .zip(&plan.xs)
            .map(|(s, &b)| if b { batched_shape(size, s) } else { s.clone() })
            .collect();
        let ys = spec.ys.iter().map(|s| batched_shape(size, s)).collect();
        let mut batched = ScanSpec::new(
            body,
            leaves,
            captures,
            spec.differentiable.clone(),
            spec.n,
            spec.strategy,
            spec.limits,
        )
        .over(xs, ys);
        if let Some(condition) = condition {
            batched = batched.while_true(condition);
        }
        let batched = batched
            .limit_message(spec.limit_message.clone())
            .with_dead(spec.dead.clone())
            .with_constant(spec.constant.clone())
            .with_idle_xs(spec.idle_xs.clone());
        return Ok((batched, plan));
    }
}

/// A batched step, or the state leaves it showed must be batched too.
enum Stepped {
    /// The step makes a shared leaf from batched values: the plan grows
    /// to these leaves.
    Grown(Vec<bool>),
    /// The batched step and condition.
    Done { body: Body, condition: Option<Body> },
}

/// The batched step (and condition) under `plan`.
fn batched_body(spec: &ScanSpec, plan: &Plan, size: usize) -> Result<Stepped, BatchError> {
    let n_leaves = spec.leaves.len();
    let mut graph = TensorGraph::new();
    let inputs: Vec<Batched> = (0..spec.body_inputs())
        .map(|i| {
            let shape = spec.input_shape(i);
            let batched = if i < n_leaves {
                plan.leaves[i]
            } else if i == n_leaves {
                false
            } else if i < spec.captures_from() {
                plan.xs[i - n_leaves - 1]
            } else {
                plan.captures[i - spec.captures_from()]
            };
            let full = if batched {
                batched_shape(size, &shape)
            } else {
                shape
            };
            Batched {
                id: graph.input(i as u32, &full, spec.input_dtype(i)),
                batched,
            }
        })
        .collect();
    let body = &spec.body;
    let outs = batch_program(
        &body.nodes,
        &body.shapes,
        &body.roots,
        &inputs,
        size,
        &mut graph,
    )?;
    // The condition over the same inputs: per example where it differs.
    let test = match &spec.condition {
        Some(condition) => Some(
            batch_program(
                &condition.nodes,
                &condition.shapes,
                &condition.roots,
                &inputs,
                size,
                &mut graph,
            )?[0],
        ),
        None => None,
    };
    // A leaf the step makes from a batched value is batched; with a
    // condition that differs between examples, every leaf is (each
    // example's state stops on its own).
    let per_example_test = test.is_some_and(|t| t.batched);
    let grown: Vec<bool> = (0..n_leaves)
        .map(|k| plan.leaves[k] || outs[k].batched || per_example_test)
        .collect();
    if grown != plan.leaves {
        return Ok(Stepped::Grown(grown));
    }
    let mut roots: Vec<Id> = Vec::with_capacity(outs.len());
    for (k, out) in outs.iter().enumerate() {
        let next = if k >= n_leaves || plan.leaves[k] {
            with_batch(&mut graph, *out, size)
        } else {
            out.id
        };
        roots.push(next);
    }
    let mut condition_roots = None;
    if let Some(test) = test {
        if test.batched {
            // Each example's state moves only while its own condition
            // holds; the loop runs while any does.
            let zero = graph.num(0.0);
            let going = graph
                .add(TOp::Compare(CmpOp::Ne), &[test.id, zero])
                .map_err(|e| BatchError::Shape(e.0))?;
            for k in 0..n_leaves {
                let rank = spec.leaves[k].len();
                let mut lined: Shape = SmallVec::from_slice(&[size]);
                lined.extend(std::iter::repeat_n(1, rank));
                let mask = graph.reshape(going, &lined);
                let held = inputs[k].id;
                roots[k] = graph
                    .add(TOp::Where, &[mask, roots[k], held])
                    .map_err(|e| BatchError::Shape(e.0))?;
            }
            let any = graph.add_valid(
                TOp::Reduce {
                    op: ReduceOp::Max,
                    axes: SmallVec::from_slice(&[0]),
                    keepdims: false,
                },
                &[going],
            );
            condition_roots = Some(any);
        } else {
            condition_roots = Some(test.id);
        }
    }
    let limits = spec.limits;
    let body = optimize_body(graph.nodes(), &roots, limits);
    let condition = condition_roots.map(|root| optimize_body(graph.nodes(), &[root], limits));
    Ok(Stepped::Done { body, condition })
}

/// The batched loop's operands: state leaves batched as planned, sequences
/// with their steps first, captures batched as planned.
fn loop_operands(
    graph: &mut TensorGraph,
    spec: &ScanSpec,
    plan: &Plan,
    operands: &[Batched],
    size: usize,
) -> Vec<Id> {
    let (n_leaves, n_xs) = (spec.leaves.len(), spec.xs.len());
    let mut children = Vec::with_capacity(operands.len());
    for (k, &b) in plan.leaves.iter().enumerate() {
        let v = operands[k];
        children.push(if b { with_batch(graph, v, size) } else { v.id });
    }
    for (k, &b) in plan.xs.iter().enumerate() {
        let v = operands[n_leaves + k];
        children.push(if b {
            let full = with_batch(graph, v, size);
            swap_first(graph, full)
        } else {
            v.id
        });
    }
    for (k, &b) in plan.captures.iter().enumerate() {
        let v = operands[n_leaves + n_xs + k];
        children.push(if b { with_batch(graph, v, size) } else { v.id });
    }
    children
}

/// Parts of a batched loop's flat result (or of its reverse's) laid out
/// per example, `[size, packed length]`: `stacked[k]` says part `k` has
/// the steps first (moved behind the batch), `batched[k]` whether it has
/// the batch at all (a shared part is broadcast).
fn per_example(
    graph: &mut TensorGraph,
    node: Id,
    parts: &[Shape],
    stacked: &[bool],
    batched: &[bool],
    size: usize,
) -> Id {
    let pieces: Vec<Id> = crate::ir::ops::unpack(graph, node, parts)
        .into_iter()
        .enumerate()
        .map(|(k, piece)| {
            let piece = if stacked[k] {
                swap_first(graph, piece)
            } else {
                with_batch(
                    graph,
                    Batched {
                        id: piece,
                        batched: batched[k],
                    },
                    size,
                )
            };
            let len = graph.numel(piece) / size.max(1);
            graph.reshape(piece, &[size, len])
        })
        .collect();
    match &pieces[..] {
        [one] => *one,
        many => graph.add_valid(TOp::Concat(1), many),
    }
}

/// The batching rule of `TOp::Scan`.
pub(super) fn batch_scan(
    graph: &mut TensorGraph,
    spec: &Scan,
    operands: &[Batched],
    size: usize,
) -> Result<Id, BatchError> {
    let (batched, plan) = batched_spec(spec, operands, size, false)?;
    let children = loop_operands(graph, spec, &plan, operands, size);
    let single = spec.ys.is_empty() && spec.leaves.len() == 1;
    let parts = batched.output_parts();
    let node = graph
        .add(TOp::Scan(Arc::new(batched)), &children)
        .map_err(|e| BatchError::Shape(e.0))?;
    if single {
        // The result is the one leaf itself.
        return Ok(with_batch(
            graph,
            Batched {
                id: node,
                batched: plan.leaves[0],
            },
            size,
        ));
    }
    let n_leaves = spec.leaves.len();
    let stacked: Vec<bool> = (0..parts.len()).map(|k| k >= n_leaves).collect();
    let batched_parts: Vec<bool> = (0..parts.len())
        .map(|k| k >= n_leaves || plan.leaves[k])
        .collect();
    Ok(per_example(
        graph,
        node,
        &parts,
        &stacked,
        &batched_parts,
        size,
    ))
}

/// The batching rule of `TOp::ScanVjp`: operands the loop's, then the
/// cotangent of its result.
pub(super) fn batch_scan_vjp(
    graph: &mut TensorGraph,
    spec: &Scan,
    operands: &[Batched],
    size: usize,
) -> Result<Id, BatchError> {
    let (count, g) = (operands.len() - 1, operands[operands.len() - 1]);
    let (batched, plan) = batched_spec(spec, &operands[..count], size, true)?;
    let mut children = loop_operands(graph, spec, &plan, &operands[..count], size);
    // The cotangent, per example `[size] ++ result`, in the batched
    // loop's layout.
    let g = with_batch(graph, g, size);
    let n_leaves = spec.leaves.len();
    let cotangent = if spec.ys.is_empty() && n_leaves == 1 {
        g
    } else {
        let mut offset = 0;
        let mut pieces = Vec::new();
        for (k, part) in spec.output_parts().iter().enumerate() {
            let len: usize = part.iter().product();
            let piece = graph.add_valid(
                TOp::Slice {
                    axis: 1,
                    start: offset,
                    end: offset + len,
                },
                &[g],
            );
            offset += len;
            let piece = graph.reshape(piece, &batched_shape(size, part));
            let piece = if k >= n_leaves {
                swap_first(graph, piece)
            } else {
                piece
            };
            let flat = graph.numel(piece);
            pieces.push(graph.reshape(piece, &[flat]));
        }
        match &pieces[..] {
            [one] => *one,
            many => graph.add_valid(TOp::Concat(0), many),
        }
    };
    children.push(cotangent);
    let shapes = batched.adjoint_shapes();
    let node = graph
        .add(TOp::ScanVjp(Arc::new(batched)), &children)
        .map_err(|e| BatchError::Shape(e.0))?;
    // Leaves, sequences (steps first), differentiated captures: all
    // batched.
    let stacked: Vec<bool> = (0..shapes.len())
        .map(|k| k >= n_leaves && k < n_leaves + spec.xs.len())
        .collect();
    let all = vec![true; shapes.len()];
    Ok(per_example(graph, node, &shapes, &stacked, &all, size))
}

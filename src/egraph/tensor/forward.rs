//! The tensor forward sweep: tangents (directional derivatives) of chosen
//! nodes, appended to the graph. Applied to a gradient program it gives
//! Hessian-vector products (forward over reverse).
//!
//! Elementwise operators use the same scalar table of local partials as the
//! reverse sweep; linear operators (reshape, slice, sums, matrix products
//! in each operand, ...) apply themselves to the tangents.

use super::graph::TensorGraph;
use super::op::{ReduceOp, TOp};
use crate::egraph::partials::{PartialBuilder, local_partials};
use egg::Id;
use smallvec::SmallVec;

/// Appends tangents of `outputs` given tangents of some nodes
/// (`(node, tangent)`, same shapes). An output that depends on none of the
/// seeded nodes gets zeros.
pub fn jvp(graph: &mut TensorGraph, seeds: &[(Id, Id)], outputs: &[Id]) -> Vec<Id> {
    let upto = outputs
        .iter()
        .map(|&o| usize::from(o) + 1)
        .max()
        .unwrap_or(0);
    let mut tangents: Vec<Option<Id>> = vec![None; upto];
    for &(node, tangent) in seeds {
        if let Some(slot) = tangents.get_mut(usize::from(node)) {
            *slot = Some(match *slot {
                Some(existing) => graph.add2(existing, tangent),
                None => tangent,
            });
        }
    }
    let start = seeds
        .iter()
        .map(|&(node, _)| usize::from(node))
        .min()
        .unwrap_or(upto);
    for index in start..upto {
        let id = Id::from(index);
        if tangents[index].is_some() {
            continue;
        }
        let node = graph.node(id).clone();
        if !node.is_differentiable() {
            continue;
        }
        let inputs: SmallVec<[Option<Id>; 3]> = node
            .children
            .iter()
            .map(|&c| tangents[usize::from(c)])
            .collect();
        if inputs.iter().all(Option::is_none) {
            continue;
        }
        tangents[index] = Some(push_forward(graph, id, &inputs));
    }
    outputs
        .iter()
        .map(|&output| match tangents[usize::from(output)] {
            Some(t) => t,
            None => {
                let shape = graph.shape(output).clone();
                graph.full(0.0, &shape)
            }
        })
        .collect()
}

/// The tangent of node `id` from its operands' tangents (`None`: zero).
fn push_forward(graph: &mut TensorGraph, id: Id, inputs: &[Option<Id>]) -> Id {
    let node = graph.node(id).clone();
    let children = node.children.clone();
    let out_shape = graph.shape(id).clone();
    // A linear operator applied to the tangents, zeros standing in for
    // operands without one.
    let linear = |graph: &mut TensorGraph| {
        let operands: SmallVec<[Id; 3]> = children
            .iter()
            .zip(inputs)
            .map(|(&child, tangent)| {
                tangent.unwrap_or_else(|| {
                    let shape = graph.shape(child).clone();
                    graph.full(0.0, &shape)
                })
            })
            .collect();
        graph.add_valid(node.op.clone(), &operands)
    };
    match &node.op {
        TOp::Map(_) => {
            let math = node.math().expect("a Map node has a scalar operator");
            let partials = local_partials(&math, id, graph);
            let mut terms: Vec<Id> = Vec::new();
            for (tangent, partial) in inputs.iter().zip(partials) {
                if let (Some(t), Some(p)) = (tangent, partial) {
                    terms.push(graph.mul(p, *t));
                }
            }
            match graph.sum_terms(&terms) {
                Some(sum) => graph.expand_to(sum, &out_shape),
                None => graph.full(0.0, &out_shape),
            }
        }
        TOp::Where => {
            let zero = graph.num(0.0);
            let a = inputs[1].unwrap_or(zero);
            let b = inputs[2].unwrap_or(zero);
            let chosen = graph.add_valid(TOp::Where, &[children[0], a, b]);
            graph.expand_to(chosen, &out_shape)
        }
        TOp::Reduce { op, axes, keepdims } => {
            let x = children[0];
            let t = inputs[0].expect("a reduction's operand has the tangent");
            let x_shape = graph.shape(x).clone();
            let weighted = match op {
                ReduceOp::Sum => t,
                ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => {
                    let kept: SmallVec<[usize; 4]> = x_shape
                        .iter()
                        .enumerate()
                        .map(|(i, &d)| if axes.contains(&(i as u8)) { 1 } else { d })
                        .collect();
                    let this = if *keepdims {
                        id
                    } else {
                        graph.reshape(id, &kept)
                    };
                    let this = graph.broadcast(this, &x_shape);
                    let weight = if *op == ReduceOp::Prod {
                        graph.div(this, x)
                    } else {
                        let hit = graph.add_valid(TOp::Compare(super::op::CmpOp::Eq), &[x, this]);
                        let count = graph.sum_axes(hit, axes, true);
                        let count = graph.broadcast(count, &x_shape);
                        graph.div(hit, count)
                    };
                    graph.mul(weight, t)
                }
            };
            graph.sum_axes(weighted, axes, *keepdims)
        }
        TOp::MatMul => {
            let (a, b) = (children[0], children[1]);
            let mut terms: Vec<Id> = Vec::new();
            if let Some(ta) = inputs[0] {
                terms.push(graph.add_valid(TOp::MatMul, &[ta, b]));
            }
            if let Some(tb) = inputs[1] {
                terms.push(graph.add_valid(TOp::MatMul, &[a, tb]));
            }
            graph
                .sum_terms(&terms)
                .expect("a matrix product with a tangent has a term")
        }
        TOp::Broadcast(_)
        | TOp::Reshape(_)
        | TOp::Transpose(_)
        | TOp::Slice { .. }
        | TOp::Pad { .. }
        | TOp::Concat(_)
        | TOp::Roll { .. }
        | TOp::Tag(_) => linear(graph),
        TOp::Input { .. }
        | TOp::Scalar(_)
        | TOp::Compare(_)
        | TOp::Round(_)
        | TOp::ArgExtreme { .. }
        | TOp::StopGradient => graph.full(0.0, &out_shape),
    }
}

//! Taylor mode through a loop: one loop whose state carries the state's
//! Taylor coefficients along (orders 1 to K), its body the step's Taylor
//! sweep, so that K orders cost one loop of K + 1 states and not the
//! tangent loop of the tangent loop of ... (2^K states).
//!
//! Layouts, in the body's inputs and the loop's operands alike: the state's
//! leaves, then their coefficients order by order (all leaves of order 1,
//! then all of order 2, ...); the step index; the sequences, then the
//! coefficients of those that have them, order by order; the captures,
//! then likewise theirs. The roots: the next state, its coefficients order
//! by order, the outputs, theirs order by order.

use super::loops::{renumbered_body, with_condition};
use super::taylor::taylor;
use crate::egraph::tensor::optimize::optimize_body;
use crate::ir::graph::TensorGraph;
use crate::ir::loops::{Scan, ScanSpec};
use crate::ir::op::{Shape, TOp};
use egg::Id;

/// The loop over `spec`'s state and its Taylor coefficients to `order`.
/// `series` marks the sequences, then the captures, that have
/// coefficients (the state always does).
pub fn taylor_loop(spec: &ScanSpec, order: usize, series: &[bool]) -> ScanSpec {
    let (leaves, xs, captures) = (spec.leaves.len(), spec.xs.len(), spec.captures.len());
    let marks = |k: usize| series.get(k).copied().unwrap_or(false);
    let marked_xs: Vec<usize> = (0..xs).filter(|&m| marks(m)).collect();
    let marked_captures: Vec<usize> = (0..captures).filter(|&j| marks(xs + j)).collect();
    let k_leaves = order * leaves;
    let k_xs = order * marked_xs.len();
    let xs_from = leaves + 1;
    let captures_from = xs_from + xs;
    // Where an input of the step goes in the new body.
    let moved = |index: usize| match index {
        i if i < leaves => i,
        i if i < captures_from => i + k_leaves,
        i => i + k_leaves + k_xs,
    };
    let (mut graph, roots, inputs) = renumbered_body(spec, moved);
    // The coefficient inputs, and the seeds of the step's sweep.
    let mut seeds: Vec<(Id, Vec<Id>)> = Vec::new();
    let mut seed =
        |graph: &mut TensorGraph, old: usize, first: usize, stride: usize, shape: &Shape| {
            let dtype = spec.input_dtype(old);
            let coefficients: Vec<Id> = (0..order)
                .map(|k| graph.input((first + k * stride) as u32, shape, dtype))
                .collect();
            if let Some(input) = inputs[old] {
                seeds.push((input, coefficients));
            }
        };
    for (j, shape) in spec.leaves.iter().enumerate() {
        seed(&mut graph, j, leaves + j, leaves, shape);
    }
    let xs_coefficients = captures_from + k_leaves;
    for (rank, &m) in marked_xs.iter().enumerate() {
        let first = xs_coefficients + rank;
        seed(&mut graph, xs_from + m, first, marked_xs.len(), &spec.xs[m]);
    }
    let captures_coefficients = xs_coefficients + k_xs + captures;
    for (rank, &j) in marked_captures.iter().enumerate() {
        let first = captures_coefficients + rank;
        seed(
            &mut graph,
            captures_from + j,
            first,
            marked_captures.len(),
            &spec.captures[j],
        );
    }
    let coefficients = taylor(&mut graph, &seeds, &roots, order);
    let (state, outputs) = roots.split_at(leaves);
    let mut all: Vec<Id> = state.to_vec();
    for k in 0..order {
        all.extend(coefficients[..leaves].iter().map(|series| series[k]));
    }
    all.extend(outputs);
    for k in 0..order {
        all.extend(coefficients[leaves..].iter().map(|series| series[k]));
    }
    let body = optimize_body(graph.nodes(), &all, spec.limits);
    let repeated = |shapes: &[Shape], picked: &[usize]| -> Vec<Shape> {
        let mut out = shapes.to_vec();
        for _ in 0..order {
            out.extend(picked.iter().map(|&i| shapes[i].clone()));
        }
        out
    };
    let every_leaf: Vec<usize> = (0..leaves).collect();
    let every_output: Vec<usize> = (0..spec.ys.len()).collect();
    let differentiable = {
        let mut flags = spec.differentiable.clone();
        for _ in 0..order {
            flags.extend(marked_captures.iter().map(|_| true));
        }
        flags
    };
    let looped = ScanSpec::new(
        body,
        repeated(&spec.leaves, &every_leaf),
        repeated(&spec.captures, &marked_captures),
        differentiable,
        spec.n,
        spec.strategy,
        spec.limits,
    )
    .over(
        repeated(&spec.xs, &marked_xs),
        repeated(&spec.ys, &every_output),
    );
    with_condition(looped, spec, moved)
}

/// The operands of the Taylor loop of `scan` (node operands `children`):
/// each group of operands followed by its coefficients order by order
/// (`coefficient(child, k)`), for the sequences and captures marked in
/// `series` (as for [`taylor_loop`]).
pub fn taylor_operands(
    scan: &Scan,
    children: &[Id],
    order: usize,
    series: &[bool],
    coefficient: impl Fn(Id, usize) -> Id,
) -> Vec<Id> {
    let leaves = scan.leaves.len();
    let xs_end = leaves + scan.xs.len();
    let end = xs_end + scan.captures.len();
    let mut operands = Vec::new();
    let mut group = |members: &[Id], marked: &[bool]| {
        operands.extend_from_slice(members);
        for k in 1..=order {
            for (&child, &with) in members.iter().zip(marked) {
                if with {
                    operands.push(coefficient(child, k));
                }
            }
        }
    };
    group(&children[..leaves], &vec![true; leaves]);
    group(&children[leaves..xs_end], &series[..scan.xs.len()]);
    group(&children[xs_end..end], &series[scan.xs.len()..]);
    operands
}

/// Coefficient `k` (1 to `order`) of `scan`'s result from the result
/// `all` of its Taylor loop: the parts of order `k` of the state and of
/// the outputs, in the result's layout.
pub fn taylor_part(graph: &mut TensorGraph, scan: &Scan, all: Id, k: usize, order: usize) -> Id {
    let parts = scan.output_parts();
    let leaves = scan.leaves.len();
    let state: usize = parts[..leaves]
        .iter()
        .map(|s| s.iter().product::<usize>())
        .sum();
    let outputs: usize = parts[leaves..]
        .iter()
        .map(|s| s.iter().product::<usize>())
        .sum();
    let total = (order + 1) * (state + outputs);
    let flat = graph.reshape(all, &[total]);
    let slice = |graph: &mut TensorGraph, start: usize, len: usize| {
        graph.add_valid(
            TOp::Slice {
                axis: 0,
                start,
                end: start + len,
            },
            &[flat],
        )
    };
    let mut pieces = vec![slice(graph, k * state, state)];
    if outputs > 0 {
        let start = (order + 1) * state + k * outputs;
        pieces.push(slice(graph, start, outputs));
    }
    let joined = match &pieces[..] {
        [one] => *one,
        both => graph.add_valid(TOp::Concat(0), both),
    };
    graph.reshape(joined, &scan.output_shape())
}

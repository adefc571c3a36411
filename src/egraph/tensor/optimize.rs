//! Optimizing a tensor program before it is compiled: bounded equality
//! saturation with the shape-safe rules of `rules.rs`, then DAG-aware
//! extraction of all roots together (the value and every derivative) under
//! a cost model of tape work — elements read and written, weighted by the
//! arithmetic of each operation, and 2mnk for matrix products.
//!
//! Programs of more than `MAX_TENSOR_SATURATION_NODES` nodes skip
//! saturation: the graph builder's sharing and constant folding is all
//! they get, so a long traced loop compiles in time linear in its length.

use super::egraph::{Shapes, TensorEGraph, node_shape, operand_shapes};
use super::rules::tensor_rules;
use crate::egraph::extract::{NodeCost, extract_by};
use crate::egraph::schedule::ParallelBackoff;
use crate::egraph::simplify::{Level, Stop};
use crate::ir::loops::Body;
pub use crate::ir::loops::TensorLimits;
use crate::ir::math::language::Math;
use crate::ir::op::{Shape, TNode, TOp};
use crate::ir::ops::softmax::shared;
use crate::ir::shape::{infer, numel};
use egg::{Id, Language, RecExpr, Runner, StopReason};
use smallvec::SmallVec;
use std::time::{Duration, Instant};

/// Programs larger than this (in nodes reachable from the roots) are not
/// saturated.
pub const MAX_TENSOR_SATURATION_NODES: usize = 5_000;

impl TensorLimits {
    /// The limits of an optimization level (`None` for level 0).
    pub fn for_level(level: Level) -> Option<TensorLimits> {
        match level {
            Level::None => None,
            Level::Bounded => Some(TensorLimits {
                iterations: 8,
                nodes: 20_000,
                time: Duration::from_millis(500),
            }),
            Level::Full => Some(TensorLimits {
                iterations: 100,
                nodes: 500_000,
                time: Duration::from_secs(20),
            }),
        }
    }
}

/// What optimizing did.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorReport {
    /// Why saturation stopped (`NotRun` at level 0, `TooLarge` past
    /// `MAX_TENSOR_SATURATION_NODES`).
    pub stop: Stop,
    /// Nodes of the program before and after.
    pub nodes_before: usize,
    /// Nodes after.
    pub nodes_after: usize,
    /// Cost before and after (the cost model's units).
    pub cost_before: u64,
    /// Cost after.
    pub cost_after: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// An optimized program.
pub struct Optimized {
    /// The program.
    pub expr: RecExpr<TNode>,
    /// The shape of each node.
    pub shapes: Vec<Shape>,
    /// The roots, in the order requested.
    pub roots: Vec<Id>,
    /// What happened.
    pub report: TensorReport,
}

/// The tape cost model.
pub struct TapeCost;

fn arithmetic(math: &Math) -> u64 {
    match math {
        Math::Add(_) | Math::Sub(_) | Math::Mul(_) | Math::Neg(_) => 0,
        Math::Div(_) => 2,
        // A function: its row's cost class.
        other => crate::ir::math::elementwise::row(other).map_or(6, |row| row.cost.tape()),
    }
}

/// The cost of `op` producing `shape` from operands of `operand_shapes`.
pub fn op_cost(op: &TOp, shape: &[usize], operand_shapes: &[&[usize]]) -> u64 {
    let n = numel(shape).max(1) as u64;
    let reads: u64 = operand_shapes
        .iter()
        .map(|s| if s.is_empty() { 0 } else { numel(s) as u64 })
        .sum();
    match op {
        TOp::Input { .. } | TOp::Scalar(_) => 1,
        TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_) => 1,
        TOp::Map(math) => 2 * (n + reads) + n * arithmetic(math),
        TOp::Compare(_) | TOp::Round(_) | TOp::Where | TOp::Cast(_) => 2 * (n + reads),
        TOp::MatMul => {
            let inner = operand_shapes[0].last().copied().unwrap_or(1) as u64;
            2 * n * inner + 2 * (n + reads)
        }
        TOp::Op(op) => op.flops(operand_shapes, shape) + 2 * (n + reads),
        _ => 2 * (n + reads),
    }
}

impl NodeCost<TNode, Shapes> for TapeCost {
    fn cost(&self, egraph: &TensorEGraph, node: &TNode) -> u64 {
        op_cost(
            &node.op,
            &node_shape(egraph, node),
            &operand_shapes(egraph, node),
        )
    }
}

/// The nodes of `nodes` that `roots` reach, as a program, with the roots'
/// new ids.
pub fn reachable(nodes: &[TNode], roots: &[Id]) -> (RecExpr<TNode>, Vec<Id>) {
    let mut keep = vec![false; nodes.len()];
    for &r in roots {
        keep[usize::from(r)] = true;
    }
    for index in (0..nodes.len()).rev() {
        if keep[index] {
            for &c in &nodes[index].children {
                keep[usize::from(c)] = true;
            }
        }
    }
    let mut map = vec![Id::from(0); nodes.len()];
    let mut expr = RecExpr::default();
    for (index, node) in nodes.iter().enumerate() {
        if keep[index] {
            let moved = node.clone().map_children(|c| map[usize::from(c)]);
            map[index] = expr.add(moved);
        }
    }
    let roots = roots.iter().map(|&r| map[usize::from(r)]).collect();
    (expr, roots)
}

/// The shape of every node of `expr` (whose inputs carry their shapes).
pub fn shapes_of(expr: &RecExpr<TNode>) -> Vec<Shape> {
    let mut shapes: Vec<Shape> = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let shape = {
            let children: SmallVec<[&[usize]; 3]> = node
                .children
                .iter()
                .map(|&c| &shapes[usize::from(c)][..])
                .collect();
            infer(&node.op, &children).unwrap_or_default()
        };
        shapes.push(shape);
    }
    shapes
}

fn program_cost(expr: &RecExpr<TNode>, shapes: &[Shape]) -> u64 {
    expr.as_ref()
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let operands: SmallVec<[&[usize]; 3]> = node
                .children
                .iter()
                .map(|&c| &shapes[usize::from(c)][..])
                .collect();
            op_cost(&node.op, &shapes[i], &operands)
        })
        .sum()
}

/// Optimizes the part of `nodes` that `roots` reach; then a `logsumexp`
/// whose softmax the program also takes reads it from the operation that
/// takes both (`ops::softmax::shared`), so each exponential is taken once.
pub fn optimize(nodes: &[TNode], roots: &[Id], limits: Option<TensorLimits>) -> Optimized {
    let mut optimized = saturated(nodes, roots, limits);
    if let Some((expr, roots)) = shared(&optimized.expr, &optimized.shapes, &optimized.roots) {
        optimized.shapes = shapes_of(&expr);
        optimized.report.nodes_after = expr.as_ref().len();
        optimized.report.cost_after = program_cost(&expr, &optimized.shapes);
        optimized.expr = expr;
        optimized.roots = roots;
    }
    optimized
}

/// Saturation and extraction, or the program unchanged where they do not
/// run or do not lower its cost.
fn saturated(nodes: &[TNode], roots: &[Id], limits: Option<TensorLimits>) -> Optimized {
    let started = Instant::now();
    let (expr, roots) = reachable(nodes, roots);
    let shapes = shapes_of(&expr);
    let cost_before = program_cost(&expr, &shapes);
    let size = expr.as_ref().len();
    let unchanged = |expr: RecExpr<TNode>, shapes: Vec<Shape>, roots: Vec<Id>, stop| Optimized {
        expr,
        shapes,
        roots,
        report: TensorReport {
            stop,
            nodes_before: size,
            nodes_after: size,
            cost_before,
            cost_after: cost_before,
            elapsed: started.elapsed(),
        },
    };
    let Some(limits) = limits else {
        return unchanged(expr, shapes, roots, Stop::NotRun);
    };
    if size > MAX_TENSOR_SATURATION_NODES {
        return unchanged(expr, shapes, roots, Stop::TooLarge);
    }
    let mut egraph = TensorEGraph::default();
    let mut map = Vec::with_capacity(size);
    for node in expr.as_ref() {
        map.push(egraph.add(node.clone().map_children(|c| map[usize::from(c)])));
    }
    egraph.rebuild();
    let egraph_roots: Vec<Id> = roots.iter().map(|&r| map[usize::from(r)]).collect();
    let runner = Runner::<TNode, Shapes>::new(Shapes)
        .with_egraph(egraph)
        .with_iter_limit(limits.iterations)
        .with_node_limit(limits.nodes)
        .with_time_limit(limits.time)
        .with_scheduler(ParallelBackoff::default())
        .run(tensor_rules());
    let stop = match runner.stop_reason {
        Some(StopReason::Saturated) => Stop::Saturated,
        Some(StopReason::NodeLimit(_)) => Stop::NodeLimit,
        Some(StopReason::TimeLimit(_)) => Stop::TimeLimit,
        _ => Stop::IterationLimit,
    };
    let extracted = extract_by(&runner.egraph, &egraph_roots, &TapeCost);
    let new_shapes = shapes_of(&extracted.expr);
    let cost_after = program_cost(&extracted.expr, &new_shapes);
    if cost_after >= cost_before {
        return unchanged(expr, shapes, roots, stop);
    }
    Optimized {
        report: TensorReport {
            stop,
            nodes_before: size,
            nodes_after: extracted.expr.as_ref().len(),
            cost_before,
            cost_after,
            elapsed: started.elapsed(),
        },
        expr: extracted.expr,
        shapes: new_shapes,
        roots: extracted.roots,
    }
}

/// Optimized bodies kept per thread (emptied when it grows past this).
const MAX_OPTIMIZED: usize = 512;

thread_local! {
    static OPTIMIZED: std::cell::RefCell<rustc_hash::FxHashMap<OptimizedKey, Body>> =
        std::cell::RefCell::default();
}

/// What a body's optimization depends on: the program, its roots and the
/// optimizer's limits.
#[derive(PartialEq, Eq, Hash)]
struct OptimizedKey {
    nodes: Vec<TNode>,
    roots: Vec<Id>,
    limits: Option<(usize, usize, u128)>,
}

/// `roots` of `nodes`, optimized, as a loop body. Remembered per thread: a function
/// called again traces the same bodies, and saturating them again
/// would cost more than a short loop runs (a `jvp` through a `scan`
/// of 10^5 steps spent 40% of each call re-optimizing its tangent
/// body).
pub fn optimize_body(nodes: &[TNode], roots: &[Id], limits: Option<TensorLimits>) -> Body {
    let key = OptimizedKey {
        nodes: nodes.to_vec(),
        roots: roots.to_vec(),
        limits: limits.map(TensorLimits::key),
    };
    if let Some(body) = OPTIMIZED.with(|memo| memo.borrow().get(&key).cloned()) {
        return body;
    }
    let optimized = optimize(nodes, roots, limits);
    let body = Body {
        nodes: optimized.expr.as_ref().to_vec(),
        shapes: optimized.shapes,
        roots: optimized.roots,
    };
    OPTIMIZED.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MAX_OPTIMIZED {
            memo.clear();
        }
        memo.insert(key, body.clone());
    });
    body
}

//! The derivatives of loops: a `scan`'s or `while-loop`'s adjoint body
//! (the reverse sweep of one step), its tangent loop (forward mode through
//! the loop) and the second-order loops built from it.
//!
//! Adjoint bodies are kept in a table keyed by the loop's fingerprint and
//! the optimizer's limits, so the loop's description (`ScanSpec`, data of
//! the tensor language) holds no derivative of itself; a loop compiled
//! again, or reached again by another sweep, finds its adjoint there.

use super::forward::jvp;
use super::reverse::vjp;
use crate::egraph::tensor::optimize::optimize_body;
use crate::ir::graph::TensorGraph;
use crate::ir::loops::{Body, ScanSpec};
use crate::ir::op::{Shape, TOp};
use egg::Id;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

/// Adjoint bodies kept (the table is emptied when it grows past this).
const MAX_ADJOINTS: usize = 512;

/// A loop and the optimizer limits its adjoint is made with.
struct AdjointKey {
    spec: ScanSpec,
    limits: Option<(usize, usize, u128)>,
}

impl PartialEq for AdjointKey {
    fn eq(&self, other: &Self) -> bool {
        self.limits == other.limits && self.spec == other.spec
    }
}

impl Eq for AdjointKey {}

impl Hash for AdjointKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.spec.fingerprint().hash(state);
        self.limits.hash(state);
    }
}

/// Every loop's adjoint made so far, by loop. A cell is filled outside
/// the table's lock: making an adjoint optimizes a body, and a nested loop
/// asks the table for its own.
type Adjoints = FxHashMap<AdjointKey, Arc<OnceLock<Arc<Body>>>>;

static ADJOINTS: LazyLock<Mutex<Adjoints>> = LazyLock::new(Mutex::default);

/// The reverse body of `spec`'s step, made at the first reverse sweep
/// through the loop and found in the table afterwards. Inputs: the body's
/// inputs (state leaves, index, slices of the sequences, captures), then
/// one cotangent per state leaf, then one per step output; roots: the
/// cotangents of the state leaves, of the slices, then of the
/// differentiable captures.
pub fn adjoint(spec: &ScanSpec) -> Arc<Body> {
    let key = AdjointKey {
        spec: spec.clone(),
        limits: spec.limits.map(|l| l.key()),
    };
    let cell = {
        let mut table = ADJOINTS.lock().unwrap_or_else(|p| p.into_inner());
        if table.len() >= MAX_ADJOINTS && !table.contains_key(&key) {
            table.clear();
        }
        Arc::clone(table.entry(key).or_default())
    };
    Arc::clone(cell.get_or_init(|| Arc::new(build_adjoint(spec))))
}

/// Builds the reverse body (see [`adjoint`]). Inputs: the body's inputs (state leaves, index,
/// slices of the sequences, captures), then one cotangent per state
/// leaf, then one per step output; roots: the cotangents of the state
/// leaves, of the slices, then of the differentiable captures.
fn build_adjoint(spec: &ScanSpec) -> Body {
    let mut graph = TensorGraph::new();
    let mut map: Vec<Id> = Vec::with_capacity(spec.body.nodes.len());
    let mut inputs: Vec<Option<Id>> = vec![None; spec.body_inputs()];
    for node in &spec.body.nodes {
        let children: SmallVec<[Id; 3]> =
            node.children.iter().map(|&c| map[usize::from(c)]).collect();
        let id = graph.add_valid(node.op.clone(), &children);
        if let TOp::Input { index, .. } = node.op {
            inputs[index as usize] = Some(id);
        }
        map.push(id);
    }
    // Inputs the body never reads still have nodes.
    let inputs: Vec<Id> = inputs
        .iter()
        .enumerate()
        .map(|(index, id)| {
            id.unwrap_or_else(|| {
                graph.input(
                    index as u32,
                    &spec.input_shape(index),
                    spec.input_dtype(index),
                )
            })
        })
        .collect();
    let base = spec.body_inputs() as u32;
    let leaves = spec.leaves.len();
    let root_dtypes = spec.body.root_dtypes();
    let state_seeds = spec
        .leaves
        .iter()
        .enumerate()
        .filter(|(k, _)| !spec.dead[*k])
        .map(|(k, shape)| {
            let root = map[usize::from(spec.body.roots[k])];
            (root, graph.input(base + k as u32, shape, root_dtypes[k]))
        })
        .collect::<Vec<_>>();
    let output_seeds = spec
        .ys
        .iter()
        .enumerate()
        .map(|(m, shape)| {
            let root = map[usize::from(spec.body.roots[leaves + m])];
            (
                root,
                graph.input(base + (leaves + m) as u32, shape, root_dtypes[leaves + m]),
            )
        })
        .collect::<Vec<_>>();
    let seeds: Vec<(Id, Id)> = state_seeds.into_iter().chain(output_seeds).collect();
    let captures_from = leaves + 1 + spec.xs.len();
    let busy = |k: &usize| !spec.idle_xs.get(*k).copied().unwrap_or(false);
    let varying = |k: &usize| !spec.constant.get(*k).copied().unwrap_or(false);
    let wrt: Vec<Id> = (0..leaves)
        .filter(varying)
        .map(|k| inputs[k])
        .chain(
            (0..spec.xs.len())
                .filter(busy)
                .map(|k| inputs[leaves + 1 + k]),
        )
        .chain(
            inputs[captures_from..]
                .iter()
                .zip(&spec.differentiable)
                .filter(|(_, d)| **d)
                .map(|(&id, _)| id),
        )
        .collect();
    let mut cotangents = vjp(&mut graph, &seeds, &wrt).into_iter();
    let mut roots: Vec<Id> = Vec::with_capacity(leaves);
    for (k, shape) in spec.leaves.iter().enumerate() {
        roots.push(match varying(&k) {
            true => cotangents.next().expect("a cotangent per varying leaf"),
            false => graph.full(0.0, shape),
        });
    }
    for (k, shape) in spec.xs.iter().enumerate() {
        roots.push(match busy(&k) {
            true => cotangents.next().expect("a cotangent per busy sequence"),
            false => graph.full(0.0, shape),
        });
    }
    roots.extend(cotangents);
    optimize_body(graph.nodes(), &roots, spec.limits)
}

/// The loop over `spec`'s state and its tangent (forward mode through the
/// loop). `with_tangent` says which sequences, then which captures,
/// have a tangent. The new loop's state is the leaves then their
/// tangents; its sequences the sequences then the tangents given; its
/// captures likewise; its outputs the outputs then their tangents.
pub fn tangent(spec: &ScanSpec, with_tangent: &[bool]) -> ScanSpec {
    let (leaves, xs, captures) = (spec.leaves.len(), spec.xs.len(), spec.captures.len());
    let (xs_tangent, captures_tangent) = with_tangent.split_at(xs.min(with_tangent.len()));
    let tangent_xs = xs_tangent.iter().filter(|t| **t).count();
    let captures_from = leaves + 1 + xs;
    // Where an input of this body goes in the new one.
    let moved = |index: usize| match index {
        i if i < leaves => i,
        i if i < captures_from => i + leaves,
        i => i + leaves + tangent_xs,
    };
    let (mut graph, roots, inputs) = renumbered_body(spec, moved);
    let mut seeds: Vec<(Id, Id)> = Vec::new();
    for (k, shape) in spec.leaves.iter().enumerate() {
        let tangent = graph.input((leaves + k) as u32, shape, spec.input_dtype(k));
        if let Some(input) = inputs[k] {
            seeds.push((input, tangent));
        }
    }
    let mut extra = 0;
    for (m, shape) in spec.xs.iter().enumerate() {
        if xs_tangent.get(m).copied().unwrap_or(false) {
            let index = 2 * leaves + 1 + xs + extra;
            extra += 1;
            let dtype = spec.input_dtype(leaves + 1 + m);
            let tangent = graph.input(index as u32, shape, dtype);
            if let Some(input) = inputs[leaves + 1 + m] {
                seeds.push((input, tangent));
            }
        }
    }
    let mut extra = 0;
    for (j, shape) in spec.captures.iter().enumerate() {
        if captures_tangent.get(j).copied().unwrap_or(false) {
            let index = 2 * leaves + 1 + xs + tangent_xs + captures + extra;
            extra += 1;
            let dtype = spec.input_dtype(captures_from + j);
            let tangent = graph.input(index as u32, shape, dtype);
            if let Some(input) = inputs[captures_from + j] {
                seeds.push((input, tangent));
            }
        }
    }
    let tangents = jvp(&mut graph, &seeds, &roots, None);
    let (state, outputs) = roots.split_at(leaves);
    let (state_tangents, output_tangents) = tangents.split_at(leaves);
    let all: Vec<Id> = [state, state_tangents, outputs, output_tangents].concat();
    let body = optimize_body(graph.nodes(), &all, spec.limits);
    let with = |shapes: &[Shape], marks: &[bool]| -> Vec<Shape> {
        let marked = shapes
            .iter()
            .zip(marks.iter().chain(std::iter::repeat(&false)))
            .filter(|(_, t)| **t)
            .map(|(s, _)| s.clone());
        shapes.iter().cloned().chain(marked).collect()
    };
    let looped = ScanSpec::new(
        body,
        spec.leaves.iter().chain(&spec.leaves).cloned().collect(),
        with(&spec.captures, captures_tangent),
        spec.differentiable
            .iter()
            .copied()
            .chain(captures_tangent.iter().filter(|t| **t).map(|_| true))
            .collect(),
        spec.n,
        spec.strategy,
        spec.limits,
    )
    .over(
        with(&spec.xs, xs_tangent),
        spec.ys.iter().chain(&spec.ys).cloned().collect(),
    );
    with_condition(looped, spec, moved)
}

/// The step's body copied into a new graph with its inputs renumbered by
/// `moved`: the graph, the new nodes of the body's roots, and the new
/// node of each input the body reads.
pub(super) fn renumbered_body(
    spec: &ScanSpec,
    moved: impl Fn(usize) -> usize,
) -> (TensorGraph, Vec<Id>, Vec<Option<Id>>) {
    let mut graph = TensorGraph::new();
    let mut map: Vec<Id> = Vec::with_capacity(spec.body.nodes.len());
    let mut inputs: Vec<Option<Id>> = vec![None; spec.body_inputs()];
    for node in &spec.body.nodes {
        let id = match &node.op {
            TOp::Input {
                index,
                shape,
                dtype,
            } => {
                let index = *index as usize;
                let id = graph.input(moved(index) as u32, shape, *dtype);
                inputs[index] = Some(id);
                id
            }
            op => {
                let children: SmallVec<[Id; 3]> =
                    node.children.iter().map(|&c| map[usize::from(c)]).collect();
                graph.add_valid(op.clone(), &children)
            }
        };
        map.push(id);
    }
    let roots = spec
        .body
        .roots
        .iter()
        .map(|&r| map[usize::from(r)])
        .collect();
    (graph, roots, inputs)
}

/// `looped`, a loop made from `spec`'s step, running while `spec`'s
/// condition (its inputs renumbered by `moved`) holds, if `spec` has one.
pub(super) fn with_condition(
    looped: ScanSpec,
    spec: &ScanSpec,
    moved: impl Fn(usize) -> usize,
) -> ScanSpec {
    match &spec.condition {
        Some(condition) => looped
            .while_true(condition.with_inputs_moved(moved))
            .limit_message(spec.limit_message.clone()),
        None => looped,
    }
}

/// The tangent loop of this one (`tangent`, the sequences then the
/// captures marked in `marks` given tangents), with this loop's dead
/// leaves dead in both halves of its state: what derivatives of this
/// loop's reverse are built from.
pub fn second_order(spec: &ScanSpec, marks: &[bool]) -> ScanSpec {
    let tangent = tangent(spec, marks);
    let dead = spec.dead.iter().chain(&spec.dead).copied().collect();
    tangent.with_dead(dead)
}

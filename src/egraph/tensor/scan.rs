//! Loops as single operations (`scan`): a body program, run `n` times on a
//! state, recorded in the enclosing program as one `TOp::Scan` node, and
//! its reverse as one `TOp::ScanVjp` node whose body is the body's
//! vector-Jacobian product. Both bodies are optimized once, when they are
//! made; the tape compiles them to sub-tapes and a backend runs the loop
//! and the checkpoint schedule.
//!
//! A body's inputs are, in order: the state's leaves (tensors or numbers),
//! the step index (a number), then the captured values (tensors or numbers
//! the step reads from outside). Its roots are the next state's leaves. A
//! state of one leaf is the scan's result as it is; a state of several
//! leaves is packed into one flat vector, in order.

use super::graph::TensorGraph;
use super::op::{Shape, TNode, TOp};
use super::optimize::{TensorLimits, optimize};
use super::reverse::vjp;
use super::shape::numel;
use egg::Id;
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

/// How a loop's states are kept for its reversal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strategy {
    /// Every state is kept.
    StoreAll,
    /// Only the initial state is kept; each state is recomputed from it.
    Recompute,
    /// Binomial checkpointing with at most this many snapshots (at least
    /// one: the initial state).
    Revolve(usize),
}

/// A loop body: an optimized program with its roots.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Body {
    /// The program, in topological order.
    pub nodes: Vec<TNode>,
    /// Its shapes, one per node.
    pub shapes: Vec<Shape>,
    /// The results.
    pub roots: Vec<Id>,
}

impl Body {
    /// `roots` of `nodes`, optimized.
    pub fn optimized(nodes: &[TNode], roots: &[Id], limits: Option<TensorLimits>) -> Body {
        let optimized = optimize(nodes, roots, limits);
        Body {
            nodes: optimized.expr.as_ref().to_vec(),
            shapes: optimized.shapes,
            roots: optimized.roots,
        }
    }
}

/// A `scan`: its body, length, schedule and the shapes it works on.
#[derive(Debug)]
pub struct ScanSpec {
    /// The step: inputs state leaves, index, captures; roots the next
    /// state's leaves.
    pub body: Body,
    /// The shapes of the state's leaves.
    pub leaves: Vec<Shape>,
    /// The shapes of the captured values.
    pub captures: Vec<Shape>,
    /// Which captured values receive gradients (values being
    /// differentiated; plain tensors and numbers do not).
    pub differentiable: Vec<bool>,
    /// The number of steps.
    pub n: usize,
    /// How states are kept for the reverse pass.
    pub strategy: Strategy,
    /// The optimizer's limits for the bodies made from this one.
    pub limits: Option<TensorLimits>,
    /// State leaves the reverse leaves out: their cotangent is zero and
    /// they feed no other leaf, so they get zero (not `0 * inf`).
    pub dead: Vec<bool>,
    /// The reverse body, made at the first reverse sweep through the scan.
    adjoint: OnceLock<Body>,
    /// A hash of everything above but `adjoint`.
    fingerprint: u64,
}

impl ScanSpec {
    /// A scan of `body`.
    pub fn new(
        body: Body,
        leaves: Vec<Shape>,
        captures: Vec<Shape>,
        differentiable: Vec<bool>,
        n: usize,
        strategy: Strategy,
        limits: Option<TensorLimits>,
    ) -> ScanSpec {
        let mut hasher = rustc_hash::FxHasher::default();
        (&body, &leaves, &captures, &differentiable, n, strategy).hash(&mut hasher);
        let leaf_count = leaves.len();
        ScanSpec {
            body,
            leaves,
            captures,
            differentiable,
            n,
            strategy,
            limits,
            dead: vec![false; leaf_count],
            adjoint: OnceLock::new(),
            fingerprint: hasher.finish(),
        }
    }

    /// The bytes of one state (all leaves), as a snapshot holds them.
    pub fn state_bytes(&self) -> usize {
        self.leaves
            .iter()
            .map(|s| s.iter().product::<usize>() * 8)
            .sum()
    }

    /// The shape of the scan's result: its one leaf's, or a flat vector
    /// of all leaves.
    pub fn output_shape(&self) -> Shape {
        match &self.leaves[..] {
            [one] => one.clone(),
            leaves => SmallVec::from_slice(&[leaves.iter().map(|s| numel(s)).sum()]),
        }
    }

    /// The shapes whose cotangents the reverse body returns: the state's
    /// leaves, then the differentiable captures.
    pub fn adjoint_shapes(&self) -> Vec<Shape> {
        let captured = self
            .captures
            .iter()
            .zip(&self.differentiable)
            .filter(|(_, d)| **d)
            .map(|(s, _)| s.clone());
        self.leaves.iter().cloned().chain(captured).collect()
    }

    /// The length of the `ScanVjp` result: all cotangents, flat.
    pub fn adjoint_len(&self) -> usize {
        self.adjoint_shapes().iter().map(|s| numel(s)).sum()
    }

    /// The reverse body. Inputs: the body's inputs (state leaves, index,
    /// captures), then one cotangent per state leaf; roots: the cotangents
    /// of the state leaves, then of the differentiable captures.
    pub fn adjoint(&self) -> &Body {
        self.adjoint.get_or_init(|| {
            let mut graph = TensorGraph::new();
            let mut map: Vec<Id> = Vec::with_capacity(self.body.nodes.len());
            let mut inputs: Vec<Option<Id>> = vec![None; self.body_inputs()];
            for node in &self.body.nodes {
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
                    id.unwrap_or_else(|| graph.input(index as u32, &self.input_shape(index)))
                })
                .collect();
            let base = self.body_inputs() as u32;
            let seeds: Vec<(Id, Id)> = self
                .body
                .roots
                .iter()
                .zip(&self.leaves)
                .enumerate()
                .map(|(k, (&root, shape))| {
                    (map[usize::from(root)], graph.input(base + k as u32, shape))
                })
                .enumerate()
                .filter(|(k, _)| !self.dead[*k])
                .map(|(_, seed)| seed)
                .collect();
            let leaves = self.leaves.len();
            let wrt: Vec<Id> = inputs[..leaves]
                .iter()
                .copied()
                .chain(
                    inputs[leaves + 1..]
                        .iter()
                        .zip(&self.differentiable)
                        .filter(|(_, d)| **d)
                        .map(|(&id, _)| id),
                )
                .collect();
            let roots = vjp(&mut graph, &seeds, &wrt);
            Body::optimized(graph.nodes(), &roots, self.limits)
        })
    }

    /// The loop over the state and its tangent (forward mode through the
    /// loop): state leaves then their tangents; captures then the tangents
    /// of those marked in `with_tangent`. Its body is this body with its
    /// forward sweep.
    pub fn tangent(&self, with_tangent: &[bool]) -> ScanSpec {
        let (leaves, captures) = (self.leaves.len(), self.captures.len());
        let mut graph = TensorGraph::new();
        let mut map: Vec<Id> = Vec::with_capacity(self.body.nodes.len());
        let mut inputs: Vec<Option<Id>> = vec![None; self.body_inputs()];
        for node in &self.body.nodes {
            let id = match &node.op {
                TOp::Input { index, shape } => {
                    let index = *index as usize;
                    let moved = if index < leaves {
                        index
                    } else {
                        index + leaves
                    };
                    let id = graph.input(moved as u32, shape);
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
        let mut seeds: Vec<(Id, Id)> = Vec::new();
        for (k, shape) in self.leaves.iter().enumerate() {
            let tangent = graph.input((leaves + k) as u32, shape);
            if let Some(input) = inputs[k] {
                seeds.push((input, tangent));
            }
        }
        let mut extra = 0;
        for (j, shape) in self.captures.iter().enumerate() {
            if with_tangent.get(j).copied().unwrap_or(false) {
                let index = 2 * leaves + 1 + captures + extra;
                extra += 1;
                let tangent = graph.input(index as u32, shape);
                if let Some(input) = inputs[leaves + 1 + j] {
                    seeds.push((input, tangent));
                }
            }
        }
        let roots: Vec<Id> = self
            .body
            .roots
            .iter()
            .map(|&r| map[usize::from(r)])
            .collect();
        let tangents = super::forward::jvp(&mut graph, &seeds, &roots, None);
        let all: Vec<Id> = roots.iter().chain(&tangents).copied().collect();
        let body = Body::optimized(graph.nodes(), &all, self.limits);
        let tangent_captures = self
            .captures
            .iter()
            .zip(with_tangent)
            .filter(|(_, t)| **t)
            .map(|(s, _)| s.clone());
        ScanSpec::new(
            body,
            self.leaves.iter().chain(&self.leaves).cloned().collect(),
            self.captures
                .iter()
                .cloned()
                .chain(tangent_captures)
                .collect(),
            self.differentiable
                .iter()
                .copied()
                .chain(with_tangent.iter().filter(|t| **t).map(|_| true))
                .collect(),
            self.n,
            self.strategy,
            self.limits,
        )
    }

    /// This loop with the leaves marked in `dead` left out of its reverse.
    pub fn with_dead(&self, dead: Vec<bool>) -> ScanSpec {
        let mut spec = ScanSpec::new(
            self.body.clone(),
            self.leaves.clone(),
            self.captures.clone(),
            self.differentiable.clone(),
            self.n,
            self.strategy,
            self.limits,
        );
        let mut hasher = rustc_hash::FxHasher::default();
        (spec.fingerprint, &dead).hash(&mut hasher);
        spec.fingerprint = hasher.finish();
        spec.dead = dead;
        spec
    }

    /// The state leaves the reverse needs, given which leaves have a
    /// cotangent that may be nonzero: those, and every leaf that feeds one
    /// of them through the step (at any number of steps).
    pub fn live_leaves(&self, nonzero: &[bool]) -> Vec<bool> {
        let leaves = self.leaves.len();
        // reads[k][j]: root k reads state input j.
        let nodes = &self.body.nodes;
        let mut inputs_of: Vec<Vec<bool>> = Vec::with_capacity(nodes.len());
        for node in nodes {
            let mut reads = vec![false; leaves];
            if let TOp::Input { index, .. } = node.op
                && (index as usize) < leaves
            {
                reads[index as usize] = true;
            }
            for &c in &node.children {
                for (r, &child) in reads.iter_mut().zip(&inputs_of[usize::from(c)]) {
                    *r |= child;
                }
            }
            inputs_of.push(reads);
        }
        let mut live = nonzero.to_vec();
        loop {
            let mut changed = false;
            for k in 0..leaves {
                if !live[k] {
                    continue;
                }
                let root = usize::from(self.body.roots[k]);
                for j in 0..leaves {
                    if inputs_of[root][j] && !live[j] {
                        live[j] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return live;
            }
        }
    }

    /// Whether the body holds a loop's reverse (a gradient taken inside
    /// the step), at any depth: derivatives through such a loop are
    /// second derivatives through a loop, which are not built.
    pub fn holds_reverse(&self) -> bool {
        self.body.nodes.iter().any(|node| match &node.op {
            TOp::ScanVjp(_) => true,
            TOp::Scan(inner) => inner.holds_reverse(),
            _ => false,
        })
    }

    /// The number of the body's inputs: leaves, the index, captures.
    pub fn body_inputs(&self) -> usize {
        self.leaves.len() + 1 + self.captures.len()
    }

    /// The shape of body input `index`.
    pub fn input_shape(&self, index: usize) -> Shape {
        let leaves = self.leaves.len();
        match index {
            i if i < leaves => self.leaves[i].clone(),
            i if i == leaves => Shape::new(),
            i => self.captures[i - leaves - 1].clone(),
        }
    }
}

impl PartialEq for ScanSpec {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
            || (self.fingerprint == other.fingerprint
                && self.n == other.n
                && self.strategy == other.strategy
                && self.leaves == other.leaves
                && self.captures == other.captures
                && self.differentiable == other.differentiable
                && self.body == other.body)
    }
}

impl Eq for ScanSpec {}

impl Hash for ScanSpec {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl PartialOrd for ScanSpec {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ScanSpec {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self == other {
            return std::cmp::Ordering::Equal;
        }
        let key = |s: &ScanSpec| {
            (
                s.fingerprint,
                s.n,
                s.strategy,
                s.leaves.clone(),
                s.captures.clone(),
                s.differentiable.clone(),
                s.dead.clone(),
            )
        };
        key(self)
            .cmp(&key(other))
            .then_with(|| self.body.cmp(&other.body))
    }
}

/// A shared scan.
pub type Scan = Arc<ScanSpec>;

//! Loops as single operations (`scan`): a body program, run `n` times on a
//! state, recorded in the enclosing program as one `TOp::Scan` node, and
//! its reverse as one `TOp::ScanVjp` node whose body is the body's
//! vector-Jacobian product. Both bodies are optimized once, when they are
//! made; the tape compiles them to sub-tapes and a backend runs the loop
//! and the checkpoint schedule.
//!
//! A body's inputs are, in order: the state's leaves (tensors or numbers),
//! the step index (a number), the step's slices of the scanned sequences
//! (`xs`: row `i` of each), then the captured values (tensors or numbers
//! the step reads from outside). Its roots are the next state's leaves,
//! then the step's outputs (`ys`), which the loop stacks along a new first
//! axis. The node's operands are the initial state's leaves, the whole
//! sequences, then the captures. A result of one state leaf and no outputs
//! is that leaf; otherwise the leaves and the stacked outputs are packed
//! into one flat vector, in order (`output_parts`).
//!
//! A `while-loop` is a scan with a `condition`: a second body over the
//! same inputs whose one root, a number, says whether another step runs.
//! Its `n` is the most steps it may run (`:max-steps`), its number of
//! steps is found as it runs, and its reverse keeps states by the online
//! schedule (`tape::checkpoint::online`).

use super::graph::TensorGraph;
use super::op::{Shape, TNode, TOp};
use super::shape::numel;
use crate::dtype::DType;
use egg::Id;
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

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

/// Limits of one saturation of the tensor optimizer (which lives in the
/// e-graph layer; loops carry the limits their bodies are optimized with).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorLimits {
    /// Rule-application rounds.
    pub iterations: usize,
    /// E-graph nodes.
    pub nodes: usize,
    /// Wall time.
    pub time: std::time::Duration,
}

impl TensorLimits {
    /// The limits as a hashable key.
    pub fn key(self) -> (usize, usize, u128) {
        (self.iterations, self.nodes, self.time.as_nanos())
    }
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
    /// This body with input `i` renumbered `moved(i)`.
    pub fn with_inputs_moved(&self, moved: impl Fn(usize) -> usize) -> Body {
        let nodes = self
            .nodes
            .iter()
            .map(|node| match &node.op {
                TOp::Input {
                    index,
                    shape,
                    dtype,
                } => TNode::new(
                    TOp::Input {
                        index: moved(*index as usize) as u32,
                        shape: shape.clone(),
                        dtype: *dtype,
                    },
                    &[],
                ),
                _ => node.clone(),
            })
            .collect();
        Body {
            nodes,
            shapes: self.shapes.clone(),
            roots: self.roots.clone(),
        }
    }

    /// The number type of input `index`, if the body reads it.
    pub fn input_dtype(&self, index: usize) -> Option<DType> {
        self.nodes.iter().find_map(|node| match node.op {
            TOp::Input {
                index: i, dtype, ..
            } if i as usize == index => Some(dtype),
            _ => None,
        })
    }

    /// The number type of each root.
    pub fn root_dtypes(&self) -> Vec<DType> {
        let dtypes = super::dtypes::dtypes_of(&self.nodes);
        self.roots.iter().map(|&r| dtypes[usize::from(r)]).collect()
    }
}

/// A `scan`: its body, length, schedule and the shapes it works on.
#[derive(Clone, Debug)]
pub struct ScanSpec {
    /// The step: inputs state leaves, index, captures; roots the next
    /// state's leaves.
    pub body: Body,
    /// The shapes of the state's leaves.
    pub leaves: Vec<Shape>,
    /// The shapes of one step's slice of each scanned sequence (the
    /// sequence itself has `n` of them along a new first axis).
    pub xs: Vec<Shape>,
    /// The shapes of one step's outputs (stacked to `n` along a new first
    /// axis in the result).
    pub ys: Vec<Shape>,
    /// The shapes of the captured values.
    pub captures: Vec<Shape>,
    /// For a `while-loop`: the body, over the step's inputs, whose one
    /// root (nonzero: go on) is computed before each step.
    pub condition: Option<Body>,
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
    /// State leaves that carry no derivative: their initial value does
    /// not depend on anything being differentiated, nor does the step
    /// make them from anything that does (a step size, a time, a
    /// counter). The reverse treats them as constants and gives them zero
    /// cotangents.
    pub constant: Vec<bool>,
    /// Sequences whose cotangent the reverse gives as zeros without
    /// computing it (nothing being differentiated flows from them).
    pub idle_xs: Vec<bool>,
    /// For a `while-loop`: what reaching its step limit means, for the
    /// error (`fixed-point: no convergence within ...`); `None` for the
    /// plain message.
    pub limit_message: Option<std::sync::Arc<str>>,
    /// A hash of everything above but `limits`.
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
        let leaf_count = leaves.len();
        let mut spec = ScanSpec {
            body,
            leaves,
            xs: Vec::new(),
            ys: Vec::new(),
            captures,
            condition: None,
            differentiable,
            n,
            strategy,
            limits,
            dead: vec![false; leaf_count],
            constant: vec![false; leaf_count],
            idle_xs: Vec::new(),
            limit_message: None,
            fingerprint: 0,
        };
        spec.fingerprint = spec.compute_fingerprint();
        spec
    }

    /// This loop scanning sequences whose steps have shapes `xs` (body
    /// inputs after the index) and stacking outputs of shapes `ys` (body
    /// roots after the state's leaves).
    pub fn over(mut self, xs: Vec<Shape>, ys: Vec<Shape>) -> ScanSpec {
        self.idle_xs = vec![false; xs.len()];
        self.xs = xs;
        self.ys = ys;
        self.fingerprint = self.compute_fingerprint();
        self
    }

    /// This loop running while `condition` (a body over the step's
    /// inputs with one root) is nonzero, at most `n` steps.
    pub fn while_true(mut self, condition: Body) -> ScanSpec {
        self.condition = Some(condition);
        self.fingerprint = self.compute_fingerprint();
        self
    }

    /// This loop reporting `message` when it reaches its step limit
    /// (`{n}` in it stands for the limit).
    pub fn limit_message(mut self, message: Option<std::sync::Arc<str>>) -> ScanSpec {
        self.limit_message = message;
        self.fingerprint = self.compute_fingerprint();
        self
    }

    /// The error for reaching the step limit with the condition true.
    pub fn limit_error(&self) -> String {
        match &self.limit_message {
            Some(message) => message.replace("{n}", &self.n.to_string()),
            None => format!(
                "while-loop reached :max-steps {} with its condition still true",
                self.n
            ),
        }
    }

    /// A hash of what the loop is (all but the optimizer's limits).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Computes [`Self::fingerprint`].
    fn compute_fingerprint(&self) -> u64 {
        let mut hasher = rustc_hash::FxHasher::default();
        (
            &self.condition,
            &self.body,
            &self.leaves,
            &self.xs,
            &self.ys,
            &self.captures,
            &self.differentiable,
            self.n,
            self.strategy,
            (&self.dead, &self.constant),
            &self.idle_xs,
            &self.limit_message,
        )
            .hash(&mut hasher);
        hasher.finish()
    }

    /// How many steps the loop runs, in words: `100 steps`, or for a
    /// `while-loop` `while, at most 1000 steps` (`while` with no limit).
    pub fn steps_label(&self) -> String {
        match (&self.condition, self.n) {
            (None, n) => format!("{n} steps"),
            (Some(_), usize::MAX) => "while".to_string(),
            (Some(_), n) => format!("while, at most {n} steps"),
        }
    }

    /// A sequence's shape: `n` steps of `step`.
    pub fn stacked(&self, step: &[usize]) -> Shape {
        let mut shape: Shape = SmallVec::from_slice(&[self.n]);
        shape.extend_from_slice(step);
        shape
    }

    /// The parts of the loop's result: the final state's leaves, then the
    /// stacked outputs.
    pub fn output_parts(&self) -> Vec<Shape> {
        let ys = self.ys.iter().map(|y| self.stacked(y));
        self.leaves.iter().cloned().chain(ys).collect()
    }

    /// The shapes of the node's operands: the initial state's leaves, the
    /// sequences, the captures.
    pub fn operand_shapes(&self) -> Vec<Shape> {
        let xs = self.xs.iter().map(|x| self.stacked(x));
        self.leaves
            .iter()
            .cloned()
            .chain(xs)
            .chain(self.captures.iter().cloned())
            .collect()
    }

    /// The bytes of one state (all leaves), as a snapshot holds them.
    pub fn state_bytes(&self) -> usize {
        self.leaves
            .iter()
            .map(|s| s.iter().product::<usize>() * 8)
            .sum()
    }

    /// The shape of the scan's result: its one leaf's, or a flat vector
    /// of all its parts (`output_parts`).
    pub fn output_shape(&self) -> Shape {
        match (&self.leaves[..], &self.ys[..]) {
            ([one], []) => one.clone(),
            _ => SmallVec::from_slice(&[self.output_parts().iter().map(|s| numel(s)).sum()]),
        }
    }

    /// The shapes whose cotangents the `ScanVjp` node returns: the
    /// state's leaves, the sequences, then the differentiable captures.
    pub fn adjoint_shapes(&self) -> Vec<Shape> {
        let captured = self
            .captures
            .iter()
            .zip(&self.differentiable)
            .filter(|(_, d)| **d)
            .map(|(s, _)| s.clone());
        let xs = self.xs.iter().map(|x| self.stacked(x));
        self.leaves
            .iter()
            .cloned()
            .chain(xs)
            .chain(captured)
            .collect()
    }

    /// The number type of the bodies' input `index` (read by the step or
    /// a `while-loop`'s condition; weak, which promotes nothing, when
    /// neither reads it).
    pub fn input_dtype(&self, index: usize) -> DType {
        self.body
            .input_dtype(index)
            .or_else(|| self.condition.as_ref()?.input_dtype(index))
            .unwrap_or(DType::Weak)
    }

    /// The length of the `ScanVjp` result: all cotangents, flat.
    pub fn adjoint_len(&self) -> usize {
        self.adjoint_shapes().iter().map(|s| numel(s)).sum()
    }

    /// Given the node `both` of a tangent loop of this one (`tangent`),
    /// whose result packs the state, its tangent, the outputs and theirs:
    /// the tangent of this loop's result, shaped as that result.
    pub fn tangent_part(&self, graph: &mut TensorGraph, both: Id) -> Id {
        let (state, outputs) = self.packed_lengths();
        let mut pieces = vec![slice(graph, both, state, 2 * state)];
        if outputs > 0 {
            let start = 2 * state + outputs;
            pieces.push(slice(graph, both, start, start + outputs));
        }
        let tangent = match &pieces[..] {
            [one] => *one,
            both => graph.add_valid(TOp::Concat(0), both),
        };
        graph.reshape(tangent, &self.output_shape())
    }

    /// A value for a tangent loop of this one from two values of this
    /// loop's result shape: the state parts of `primal` and `tangent`,
    /// then their output parts, flat (a cotangent of the tangent loop's
    /// result, say).
    pub fn interleave(&self, graph: &mut TensorGraph, primal: Id, tangent: Id) -> Id {
        let (state, outputs) = self.packed_lengths();
        let total = state + outputs;
        let primal = graph.reshape(primal, &[total]);
        let tangent = graph.reshape(tangent, &[total]);
        let mut pieces = vec![
            slice(graph, primal, 0, state),
            slice(graph, tangent, 0, state),
        ];
        if outputs > 0 {
            pieces.push(slice(graph, primal, state, total));
            pieces.push(slice(graph, tangent, state, total));
        }
        graph.add_valid(TOp::Concat(0), &pieces)
    }

    /// The numbers of the state's leaves and of the stacked outputs.
    fn packed_lengths(&self) -> (usize, usize) {
        let parts = self.output_parts();
        let state = parts[..self.leaves.len()].iter().map(|s| numel(s)).sum();
        let outputs = parts[self.leaves.len()..].iter().map(|s| numel(s)).sum();
        (state, outputs)
    }

    /// From the `ScanVjp` result `of` of this loop's `second_order` loop
    /// (made with `marks`): the cotangents of the primal half, laid out as
    /// this loop's `ScanVjp` result (the initial state's, the sequences',
    /// the differentiable captures').
    pub fn primal_cotangents(&self, graph: &mut TensorGraph, of: Id, marks: &[bool]) -> Id {
        let size = |shapes: &[Shape]| -> usize { shapes.iter().map(|s| numel(s)).sum() };
        let state = size(&self.leaves);
        let stacked: Vec<Shape> = self.xs.iter().map(|x| self.stacked(x)).collect();
        let xs = size(&stacked);
        let tangent_xs = size(
            &stacked
                .iter()
                .zip(marks)
                .filter(|(_, m)| **m)
                .map(|(s, _)| s.clone())
                .collect::<Vec<_>>(),
        );
        let captured = self.adjoint_len() - state - xs;
        let mut pieces = vec![slice(graph, of, 0, state)];
        if xs > 0 {
            pieces.push(slice(graph, of, 2 * state, 2 * state + xs));
        }
        if captured > 0 {
            let start = 2 * state + xs + tangent_xs;
            pieces.push(slice(graph, of, start, start + captured));
        }
        match &pieces[..] {
            [one] => *one,
            many => graph.add_valid(TOp::Concat(0), many),
        }
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
        )
        .over(self.xs.clone(), self.ys.clone());
        spec.condition = self.condition.clone();
        spec.limit_message = self.limit_message.clone();
        spec.dead = dead;
        spec.constant = self.constant.clone();
        spec.idle_xs = self.idle_xs.clone();
        spec.fingerprint = spec.compute_fingerprint();
        spec
    }

    /// This loop with the sequences marked in `idle` given zero
    /// cotangents by its reverse (none of them is being differentiated).
    pub fn with_idle_xs(&self, idle: Vec<bool>) -> ScanSpec {
        let mut spec = self.with_dead(self.dead.clone());
        spec.idle_xs = idle;
        spec.fingerprint = spec.compute_fingerprint();
        spec
    }

    /// This loop with the leaves marked in `constant` treated as
    /// constants by its reverse (they carry no derivative).
    pub fn with_constant(&self, constant: Vec<bool>) -> ScanSpec {
        let mut spec = self.with_dead(self.dead.clone());
        spec.constant = constant;
        spec.fingerprint = spec.compute_fingerprint();
        spec
    }

    /// Which state leaves carry derivatives, given which of the initial
    /// state's leaves, of the sequences and of the captures do: those
    /// leaves, and every leaf the step makes (through differentiable
    /// operations) from one that does, at any number of steps. The rest
    /// keep their values free of anything being differentiated: the
    /// reverse need not follow them.
    pub fn active_leaves(&self, initial: &[bool], xs: &[bool], captures: &[bool]) -> Vec<bool> {
        self.active_state(initial, xs, captures).0
    }

    /// Which parts of the loop's result (the final state's leaves, then
    /// the stacked outputs) carry derivatives, given which operands (the
    /// initial state's leaves, the sequences, the captures) do.
    pub fn active_parts(&self, operands: &[bool]) -> Vec<bool> {
        let (leaves, xs) = (self.leaves.len(), self.xs.len());
        let flag = |k: usize| operands.get(k).copied().unwrap_or(true);
        let initial: Vec<bool> = (0..leaves).map(flag).collect();
        let sequences: Vec<bool> = (leaves..leaves + xs).map(flag).collect();
        let captures: Vec<bool> = (0..self.captures.len())
            .map(|j| flag(leaves + xs + j) && self.differentiable[j])
            .collect();
        let (mut parts, nodes) = self.active_state(&initial, &sequences, &captures);
        parts.extend(
            self.body.roots[leaves..]
                .iter()
                .map(|&root| nodes.flags[usize::from(root)]),
        );
        parts
    }

    /// The state leaves that carry derivatives (`active_leaves`) and the
    /// body's nodes that do, given them.
    fn active_state(
        &self,
        initial: &[bool],
        xs: &[bool],
        captures: &[bool],
    ) -> (Vec<bool>, Activity) {
        let leaves = self.leaves.len();
        let mut active = initial.to_vec();
        let nodes = &self.body.nodes;
        loop {
            let mut activity = Activity::new(nodes.len());
            for (index, node) in nodes.iter().enumerate() {
                match node.op {
                    TOp::Input { index: input, .. } => {
                        let i = input as usize;
                        activity.flags[index] = match i {
                            i if i < leaves => active[i],
                            i if i == leaves => false,
                            i if i < self.captures_from() => xs.get(i - leaves - 1) == Some(&true),
                            i => captures.get(i - self.captures_from()) == Some(&true),
                        };
                    }
                    _ => activity.set(index, node),
                }
            }
            let mut changed = false;
            for (flag, &root) in active.iter_mut().zip(&self.body.roots[..leaves]) {
                if !*flag && activity.flags[usize::from(root)] {
                    *flag = true;
                    changed = true;
                }
            }
            if !changed {
                return (active, activity);
            }
        }
    }

    /// Whether elements `start..end` of the loop's packed result cover a
    /// part marked in `parts`.
    fn covers(&self, parts: &[bool], start: usize, end: usize) -> bool {
        let mut offset = 0;
        self.output_parts()
            .iter()
            .zip(parts)
            .any(|(shape, &active)| {
                let (a, b) = (offset, offset + numel(shape));
                offset = b;
                active && a < end && start < b
            })
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
        // The step's outputs are assumed to have cotangents: what they
        // read is live.
        let mut live = nonzero.to_vec();
        for &root in &self.body.roots[leaves..] {
            for (l, &reads) in live.iter_mut().zip(&inputs_of[usize::from(root)]) {
                *l |= reads;
            }
        }
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

    /// Why the body's custom rules cannot be differentiated in a mode, if
    /// one of them (at any depth) lacks it.
    pub fn custom_refusal(&self, reverse: bool, forward: bool) -> Option<String> {
        self.body.nodes.iter().find_map(|node| match &node.op {
            TOp::Custom(rule) => super::custom::missing_mode(rule, reverse, forward),
            TOp::Scan(inner) | TOp::ScanVjp(inner) => inner.custom_refusal(reverse, forward),
            _ => None,
        })
    }

    /// The number of the body's inputs: leaves, the index, the
    /// sequences' slices, captures.
    pub fn body_inputs(&self) -> usize {
        self.leaves.len() + 1 + self.xs.len() + self.captures.len()
    }

    /// The index of the body's first captured input.
    pub fn captures_from(&self) -> usize {
        self.leaves.len() + 1 + self.xs.len()
    }

    /// The shape of body input `index`.
    pub fn input_shape(&self, index: usize) -> Shape {
        let leaves = self.leaves.len();
        match index {
            i if i < leaves => self.leaves[i].clone(),
            i if i == leaves => Shape::new(),
            i if i < self.captures_from() => self.xs[i - leaves - 1].clone(),
            i => self.captures[i - self.captures_from()].clone(),
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
                && self.xs == other.xs
                && self.ys == other.ys
                && self.condition == other.condition
                && self.captures == other.captures
                && self.differentiable == other.differentiable
                && self.dead == other.dead
                && self.constant == other.constant
                && self.limit_message == other.limit_message
                && self.idle_xs == other.idle_xs
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
                s.xs.clone(),
                s.ys.clone(),
                s.captures.clone(),
                s.differentiable.clone(),
                s.dead.clone(),
                s.constant.clone(),
                s.idle_xs.clone(),
                s.limit_message.clone(),
            )
        };
        key(self)
            .cmp(&key(other))
            .then_with(|| self.body.cmp(&other.body))
    }
}

/// Which nodes of a program carry derivatives, set node by node (each
/// after its operands): a node does when it is differentiable and one of
/// its operands does; a loop by the parts of its result
/// (`ScanSpec::active_parts`), so that a slice of a loop's packed result
/// carries derivatives only when a part it covers does (a loop's step
/// size or counter does not because its state does).
pub struct Activity {
    /// Per node, whether it carries derivatives.
    pub flags: Vec<bool>,
    /// The loops among the nodes, with the parts of their result that do.
    loops: rustc_hash::FxHashMap<usize, (Scan, Vec<bool>)>,
}

impl Activity {
    /// No node carrying derivatives yet, among `len`.
    pub fn new(len: usize) -> Activity {
        Activity {
            flags: vec![false; len],
            loops: rustc_hash::FxHashMap::default(),
        }
    }

    /// Sets node `index` (not an input) from its operands' flags.
    pub fn set(&mut self, index: usize, node: &TNode) {
        let any_operand = || node.children.iter().any(|&c| self.flags[usize::from(c)]);
        let flag = match &node.op {
            TOp::Scan(scan) => {
                let operands: Vec<bool> = node
                    .children
                    .iter()
                    .map(|&c| self.flags[usize::from(c)])
                    .collect();
                let parts = scan.active_parts(&operands);
                let any = parts.iter().any(|p| *p);
                self.loops.insert(index, (scan.clone(), parts));
                any
            }
            TOp::Slice {
                axis: 0,
                start,
                end,
            } => match self.loops.get(&usize::from(node.children[0])) {
                Some((scan, parts)) if scan.output_parts().len() > 1 => {
                    scan.covers(parts, *start, *end)
                }
                _ => any_operand(),
            },
            _ => node.is_differentiable() && any_operand(),
        };
        self.flags[index] = flag;
    }
}

/// A shared scan.
pub type Scan = Arc<ScanSpec>;

/// Elements `start..end` of the vector `of`.
fn slice(graph: &mut TensorGraph, of: Id, start: usize, end: usize) -> Id {
    graph.add_valid(
        TOp::Slice {
            axis: 0,
            start,
            end,
        },
        &[of],
    )
}

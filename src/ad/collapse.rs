//! Collapsing a sum over a batch of directions: `sum_k w_k y_k` over the
//! first axis of a value `y` computed for a batch of directions (a `vmap`
//! of a Taylor sweep, whose leading axis runs over the directions),
//! rewritten so that the sum is taken as early as the program allows.
//!
//! A sum passes through every operation that is linear in its batched
//! operands with the batch axis kept first: `sum_k (a_k + b_k)` is `sum_k
//! a_k + sum_k b_k`; `sum_k p * t_k` is `p * sum_k t_k` for a `p` that is
//! the same for every direction; reshapes, transposes, slices, pads, rolls,
//! sums and broadcasts over the other axes, and matrix products with a
//! shared matrix, apply to the sum instead of to every direction, as do
//! the operations of the table that say so (`Definition::sum_through`:
//! gathers, flips, recurrences such as `cumsum`, triangles and diagonals,
//! solves with a shared matrix). Where
//! two batched values meet in a product (`x_1 * x_1`, the second-order
//! coefficient's quadratic term), or at any other operation, the sum is
//! taken there. So the second-order coefficients of a batched Taylor sweep
//! summed over the directions become one propagated sum (Dangel et al.,
//! "collapsing Taylor mode", NeurIPS 2025): the Laplacian's `d` second-order
//! coefficients per node become one, while the first-order ones stay
//! batched.

use crate::ir::graph::TensorGraph;
use crate::ir::math::language::Math;
use crate::ir::math::partials::PartialBuilder;
use crate::ir::op::{ReduceOp, Shape, TOp};
use egg::Id;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// `sum_k w_k values[k]` over the first axis of `values` (`w_k` = 1 without
/// `weights`, a vector of the axis's length), with the sum pushed towards
/// the nodes that depend on `source` (the batch of directions).
pub fn collapsed_sum(graph: &mut TensorGraph, values: Id, source: Id, weights: Option<Id>) -> Id {
    let batch = graph.shape(values).first().copied().unwrap_or(1);
    let mut pass = Collapse {
        graph,
        source,
        weights,
        batch,
        depends: FxHashMap::default(),
        sums: FxHashMap::default(),
    };
    pass.sum(values)
}

struct Collapse<'a> {
    graph: &'a mut TensorGraph,
    source: Id,
    weights: Option<Id>,
    batch: usize,
    depends: FxHashMap<Id, bool>,
    sums: FxHashMap<Id, Id>,
}

impl Collapse<'_> {
    /// Whether `id` depends on the batch of directions.
    fn depends(&mut self, id: Id) -> bool {
        if id == self.source {
            return true;
        }
        if usize::from(id) < usize::from(self.source) {
            return false;
        }
        if let Some(&known) = self.depends.get(&id) {
            return known;
        }
        let children = self.graph.node(id).children.clone();
        let answer = children.iter().any(|&c| self.depends(c));
        self.depends.insert(id, answer);
        answer
    }

    /// Whether `id` (an operand of a node of rank `rank` with the batch
    /// axis first) carries the batch axis itself.
    fn batched(&self, id: Id, rank: usize) -> bool {
        let shape = self.graph.shape(id);
        shape.len() == rank && shape[0] == self.batch && self.batch != 1
    }

    /// `id`, an operand the same for every direction, without the batch
    /// axis (as it broadcasts against the other axes), if it is so.
    fn uniform(&mut self, id: Id, rank: usize) -> Option<Id> {
        let shape = self.graph.shape(id).clone();
        if shape.len() < rank {
            return Some(id);
        }
        if shape[0] == 1 {
            return Some(self.graph.reshape(id, &shape[1..]));
        }
        let node = self.graph.node(id).clone();
        if let TOp::Broadcast(target) = &node.op {
            let child = node.children[0];
            let inner = self.uniform(child, target.len())?;
            return Some(self.graph.broadcast(inner, &target[1..]));
        }
        None
    }

    /// `sum_k w_k` (the batch's size without weights).
    fn total_weight(&mut self) -> Id {
        match self.weights {
            Some(w) => self.graph.sum_axes(w, &[0], false),
            None => self.graph.num(self.batch as f64),
        }
    }

    /// The weighted sum over the first axis of `id`, taken here, with the
    /// factors of a product that are the same for every direction taken
    /// out of it: `sum_k (u t_k) (v s_k) = u v sum_k t_k s_k`.
    fn explicit(&mut self, id: Id) -> Id {
        let shape = self.graph.shape(id).clone();
        let rank = shape.len();
        let mut factors = Vec::new();
        self.factors(id, rank, &mut factors);
        let mut uniform = Vec::new();
        let mut batched = Vec::new();
        for factor in factors {
            match self.uniform(factor, rank) {
                Some(inner) => uniform.push(inner),
                None => batched.push(factor),
            }
        }
        if uniform.is_empty() || batched.is_empty() {
            return self.summed(id);
        }
        let product = self.product(&batched);
        let summed = self.summed(product);
        let scale = self.product(&uniform);
        let result = self.graph.mul(scale, summed);
        self.graph.expand_to(result, &shape[1..])
    }

    /// The factors of `id` as a product, through the products that carry
    /// the batch axis (a node of rank `rank`).
    fn factors(&mut self, id: Id, rank: usize, into: &mut Vec<Id>) {
        let node = self.graph.node(id).clone();
        match &node.op {
            TOp::Map(Math::Mul(_)) if self.batched(id, rank) => {
                self.factors(node.children[0], rank, into);
                self.factors(node.children[1], rank, into);
            }
            TOp::Map(Math::Neg(_)) if self.batched(id, rank) => {
                into.push(self.graph.num(-1.0));
                self.factors(node.children[0], rank, into);
            }
            TOp::Tag(_) => self.factors(node.children[0], rank, into),
            _ => into.push(id),
        }
    }

    /// The product of `factors` (broadcasting).
    fn product(&mut self, factors: &[Id]) -> Id {
        let (&first, rest) = factors.split_first().expect("at least one factor");
        rest.iter().fold(first, |acc, &f| self.graph.mul(acc, f))
    }

    /// The weighted sum over the first axis of `id`, as it is.
    fn summed(&mut self, id: Id) -> Id {
        let shape = self.graph.shape(id).clone();
        let weighted = match self.weights {
            Some(w) => {
                let mut column: Shape = SmallVec::from_slice(&[self.batch]);
                column.extend(std::iter::repeat_n(1, shape.len() - 1));
                let w = self.graph.reshape(w, &column);
                self.graph.mul(w, id)
            }
            None => id,
        };
        self.graph.sum_axes(weighted, &[0], false)
    }

    /// The weighted sum over the first axis of `id`, pushed as far up as
    /// the operations allow.
    fn sum(&mut self, id: Id) -> Id {
        if let Some(&done) = self.sums.get(&id) {
            return done;
        }
        let pushed = if self.depends(id) && self.batched(id, self.graph.shape(id).len()) {
            self.push(id)
        } else {
            None
        };
        let result = match pushed {
            Some(result) => result,
            None => match self.uniform(id, self.graph.shape(id).len()) {
                Some(inner) if !self.graph.shape(id).is_empty() => {
                    let total = self.total_weight();
                    let shape: Shape = self.graph.shape(id)[1..].into();
                    let scaled = self.graph.mul(total, inner);
                    self.graph.expand_to(scaled, &shape)
                }
                _ => self.explicit(id),
            },
        };
        self.sums.insert(id, result);
        result
    }

    /// A summed operand of a node of rank `rank`: its sum if it carries the
    /// batch axis, `total * it` if it is the same for every direction.
    fn operand(&mut self, id: Id, rank: usize) -> Option<Id> {
        if self.batched(id, rank) {
            return Some(self.sum(id));
        }
        let inner = self.uniform(id, rank)?;
        let total = self.total_weight();
        Some(self.graph.mul(total, inner))
    }

    /// The sum of `id` by its operation's rule, or `None` where it is to be
    /// taken here.
    fn push(&mut self, id: Id) -> Option<Id> {
        let node = self.graph.node(id).clone();
        let c = node.children.clone();
        let shape = self.graph.shape(id).clone();
        let rank = shape.len();
        let inner: Shape = shape[1..].into();
        let lower = |axis: u8| axis.checked_sub(1);
        let made = match &node.op {
            TOp::Map(Math::Add(_) | Math::Sub(_)) => {
                let a = self.operand(c[0], rank)?;
                let b = self.operand(c[1], rank)?;
                match node.op {
                    TOp::Map(Math::Add(_)) => self.graph.add2(a, b),
                    _ => self.graph.sub(a, b),
                }
            }
            TOp::Map(Math::Neg(_)) => {
                let a = self.sum(c[0]);
                self.graph.neg(a)
            }
            TOp::Map(Math::Mul(_)) => match (self.uniform(c[0], rank), self.uniform(c[1], rank)) {
                (Some(p), None) if self.batched(c[1], rank) => {
                    let t = self.sum(c[1]);
                    self.graph.mul(p, t)
                }
                (None, Some(p)) if self.batched(c[0], rank) => {
                    let t = self.sum(c[0]);
                    self.graph.mul(t, p)
                }
                _ => return None,
            },
            TOp::Map(Math::Div(_)) if self.batched(c[0], rank) => {
                let q = self.uniform(c[1], rank)?;
                let t = self.sum(c[0]);
                self.graph.div(t, q)
            }
            TOp::Cast(dtype) => {
                let t = self.sum(c[0]);
                self.graph.cast(t, *dtype)
            }
            TOp::Tag(_) => self.sum(c[0]),
            TOp::Reshape(target) if self.batched(c[0], self.graph.shape(c[0]).len()) => {
                let t = self.sum(c[0]);
                self.graph.reshape(t, &target[1..])
            }
            TOp::Transpose(perm) if perm.first() == Some(&0) => {
                let t = self.sum(c[0]);
                let perm: SmallVec<[u8; 4]> = perm[1..].iter().map(|&p| p - 1).collect();
                self.graph.add(TOp::Transpose(perm), &[t]).ok()?
            }
            TOp::Slice { axis, start, end } => {
                let axis = lower(*axis)?;
                let t = self.sum(c[0]);
                let op = TOp::Slice {
                    axis,
                    start: *start,
                    end: *end,
                };
                self.graph.add(op, &[t]).ok()?
            }
            TOp::Pad {
                axis,
                before,
                after,
            } => {
                let axis = lower(*axis)?;
                let t = self.sum(c[0]);
                let op = TOp::Pad {
                    axis,
                    before: *before,
                    after: *after,
                };
                self.graph.add(op, &[t]).ok()?
            }
            TOp::Roll { axis, shift } => {
                let axis = lower(*axis)?;
                let t = self.sum(c[0]);
                let op = TOp::Roll {
                    axis,
                    shift: *shift,
                };
                self.graph.add(op, &[t]).ok()?
            }
            TOp::Reduce {
                op: ReduceOp::Sum,
                axes,
                keepdims,
            } if !axes.contains(&0) => {
                let t = self.sum(c[0]);
                let axes: SmallVec<[u8; 4]> = axes.iter().map(|&a| a - 1).collect();
                let op = TOp::Reduce {
                    op: ReduceOp::Sum,
                    axes,
                    keepdims: *keepdims,
                };
                self.graph.add(op, &[t]).ok()?
            }
            TOp::Broadcast(target) if self.batched(c[0], target.len()) => {
                let t = self.sum(c[0]);
                self.graph.broadcast(t, &target[1..])
            }
            TOp::MatMul => {
                let (a, b) = (c[0], c[1]);
                let (ra, rb) = (self.graph.shape(a).len(), self.graph.shape(b).len());
                // Rows (or matrices) of a batched left operand times one
                // matrix; one matrix times a stack of batched ones.
                if ra == rank && self.batched(a, rank) && rb <= 2 && !self.depends(b) {
                    let t = self.sum(a);
                    self.graph.add(TOp::MatMul, &[t, b]).ok()?
                } else if rank >= 3
                    && rb == rank
                    && self.batched(b, rank)
                    && ra <= 2
                    && !self.depends(a)
                {
                    let t = self.sum(b);
                    self.graph.add(TOp::MatMul, &[a, t]).ok()?
                } else {
                    return None;
                }
            }
            // An operation of the table says itself where it is linear.
            TOp::Op(op) => {
                let batched: SmallVec<[bool; 3]> = c.iter().map(|&x| self.depends(x)).collect();
                let ranks: SmallVec<[usize; 3]> =
                    c.iter().map(|&x| self.graph.shape(x).len()).collect();
                let carried = c
                    .iter()
                    .zip(&batched)
                    .all(|(&x, &b)| !b || self.graph.shape(x).first() == Some(&self.batch));
                if !carried {
                    return None;
                }
                let through = op.sum_through(&batched, &ranks)?;
                let operands: SmallVec<[Id; 3]> = c
                    .iter()
                    .zip(&batched)
                    .map(|(&x, &b)| if b { self.sum(x) } else { x })
                    .collect();
                self.graph.add(TOp::Op(through), &operands).ok()?
            }
            _ => return None,
        };
        (self.graph.shape(made)[..] == inner[..]).then_some(made)
    }
}

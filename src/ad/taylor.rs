//! Taylor mode: the Taylor coefficients of chosen nodes along a curve
//! through the inputs, appended to the graph as nodes.
//!
//! The inputs move along `x(t) = x_0 + x_1 t + x_2 t^2 + ...`; every node
//! `y` of the program then moves along `y(t) = y_0 + y_1 t + ...`, and the
//! sweep appends `y_1, ..., y_K` for the nodes the outputs depend on,
//! order by order. Coefficients are *normalized*: `y_k = y^(k)(0) / k!`
//! (no factorial grows with the order; [`derivative_scales`] converts to
//! and from derivatives).
//!
//! The rules, by operation:
//! - linear operations (reshapes, slices, sums, broadcasts, `+`, `-`,
//!   `where` in its branches, casts): the operation applied to each
//!   coefficient (the forward rule with the coefficient as the tangent);
//! - products (`*`, `matmul`): the Cauchy convolution `c_k = sum_j a_j
//!   b_(k-j)`; quotients: `c_k = (a_k - sum_(j>=1) b_j c_(k-j)) / b_0`;
//!   powers with a constant exponent that is not a whole number:
//!   Griewank and Walther's recurrence (which divides by the base: such a
//!   power at a zero base gives NaN coefficients, as its derivatives are
//!   infinite or undefined there);
//! - everything else (each elementwise function of the table, reductions
//!   by `max`/`min`, the linear algebra, loops, custom rules): through its
//!   forward rule, `y'(t) = J(x(t)) x'(t)`, so `y_k = r_(k-1) / k` where
//!   `r(t)` is the forward rule's result with the operands' derivative
//!   curves `x'(t)` (coefficients `(j + 1) x_(j+1)`) as tangents, itself
//!   expanded by these rules. For `exp` (whose partial is the node) this is
//!   the classical `y_k = sum_j (j/k) x_j y_(k-j)`; for `sin` and `cos`
//!   the paired recurrence; selections (`max`, `relu`, `where`, `clamp`)
//!   follow the branch taken at `t = 0`, as their partials do.
//!
//! Loops (`scan`, `while-loop`) become one loop whose state carries the
//! state's coefficients of every order, its body the step's own Taylor
//! sweep (`taylor_loop`).
//!
//! The sweep runs over the program node by node (children before
//! parents), each node's orders in turn, so a coefficient's operands of
//! every order and the node's own lower orders exist when it is made; the
//! nodes the rules append (partials, forward rules, derivative curves) are
//! expanded on demand, a few levels deep.

use super::forward::{sweep_range, tangent_of};
use super::taylor_loop::{taylor_loop, taylor_operands, taylor_part};
use crate::ir::graph::TensorGraph;
use crate::ir::loops::Scan;
use crate::ir::math::language::Math;
use crate::ir::math::partials::PartialBuilder;
use crate::ir::op::{ReduceOp, TOp};
use egg::Id;
use rustc_hash::FxHashMap;

/// The tags of derivative-curve nodes start here (identity nodes made
/// distinct by their tag; other tags are small counters).
const CURVE_TAGS: u32 = 0x8000_0000;

/// Appends the normalized Taylor coefficients `1..=order` of `outputs`,
/// given those of some nodes (`(node, [x_1, ..., x_K])`, each of the
/// node's shape; fewer than `order` means the rest are zero). An output
/// that depends on none of the seeded nodes gets zeros.
pub fn taylor(
    graph: &mut TensorGraph,
    seeds: &[(Id, Vec<Id>)],
    outputs: &[Id],
    order: usize,
) -> Vec<Vec<Id>> {
    let (start, upto) = sweep_range(seeds.iter().map(|(node, _)| *node), outputs);
    let mut sweep = Sweep {
        graph,
        order,
        loops: FxHashMap::default(),
        coefficients: FxHashMap::default(),
        seeded: seeds.iter().cloned().collect(),
        curves: FxHashMap::default(),
        curve_of: FxHashMap::default(),
        rates: FxHashMap::default(),
        depends: FxHashMap::default(),
    };
    for index in start..upto {
        let id = Id::from(index);
        if sweep.depends(id) {
            for k in 1..=order {
                sweep.coefficient(id, k);
            }
        }
    }
    outputs
        .iter()
        .map(|&output| {
            (1..=order)
                .map(|k| {
                    let c = match sweep.coefficient(output, k) {
                        Some(c) => c,
                        None => {
                            let shape = sweep.graph.shape(output).clone();
                            sweep.graph.full(0.0, &shape)
                        }
                    };
                    super::forward::strong_as(sweep.graph, c, output)
                })
                .collect()
        })
        .collect()
}

/// `k!` for `k` in `0..=order`: derivative `k` is `k!` times normalized
/// coefficient `k`.
pub fn derivative_scales(order: usize) -> Vec<f64> {
    let mut scales = Vec::with_capacity(order + 1);
    let mut factorial = 1.0;
    for k in 0..=order {
        if k > 0 {
            factorial *= k as f64;
        }
        scales.push(factorial);
    }
    scales
}

struct Sweep<'a> {
    graph: &'a mut TensorGraph,
    /// The highest order asked for.
    order: usize,
    /// The Taylor loop of each loop met, carrying every order at once.
    loops: FxHashMap<Id, Id>,
    /// Coefficient `k` of a node (`None`: zero), once made.
    coefficients: FxHashMap<(Id, usize), Option<Id>>,
    /// The given coefficients of the seeded nodes.
    seeded: FxHashMap<Id, Vec<Id>>,
    /// Derivative-curve nodes: `x'` for `x`.
    curves: FxHashMap<Id, Id>,
    /// The derivative-curve node of `x`.
    curve_of: FxHashMap<Id, Id>,
    /// The forward rule's result of a node with its operands' derivative
    /// curves as tangents: the node's own derivative curve.
    rates: FxHashMap<Id, Id>,
    /// Whether a node moves with the seeded ones.
    depends: FxHashMap<Id, bool>,
}

impl Sweep<'_> {
    /// Whether `id` depends on a seeded node (through differentiable
    /// operations).
    fn depends(&mut self, id: Id) -> bool {
        if let Some(&known) = self.depends.get(&id) {
            return known;
        }
        let answer = if self.seeded.contains_key(&id) || self.curves.contains_key(&id) {
            true
        } else {
            let node = self.graph.node(id).clone();
            node.is_differentiable() && node.children.iter().any(|&c| self.depends(c))
        };
        self.depends.insert(id, answer);
        answer
    }

    /// Coefficient `k` of `id` (`None`: zero).
    fn coefficient(&mut self, id: Id, k: usize) -> Option<Id> {
        if k == 0 {
            return Some(id);
        }
        if let Some(&known) = self.coefficients.get(&(id, k)) {
            return known;
        }
        let made = self.make(id, k);
        self.coefficients.insert((id, k), made);
        made
    }

    fn make(&mut self, id: Id, k: usize) -> Option<Id> {
        if let Some(series) = self.seeded.get(&id) {
            return series.get(k - 1).copied();
        }
        if let Some(&x) = self.curves.get(&id) {
            // x'(t) = sum_j (j + 1) x_(j+1) t^j.
            let next = self.coefficient(x, k + 1)?;
            let scale = self.graph.num((k + 1) as f64);
            return Some(self.graph.mul(scale, next));
        }
        if !self.depends(id) {
            return None;
        }
        let node = self.graph.node(id).clone();
        let children = node.children.clone();
        let outer = self.graph.set_deriving(Some((id, false)));
        let made = match &node.op {
            op if linear(op) => {
                let tangents: Vec<Option<Id>> =
                    children.iter().map(|&c| self.coefficient(c, k)).collect();
                if tangents.iter().all(Option::is_none) {
                    None
                } else {
                    Some(tangent_of(self.graph, id, &tangents))
                }
            }
            TOp::Map(Math::Mul(_)) => {
                self.cauchy((children[0], children[1]), k, true, |g, a, b| g.mul(a, b))
            }
            TOp::MatMul => self.cauchy((children[0], children[1]), k, false, |g, a, b| {
                g.add_valid(TOp::MatMul, &[a, b])
            }),
            TOp::Map(Math::Div(_)) => self.quotient(id, children[0], children[1], k),
            TOp::Scan(scan) => {
                let all = self.taylor_loop(id, scan, &children);
                Some(taylor_part(self.graph, scan, all, k, self.order))
            }
            // A constant exponent that is not a whole number (whole ones go
            // through the forward rule: their partials are powers down to
            // 1, fine at a zero base).
            TOp::Map(Math::Pow(_))
                if self
                    .graph
                    .constant(children[1])
                    .is_some_and(|p| p.fract() != 0.0) =>
            {
                let exponent = self.graph.constant(children[1]).expect("checked");
                self.power(id, children[0], exponent, k)
            }
            _ => {
                let rate = self.rate(id);
                let c = self.coefficient(rate, k - 1)?;
                let scale = self.graph.num(1.0 / k as f64);
                Some(self.graph.mul(scale, c))
            }
        };
        self.graph.set_deriving(outer);
        made
    }

    /// The Taylor loop of the loop `id` (made once): its state and
    /// outputs with their coefficients of every order.
    fn taylor_loop(&mut self, id: Id, scan: &Scan, children: &[Id]) -> Id {
        if let Some(&all) = self.loops.get(&id) {
            return all;
        }
        let leaves = scan.leaves.len();
        let series: Vec<bool> = children[leaves..]
            .iter()
            .map(|&c| self.depends(c))
            .collect();
        let mut coefficients: FxHashMap<(Id, usize), Id> = FxHashMap::default();
        for (position, &child) in children.iter().enumerate() {
            if position >= leaves && !series[position - leaves] {
                continue;
            }
            for k in 1..=self.order {
                let c = match self.coefficient(child, k) {
                    Some(c) => c,
                    None => {
                        let shape = self.graph.shape(child).clone();
                        self.graph.full(0.0, &shape)
                    }
                };
                coefficients.insert((child, k), c);
            }
        }
        let operands = taylor_operands(scan, children, self.order, &series, |child, k| {
            coefficients[&(child, k)]
        });
        let looped = Scan::new(taylor_loop(scan, self.order, &series));
        let all = self.graph.add_valid(TOp::Scan(looped), &operands);
        self.loops.insert(id, all);
        all
    }

    /// `sum_(j=0..k) product(a_j, b_(k-j))`; for a square (`a` = `b`) of
    /// a commuting product, the terms `j` and `k - j` once, doubled.
    fn cauchy(
        &mut self,
        (a, b): (Id, Id),
        k: usize,
        commutes: bool,
        product: impl Fn(&mut TensorGraph, Id, Id) -> Id,
    ) -> Option<Id> {
        let square = commutes && a == b;
        let mut terms = Vec::new();
        let last = if square { k / 2 } else { k };
        for j in 0..=last {
            if let (Some(x), Some(y)) = (self.coefficient(a, j), self.coefficient(b, k - j)) {
                let term = product(self.graph, x, y);
                terms.push(if square && 2 * j != k {
                    let two = self.graph.num(2.0);
                    self.graph.mul(two, term)
                } else {
                    term
                });
            }
        }
        self.graph.sum_terms(&terms)
    }

    /// `c = a / b`: `c_k = (a_k - sum_(j=1..k) b_j c_(k-j)) / b_0`.
    fn quotient(&mut self, c: Id, a: Id, b: Id, k: usize) -> Option<Id> {
        let mut terms = Vec::new();
        if let Some(ak) = self.coefficient(a, k) {
            terms.push(ak);
        }
        for j in 1..=k {
            if let (Some(bj), Some(ck)) = (self.coefficient(b, j), self.coefficient(c, k - j)) {
                let product = self.graph.mul(bj, ck);
                terms.push(self.graph.neg(product));
            }
        }
        let numerator = self.graph.sum_terms(&terms)?;
        Some(self.graph.div(numerator, b))
    }

    /// `y = x^p` (`p` a constant): `y_k = (1 / (k x_0)) sum_(j=0..k-1)
    /// (p (k - j) - j) x_(k-j) y_j` (Griewank and Walther, ch. 13).
    fn power(&mut self, y: Id, x: Id, p: f64, k: usize) -> Option<Id> {
        let mut terms = Vec::new();
        for j in 0..k {
            let weight = p * (k - j) as f64 - j as f64;
            if weight == 0.0 {
                continue;
            }
            if let (Some(xj), Some(yj)) = (self.coefficient(x, k - j), self.coefficient(y, j)) {
                let w = self.graph.num(weight / k as f64);
                let product = self.graph.mul(xj, yj);
                terms.push(self.graph.mul(w, product));
            }
        }
        let sum = self.graph.sum_terms(&terms)?;
        Some(self.graph.div(sum, x))
    }

    /// The derivative curve of `id`: its forward rule with its operands'
    /// derivative curves as tangents (made once).
    fn rate(&mut self, id: Id) -> Id {
        if let Some(&rate) = self.rates.get(&id) {
            return rate;
        }
        let children = self.graph.node(id).children.clone();
        let tangents: Vec<Option<Id>> = children
            .iter()
            .map(|&c| self.depends(c).then(|| self.curve(c)))
            .collect();
        let rate = tangent_of(self.graph, id, &tangents);
        self.rates.insert(id, rate);
        rate
    }

    /// The derivative curve `x'` of `x` as a node: at `t = 0` it is `x_1`;
    /// its coefficients are `(j + 1) x_(j+1)` (a tagged identity, so that
    /// the node is `x`'s own).
    fn curve(&mut self, x: Id) -> Id {
        if let Some(&curve) = self.curve_of.get(&x) {
            return curve;
        }
        let first = match self.coefficient(x, 1) {
            Some(c) => c,
            None => {
                let shape = self.graph.shape(x).clone();
                self.graph.full(0.0, &shape)
            }
        };
        let tag = CURVE_TAGS + self.curve_of.len() as u32;
        let curve = self.graph.add_valid(TOp::Tag(tag), &[first]);
        self.curves.insert(curve, x);
        self.curve_of.insert(x, curve);
        curve
    }
}

/// Whether `op` is linear in its differentiable operands together (its
/// coefficients are itself applied to theirs).
fn linear(op: &TOp) -> bool {
    matches!(
        op,
        TOp::Map(Math::Add(_) | Math::Sub(_) | Math::Neg(_))
            | TOp::Reduce {
                op: ReduceOp::Sum,
                ..
            }
            | TOp::Broadcast(_)
            | TOp::Reshape(_)
            | TOp::Transpose(_)
            | TOp::Slice { .. }
            | TOp::Pad { .. }
            | TOp::Roll { .. }
            | TOp::Concat(_)
            | TOp::Cast(_)
            | TOp::Tag(_)
            | TOp::Where
    )
}

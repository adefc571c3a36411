//! The tensor forward sweep: tangents (directional derivatives) of chosen
//! nodes, appended to the graph. Applied to a gradient program it gives
//! Hessian-vector products (forward over reverse).
//!
//! Tangents may be batched: with `batch = Some(b)` every tangent has a
//! leading axis of length `b` (b directions at once), so a dense Hessian or
//! forward Jacobian is one program whose matrix-vector products become
//! matrix-matrix products.
//!
//! Elementwise operators use the same scalar table of local partials as the
//! reverse sweep; linear operators (reshape, slice, sums, matrix products
//! in each operand, ...) apply themselves to the tangents.

use crate::ir::graph::TensorGraph;
use crate::ir::loops::Scan;
use crate::ir::math::functions::NO_FUNCTIONS;
use crate::ir::math::partials::{PartialBuilder, local_partials};
use crate::ir::op::{CmpOp, ReduceOp, Shape, TOp};
use egg::Id;
use smallvec::SmallVec;

/// Appends tangents of `outputs` given tangents of some nodes
/// (`(node, tangent)`; a tangent has the node's shape, with a leading axis
/// of length `b` when `batch` is `Some(b)`). An output that depends on none
/// of the seeded nodes gets zeros.
pub fn jvp(
    graph: &mut TensorGraph,
    seeds: &[(Id, Id)],
    outputs: &[Id],
    batch: Option<usize>,
) -> Vec<Id> {
    let (start, upto) = sweep_range(seeds.iter().map(|&(node, _)| node), outputs);
    let mut sweep = Sweep { graph, batch };
    let mut tangents: Vec<Option<Id>> = vec![None; upto];
    // Tangents that are zero wherever a selection (`where`, `max`, `min`,
    // `relu`) did not pass its operand: multiplying them by a partial must
    // give zero there even where the partial is infinite (`sqrt` of a
    // clamped value at 0), as in the reverse sweep.
    let mut masked = vec![false; upto];
    for &(node, tangent) in seeds {
        if let Some(slot) = tangents.get_mut(usize::from(node)) {
            *slot = Some(match *slot {
                Some(existing) => sweep.graph.add2(existing, tangent),
                None => tangent,
            });
        }
    }
    for index in start..upto {
        if tangents[index].is_some() {
            continue;
        }
        let id = Id::from(index);
        let node = sweep.graph.node(id).clone();
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
        let masked_inputs: SmallVec<[bool; 3]> = node
            .children
            .iter()
            .map(|&c| masked[usize::from(c)])
            .collect();
        masked[index] = selects(&node.op)
            || (matches!(node.op, TOp::Map(_)) && masked_inputs.iter().any(|&m| m));
        let outer = sweep.graph.set_deriving(Some((id, false)));
        tangents[index] = Some(sweep.push_forward(id, &inputs, &masked_inputs));
        sweep.graph.set_deriving(outer);
    }
    // A tangent has its output's number type (a weak seed does not
    // widen an f32 result, and an f64 one does not stay f64).
    outputs
        .iter()
        .map(|&output| {
            let tangent = match tangents[usize::from(output)] {
                Some(t) => t,
                None => sweep.zeros(output),
            };
            strong_as(sweep.graph, tangent, output)
        })
        .collect()
}

/// The nodes a forward sweep from `seeds` to `outputs` visits: from the
/// first seed up to the last output, as a range of indices.
pub(super) fn sweep_range(seeds: impl Iterator<Item = Id>, outputs: &[Id]) -> (usize, usize) {
    let upto = outputs
        .iter()
        .map(|&o| usize::from(o) + 1)
        .max()
        .unwrap_or(0);
    let start = seeds.map(usize::from).min().unwrap_or(upto);
    (start, upto)
}

/// The tangent of node `id` alone from its operands' tangents (`None`:
/// zero; unbatched): its operation's forward rule, appended to the graph.
pub(super) fn tangent_of(graph: &mut TensorGraph, id: Id, tangents: &[Option<Id>]) -> Id {
    let mut sweep = Sweep { graph, batch: None };
    let masked = vec![false; tangents.len()];
    let outer = sweep.graph.set_deriving(Some((id, false)));
    let tangent = sweep.push_forward(id, tangents, &masked);
    sweep.graph.set_deriving(outer);
    tangent
}

/// Whether `op` selects among its operands elementwise (`where`, `max`,
/// `min`, `relu`): where an operand is not taken its partial is 0, and
/// the derivative there is 0 whatever flows beside it.
pub(super) fn selects(op: &TOp) -> bool {
    use crate::ir::math::language::Math;
    matches!(
        op,
        TOp::Where | TOp::Map(Math::Max(_) | Math::Min(_) | Math::Relu(_))
    )
}

/// `value` converted to the number type of `like`, when that is a strong
/// one (a derivative has its variable's type).
pub(super) fn strong_as(graph: &mut TensorGraph, value: Id, like: Id) -> Id {
    match graph.dtype(like) {
        crate::dtype::DType::Weak => value,
        dtype => graph.cast(value, dtype),
    }
}

struct Sweep<'a> {
    graph: &'a mut TensorGraph,
    batch: Option<usize>,
}

impl Sweep<'_> {
    /// The tangent of a loop's result: a loop over the state and its
    /// tangent (`ScanSpec::tangent`), whose result holds the state, its
    /// tangent, the outputs and theirs.
    fn scan_tangent(&mut self, scan: &Scan, children: &[Id], inputs: &[Option<Id>]) -> Id {
        let operands = self.tangent_operands(scan, children, inputs);
        let with_tangent: Vec<bool> = inputs[scan.leaves.len()..]
            .iter()
            .map(Option::is_some)
            .collect();
        let tangent_scan = Scan::new(super::loops::tangent(scan, &with_tangent));
        let both = self.graph.add_valid(TOp::Scan(tangent_scan), &operands);
        scan.tangent_part(self.graph, both)
    }

    /// The operands of a tangent loop of `scan` (node operands
    /// `children`, with tangents `inputs`): the state and its tangent
    /// (zero where none), the sequences and the tangents given, the
    /// captures and the tangents given.
    fn tangent_operands(&mut self, scan: &Scan, children: &[Id], inputs: &[Option<Id>]) -> Vec<Id> {
        let leaves = scan.leaves.len();
        let mut operands: Vec<Id> = children[..leaves].to_vec();
        for k in 0..leaves {
            let tangent = match inputs[k] {
                Some(t) => t,
                None => self.zeros(children[k]),
            };
            operands.push(tangent);
        }
        let captures_from = leaves + scan.xs.len();
        let end = captures_from + scan.captures.len();
        operands.extend(&children[leaves..captures_from]);
        operands.extend(inputs[leaves..captures_from].iter().flatten());
        operands.extend(&children[captures_from..end]);
        operands.extend(inputs[captures_from..end].iter().flatten());
        operands
    }

    /// The tangent of a loop's reverse (`ScanVjp`, operands the loop's
    /// and the cotangent `g`): the reverse of the tangent loop, given the
    /// tangent of `g` on its state and `g` on its state's tangent. By the
    /// symmetry of second derivatives, that reverse's cotangents of the
    /// primal operands are the tangents of this node's result.
    fn scan_vjp_tangent(&mut self, scan: &Scan, children: &[Id], inputs: &[Option<Id>]) -> Id {
        let operand_count = children.len() - 1;
        let g = children[operand_count];
        let g_tangent = match inputs[operand_count] {
            Some(t) => t,
            None => self.zeros(g),
        };
        let marks: Vec<bool> = inputs[scan.leaves.len()..operand_count]
            .iter()
            .map(Option::is_some)
            .collect();
        let second = super::loops::second_order(scan, &marks);
        let mut operands = self.tangent_operands(scan, children, &inputs[..operand_count]);
        operands.push(scan.interleave(self.graph, g_tangent, g));
        let reverse = self
            .graph
            .add_valid(TOp::ScanVjp(Scan::new(second)), &operands);
        scan.primal_cotangents(self.graph, reverse, &marks)
    }

    /// A loop's (or a loop's reverse's, or a custom call's) batched
    /// tangent: one unbatched tangent per direction, stacked.
    fn loop_columns(&mut self, id: Id, inputs: &[Option<Id>], batch: usize) -> Id {
        let node = self.graph.node(id).clone();
        let mut columns = Vec::with_capacity(batch);
        for k in 0..batch {
            let column: Vec<Option<Id>> = inputs
                .iter()
                .zip(&node.children)
                .map(|(tangent, &child)| {
                    tangent.map(|t| {
                        let shape = self.graph.shape(child).clone();
                        let full = self.tangent_shape(&shape);
                        let t = self.graph.expand_to(t, &full);
                        let row = self.graph.add_valid(
                            TOp::Slice {
                                axis: 0,
                                start: k,
                                end: k + 1,
                            },
                            &[t],
                        );
                        self.graph.reshape(row, &shape)
                    })
                })
                .collect();
            self.batch = None;
            let tangent = match &node.op {
                TOp::Scan(scan) => self.scan_tangent(scan, &node.children, &column),
                TOp::ScanVjp(scan) => self.scan_vjp_tangent(scan, &node.children, &column),
                TOp::Custom(rule) if self.batch.is_none() => {
                    super::custom_sweep::push(self.graph, rule, id, &node.children, &column)
                        .unwrap_or_else(|| {
                            self.graph
                                .full(0.0, self.graph.shape(id).clone().as_slice())
                        })
                }
                _ => unreachable!("loop_columns is called on loops and custom calls"),
            };
            self.batch = Some(batch);
            let mut shape: Shape = SmallVec::from_slice(&[1]);
            shape.extend_from_slice(self.graph.shape(id));
            columns.push(self.graph.reshape(tangent, &shape));
        }
        match &columns[..] {
            // No directions (a Jacobian with respect to an empty tensor;
            // found by tests/grammar_fuzz.rs): an empty batch of tangents.
            [] => {
                let shape = self.tangent_shape(&self.graph.shape(id).clone());
                self.graph.full(0.0, &shape)
            }
            [one] => *one,
            many => self.graph.add_valid(TOp::Concat(0), many),
        }
    }

    /// The tangent shape of a value of `shape`.
    fn tangent_shape(&self, shape: &[usize]) -> Shape {
        let mut out: Shape = self.batch.into_iter().collect();
        out.extend_from_slice(shape);
        out
    }

    fn lead(&self) -> u8 {
        u8::from(self.batch.is_some())
    }

    fn zeros(&mut self, of: Id) -> Id {
        let shape = self.tangent_shape(&self.graph.shape(of).clone());
        self.graph.full(0.0, &shape)
    }

    /// A batched tangent of a value of rank r, reshaped to broadcast
    /// (right-aligned) against values of rank `rank`: ones go after the
    /// batch axis.
    fn align(&mut self, t: Id, rank: usize) -> Id {
        let Some(b) = self.batch else {
            return t;
        };
        let shape = self.graph.shape(t).clone();
        let inner = &shape[1..];
        if inner.len() >= rank {
            return t;
        }
        let mut aligned: Shape = SmallVec::from_slice(&[b]);
        aligned.extend(std::iter::repeat_n(1, rank - inner.len()));
        aligned.extend_from_slice(inner);
        self.graph.reshape(t, &aligned)
    }

    fn shifted(&self, axis: u8) -> u8 {
        axis + self.lead()
    }

    fn push_forward(&mut self, id: Id, inputs: &[Option<Id>], masked: &[bool]) -> Id {
        let node = self.graph.node(id).clone();
        let children = node.children.clone();
        let out_shape = self.graph.shape(id).clone();
        let out_tangent = self.tangent_shape(&out_shape);
        let rank = out_shape.len();
        let tangent_or_zero = |this: &mut Self, k: usize| match inputs[k] {
            Some(t) => t,
            None => this.zeros(children[k]),
        };
        match &node.op {
            TOp::Scan(scan) if self.batch.is_none() => {
                let (scan, children) = (scan.clone(), children.clone());
                self.scan_tangent(&scan, &children, inputs)
            }
            TOp::ScanVjp(scan) if self.batch.is_none() => {
                let (scan, children) = (scan.clone(), children.clone());
                self.scan_vjp_tangent(&scan, &children, inputs)
            }
            TOp::Custom(rule) if self.batch.is_none() => {
                // Without a forward rule the request was refused before
                // the sweep (`reverse::refusal`).
                let rule = rule.clone();
                super::custom_sweep::push(self.graph, &rule, id, &children, inputs)
                    .unwrap_or_else(|| self.graph.full(0.0, &out_tangent))
            }
            TOp::Scan(_) | TOp::ScanVjp(_) | TOp::Custom(_) => {
                let batch = self.batch.unwrap_or(1);
                self.loop_columns(id, inputs, batch)
            }
            TOp::Map(_) => {
                let math = node.math().expect("a Map node has a scalar operator");
                let partials = local_partials(&math, id, self.graph, &NO_FUNCTIONS);
                let selection = selects(&node.op);
                let mut terms: Vec<Id> = Vec::new();
                for (k, (tangent, partial)) in inputs.iter().zip(partials).enumerate() {
                    if let (Some(t), Some(p)) = (tangent, partial) {
                        let t = self.align(*t, rank);
                        let finite = self.graph.constant(p).is_some_and(f64::is_finite);
                        let term = if finite {
                            self.graph.mul(p, t)
                        } else if selection {
                            // Zero where the operand is not selected, even
                            // where its tangent is infinite.
                            super::reverse::masked_product(self.graph, p, t)
                        } else if masked[k] {
                            super::reverse::masked_product(self.graph, t, p)
                        } else {
                            self.graph.mul(p, t)
                        };
                        terms.push(term);
                    }
                }
                match self.graph.sum_terms(&terms) {
                    Some(sum) => self.graph.expand_to(sum, &out_tangent),
                    None => self.graph.full(0.0, &out_tangent),
                }
            }
            TOp::Cast(dtype) => {
                let t = tangent_or_zero(self, 0);
                self.graph.cast(t, *dtype)
            }
            TOp::Where => {
                let zero = self.graph.num(0.0);
                let a = inputs[1].map_or(zero, |t| self.align(t, rank));
                let b = inputs[2].map_or(zero, |t| self.align(t, rank));
                let chosen = self.graph.add_valid(TOp::Where, &[children[0], a, b]);
                self.graph.expand_to(chosen, &out_tangent)
            }
            TOp::Reduce { op, axes, keepdims } => {
                let x = children[0];
                let t = inputs[0].expect("a reduction's operand has the tangent");
                let x_shape = self.graph.shape(x).clone();
                let weighted = match op {
                    ReduceOp::Sum => t,
                    ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => {
                        let kept: Shape = x_shape
                            .iter()
                            .enumerate()
                            .map(|(i, &d)| if axes.contains(&(i as u8)) { 1 } else { d })
                            .collect();
                        let this = if *keepdims {
                            id
                        } else {
                            self.graph.reshape(id, &kept)
                        };
                        let this = self.graph.broadcast(this, &x_shape);
                        let weight = if *op == ReduceOp::Prod {
                            self.graph.product_of_others(x, axes)
                        } else {
                            let hit = self.graph.add_valid(TOp::Compare(CmpOp::Eq), &[x, this]);
                            let count = self.graph.sum_axes(hit, axes, true);
                            let count = self.graph.broadcast(count, &x_shape);
                            self.graph.div(hit, count)
                        };
                        self.graph.mul(weight, t)
                    }
                };
                let axes: SmallVec<[u8; 4]> = axes.iter().map(|&a| self.shifted(a)).collect();
                self.graph.sum_axes(weighted, &axes, *keepdims)
            }
            TOp::MatMul => {
                let (a, b) = (children[0], children[1]);
                // Stacks of matrices broadcast their leading axes, so a
                // batch of tangents is one more leading axis.
                let stacked = self.graph.shape(a).len() > 2 || self.graph.shape(b).len() > 2;
                let mut terms: Vec<Id> = Vec::new();
                if let Some(ta) = inputs[0] {
                    terms.push(if stacked {
                        self.mm(ta, b)
                    } else {
                        self.matmul_left(ta, b)
                    });
                }
                if let Some(tb) = inputs[1] {
                    terms.push(if stacked {
                        self.mm(a, tb)
                    } else {
                        self.matmul_right(a, tb)
                    });
                }
                self.graph
                    .sum_terms(&terms)
                    .expect("a matrix product with a tangent has a term")
            }
            TOp::Broadcast(target) => {
                let t = self.align(inputs[0].expect("one operand"), target.len());
                let shape = self.tangent_shape(target);
                self.graph.broadcast(t, &shape)
            }
            TOp::Reshape(target) => {
                let shape = self.tangent_shape(target);
                self.graph.reshape(inputs[0].expect("one operand"), &shape)
            }
            TOp::Transpose(perm) => {
                let lead = self.lead();
                let perm: SmallVec<[u8; 4]> =
                    (0..lead).chain(perm.iter().map(|&p| p + lead)).collect();
                self.graph
                    .add_valid(TOp::Transpose(perm), &[inputs[0].expect("one operand")])
            }
            TOp::Slice { axis, start, end } => self.graph.add_valid(
                TOp::Slice {
                    axis: self.shifted(*axis),
                    start: *start,
                    end: *end,
                },
                &[inputs[0].expect("one operand")],
            ),
            TOp::Pad {
                axis,
                before,
                after,
            } => self.graph.add_valid(
                TOp::Pad {
                    axis: self.shifted(*axis),
                    before: *before,
                    after: *after,
                },
                &[inputs[0].expect("one operand")],
            ),
            TOp::Roll { axis, shift } => self.graph.add_valid(
                TOp::Roll {
                    axis: self.shifted(*axis),
                    shift: *shift,
                },
                &[inputs[0].expect("one operand")],
            ),
            TOp::Concat(axis) => {
                let operands: Vec<Id> = (0..children.len())
                    .map(|k| tangent_or_zero(self, k))
                    .collect();
                self.graph
                    .add_valid(TOp::Concat(self.shifted(*axis)), &operands)
            }
            TOp::Tag(_) => inputs[0].expect("one operand"),
            TOp::Op(op) => op.clone().jvp(self.graph, self.batch, id, inputs),
            TOp::Linearized => {
                // The sum of partial times tangent over the arguments; the
                // value's and the partials' own tangents do not enter.
                let n = TOp::linearized_arity(children.len());
                let mut terms: Vec<Id> = Vec::new();
                for k in 0..n {
                    if let Some(t) = inputs[1 + k] {
                        let t = self.align(t, rank);
                        terms.push(self.graph.mul(children[1 + n + k], t));
                    }
                }
                match self.graph.sum_terms(&terms) {
                    Some(sum) => self.graph.expand_to(sum, &out_tangent),
                    None => self.graph.full(0.0, &out_tangent),
                }
            }
            TOp::Input { .. }
            | TOp::Placeholder { .. }
            | TOp::Scalar(_)
            | TOp::Compare(_)
            | TOp::Round(_)
            | TOp::ArgExtreme { .. }
            | TOp::StopGradient => self.graph.full(0.0, &out_tangent),
        }
    }

    fn mm(&mut self, x: Id, y: Id) -> Id {
        self.graph.add_valid(TOp::MatMul, &[x, y])
    }

    fn t2(&mut self, x: Id) -> Id {
        self.graph
            .add_valid(TOp::Transpose(SmallVec::from_slice(&[1, 0])), &[x])
    }

    /// The tangent of `a @ b` from `a`'s tangent `ta`.
    fn matmul_left(&mut self, ta: Id, b: Id) -> Id {
        let Some(batch) = self.batch else {
            return self.mm(ta, b);
        };
        // ta: [B, m, k] or [B, k]; rows of all directions at once.
        let shape = self.graph.shape(ta).clone();
        let k = *shape.last().expect("a matrix operand has axes");
        let rows: usize = shape[..shape.len() - 1].iter().product();
        let flat = self.graph.reshape(ta, &[rows, k]);
        let product = self.mm(flat, b);
        let mut out: Shape = shape[..shape.len() - 1].into();
        out.extend(self.graph.shape(b).iter().skip(1).copied());
        debug_assert_eq!(out[0], batch);
        self.graph.reshape(product, &out)
    }

    /// The tangent of `a @ b` from `b`'s tangent `tb`.
    fn matmul_right(&mut self, a: Id, tb: Id) -> Id {
        let Some(batch) = self.batch else {
            return self.mm(a, tb);
        };
        let a_shape = self.graph.shape(a).clone();
        let tb_shape = self.graph.shape(tb).clone();
        match (a_shape.len(), tb_shape.len() - 1) {
            // a [m,k] @ tb [B,k] (matrix-vector): tb @ aᵀ gives [B, m].
            (2, 1) => {
                let at = self.t2(a);
                self.mm(tb, at)
            }
            // a [k] @ tb [B,k] (dot): [B].
            (1, 1) => self.mm(tb, a),
            // a [m,k] or [k] @ tb [B,k,n]: move k first, one product of
            // all directions, move B back.
            _ => {
                let (k, n) = (tb_shape[1], tb_shape[2]);
                let swap = || TOp::Transpose(SmallVec::from_slice(&[1, 0, 2]));
                let moved = self.graph.add_valid(swap(), &[tb]);
                let flat = self.graph.reshape(moved, &[k, batch * n]);
                let product = self.mm(a, flat);
                if a_shape.len() == 2 {
                    let split = self.graph.reshape(product, &[a_shape[0], batch, n]);
                    self.graph.add_valid(swap(), &[split])
                } else {
                    self.graph.reshape(product, &[batch, n])
                }
            }
        }
    }
}

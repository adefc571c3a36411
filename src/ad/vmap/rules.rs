//! The batching rules of the tensor language's own operations: how each
//! builds its result over a batch when some operands carry the batch axis
//! first. Elementwise operations align their batched operands so that
//! NumPy's right-aligned broadcasting keeps the batch axis in front; axis
//! parameters shift by one; matrix products fold the batch into rows where
//! one side is shared, and are stacked products otherwise.

use super::{BatchError, Batched, with_batch};
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;

/// Builds batched nodes into `graph` for a batch of `size` examples.
pub(super) struct Batcher<'a> {
    pub graph: &'a mut TensorGraph,
    pub size: usize,
}

impl Batcher<'_> {
    fn add(&mut self, op: TOp, children: &[Id]) -> Result<Id, BatchError> {
        self.graph
            .add(op, children)
            .map_err(|e| BatchError::Shape(e.0))
    }

    /// `shape` with the batch axis in front.
    fn batched_shape(&self, shape: &[usize]) -> Shape {
        std::iter::once(self.size)
            .chain(shape.iter().copied())
            .collect()
    }

    /// A batched operand reshaped to broadcast (right-aligned) against
    /// per-example values of rank `rank` with its batch axis in front:
    /// ones go after the batch axis. A shared operand is left as it is
    /// (it broadcasts from the right already).
    fn align(&mut self, value: Batched, rank: usize) -> Id {
        if !value.batched {
            return value.id;
        }
        let shape = self.graph.shape(value.id).clone();
        let inner = &shape[1..];
        if inner.len() >= rank {
            return value.id;
        }
        let mut aligned: Shape = SmallVec::from_slice(&[self.size]);
        aligned.extend(std::iter::repeat_n(1, rank - inner.len()));
        aligned.extend_from_slice(inner);
        self.graph.reshape(value.id, &aligned)
    }

    /// The operand made batched (a shared one broadcast over the batch).
    fn full(&mut self, value: Batched) -> Id {
        with_batch(self.graph, value, self.size)
    }

    /// The one operand (batched: a rule runs only when some operand is).
    fn only(operands: &[Batched]) -> Id {
        operands[0].id
    }

    /// The batched result of `op` over `operands` (at least one batched),
    /// whose per-example result has shape `out`.
    pub fn rule(&mut self, op: &TOp, operands: &[Batched], out: &Shape) -> Result<Id, BatchError> {
        let rank = out.len();
        let shift = |axis: u8| axis + 1;
        match op {
            TOp::Map(_) | TOp::Compare(_) | TOp::Where => {
                let children: SmallVec<[Id; 4]> =
                    operands.iter().map(|&b| self.align(b, rank)).collect();
                self.add(op.clone(), &children)
            }
            TOp::Round(_) | TOp::Cast(_) | TOp::StopGradient | TOp::Tag(_) => {
                self.add(op.clone(), &[Self::only(operands)])
            }
            TOp::Linearized => {
                // Every operand broadcasts to the value's shape: all made
                // the batched value's shape.
                let full = self.batched_shape(out);
                let mut children: SmallVec<[Id; 4]> = SmallVec::new();
                for &b in operands {
                    let aligned = self.align(b, rank);
                    children.push(self.graph.expand_to(aligned, &full));
                }
                self.add(TOp::Linearized, &children)
            }
            TOp::Reduce { op, axes, keepdims } => self.add(
                TOp::Reduce {
                    op: *op,
                    axes: axes.iter().map(|&a| shift(a)).collect(),
                    keepdims: *keepdims,
                },
                &[Self::only(operands)],
            ),
            TOp::ArgExtreme { max, axis } => {
                let x = Self::only(operands);
                let (x, axis) = match axis {
                    Some(axis) => (x, shift(*axis)),
                    None => {
                        // The index in the flattened example: each example
                        // flattened to one row.
                        let n = self.graph.numel(x) / self.size.max(1);
                        (self.graph.reshape(x, &[self.size, n]), 1)
                    }
                };
                self.add(
                    TOp::ArgExtreme {
                        max: *max,
                        axis: Some(axis),
                    },
                    &[x],
                )
            }
            TOp::Broadcast(shape) => {
                let x = self.align(operands[0], shape.len());
                let target = self.batched_shape(shape);
                self.add(TOp::Broadcast(target), &[x])
            }
            TOp::Reshape(shape) => {
                let target = self.batched_shape(shape);
                self.add(TOp::Reshape(target), &[Self::only(operands)])
            }
            TOp::Transpose(perm) => {
                let perm: SmallVec<[u8; 4]> = std::iter::once(0)
                    .chain(perm.iter().map(|&p| shift(p)))
                    .collect();
                self.add(TOp::Transpose(perm), &[Self::only(operands)])
            }
            TOp::Slice { axis, start, end } => self.add(
                TOp::Slice {
                    axis: shift(*axis),
                    start: *start,
                    end: *end,
                },
                &[Self::only(operands)],
            ),
            TOp::Pad {
                axis,
                before,
                after,
            } => self.add(
                TOp::Pad {
                    axis: shift(*axis),
                    before: *before,
                    after: *after,
                },
                &[Self::only(operands)],
            ),
            TOp::Roll { axis, shift: by } => self.add(
                TOp::Roll {
                    axis: shift(*axis),
                    shift: *by,
                },
                &[Self::only(operands)],
            ),
            TOp::Concat(axis) => {
                let children: SmallVec<[Id; 4]> = operands.iter().map(|&b| self.full(b)).collect();
                self.add(TOp::Concat(shift(*axis)), &children)
            }
            TOp::MatMul => self.matmul(operands[0], operands[1], out),
            TOp::Op(op) => {
                let ids: SmallVec<[Id; 4]> = operands.iter().map(|b| b.id).collect();
                let batched: SmallVec<[bool; 4]> = operands.iter().map(|b| b.batched).collect();
                op.batch(self.graph, &ids, &batched, self.size)
                    .ok_or_else(|| BatchError::NoRule(op.name()))
            }
            TOp::Scan(spec) => super::loops::batch_scan(self.graph, spec, operands, self.size),
            TOp::ScanVjp(spec) => {
                super::loops::batch_scan_vjp(self.graph, spec, operands, self.size)
            }
            TOp::Custom(rule) => {
                // The value, the arguments, the (batched) stand-ins and
                // the rules' results, all over the batch.
                let children: SmallVec<[Id; 4]> = operands.iter().map(|&b| self.full(b)).collect();
                self.add(TOp::Custom(rule.clone()), &children)
            }
            TOp::Input { .. } | TOp::Scalar(_) | TOp::Placeholder { .. } => Err(BatchError::Shape(
                format!("internal: a leaf {op} reached a batching rule"),
            )),
        }
    }

    /// `a @ b` (NumPy `matmul`) over the batch, whose per-example result
    /// has shape `out`.
    fn matmul(&mut self, a: Batched, b: Batched, out: &Shape) -> Result<Id, BatchError> {
        let full_out = self.batched_shape(out);
        let rank_of = |g: &TensorGraph, v: Batched| g.shape(v.id).len() - usize::from(v.batched);
        let (ra, rb) = (rank_of(self.graph, a), rank_of(self.graph, b));
        let mm = |this: &mut Self, x: Id, y: Id| this.add(TOp::MatMul, &[x, y]);
        match (a.batched, b.batched) {
            // A shared right operand: every example's rows in one product.
            (true, false) if ra <= 2 && rb <= 2 => {
                let shape = self.graph.shape(a.id).clone();
                let k = *shape.last().expect("a matrix operand has axes");
                let rows = shape.iter().product::<usize>() / k.max(1);
                let flat = self.graph.reshape(a.id, &[rows, k]);
                let product = mm(self, flat, b.id)?;
                Ok(self.graph.reshape(product, &full_out))
            }
            // A shared left operand.
            (false, true) if ra <= 2 && rb <= 2 => match (ra, rb) {
                // a [m,k] @ b [B,k]: b @ aᵀ is [B, m].
                (2, 1) => {
                    let at = self.add(TOp::Transpose(SmallVec::from_slice(&[1, 0])), &[a.id])?;
                    mm(self, b.id, at)
                }
                // a [k] @ b [B,k]: [B].
                (1, 1) => mm(self, b.id, a.id),
                // a [m,k] or [k] @ b [B,k,n]: k first, one product, the
                // batch moved back.
                _ => {
                    let shape = self.graph.shape(b.id).clone();
                    let (k, n) = (shape[1], shape[2]);
                    let swap = || TOp::Transpose(SmallVec::from_slice(&[1, 0, 2]));
                    let moved = self.add(swap(), &[b.id])?;
                    let flat = self.graph.reshape(moved, &[k, self.size * n]);
                    let product = mm(self, a.id, flat)?;
                    if ra == 2 {
                        let m = self.graph.shape(a.id)[0];
                        let split = self.graph.reshape(product, &[m, self.size, n]);
                        self.add(swap(), &[split])
                    } else {
                        Ok(self.graph.reshape(product, &full_out))
                    }
                }
            },
            // Stacked products: vectors made matrices (a row on the left,
            // a column on the right), batched operands given ones after
            // the batch axis so the stacks broadcast right-aligned.
            _ => {
                let stack_rank = ra.max(rb).max(2);
                let as_matrix = |this: &mut Self, v: Batched, left: bool, r: usize| {
                    let mut id = v.id;
                    if r == 1 {
                        let shape = this.graph.shape(id).clone();
                        let k = *shape.last().expect("a vector has an axis");
                        let mut m: Shape = shape[..shape.len() - 1].into();
                        if left {
                            m.extend([1, k]);
                        } else {
                            m.extend([k, 1]);
                        }
                        id = this.graph.reshape(id, &m);
                    }
                    this.align(Batched { id, ..v }, stack_rank)
                };
                let x = as_matrix(self, a, true, ra);
                let y = as_matrix(self, b, false, rb);
                let product = mm(self, x, y)?;
                Ok(self.graph.reshape(product, &full_out))
            }
        }
    }
}

//! Steps of an `einsum` plan from labelled operands: diagonals for a
//! label repeated in one operand, squeezes of size-1 broadcast axes, sums
//! of labels nobody else needs, and pairwise contractions as one
//! (batched) matrix product between transposes and reshapes, or a
//! broadcasting product when nothing is summed.

use super::subscripts::{Label, label_name};
use super::{EinsumError, Step};
use crate::ir::math::language::Math;
use crate::ir::op::map_op;
use crate::ir::ops::Op;
use crate::ir::ops::linalg::Diagonal;
use crate::ir::{ReduceOp, Shape, TOp};
use egg::Id;
use smallvec::SmallVec;

/// A value of the plan with the labels of its axes.
#[derive(Clone, Debug)]
pub(super) struct Term {
    pub(super) value: usize,
    pub(super) labels: Vec<Label>,
    pub(super) dims: Vec<usize>,
}

/// Builds the steps of a plan.
pub(super) struct Planner {
    pub(super) steps: Vec<Step>,
    pub(super) operands: usize,
}

impl Planner {
    pub(super) fn push(&mut self, op: TOp, operands: &[usize]) -> usize {
        self.steps.push(Step {
            op,
            operands: SmallVec::from_slice(operands),
        });
        self.operands + self.steps.len() - 1
    }

    pub(super) fn reshape(&mut self, term: &Term, dims: &[usize]) -> usize {
        if term.dims == dims {
            return term.value;
        }
        self.push(TOp::Reshape(Shape::from_slice(dims)), &[term.value])
    }

    /// `term` with its axes in the order of `order` (a permutation of its
    /// labels).
    pub(super) fn transpose(&mut self, term: &Term, order: &[Label]) -> Term {
        let perm: SmallVec<[u8; 4]> = order
            .iter()
            .map(|l| term.labels.iter().position(|x| x == l).unwrap_or(0) as u8)
            .collect();
        let dims: Vec<usize> = perm.iter().map(|&p| term.dims[usize::from(p)]).collect();
        let identity = perm.iter().enumerate().all(|(i, &p)| usize::from(p) == i);
        let value = if identity {
            term.value
        } else {
            self.push(TOp::Transpose(perm), &[term.value])
        };
        Term {
            value,
            labels: order.to_vec(),
            dims,
        }
    }

    /// `term` summed over the labels `drop` says to drop.
    pub(super) fn sum_out(&mut self, term: Term, drop: impl Fn(Label) -> bool) -> Term {
        let axes: SmallVec<[u8; 4]> = (0..term.labels.len())
            .filter(|&a| drop(term.labels[a]))
            .map(|a| a as u8)
            .collect();
        if axes.is_empty() {
            return term;
        }
        let kept: Vec<usize> = (0..term.labels.len())
            .filter(|&a| !drop(term.labels[a]))
            .collect();
        let value = self.push(
            TOp::Reduce {
                op: ReduceOp::Sum,
                axes,
                keepdims: false,
            },
            &[term.value],
        );
        Term {
            value,
            labels: kept.iter().map(|&a| term.labels[a]).collect(),
            dims: kept.iter().map(|&a| term.dims[a]).collect(),
        }
    }

    /// `term` with each repeated label reduced to its diagonal.
    pub(super) fn diagonals(
        &mut self,
        mut term: Term,
        subscripts: &str,
    ) -> Result<Term, EinsumError> {
        while let Some((p, q)) = repeated(&term.labels) {
            let label = term.labels[p];
            if term.dims[p] != term.dims[q] {
                return Err(EinsumError(format!(
                    "\"{subscripts}\": the repeated index '{}' has sizes {} and {} in one operand",
                    label_name(label),
                    term.dims[p],
                    term.dims[q]
                )));
            }
            let mut order: Vec<Label> = Vec::new();
            let mut positions: Vec<usize> = Vec::new();
            for (a, &l) in term.labels.iter().enumerate() {
                if a != p && a != q {
                    order.push(l);
                    positions.push(a);
                }
            }
            positions.extend([p, q]);
            let perm: SmallVec<[u8; 4]> = positions.iter().map(|&a| a as u8).collect();
            let identity = perm.iter().enumerate().all(|(i, &a)| usize::from(a) == i);
            let moved = if identity {
                term.value
            } else {
                self.push(TOp::Transpose(perm), &[term.value])
            };
            let value = self.push(TOp::Op(Op::Diagonal(Diagonal)), &[moved]);
            let mut dims: Vec<usize> = positions[..order.len()]
                .iter()
                .map(|&a| term.dims[a])
                .collect();
            dims.push(term.dims[p]);
            order.push(label);
            term = Term {
                value,
                labels: order,
                dims,
            };
        }
        Ok(term)
    }

    /// `term` without the size-1 axes of labels that are longer elsewhere
    /// (they broadcast).
    pub(super) fn squeeze(&mut self, term: Term, sizes: &[usize]) -> Term {
        let kept: Vec<usize> = (0..term.labels.len())
            .filter(|&a| term.dims[a] == sizes[term.labels[a]])
            .collect();
        if kept.len() == term.labels.len() {
            return term;
        }
        let dims: Vec<usize> = kept.iter().map(|&a| term.dims[a]).collect();
        let value = self.reshape(&term, &dims);
        Term {
            value,
            labels: kept.iter().map(|&a| term.labels[a]).collect(),
            dims,
        }
    }

    /// The product of `a` and `b` summed over their shared labels that
    /// `keep` does not hold.
    pub(super) fn contract(&mut self, a: Term, b: Term, keep: &[Label]) -> Term {
        let a = self.sum_out(a, |l| !keep.contains(&l) && !b.labels.contains(&l));
        let b = self.sum_out(b, |l| !keep.contains(&l) && !a.labels.contains(&l));
        let shared = |l: &Label| b.labels.contains(l);
        let batch: Vec<Label> = a
            .labels
            .iter()
            .copied()
            .filter(|l| shared(l) && keep.contains(l))
            .collect();
        let summed: Vec<Label> = a
            .labels
            .iter()
            .copied()
            .filter(|l| shared(l) && !keep.contains(l))
            .collect();
        let a_free: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
        let b_free: Vec<Label> = b
            .labels
            .iter()
            .copied()
            .filter(|l| !a.labels.contains(l))
            .collect();
        let size = |term: &Term, labels: &[Label]| -> Vec<usize> {
            labels
                .iter()
                .map(|l| term.dims[term.labels.iter().position(|x| x == l).unwrap_or(0)])
                .collect()
        };
        let (batch_dims, a_dims, b_dims) = (size(&a, &batch), size(&a, &a_free), size(&b, &b_free));
        let mut labels = batch.clone();
        labels.extend(&a_free);
        labels.extend(&b_free);
        let mut dims = batch_dims.clone();
        dims.extend(&a_dims);
        dims.extend(&b_dims);
        let value = if summed.is_empty() {
            // No contraction: a broadcasting product.
            let a_t = self.transpose(&a, &[batch.clone(), a_free.clone()].concat());
            let b_t = self.transpose(&b, &[batch.clone(), b_free.clone()].concat());
            let ones = |n: usize| std::iter::repeat_n(1, n);
            let a_shape: Vec<usize> = batch_dims
                .iter()
                .copied()
                .chain(a_dims.iter().copied())
                .chain(ones(b_free.len()))
                .collect();
            let b_shape: Vec<usize> = batch_dims
                .iter()
                .copied()
                .chain(ones(a_free.len()))
                .chain(b_dims.iter().copied())
                .collect();
            let (x, y) = (self.reshape(&a_t, &a_shape), self.reshape(&b_t, &b_shape));
            self.push(map_op(&Math::Mul([Id::from(0); 2])), &[x, y])
        } else {
            let a_t = self.transpose(
                &a,
                &[batch.clone(), a_free.clone(), summed.clone()].concat(),
            );
            let b_t = self.transpose(
                &b,
                &[batch.clone(), summed.clone(), b_free.clone()].concat(),
            );
            let product = |d: &[usize]| d.iter().product::<usize>();
            let (nb, nc) = (product(&batch_dims), product(&size(&a, &summed)));
            let (na, nf) = (product(&a_dims), product(&b_dims));
            let (a_shape, b_shape) = if batch.is_empty() {
                (vec![na, nc], vec![nc, nf])
            } else {
                (vec![nb, na, nc], vec![nb, nc, nf])
            };
            let (x, y) = (self.reshape(&a_t, &a_shape), self.reshape(&b_t, &b_shape));
            let m = self.push(TOp::MatMul, &[x, y]);
            let mut out_dims = a_shape[..a_shape.len() - 1].to_vec();
            out_dims.push(nf);
            let made = Term {
                value: m,
                labels: Vec::new(),
                dims: out_dims,
            };
            self.reshape(&made, &dims)
        };
        Term {
            value,
            labels,
            dims,
        }
    }
}

/// The first label that occurs twice, as two positions.
fn repeated(labels: &[Label]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|p| {
        labels[p + 1..]
            .iter()
            .position(|&l| l == labels[p])
            .map(|d| (p, p + 1 + d))
    })
}

/// The next pair of terms to contract: of the pairs that share an index,
/// the one with the smallest result (the first such pair on ties); the
/// first two terms when none share one.
pub(super) fn next_pair(terms: &[Term]) -> (usize, usize) {
    let mut best: Option<(usize, usize, usize)> = None;
    for i in 0..terms.len() {
        for j in i + 1..terms.len() {
            let (a, b) = (&terms[i], &terms[j]);
            if !a.labels.iter().any(|l| b.labels.contains(l)) {
                continue;
            }
            let size = a
                .dims
                .iter()
                .chain(
                    b.labels
                        .iter()
                        .zip(&b.dims)
                        .filter(|(l, _)| !a.labels.contains(l))
                        .map(|(_, n)| n),
                )
                .fold(1usize, |acc, &n| acc.saturating_mul(n));
            if best.is_none_or(|(_, _, s)| size < s) {
                best = Some((i, j, size));
            }
        }
    }
    best.map_or((0, 1), |(i, j, _)| (i, j))
}

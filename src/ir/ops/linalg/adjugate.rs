//! The transposed adjugate (the cofactor matrix) `C = adj(a)ᵀ` of each
//! square matrix: the derivative of `det` (`d det a = sum(C ∘ da)`), an
//! operation of its own so that second derivatives of `det` are exact
//! everywhere. `C` is a polynomial in the entries of `a`, so it is smooth;
//! built from the SVD's rules instead, its derivative would drop the
//! couplings between repeated singular values (at the identity, say),
//! which the SVD's rules mask.
//!
//! With the SVD `a = U diag(s) Vᵀ`, `σ = det(U) det(V)` (±1) and `π_i`
//! the product of the singular values other than `s_i`:
//! - value: `C = σ U diag(π) Vᵀ`;
//! - forward: with `dP = Uᵀ da V` and `Π_ij` the product of the singular
//!   values other than `s_i` and `s_j` (`i ≠ j`; `Π_ii = 0`),
//!   `dC = σ U M Vᵀ` where `M_ii = Σ_k Π_ik dP_kk` and
//!   `M_ij = -Π_ij dP_ji` off the diagonal. At an invertible `a` this is
//!   the derivative of `det(a) a⁻ᵀ`; both sides are polynomials, so it
//!   holds at singular matrices too, with any SVD of `a`.
//! - reverse: the map `dP ↦ M` is its own adjoint, so with
//!   `H = Uᵀ C̄ V` the cotangent is `ā = σ U M(H) Vᵀ`.
//!
//! The rules use the SVD of `a` again (their own derivatives, third
//! derivatives of `det`, go through the SVD's rules).

use super::lu::Lu;
use super::spectral::{as_row, as_scale};
use super::{Batched, leading, run_batch, square_dim, with_core};
use crate::ir::TensorGraph;
use crate::ir::math::language::Math;
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TOp};
use egg::Id;
use faer::Par;
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// The transposed adjugate of each square matrix (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Adjugate {
    /// Where the determinant it belongs to was called.
    pub site: Site,
}

/// The transposed adjugate of the `n x n` row-major `a` into `out`.
fn adjugate_of(a: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    if n == 1 {
        out[0] = 1.0;
        return Ok(());
    }
    let mut svd = vec![0.0; 2 * n * n + n];
    super::svd::decompose(a, n, n, par, &mut svd)?;
    let (u, rest) = svd.split_at(n * n);
    let (s, vt) = rest.split_at(n);
    let det_u = Lu::new(u, n, Par::Seq)?.determinant();
    let det_v = Lu::new(vt, n, Par::Seq)?.determinant();
    let sign = (det_u * det_v).signum();
    let others: Vec<f64> = (0..n)
        .map(|i| (0..n).filter(|&m| m != i).map(|m| s[m]).product::<f64>() * sign)
        .collect();
    for i in 0..n {
        for j in 0..n {
            let total: f64 = (0..n)
                .map(|k| u[i * n + k] * others[k] * vt[k * n + j])
                .sum();
            out[i * n + j] = total + 0.0;
        }
    }
    Ok(())
}

/// The pieces of the rules: `U`, `Vᵀ`, `σ` as `[.., 1, 1]` and `Π` (see
/// the module docs) of the matrices `a`.
struct Frame {
    u: Id,
    vt: Id,
    sign: Id,
    pairs: Id,
}

impl Frame {
    fn of(rules: &mut Rules<'_>, a: Id, site: Site) -> Frame {
        let shape = rules.shape(a);
        let n = shape[shape.len() - 1];
        let lead = leading(&shape);
        let packed = rules.op(Op::Svd(super::Svd { site }), &[a]);
        let parts = [
            with_core(&lead, &[n, n]),
            with_core(&lead, &[n]),
            with_core(&lead, &[n, n]),
        ];
        let views = rules.unpack(packed, &parts);
        let (u, s, vt) = (views[0], views[1], views[2]);
        // det(U) det(V) is ±1 and locally constant: no derivative (the
        // factors are cut off first, so no sweep looks into these dets).
        let det = Op::Det(super::Det { site });
        let u_fixed = rules.graph.add_valid(TOp::StopGradient, &[u]);
        let vt_fixed = rules.graph.add_valid(TOp::StopGradient, &[vt]);
        let det_u = rules.op(det.clone(), &[u_fixed]);
        let det_v = rules.op(det, &[vt_fixed]);
        let both = rules.mul(det_u, det_v);
        let sign = rules.map1(Math::Sign([Id::from(0)]), both);
        let sign = as_scale(rules, sign);
        // Row i of `lifted` is s with s_i replaced by 1; the product of
        // the others along a row, at column j, is Π_ij (j ≠ i).
        let eye = super::spectral::eye(rules, n);
        let one = rules.num(1.0);
        let off = rules.sub(one, eye);
        let row = as_row(rules, s);
        let square = with_core(&lead, &[n, n]);
        let row = rules.graph.broadcast(row, &square);
        let kept = rules.mul(row, off);
        let lifted = rules.add(kept, eye);
        let last = (lead.len() + 1) as u8;
        let products = rules.graph.product_of_others(lifted, &[last]);
        let pairs = rules.mul(products, off);
        Frame { u, vt, sign, pairs }
    }

    /// `σ U M(Uᵀ x V) Vᵀ`: the forward map on a tangent `x`, and the
    /// reverse map on a cotangent.
    fn apply(&self, rules: &mut Rules<'_>, x: Id) -> Id {
        let (ut, v) = (rules.mt(self.u), rules.mt(self.vt));
        let xv = rules.mm(x, v);
        let p = rules.mm(ut, xv);
        let d = rules.diagonal(p);
        let d_row = as_row(rules, d);
        let weighted = rules.mul(self.pairs, d_row);
        let rank = rules.rank(weighted);
        let diagonal = rules.sum_axes(weighted, &[rank - 1], false);
        let n = rules.shape(self.u).last().copied().unwrap_or(0);
        let diagonal = rules.diag(diagonal, n, n);
        let pt = rules.mt(p);
        let crossed = rules.mul(pt, self.pairs);
        let m = rules.sub(diagonal, crossed);
        let um = rules.mm(self.u, m);
        let back = rules.mm(um, self.vt);
        rules.mul(self.sign, back)
    }
}

impl Definition for Adjugate {
    fn describe(&self) -> String {
        "adjugate".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        square_dim(operands[0], "adjugate")?;
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let a = operands[0].shape();
        let n = a[a.len() - 1];
        let input = Batched::new(operands, &[2], &leading(a))?;
        run_batch(input.count, n * n, n, shape, |b, par, out| {
            if n > 0 {
                adjugate_of(input.core(0, b), n, par, out)?;
            }
            Ok(())
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let frame = Frame::of(rules, operands[0], self.site);
        SmallVec::from_slice(&[Some(frame.apply(rules, g))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let frame = Frame::of(rules, operands[0], self.site);
        frame.apply(rules, da)
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let n = a.last().copied().unwrap_or(0) as u64;
        let count = a.iter().product::<usize>() as u64 / (n * n).max(1);
        count * 24 * n * n * n
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        crate::ir::ops::reads::per_matrix(out, operands, &[2], shape, 2, element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = Op::Adjugate(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::adjugate(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

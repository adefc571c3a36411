//! The determinant of complex matrices held as their real and imaginary
//! parts (two operands, `Ar` and `Ai`), as NumPy's `slogdet` gives it: a
//! complex sign of modulus 1 (`det / |det|`, 0 for a singular matrix) and
//! the real `log |det|`, packed (all real parts of the signs, all
//! imaginary parts, all logarithms). From faer's LU factorization with
//! partial pivoting of the complex matrix; `det` is `sign * exp(log)`.
//!
//! Rules, with `t = tr(A⁻¹ dA)` (complex) and `W = (Aᴴ)⁻¹` (so that
//! `t = sum(conj(W) ∘ dA)`):
//! - forward: `d log|det| = Re t`, `d sign = i Im(t) sign`;
//! - reverse: with `t̄ = l̄ + i (sr s̄i - si s̄r)`, `Ā = t̄ W`.
//!
//! `W` is read from the real embedding `[[Ar, -Ai], [Ai, Ar]]`, whose
//! transposed inverse embeds `W`: at a singular matrix the logarithm has
//! no derivative and the solve is an error naming the zero pivot.

use super::spectral::{as_scale, eye, sum_matrix};
use super::{leading, run_on_parts, two_parts, two_parts_batched};
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor;
use faer::{Par, c64};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `slogdet` of complex matrices given as their two parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlogdetComplex {
    /// Where it was called.
    pub site: Site,
}

/// The complex sign and the logarithm of the modulus of the determinant
/// of the `n x n` row-major parts `re`, `im`.
fn sign_and_log(re: &[f64], im: &[f64], n: usize, par: Par) -> Result<[f64; 3], OpError> {
    let mut lu = super::complex_mat(re, im, n, n)?;
    let mut forward = vec![0usize; n];
    let mut backward = vec![0usize; n];
    let mut buffer = MemBuffer::new(factor::lu_in_place_scratch::<usize, c64>(
        n,
        n,
        par,
        Default::default(),
    ));
    let (info, _) = factor::lu_in_place(
        lu.as_mut(),
        &mut forward,
        &mut backward,
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    );
    let mut sign = match info.transposition_count % 2 {
        0 => c64::new(1.0, 0.0),
        _ => c64::new(-1.0, 0.0),
    };
    let mut log = 0.0;
    for i in 0..n {
        let pivot = lu[(i, i)];
        let size = pivot.norm();
        if size == 0.0 {
            return Ok([0.0, 0.0, f64::NEG_INFINITY]);
        }
        sign *= c64::new(pivot.re / size, pivot.im / size);
        log += size.ln();
    }
    // Renormalized: the product of many unit numbers drifts off the circle.
    let size = sign.norm();
    Ok([sign.re / size, sign.im / size, log])
}

/// `W = (Aᴴ)⁻¹` of the matrices with parts `ar`, `ai`, as its parts:
/// the first block column of the transposed inverse of the embedding.
fn inverse_adjoint(rules: &mut Rules<'_>, ar: Id, ai: Id, site: Site) -> (Id, Id) {
    let shape = rules.shape(ar);
    let rank = shape.len();
    let n = shape[rank - 1];
    let minus = rules.neg(ai);
    let columns = (rank - 1) as u8;
    let rows = (rank - 2) as u8;
    let top = rules.graph.add_valid(TOp::Concat(columns), &[ar, minus]);
    let bottom = rules.graph.add_valid(TOp::Concat(columns), &[ai, ar]);
    let m = rules.graph.add_valid(TOp::Concat(rows), &[top, bottom]);
    let identity = eye(rules, 2 * n);
    let inverse = rules.op(
        Op::Solve(super::Solve {
            transpose: true,
            vector: false,
            site,
        }),
        &[m, identity],
    );
    let slice = |rules: &mut Rules<'_>, x: Id, axis: usize, start: usize| {
        rules.graph.add_valid(
            TOp::Slice {
                axis: axis as u8,
                start,
                end: start + n,
            },
            &[x],
        )
    };
    let column = slice(rules, inverse, rank - 1, 0);
    let wr = slice(rules, column, rank - 2, 0);
    let wi = slice(rules, column, rank - 2, n);
    (wr, wi)
}

impl Definition for SlogdetComplex {
    fn describe(&self) -> String {
        "slogdet-complex".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        two_parts(operands, "slogdet")?;
        let count: usize = leading(operands[0]).iter().product();
        Ok(SmallVec::from_slice(&[3 * count]))
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        _shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let a = operands[0].shape();
        let n = a[a.len() - 1];
        run_on_parts(operands, &[1, 1, 1], n, |re, im, par, out| {
            let values = match n {
                0 => [1.0, 0.0, 0.0],
                _ => sign_and_log(re, im, n, par)?,
            };
            out.copy_from_slice(&values);
            Ok(())
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let batch = leading(&rules.shape(operands[0]));
        let parts = [batch.clone(), batch.clone(), batch];
        let values = rules.unpack(node, &parts);
        let bars = rules.unpack(g, &parts);
        let (sr, si) = (values[0], values[1]);
        let (sr_bar, si_bar, l_bar) = (bars[0], bars[1], bars[2]);
        // t̄ = l̄ + i (sr s̄i - si s̄r).
        let a = rules.mul(sr, si_bar);
        let b = rules.mul(si, sr_bar);
        let t_im = rules.sub(a, b);
        let t_re = as_scale(rules, l_bar);
        let t_im = as_scale(rules, t_im);
        let (wr, wi) = inverse_adjoint(rules, operands[0], operands[1], self.site);
        let rr = rules.mul(t_re, wr);
        let ii = rules.mul(t_im, wi);
        let ri = rules.mul(t_re, wi);
        let ir = rules.mul(t_im, wr);
        let re = rules.sub(rr, ii);
        let im = rules.add(ri, ir);
        SmallVec::from_slice(&[Some(re), Some(im)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        if tangents.iter().all(Option::is_none) {
            return rules.zero_tangent(node);
        }
        let dar = rules.tangent_or_zero(operands[0], tangents[0]);
        let dai = rules.tangent_or_zero(operands[1], tangents[1]);
        let batch = leading(&rules.shape(operands[0]));
        let values = rules.unpack(node, &[batch.clone(), batch.clone(), batch]);
        let (sr, si) = (values[0], values[1]);
        let (wr, wi) = inverse_adjoint(rules, operands[0], operands[1], self.site);
        // t = sum(conj(W) ∘ dA).
        let a = rules.mul(wr, dar);
        let b = rules.mul(wi, dai);
        let t_re = rules.add(a, b);
        let c = rules.mul(wr, dai);
        let d = rules.mul(wi, dar);
        let t_im = rules.sub(c, d);
        let dl = sum_matrix(rules, t_re);
        let t_im = sum_matrix(rules, t_im);
        let minus = rules.mul(si, t_im);
        let dsr = rules.neg(minus);
        let dsi = rules.mul(sr, t_im);
        rules.pack_tangent(&[dsr, dsi, dl])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let n = a[a.len() - 1] as u64;
        let count = a.iter().product::<usize>() as u64 / (n * n).max(1);
        count * 8 * n * n * n / 3
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = Op::SlogdetComplex(self.clone());
        two_parts_batched(graph, op, operands, batched, size, |a| {
            let batch = leading(a);
            vec![batch.clone(), batch.clone(), batch]
        })
    }

    fn site(&self) -> Site {
        self.site
    }
}

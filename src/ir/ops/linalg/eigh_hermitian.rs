//! The Hermitian eigendecomposition of complex matrices held as their
//! real and imaginary parts (two operands, `Hr` and `Hi`; design decision
//! 18): for each matrix `H = Hr + i Hi`, the eigenvalues `w` (real,
//! ascending) and the orthonormal eigenvectors `V = Vr + i Vi`, packed
//! (all eigenvalues, then all `Vr`, all `Vi`, and a fourth part `P`, the
//! one-hot matrix of each column's pivot row, which the rules read and
//! the Lisp built-in drops). The matrix used is `(H + Hᴴ) / 2`; one that
//! is not Hermitian to within rounding (of single precision) is an error
//! (the check costs `n^2`, the factorization `n^3`).
//!
//! Each eigenvector's phase is fixed: its entry of largest magnitude (the
//! first of equals, its pivot) is real and positive, so the result is a
//! function of `H` and its derivatives are that function's (a phase left
//! to LAPACK, as NumPy and JAX leave it, has none).
//!
//! Rules, with `Q = Vᴴ sym(dH) V`, `F_ij = 1 / (w_j - w_i)` off the
//! diagonal and 0 on it (masked at repeated eigenvalues, as for `eigh`):
//! - forward: `dw = Re diag(Q)`, `dU = V (F ∘ Q)` (no component along
//!   each vector), then the phase kept: `dV_k = dU_k - i c_k V_k` with
//!   `c_k = Im(dU_pk) / V_pk` at the pivot row `p`;
//! - reverse, the adjoint under the real inner product of the pairs:
//!   `c̄_k = sum_i (V̄r Vi - V̄i Vr)_ik`, `Ū = V̄ + i P ∘ (c̄ / V_p)`,
//!   `Q̄ = F ∘ (Vᴴ Ū) + diag(w̄)`, `H̄ = sym(V Q̄ Vᴴ)`.

use super::pairs::{self, Pair};
use super::spectral::inverse_gaps;
use super::{leading, run_on_parts, two_parts, two_parts_batched, with_core};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use egg::Id;
use faer::{Mat, Par, c64};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `eigh` of complex Hermitian matrices given as their two parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EighHermitian {
    /// Where it was called.
    pub site: Site,
}

/// Entries of `H - Hᴴ` larger than this times `sqrt(n)`, relative to the
/// largest entry of `H`, make it not Hermitian: wide enough for a matrix
/// computed in single precision, far below the asymmetry of a matrix
/// that is not Hermitian at all.
const HERMITIAN_TOLERANCE: f64 = 1e-6;

/// The shapes of the four results for matrices of shape `a`: the
/// eigenvalues, the parts of the eigenvectors, the pivots.
pub(crate) fn parts(a: &[usize]) -> [Shape; 4] {
    let n = a[a.len() - 1];
    let lead = leading(a);
    let matrix = with_core(&lead, &[n, n]);
    [
        with_core(&lead, &[n]),
        matrix.clone(),
        matrix.clone(),
        matrix,
    ]
}

/// The decomposition of the `n x n` row-major parts `re`, `im` into
/// `out`: `n` eigenvalues, then `Vr`, `Vi` and the pivots, row-major.
fn decompose(re: &[f64], im: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    super::finite_parts(re, im)?;
    let largest = re
        .iter()
        .zip(im)
        .fold(0.0f64, |m, (r, i)| m.max(r.hypot(*i)));
    for i in 0..n {
        for j in 0..=i {
            let (a, b) = (i * n + j, j * n + i);
            let gap = (re[a] - re[b]).hypot(im[a] + im[b]);
            if gap > HERMITIAN_TOLERANCE * (n as f64).sqrt().max(1.0) * largest {
                return Err(OpError::new(format!(
                    "the matrix is not Hermitian: entry ({i}, {j}) differs from the conjugate of ({j}, {i}) by {gap:.3e} (the largest entry is {largest:.3e})"
                )));
            }
        }
    }
    let m = Mat::<c64>::from_fn(n, n, |i, j| {
        let (a, b) = (i * n + j, j * n + i);
        c64::new(0.5 * (re[a] + re[b]), 0.5 * (im[a] - im[b]))
    });
    let (s, u) = super::eigh::self_adjoint(m.as_ref(), par)?;
    let (w, rest) = out.split_at_mut(n);
    let (vr, rest) = rest.split_at_mut(n * n);
    let (vi, pivots) = rest.split_at_mut(n * n);
    for j in 0..n {
        w[j] = s[j].re;
    }
    super::phase_fixed(u.as_ref(), vr, vi, pivots);
    Ok(())
}

/// The eigenvalues, the eigenvectors and the pivots of `node`.
fn results(rules: &mut Rules<'_>, node: Id, shapes: &[Shape]) -> (Id, Pair, Id) {
    let values = rules.unpack(node, shapes);
    let v = Pair::new(values[1], values[2]);
    (values[0], v, values[3])
}

impl EighHermitian {
    /// The shapes of the packed results for matrices of shape `a`.
    pub fn parts(a: &[usize]) -> Vec<Shape> {
        parts(a).to_vec()
    }
}

impl Definition for EighHermitian {
    fn describe(&self) -> String {
        "eigh-hermitian".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        two_parts(operands, "eigh")?;
        Ok(SmallVec::from_slice(&[crate::ir::ops::packed_len(&parts(
            operands[0],
        ))]))
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        _shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let a = operands[0].shape();
        let n = a[a.len() - 1];
        run_on_parts(
            operands,
            &[n, n * n, n * n, n * n],
            n,
            |re, im, par, out| decompose(re, im, n, par, out),
        )
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let shapes = parts(&rules.shape(operands[0]));
        let n = shapes[0][shapes[0].len() - 1];
        let (w, v, pivots) = results(rules, node, &shapes);
        let bars = rules.unpack(g, &shapes);
        let (w_bar, vr_bar, vi_bar) = (bars[0], bars[1], bars[2]);
        // The phase: c̄ per column, pushed to the pivots' imaginary parts.
        let v_bar = Pair::new(vr_bar, vi_bar);
        let c_bar = pairs::turn_cotangent(rules, v_bar, v);
        let pushed = pairs::turn_pushed(rules, v, pivots, c_bar);
        let u_bar = Pair::new(vr_bar, rules.add(vi_bar, pushed));
        // Q̄ = F ∘ (Vᴴ Ū) + diag(w̄), then H̄ = V Q̄ Vᴴ, Hermitian part.
        let f = inverse_gaps(rules, w, false);
        let vh = pairs::adjoint(rules, v);
        let rotated = pairs::product(rules, vh, u_bar);
        let on = rules.diag(w_bar, n, n);
        let off_re = rules.mul(f, rotated.re);
        let q_bar = Pair {
            re: rules.add(off_re, on),
            im: rules.mul(f, rotated.im),
        };
        let left = pairs::product(rules, v, q_bar);
        let h_bar = pairs::product(rules, left, vh);
        let h_bar = pairs::hermitian_part(rules, h_bar);
        SmallVec::from_slice(&[Some(h_bar.re), Some(h_bar.im)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        if tangents.iter().all(Option::is_none) {
            return rules.zero_tangent(node);
        }
        let dh = Pair::new(
            rules.tangent_or_zero(operands[0], tangents[0]),
            rules.tangent_or_zero(operands[1], tangents[1]),
        );
        let shapes = parts(&rules.shape(operands[0]));
        let (w, v, pivots) = results(rules, node, &shapes);
        let dh = pairs::hermitian_part(rules, dh);
        let vh = pairs::adjoint(rules, v);
        let right = pairs::product(rules, dh, v);
        let q = pairs::product(rules, vh, right);
        let dw = rules.diagonal(q.re);
        let f = inverse_gaps(rules, w, false);
        let g = Pair {
            re: rules.mul(f, q.re),
            im: rules.mul(f, q.im),
        };
        let du = pairs::product(rules, v, g);
        // dV = dU - i c V with c = Im(dU_p) / V_p per column.
        let c = pairs::phase_turn(rules, v, pivots, du);
        let dv = pairs::turned(rules, du, c, v);
        let dp = rules.zero_tangent(pivots);
        rules.pack_tangent(&[dw, dv.re, dv.im, dp])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let n = a[a.len() - 1] as u64;
        let count = a.iter().product::<usize>() as u64 / (n * n).max(1);
        count * 4 * 9 * n * n * n
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::EighHermitian(self.clone());
        two_parts_batched(graph, op, operands, batched, size, |a| parts(a).to_vec())
    }

    fn site(&self) -> Site {
        self.site
    }
}

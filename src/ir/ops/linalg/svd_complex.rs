//! The thin singular value decomposition of complex matrices held as
//! their real and imaginary parts (two operands, `Ar` and `Ai`):
//! `A = U diag(s) Vᴴ` with `k = min(m, n)`, `U` `m x k` and `V` `n x k`
//! with orthonormal columns, `s` real, non-negative and descending;
//! packed (all `Ur`, `Ui`, `s`, `Vhr`, `Vhi` of `Vᴴ`, and a sixth part
//! `P`, the one-hot `m x k` matrix of each column of `U`'s pivot row,
//! which the rules read and the Lisp built-in drops). faer's complex SVD.
//!
//! Each pair of singular vectors shares a free phase (`u e^{iθ}`,
//! `v e^{iθ}` give the same `A`); it is fixed so that the entry of
//! largest magnitude of each column of `U` (the first of equals) is real
//! and positive, which makes the result a function of `A`.
//!
//! Rules, with `S = diag(s)`, `F_ij = 1 / (s_j² - s_i²)` off the diagonal
//! and 0 on it, `S⁻¹` the masked inverse (`spectral`), `dP = Uᴴ dA V`:
//! - forward (JAX's `svd_jvp_rule`, whose gauge leaves `Vᴴ dV` without an
//!   imaginary diagonal): `ds = Re diag(dP)`,
//!   `dU₀ = U (F ∘ (dP S + S dPᴴ) + i S⁻¹ diag(Im diag(dP)))
//!   + (I - U Uᴴ) dA V S⁻¹`, `dV₀ = V (F ∘ (S dP + dPᴴ S))
//!   + (I - V Vᴴ) dAᴴ U S⁻¹`; then the phase kept: `dU = dU₀ - i U c`,
//!   `dV = dV₀ - i V c` with `c_k = Im(dU₀_pk) / U_pk` at the pivot;
//! - reverse, the adjoint under the real inner product of the pairs:
//!   `c̄_k = sum_i (Ūr Ui - Ūi Ur + V̄r Vi - V̄i Vr)_ik`,
//!   `Ū₀ = Ū + i P ∘ (c̄ / U_p)`, `X = Uᴴ Ū₀`, `Y = Vᴴ V̄`,
//!   `Ā = U (diag(s̄) + (F∘X + (F∘X)ᴴ) S + S (F∘Y + (F∘Y)ᴴ)
//!   + i S⁻¹ diag(Im diag(X))) Vᴴ + (Ū₀ - U X) S⁻¹ Vᴴ
//!   + U S⁻¹ (V̄ - V Y)ᴴ`.
//!
//! The `(I - U Uᴴ)` terms appear only for tall matrices and the
//! `(I - V Vᴴ)` terms only for wide ones. Repeated and zero singular
//! values are masked as for the real `svd`.

use super::pairs::{self, Pair};
use super::spectral::{as_column, as_row, inverse_gaps, inverse_singular};
use super::{leading, run_on_parts, with_core};
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TensorGraph};
use egg::Id;
use faer::Par;
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `svd` of complex matrices given as their two parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SvdComplex {
    /// Where it was called.
    pub site: Site,
}

/// `(m, n, k)` and the shapes of the six packed parts for matrices of
/// shape `a`.
fn dims(a: &[usize]) -> (usize, usize, usize, Vec<Shape>) {
    let (m, n) = (a[a.len() - 2], a[a.len() - 1]);
    let k = m.min(n);
    let lead = leading(a);
    let u = with_core(&lead, &[m, k]);
    let vh = with_core(&lead, &[k, n]);
    let shapes = vec![
        u.clone(),
        u.clone(),
        with_core(&lead, &[k]),
        vh.clone(),
        vh,
        u,
    ];
    (m, n, k, shapes)
}

/// The shapes of the six packed parts for matrices of shape `a`.
pub(crate) fn parts(a: &[usize]) -> Vec<Shape> {
    dims(a).3
}

/// The thin SVD of the `m x n` row-major parts into `out`: `Ur`, `Ui`,
/// `s`, `Vhr`, `Vhi`, `P`, row-major, phases fixed.
fn decompose(
    re: &[f64],
    im: &[f64],
    m: usize,
    n: usize,
    par: Par,
    out: &mut [f64],
) -> Result<(), OpError> {
    let a = super::complex_mat(re, im, m, n)?;
    let k = m.min(n);
    if k == 0 {
        return Ok(());
    }
    let (s, u, v) = super::svd::thin(a.as_ref(), par)?;
    let (ur, rest) = out.split_at_mut(m * k);
    let (ui, rest) = rest.split_at_mut(m * k);
    let (s_out, rest) = rest.split_at_mut(k);
    let (vhr, rest) = rest.split_at_mut(k * n);
    let (vhi, pivots) = rest.split_at_mut(k * n);
    let turns = super::phase_fixed(u.as_ref(), ur, ui, pivots);
    for (j, turn) in turns.into_iter().enumerate() {
        s_out[j] = s[j].re;
        // Row j of Vᴴ is the conjugate of column j of V (turned alike).
        for i in 0..n {
            let z = v[(i, j)] * turn;
            vhr[j * n + i] = z.re + 0.0;
            vhi[j * n + i] = -z.im + 0.0;
        }
    }
    Ok(())
}

/// The factors of `node`: `U`, `s`, `V` (from `Vᴴ`) and the pivots.
fn factors(rules: &mut Rules<'_>, node: Id, a: Id) -> (Pair, Id, Pair, Id) {
    let shapes = parts(&rules.shape(a));
    let values = rules.unpack(node, &shapes);
    let vh = Pair::new(values[3], values[4]);
    let v = pairs::adjoint(rules, vh);
    (Pair::new(values[0], values[1]), values[2], v, values[5])
}

impl SvdComplex {
    /// The shapes of the packed results for matrices of shape `a`.
    pub fn parts(a: &[usize]) -> Vec<Shape> {
        parts(a)
    }
}

impl Definition for SvdComplex {
    fn describe(&self) -> String {
        "svd-complex".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        super::two_part_matrices(operands, "svd")?;
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
        let (m, n, k, _) = dims(a);
        let sizes = [m * k, m * k, k, k * n, k * n, m * k];
        run_on_parts(operands, &sizes, m.max(n), |re, im, par, out| {
            decompose(re, im, m, n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let (m, n, k, shapes) = dims(&rules.shape(operands[0]));
        let (u, s, v, pivots) = factors(rules, node, operands[0]);
        let bars = rules.unpack(g, &shapes);
        let u_bar = Pair::new(bars[0], bars[1]);
        let s_bar = bars[2];
        let vh_bar = Pair::new(bars[3], bars[4]);
        let v_bar = pairs::adjoint(rules, vh_bar);
        // The phase.
        let from_u = pairs::turn_cotangent(rules, u_bar, u);
        let from_v = pairs::turn_cotangent(rules, v_bar, v);
        let c_bar = rules.add(from_u, from_v);
        let pushed = pairs::turn_pushed(rules, u, pivots, c_bar);
        let u_bar = Pair::new(u_bar.re, rules.add(u_bar.im, pushed));
        // The inner matrix.
        let f = inverse_gaps(rules, s, true);
        let s_inv = inverse_singular(rules, s, m, n);
        let (s_row, s_column) = (as_row(rules, s), as_column(rules, s));
        let s_inv_row = as_row(rules, s_inv);
        let uh = pairs::adjoint(rules, u);
        let vh = pairs::adjoint(rules, v);
        let x = pairs::product(rules, uh, u_bar);
        let y = pairs::product(rules, vh, v_bar);
        let g_x = pairs::scaled(rules, f, x);
        let g_xh = pairs::adjoint(rules, g_x);
        let x_sym = pairs::add(rules, g_x, g_xh);
        let x_term = pairs::scaled(rules, s_row, x_sym);
        let h_y = pairs::scaled(rules, f, y);
        let h_yh = pairs::adjoint(rules, h_y);
        let y_sym = pairs::add(rules, h_y, h_yh);
        let y_term = pairs::scaled(rules, s_column, y_sym);
        let phase = pairs::imaginary_diagonal(rules, x, k);
        let phase = pairs::scaled(rules, s_inv_row, phase);
        let on = rules.diag(s_bar, k, k);
        let mut inner = pairs::add(rules, x_term, y_term);
        inner = pairs::add(rules, inner, phase);
        inner.re = rules.add(inner.re, on);
        let left = pairs::product(rules, u, inner);
        let mut a_bar = pairs::product(rules, left, vh);
        if m > k {
            // (Ū₀ - U X) S⁻¹ Vᴴ
            let along = pairs::product(rules, u, x);
            let across = pairs::sub(rules, u_bar, along);
            let scaled = pairs::scaled(rules, s_inv_row, across);
            let term = pairs::product(rules, scaled, vh);
            a_bar = pairs::add(rules, a_bar, term);
        }
        if n > k {
            // U S⁻¹ (V̄ - V Y)ᴴ
            let along = pairs::product(rules, v, y);
            let across = pairs::sub(rules, v_bar, along);
            let scaled = pairs::scaled(rules, s_inv_row, across);
            let scaled_h = pairs::adjoint(rules, scaled);
            let term = pairs::product(rules, u, scaled_h);
            a_bar = pairs::add(rules, a_bar, term);
        }
        SmallVec::from_slice(&[Some(a_bar.re), Some(a_bar.im)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        if tangents.iter().all(Option::is_none) {
            return rules.zero_tangent(node);
        }
        let da = Pair::new(
            rules.tangent_or_zero(operands[0], tangents[0]),
            rules.tangent_or_zero(operands[1], tangents[1]),
        );
        let (m, n, k, _) = dims(&rules.shape(operands[0]));
        let (u, s, v, pivots) = factors(rules, node, operands[0]);
        let f = inverse_gaps(rules, s, true);
        let s_inv = inverse_singular(rules, s, m, n);
        let (s_row, s_column) = (as_row(rules, s), as_column(rules, s));
        let s_inv_row = as_row(rules, s_inv);
        let uh = pairs::adjoint(rules, u);
        let da_v = pairs::product(rules, da, v);
        let dp = pairs::product(rules, uh, da_v);
        let ds = rules.diagonal(dp.re);
        let dph = pairs::adjoint(rules, dp);
        // dU₀ = U (F ∘ (dP S + S dPᴴ) + i S⁻¹ diag(Im diag dP)) [+ ...]
        let right = pairs::scaled(rules, s_row, dp);
        let left = pairs::scaled(rules, s_column, dph);
        let sum = pairs::add(rules, right, left);
        let rotated = pairs::scaled(rules, f, sum);
        let phase = pairs::imaginary_diagonal(rules, dp, k);
        let phase = pairs::scaled(rules, s_inv_row, phase);
        let inner = pairs::add(rules, rotated, phase);
        let mut du = pairs::product(rules, u, inner);
        // dV₀ = V (F ∘ (S dP + dPᴴ S)) [+ ...]
        let left = pairs::scaled(rules, s_column, dp);
        let right = pairs::scaled(rules, s_row, dph);
        let sum = pairs::add(rules, left, right);
        let rotated = pairs::scaled(rules, f, sum);
        let mut dv = pairs::product(rules, v, rotated);
        if m > k {
            let along = pairs::product(rules, u, dp);
            let across = pairs::sub(rules, da_v, along);
            let term = pairs::scaled(rules, s_inv_row, across);
            du = pairs::add(rules, du, term);
        }
        if n > k {
            let dah = pairs::adjoint(rules, da);
            let dah_u = pairs::product(rules, dah, u);
            let along = pairs::product(rules, v, dph);
            let across = pairs::sub(rules, dah_u, along);
            let term = pairs::scaled(rules, s_inv_row, across);
            dv = pairs::add(rules, dv, term);
        }
        let c = pairs::phase_turn(rules, u, pivots, du);
        let du = pairs::turned(rules, du, c, u);
        let dv = pairs::turned(rules, dv, c, v);
        let dvh = pairs::adjoint(rules, dv);
        let dp = rules.zero_tangent(pivots);
        rules.pack_tangent(&[du.re, du.im, ds, dvh.re, dvh.im, dp])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let (m, n) = (a[a.len() - 2] as u64, a[a.len() - 1] as u64);
        let count = a.iter().product::<usize>() as u64 / (m * n).max(1);
        let (big, small) = (m.max(n), m.min(n));
        count * 4 * (4 * big * small * small + 22 * small * small * small)
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = Op::SvdComplex(self.clone());
        super::two_parts_batched(graph, op, operands, batched, size, parts)
    }

    fn site(&self) -> Site {
        self.site
    }
}

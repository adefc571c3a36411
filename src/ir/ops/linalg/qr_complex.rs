//! The thin QR factorization of complex matrices held as their real and
//! imaginary parts (two operands, `Ar` and `Ai`): `A = Q R` with
//! `k = min(m, n)`, `Q` `m x k` with orthonormal columns (`Qᴴ Q = I`) and
//! `R` `k x n` upper triangular (trapezoidal when wide) with a real
//! non-negative diagonal, packed (all `Qr`, `Qi`, `Rr`, `Ri`). faer's
//! complex Householder QR; the phases fixed afterwards (each row of `R`
//! turned so its diagonal entry is real, the column of `Q` the other
//! way), which makes the factorization unique for full-rank matrices.
//!
//! Rules for `m >= n` (the real ones of `qr` with adjoints for
//! transposes), `R` invertible:
//! - forward: `B = dA R⁻¹`, `C = Qᴴ B`,
//!   `Ω = tril(C, -1) - tril(C, -1)ᴴ + i diag(Im C)` (the skew-Hermitian
//!   part of `C` that keeps `R`'s diagonal real), `dQ = Q (Ω - C) + B`,
//!   `dR = (C - Ω) R`;
//! - reverse: `P = Qᴴ Q̄ - R̄ Rᴴ`,
//!   `Ā = (Q̄ + Q (tril(P - Pᴴ, -1) + i diag(Im P) - P)) R⁻ᴴ`.
//!
//! For `m < n`, `A = [X | Y]` with `X` square: `X = Q U` is the square
//! case and `R = [U | Qᴴ Y]`. The solves with `R` go through the real
//! embedding; an `R` (or `U`) that is not of full rank (a diagonal entry
//! at rounding level, as `lstsq` checks) makes a derivative an error.

use super::pairs::{self, Pair};
use super::{leading, run_on_parts, with_core};
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use faer::{Par, c64};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `qr` of complex matrices given as their two parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QrComplex {
    /// Where it was called.
    pub site: Site,
}

/// `(m, n, k)` and the shapes of `Qr`, `Qi`, `Rr`, `Ri` for matrices of
/// shape `a`.
fn dims(a: &[usize]) -> (usize, usize, usize, [Shape; 4]) {
    let (m, n) = (a[a.len() - 2], a[a.len() - 1]);
    let k = m.min(n);
    let lead = leading(a);
    let q = with_core(&lead, &[m, k]);
    let r = with_core(&lead, &[k, n]);
    (m, n, k, [q.clone(), q, r.clone(), r])
}

/// The shapes of the four packed parts for matrices of shape `a`.
pub(crate) fn parts(a: &[usize]) -> Vec<Shape> {
    dims(a).3.to_vec()
}

/// The thin QR of the `m x n` row-major parts into `out`: `Qr`, `Qi`,
/// `Rr`, `Ri`, row-major, `R`'s diagonal real and non-negative.
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
    let (q, factors) = super::qr::householder(a, par);
    let (qr, rest) = out.split_at_mut(m * k);
    let (qi, rest) = rest.split_at_mut(m * k);
    let (rr, ri) = rest.split_at_mut(k * n);
    for i in 0..k {
        let d = factors[(i, i)];
        let size = d.norm();
        // Row i of R times conj(phase), column i of Q times phase.
        let phase = match size > 0.0 {
            true => c64::new(d.re / size, d.im / size),
            false => c64::new(1.0, 0.0),
        };
        for j in 0..n {
            let z = match j >= i {
                true => factors[(i, j)] * phase.conj(),
                false => c64::new(0.0, 0.0),
            };
            rr[i * n + j] = z.re + 0.0;
            ri[i * n + j] = if j == i { 0.0 } else { z.im + 0.0 };
        }
        for row in 0..m {
            let z = q[(row, i)] * phase;
            qr[row * k + i] = z.re + 0.0;
            qi[row * k + i] = z.im + 0.0;
        }
    }
    Ok(())
}

/// Columns `start..end` of both parts.
fn columns(rules: &mut Rules<'_>, x: Pair, start: usize, end: usize) -> Pair {
    x.map(rules, |rules, part| {
        let axis = (rules.rank(part) - 1) as u8;
        rules
            .graph
            .add_valid(TOp::Slice { axis, start, end }, &[part])
    })
}

/// `x` and `y` side by side.
fn beside(rules: &mut Rules<'_>, x: Pair, y: Pair) -> Pair {
    let join = |rules: &mut Rules<'_>, a: Id, b: Id| {
        let axis = (rules.rank(a) - 1) as u8;
        rules.graph.add_valid(TOp::Concat(axis), &[a, b])
    };
    Pair::new(join(rules, x.re, y.re), join(rules, x.im, y.im))
}

/// `Ω(x) = tril(x, -1) - tril(x, -1)ᴴ + i diag(Im x)` for square
/// `k x k` `x`: the skew-Hermitian matrix whose strict lower triangle and
/// diagonal's imaginary part are those of `x`.
fn skew(rules: &mut Rules<'_>, x: Pair, k: usize) -> Pair {
    let lower = x.map(rules, |rules, part| rules.tril(part, -1));
    let upper = pairs::adjoint(rules, lower);
    let off = pairs::sub(rules, lower, upper);
    let on = pairs::imaginary_diagonal(rules, x, k);
    pairs::add(rules, off, on)
}

/// `R` with its real diagonal checked (in the derivative's program) to be
/// above the rank tolerance of `size x size` matrices: a rank-deficient
/// matrix has no derivative, and its `R` a diagonal entry at rounding
/// level rather than an exact zero, which a solve would not notice.
fn full_rank(rules: &mut Rules<'_>, r: Pair, size: usize, site: Site) -> Pair {
    let re = rules.op(Op::FullRank(super::FullRank { size, site }), &[r.re]);
    Pair::new(re, r.im)
}

/// The reverse rule of the square or tall case: `Ā` from `Q̄`, `R̄`.
fn tall_vjp(rules: &mut Rules<'_>, q: Pair, r: Pair, q_bar: Pair, r_bar: Pair, site: Site) -> Pair {
    let k = rules.shape(r.re).last().copied().unwrap_or(0);
    let rows = rules.shape(q.re).iter().rev().nth(1).copied().unwrap_or(0);
    let r = full_rank(rules, r, rows, site);
    let qh = pairs::adjoint(rules, q);
    let rh = pairs::adjoint(rules, r);
    let a = pairs::product(rules, qh, q_bar);
    let b = pairs::product(rules, r_bar, rh);
    let p = pairs::sub(rules, a, b);
    let ph = pairs::adjoint(rules, p);
    let difference = pairs::sub(rules, p, ph);
    let lower = difference.map(rules, |rules, part| rules.tril(part, -1));
    let on = pairs::imaginary_diagonal(rules, p, k);
    let omega = pairs::add(rules, lower, on);
    let g = pairs::sub(rules, omega, p);
    let q_g = pairs::product(rules, q, g);
    let total = pairs::add(rules, q_bar, q_g);
    pairs::solve_right(rules, total, r, true, site)
}

/// The forward rule of the square or tall case: `(dQ, dR)` from `dA`.
fn tall_jvp(rules: &mut Rules<'_>, q: Pair, r: Pair, da: Pair, site: Site) -> (Pair, Pair) {
    let k = rules.shape(r.re).last().copied().unwrap_or(0);
    let rows = rules.shape(q.re).iter().rev().nth(1).copied().unwrap_or(0);
    let r = full_rank(rules, r, rows, site);
    let b = pairs::solve_right(rules, da, r, false, site);
    let qh = pairs::adjoint(rules, q);
    let c = pairs::product(rules, qh, b);
    let omega = skew(rules, c, k);
    let omega_minus_c = pairs::sub(rules, omega, c);
    let rotated = pairs::product(rules, q, omega_minus_c);
    let dq = pairs::add(rules, rotated, b);
    let c_minus_omega = pairs::sub(rules, c, omega);
    let dr = pairs::product(rules, c_minus_omega, r);
    (dq, dr)
}

/// `Q` and `R` of `node`.
fn factors(rules: &mut Rules<'_>, node: Id, a: Id) -> (Pair, Pair) {
    let shapes = parts(&rules.shape(a));
    let values = rules.unpack(node, &shapes);
    (
        Pair::new(values[0], values[1]),
        Pair::new(values[2], values[3]),
    )
}

impl QrComplex {
    /// The shapes of the packed results for matrices of shape `a`.
    pub fn parts(a: &[usize]) -> Vec<Shape> {
        parts(a)
    }
}

impl Definition for QrComplex {
    fn describe(&self) -> String {
        "qr-complex".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        super::two_part_matrices(operands, "qr")?;
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
        let sizes = [m * k, m * k, k * n, k * n];
        run_on_parts(operands, &sizes, m.max(n), |re, im, par, out| {
            decompose(re, im, m, n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let (m, n, _, shapes) = dims(&rules.shape(operands[0]));
        let (q, r) = factors(rules, node, operands[0]);
        let bars = rules.unpack(g, &shapes);
        let q_bar = Pair::new(bars[0], bars[1]);
        let r_bar = Pair::new(bars[2], bars[3]);
        let a_bar = match m >= n {
            true => tall_vjp(rules, q, r, q_bar, r_bar, self.site),
            false => {
                // A = [X | Y], R = [U | W], W = Qᴴ Y.
                let a = Pair::new(operands[0], operands[1]);
                let y = columns(rules, a, m, n);
                let u = columns(rules, r, 0, m);
                let u_bar = columns(rules, r_bar, 0, m);
                let w_bar = columns(rules, r_bar, m, n);
                let w_bar_h = pairs::adjoint(rules, w_bar);
                let through_w = pairs::product(rules, y, w_bar_h);
                let q_bar = pairs::add(rules, q_bar, through_w);
                let x_bar = tall_vjp(rules, q, u, q_bar, u_bar, self.site);
                let y_bar = pairs::product(rules, q, w_bar);
                beside(rules, x_bar, y_bar)
            }
        };
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
        let (m, n, _, _) = dims(&rules.shape(operands[0]));
        let (q, r) = factors(rules, node, operands[0]);
        let (dq, dr) = match m >= n {
            true => tall_jvp(rules, q, r, da, self.site),
            false => {
                let a = Pair::new(operands[0], operands[1]);
                let y = columns(rules, a, m, n);
                let u = columns(rules, r, 0, m);
                let dx = columns(rules, da, 0, m);
                let dy = columns(rules, da, m, n);
                let (dq, du) = tall_jvp(rules, q, u, dx, self.site);
                let dqh = pairs::adjoint(rules, dq);
                let moved = pairs::product(rules, dqh, y);
                let qh = pairs::adjoint(rules, q);
                let direct = pairs::product(rules, qh, dy);
                let dw = pairs::add(rules, moved, direct);
                (dq, beside(rules, du, dw))
            }
        };
        rules.pack_tangent(&[dq.re, dq.im, dr.re, dr.im])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let (m, n) = (a[a.len() - 2] as u64, a[a.len() - 1] as u64);
        let count = a.iter().product::<usize>() as u64 / (m * n).max(1);
        let (big, small) = (m.max(n), m.min(n));
        count * 4 * (4 * big * small * small)
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = Op::QrComplex(self.clone());
        super::two_parts_batched(graph, op, operands, batched, size, parts)
    }

    fn site(&self) -> Site {
        self.site
    }
}

//! The thin QR factorization (`qr`): each `m x n` matrix is `Q R` with
//! `k = min(m, n)`, `Q` `m x k` with orthonormal columns and `R` `k x n`
//! upper triangular (trapezoidal when wide) with a non-negative diagonal
//! (Householder reflections, faer; the signs fixed afterwards, which makes
//! the factorization unique for full-rank matrices). Packed as all `Q`s,
//! then all `R`s. Also `FullRank`, the check `lstsq` puts on its `R`.
//!
//! Rules for `m >= n` (Walter & Lehmann 2018, "Algorithmic
//! differentiation of linear algebra functions with application in
//! optimum experimental design"; JAX's `qr_jvp_rule`), `R` invertible:
//! - forward: `B = da R⁻¹`, `C = Qᵀ B`, `Ω = tril(C, -1) - tril(C, -1)ᵀ`,
//!   `dQ = Q (Ω - C) + B`, `dR = (C - Ω) R`;
//! - reverse: `P = Qᵀ Q̄ - R̄ Rᵀ`,
//!   `ā = (Q̄ + Q (tril(P - Pᵀ, -1) - P)) R⁻ᵀ` (the transpose of the above).
//!
//! For `m < n`, `a = [X | Y]` with `X` square: `X = Q U` is the square
//! case and `R = [U | Qᵀ Y]`, so the rules are the square ones on `X`
//! plus the product `Qᵀ Y` (as PyTorch does); they need `X` invertible.
//! A singular `R` (or `U`) in a derivative is an error naming its zero
//! diagonal entry.

use super::{Batched, leading, matrix_dims, run_batch, run_packed, to_mat, with_core};
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TOp};
use egg::Id;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::traits::ComplexField;
use faer::{Conj, Mat, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `qr`: the thin QR factorization of each matrix, packed `(Q, R)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Qr {
    /// Where it was called.
    pub site: Site,
}

/// `(m, n, k)` and the shapes of `Q` and `R` for matrices of shape `a`.
fn parts(a: &[usize]) -> (usize, usize, usize, [Shape; 2]) {
    let (m, n) = (a[a.len() - 2], a[a.len() - 1]);
    let k = m.min(n);
    let lead = leading(a);
    (
        m,
        n,
        k,
        [with_core(&lead, &[m, k]), with_core(&lead, &[k, n])],
    )
}

/// The thin Householder QR of `factors` (`m x n`, any field): `Q`
/// (`m x k`) and the factored matrix, whose upper trapezoid is `R`
/// (signs or phases not yet fixed).
pub(super) fn householder<T: ComplexField>(mut factors: Mat<T>, par: Par) -> (Mat<T>, Mat<T>) {
    let (m, n) = factors.shape();
    let k = m.min(n);
    let block = recommended_block_size::<T>(m, n);
    let mut coefficients = Mat::<T>::zeros(block, k);
    let mut buffer = MemBuffer::new(qr_in_place_scratch::<T>(
        m,
        n,
        block,
        par,
        Default::default(),
    ));
    qr_in_place(
        factors.as_mut(),
        coefficients.as_mut(),
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    );
    // The Householder vectors: unit lower trapezoidal, m x k.
    let basis = Mat::from_fn(m, k, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Greater => factors[(i, j)].clone(),
        std::cmp::Ordering::Equal => T::one_impl(),
        std::cmp::Ordering::Less => T::zero_impl(),
    });
    let mut q = Mat::<T>::identity(m, k);
    let mut buffer = MemBuffer::new(
        apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(m, block, k),
    );
    apply_block_householder_sequence_on_the_left_in_place_with_conj(
        basis.as_ref(),
        coefficients.as_ref(),
        Conj::No,
        q.as_mut(),
        par,
        MemStack::new(&mut buffer),
    );
    (q, factors)
}

/// The thin QR of the `m x n` row-major `a` into `out`: `Q` (`m x k`)
/// then `R` (`k x n`), row-major, with `R`'s diagonal non-negative.
fn decompose(a: &[f64], m: usize, n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    if !super::all_finite(a) {
        return Err(OpError::new("the matrix has a NaN or an infinite entry"));
    }
    let k = m.min(n);
    if k == 0 {
        return Ok(());
    }
    let (q, factors) = householder(to_mat(a, m, n), par);
    let (q_out, r_out) = out.split_at_mut(m * k);
    for i in 0..k {
        let flip = if factors[(i, i)] < 0.0 { -1.0 } else { 1.0 };
        for j in 0..n {
            r_out[i * n + j] = if j >= i {
                flip * factors[(i, j)] + 0.0
            } else {
                0.0
            };
        }
        for row in 0..m {
            q_out[row * k + i] = flip * q[(row, i)] + 0.0;
        }
    }
    Ok(())
}

/// `op(r)⁻¹ b` for the upper triangular `r`, failing at `site`.
fn upper_solve(rules: &mut Rules<'_>, r: Id, b: Id, transpose: bool, site: Site) -> Id {
    rules.op(
        Op::TriangularSolve(super::TriangularSolve {
            lower: false,
            transpose,
            vector: false,
            site,
        }),
        &[r, b],
    )
}

/// Columns `start..end` of the matrices of `x`.
fn columns(rules: &mut Rules<'_>, x: Id, start: usize, end: usize) -> Id {
    let axis = (rules.rank(x) - 1) as u8;
    rules.graph.add_valid(TOp::Slice { axis, start, end }, &[x])
}

/// `x` and `y` side by side (joined along the last axis).
fn beside(rules: &mut Rules<'_>, x: Id, y: Id) -> Id {
    let axis = (rules.rank(x) - 1) as u8;
    rules.graph.add_valid(TOp::Concat(axis), &[x, y])
}

/// The reverse rule of the square or tall case: `ā` from `Q̄`, `R̄`.
fn tall_vjp(rules: &mut Rules<'_>, q: Id, r: Id, q_bar: Id, r_bar: Id, site: Site) -> Id {
    let qt = rules.mt(q);
    let rt = rules.mt(r);
    let qt_q_bar = rules.mm(qt, q_bar);
    let r_bar_rt = rules.mm(r_bar, rt);
    let p = rules.sub(qt_q_bar, r_bar_rt);
    let pt = rules.mt(p);
    let skew = rules.sub(p, pt);
    let lower = rules.tril(skew, -1);
    let g = rules.sub(lower, p);
    let q_g = rules.mm(q, g);
    let total = rules.add(q_bar, q_g);
    // total R⁻ᵀ = (R⁻¹ totalᵀ)ᵀ
    let total_t = rules.mt(total);
    let solved = upper_solve(rules, r, total_t, false, site);
    rules.mt(solved)
}

/// The forward rule of the square or tall case: `(dQ, dR)` from `da`.
fn tall_jvp(rules: &mut Rules<'_>, q: Id, r: Id, da: Id, site: Site) -> (Id, Id) {
    // B = da R⁻¹ = (R⁻ᵀ daᵀ)ᵀ
    let da_t = rules.mt(da);
    let solved = upper_solve(rules, r, da_t, true, site);
    let b = rules.mt(solved);
    let qt = rules.mt(q);
    let c = rules.mm(qt, b);
    let lower = rules.tril(c, -1);
    let lower_t = rules.mt(lower);
    let omega = rules.sub(lower, lower_t);
    let omega_minus_c = rules.sub(omega, c);
    let rotated = rules.mm(q, omega_minus_c);
    let dq = rules.add(rotated, b);
    let c_minus_omega = rules.neg(omega_minus_c);
    let dr = rules.mm(c_minus_omega, r);
    (dq, dr)
}

impl Definition for Qr {
    fn describe(&self) -> String {
        "qr".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        matrix_dims(operands[0], "qr")?;
        let (_, _, _, shapes) = parts(operands[0]);
        Ok(SmallVec::from_slice(&[crate::ir::ops::packed_len(&shapes)]))
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        _shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let a = operands[0].shape();
        let (m, n, k, _) = parts(a);
        let input = Batched::new(operands, &[2], &leading(a))?;
        run_packed(input.count, &[m * k, k * n], m.max(n), |b, par, out| {
            decompose(input.core(0, b), m, n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let (m, n, _, shapes) = parts(&rules.shape(operands[0]));
        let values = rules.unpack(node, &shapes);
        let (q, r) = (values[0], values[1]);
        let bars = rules.unpack(g, &shapes);
        let (q_bar, r_bar) = (bars[0], bars[1]);
        if m >= n {
            let a_bar = tall_vjp(rules, q, r, q_bar, r_bar, self.site);
            return SmallVec::from_slice(&[Some(a_bar)]);
        }
        // a = [X | Y], R = [U | W], W = Qᵀ Y.
        let y = columns(rules, operands[0], m, n);
        let u = columns(rules, r, 0, m);
        let u_bar = columns(rules, r_bar, 0, m);
        let w_bar = columns(rules, r_bar, m, n);
        let w_bar_t = rules.mt(w_bar);
        let through_w = rules.mm(y, w_bar_t);
        let q_bar = rules.add(q_bar, through_w);
        let x_bar = tall_vjp(rules, q, u, q_bar, u_bar, self.site);
        let y_bar = rules.mm(q, w_bar);
        SmallVec::from_slice(&[Some(beside(rules, x_bar, y_bar))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let (m, n, _, shapes) = parts(&rules.shape(operands[0]));
        let values = rules.unpack(node, &shapes);
        let (q, r) = (values[0], values[1]);
        if m >= n {
            let (dq, dr) = tall_jvp(rules, q, r, da, self.site);
            return rules.pack_tangent(&[dq, dr]);
        }
        let y = columns(rules, operands[0], m, n);
        let u = columns(rules, r, 0, m);
        let dx = columns(rules, da, 0, m);
        let dy = columns(rules, da, m, n);
        let (dq, du) = tall_jvp(rules, q, u, dx, self.site);
        let dqt = rules.mt(dq);
        let moved = rules.mm(dqt, y);
        let qt = rules.mt(q);
        let direct = rules.mm(qt, dy);
        let dw = rules.add(moved, direct);
        let dr = beside(rules, du, dw);
        rules.pack_tangent(&[dq, dr])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let (m, n) = (a[a.len() - 2] as u64, a[a.len() - 1] as u64);
        let count = a.iter().product::<usize>() as u64 / (m * n).max(1);
        let k = m.min(n);
        count * 4 * m * n * k
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = shape;
        let parts = parts(operands[0]).3;
        crate::ir::ops::reads::per_matrix_packed(out, operands, &[2], &parts, &[2, 2], element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Qr(self.clone());
        let node =
            crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)?;
        // One operand, so batched: the stack the packed parts come from.
        let input = graph.shape(operands[0]).clone();
        let parts = parts(&input).3;
        Some(crate::ir::ops::batching::repacked(
            graph, node, &parts, size,
        ))
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::qr(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

/// The identity on stacks of triangular factors `R` that checks each is
/// of full rank: no diagonal entry at most `size` units of rounding of
/// the largest entry (`size` = the larger side of the factored matrix).
/// `lstsq` puts it between its QR factorization and its triangular
/// solve, so a rank-deficient matrix is an error rather than a solution
/// of huge numbers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FullRank {
    /// The larger side of the factored matrix.
    pub size: usize,
    /// Where it was called.
    pub site: Site,
}

impl Definition for FullRank {
    fn describe(&self) -> String {
        format!("full-rank[{}]", self.size)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        matrix_dims(operands[0], "full-rank")?;
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let input = Batched::new(operands, &[2], &leading(shape))?;
        run_batch(input.count, rows * cols, rows, shape, |b, _, out| {
            let r = input.core(0, b);
            out.copy_from_slice(r);
            let largest = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let tol = self.size.max(1) as f64 * f64::EPSILON * largest;
            for i in 0..rows.min(cols) {
                let d = r[i * cols + i];
                if d.abs() <= tol {
                    return Err(OpError::new(format!(
                        "the matrix is rank deficient: diagonal entry {i} of its triangular factor R is {d:e}, not above the tolerance {tol:e}"
                    )));
                }
            }
            Ok(())
        })
    }

    fn vjp(&self, _rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        SmallVec::from_slice(&[Some(g)])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        node: Id,
        _operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        match tangents[0] {
            Some(t) => t,
            None => rules.zero_tangent(node),
        }
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        shape.iter().product::<usize>() as u64
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
        let op = crate::ir::ops::Op::FullRank(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::full_rank(operands[0], self.size)
    }

    fn site(&self) -> Site {
        self.site
    }
}

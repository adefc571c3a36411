//! The thin singular value decomposition (`svd`): each `m x n` matrix is
//! `U diag(s) Vt` with `k = min(m, n)`, `U` `m x k` and `Vt` `k x n` with
//! orthonormal columns (rows), and `s` non-negative in descending order;
//! packed as all `U`s, then all `s`, then all `Vt`s. Signs are fixed:
//! the entry of largest magnitude of each column of `U` (the first of
//! equals) is positive, the matching row of `Vt` flipped with it.
//!
//! Rules (Townsend 2016, "Differentiating the singular value
//! decomposition"; JAX's `svd_jvp_rule`), with `S = diag(s)`,
//! `F_ij = 1 / (s_j² - s_i²)` off the diagonal and 0 on it, `S⁻¹` the
//! masked inverse:
//! - forward: `dP = Uᵀ da V`, `ds = diag(dP)`,
//!   `dU = U (F ∘ (dP S + S dPᵀ)) + (I - U Uᵀ) da V S⁻¹`,
//!   `dV = V (F ∘ (S dP + dPᵀ S)) + (I - V Vᵀ) daᵀ U S⁻¹`;
//! - reverse: with `X = F ∘ (Uᵀ Ū)`, `Y = F ∘ (Vᵀ V̄)`,
//!   `ā = U (diag(s̄) + (X + Xᵀ) S + S (Y + Yᵀ)) Vᵀ
//!   + (I - U Uᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I - V Vᵀ)`.
//!
//! The `(I - U Uᵀ)` terms appear only for tall matrices and the
//! `(I - V Vᵀ)` terms only for wide ones. Repeated singular values get
//! `F = 0` for the pair and singular values below the rank tolerance get
//! `S⁻¹ = 0` (`spectral`), so derivatives are finite everywhere, never
//! NaN, and exact for functions of the singular values alone (such as
//! `sum(s²) = |a|²` at a rank-deficient `a`) and for vectors of simple
//! nonzero singular values; couplings within a repeated or zero singular
//! value are dropped.

use super::spectral::{as_column, as_row, inverse_gaps, inverse_singular, largest_entry};
use super::{Batched, leading, matrix_dims, run_packed, to_mat, with_core};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use egg::Id;
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::svd::{ComputeSvdVectors, svd, svd_scratch};
use faer::traits::ComplexField;
use faer::{Mat, MatRef, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `svd`: the thin SVD of each matrix, packed `(U, s, Vt)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Svd {
    /// Where it was called.
    pub site: Site,
}

/// `(m, n, k)` and the shapes of the three results for matrices of shape
/// `a`.
fn parts(a: &[usize]) -> (usize, usize, usize, [Shape; 3]) {
    let (m, n) = (a[a.len() - 2], a[a.len() - 1]);
    let k = m.min(n);
    let lead = leading(a);
    let shapes = [
        with_core(&lead, &[m, k]),
        with_core(&lead, &[k]),
        with_core(&lead, &[k, n]),
    ];
    (m, n, k, shapes)
}

/// Singular values (real, in the field), `U` and `V`.
pub(super) type Thin<T> = (Diag<T>, Mat<T>, Mat<T>);

/// The thin SVD of `matrix` (`m x n`, any field, `k = min(m, n)`):
/// the singular values (real, in the field), `U` (`m x k`), `V`
/// (`n x k`), signs or phases as faer leaves them.
pub(super) fn thin<T: ComplexField>(matrix: MatRef<'_, T>, par: Par) -> Result<Thin<T>, OpError> {
    let (m, n) = matrix.shape();
    let k = m.min(n);
    let mut s = Diag::<T>::zeros(k);
    let mut u = Mat::<T>::zeros(m, k);
    let mut v = Mat::<T>::zeros(n, k);
    let thin = ComputeSvdVectors::Thin;
    let mut buffer = MemBuffer::new(svd_scratch::<T>(m, n, thin, thin, par, Default::default()));
    svd(
        matrix,
        s.as_mut(),
        Some(u.as_mut()),
        Some(v.as_mut()),
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    )
    .map_err(|_| OpError::new("the SVD iteration did not converge"))?;
    Ok((s, u, v))
}

/// The thin SVD of the `m x n` row-major `a` into `out`: `U` (`m x k`),
/// `s` (`k`), `Vt` (`k x n`), row-major.
pub(super) fn decompose(
    a: &[f64],
    m: usize,
    n: usize,
    par: Par,
    out: &mut [f64],
) -> Result<(), OpError> {
    if !super::all_finite(a) {
        return Err(OpError::new("the matrix has a NaN or an infinite entry"));
    }
    let k = m.min(n);
    if k == 0 {
        return Ok(());
    }
    let (s, u, v) = thin(to_mat(a, m, n).as_ref(), par)?;
    let (u_out, rest) = out.split_at_mut(m * k);
    let (s_out, vt_out) = rest.split_at_mut(k);
    for j in 0..k {
        s_out[j] = s[j];
        let top = largest_entry((0..m).map(|i| u[(i, j)]));
        let flip = if u[(top, j)] < 0.0 { -1.0 } else { 1.0 };
        for i in 0..m {
            u_out[i * k + j] = flip * u[(i, j)] + 0.0;
        }
        for i in 0..n {
            vt_out[j * n + i] = flip * v[(i, j)] + 0.0;
        }
    }
    Ok(())
}

impl Definition for Svd {
    fn describe(&self) -> String {
        "svd".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        matrix_dims(operands[0], "svd")?;
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
        run_packed(input.count, &[m * k, k, k * n], m.max(n), |b, par, out| {
            decompose(input.core(0, b), m, n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let (m, n, k, shapes) = parts(&rules.shape(operands[0]));
        let values = rules.unpack(node, &shapes);
        let (u, s, vt) = (values[0], values[1], values[2]);
        let bars = rules.unpack(g, &shapes);
        let (u_bar, s_bar, vt_bar) = (bars[0], bars[1], bars[2]);
        let (ut, v, v_bar) = (rules.mt(u), rules.mt(vt), rules.mt(vt_bar));
        let f = inverse_gaps(rules, s, true);
        let (s_row, s_column) = (as_row(rules, s), as_column(rules, s));
        let ut_u_bar = rules.mm(ut, u_bar);
        let x = rules.mul(f, ut_u_bar);
        let vt_v_bar = rules.mm(vt, v_bar);
        let y = rules.mul(f, vt_v_bar);
        let xt = rules.mt(x);
        let x_sym = rules.add(x, xt);
        let x_term = rules.mul(x_sym, s_row);
        let yt = rules.mt(y);
        let y_sym = rules.add(y, yt);
        let y_term = rules.mul(s_column, y_sym);
        let on = rules.diag(s_bar, k, k);
        let inner = rules.add(on, x_term);
        let inner = rules.add(inner, y_term);
        let left = rules.mm(u, inner);
        let mut a_bar = rules.mm(left, vt);
        let s_inv = inverse_singular(rules, s, m, n);
        if m > k {
            // (I - U Uᵀ) Ū S⁻¹ Vᵀ
            let along = rules.mm(u, ut_u_bar);
            let across = rules.sub(u_bar, along);
            let s_inv_row = as_row(rules, s_inv);
            let scaled = rules.mul(across, s_inv_row);
            let term = rules.mm(scaled, vt);
            a_bar = rules.add(a_bar, term);
        }
        if n > k {
            // U S⁻¹ V̄ᵀ (I - V Vᵀ)
            let vt_bar_v = rules.mm(vt_bar, v);
            let along = rules.mm(vt_bar_v, vt);
            let across = rules.sub(vt_bar, along);
            let s_inv_column = as_column(rules, s_inv);
            let scaled = rules.mul(s_inv_column, across);
            let term = rules.mm(u, scaled);
            a_bar = rules.add(a_bar, term);
        }
        SmallVec::from_slice(&[Some(a_bar)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let (m, n, k, shapes) = parts(&rules.shape(operands[0]));
        let values = rules.unpack(node, &shapes);
        let (u, s, vt) = (values[0], values[1], values[2]);
        let (ut, v) = (rules.mt(u), rules.mt(vt));
        let f = inverse_gaps(rules, s, true);
        let (s_row, s_column) = (as_row(rules, s), as_column(rules, s));
        let da_v = rules.mm(da, v);
        let dp = rules.mm(ut, da_v);
        let ds = rules.diagonal(dp);
        let dpt = rules.mt(dp);
        // dU = U (F ∘ (dP S + S dPᵀ)) [+ (I - U Uᵀ) da V S⁻¹]
        let right = rules.mul(dp, s_row);
        let left = rules.mul(s_column, dpt);
        let sum = rules.add(right, left);
        let rotated = rules.mul(f, sum);
        let mut du = rules.mm(u, rotated);
        // dV = V (F ∘ (S dP + dPᵀ S)) [+ (I - V Vᵀ) daᵀ U S⁻¹]
        let left = rules.mul(s_column, dp);
        let right = rules.mul(dpt, s_row);
        let sum = rules.add(left, right);
        let rotated = rules.mul(f, sum);
        let mut dv = rules.mm(v, rotated);
        if m > k || n > k {
            let s_inv = inverse_singular(rules, s, m, n);
            let s_inv_row = as_row(rules, s_inv);
            if m > k {
                let along = rules.mm(u, dp);
                let across = rules.sub(da_v, along);
                let term = rules.mul(across, s_inv_row);
                du = rules.add(du, term);
            }
            if n > k {
                let dat = rules.mt(da);
                let dat_u = rules.mm(dat, u);
                let along = rules.mm(v, dpt);
                let across = rules.sub(dat_u, along);
                let term = rules.mul(across, s_inv_row);
                dv = rules.add(dv, term);
            }
        }
        let dvt = rules.mt(dv);
        rules.pack_tangent(&[du, ds, dvt])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let (m, n) = (a[a.len() - 2] as u64, a[a.len() - 1] as u64);
        let count = a.iter().product::<usize>() as u64 / (m * n).max(1);
        let (big, small) = (m.max(n), m.min(n));
        count * (4 * big * small * small + 22 * small * small * small)
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
        crate::ir::ops::reads::per_matrix_packed(out, operands, &[2], &parts, &[2, 1, 2], element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Svd(self.clone());
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
        super::device::svd(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

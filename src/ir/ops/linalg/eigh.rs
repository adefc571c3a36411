//! The symmetric eigendecomposition (`eigh`): for each square matrix, the
//! eigenvalues `w` in ascending order and the orthonormal eigenvectors as
//! the columns of `V`, packed (all eigenvalues, then all eigenvector
//! matrices). The matrix used is `(a + aᵀ) / 2`, so derivatives are
//! symmetric and agree with finite differences in every direction (as for
//! `cholesky`). Each eigenvector's sign is fixed: its entry of largest
//! magnitude (the first of equals) is positive.
//!
//! Rules (Giles 2008; Magnus 1985), with `F_ij = 1 / (w_j - w_i)` off the
//! diagonal and 0 on it:
//! - forward: with `M = Vᵀ sym(da) V`, `dw = diag(M)`, `dV = V (F ∘ M)`;
//! - reverse: `ā = sym(V (diag(w̄) + F ∘ (Vᵀ V̄)) Vᵀ)`.
//!
//! Repeated eigenvalues: `F` is 0 for pairs equal to within rounding
//! (`spectral::inverse_gaps`), so derivatives are finite, never NaN, and
//! exact for functions of the eigenvalues and of the vectors of simple
//! eigenvalues; the coupling within a repeated eigenvalue is dropped (see
//! `spectral` for what that misses).

use super::spectral::{inverse_gaps, largest_entry};
use super::{Batched, leading, run_packed, square_dim, to_mat, with_core};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use egg::Id;
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{ComputeEigenvectors, self_adjoint_evd, self_adjoint_evd_scratch};
use faer::{Mat, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `eigh`: eigenvalues (ascending) and eigenvectors of each symmetric
/// matrix, packed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Eigh {
    /// Where it was called.
    pub site: Site,
}

/// The shapes of the two results for matrices of shape `a`.
fn parts(a: &[usize]) -> [Shape; 2] {
    let n = a[a.len() - 1];
    let lead = leading(a);
    [with_core(&lead, &[n]), with_core(&lead, &[n, n])]
}

/// The eigenvalues and eigenvectors of the `n x n` row-major `a`
/// (symmetrized) into `out`: `n` eigenvalues, then `V` row-major.
fn decompose(a: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    if !super::all_finite(a) {
        return Err(OpError::new("the matrix has a NaN or an infinite entry"));
    }
    let mut m = to_mat(a, n, n);
    for i in 0..n {
        for j in 0..i {
            let mean = 0.5 * (m[(i, j)] + m[(j, i)]);
            m[(i, j)] = mean;
            m[(j, i)] = mean;
        }
    }
    let (s, u) = self_adjoint(m.as_ref(), par)?;
    let (w, v) = out.split_at_mut(n);
    for j in 0..n {
        w[j] = s[j];
        let top = largest_entry((0..n).map(|i| u[(i, j)]));
        let flip = if u[(top, j)] < 0.0 { -1.0 } else { 1.0 };
        for i in 0..n {
            v[i * n + j] = flip * u[(i, j)] + 0.0;
        }
    }
    Ok(())
}

/// The eigenvalues and eigenvectors of the self-adjoint `m` (real
/// symmetric or complex Hermitian), by faer.
pub(super) fn self_adjoint<T: faer::traits::ComplexField>(
    m: faer::MatRef<'_, T>,
    par: Par,
) -> Result<(Diag<T>, Mat<T>), OpError> {
    let n = m.nrows();
    let mut s = Diag::<T>::zeros(n);
    let mut u = Mat::<T>::zeros(n, n);
    let mut buffer = MemBuffer::new(self_adjoint_evd_scratch::<T>(
        n,
        ComputeEigenvectors::Yes,
        par,
        Default::default(),
    ));
    self_adjoint_evd(
        m,
        s.as_mut(),
        Some(u.as_mut()),
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    )
    .map_err(|_| OpError::new("the eigenvalue iteration did not converge"))?;
    Ok((s, u))
}

impl Definition for Eigh {
    fn describe(&self) -> String {
        "eigh".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        square_dim(operands[0], "eigh")?;
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
        let input = Batched::new(operands, &[2], &leading(a))?;
        run_packed(input.count, &[n, n * n], n, |b, par, out| {
            decompose(input.core(0, b), n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let shapes = parts(&rules.shape(operands[0]));
        let n = shapes[0][shapes[0].len() - 1];
        let values = rules.unpack(node, &shapes);
        let (w, v) = (values[0], values[1]);
        let bars = rules.unpack(g, &shapes);
        let (w_bar, v_bar) = (bars[0], bars[1]);
        let f = inverse_gaps(rules, w, false);
        let vt = rules.mt(v);
        let rotated = rules.mm(vt, v_bar);
        let off = rules.mul(f, rotated);
        let on = rules.diag(w_bar, n, n);
        let inner = rules.add(off, on);
        let left = rules.mm(v, inner);
        let a_bar = rules.mm(left, vt);
        SmallVec::from_slice(&[Some(rules.symmetrize(a_bar))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let shapes = parts(&rules.shape(operands[0]));
        let values = rules.unpack(node, &shapes);
        let (w, v) = (values[0], values[1]);
        let da = rules.symmetrize(da);
        let vt = rules.mt(v);
        let right = rules.mm(da, v);
        let m = rules.mm(vt, right);
        let dw = rules.diagonal(m);
        let f = inverse_gaps(rules, w, false);
        let rotated = rules.mul(f, m);
        let dv = rules.mm(v, rotated);
        rules.pack_tangent(&[dw, dv])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let n = a[a.len() - 1] as u64;
        let count = a.iter().product::<usize>() as u64 / (n * n).max(1);
        count * 9 * n * n * n
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = shape;
        let parts = parts(operands[0]);
        crate::ir::ops::reads::per_matrix_packed(out, operands, &[2], &parts, &[1, 2], element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Eigh(self.clone());
        let node =
            crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)?;
        // One operand, so batched: the stack the packed parts come from.
        let input = graph.shape(operands[0]).clone();
        let parts = parts(&input);
        Some(crate::ir::ops::batching::repacked(
            graph, node, &parts, size,
        ))
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::eigh(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

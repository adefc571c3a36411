//! The Cholesky factor: for a symmetric positive definite `a`, the lower
//! triangular `l` with positive diagonal and `l lᵀ = a`. The factor is of
//! `(a + aᵀ) / 2`, so the derivative is symmetric and agrees with finite
//! differences in every direction.
//!
//! Rules (Murray 2016, "Differentiation of the Cholesky decomposition"),
//! with `Φ(x)` the lower triangle of `x` with its diagonal halved:
//! - forward: `dl = l Φ(l⁻¹ da l⁻ᵀ)`;
//! - reverse: `ā = sym(l⁻ᵀ Φ(lᵀ l̄) l⁻¹)`.

use super::{Batched, batch_shape, run_batch, square_dim, to_mat};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use egg::Id;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltError, cholesky_in_place, cholesky_in_place_scratch};
use faer::traits::ComplexField;
use faer::{Mat, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `cholesky`: the lower factor of each symmetric positive definite
/// matrix.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cholesky {
    /// Where it was called.
    pub site: Site,
}

/// `Φ(x)`: the lower triangle with the diagonal halved.
pub(super) fn phi(rules: &mut Rules<'_>, x: Id) -> Id {
    let lower = rules.tril(x, 0);
    let strict = rules.tril(x, -1);
    let sum = rules.add(lower, strict);
    let half = rules.num(0.5);
    rules.mul(half, sum)
}

/// Factors `m` (any field) in place: its lower triangle (which alone is
/// read) becomes the Cholesky factor, or an error names the pivot at
/// which it is not positive definite.
pub(super) fn in_place<T: ComplexField>(m: &mut Mat<T>, par: Par) -> Result<(), OpError> {
    let n = m.nrows();
    let mut buffer = MemBuffer::new(cholesky_in_place_scratch::<T>(n, par, Default::default()));
    cholesky_in_place(
        m.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    )
    .map_err(|LltError::NonPositivePivot { index }| {
        OpError::new(format!(
            "the matrix is not positive definite (pivot {index}: the leading {} x {} block is not)",
            index + 1,
            index + 1
        ))
    })?;
    Ok(())
}

/// The lower factor of the `n x n` row-major `a` (symmetrized), written
/// row-major into `out`.
fn factor(a: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    if !super::all_finite(a) {
        return Err(OpError::new(
            "the matrix has a NaN or an infinite entry".to_string(),
        ));
    }
    let mut m = to_mat(a, n, n);
    for i in 0..n {
        for j in 0..i {
            let mean = 0.5 * (m[(i, j)] + m[(j, i)]);
            m[(i, j)] = mean;
        }
    }
    in_place(&mut m, par)?;
    for i in 0..n {
        for j in 0..n {
            out[i * n + j] = if j <= i { m[(i, j)] } else { 0.0 };
        }
    }
    Ok(())
}

impl Definition for Cholesky {
    fn describe(&self) -> String {
        "cholesky".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        square_dim(operands[0], "cholesky")?;
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let n = shape[shape.len() - 1];
        let batch = batch_shape(&[shape], &[2]).map_err(|e| OpError::new(e.0))?;
        let input = Batched::new(operands, &[2], &batch)?;
        run_batch(input.count, n * n, n, shape, |b, par, out| {
            factor(input.core(0, b), n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, _operands: &[Id], g: Id) -> Pulled {
        let l = node;
        let lt = rules.mt(l);
        let ltg = rules.mm(lt, g);
        let p = phi(rules, ltg);
        // l⁻ᵀ p, then (l⁻ᵀ (l⁻ᵀ p)ᵀ)ᵀ = l⁻ᵀ p l⁻¹.
        let left = rules.triangular_solve(l, p, true, true);
        let left_t = rules.mt(left);
        let both = rules.triangular_solve(l, left_t, true, true);
        let both = rules.mt(both);
        SmallVec::from_slice(&[Some(rules.symmetrize(both))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let l = node;
        let da = rules.tangent_or_zero(operands[0], tangents[0]);
        let da = rules.symmetrize(da);
        // l⁻¹ da, then (l⁻¹ (l⁻¹ da)ᵀ)ᵀ = l⁻¹ da l⁻ᵀ.
        let left = rules.triangular_solve(l, da, true, false);
        let left_t = rules.mt(left);
        let both = rules.triangular_solve(l, left_t, true, false);
        let both = rules.mt(both);
        let p = phi(rules, both);
        rules.mm(l, p)
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        let n = shape[shape.len() - 1] as u64;
        let count = shape.iter().product::<usize>() as u64 / (n * n).max(1);
        count * n * n * n / 3
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
        let op = crate::ir::ops::Op::Cholesky(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::cholesky(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

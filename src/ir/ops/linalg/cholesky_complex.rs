//! The Cholesky factor of complex Hermitian positive definite matrices
//! held as their real and imaginary parts (two operands, `Ar` and `Ai`):
//! the lower triangular `L` with a real positive diagonal and
//! `L Lᴴ = (A + Aᴴ) / 2`, packed (all `Lr`, then all `Li`). faer's
//! complex LLᴴ factorization.
//!
//! Rules (the real ones of `cholesky` with adjoints for transposes; `Φ`
//! the lower triangle with its diagonal halved):
//! - forward: `dL = L Φ(L⁻¹ dA L⁻ᴴ)` with `dA` made Hermitian;
//! - reverse: `Ā = herm(L⁻ᴴ Φ(Lᴴ L̄) L⁻¹)`.
//!
//! The triangular solves of the rules go through the real embedding (a
//! general solve of twice the size).

use super::cholesky::phi;
use super::pairs::{self, Pair};
use super::{leading, run_on_parts, two_parts, two_parts_batched, with_core};
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TensorGraph};
use egg::Id;
use faer::{Mat, Par, c64};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `cholesky` of complex Hermitian matrices given as their two parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CholeskyComplex {
    /// Where it was called.
    pub site: Site,
}

/// The shapes of the two parts of the factors of matrices of shape `a`.
pub(crate) fn parts(a: &[usize]) -> [Shape; 2] {
    let n = a[a.len() - 1];
    let matrix = with_core(&leading(a), &[n, n]);
    [matrix.clone(), matrix]
}

/// The factor of the `n x n` row-major parts `re`, `im` (the Hermitian
/// part's lower triangle) into `out`: `Lr`, then `Li`, row-major.
fn factor(re: &[f64], im: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    super::finite_parts(re, im)?;
    let mut m = Mat::<c64>::from_fn(n, n, |i, j| match j <= i {
        true => {
            let (a, b) = (i * n + j, j * n + i);
            c64::new(0.5 * (re[a] + re[b]), 0.5 * (im[a] - im[b]))
        }
        false => c64::new(0.0, 0.0),
    });
    super::cholesky::in_place(&mut m, par)?;
    let (lr, li) = out.split_at_mut(n * n);
    for i in 0..n {
        for j in 0..n {
            let z = if j <= i {
                m[(i, j)]
            } else {
                c64::new(0.0, 0.0)
            };
            lr[i * n + j] = z.re + 0.0;
            li[i * n + j] = if i == j { 0.0 } else { z.im + 0.0 };
        }
    }
    Ok(())
}

/// `Φ` of both parts.
fn phi_pair(rules: &mut Rules<'_>, x: Pair) -> Pair {
    x.map(rules, phi)
}

/// The factor `L` of `node`.
fn factor_of(rules: &mut Rules<'_>, node: Id, a: Id) -> Pair {
    let shapes = parts(&rules.shape(a));
    let values = rules.unpack(node, &shapes);
    Pair::new(values[0], values[1])
}

impl CholeskyComplex {
    /// The shapes of the packed results for matrices of shape `a`.
    pub fn parts(a: &[usize]) -> Vec<Shape> {
        parts(a).to_vec()
    }
}

impl Definition for CholeskyComplex {
    fn describe(&self) -> String {
        "cholesky-complex".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        two_parts(operands, "cholesky")?;
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
        run_on_parts(operands, &[n * n, n * n], n, |re, im, par, out| {
            factor(re, im, n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let l = factor_of(rules, node, operands[0]);
        let shapes = parts(&rules.shape(operands[0]));
        let bars = rules.unpack(g, &shapes);
        let l_bar = Pair::new(bars[0], bars[1]);
        let lh = pairs::adjoint(rules, l);
        let inner = pairs::product(rules, lh, l_bar);
        let p = phi_pair(rules, inner);
        let left = pairs::solve(rules, l, p, true, self.site);
        let both = pairs::solve_right(rules, left, l, false, self.site);
        let a_bar = pairs::hermitian_part(rules, both);
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
        let l = factor_of(rules, node, operands[0]);
        let da = pairs::hermitian_part(rules, da);
        let left = pairs::solve(rules, l, da, false, self.site);
        let both = pairs::solve_right(rules, left, l, true, self.site);
        let p = phi_pair(rules, both);
        let dl = pairs::product(rules, l, p);
        rules.pack_tangent(&[dl.re, dl.im])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        let a = operands[0];
        let n = a[a.len() - 1] as u64;
        let count = a.iter().product::<usize>() as u64 / (n * n).max(1);
        count * 4 * n * n * n / 3
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = Op::CholeskyComplex(self.clone());
        two_parts_batched(graph, op, operands, batched, size, |a| parts(a).to_vec())
    }

    fn site(&self) -> Site {
        self.site
    }
}

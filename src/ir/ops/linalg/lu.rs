//! The LU factorization with partial pivoting of one square matrix (faer),
//! shared by the general solve and the determinants (the sign of the row
//! permutation, the pivots' signs and logarithms).

use super::to_mat;
use crate::ir::ops::OpError;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::{factor, solve};
use faer::perm::PermRef;
use faer::{Conj, Mat, MatMut, Par};

/// `p a = l u` of one matrix: `l` unit lower and `u` upper, stored in one
/// matrix.
pub(crate) struct Lu {
    lu: Mat<f64>,
    forward: Vec<usize>,
    backward: Vec<usize>,
}

impl Lu {
    /// Factors the `n x n` row-major `a`.
    pub fn new(a: &[f64], n: usize, par: Par) -> Result<Lu, OpError> {
        if !super::all_finite(a) {
            return Err(OpError::new("the matrix has a NaN or an infinite entry"));
        }
        let mut lu = to_mat(a, n, n);
        let mut forward = vec![0usize; n];
        let mut backward = vec![0usize; n];
        let mut buffer = MemBuffer::new(factor::lu_in_place_scratch::<usize, f64>(
            n,
            n,
            par,
            Default::default(),
        ));
        factor::lu_in_place(
            lu.as_mut(),
            &mut forward,
            &mut backward,
            par,
            MemStack::new(&mut buffer),
            Default::default(),
        );
        Ok(Lu {
            lu,
            forward,
            backward,
        })
    }

    /// The diagonal of `u`.
    pub fn pivots(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.lu.nrows()).map(|i| self.lu[(i, i)])
    }

    /// The sign of the row permutation: `(-1)^(transpositions)`, from its
    /// cycles (a cycle of length `l` is `l - 1` transpositions).
    pub fn permutation_sign(&self) -> f64 {
        let n = self.forward.len();
        let mut seen = vec![false; n];
        let mut transpositions = 0usize;
        for start in 0..n {
            let mut at = start;
            let mut length = 0usize;
            while !seen[at] {
                seen[at] = true;
                at = self.forward[at];
                length += 1;
            }
            transpositions += length.saturating_sub(1);
        }
        if transpositions.is_multiple_of(2) {
            1.0
        } else {
            -1.0
        }
    }

    /// The determinant's sign (0 for a singular matrix) and the logarithm
    /// of its absolute value (`-inf` for a singular matrix), so that very
    /// large or small determinants keep their digits.
    pub fn sign_and_log(&self) -> (f64, f64) {
        let mut sign = self.permutation_sign();
        let mut log = 0.0;
        for p in self.pivots() {
            if p == 0.0 {
                return (0.0, f64::NEG_INFINITY);
            }
            sign *= p.signum();
            log += p.abs().ln();
        }
        (sign, log)
    }

    /// The determinant: the permutation's sign times the pivots' product;
    /// exactly 0 from the first zero pivot on (the factorization divides
    /// by that pivot, so the pivots after it may be NaN).
    pub fn determinant(&self) -> f64 {
        let mut product = self.permutation_sign();
        for p in self.pivots() {
            if p == 0.0 {
                return 0.0;
            }
            product *= p;
        }
        product
    }

    /// The first zero pivot, if the matrix is singular.
    pub fn zero_pivot(&self) -> Option<usize> {
        self.pivots().position(|p| p == 0.0)
    }

    /// Solves `a x = rhs` (`aᵀ x = rhs` when `transpose`) in place.
    pub fn solve_in_place(&self, rhs: MatMut<'_, f64>, transpose: bool, par: Par) {
        let n = self.lu.nrows();
        let k = rhs.ncols();
        let perm = PermRef::new_checked(&self.forward, &self.backward, n);
        let lu = self.lu.as_ref();
        if transpose {
            let mut buffer = MemBuffer::new(solve::solve_transpose_in_place_scratch::<usize, f64>(
                n, k, par,
            ));
            solve::solve_transpose_in_place_with_conj(
                lu,
                lu,
                perm,
                Conj::No,
                rhs,
                par,
                MemStack::new(&mut buffer),
            );
        } else {
            let mut buffer = MemBuffer::new(solve::solve_in_place_scratch::<usize, f64>(n, k, par));
            solve::solve_in_place_with_conj(
                lu,
                lu,
                perm,
                Conj::No,
                rhs,
                par,
                MemStack::new(&mut buffer),
            );
        }
    }
}

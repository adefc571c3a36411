//! What the rules of the spectral factorizations (`eigh`, `svd`) and the
//! determinants share: the matrix of inverse gaps between eigenvalues (or
//! squared singular values) with (near-)equal pairs masked to zero, the
//! masked inverse of singular values, vectors as rows or columns of
//! matrices, and the sign convention of their kernels.
//!
//! Masking is what makes derivatives at degenerate points finite: where
//! two eigenvalues are equal (to within rounding of the factorization,
//! [`GAP_TOLERANCE`] times the largest magnitude per dimension) the
//! eigenvectors are only defined up to a rotation within their
//! eigenspace and `1 / (w_j - w_i)` does not exist. With the pair's entry
//! set to 0 the derivative is finite, never NaN, and exact for functions
//! of the eigenvalues (or singular values) alone and for vectors of
//! simple eigenvalues. It is not the derivative of every function that is
//! invariant to the rotation: for `V diag(f(w)) Vᵀ` the pair contributes
//! the limit of `(f(w_j) - f(w_i)) / (w_j - w_i)`, which a rule that sees
//! only the cotangents cannot know, and masking drops it (at `a = I`,
//! `sum(V diag(w) Vᵀ)` gets gradient `I` instead of all ones).

use crate::ir::math::language::Math;
use crate::ir::op::ReduceOp;
use crate::ir::ops::Rules;
use crate::ir::{CmpOp, TOp};
use egg::Id;
use smallvec::SmallVec;

/// Two eigenvalues (singular values) closer than this many units of
/// rounding, relative to the largest magnitude and per matrix dimension,
/// count as equal.
pub(crate) const GAP_TOLERANCE: f64 = 16.0 * f64::EPSILON;

/// The vectors `v` (`[.., k]`) as rows (`[.., 1, k]`).
pub(crate) fn as_row(rules: &mut Rules<'_>, v: Id) -> Id {
    let mut shape = rules.shape(v);
    let k = shape.pop().unwrap_or(1);
    shape.push(1);
    shape.push(k);
    rules.reshape(v, &shape)
}

/// The vectors `v` (`[.., k]`) as columns (`[.., k, 1]`).
pub(crate) fn as_column(rules: &mut Rules<'_>, v: Id) -> Id {
    let mut shape = rules.shape(v);
    shape.push(1);
    rules.reshape(v, &shape)
}

/// Per-stack numbers `x` (`[..]`) as `[.., 1, 1]`, to scale matrices.
pub(crate) fn as_scale(rules: &mut Rules<'_>, x: Id) -> Id {
    let mut shape = rules.shape(x);
    shape.push(1);
    shape.push(1);
    rules.reshape(x, &shape)
}

/// The sum over the last two axes.
pub(crate) fn sum_matrix(rules: &mut Rules<'_>, x: Id) -> Id {
    let rank = rules.rank(x);
    rules.sum_axes(x, &[rank - 2, rank - 1], false)
}

/// The `n x n` identity.
pub(crate) fn eye(rules: &mut Rules<'_>, n: usize) -> Id {
    let ones = rules.graph.full(1.0, &[n]);
    rules.diag(ones, n, n)
}

/// The largest magnitude of each vector of `v` (`[.., k]`), as
/// `[.., 1, 1]`.
fn largest(rules: &mut Rules<'_>, v: Id) -> Id {
    let rank = rules.rank(v);
    let magnitude = rules.map1(Math::Abs([Id::from(0)]), v);
    let axes: SmallVec<[u8; 4]> = SmallVec::from_slice(&[(rank - 1) as u8]);
    let top = rules.graph.add_valid(
        TOp::Reduce {
            op: ReduceOp::Max,
            axes,
            keepdims: false,
        },
        &[magnitude],
    );
    as_scale(rules, top)
}

/// `where(|x| > tol, 1 / x, 0)`, never dividing by a masked entry (so no
/// infinity appears, in values or in derivatives).
fn masked_reciprocal(rules: &mut Rules<'_>, x: Id, tol: Id) -> Id {
    let magnitude = rules.map1(Math::Abs([Id::from(0)]), x);
    let keep = rules
        .graph
        .add_valid(TOp::Compare(CmpOp::Gt), &[magnitude, tol]);
    let (zero, one) = (rules.num(0.0), rules.num(1.0));
    let safe = rules.select(keep, x, one);
    let inverse = rules.div(one, safe);
    rules.select(keep, inverse, zero)
}

/// `F` with `F_ij = 1 / (w_j - w_i)` (or `1 / (w_j² - w_i²)` when
/// `squares`) for the vectors `w` (`[.., k]`), as `[.., k, k]`; the
/// diagonal and (near-)equal pairs are 0.
pub(crate) fn inverse_gaps(rules: &mut Rules<'_>, w: Id, squares: bool) -> Id {
    let k = rules.shape(w).last().copied().unwrap_or(0);
    let row = as_row(rules, w);
    let column = as_column(rules, w);
    let difference = rules.sub(row, column);
    let (gaps, scale) = if squares {
        let sum = rules.add(row, column);
        let gaps = rules.mul(sum, difference);
        let top = largest(rules, w);
        (gaps, rules.mul(top, top))
    } else {
        (difference, largest(rules, w))
    };
    let factor = rules.num(GAP_TOLERANCE * k.max(1) as f64);
    let tol = rules.mul(factor, scale);
    masked_reciprocal(rules, gaps, tol)
}

/// `1 / s` for singular values `s` (`[.., k]`) of `rows x cols`
/// matrices, 0 where `s` is below the rank tolerance (`max(rows, cols)`
/// units of rounding of the largest).
pub(crate) fn inverse_singular(rules: &mut Rules<'_>, s: Id, rows: usize, cols: usize) -> Id {
    let top = largest(rules, s);
    let factor = rules.num(GAP_TOLERANCE * rows.max(cols).max(1) as f64);
    let tol = rules.mul(factor, top);
    // `largest` is `[.., 1, 1]`; the singular values stay `[.., k]`.
    let shape = rules.shape(s);
    let mut tol_shape = shape.clone();
    if let Some(last) = tol_shape.last_mut() {
        *last = 1;
    }
    let tol = rules.reshape(tol, &tol_shape);
    masked_reciprocal(rules, s, tol)
}

/// The index of the entry of largest magnitude (the first of equals).
pub(crate) fn largest_entry(values: impl Iterator<Item = f64>) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (i, x) in values.enumerate() {
        if x.abs() > best.1 {
            best = (i, x.abs());
        }
    }
    best.0
}

//! The matrix algebra of complex matrices held as their real and
//! imaginary parts (design decision 18), for the rules of the operations
//! on two parts (`eigh_hermitian`, `slogdet_complex`, `cholesky_complex`,
//! `qr_complex`, `svd_complex`): products, adjoints, Hermitian and
//! triangular parts, solves through the real embedding, and the phase
//! each factorization fixes on its vectors.
//!
//! The rules are linear maps of pairs and their adjoints under the real
//! inner product `<x, y> = Re tr(xᴴ y) = sum(xr yr + xi yi)`, so a
//! cotangent pair is the gradient with respect to the two parts.

use crate::ir::TOp;
use crate::ir::ops::{Op, Rules, Site};
use egg::Id;

/// A complex matrix (or stack of them) as two real nodes.
#[derive(Clone, Copy)]
pub(crate) struct Pair {
    /// The real part.
    pub re: Id,
    /// The imaginary part.
    pub im: Id,
}

impl Pair {
    /// The pair of `re` and `im`.
    pub fn new(re: Id, im: Id) -> Pair {
        Pair { re, im }
    }

    /// A real linear map applied to both parts (a triangle, a transpose,
    /// a slice).
    pub fn map(self, rules: &mut Rules<'_>, f: impl Fn(&mut Rules<'_>, Id) -> Id) -> Pair {
        let re = f(rules, self.re);
        let im = f(rules, self.im);
        Pair { re, im }
    }
}

/// `a + b`.
pub(crate) fn add(rules: &mut Rules<'_>, a: Pair, b: Pair) -> Pair {
    Pair {
        re: rules.add(a.re, b.re),
        im: rules.add(a.im, b.im),
    }
}

/// `a - b`.
pub(crate) fn sub(rules: &mut Rules<'_>, a: Pair, b: Pair) -> Pair {
    Pair {
        re: rules.sub(a.re, b.re),
        im: rules.sub(a.im, b.im),
    }
}

/// `r ∘ a` for a real `r` (broadcasting).
pub(crate) fn scaled(rules: &mut Rules<'_>, r: Id, a: Pair) -> Pair {
    Pair {
        re: rules.mul(r, a.re),
        im: rules.mul(r, a.im),
    }
}

/// `a b`.
pub(crate) fn product(rules: &mut Rules<'_>, a: Pair, b: Pair) -> Pair {
    let rr = rules.mm(a.re, b.re);
    let ii = rules.mm(a.im, b.im);
    let ri = rules.mm(a.re, b.im);
    let ir = rules.mm(a.im, b.re);
    Pair {
        re: rules.sub(rr, ii),
        im: rules.add(ri, ir),
    }
}

/// `aᴴ`.
pub(crate) fn adjoint(rules: &mut Rules<'_>, a: Pair) -> Pair {
    let re = rules.mt(a.re);
    let im = rules.mt(a.im);
    Pair {
        re,
        im: rules.neg(im),
    }
}

/// `(x + xᴴ) / 2`.
pub(crate) fn hermitian_part(rules: &mut Rules<'_>, x: Pair) -> Pair {
    let re = rules.symmetrize(x.re);
    let t = rules.mt(x.im);
    let d = rules.sub(x.im, t);
    let half = rules.num(0.5);
    Pair {
        re,
        im: rules.mul(d, half),
    }
}

/// `i diag(Im diag(x))`: the imaginary parts of the diagonals, as
/// matrices of `k x k` (real part zero).
pub(crate) fn imaginary_diagonal(rules: &mut Rules<'_>, x: Pair, k: usize) -> Pair {
    let im = rules.diagonal(x.im);
    let im = rules.diag(im, k, k);
    Pair {
        re: zeros_like(rules, im),
        im,
    }
}

/// The sum over the rows of each matrix (`[.., n, n]` to `[.., 1, n]`).
pub(crate) fn column_sums(rules: &mut Rules<'_>, x: Id) -> Id {
    let rank = rules.rank(x);
    rules.sum_axes(x, &[rank - 2], true)
}

/// Rows (`axis` = rank - 2) or columns (rank - 1) `start..end`.
fn cut(rules: &mut Rules<'_>, x: Id, from_end: usize, start: usize, end: usize) -> Id {
    let axis = (rules.rank(x) - from_end) as u8;
    rules.graph.add_valid(TOp::Slice { axis, start, end }, &[x])
}

/// `x` and `y` joined along the axis `from_end` places from the end.
fn joined(rules: &mut Rules<'_>, x: Id, y: Id, from_end: usize) -> Id {
    let axis = (rules.rank(x) - from_end) as u8;
    rules.graph.add_valid(TOp::Concat(axis), &[x, y])
}

/// The real embedding `[[ar, -ai], [ai, ar]]` of the square `a`.
pub(crate) fn embedding(rules: &mut Rules<'_>, a: Pair) -> Id {
    let minus = rules.neg(a.im);
    let top = joined(rules, a.re, minus, 1);
    let bottom = joined(rules, a.im, a.re, 1);
    joined(rules, top, bottom, 2)
}

/// `a⁻¹ b`, or `a⁻ᴴ b` when `adjoint`, for a square complex `a` and a
/// stack of complex matrices `b`: the real solve of the embedding (whose
/// transpose embeds `aᴴ`), failing at `site` when `a` is singular. A
/// triangular `a` costs a general solve of twice its size.
pub(crate) fn solve(rules: &mut Rules<'_>, a: Pair, b: Pair, adjoint: bool, site: Site) -> Pair {
    let n = rules.shape(a.re).last().copied().unwrap_or(0);
    let m = embedding(rules, a);
    let rhs = joined(rules, b.re, b.im, 2);
    let x = rules.op(
        Op::Solve(super::Solve {
            transpose: adjoint,
            vector: false,
            site,
        }),
        &[m, rhs],
    );
    Pair {
        re: cut(rules, x, 2, 0, n),
        im: cut(rules, x, 2, n, 2 * n),
    }
}

/// `b a⁻¹` (or `b a⁻ᴴ` when `adjoint`): `(a⁻ᴴ bᴴ)ᴴ`.
pub(crate) fn solve_right(
    rules: &mut Rules<'_>,
    b: Pair,
    a: Pair,
    adjoint_a: bool,
    site: Site,
) -> Pair {
    let bh = adjoint(rules, b);
    let x = solve(rules, a, bh, !adjoint_a, site);
    adjoint(rules, x)
}

/// Zeros of the shape of `x`.
pub(crate) fn zeros_like(rules: &mut Rules<'_>, x: Id) -> Id {
    let shape = rules.shape(x);
    rules.graph.full(0.0, &shape)
}

/// The phase each vector of `v` (the columns) is kept at: its pivot
/// entry (one-hot in `pivots`) real. For the tangent `dv` of vectors
/// whose phases are free, `c = Im(dv_p) / v_p` per column (`[.., 1, k]`):
/// the tangent of the function is `dv - i c v`.
pub(crate) fn phase_turn(rules: &mut Rules<'_>, v: Pair, pivots: Id, dv: Pair) -> Id {
    let at_pivot = rules.mul(pivots, dv.im);
    let top = column_sums(rules, at_pivot);
    let pivot_re = rules.mul(pivots, v.re);
    let values = column_sums(rules, pivot_re);
    rules.div(top, values)
}

/// `dx - i c x` for turns `c` (`[.., 1, k]`) per column of `x`.
pub(crate) fn turned(rules: &mut Rules<'_>, dx: Pair, c: Id, x: Pair) -> Pair {
    let c_im = rules.mul(c, x.im);
    let c_re = rules.mul(c, x.re);
    Pair {
        re: rules.add(dx.re, c_im),
        im: rules.sub(dx.im, c_re),
    }
}

/// The adjoint of `c -> -i c x` for cotangent `x̄`: per column,
/// `sum_i (x̄r xi - x̄i xr)` (`[.., 1, k]`).
pub(crate) fn turn_cotangent(rules: &mut Rules<'_>, x_bar: Pair, x: Pair) -> Id {
    let a = rules.mul(x_bar.re, x.im);
    let b = rules.mul(x_bar.im, x.re);
    let d = rules.sub(a, b);
    column_sums(rules, d)
}

/// The adjoint of `phase_turn`'s `c` for its cotangent `c̄`: added to
/// the imaginary part of the free tangent's cotangent at the pivots.
pub(crate) fn turn_pushed(rules: &mut Rules<'_>, v: Pair, pivots: Id, c_bar: Id) -> Id {
    let at_pivot = rules.mul(pivots, v.re);
    let values = column_sums(rules, at_pivot);
    let per_pivot = rules.div(c_bar, values);
    rules.mul(pivots, per_pivot)
}

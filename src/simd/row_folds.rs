//! Folds of rows (largest, smallest element; sum, product) in AVX-512
//! intrinsics.
//!
//! The CPU backend's `reduce` folds rows with portable loops that the
//! compiler vectorizes; for short rows and for extremes that leaves two
//! costs it does not remove: combining the lanes of a row at its end one
//! after another, and rows shorter than a vector. Here rows of eight
//! numbers are folded eight at a time by a transposing network (each step
//! one vector operation over eight rows) that adds the numbers of a row in
//! exactly the order of `reduce`'s eight-lane fold, `((x0 + x4) + (x1 +
//! x5)) + ((x2 + x6) + (x3 + x7))` after each is combined with the
//! identity, so sums and products have the same bits either way. The
//! largest or smallest element of longer rows is folded in four vectors
//! combined as a tree (three shuffles); extremes do not depend on the
//! order, so those are the results of `reduce`'s loops (a NaN anywhere in
//! a row gives NaN; between `0.0` and `-0.0` either may be returned, as
//! there).
//!
//! `KIND` names the fold: `MAX`, `MIN`, `SUM` or `PRODUCT`. Used only
//! where the host has AVX-512F (`available`); elsewhere the portable loops
//! run.

/// The largest element.
pub(crate) const MAX: u8 = 0;
/// The smallest element.
pub(crate) const MIN: u8 = 1;
/// The sum.
pub(crate) const SUM: u8 = 2;
/// The product.
pub(crate) const PRODUCT: u8 = 3;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512d, _CMP_UNORD_Q, _mm512_add_pd, _mm512_cmp_pd_mask, _mm512_cvtsd_f64, _mm512_loadu_pd,
    _mm512_mask_blend_pd, _mm512_mask_loadu_pd, _mm512_max_pd, _mm512_min_pd, _mm512_mul_pd,
    _mm512_permute_pd, _mm512_permutexvar_pd, _mm512_set1_pd, _mm512_setr_epi64,
    _mm512_shuffle_f64x2, _mm512_storeu_pd, _mm512_unpackhi_pd, _mm512_unpacklo_pd,
};

/// Whether this host runs the kernels of this module.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out[o]` = the largest (`KIND` = `MAX`) or smallest (`MIN`) element of
/// row `o` of `values` (rows of `len` > 0 numbers). Call only where
/// `available()`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn rows<const KIND: u8>(out: &mut [f64], values: &[f64], len: usize) {
    assert!(available(), "AVX-512 kernels on a host without AVX-512F");
    assert!(
        KIND == MAX || KIND == MIN,
        "long rows are folded for extremes only"
    );
    // SAFETY: the host has AVX-512F, checked just above.
    unsafe { rows_avx512::<KIND>(out, values, len) }
}

/// `out[o]` = the fold (`KIND`) of row `o` of `values`, rows of eight
/// numbers, for the first multiple of eight rows; returns how many rows
/// it folded (the caller folds the others). Call only where
/// `available()`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn rows_of_eight<const KIND: u8>(out: &mut [f64], values: &[f64]) -> usize {
    assert!(available(), "AVX-512 kernels on a host without AVX-512F");
    // SAFETY: the host has AVX-512F, checked just above.
    unsafe { blocks_of_eight::<KIND>(out, values) }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn rows<const KIND: u8>(_: &mut [f64], _: &[f64], _: usize) {
    unreachable!("AVX-512 kernels are used only where available() holds");
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn rows_of_eight<const KIND: u8>(_: &mut [f64], _: &[f64]) -> usize {
    unreachable!("AVX-512 kernels are used only where available() holds");
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn rows_avx512<const KIND: u8>(out: &mut [f64], values: &[f64], len: usize) {
    let rows = out.len().min(values.len() / len);
    let o = if len == 8 {
        blocks_of_eight::<KIND>(out, values)
    } else {
        0
    };
    for (o, row) in out[o..rows]
        .iter_mut()
        .zip(values[o * len..rows * len].chunks_exact(len))
    {
        *o = row_extreme::<KIND>(row);
    }
}

/// Eight rows of eight numbers at a time, as long as whole blocks last;
/// the number of rows folded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn blocks_of_eight<const KIND: u8>(out: &mut [f64], values: &[f64]) -> usize {
    let rows = out.len().min(values.len() / 8);
    let mut o = 0;
    while o + 8 <= rows {
        let block: &[f64; 64] = values[o * 8..o * 8 + 64]
            .try_into()
            .expect("eight rows of eight numbers");
        let target: &mut [f64; 8] = (&mut out[o..o + 8]).try_into().expect("eight results");
        eight_rows_of_eight::<KIND>(block, target);
        o += 8;
    }
    o
}

/// The identity of the fold: -inf for the largest, +inf for the
/// smallest, 0 for sums, 1 for products.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn identity<const KIND: u8>() -> f64 {
    match KIND {
        MAX => f64::NEG_INFINITY,
        MIN => f64::INFINITY,
        SUM => 0.0,
        _ => 1.0,
    }
}

/// Lane by lane, `acc` combined with `x`: the larger (smaller), NaN where
/// either is; or the sum, or the product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn pick<const KIND: u8>(acc: __m512d, x: __m512d) -> __m512d {
    match KIND {
        SUM => _mm512_add_pd(acc, x),
        PRODUCT => _mm512_mul_pd(acc, x),
        _ => {
            // max_pd(a, b) gives b where either is NaN: a NaN in x comes
            // through; one already in acc is put back by the blend.
            let picked = if KIND == MAX {
                _mm512_max_pd(acc, x)
            } else {
                _mm512_min_pd(acc, x)
            };
            let acc_nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(acc, acc);
            _mm512_mask_blend_pd(acc_nan, picked, acc)
        }
    }
}

/// The extreme of the eight lanes of `v`: halves, then quarters, then pairs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn across<const KIND: u8>(v: __m512d) -> f64 {
    let v = pick::<KIND>(v, _mm512_shuffle_f64x2::<0b01_00_11_10>(v, v));
    let v = pick::<KIND>(v, _mm512_shuffle_f64x2::<0b10_11_00_01>(v, v));
    let v = pick::<KIND>(v, _mm512_permute_pd::<0b0101_0101>(v));
    _mm512_cvtsd_f64(v)
}

/// The extreme of one row: four vectors of lanes, a masked load for the
/// last few numbers, the vectors combined as a tree.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn row_extreme<const KIND: u8>(row: &[f64]) -> f64 {
    let init = _mm512_set1_pd(identity::<KIND>());
    let (mut a, mut b, mut c, mut d) = (init, init, init, init);
    let mut blocks = row.chunks_exact(32);
    for block in &mut blocks {
        // SAFETY: each load reads eight numbers inside `block` (32 long).
        unsafe {
            a = pick::<KIND>(a, _mm512_loadu_pd(block.as_ptr()));
            b = pick::<KIND>(b, _mm512_loadu_pd(block.as_ptr().add(8)));
            c = pick::<KIND>(c, _mm512_loadu_pd(block.as_ptr().add(16)));
            d = pick::<KIND>(d, _mm512_loadu_pd(block.as_ptr().add(24)));
        }
    }
    let mut eights = blocks.remainder().chunks_exact(8);
    for eight in &mut eights {
        // SAFETY: the load reads the eight numbers of `eight`.
        a = pick::<KIND>(a, unsafe { _mm512_loadu_pd(eight.as_ptr()) });
    }
    let rest = eights.remainder();
    if !rest.is_empty() {
        let mask = (1u8 << rest.len()) - 1;
        // SAFETY: the mask reads only the `rest.len()` (< 8) numbers of
        // `rest`; the other lanes are the identity.
        b = pick::<KIND>(b, unsafe {
            _mm512_mask_loadu_pd(init, mask, rest.as_ptr())
        });
    }
    across::<KIND>(pick::<KIND>(pick::<KIND>(a, b), pick::<KIND>(c, d)))
}

/// The folds of eight rows of eight numbers, each row combined as
/// `((x0 + x4) + (x1 + x5)) + ((x2 + x6) + (x3 + x7))` (after combining
/// each number with the identity): level 1 combines the halves of two
/// rows, level 2 neighbouring lanes of two such pairs, level 3 the
/// remaining two partial results of every row; a last permutation puts
/// row `r`'s result in lane `r`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn eight_rows_of_eight<const KIND: u8>(block: &[f64; 64], out: &mut [f64; 8]) {
    let init = _mm512_set1_pd(identity::<KIND>());
    // SAFETY: each load reads eight numbers inside `block` (64 long).
    let row = |r: usize| pick::<KIND>(init, unsafe { _mm512_loadu_pd(block.as_ptr().add(8 * r)) });
    // Level 1: [a0+a4, a1+a5, a2+a6, a3+a7 | b0+b4, ...] for rows a, b.
    let halves = |a: __m512d, b: __m512d| {
        pick::<KIND>(
            _mm512_shuffle_f64x2::<0b01_00_01_00>(a, b),
            _mm512_shuffle_f64x2::<0b11_10_11_10>(a, b),
        )
    };
    let h01 = halves(row(0), row(1));
    let h23 = halves(row(2), row(3));
    let h45 = halves(row(4), row(5));
    let h67 = halves(row(6), row(7));
    // Level 2: lanes (0, 1) and (2, 3) of each row: chunk c of the result
    // holds [row of a, row of b] for (a, b) = the pairs' rows.
    let neighbours =
        |a: __m512d, b: __m512d| pick::<KIND>(_mm512_unpacklo_pd(a, b), _mm512_unpackhi_pd(a, b));
    // Chunks: [r0 r2 (t01) | r0 r2 (t23) | r1 r3 (t01) | r1 r3 (t23)].
    let n0 = neighbours(h01, h23);
    let n1 = neighbours(h45, h67);
    // Level 3: t01 + t23 of every row: lanes [r0 r2 r1 r3 r4 r6 r5 r7].
    let all = pick::<KIND>(
        _mm512_shuffle_f64x2::<0b10_00_10_00>(n0, n1),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(n0, n1),
    );
    let order = _mm512_setr_epi64(0, 2, 1, 3, 4, 6, 5, 7);
    let all = _mm512_permutexvar_pd(order, all);
    // SAFETY: the store writes the eight numbers of `out`.
    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), all) };
}

#[cfg(test)]
mod tests {
    use super::{MAX, MIN, PRODUCT, SUM, available, rows, rows_of_eight};
    use crate::scalar::{nan_max, nan_min};

    /// Rows of every length up to 70 (and eight-number rows in blocks of
    /// eight and a few left over), NaN and infinities among them, against
    /// a plain fold.
    #[test]
    fn row_extremes_match_a_plain_fold() {
        if !available() {
            eprintln!("skipped: no AVX-512F on this host");
            return;
        }
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in 1..=70 {
            for rows_count in [1, 7, 8, 9, 17, 64] {
                let values: Vec<f64> = (0..len * rows_count)
                    .map(|_| match next() % 97 {
                        0 => f64::NAN,
                        1 => f64::INFINITY,
                        2 => f64::NEG_INFINITY,
                        k => (k as f64 - 50.0) * 0.37,
                    })
                    .collect();
                let mut got_max = vec![0.0; rows_count];
                let mut got_min = vec![0.0; rows_count];
                rows::<MAX>(&mut got_max, &values, len);
                rows::<MIN>(&mut got_min, &values, len);
                for (r, row) in values.chunks_exact(len).enumerate() {
                    let want_max = row.iter().fold(f64::NEG_INFINITY, |a, &b| nan_max(a, b));
                    let want_min = row.iter().fold(f64::INFINITY, |a, &b| nan_min(a, b));
                    for (got, want) in [(got_max[r], want_max), (got_min[r], want_min)] {
                        assert!(
                            got == want || (got.is_nan() && want.is_nan()),
                            "len {len}, row {r}: got {got}, want {want} in {row:?}"
                        );
                    }
                }
            }
        }
    }

    /// Sums and products of rows of eight have the bits of the eight-lane
    /// fold (`((x0 + x4) + (x1 + x5)) + ((x2 + x6) + (x3 + x7))`, each
    /// number first combined with the identity), -0.0 and NaN included.
    #[test]
    fn sums_and_products_of_rows_of_eight_have_the_lane_folds_bits() {
        if !available() {
            eprintln!("skipped: no AVX-512F on this host");
            return;
        }
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let values: Vec<f64> = (0..8 * 69)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match state % 53 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => f64::INFINITY,
                    k => (k as f64 - 26.0) * 0.1 + (state % 1000) as f64 * 1e-7,
                }
            })
            .collect();
        let lanes = |row: &[f64], init: f64, op: fn(f64, f64) -> f64| {
            let x: Vec<f64> = row.iter().map(|&v| op(init, v)).collect();
            op(
                op(op(x[0], x[4]), op(x[1], x[5])),
                op(op(x[2], x[6]), op(x[3], x[7])),
            )
        };
        let mut sums = vec![0.0; 69];
        let mut products = vec![0.0; 69];
        assert_eq!(rows_of_eight::<SUM>(&mut sums, &values), 64);
        assert_eq!(rows_of_eight::<PRODUCT>(&mut products, &values), 64);
        for (r, row) in values.chunks_exact(8).take(64).enumerate() {
            let want_sum = lanes(row, 0.0, |a, b| a + b);
            let want_product = lanes(row, 1.0, |a, b| a * b);
            for (got, want) in [(sums[r], want_sum), (products[r], want_product)] {
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "row {r}: got {got:e}, want {want:e} in {row:?}"
                );
            }
        }
    }
}

//! The largest or smallest element of each row, in AVX-512 intrinsics.
//!
//! The CPU backend's `reduce` folds rows with portable loops that the compiler vectorizes;
//! for `max` and `min` that leaves two costs it does not remove: combining
//! the lanes of a row at its end one after another, and rows shorter than
//! a vector. Here a row is folded in four vectors, combined as a tree
//! (three shuffles); rows of eight numbers are folded eight at a time by a
//! transposing network, so each step is one vector operation over eight
//! rows. Extremes do not depend on the order, so the results are those of
//! `reduce`'s loops (a NaN anywhere in a row gives NaN; between `0.0` and
//! `-0.0`, either may be returned, as there).
//!
//! Used only where the host has AVX-512F (`available`); elsewhere the
//! portable loops run.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512d, _CMP_UNORD_Q, _mm512_cmp_pd_mask, _mm512_cvtsd_f64, _mm512_loadu_pd,
    _mm512_mask_blend_pd, _mm512_mask_loadu_pd, _mm512_max_pd, _mm512_min_pd, _mm512_permute_pd,
    _mm512_set1_pd, _mm512_shuffle_f64x2, _mm512_storeu_pd, _mm512_unpackhi_pd, _mm512_unpacklo_pd,
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

/// `out[o]` = the largest (`MAX`) or smallest element of row `o` of
/// `values` (rows of `len` > 0 numbers). Call only where `available()`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn rows<const MAX: bool>(out: &mut [f64], values: &[f64], len: usize) {
    assert!(available(), "AVX-512 kernels on a host without AVX-512F");
    // SAFETY: the host has AVX-512F, checked just above.
    unsafe { rows_avx512::<MAX>(out, values, len) }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn rows<const MAX: bool>(_: &mut [f64], _: &[f64], _: usize) {
    unreachable!("AVX-512 kernels are used only where available() holds");
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn rows_avx512<const MAX: bool>(out: &mut [f64], values: &[f64], len: usize) {
    let rows = out.len().min(values.len() / len);
    let mut o = 0;
    if len == 8 {
        while o + 8 <= rows {
            let block: &[f64; 64] = values[o * 8..o * 8 + 64]
                .try_into()
                .expect("eight rows of eight numbers");
            let target: &mut [f64; 8] = (&mut out[o..o + 8]).try_into().expect("eight results");
            eight_rows_of_eight::<MAX>(block, target);
            o += 8;
        }
    }
    for (o, row) in out[o..rows]
        .iter_mut()
        .zip(values[o * len..rows * len].chunks_exact(len))
    {
        *o = row_extreme::<MAX>(row);
    }
}

/// The identity of the fold: -inf for the largest, +inf for the smallest.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn identity<const MAX: bool>() -> f64 {
    if MAX {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    }
}

/// Lane by lane, the larger (smaller) of `acc` and `x`, NaN where either is.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn pick<const MAX: bool>(acc: __m512d, x: __m512d) -> __m512d {
    // max_pd(a, b) gives b where either is NaN: a NaN in x comes through;
    // one already in acc is put back by the blend.
    let picked = if MAX {
        _mm512_max_pd(acc, x)
    } else {
        _mm512_min_pd(acc, x)
    };
    let acc_nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(acc, acc);
    _mm512_mask_blend_pd(acc_nan, picked, acc)
}

/// The extreme of the eight lanes of `v`: halves, then quarters, then pairs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn across<const MAX: bool>(v: __m512d) -> f64 {
    let v = pick::<MAX>(v, _mm512_shuffle_f64x2::<0b01_00_11_10>(v, v));
    let v = pick::<MAX>(v, _mm512_shuffle_f64x2::<0b10_11_00_01>(v, v));
    let v = pick::<MAX>(v, _mm512_permute_pd::<0b0101_0101>(v));
    _mm512_cvtsd_f64(v)
}

/// The extreme of one row: four vectors of lanes, a masked load for the
/// last few numbers, the vectors combined as a tree.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn row_extreme<const MAX: bool>(row: &[f64]) -> f64 {
    let init = _mm512_set1_pd(identity::<MAX>());
    let (mut a, mut b, mut c, mut d) = (init, init, init, init);
    let mut blocks = row.chunks_exact(32);
    for block in &mut blocks {
        // SAFETY: each load reads eight numbers inside `block` (32 long).
        unsafe {
            a = pick::<MAX>(a, _mm512_loadu_pd(block.as_ptr()));
            b = pick::<MAX>(b, _mm512_loadu_pd(block.as_ptr().add(8)));
            c = pick::<MAX>(c, _mm512_loadu_pd(block.as_ptr().add(16)));
            d = pick::<MAX>(d, _mm512_loadu_pd(block.as_ptr().add(24)));
        }
    }
    let mut eights = blocks.remainder().chunks_exact(8);
    for eight in &mut eights {
        // SAFETY: the load reads the eight numbers of `eight`.
        a = pick::<MAX>(a, unsafe { _mm512_loadu_pd(eight.as_ptr()) });
    }
    let rest = eights.remainder();
    if !rest.is_empty() {
        let mask = (1u8 << rest.len()) - 1;
        // SAFETY: the mask reads only the `rest.len()` (< 8) numbers of
        // `rest`; the other lanes are the identity.
        b = pick::<MAX>(b, unsafe {
            _mm512_mask_loadu_pd(init, mask, rest.as_ptr())
        });
    }
    across::<MAX>(pick::<MAX>(pick::<MAX>(a, b), pick::<MAX>(c, d)))
}

/// The extremes of eight rows of eight numbers: the rows paired, then
/// the pairs' halves, then their quarters, so that after three levels
/// (seven vector operations) lane `r` holds row `r`'s extreme.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn eight_rows_of_eight<const MAX: bool>(block: &[f64; 64], out: &mut [f64; 8]) {
    // SAFETY: each load reads eight numbers inside `block` (64 long).
    let row = |r: usize| unsafe { _mm512_loadu_pd(block.as_ptr().add(8 * r)) };
    // Level 1: rows 2k and 2k+1 interleaved, neighbours combined; lanes
    // (row 2k, row 2k+1) per 128-bit chunk, chunk c holding columns 2c, 2c+1.
    let pair =
        |a: __m512d, b: __m512d| pick::<MAX>(_mm512_unpacklo_pd(a, b), _mm512_unpackhi_pd(a, b));
    let p01 = pair(row(0), row(1));
    let p23 = pair(row(2), row(3));
    let p45 = pair(row(4), row(5));
    let p67 = pair(row(6), row(7));
    // Level 2: chunks (0, 2) against (1, 3) of two pairs.
    let quad = |a: __m512d, b: __m512d| {
        pick::<MAX>(
            _mm512_shuffle_f64x2::<0b10_00_10_00>(a, b),
            _mm512_shuffle_f64x2::<0b11_01_11_01>(a, b),
        )
    };
    let q0 = quad(p01, p23);
    let q1 = quad(p45, p67);
    // Level 3: the same once more; chunk k now holds rows 2k and 2k+1.
    let all = quad(q0, q1);
    // SAFETY: the store writes the eight numbers of `out`.
    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), all) };
}

#[cfg(test)]
mod tests {
    use super::{available, rows};
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
                rows::<true>(&mut got_max, &values, len);
                rows::<false>(&mut got_min, &values, len);
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
}

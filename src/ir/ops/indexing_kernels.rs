//! The loops behind `gather` and `scatter-add` over `[outer, len, inner]`
//! row-major numbers: indices are checked as they are used (one pass),
//! rows are copied or added as fixed-size arrays when `inner` is small,
//! and large work is spread over rayon's threads.
//!
//! A bad index is reported as the first one in order whatever the number
//! of threads. Scatter-add splits the *destination* rows among threads;
//! each adds its updates in index order, so repeated positions add up in
//! the same order, and to the same bits, on any number of threads.
//!
//! Knows slices of numbers, nothing of arrays or tapes.

use super::OpError;
use rayon::prelude::*;

/// Work below this many numbers runs on one thread.
const PARALLEL: usize = 1 << 15;

/// Indices handled per parallel task of a gather.
const BLOCK: usize = 1 << 12;

/// Index `k` along an axis of length `len`: whole, in range (negative ones
/// counting from the end). (No rounding call: `k` is whole when it
/// survives a round trip through an integer; NaN and infinities do not.)
#[inline(always)]
pub(super) fn position(k: f64, len: usize) -> Result<usize, OpError> {
    let whole = k as i64;
    let resolved = if whole < 0 { whole + len as i64 } else { whole };
    if whole as f64 == k && resolved >= 0 && (resolved as u64) < len as u64 {
        Ok(resolved as usize)
    } else {
        Err(bad_index(k, len))
    }
}

#[cold]
fn bad_index(k: f64, len: usize) -> OpError {
    if k.fract() != 0.0 || !k.is_finite() {
        OpError::new(format!("index {k} is not a whole number"))
    } else {
        OpError::new(format!(
            "index {k} is out of range for an axis of length {len}"
        ))
    }
}

/// Checks every index; the error names the first bad one.
pub(super) fn check(idx: &[f64], len: usize) -> Result<(), OpError> {
    let scan = |block: &[f64]| block.iter().try_for_each(|&k| position(k, len).map(drop));
    if idx.len() < PARALLEL {
        return scan(idx);
    }
    let results: Vec<Result<(), OpError>> = idx.par_chunks(BLOCK).map(scan).collect();
    results.into_iter().collect()
}

/// `out[o, j, :] = t[o, idx[j], :]` for `t` of shape `[outer, len, inner]`.
pub(super) fn gather(
    t: &[f64],
    idx: &[f64],
    (outer, len, inner): (usize, usize, usize),
    mut out: Vec<f64>,
) -> Result<Vec<f64>, OpError> {
    let m = idx.len();
    // Storage of the result's length, contents arbitrary (every number is
    // written), or any other to be made so.
    if out.len() != outer * m * inner {
        out = vec![0.0; outer * m * inner];
    }
    if out.is_empty() {
        return check(idx, len).map(|()| out);
    }
    // A task: the rows of indices `j0..` of outer index `o` into `dst`.
    let task = |(b, dst): (usize, &mut [f64])| -> Result<(), OpError> {
        let blocks = m.div_ceil(BLOCK);
        let (o, j0) = (b / blocks, (b % blocks) * BLOCK);
        let idx = &idx[j0..j0 + dst.len() / inner];
        let source = &t[o * len * inner..(o + 1) * len * inner];
        match inner {
            1 => copy_rows::<1>(source, idx, len, dst),
            2 => copy_rows::<2>(source, idx, len, dst),
            3 => copy_rows::<3>(source, idx, len, dst),
            4 => copy_rows::<4>(source, idx, len, dst),
            8 => copy_rows::<8>(source, idx, len, dst),
            _ => {
                for (row, &k) in dst.chunks_exact_mut(inner).zip(idx) {
                    let start = position(k, len)? * inner;
                    row.copy_from_slice(&source[start..start + inner]);
                }
                Ok(())
            }
        }
    };
    // Chunks never straddle two outer indices: each holds at most BLOCK
    // rows of one.
    let chunks = out
        .chunks_mut(m * inner)
        .flat_map(|per_outer| per_outer.chunks_mut(BLOCK * inner));
    if outer * m * inner < PARALLEL {
        chunks.enumerate().try_for_each(task)?;
    } else {
        let chunks: Vec<&mut [f64]> = chunks.collect();
        let results: Vec<Result<(), OpError>> =
            chunks.into_par_iter().enumerate().map(task).collect();
        results.into_iter().collect::<Result<(), OpError>>()?;
    }
    Ok(out)
}

/// Indices checked per round of a copy loop: the checks first, then the
/// copies, which have no calls or branches between them and so keep many
/// reads of random rows in flight.
const ROUND: usize = 64;

/// Rows of `N` numbers picked by `idx` from `source` into `dst`.
#[inline(always)]
fn copy_rows<const N: usize>(
    source: &[f64],
    idx: &[f64],
    len: usize,
    dst: &mut [f64],
) -> Result<(), OpError> {
    let (rows, _) = source.as_chunks::<N>();
    let (out, _) = dst.as_chunks_mut::<N>();
    let mut at = [0usize; ROUND];
    for (idx, out) in idx.chunks(ROUND).zip(out.chunks_mut(ROUND)) {
        for (p, &k) in at.iter_mut().zip(idx) {
            *p = position(k, len)?;
        }
        for (row, &p) in out.iter_mut().zip(&at) {
            *row = rows[p];
        }
    }
    Ok(())
}

/// `t` with `u[o, j, :]` added to row `idx[j]` of outer index `o`, for
/// `t` of shape `[outer, len, inner]` and `u` of `[outer, idx.len(), inner]`.
pub(super) fn scatter_add(
    t: &[f64],
    idx: &[f64],
    u: &[f64],
    outer: usize,
    len: usize,
    inner: usize,
) -> Result<Vec<f64>, OpError> {
    check(idx, len)?;
    let mut out = vec![0.0; t.len()];
    if out.is_empty() {
        return Ok(out);
    }
    let rows = outer * len;
    let parts = if t.len() + u.len() < PARALLEL {
        1
    } else {
        rayon::current_num_threads().clamp(1, 8)
    };
    let per_part = rows.div_ceil(parts);
    // A part: destination rows `first..first + dst.len() / inner`, copied
    // from `t`, then every update landing there added in index order.
    let part = |(p, dst): (usize, &mut [f64])| {
        let first = p * per_part;
        let end = first + dst.len() / inner;
        dst.copy_from_slice(&t[first * inner..end * inner]);
        let m = idx.len();
        for o in first / len.max(1)..end.div_ceil(len.max(1)).min(outer) {
            let updates = &u[o * m * inner..(o + 1) * m * inner];
            let base = o * len;
            match inner {
                1 => add_rows::<1>(dst, updates, idx, len, base, first, end),
                2 => add_rows::<2>(dst, updates, idx, len, base, first, end),
                3 => add_rows::<3>(dst, updates, idx, len, base, first, end),
                4 => add_rows::<4>(dst, updates, idx, len, base, first, end),
                8 => add_rows::<8>(dst, updates, idx, len, base, first, end),
                _ => {
                    for (update, &k) in updates.chunks_exact(inner).zip(idx) {
                        let row = base + resolve(k, len);
                        if (first..end).contains(&row) {
                            let at = (row - first) * inner;
                            for (a, &x) in dst[at..at + inner].iter_mut().zip(update) {
                                *a += x;
                            }
                        }
                    }
                }
            }
        }
    };
    if parts == 1 {
        part((0, out.as_mut_slice()));
    } else {
        out.par_chunks_mut(per_part * inner)
            .enumerate()
            .for_each(part);
    }
    Ok(out)
}

/// A checked index as a position.
#[inline(always)]
fn resolve(k: f64, len: usize) -> usize {
    (if k < 0.0 { k + len as f64 } else { k }) as usize
}

/// Adds rows of `N` numbers of `updates` at rows `base + idx[j]` of the
/// destination rows `first..end` held by `dst`.
#[inline(always)]
fn add_rows<const N: usize>(
    dst: &mut [f64],
    updates: &[f64],
    idx: &[f64],
    len: usize,
    base: usize,
    first: usize,
    end: usize,
) {
    let (out, _) = dst.as_chunks_mut::<N>();
    let (updates, _) = updates.as_chunks::<N>();
    let mut at = [0usize; ROUND];
    for (idx, updates) in idx.chunks(ROUND).zip(updates.chunks(ROUND)) {
        // Rows outside this part become `usize::MAX` and are skipped.
        for (p, &k) in at.iter_mut().zip(idx) {
            let row = base + resolve(k, len);
            *p = if row >= first && row < end {
                row - first
            } else {
                usize::MAX
            };
        }
        for (update, &p) in updates.iter().zip(&at) {
            if let Some(target) = out.get_mut(p) {
                for (a, &x) in target.iter_mut().zip(update) {
                    *a += x;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{gather, scatter_add};
    use proptest::prelude::*;

    /// `[outer, len, inner]` numbers and `m` indices (negative ones too,
    /// repeats likely), sized to reach the parallel paths sometimes.
    fn case() -> impl Strategy<Value = (usize, usize, usize, Vec<f64>, Vec<f64>)> {
        (
            prop_oneof![Just(1usize), 2usize..4],
            prop_oneof![Just(1usize), 2usize..50, 500usize..3000],
            prop_oneof![Just(0usize), 1usize..5, Just(8), 5usize..20],
            prop_oneof![Just(0usize), 1usize..40, 3000usize..9000],
            any::<u64>(),
        )
            .prop_map(|(outer, len, inner, m, seed)| {
                let mut state = seed | 1;
                let mut next = move || {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                };
                let idx = (0..m)
                    .map(|_| {
                        let k = (next() % len as u64) as f64;
                        if next() % 3 == 0 { k - len as f64 } else { k }
                    })
                    .collect();
                let t = (0..outer * len * inner)
                    .map(|i| (i as f64 * 0.37).sin())
                    .collect();
                (outer, len, inner, t, idx)
            })
    }

    fn resolve(k: f64, len: usize) -> usize {
        (if k < 0.0 { k + len as f64 } else { k }) as usize
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]

        #[test]
        fn gather_and_scatter_add_match_plain_loops((outer, len, inner, t, idx) in case()) {
            let m = idx.len();
            let mut want = Vec::new();
            for o in 0..outer {
                for &k in &idx {
                    let start = (o * len + resolve(k, len)) * inner;
                    want.extend_from_slice(&t[start..start + inner]);
                }
            }
            let got = gather(&t, &idx, (outer, len, inner), Vec::new()).expect("indices are in range");
            let kept = vec![f64::NAN; got.len()];
            prop_assert_eq!(&gather(&t, &idx, (outer, len, inner), kept).expect("indices are in range"), &got);
            prop_assert_eq!(&got, &want);

            let updates: Vec<f64> = (0..outer * m * inner).map(|i| (i as f64 * 0.11).cos()).collect();
            let mut want = t.clone();
            for o in 0..outer {
                for (j, &k) in idx.iter().enumerate() {
                    let to = (o * len + resolve(k, len)) * inner;
                    let from = (o * m + j) * inner;
                    for i in 0..inner {
                        want[to + i] += updates[from + i];
                    }
                }
            }
            let got = scatter_add(&t, &idx, &updates, outer, len, inner).expect("indices are in range");
            // Repeated positions add in index order: the same bits.
            prop_assert_eq!(&got, &want);
            let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool");
            let alone = single.install(|| scatter_add(&t, &idx, &updates, outer, len, inner));
            prop_assert_eq!(&alone.expect("indices are in range"), &want);
        }
    }

    #[test]
    fn the_first_bad_index_is_named() {
        let t = vec![0.0; 10 * 2];
        let mut idx = vec![1.0; 100_000];
        idx[70_000] = 10.0;
        idx[90_000] = 0.5;
        idx[99_999] = -11.0;
        let gathered =
            gather(&t, &idx, (1, 10, 2), Vec::new()).expect_err("index 10 is out of range");
        assert_eq!(
            gathered.message,
            "index 10 is out of range for an axis of length 10"
        );
        let updates = vec![1.0; 200_000];
        let scattered =
            scatter_add(&t, &idx, &updates, 1, 10, 2).expect_err("index 10 is out of range");
        assert_eq!(scattered.message, gathered.message);
        idx[70_000] = 1.0;
        let fraction =
            gather(&t, &idx, (1, 10, 2), Vec::new()).expect_err("index 0.5 is not whole");
        assert_eq!(fraction.message, "index 0.5 is not a whole number");
        idx[90_000] = f64::NAN;
        let nan = gather(&t, &idx, (1, 10, 2), Vec::new()).expect_err("NaN is not an index");
        assert_eq!(nan.message, "index NaN is not a whole number");
    }
}

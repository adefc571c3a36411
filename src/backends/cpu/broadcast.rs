//! New row-major arrays from views: `broadcast` to a larger shape, by runs
//! (the axes of the target are grouped into runs that the operand either
//! has, copied, or lacks, repeated, so the copy is a few nested loops of
//! `copy_from_slice` and `fill`, not a walk element by element), and
//! `standard` for views in another memory order (a stack of transposed
//! matrices is copied tile by tile).
//!
//! Knows ndarray views, nothing of tapes.

use super::storage::Kept;
use ndarray::{ArrayD, ArrayViewD, CowArray, IxDyn};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Rows and columns of the tiles a transpose copies.
const TILE: usize = 32;

/// Outputs of at least this many numbers are written by several threads.
const PARALLEL: usize = 1 << 16;

/// `x` broadcast to `shape` (NumPy's rules: `x`'s axes align with the
/// last ones of `shape`), as a standard-layout array.
pub fn broadcast(x: &ArrayViewD<'_, f64>, shape: &[usize]) -> ArrayD<f64> {
    x.broadcast(IxDyn(shape)).expect("tape shapes broadcast");
    let n: usize = shape.iter().product();
    let lead = shape.len() - x.ndim();
    if n == 0 {
        return ArrayD::zeros(IxDyn(shape));
    }
    if x.shape() == shape {
        return standard(x);
    }
    let standard = row_major(x);
    let data = standard
        .as_slice()
        .expect("a standard-layout array is contiguous");
    // Runs of (length, repeated): an axis is repeated where x has length 1
    // (or lacks it) and the target does not.
    let mut runs: Vec<(usize, bool)> = Vec::with_capacity(shape.len());
    for (axis, &len) in shape.iter().enumerate() {
        if len == 1 {
            continue;
        }
        let repeated = axis < lead || x.shape()[axis - lead] == 1;
        match runs.last_mut() {
            Some((run, kind)) if *kind == repeated => *run *= len,
            _ => runs.push((len, repeated)),
        }
    }
    // Every number is written, so the storage (recycled, or fresh and
    // never cleared: clearing 8 MB costs as much as filling it) starts as
    // uninitialized capacity.
    let mut out = super::storage::take(n).unwrap_or_default();
    out.clear();
    out.reserve_exact(n);
    expand(
        data,
        &runs,
        &mut out.spare_capacity_mut()[..n],
        n >= PARALLEL,
    );
    // SAFETY: `expand` wrote all `n` numbers (each branch writes every
    // element of its `out`), and the capacity is at least `n`.
    unsafe { out.set_len(n) };
    ArrayD::from_shape_vec(IxDyn(shape), out).expect("sizes agree")
}

/// `x` widened into `out` (exact).
pub(super) fn widen_into(x: &[f32], out: &mut [f64]) {
    out.par_chunks_mut(PARALLEL)
        .zip(x.par_chunks(PARALLEL))
        .for_each(|(o, x)| {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = f64::from(x);
            }
        });
}

/// An f32 view as a new row-major f64 array (exact).
pub(super) fn widened(x: &ArrayViewD<'_, f32>) -> ArrayD<f64> {
    let standard = row_major(x);
    let numbers = standard
        .as_slice()
        .expect("a standard-layout array is contiguous");
    let mut out = super::storage::take_or_new::<f64>(numbers.len());
    widen_into(numbers, &mut out);
    ArrayD::from_shape_vec(x.raw_dim(), out).expect("sizes agree")
}

/// `x` itself when it is row-major, else a row-major copy.
pub fn row_major<'a, T: Kept + Send + Sync>(x: &ArrayViewD<'a, T>) -> CowArray<'a, T, IxDyn> {
    if x.is_standard_layout() {
        CowArray::from(x.clone())
    } else {
        CowArray::from(standard(x))
    }
}

/// `x` as a new row-major array. A view whose last two axes are swapped
/// against row-major order (a transposed matrix or stack of them) is
/// copied tile by tile; other orders element by element.
pub fn standard<T: Kept + Send + Sync>(x: &ArrayViewD<'_, T>) -> ArrayD<T> {
    if let Some(data) = x.as_slice() {
        let data = match super::storage::take::<T>(data.len()) {
            Some(mut copy) => {
                copy.copy_from_slice(data);
                copy
            }
            None => data.to_vec(),
        };
        return ArrayD::from_shape_vec(x.raw_dim(), data).expect("sizes agree");
    }
    let rank = x.ndim();
    if rank >= 2 {
        let mut stored = x.clone();
        stored.swap_axes(rank - 2, rank - 1);
        if let Some(data) = stored.as_slice() {
            // Each matrix is stored `rows x cols` and read transposed.
            let (rows, cols) = (stored.shape()[rank - 2], stored.shape()[rank - 1]);
            let mut out = super::storage::take_or_new::<T>(data.len());
            let size = (rows * cols).max(1);
            for (src, dst) in data.chunks_exact(size).zip(out.chunks_exact_mut(size)) {
                transpose(src, rows, cols, dst);
            }
            return ArrayD::from_shape_vec(x.raw_dim(), out).expect("sizes agree");
        }
    }
    if rank >= 1 && x.strides()[rank - 1] == 1 {
        // Rows stored contiguously (a slice of a row-major array along an
        // earlier axis): copied row by row.
        let n = x.len();
        let mut out = super::storage::take::<T>(n).unwrap_or_default();
        out.clear();
        out.reserve_exact(n);
        for row in x.rows() {
            match row.as_slice() {
                Some(row) => out.extend_from_slice(row),
                None => out.extend(row.iter().copied()),
            }
        }
        return ArrayD::from_shape_vec(x.raw_dim(), out).expect("sizes agree");
    }
    if let Some(out) = tiled(x) {
        return ArrayD::from_shape_vec(x.raw_dim(), out).expect("sizes agree");
    }
    x.as_standard_layout().into_owned()
}

/// The numbers of `x` in row-major order when its unit-stride axis is an
/// earlier one than the last (a stack of heads read in another order):
/// for every index of the other axes, the block between that axis and
/// the last is copied tile by tile, reading runs along the unit-stride
/// axis. `None` for other views.
fn tiled<T: Kept>(x: &ArrayViewD<'_, T>) -> Option<Vec<T>> {
    let (shape, strides, rank) = (x.shape(), x.strides(), x.ndim());
    if rank < 2 || x.is_empty() || strides.iter().any(|&s| s < 0) {
        return None;
    }
    let last = rank - 1;
    let unit = (0..last).find(|&k| strides[k] == 1 && shape[k] > 1)?;
    let stride = |k: usize| strides[k] as usize;
    let targets = super::layout::row_major_strides(shape);
    let (rows, cols, col_step, row_target) =
        (shape[unit], shape[last], stride(last), targets[unit]);
    let others: Vec<usize> = (0..last).filter(|&k| k != unit).collect();
    let mut out = super::storage::take_or_new::<T>(x.len());
    let data = x.as_ptr();
    let mut index = vec![0usize; others.len()];
    loop {
        let from: usize = others
            .iter()
            .zip(&index)
            .map(|(&k, &i)| i * stride(k))
            .sum();
        let to: usize = others
            .iter()
            .zip(&index)
            .map(|(&k, &i)| i * targets[k])
            .sum();
        for c0 in (0..cols).step_by(TILE) {
            for r0 in (0..rows).step_by(TILE) {
                for c in c0..cols.min(c0 + TILE) {
                    for r in r0..rows.min(r0 + TILE) {
                        // SAFETY: every index is inside the view's shape
                        // and its strides are not negative, so the offset
                        // is one of the view's elements.
                        out[to + r * row_target + c] =
                            unsafe { *data.add(from + r + c * col_step) };
                    }
                }
            }
        }
        // The next index of the other axes, the last fastest.
        let mut axis = others.len();
        loop {
            if axis == 0 {
                return Some(out);
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[others[axis]] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// `dst` (`cols x rows`, row-major) = the transpose of `src` (`rows x
/// cols`), a band of `TILE` rows of `dst` at a time (in parallel for large
/// matrices), each band tile by tile.
fn transpose<T: Copy + Send + Sync>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    if rows == 0 || cols == 0 {
        return;
    }
    let band = |(b, out): (usize, &mut [T])| {
        let j0 = b * TILE;
        let height = out.len() / rows;
        for i0 in (0..rows).step_by(TILE) {
            for i in i0..rows.min(i0 + TILE) {
                let row = &src[i * cols + j0..i * cols + j0 + height];
                for (j, &value) in row.iter().enumerate() {
                    out[j * rows + i] = value;
                }
            }
        }
    };
    if src.len() >= PARALLEL {
        dst.par_chunks_mut(TILE * rows).enumerate().for_each(band);
    } else {
        dst.chunks_mut(TILE * rows).enumerate().for_each(band);
    }
}

/// Writes `src` expanded by `runs` into `out` (whose length is the
/// product of the runs; `src` holds the product of the copied ones).
fn expand(src: &[f64], runs: &[(usize, bool)], out: &mut [MaybeUninit<f64>], parallel: bool) {
    let Some((&(len, repeated), rest)) = runs.split_first() else {
        out[0].write(src[0]);
        return;
    };
    let block = out.len() / len;
    match (rest, repeated) {
        ([], true) => fill(out, src[0]),
        ([], false) => {
            out.write_copy_of_slice(src);
        }
        ([(_, true)], false) if !parallel => {
            // Rows of one repeated number each: the common broadcast of a
            // reduction's cotangent.
            for (row, &value) in out.chunks_exact_mut(block).zip(src) {
                fill(row, value);
            }
        }
        (_, true) => {
            let (first, others) = out.split_at_mut(block);
            expand(src, rest, first, parallel);
            // SAFETY: `expand` has just written every element of `first`.
            let first: &[f64] = unsafe { first.assume_init_ref() };
            if parallel {
                others.par_chunks_mut(block).for_each(|copy| {
                    copy.write_copy_of_slice(first);
                });
            } else {
                for copy in others.chunks_exact_mut(block) {
                    copy.write_copy_of_slice(first);
                }
            }
        }
        (_, false) => {
            let from = src.len() / len;
            if parallel {
                out.par_chunks_mut(block)
                    .zip(src.par_chunks(from))
                    .for_each(|(out, src)| expand(src, rest, out, false));
            } else {
                for (out, src) in out.chunks_exact_mut(block).zip(src.chunks_exact(from)) {
                    expand(src, rest, out, false);
                }
            }
        }
    }
}

/// Writes `value` into every element of `out`.
fn fill(out: &mut [MaybeUninit<f64>], value: f64) {
    for x in out {
        x.write(value);
    }
}

#[cfg(test)]
mod tests {
    use super::{broadcast, standard};
    use ndarray::{ArrayD, IxDyn};
    use proptest::prelude::*;

    /// A shape of at most 4 axes and one that broadcasts to it.
    fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        prop::collection::vec(
            prop_oneof![Just(0usize), Just(1), 2usize..5, 20usize..300],
            0..5,
        )
        .prop_filter("at most 300,000 numbers", |t| {
            t.iter().product::<usize>() <= 300_000
        })
        .prop_flat_map(|target| {
            let rank = target.len();
            (
                Just(target),
                prop::collection::vec(any::<bool>(), rank),
                0..=rank,
            )
        })
        .prop_map(|(target, ones, drop)| {
            let source = target[drop..]
                .iter()
                .zip(&ones[drop..])
                .map(|(&len, &one)| if one { 1 } else { len })
                .collect();
            (target, source)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn broadcast_matches_ndarray((target, source) in shapes(), transposed in any::<bool>()) {
            let n: usize = source.iter().product();
            let values: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
            let x = if transposed {
                let reversed: Vec<usize> = source.iter().rev().copied().collect();
                ArrayD::from_shape_vec(IxDyn(&reversed), values).expect("sizes agree").reversed_axes()
            } else {
                ArrayD::from_shape_vec(IxDyn(&source), values).expect("sizes agree")
            };
            let got = broadcast(&x.view(), &target);
            let want = x.broadcast(IxDyn(&target)).expect("broadcasts").to_owned();
            prop_assert_eq!(got.shape(), want.shape());
            prop_assert!(got.iter().eq(want.iter()));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn standard_copies_any_permutation(
            shape in prop::collection::vec(prop_oneof![Just(0usize), Just(1), 2usize..5, 30usize..90], 1..5)
                .prop_filter("at most 300,000 numbers", |s| s.iter().product::<usize>() <= 300_000),
            order in any::<u64>(),
            swap_last in any::<bool>(),
        ) {
            let n: usize = shape.iter().product();
            let x = ArrayD::from_shape_vec(IxDyn(&shape), (0..n).map(|i| i as f64).collect())
                .expect("sizes agree");
            let rank = shape.len();
            let perm: Vec<usize> = if swap_last && rank >= 2 {
                let mut p: Vec<usize> = (0..rank).collect();
                p.swap(rank - 2, rank - 1);
                p
            } else {
                let mut p: Vec<usize> = (0..rank).collect();
                let mut state = order | 1;
                for i in (1..rank).rev() {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    p.swap(i, (state >> 33) as usize % (i + 1));
                }
                p
            };
            let view = x.view().permuted_axes(IxDyn(&perm));
            let got = standard(&view);
            prop_assert!(got.is_standard_layout());
            prop_assert_eq!(got.shape(), view.shape());
            prop_assert!(got.iter().eq(view.iter()));
        }
    }
}

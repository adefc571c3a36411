//! Reductions (sum, product, max, min) along any axes of a row-major array.
//!
//! Axes of length 1 are dropped and neighbouring axes that are both reduced
//! or both kept are merged, so a reduction is a sequence of passes over
//! `[outer, reduced, inner]` blocks, innermost reduced group first. Each
//! pass is one of two loops, neither calling a closure per element:
//!
//! - `inner == 1` (reduced numbers contiguous): each row is folded in eight
//!   lanes (the order of `scalar::sum`) per block of `ROW_BLOCK` numbers,
//!   the blocks combined in order;
//! - `inner > 1`: rows of `inner` contiguous numbers are folded into
//!   accumulators column block by column block (vectorizable loops over
//!   contiguous numbers), the reduced axis cut into pieces of a size fixed
//!   by the shape whose partial results are combined in order.
//!
//! Work is spread over rayon's threads by output rows, column blocks and
//! pieces, all fixed by the shape: every element of the result is folded in
//! the same order on any number of threads, so results do not depend on
//! the thread count. A reduction over every axis of contiguous data keeps
//! the blocked, parallel fold of `reduce_all`.
//!
//! This module knows arrays and `ReduceOp`, nothing of tapes.

use crate::ir::ReduceOp;
use crate::scalar;
use crate::simd::row_folds;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use rayon::prelude::*;
use std::borrow::Cow;
use std::iter::StepBy;
use std::ops::Range;

/// Numbers folded per block of a row; blocks are combined in order.
const ROW_BLOCK: usize = 4096;

/// Columns folded together (their accumulators stay in the L1 cache).
const COLUMNS: usize = 512;

/// Rows a column fold reads side by side, eight columns at a time
/// (`accumulate_few_rows`), rather than one after another.
const FEW_ROWS: usize = 16;

/// Numbers read per piece of a column fold.
const PIECE: usize = 1 << 15;

/// Passes over fewer numbers run on the calling thread.
const PARALLEL: usize = 1 << 15;

/// Full sums of at least this many numbers run on the rayon pool.
const PARALLEL_SUM: usize = 1 << 16;

/// An associative fold with its identity.
trait Fold: Copy + Send + Sync + 'static {
    /// The result over no elements.
    const INIT: f64;
    /// Which of the folds of `simd::row_folds` this is.
    const KIND: Option<u8>;
    /// The fold that combines partial results (`Self`, but for folds of
    /// a function of the elements: the sum of squares combines by `Add`).
    type Partial: Fold;
    /// Combines `x`, a partial result, into the accumulated `acc`.
    fn op(acc: f64, x: f64) -> f64;
    /// Adds element `x` to the accumulated `acc` (`op` but for folds of a
    /// function of the elements).
    #[inline(always)]
    fn element(acc: f64, x: f64) -> f64 {
        Self::op(acc, x)
    }
    /// Folds a run of numbers: in eight lanes, combined as `scalar::sum`
    /// combines them (the order fixes the rounding of sums and products).
    #[inline(always)]
    fn run(values: &[f64]) -> f64 {
        fold_lanes::<Self>(values)
    }
}

#[derive(Clone, Copy)]
struct Add;
#[derive(Clone, Copy)]
struct Mul;
#[derive(Clone, Copy)]
struct Max;
#[derive(Clone, Copy)]
struct Min;
/// The sum of the elements' squares: each element squared as it is read,
/// partial sums added.
#[derive(Clone, Copy)]
struct Squares;

impl Fold for Add {
    type Partial = Add;
    const KIND: Option<u8> = Some(row_folds::SUM);
    const INIT: f64 = 0.0;
    #[inline(always)]
    fn op(acc: f64, x: f64) -> f64 {
        acc + x
    }
}

impl Fold for Mul {
    type Partial = Mul;
    const KIND: Option<u8> = Some(row_folds::PRODUCT);
    const INIT: f64 = 1.0;
    #[inline(always)]
    fn op(acc: f64, x: f64) -> f64 {
        acc * x
    }
}

// A NaN, once taken, stays: no number compares above or below it.
impl Fold for Max {
    type Partial = Max;
    const KIND: Option<u8> = Some(row_folds::MAX);
    const INIT: f64 = f64::NEG_INFINITY;
    /// Extremes do not depend on the order: more lanes, shorter chains.
    #[inline(always)]
    fn run(values: &[f64]) -> f64 {
        wide_lanes::<Self>(values)
    }
    #[inline(always)]
    fn op(acc: f64, x: f64) -> f64 {
        // `|`, not `||`: no branch, so loops of it vectorize.
        if (x > acc) | x.is_nan() { x } else { acc }
    }
}

impl Fold for Min {
    type Partial = Min;
    const KIND: Option<u8> = Some(row_folds::MIN);
    const INIT: f64 = f64::INFINITY;
    /// Extremes do not depend on the order: more lanes, shorter chains.
    #[inline(always)]
    fn run(values: &[f64]) -> f64 {
        wide_lanes::<Self>(values)
    }
    #[inline(always)]
    fn op(acc: f64, x: f64) -> f64 {
        if (x < acc) | x.is_nan() { x } else { acc }
    }
}

impl Fold for Squares {
    type Partial = Add;
    const KIND: Option<u8> = None;
    const INIT: f64 = 0.0;
    #[inline(always)]
    fn op(acc: f64, x: f64) -> f64 {
        acc + x
    }
    #[inline(always)]
    fn element(acc: f64, x: f64) -> f64 {
        acc + x * x
    }
}

/// Reduces `x` over `axes` (sorted, distinct) into an array of `shape`
/// (the kept axes, with or without the reduced ones as length 1).
pub fn reduce(op: ReduceOp, x: &ArrayViewD<'_, f64>, axes: &[u8], shape: &[usize]) -> ArrayD<f64> {
    match op {
        ReduceOp::Sum => reduce_with::<Add>(Some(op), x, axes, shape),
        ReduceOp::Prod => reduce_with::<Mul>(Some(op), x, axes, shape),
        ReduceOp::Max => reduce_with::<Max>(Some(op), x, axes, shape),
        ReduceOp::Min => reduce_with::<Min>(Some(op), x, axes, shape),
    }
}

/// The sum over `axes` of the squares of `x`'s elements, into an array of
/// `shape`, without storing the squares: the sum of `x * x` as `reduce`
/// computes it (each square rounded, then added in the same order), so the
/// same bits wherever the result has more than one number (a sum of every
/// element is folded in blocks of another size than `reduce_all`'s: the
/// same number to rounding).
pub fn sum_of_squares(x: &ArrayViewD<'_, f64>, axes: &[u8], shape: &[usize]) -> ArrayD<f64> {
    reduce_with::<Squares>(None, x, axes, shape)
}

/// `op` over the middle axis of row-major `values` seen as `[outer, len,
/// inner]`, into `out` (`outer * inner` numbers): one pass of `reduce`, for
/// callers holding plain slices (the same folds, so the same bits).
pub(crate) fn reduce_middle(
    op: ReduceOp,
    values: &[f64],
    (outer, len, inner): (usize, usize, usize),
    out: &mut [f64],
) {
    fn with<F: Fold>(values: &[f64], (outer, len, inner): (usize, usize, usize)) -> Vec<f64> {
        if values.is_empty() {
            vec![F::INIT; outer * inner]
        } else if inner == 1 {
            fold_rows::<F>(values, outer, len)
        } else {
            fold_columns::<F>(values, outer, len, inner)
        }
    }
    let folded = match op {
        ReduceOp::Sum => with::<Add>(values, (outer, len, inner)),
        ReduceOp::Prod => with::<Mul>(values, (outer, len, inner)),
        ReduceOp::Max => with::<Max>(values, (outer, len, inner)),
        ReduceOp::Min => with::<Min>(values, (outer, len, inner)),
    };
    out[..folded.len()].copy_from_slice(&folded);
}

/// `(length, reduced)` runs of `shape`: length-1 axes dropped, neighbours
/// of the same kind merged.
fn runs(shape: &[usize], axes: &[u8]) -> Vec<(usize, bool)> {
    let mut runs: Vec<(usize, bool)> = Vec::with_capacity(shape.len());
    for (axis, &len) in shape.iter().enumerate() {
        let reduced = axes.contains(&(axis as u8));
        if len == 1 {
            continue;
        }
        match runs.last_mut() {
            Some((run, kind)) if *kind == reduced => *run *= len,
            _ => runs.push((len, reduced)),
        }
    }
    runs
}

/// `F` over `axes` of `x`; `op` is `F`'s reduction where there is one
/// (for the blocked fold of every axis).
fn reduce_with<F: Fold>(
    op: Option<ReduceOp>,
    x: &ArrayViewD<'_, f64>,
    axes: &[u8],
    shape: &[usize],
) -> ArrayD<f64> {
    let standard = x.as_standard_layout();
    let data = standard
        .as_slice()
        .expect("a standard-layout array is contiguous");
    let mut runs = runs(x.shape(), axes);
    let values: Vec<f64> = if data.is_empty() {
        vec![F::INIT; shape.iter().product()]
    } else if let [(_, true)] = runs[..] {
        match op {
            Some(op) => vec![reduce_all(op, data)],
            None => fold_rows::<F>(data, 1, data.len()),
        }
    } else {
        let mut values = Cow::Borrowed(data);
        let mut first = true;
        while let Some(last) = runs.iter().rposition(|&(_, reduced)| reduced) {
            let outer: usize = runs[..last].iter().map(|r| r.0).product();
            let inner: usize = runs[last + 1..].iter().map(|r| r.0).product();
            let len = runs[last].0;
            // The elements are read in the first pass; later passes fold
            // its partial results.
            values = Cow::Owned(match (first, inner == 1) {
                (true, true) => fold_rows::<F>(&values, outer, len),
                (true, false) => fold_columns::<F>(&values, outer, len, inner),
                (false, true) => fold_rows::<F::Partial>(&values, outer, len),
                (false, false) => fold_columns::<F::Partial>(&values, outer, len, inner),
            });
            first = false;
            runs.remove(last);
            if last > 0 && last < runs.len() {
                // The kept runs on both sides of the removed one join.
                let after = runs.remove(last).0;
                runs[last - 1].0 *= after;
            }
        }
        if first && op.is_none() {
            // No axis of more than one element reduced: each element is
            // its own fold.
            values = Cow::Owned(values.iter().map(|&x| F::element(F::INIT, x)).collect());
        }
        values.into_owned()
    };
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("a reduction keeps the kept axes")
}

/// Folds `values` in eight lanes, combined as `scalar::sum` combines them.
#[inline(always)]
fn fold_lanes<F: Fold>(values: &[f64]) -> f64 {
    let mut lanes = [F::INIT; 8];
    let blocks = values.chunks_exact(8);
    let rest = blocks.remainder();
    for block in blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            *lane = F::element(*lane, x);
        }
    }
    let [a, b, c, d, e, f, g, h] = lanes;
    let mut total = F::op(
        F::op(F::op(a, e), F::op(b, f)),
        F::op(F::op(c, g), F::op(d, h)),
    );
    for &x in rest {
        total = F::element(total, x);
    }
    total
}

/// Folds `values` in 32 lanes (for folds whose result does not depend on
/// the order).
#[inline(always)]
fn wide_lanes<F: Fold>(values: &[f64]) -> f64 {
    if values.len() < 64 {
        // A short row (the 8 numbers of a row of `[n, 8]`): setting up and
        // combining 32 lanes would cost more than the row.
        return fold_lanes::<F>(values);
    }
    let mut lanes = [F::INIT; 32];
    let blocks = values.chunks_exact(32);
    let rest = blocks.remainder();
    for block in blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            *lane = F::element(*lane, x);
        }
    }
    let mut total = lanes.iter().fold(F::INIT, |acc, &x| F::op(acc, x));
    for &x in rest {
        total = F::element(total, x);
    }
    total
}

/// One row folded block by block, the blocks combined in order.
#[inline(always)]
fn fold_row<F: Fold>(row: &[f64]) -> f64 {
    if row.len() <= ROW_BLOCK {
        return F::run(row);
    }
    let mut blocks = row.chunks(ROW_BLOCK).map(F::run);
    let first = blocks.next().unwrap_or(F::INIT);
    blocks.fold(first, F::op)
}

/// Generic functions over a `Fold` compiled for the widest SIMD the host
/// has (AVX-512, AVX2 or the baseline), chosen at run time. The versions
/// do the same IEEE operations in the same order, so the same bits.
macro_rules! widest {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? = $body:ident;)*) => {$(
        fn $name<F: Fold>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512<F: Fold>($($arg: $ty),*) $(-> $ret)? {
                    $body::<F>($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2<F: Fold>($($arg: $ty),*) $(-> $ret)? {
                    $body::<F>($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the host has AVX-512F, checked just above.
                    return unsafe { avx512::<F>($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the host has AVX2, checked just above.
                    return unsafe { avx2::<F>($($arg),*) };
                }
            }
            $body::<F>($($arg),*)
        }
    )*};
}

widest! {
    fn rows_widest(out: &mut [f64], values: &[f64], len: usize) = rows;
    fn lanes_widest(values: &[f64]) -> f64 = run;
    fn accumulate_widest(acc: &mut [f64], values: &[f64], starts: StepBy<Range<usize>>) = accumulate;
}

/// `F::run`, as a function `widest!` can name.
#[inline(always)]
fn run<F: Fold>(values: &[f64]) -> f64 {
    F::run(values)
}

/// `out[o]` = the fold of row `o` of `values` (rows of `len` numbers).
#[inline(always)]
fn rows<F: Fold>(out: &mut [f64], values: &[f64], len: usize) {
    for (o, row) in out.iter_mut().zip(values.chunks_exact(len)) {
        *o = fold_row::<F>(row);
    }
}

/// Folds into `acc` the runs of `acc.len()` numbers of `values` that
/// start at `starts`, in order.
#[inline(always)]
fn accumulate<F: Fold>(acc: &mut [f64], values: &[f64], starts: StepBy<Range<usize>>) {
    let width = acc.len();
    // Narrow columns keep their accumulators in registers (a slice of
    // unknown length is stored and reloaded every row).
    match width {
        2 => return accumulate_fixed::<F, 2>(acc, values, starts),
        3 => return accumulate_fixed::<F, 3>(acc, values, starts),
        4 => return accumulate_fixed::<F, 4>(acc, values, starts),
        8 => return accumulate_fixed::<F, 8>(acc, values, starts),
        16 => return accumulate_fixed::<F, 16>(acc, values, starts),
        _ => {}
    }
    if starts.len() <= FEW_ROWS && width >= 8 {
        return accumulate_few_rows::<F>(acc, values, starts);
    }
    for start in starts {
        for (a, &x) in acc.iter_mut().zip(&values[start..start + width]) {
            *a = F::element(*a, x);
        }
    }
}

/// `accumulate` for a few rows: eight columns at a time, their
/// accumulators in registers, every row read in turn, so each row is one
/// sequential stream (the hardware prefetches it) and the accumulators
/// are stored once. Each column folds its rows in the same order as
/// `accumulate`, so the same bits.
#[inline(always)]
fn accumulate_few_rows<F: Fold>(acc: &mut [f64], values: &[f64], starts: StepBy<Range<usize>>) {
    let starts: smallvec::SmallVec<[usize; FEW_ROWS]> = starts.collect();
    let width = acc.len();
    let mut blocks = acc.chunks_exact_mut(8);
    let mut c = 0;
    for block in &mut blocks {
        let mut local = [F::INIT; 8];
        local.copy_from_slice(block);
        for &start in &starts {
            for (a, &x) in local.iter_mut().zip(&values[start + c..start + c + 8]) {
                *a = F::element(*a, x);
            }
        }
        block.copy_from_slice(&local);
        c += 8;
    }
    for (k, a) in blocks.into_remainder().iter_mut().enumerate() {
        for &start in &starts {
            *a = F::element(*a, values[start + c + k]);
        }
    }
    debug_assert_eq!(c + width % 8, width);
}

/// `accumulate` for columns of `W` numbers: the same operations in the
/// same order, accumulators in registers.
#[inline(always)]
fn accumulate_fixed<F: Fold, const W: usize>(
    acc: &mut [f64],
    values: &[f64],
    starts: StepBy<Range<usize>>,
) {
    let mut local = [F::INIT; W];
    local.copy_from_slice(acc);
    for start in starts {
        let row: &[f64; W] = values[start..start + W]
            .try_into()
            .expect("a row of W numbers");
        for (a, &x) in local.iter_mut().zip(row) {
            *a = F::element(*a, x);
        }
    }
    acc.copy_from_slice(&local);
}

/// `out[o] = fold(values[o * len..(o + 1) * len])`.
fn fold_rows<F: Fold>(values: &[f64], outer: usize, len: usize) -> Vec<f64> {
    if len == 0 {
        return vec![F::INIT; outer];
    }
    let mut out = vec![0.0; outer];
    let whole_rows = |out: &mut [f64], values: &[f64]| {
        if !row_folds::available() {
            return rows_widest::<F>(out, values, len);
        }
        match (F::KIND, len) {
            (Some(row_folds::MAX), _) => row_folds::rows::<{ row_folds::MAX }>(out, values, len),
            (Some(row_folds::MIN), _) => row_folds::rows::<{ row_folds::MIN }>(out, values, len),
            // Sums and products of rows of eight, eight rows at a time with
            // the bits of the lane fold; the rows left over as usual.
            (Some(kind), 8) => {
                let done = if kind == row_folds::SUM {
                    row_folds::rows_of_eight::<{ row_folds::SUM }>(out, values)
                } else {
                    row_folds::rows_of_eight::<{ row_folds::PRODUCT }>(out, values)
                };
                rows_widest::<F>(&mut out[done..], &values[done * 8..], 8);
            }
            _ => rows_widest::<F>(out, values, len),
        }
    };
    if values.len() < PARALLEL {
        whole_rows(&mut out, values);
    } else if len <= ROW_BLOCK || outer >= 2 * rayon::current_num_threads() {
        // Enough rows to share out: whole rows per task.
        let rows = (PARALLEL / len).max(1);
        out.par_chunks_mut(rows)
            .zip(values.par_chunks(rows * len))
            .for_each(|(out, values)| whole_rows(out, values));
    } else {
        // A few long rows: their blocks in parallel, combined as `fold_row`
        // combines them.
        let per_row = len.div_ceil(ROW_BLOCK);
        let partial: Vec<f64> = (0..outer * per_row)
            .into_par_iter()
            .map(|b| {
                let (o, k) = (b / per_row, b % per_row);
                let start = o * len + k * ROW_BLOCK;
                let end = o * len + len.min((k + 1) * ROW_BLOCK);
                lanes_widest::<F>(&values[start..end])
            })
            .collect();
        for (o, blocks) in out.iter_mut().zip(partial.chunks_exact(per_row)) {
            let first = blocks[0];
            *o = blocks[1..].iter().fold(first, |acc, &x| F::op(acc, x));
        }
    }
    out
}

/// `out[o, i] = fold over j of values[o, j, i]` for `values` of shape
/// `[outer, len, inner]`.
fn fold_columns<F: Fold>(values: &[f64], outer: usize, len: usize, inner: usize) -> Vec<f64> {
    let rows = (PIECE / inner.min(COLUMNS)).max(1);
    let pieces = len.div_ceil(rows).max(1);
    let mut partial = vec![F::INIT; outer * pieces * inner];
    // One piece of one outer index: its rows folded into `acc` (a run of
    // `inner` accumulators), a block of columns at a time.
    let piece = |index: usize, acc: &mut [f64], columns: std::ops::Range<usize>| {
        let (o, p) = (index / pieces, index % pieces);
        let end = len.min((p + 1) * rows);
        let first = (o * len + p * rows) * inner + columns.start;
        let last = (o * len + end) * inner + columns.start;
        accumulate_widest::<F>(acc, values, (first..last).step_by(inner));
    };
    let blocks = |index: usize, out: &mut [f64]| {
        for (b, acc) in out.chunks_mut(COLUMNS).enumerate() {
            let from = b * COLUMNS;
            piece(index, acc, from..from + acc.len());
        }
    };
    if values.len() < PARALLEL {
        for (index, out) in partial.chunks_mut(inner).enumerate() {
            blocks(index, out);
        }
    } else {
        partial
            .par_chunks_mut(inner)
            .enumerate()
            .for_each(|(index, out)| {
                if inner > COLUMNS {
                    out.par_chunks_mut(COLUMNS)
                        .enumerate()
                        .for_each(|(b, acc)| {
                            let from = b * COLUMNS;
                            piece(index, acc, from..from + acc.len());
                        });
                } else {
                    blocks(index, out);
                }
            });
    }
    if pieces == 1 {
        partial
    } else {
        // The pieces' results, in order.
        fold_columns::<F::Partial>(&partial, outer, pieces, inner)
    }
}

/// A fold of all of `slice`: blocks of 1,024 (16,384 when parallel)
/// numbers, combined in order; the rounding error grows with the log of
/// the length, not the length.
pub(crate) fn reduce_all(op: ReduceOp, slice: &[f64]) -> f64 {
    let fold = |chunk: &[f64]| match op {
        ReduceOp::Sum => scalar::sum(chunk),
        ReduceOp::Prod => fold_lanes::<Mul>(chunk),
        ReduceOp::Max => Max::run(chunk),
        ReduceOp::Min => Min::run(chunk),
    };
    let combine = |a: f64, b: f64| match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        ReduceOp::Max => Max::op(a, b),
        ReduceOp::Min => Min::op(a, b),
    };
    let block = if slice.len() >= PARALLEL_SUM {
        PARALLEL_SUM / 4
    } else {
        1024
    };
    let parts: Vec<f64> = if slice.len() >= PARALLEL_SUM {
        slice.par_chunks(block).map(fold).collect()
    } else {
        slice.chunks(block).map(fold).collect()
    };
    parts
        .into_iter()
        .reduce(combine)
        .unwrap_or_else(|| fold(&[]))
}

#[cfg(test)]
mod tests;

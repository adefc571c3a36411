//! `logsumexp` over any axes as one operation: two passes over the
//! operand (the largest element of each lane, then the sum of the shifted
//! exponentials, which are never stored) where the composition of `max`,
//! a broadcast subtraction, `exp`, `sum` and `log` would run five
//! operations, copy the broadcast maxima and store every exponential.
//!
//! A lane is shifted by its largest element when that is finite, by 0
//! otherwise (as JAX does): a lane of `-inf` gives `-inf`, a lane holding
//! `+inf` gives `+inf`, and a NaN stays NaN. The reverse rule is the
//! softmax times the cotangent, the forward rule the softmax-weighted sum
//! of the tangent; both are built from the operation itself, so second
//! derivatives go through it.
//!
//! The result keeps the reduced axes as length 1 (the caller reshapes).
//! Each result is folded by one thread in an order fixed by the shape, so
//! it does not depend on the number of threads. Knows arrays and the
//! scalar kernels, nothing of executors.

use super::indexing::array;
use super::softmax::LogSumExpSoftmax;
use super::{CudaKernel, Definition, Op, OpError, Pulled, Rules};
use crate::ir::shape::{ShapeError, show};
use crate::ir::{Shape, TensorGraph};
use crate::scalar;
use egg::Id;
use ndarray::{ArrayD, ArrayViewD, CowArray, IxDyn};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Numbers per parallel task (and below which one thread does it all).
pub(super) const TASK: usize = 1 << 15;

/// Numbers whose exponentials are taken in one vectorized call.
pub(super) const BUFFER: usize = 512;

/// A set of axes.
type Axes = SmallVec<[u8; 4]>;

/// `logsumexp` over `axes` (sorted, distinct), reduced axes kept as 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogSumExp {
    /// The reduced axes.
    pub axes: SmallVec<[u8; 4]>,
}

impl LogSumExp {
    fn reduced(&self, axis: usize) -> bool {
        self.axes.iter().any(|&a| usize::from(a) == axis)
    }
}

/// How a lane is shifted before its exponentials are summed.
pub(super) fn shift(top: f64) -> f64 {
    if top.is_finite() { top } else { 0.0 }
}

/// The larger of `acc` and `x`; a NaN, once taken, stays.
#[inline(always)]
fn larger(acc: f64, x: f64) -> f64 {
    if (x > acc) | x.is_nan() { x } else { acc }
}

impl Definition for LogSumExp {
    fn describe(&self) -> String {
        let axes: Vec<String> = self.axes.iter().map(u8::to_string).collect();
        format!("logsumexp[{}]", axes.join(" "))
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        if let Some(&bad) = self.axes.iter().find(|&&a| usize::from(a) >= x.len()) {
            return Err(ShapeError(format!(
                "logsumexp: axis {bad} is out of range for a tensor of shape {}",
                show(x)
            )));
        }
        Ok(x.iter()
            .enumerate()
            .map(|(a, &d)| if self.reduced(a) { 1 } else { d })
            .collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        if let Some((last, rest)) = self.split_runs(operands[0].shape()) {
            // Reduced axes in several runs: the last run first, then the
            // others over its result (log sum sum exp = log sum exp log sum
            // exp), so no copy moves the reduced axes together.
            let mut middle = operands[0].shape().to_vec();
            for &a in &last {
                middle[usize::from(a)] = 1;
            }
            let partial = LogSumExp { axes: last }.cpu(operands, &middle)?;
            return LogSumExp { axes: rest }.cpu(&[partial.view()], shape);
        }
        let (data, outer, len, inner) = self.layout(&operands[0]);
        let data = data
            .as_slice()
            .ok_or_else(|| OpError::new("internal: a row-major copy is not contiguous"))?;
        let mut out = vec![0.0; outer * inner];
        if out.is_empty() {
            // No lanes.
        } else if len == 0 {
            // The log of an empty sum.
            out.fill(f64::NEG_INFINITY);
        } else if inner == 1 {
            rows(data, len, &mut out);
        } else {
            columns(data, (len, inner), &mut out);
        }
        array(shape, out)
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let softmax = self.softmax(rules, operands[0]);
        SmallVec::from_slice(&[Some(rules.mul(softmax, g))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let softmax = self.softmax(rules, operands[0]);
        let weighted = rules.mul(t, softmax);
        let lead = rules.lead();
        let axes: Vec<usize> = self.axes.iter().map(|&a| usize::from(a) + lead).collect();
        rules.sum_axes(weighted, &axes, true)
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        4 * operands[0].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        // The lanes reduced into this element.
        let x = operands[0];
        let index = crate::ir::ops::reads::unravel(element, shape);
        let reduced: usize = (0..x.len())
            .filter(|&a| self.reduced(a))
            .map(|a| x[a])
            .product();
        let axes: SmallVec<[usize; 6]> = (0..x.len()).filter(|&a| self.reduced(a)).collect();
        let extents: SmallVec<[usize; 6]> = axes.iter().map(|&a| x[a]).collect();
        let mut at = index.clone();
        for k in 0..reduced {
            let offsets = crate::ir::ops::reads::unravel(k, &extents);
            for (&a, &o) in axes.iter().zip(&offsets) {
                at[a] = o;
            }
            out.push((0, crate::ir::ops::reads::ravel(&at, x)));
        }
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::LogSumExp(LogSumExp {
            axes: self.axes.iter().map(|&a| a + 1).collect(),
        });
        crate::ir::ops::batching::shifted_axis(graph, op, operands, batched, size)
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        Some(self.cuda_kernel(operands[0], shape))
    }
}

impl LogSumExp {
    /// The softmax of `x` over these axes, the derivative of `logsumexp(x)`
    /// in `x`: the first part of `logsumexp-softmax`, whose second part
    /// the program's own `logsumexp` is then read from
    /// (`softmax::shared`), so the exponentials are taken once. Where
    /// every number of a lane is -inf the derivative is 0.
    fn softmax(&self, rules: &mut Rules<'_>, x: Id) -> Id {
        let both = LogSumExpSoftmax {
            axes: self.axes.clone(),
        };
        let node = rules.op(Op::LogSumExpSoftmax(both.clone()), &[x]);
        both.softmax_of(rules, node, x)
    }
}

impl LogSumExp {
    /// When the reduced axes (length-1 axes aside) form more than one run
    /// of neighbours: the axes of the last run, and the other reduced axes.
    pub(super) fn split_runs(&self, shape: &[usize]) -> Option<(Axes, Axes)> {
        let mut runs: Vec<Axes> = Vec::new();
        let mut previous_reduced = false;
        for (a, &len) in shape.iter().enumerate() {
            if len == 1 {
                continue;
            }
            let reduced = self.reduced(a);
            if reduced {
                if !previous_reduced {
                    runs.push(SmallVec::new());
                }
                runs.last_mut()?.push(a as u8);
            }
            previous_reduced = reduced;
        }
        if runs.len() < 2 {
            return None;
        }
        let last = runs.pop()?;
        let rest = self
            .axes
            .iter()
            .copied()
            .filter(|a| !last.contains(a))
            .collect();
        Some((last, rest))
    }

    /// `x`'s numbers as `[outer, len, inner]` (kept, reduced, kept), for
    /// reduced axes that form one run of neighbours (axes of length 1
    /// aside; `cpu` splits the others first): row-major, copied only when
    /// `x` is not.
    pub(super) fn layout<'a>(
        &self,
        x: &ArrayViewD<'a, f64>,
    ) -> (CowArray<'a, f64, IxDyn>, usize, usize, usize) {
        let product = |keep: &dyn Fn(usize) -> bool| -> usize {
            (0..x.ndim())
                .filter(|&a| keep(a))
                .map(|a| x.shape()[a])
                .product()
        };
        let len = product(&|a| self.reduced(a));
        let first = (0..x.ndim())
            .find(|&a| self.reduced(a) && x.shape()[a] != 1)
            .unwrap_or(x.ndim());
        let outer = product(&|a| a < first && !self.reduced(a));
        let inner = product(&|a| a > first && !self.reduced(a));
        let data = if x.is_standard_layout() {
            CowArray::from(x.clone())
        } else {
            CowArray::from(x.as_standard_layout().into_owned())
        };
        (data, outer, len, inner)
    }

    /// For a kernel with a thread per lane of `x`, numbered `e` (row-major
    /// over the kept axes): CUDA C that sets `base` to the offset in `x` of
    /// lane `e` and `shift` to its shift (its largest number when that is
    /// finite, else 0); CUDA C that sets `at` to the offset of element `q`
    /// of the lane, starting from `at = base`; and the lane's length.
    pub(super) fn cuda_lanes(&self, x: &[usize]) -> (String, String, usize) {
        let rank = x.len();
        let mut strides = vec![1usize; rank];
        for a in (0..rank.saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * x[a + 1];
        }
        let digits = |reduced: bool, index: &str, target: &str| -> String {
            (0..rank)
                .rev()
                .filter(|&a| self.reduced(a) == reduced && x[a] > 1)
                .map(|a| {
                    format!(
                        "            {{ long long d = {index} % {n}LL; {index} /= {n}LL; {target} += d * {s}LL; }}\n",
                        n = x[a],
                        s = strides[a]
                    )
                })
                .collect()
        };
        let len: usize = (0..rank)
            .filter(|&a| self.reduced(a))
            .map(|a| x[a])
            .product();
        let (base, at) = (digits(false, "rest", "base"), digits(true, "q", "at"));
        let start = format!(
            "        long long rest = e, base = 0;
{base}        double top = -eps_inf();
        for (long long r = 0; r < {len}LL; r++) {{
            long long q = r, at = base;
{at}            double v = x[at];
            top = (v > top || isnan(v)) ? v : top;
        }}
        double shift = isfinite(top) ? top : 0.0;
"
        );
        (start, at, len)
    }

    /// One thread per result, looping over its lane twice.
    fn cuda_kernel(&self, x: &[usize], shape: &[usize]) -> CudaKernel {
        let (start, at, len) = self.cuda_lanes(x);
        let source = format!(
            "extern \"C\" __global__ void logsumexp(long long n, const double* x, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
{start}        double total = 0.0;
        for (long long r = 0; r < {len}LL; r++) {{
            long long q = r, at = base;
{at}            total += exp(x[at] - shift);
        }}
        out[e] = log(total) + shift;
    }}
}}
"
        );
        CudaKernel {
            name: "logsumexp",
            source,
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        }
    }
}

/// The largest element of `values` (NaN if there is one).
#[inline(always)]
pub(super) fn top(values: &[f64]) -> f64 {
    if values.len() >= 8 && crate::simd::row_folds::available() {
        let mut out = [0.0];
        crate::simd::row_folds::rows::<{ crate::simd::row_folds::MAX }>(
            &mut out,
            values,
            values.len(),
        );
        return out[0];
    }
    let mut lanes = [f64::NEG_INFINITY; 8];
    let blocks = values.chunks_exact(8);
    let rest = blocks.remainder();
    for block in blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            *lane = larger(*lane, x);
        }
    }
    rest.iter().fold(
        lanes.iter().fold(f64::NEG_INFINITY, |a, &b| larger(a, b)),
        |a, &b| larger(a, b),
    )
}

/// The sum of `exp(v - s)` over `values`, a vectorized buffer at a time,
/// the buffers' sums added in order.
#[inline(always)]
fn exp_sum(values: &[f64], s: f64) -> f64 {
    let (mut shifted, mut exps) = ([0.0; BUFFER], [0.0; BUFFER]);
    let mut total = 0.0;
    for chunk in values.chunks(BUFFER) {
        let n = chunk.len();
        for (d, &v) in shifted.iter_mut().zip(chunk) {
            *d = v - s;
        }
        scalar::exp_slice(&shifted[..n], &mut exps[..n]);
        total += scalar::sum(&exps[..n]);
    }
    total
}

/// `out[o]` = logsumexp of row `o` of `data` (rows of `len` numbers).
/// Rows longer than a task are cut into pieces of `TASK` numbers, whose
/// sums are added in order.
/// `logsumexp` over the middle axis of row-major `data` seen as `[outer,
/// len, inner]`, into `out` (`outer * inner` numbers): the kernel of
/// `LogSumExp::cpu` for callers holding plain slices.
pub(crate) fn logsumexp_into(data: &[f64], (len, inner): (usize, usize), out: &mut [f64]) {
    if out.is_empty() {
        // No lanes.
    } else if len == 0 {
        out.fill(f64::NEG_INFINITY);
    } else if inner == 1 {
        rows(data, len, out);
    } else {
        columns(data, (len, inner), out);
    }
}

fn rows(data: &[f64], len: usize, out: &mut [f64]) {
    if len > TASK {
        for (o, row) in out.iter_mut().zip(data.chunks_exact(len)) {
            let s = shift(
                row.par_chunks(TASK)
                    .map(top)
                    .reduce(|| f64::NEG_INFINITY, larger),
            );
            let pieces: Vec<f64> = row.par_chunks(TASK).map(|p| exp_sum(p, s)).collect();
            *o = pieces.iter().sum::<f64>().ln() + s;
        }
        return;
    }
    if data.len() < TASK {
        rows_task(out, data, len);
    } else {
        let per = (TASK / len).max(1);
        out.par_chunks_mut(per)
            .zip(data.par_chunks(per * len))
            .for_each(|(out, data)| rows_task(out, data, len));
    }
}

crate::simd::widest_fns! {
    /// `short_rows` compiled for the widest SIMD the host has: the largest
    /// elements, the shifts and the sums vectorize with the exponentials.
    fn rows_task(out: &mut [f64], data: &[f64], len: usize) = short_rows;
    /// `piece_maxima` compiled for the widest SIMD the host has.
    fn piece_maxima_widest(m: &mut [f64], piece: Piece<'_>) = piece_maxima;
    /// `piece_sums` compiled for the widest SIMD the host has.
    fn piece_sums_widest(totals: &mut [f64], shifts: &[f64], piece: Piece<'_>) = piece_sums;
}

/// `out[o]` = logsumexp of row `o` of `data`, rows of at most `TASK`
/// numbers: several short rows per buffer of exponentials, a long row a
/// buffer at a time.
#[inline(always)]
fn short_rows(out: &mut [f64], data: &[f64], len: usize) {
    // Buffers sized to the data when it is small: zeroing three full ones
    // cost more than a 14-number row itself (a loop step's logsumexp).
    if data.len() <= SMALL {
        buffered_rows::<SMALL>(out, data, len)
    } else {
        buffered_rows::<BUFFER>(out, data, len)
    }
}

/// Numbers below which `short_rows` uses small buffers.
const SMALL: usize = 64;

/// `short_rows` with buffers of `B` numbers.
#[inline(always)]
fn buffered_rows<const B: usize>(out: &mut [f64], data: &[f64], len: usize) {
    let (mut shifted, mut exps) = ([0.0; B], [0.0; B]);
    if len <= B {
        let per = B / len;
        for (out, data) in out.chunks_mut(per).zip(data.chunks(per * len)) {
            let mut shifts = [0.0; B];
            let rows = data.len() / len;
            if crate::simd::row_folds::available() {
                crate::simd::row_folds::rows::<{ crate::simd::row_folds::MAX }>(
                    &mut shifts[..rows],
                    data,
                    len,
                );
            } else {
                for (s, row) in shifts.iter_mut().zip(data.chunks_exact(len)) {
                    *s = top(row);
                }
            }
            for ((s, row), d) in shifts
                .iter_mut()
                .zip(data.chunks_exact(len))
                .zip(shifted.chunks_exact_mut(len))
            {
                *s = shift(*s);
                for (d, &v) in d.iter_mut().zip(row) {
                    *d = v - *s;
                }
            }
            let n = data.len();
            for (e, &v) in exps[..n].iter_mut().zip(&shifted[..n]) {
                *e = scalar::exp_kernel(v);
            }
            for ((o, e), s) in out.iter_mut().zip(exps.chunks_exact(len)).zip(&shifts) {
                *o = scalar::sum(e).ln() + s;
            }
        }
    } else {
        for (o, row) in out.iter_mut().zip(data.chunks_exact(len)) {
            let s = shift(top(row));
            *o = exp_sum(row, s).ln() + s;
        }
    }
}

/// `out[o, i]` = logsumexp over `j` of `data[o, j, i]`, for `inner > 1`,
/// per outer index and block of columns: the maxima of the columns, then
/// the sums of their shifted exponentials. The rows are cut into pieces
/// of a size fixed by the shape (in parallel when there is much work);
/// rows add in order within a piece, pieces in order.
fn columns(data: &[f64], (len, inner): (usize, usize), out: &mut [f64]) {
    let width = inner.min(BUFFER);
    let piece_rows = (TASK / width).max((BUFFER / width).max(1));
    let pieces = len.div_ceil(piece_rows);
    let parallel = data.len() >= TASK;
    let block = |o: usize, from: usize, out: &mut [f64]| {
        let width = out.len();
        let span = |p: usize| p * piece_rows..len.min((p + 1) * piece_rows);
        // Rows `rows` of this block of columns.
        let piece = |rows: std::ops::Range<usize>| Piece {
            data,
            first: (o * len + rows.start) * inner + from,
            rows: rows.len(),
            inner,
        };
        let maxima = |p: usize| {
            let mut m = vec![f64::NEG_INFINITY; width];
            let rows = span(p);
            piece_maxima_widest(&mut m, piece(rows));
            m
        };
        let maxima: Vec<Vec<f64>> = if parallel {
            (0..pieces).into_par_iter().map(maxima).collect()
        } else {
            (0..pieces).map(maxima).collect()
        };
        let mut shifts = vec![f64::NEG_INFINITY; width];
        for m in &maxima {
            for (s, &m) in shifts.iter_mut().zip(m) {
                *s = larger(*s, m);
            }
        }
        shifts.iter_mut().for_each(|s| *s = shift(*s));
        let sums = |p: usize| {
            let mut totals = vec![0.0; width];
            let rows = span(p);
            piece_sums_widest(&mut totals, &shifts, piece(rows));
            totals
        };
        let sums: Vec<Vec<f64>> = if parallel {
            (0..pieces).into_par_iter().map(sums).collect()
        } else {
            (0..pieces).map(sums).collect()
        };
        let mut totals = vec![0.0; width];
        for piece in &sums {
            for (t, &x) in totals.iter_mut().zip(piece) {
                *t += x;
            }
        }
        for ((o, t), s) in out.iter_mut().zip(&totals).zip(&shifts) {
            *o = t.ln() + s;
        }
    };
    let blocks = inner.div_ceil(width);
    let unit =
        |(index, out): (usize, &mut [f64])| block(index / blocks, (index % blocks) * width, out);
    // Units: one block of columns of one outer index.
    let units = out
        .chunks_mut(inner)
        .flat_map(|per_outer| per_outer.chunks_mut(width));
    if parallel {
        let units: Vec<&mut [f64]> = units.collect();
        units.into_par_iter().enumerate().for_each(unit);
    } else {
        units.enumerate().for_each(unit);
    }
}

/// Rows of a block of columns: `rows` runs of numbers that start at
/// `first` in `data`, `inner` apart.
#[derive(Clone, Copy)]
struct Piece<'a> {
    data: &'a [f64],
    first: usize,
    rows: usize,
    inner: usize,
}

impl<'a> Piece<'a> {
    /// The `width` numbers of row `k`.
    #[inline(always)]
    fn row(&self, k: usize, width: usize) -> &'a [f64] {
        let start = self.first + k * self.inner;
        &self.data[start..start + width]
    }

    /// Row `k` as `W` numbers.
    #[inline(always)]
    fn row_of<const W: usize>(&self, k: usize) -> &'a [f64; W] {
        self.row(k, W).try_into().expect("a row of W numbers")
    }
}

/// Folds the rows of `piece` into `m` (one maximum per column of a block).
#[inline(always)]
fn piece_maxima(m: &mut [f64], piece: Piece<'_>) {
    // Narrow blocks keep their maxima in registers.
    match m.len() {
        2 => return piece_maxima_fixed::<2>(m, piece),
        4 => return piece_maxima_fixed::<4>(m, piece),
        8 => return piece_maxima_fixed::<8>(m, piece),
        16 => return piece_maxima_fixed::<16>(m, piece),
        _ => {}
    }
    let width = m.len();
    for k in 0..piece.rows {
        for (m, &x) in m.iter_mut().zip(piece.row(k, width)) {
            *m = larger(*m, x);
        }
    }
}

/// Adds into `totals` (one sum per column of a block) the exponentials of
/// the rows of `piece`, each shifted by its column's shift: several rows
/// per buffer of exponentials, the rows added in order.
#[inline(always)]
fn piece_sums(totals: &mut [f64], shifts: &[f64], piece: Piece<'_>) {
    let width = totals.len();
    match width {
        2 => return piece_sums_fixed::<2>(totals, shifts, piece),
        4 => return piece_sums_fixed::<4>(totals, shifts, piece),
        8 => return piece_sums_fixed::<8>(totals, shifts, piece),
        16 => return piece_sums_fixed::<16>(totals, shifts, piece),
        _ => {}
    }
    let per = (BUFFER / width).max(1);
    let (mut shifted, mut exps) = ([0.0; BUFFER], [0.0; BUFFER]);
    for k0 in (0..piece.rows).step_by(per) {
        let count = per.min(piece.rows - k0);
        for (k, d) in shifted.chunks_exact_mut(width).take(count).enumerate() {
            for ((d, &x), &s) in d.iter_mut().zip(piece.row(k0 + k, width)).zip(shifts) {
                *d = x - s;
            }
        }
        let n = count * width;
        for (e, &v) in exps[..n].iter_mut().zip(&shifted[..n]) {
            *e = scalar::exp_kernel(v);
        }
        for e in exps[..n].chunks_exact(width) {
            for (t, &e) in totals.iter_mut().zip(e) {
                *t += e;
            }
        }
    }
}

/// `piece_maxima` for blocks of `W` columns: the same operations in the
/// same order, the maxima in registers.
#[inline(always)]
fn piece_maxima_fixed<const W: usize>(m: &mut [f64], piece: Piece<'_>) {
    let mut local = [f64::NEG_INFINITY; W];
    local.copy_from_slice(m);
    for k in 0..piece.rows {
        for (m, &x) in local.iter_mut().zip(piece.row_of::<W>(k)) {
            *m = larger(*m, x);
        }
    }
    m.copy_from_slice(&local);
}

/// `piece_sums` for blocks of `W` columns: each row's shifted
/// exponentials added to the totals in row order, all in registers.
#[inline(always)]
fn piece_sums_fixed<const W: usize>(totals: &mut [f64], shifts: &[f64], piece: Piece<'_>) {
    let shifts: &[f64; W] = shifts.try_into().expect("W shifts");
    let mut local = [0.0; W];
    local.copy_from_slice(totals);
    for k in 0..piece.rows {
        for ((t, &x), &s) in local.iter_mut().zip(piece.row_of::<W>(k)).zip(shifts) {
            *t += scalar::exp_kernel(x - s);
        }
    }
    totals.copy_from_slice(&local);
}

#[cfg(test)]
mod tests {
    use super::LogSumExp;
    use crate::ir::ops::Definition;
    use ndarray::{ArrayD, Axis, IxDyn};
    use proptest::prelude::*;
    use smallvec::SmallVec;

    /// logsumexp by definition, lane by lane, shifted as the operation
    /// shifts.
    fn reference(x: &ArrayD<f64>, axes: &[u8]) -> ArrayD<f64> {
        let mut out = x.clone();
        for &a in axes.iter().rev() {
            let a = Axis(usize::from(a));
            out = out.map_axis(a, |lane| {
                let top = lane
                    .iter()
                    .fold(f64::NEG_INFINITY, |m, &v| crate::scalar::nan_max(m, v));
                let s = super::shift(top);
                lane.iter().map(|&v| (v - s).exp()).sum::<f64>().ln() + s
            });
            out = out.insert_axis(a);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Axes one at a time agree with the reference (which reduces one
        /// axis at a time, so only single axes compare exactly in value);
        /// several axes agree with the reference applied axis by axis to
        /// within rounding.
        #[test]
        fn logsumexp_matches_a_lane_by_lane_definition(
            shape in prop::collection::vec(prop_oneof![Just(0usize), Just(1), 2usize..6, Just(8), Just(16), 30usize..700], 1..4)
                .prop_filter("at most 200,000 numbers", |s| s.iter().product::<usize>() <= 200_000),
            pick in any::<u8>(),
            seed in any::<u64>(),
        ) {
            let rank = shape.len();
            let axes: SmallVec<[u8; 4]> = (0..rank as u8).filter(|a| pick & (1 << a) != 0).collect();
            let n: usize = shape.iter().product();
            let mut state = seed | 1;
            let data: Vec<f64> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    match state % 211 {
                        0 => f64::NEG_INFINITY,
                        1 => f64::INFINITY,
                        2 => f64::NAN,
                        k => (k as f64 - 100.0) * 3.0,
                    }
                })
                .collect();
            let x = ArrayD::from_shape_vec(IxDyn(&shape), data).expect("sizes agree");
            let op = LogSumExp { axes: axes.clone() };
            let out_shape = op.shape(&[&shape]).expect("axes in range");
            let got = op.cpu(&[x.view()], &out_shape).expect("runs");
            let want = reference(&x, &axes);
            prop_assert_eq!(got.shape(), want.shape());
            for (g, w) in got.iter().zip(&want) {
                let same = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-12 * w.abs().max(1.0);
                prop_assert!(same, "{:?} over {:?}: {} against {}", shape, axes, g, w);
            }
        }
    }
}

//! A fused group's operands as its loops read them: in place where their
//! elements line up with the result's (contiguous data, a slice, a padded
//! array read with a shift, a broadcast number), expanded otherwise; f32
//! storage (at the result's shape) widened chunk by chunk.

use super::execute::{Flat, Val};
use ndarray::{ArrayD, Axis};
use std::ops::Range;

/// An operand of a group as the loop reads it.
pub enum Source<'a> {
    /// The same number everywhere.
    Scalar(f64),
    /// Element `i` is `data[i]`.
    Slice(&'a [f64]),
    /// Element `i` is `data[i - start]` inside `data`, 0 outside (a
    /// zero-padded operand read in place).
    Shifted { data: &'a [f64], start: usize },
    /// Element `i` is `value` for `start <= i < end`, 0 outside.
    Window {
        value: f64,
        start: usize,
        end: usize,
    },
    /// A broadcast or strided view of contiguous data, read chunk by chunk
    /// into a buffer (never copied whole).
    Strided(Strided<'a>),
    /// Element `i` is `data[(i - shift) mod n]`, `n` the data's length (an
    /// operand rolled along its first axis, read in place in two runs).
    Cyclic { data: &'a [f64], shift: usize },
    /// Element `i` is `data[i]` in f32 storage, widened chunk by chunk
    /// into a buffer.
    F32(&'a [f32]),
}

/// A view of contiguous `data`: element `i` (row-major over `shape`) is
/// `data[offset + sum_k i_k * strides[k]]`, a stride 0 repeating along a
/// broadcast axis.
pub struct Strided<'a> {
    data: &'a [f64],
    offset: usize,
    strides: Vec<usize>,
    shape: Vec<usize>,
    /// Whether the last axis is short (at most `SHORT` numbers): then the
    /// last two axes are read as one block with two counters (`[n, 1, 3]`
    /// or `[n, m, 1]` broadcast to `[n, m, 3]`, every third number of a
    /// sliced column), not a run of a few numbers at a time.
    short: bool,
}

/// A last axis at most this long is read together with the one before.
const SHORT: usize = 16;

impl Strided<'_> {
    /// Writes elements `at..at + out.len()` into `out`, run by run along
    /// the last axis.
    fn fill(&self, at: usize, out: &mut [f64]) {
        if self.short {
            self.fill_short(at, out);
            return;
        }
        let rank = self.shape.len();
        if rank == 0 {
            out.fill(self.data[self.offset]);
            return;
        }
        // The multi-index of `at`, and where it reads.
        let mut index: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0; rank];
        let mut rest = at;
        let mut base = self.offset;
        for k in (0..rank).rev() {
            let dim = self.shape[k].max(1);
            index[k] = rest % dim;
            rest /= dim;
            base += index[k] * self.strides[k];
        }
        let (len, step) = (self.shape[rank - 1], self.strides[rank - 1]);
        let mut written = 0;
        while written < out.len() {
            let from = index[rank - 1];
            let run = (len - from).min(out.len() - written);
            let target = &mut out[written..written + run];
            match step {
                // Short runs (a last axis of 2 or 3) copy number by number:
                // a call to copy them would cost more than the numbers.
                1 if run < 16 => {
                    for (slot, &v) in target.iter_mut().zip(&self.data[base..base + run]) {
                        *slot = v;
                    }
                }
                1 => target.copy_from_slice(&self.data[base..base + run]),
                0 => target.fill(self.data[base]),
                _ => {
                    for (k, slot) in target.iter_mut().enumerate() {
                        *slot = self.data[base + k * step];
                    }
                }
            }
            written += run;
            // Move to the start of the next run: the last axis wraps, the
            // odometer carries into the outer axes.
            base -= from * step;
            index[rank - 1] = 0;
            let mut axis = rank - 1;
            loop {
                if axis == 0 {
                    break;
                }
                axis -= 1;
                index[axis] += 1;
                base += self.strides[axis];
                if index[axis] < self.shape[axis] {
                    break;
                }
                base -= self.strides[axis] * self.shape[axis];
                index[axis] = 0;
            }
        }
    }
}

impl Strided<'_> {
    /// `fill` when the last axis is short: per block of the last two axes
    /// (`rows x len`), one loop with a counter along the row and the
    /// position in the data moved by the strides.
    fn fill_short(&self, at: usize, out: &mut [f64]) {
        let rank = self.shape.len();
        let (rows, len) = (self.shape[rank - 2], self.shape[rank - 1]);
        let (row_step, step) = (self.strides[rank - 2], self.strides[rank - 1]);
        let data = self.data;
        let block_len = rows * len;
        let (mut block, mut position) = (at / block_len, at % block_len);
        let mut written = 0;
        while written < out.len() {
            let mut base = self.offset;
            let mut rest = block;
            for k in (0..rank - 2).rev() {
                base += (rest % self.shape[k]) * self.strides[k];
                rest /= self.shape[k];
            }
            let run = (block_len - position).min(out.len() - written);
            let target = &mut out[written..written + run];
            let (mut row, mut k) = (position / len, position % len);
            let mut t = 0;
            // The end of a row the run starts inside.
            while k != 0 && t < run {
                target[t] = data[base + row * row_step + k * step];
                t += 1;
                k += 1;
                if k == len {
                    k = 0;
                    row += 1;
                }
            }
            // Whole rows, by the kind of row.
            let whole = (run - t) / len;
            let rows = &mut target[t..t + whole * len];
            if step == 0 {
                // Each number repeated along the row.
                for (r, chunk) in rows.chunks_exact_mut(len).enumerate() {
                    chunk.fill(data[base + (row + r) * row_step]);
                }
            } else if row_step == 0 {
                // The same row again and again.
                let mut pattern = [0.0; SHORT];
                for (i, slot) in pattern[..len].iter_mut().enumerate() {
                    *slot = data[base + i * step];
                }
                for chunk in rows.chunks_exact_mut(len) {
                    for (slot, &v) in chunk.iter_mut().zip(&pattern[..len]) {
                        *slot = v;
                    }
                }
            } else {
                let start = base + row * row_step;
                match len {
                    1 => rows_of::<1>(rows, data, start, (row_step, step)),
                    2 => rows_of::<2>(rows, data, start, (row_step, step)),
                    3 => rows_of::<3>(rows, data, start, (row_step, step)),
                    4 => rows_of::<4>(rows, data, start, (row_step, step)),
                    _ => {
                        for (r, chunk) in rows.chunks_exact_mut(len).enumerate() {
                            let start = start + r * row_step;
                            for (i, slot) in chunk.iter_mut().enumerate() {
                                *slot = data[start + i * step];
                            }
                        }
                    }
                }
            }
            t += whole * len;
            row += whole;
            // The start of the row the run ends inside.
            for (i, slot) in target[t..].iter_mut().enumerate() {
                *slot = data[base + row * row_step + i * step];
            }
            written += run;
            block += 1;
            position = 0;
        }
    }
}

/// Rows of `L` numbers into `out`, row `r` read from `data` at `start +
/// r * row_step`, its numbers `step` apart: a fixed-length copy per row
/// (for the short rows of a sliced column, `[n, 3]` out of `[n, 11]`,
/// where a loop per row costs more than its numbers).
#[inline(always)]
fn rows_of<const L: usize>(
    out: &mut [f64],
    data: &[f64],
    start: usize,
    (row_step, step): (usize, usize),
) {
    for (r, chunk) in out.chunks_exact_mut(L).enumerate() {
        let at = start + r * row_step;
        let Ok(chunk) = <&mut [f64; L]>::try_from(chunk) else {
            continue;
        };
        if step == 1 {
            if let Ok(row) = <&[f64; L]>::try_from(&data[at..at + L]) {
                *chunk = *row;
            }
        } else {
            for (i, slot) in chunk.iter_mut().enumerate() {
                *slot = data[at + i * step];
            }
        }
    }
}

impl<'a> Strided<'a> {
    /// Elements `at..at + len` where they lie in the data, when they are
    /// one run of it (a chunk inside one repetition of a whole array
    /// broadcast along leading axes, or inside a row of a slice), so they
    /// need no copy.
    pub fn in_place(&self, at: usize, len: usize) -> Option<&'a [f64]> {
        let base = self.run_start(at, len, 1)?;
        Some(&self.data[base..base + len])
    }

    /// The one number elements `at..at + len` all read, when they lie in
    /// one run of a last axis that repeats it (stride 0: a column
    /// broadcast along rows, as `[n, 1]` against `[n, m]`).
    pub fn number_over(&self, at: usize, len: usize) -> Option<f64> {
        self.run_start(at, len, 0).map(|base| self.data[base])
    }

    /// Where elements `at..at + len` start in the data, when they lie in
    /// one run of the last axis and its stride is `step` (not for short
    /// last axes, read in blocks).
    fn run_start(&self, at: usize, len: usize, step: usize) -> Option<usize> {
        let rank = self.shape.len();
        if self.short || rank == 0 || self.strides[rank - 1] != step {
            return None;
        }
        let run = self.shape[rank - 1];
        if run == 0 {
            return None;
        }
        let position = at % run;
        if position + len > run {
            return None;
        }
        let mut base = self.offset + position * step;
        let mut rest = at / run;
        for k in (0..rank - 1).rev() {
            base += (rest % self.shape[k]) * self.strides[k];
            rest /= self.shape[k];
        }
        Some(base)
    }
}

impl<'a> Source<'a> {
    /// Elements `at..at + len` read where they are, when they need no
    /// copy: a slice's, or a strided view's inside one of its runs.
    pub fn in_place(&self, at: usize, len: usize) -> Option<&'a [f64]> {
        match self {
            Source::Slice(data) => Some(&data[at..at + len]),
            Source::Strided(view) => view.in_place(at, len),
            Source::Cyclic { data, shift } => {
                let from = cyclic_position(data.len(), *shift, at);
                (from + len <= data.len()).then(|| &data[from..from + len])
            }
            _ => None,
        }
    }

    /// The one number elements `at..at + len` all are, when the source
    /// says so without reading them: a number, a window's inside, a
    /// strided view inside one run of a repeated last axis.
    pub fn number_over(&self, at: usize, len: usize) -> Option<f64> {
        match self {
            Source::Scalar(value) => Some(*value),
            Source::Window { value, start, end } => {
                (at >= *start && at + len <= *end).then_some(*value)
            }
            Source::Strided(view) => view.number_over(at, len),
            _ => None,
        }
    }
}

impl Source<'_> {
    /// Writes elements `at..at + out.len()` into `out`.
    pub fn fill(&self, at: usize, out: &mut [f64]) {
        match self {
            Source::Cyclic { data, shift } => {
                let from = cyclic_position(data.len(), *shift, at);
                let first = out.len().min(data.len() - from);
                out[..first].copy_from_slice(&data[from..from + first]);
                let rest = out.len() - first;
                out[first..].copy_from_slice(&data[..rest]);
            }
            Source::Scalar(x) => out.fill(*x),
            Source::Slice(s) => out.copy_from_slice(&s[at..at + out.len()]),
            Source::Shifted { data, start } => {
                let len = out.len();
                // The part of at..at+len that falls inside the data.
                let lo = at.max(*start).min(at + len);
                let hi = (start + data.len()).min(at + len).max(lo);
                out[..lo - at].fill(0.0);
                if hi > lo {
                    out[lo - at..hi - at].copy_from_slice(&data[lo - start..hi - start]);
                }
                out[hi - at..].fill(0.0);
            }
            Source::Window { value, start, end } => {
                let len = out.len();
                let lo = at.max(*start).min(at + len);
                let hi = (*end).min(at + len).max(lo);
                out[..lo - at].fill(0.0);
                out[lo - at..hi - at].fill(*value);
                out[hi - at..].fill(0.0);
            }
            Source::Strided(view) => view.fill(at, out),
            Source::F32(data) => {
                let len = out.len();
                for (o, &x) in out.iter_mut().zip(&data[at..at + len]) {
                    *o = f64::from(x);
                }
            }
        }
    }
}

/// The elements of a row-major view, when they are contiguous.
fn contiguous<'a>(view: &ndarray::ArrayViewD<'a, f64>) -> Option<&'a [f64]> {
    view.to_slice()
}

/// The operands that must be copied before the loop can read them: one
/// entry per operand, `Some` for those broadcast or strided.
pub fn expand(operands: &[&Val], shape: &[usize]) -> Vec<Option<ArrayD<f64>>> {
    // Operands are read in place when their elements line up with the
    // result's (same shape, contiguous; a pad along the first axis of a
    // contiguous array); anything else is expanded first.
    let mut expanded = Vec::with_capacity(operands.len());
    for operand in operands {
        let in_place = match operand {
            Val::Scalar(_) => true,
            Val::Array(a) => a.shape() == shape && a.as_slice().is_some(),
            Val::Slice {
                base,
                axis,
                start,
                end,
            } => {
                let view = base.slice_axis(Axis(*axis), ndarray::Slice::from(*start..*end));
                view.shape() == shape && contiguous(&view).is_some()
            }
            Val::Permuted { .. } | Val::Broadcast { .. } => false,
            Val::Full { shape: full, .. } => full[..] == *shape,
            Val::Padded { shape: padded, .. } => padded[..] == *shape,
            Val::Rolled { base, .. } => base.shape() == shape,
            Val::F32(a) => a.shape() == shape && a.as_slice().is_some(),
            Val::F32Permuted { .. } => false,
            Val::Reshaped { shape: to, .. } | Val::F32Reshaped { shape: to, .. } => {
                to[..] == *shape
            }
        };
        let viewed = strided_view(operand, shape).is_some();
        expanded.push(
            (!in_place && !viewed)
                .then(|| super::broadcast::broadcast(&operand.cow().view(), shape)),
        );
    }
    expanded
}

/// A view of an operand broadcast to `shape`, when it is contiguous data
/// or a slice of it: `(data, offset, strides)`.
fn strided_view<'a>(operand: &'a Val, shape: &[usize]) -> Option<(&'a [f64], usize, Vec<usize>)> {
    let (data, from, from_strides, offset) = match operand {
        Val::Array(a) => {
            let data = a.as_slice()?;
            (
                data,
                a.shape().to_vec(),
                super::layout::row_major_strides(a.shape()),
                0,
            )
        }
        Val::Slice {
            base,
            axis,
            start,
            end,
        } => {
            let data = base.as_slice()?;
            let strides = super::layout::row_major_strides(base.shape());
            let mut from = base.shape().to_vec();
            from[*axis] = end - start;
            let offset = start * strides[*axis];
            (data, from, strides, offset)
        }
        Val::Broadcast { base, .. } => {
            let data = base.as_slice()?;
            (
                data,
                base.shape().to_vec(),
                super::layout::row_major_strides(base.shape()),
                0,
            )
        }
        Val::Reshaped {
            base,
            offset,
            shape: to,
        } => (
            base.as_slice()?,
            to.to_vec(),
            super::layout::row_major_strides(to),
            *offset,
        ),
        _ => return None,
    };
    let strides = super::layout::broadcast_strides(&from, &from_strides, shape)?;
    Some((data, offset, strides))
}

/// The strided source of an operand `expand` left as a view.
fn strided_source<'a>(operand: &'a Val, shape: &[usize]) -> Source<'a> {
    let (data, offset, strides) =
        strided_view(operand, shape).expect("expand copies operands that are not views");
    let (shape, strides) = coalesce(shape, &strides);
    let short = shape.len() >= 2 && shape[shape.len() - 1] <= SHORT;
    Source::Strided(Strided {
        data,
        offset,
        strides,
        shape,
        short,
    })
}

/// The same row-major walk over fewer axes: axes of length 1 dropped, and
/// an axis merged into the next one when stepping it is stepping past the
/// whole of the next (contiguous neighbours; neighbours both repeated),
/// so runs along the last axis are as long as they can be.
fn coalesce(shape: &[usize], strides: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut dims: Vec<usize> = Vec::with_capacity(shape.len());
    let mut steps: Vec<usize> = Vec::with_capacity(shape.len());
    for (&dim, &stride) in shape.iter().zip(strides) {
        if dim == 1 {
            continue;
        }
        match (dims.last_mut(), steps.last()) {
            (Some(last), Some(&step)) if step == stride * dim => *last *= dim,
            _ => {
                dims.push(dim);
                steps.push(stride);
                continue;
            }
        }
        *steps.last_mut().expect("merged into an axis") = stride;
    }
    if shape.contains(&0) {
        return (vec![0], vec![0]);
    }
    (dims, steps)
}

/// The operands as sources over `shape`, reading the copies `expand` made.
pub fn sources<'a>(
    operands: &[&'a Val],
    expanded: &'a [Option<ArrayD<f64>>],
    shape: &[usize],
) -> Vec<Source<'a>> {
    operands
        .iter()
        .zip(expanded)
        .map(|(operand, e)| match (operand, e) {
            (_, Some(e)) => Source::Slice(e.as_slice().expect("standard layout")),
            (Val::Scalar(x), None) => Source::Scalar(*x),
            (Val::Array(a), None) if a.shape() == shape && a.as_slice().is_some() => {
                Source::Slice(a.as_slice().expect("checked contiguous"))
            }
            (Val::Array(_), None) => strided_source(operand, shape),
            (
                Val::Slice {
                    base,
                    axis,
                    start,
                    end,
                },
                None,
            ) => {
                match contiguous(&base.slice_axis(Axis(*axis), ndarray::Slice::from(*start..*end)))
                {
                    Some(data) if data.len() == shape.iter().product::<usize>() => {
                        Source::Slice(data)
                    }
                    _ => strided_source(operand, shape),
                }
            }
            (Val::Full { value, .. }, None) => Source::Scalar(*value),
            (Val::Broadcast { .. }, None) => strided_source(operand, shape),
            (Val::Permuted { .. } | Val::F32Permuted { .. }, None) => {
                unreachable!("permuted operands are expanded")
            }
            (Val::F32(a), None) => Source::F32(a.as_slice().expect("checked contiguous")),
            (
                Val::Reshaped {
                    base,
                    offset,
                    shape: to,
                },
                None,
            ) if to[..] == *shape => {
                let data = base.as_slice().expect("reshaped data is contiguous");
                Source::Slice(&data[*offset..*offset + shape.iter().product::<usize>()])
            }
            (Val::Reshaped { .. }, None) => strided_source(operand, shape),
            (Val::F32Reshaped { base, .. }, None) => {
                Source::F32(base.as_slice().expect("reshaped data is contiguous"))
            }
            (Val::Rolled { base, shift }, None) => Source::Cyclic {
                data: base.as_slice().expect("rolled data is contiguous"),
                shift: *shift,
            },
            (Val::Padded { inner, before, .. }, None) => match inner {
                Flat::Data { base, start, len } => Source::Shifted {
                    data: &base.as_slice().expect("padded data is contiguous")[*start..start + len],
                    start: *before,
                },
                Flat::Fill { value, len } => Source::Window {
                    value: *value,
                    start: *before,
                    end: before + len,
                },
            },
        })
        .collect()
}

/// The elements of `0..n` where every padded operand reads its inside:
/// there, windows are constant and shifted data is read in place.
pub fn interior(sources: &[Source<'_>], n: usize) -> Range<usize> {
    let mut range = 0..n;
    for source in sources {
        let (start, end) = match source {
            Source::Shifted { data, start } => (*start, start + data.len()),
            Source::Window { start, end, .. } => (*start, *end),
            // The longer of its two runs.
            Source::Cyclic { data, shift } if 2 * shift <= data.len() => (*shift, data.len()),
            Source::Cyclic { shift, .. } => (0, *shift),
            Source::Scalar(_) | Source::Slice(_) => continue,
            // Read through a buffer everywhere.
            Source::Strided(_) | Source::F32(_) => (0, 0),
        };
        range.start = range.start.max(start);
        range.end = range.end.min(end);
    }
    range.start..range.end.max(range.start)
}

/// Where element `at` of data of length `n` rolled by `shift` is read:
/// `(at - shift) mod n`.
pub fn cyclic_position(n: usize, shift: usize, at: usize) -> usize {
    (at + n - shift) % n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Shape;
    use ndarray::{Array, IxDyn};
    use std::rc::Rc;

    /// Every element of a strided source, read in chunks of `chunk`.
    fn read(source: &Source<'_>, n: usize, chunk: usize) -> Vec<f64> {
        let mut out = vec![f64::NAN; n];
        for (c, block) in out.chunks_mut(chunk).enumerate() {
            source.fill(c * chunk, block);
        }
        out
    }

    #[test]
    fn coalescing_merges_contiguous_and_repeated_neighbours() {
        // [2, 50, 3] read from [50, 3]: one run of 150 repeated twice.
        assert_eq!(
            coalesce(&[2, 50, 3], &[0, 3, 1]),
            (vec![2, 150], vec![0, 1])
        );
        // A row of 3 repeated 50 times per outer index: nothing merges.
        assert_eq!(
            coalesce(&[2, 50, 3], &[3, 0, 1]),
            (vec![2, 50, 3], vec![3, 0, 1])
        );
        // Two repeated axes merge, axes of length 1 go.
        assert_eq!(
            coalesce(&[4, 1, 5, 6, 2], &[0, 7, 0, 0, 1]),
            (vec![4 * 5 * 6, 2], vec![0, 1])
        );
        assert_eq!(coalesce(&[1, 1], &[0, 0]), (vec![], vec![]));
    }

    #[test]
    fn strided_sources_read_broadcasts_and_slices_as_ndarray_does() {
        let base = Rc::new(
            Array::from_iter((0..60).map(|k| k as f64 * 0.5 - 3.0))
                .into_shape_with_order(IxDyn(&[3, 4, 5]))
                .expect("sizes agree"),
        );
        let cases: Vec<(Val, Vec<usize>)> = vec![
            (Val::Array(Rc::clone(&base)), vec![2, 3, 4, 5]),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 2,
                    start: 1,
                    end: 4,
                },
                vec![3, 4, 3],
            ),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 2,
                    start: 2,
                    end: 3,
                },
                vec![2, 3, 4, 6],
            ),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 0,
                    start: 1,
                    end: 2,
                },
                vec![5, 4, 5],
            ),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 1,
                    start: 3,
                    end: 4,
                },
                vec![3, 7, 5],
            ),
            // Short rows of 1, 2 and 4 numbers out of rows of 5.
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 2,
                    start: 4,
                    end: 5,
                },
                vec![3, 4, 1],
            ),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 2,
                    start: 0,
                    end: 2,
                },
                vec![3, 4, 2],
            ),
            (
                Val::Slice {
                    base: Rc::clone(&base),
                    axis: 2,
                    start: 1,
                    end: 5,
                },
                vec![2, 3, 4, 4],
            ),
            // A contiguous part of a larger array under its own shape.
            (
                Val::Reshaped {
                    base: Rc::clone(&base),
                    offset: 20,
                    shape: Shape::from(&[2, 5][..]),
                },
                vec![3, 2, 5],
            ),
            // Lazy broadcasts: a row repeated between outer and inner
            // axes, and a whole array repeated along a new axis.
            (
                Val::Broadcast {
                    base: Rc::new(
                        Array::from_iter((0..6).map(|k| k as f64))
                            .into_shape_with_order(IxDyn(&[2, 1, 3]))
                            .expect("sizes agree"),
                    ),
                    shape: Shape::from(&[2, 9, 3][..]),
                },
                vec![2, 9, 3],
            ),
            (
                Val::Broadcast {
                    base: Rc::clone(&base),
                    shape: Shape::from(&[2, 3, 4, 5][..]),
                },
                vec![2, 3, 4, 5],
            ),
        ];
        for (operand, shape) in &cases {
            let want: Vec<f64> = operand
                .cow()
                .broadcast(IxDyn(shape))
                .expect("broadcasts")
                .iter()
                .copied()
                .collect();
            let source = strided_source(operand, shape);
            assert!(matches!(source, Source::Strided(_)));
            let n: usize = shape.iter().product();
            for chunk in [1, 3, 7, 256] {
                assert_eq!(
                    read(&source, n, chunk),
                    want,
                    "{shape:?} in chunks of {chunk}"
                );
                // Where a chunk can be read in place, it holds the same.
                for at in (0..n).step_by(chunk) {
                    let len = chunk.min(n - at);
                    if let Some(place) = source.in_place(at, len) {
                        assert_eq!(
                            place,
                            &want[at..at + len],
                            "{shape:?} at {at}, {len} in place"
                        );
                    }
                }
            }
        }
    }
}

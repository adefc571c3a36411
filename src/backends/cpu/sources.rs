//! A fused group's operands as its loops read them: in place where their
//! elements line up with the result's (contiguous data, a slice, a padded
//! array read with a shift, a broadcast number), expanded otherwise.

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
}

impl Source<'_> {
    /// Writes elements `at..at + out.len()` into `out`.
    pub fn fill(&self, at: usize, out: &mut [f64]) {
        match self {
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
            Val::Permuted { .. } => false,
            Val::Full { shape: full, .. } => full[..] == *shape,
            Val::Padded { shape: padded, .. } => padded[..] == *shape,
        };
        expanded
            .push((!in_place).then(|| super::broadcast::broadcast(&operand.cow().view(), shape)));
    }
    expanded
}

/// The operands as sources, reading the copies `expand` made.
pub fn sources<'a>(operands: &[&'a Val], expanded: &'a [Option<ArrayD<f64>>]) -> Vec<Source<'a>> {
    operands
        .iter()
        .zip(expanded)
        .map(|(operand, e)| match (operand, e) {
            (_, Some(e)) => Source::Slice(e.as_slice().expect("standard layout")),
            (Val::Scalar(x), None) => Source::Scalar(*x),
            (Val::Array(a), None) => Source::Slice(a.as_slice().expect("checked contiguous")),
            (
                Val::Slice {
                    base,
                    axis,
                    start,
                    end,
                },
                None,
            ) => Source::Slice(
                contiguous(&base.slice_axis(Axis(*axis), ndarray::Slice::from(*start..*end)))
                    .expect("checked contiguous"),
            ),
            (Val::Full { value, .. }, None) => Source::Scalar(*value),
            (Val::Permuted { .. }, None) => unreachable!("permuted operands are expanded"),
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
            Source::Scalar(_) | Source::Slice(_) => continue,
        };
        range.start = range.start.max(start);
        range.end = range.end.min(end);
    }
    range.start..range.end.max(range.start)
}

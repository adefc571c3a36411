//! A fused group run by native kernels (`native`). Inside the range where
//! every padded operand reads its inside, one call covers a whole task
//! (a chunk, for a group whose sum is fused: chunks are summed in order):
//! numbers and windows are uniform (read once), data is read in place.
//! The few chunks where a padded operand crosses its edge are filled into
//! buffers first and run by a kernel that streams them.

use super::elementwise::{CHUNK, Task, narrow_into, reads_a_number_per_chunk, vectorized};
use super::native::{self, Handle, Kernel, Operand};
use super::sources::{self, Source};
use crate::scalar;
use crate::tape::FusedGroup;
use std::ops::Range;
use std::rc::Rc;

/// The kernels a native run needs: for the interior, and for edge chunks
/// (the same kernel when no operand is a window).
pub(super) struct Kernels {
    interior: Rc<Kernel>,
    edge: Rc<Kernel>,
}

impl Kernels {
    /// The kernels for `group` over these sources and `n` elements, when
    /// it should run natively (see `native::kernel_for`; not when a step
    /// is one the interpreter vectorizes, `elementwise::vectorized`).
    pub(super) fn new(group: &FusedGroup, sources: &[Source<'_>], n: usize) -> Option<Kernels> {
        // The interpreter's vectorized loops beat a call per number.
        if group.steps.iter().any(|(op, _)| vectorized(op))
            || reads_a_number_per_chunk(group, sources, n)
        {
            return None;
        }
        // Inside, numbers and windows are known; near the edges, windows
        // are streamed from buffers.
        let layout = |windows_known: bool| -> Vec<Operand> {
            sources
                .iter()
                .map(|s| match s {
                    Source::Scalar(value) => Operand::Known(*value),
                    Source::Window { value, .. } if windows_known => Operand::Known(*value),
                    _ => Operand::Streamed,
                })
                .collect()
        };
        let (interior, edge) = (layout(true), layout(false));
        let interior_kernel = native::kernel_for(group, &interior, n)?;
        let edge_kernel = if edge == interior {
            interior_kernel.clone()
        } else {
            native::kernel_for(group, &edge, n)?
        };
        Some(Kernels {
            interior: interior_kernel,
            edge: edge_kernel,
        })
    }
}

/// A group's run by its kernels over `sources`.
pub(super) struct NativeTask<'a> {
    sources: &'a [Source<'a>],
    interior: Range<usize>,
    inside: Handle<'a>,
    edge: Handle<'a>,
    /// Each operand's uniform value (a number, a window's inside), NaN for
    /// the others.
    values: Vec<f64>,
}

impl<'a> NativeTask<'a> {
    /// The run over `n` elements (the kernels must outlive it).
    pub(super) fn new(kernels: &'a Kernels, sources: &'a [Source<'a>], n: usize) -> NativeTask<'a> {
        let values = sources
            .iter()
            .map(|s| match s {
                Source::Scalar(value) | Source::Window { value, .. } => *value,
                Source::Slice(_)
                | Source::Shifted { .. }
                | Source::Strided(_)
                | Source::Cyclic { .. }
                | Source::F32(_) => f64::NAN,
            })
            .collect();
        NativeTask {
            sources,
            interior: sources::interior(sources, n),
            inside: kernels.interior.handle(),
            edge: kernels.edge.handle(),
            values,
        }
    }

    /// Elements `start..end`, all inside every padded operand, into `out`.
    fn inside(&self, start: usize, out: &mut [f64]) {
        let end = start + out.len();
        let operands: smallvec::SmallVec<[&[f64]; 16]> = self
            .sources
            .iter()
            .enumerate()
            .map(|(k, source)| match source {
                Source::Scalar(_) | Source::Window { .. } => &self.values[k..k + 1],
                Source::Slice(data) => &data[start..end],
                Source::Shifted { data, start: at } => &data[start - at..end - at],
                // Inside its longer run: one slice of the data.
                Source::Cyclic { data, shift } => {
                    let from = sources::cyclic_position(data.len(), *shift, start);
                    &data[from..from + (end - start)]
                }
                // Never inside: `interior` is empty with a strided or f32
                // source.
                Source::Strided(_) | Source::F32(_) => &[],
            })
            .collect();
        self.inside.run(&operands, out);
    }

    /// Elements `start..start + out.len()`, near the edge of a padded
    /// operand, chunk by chunk into `out` (`buffers` is made the size
    /// they need).
    fn near_edges(&self, start: usize, out: &mut [f64], buffers: &mut Vec<f64>) {
        if out.is_empty() {
            return;
        }
        buffers.resize(self.sources.len() * CHUNK, 0.0);
        for (c, block) in out.chunks_mut(CHUNK).enumerate() {
            let at = start + c * CHUNK;
            let len = block.len();
            // Operands read where they are (slices, runs of strided views)
            // need no buffer.
            let places: smallvec::SmallVec<[Option<&[f64]>; 16]> =
                self.sources.iter().map(|s| s.in_place(at, len)).collect();
            for ((source, buffer), place) in self
                .sources
                .iter()
                .zip(buffers.chunks_mut(CHUNK))
                .zip(&places)
            {
                let buffered = matches!(
                    source,
                    Source::Shifted { .. }
                        | Source::Window { .. }
                        | Source::Strided(_)
                        | Source::Cyclic { .. }
                        | Source::F32(_)
                );
                if buffered && place.is_none() {
                    source.fill(at, &mut buffer[..len]);
                }
            }
            let operands: smallvec::SmallVec<[&[f64]; 16]> = self
                .sources
                .iter()
                .zip(buffers.chunks(CHUNK))
                .zip(&places)
                .enumerate()
                .map(|(k, ((source, buffer), place))| match (source, place) {
                    (_, Some(data)) => data,
                    (Source::Scalar(_), None) => &self.values[k..k + 1],
                    _ => &buffer[..len],
                })
                .collect();
            self.edge.run(&operands, block);
        }
    }
}

impl NativeTask<'_> {
    /// `store` with the edge buffers given.
    fn store_using(&self, start: usize, out: &mut [f64], buffers: &mut Vec<f64>) {
        let end = start + out.len();
        let a = self.interior.start.clamp(start, end);
        let b = self.interior.end.clamp(a, end);
        let (before, rest) = out.split_at_mut(a - start);
        let (inside, after) = rest.split_at_mut(b - a);
        self.near_edges(start, before, buffers);
        if !inside.is_empty() {
            self.inside(a, inside);
        }
        self.near_edges(b, after, buffers);
    }
}

impl Task for NativeTask<'_> {
    fn store(&self, start: usize, out: &mut [f64]) {
        self.store_using(start, out, &mut Vec::new());
    }

    fn store_f32(&self, start: usize, out: &mut [f32]) {
        let (mut values, mut buffers) = ([0.0; CHUNK], Vec::new());
        for (c, block) in out.chunks_mut(CHUNK).enumerate() {
            let values = &mut values[..block.len()];
            self.store_using(start + c * CHUNK, values, &mut buffers);
            narrow_into(values, block);
        }
    }

    /// The chunks' sums added in order, as the interpreter adds them;
    /// the kernel runs over several chunks a call (a call per chunk was
    /// half the time of a loop step's summed stencil of 10^4 numbers).
    fn sum(&self, start: usize, end: usize) -> f64 {
        const BLOCK: usize = 8 * CHUNK;
        let (mut values, mut buffers) = ([0.0; BLOCK], Vec::new());
        let mut total = 0.0;
        for at in (start..end).step_by(BLOCK) {
            let len = BLOCK.min(end - at);
            self.store_using(at, &mut values[..len], &mut buffers);
            for chunk in values[..len].chunks(CHUNK) {
                total += scalar::sum(chunk);
            }
        }
        total
    }
}

//! The discrete Fourier transform along an axis, on complex numbers held
//! as real pairs (design decision 18): an operand of shape `[..., 2]`
//! whose last axis holds each number's real and imaginary parts, the
//! memory layout of `Complex<f64>`.
//!
//! The transform is unnormalized both ways: forward `y_k = sum_j x_j
//! e^(-2 pi i jk/n)`, backward with `e^(+2 pi i jk/n)` (NumPy's `ifft` is
//! the backward one divided by n, a scaling left to the caller). Under
//! the real inner product of pairs (`Re sum conj(a) b`) each is the
//! other's adjoint, so the reverse rule of one is the other; the forward
//! rule is the transform of the tangent (it is linear). Lines are planned
//! by rustfft once per length and direction, per thread; on a CUDA device
//! the transform is cuFFT's (`Routine::Fft`).

use super::indexing::array;
use super::solver::{DeviceSolve, Routine, Slot};
use super::{Definition, Op, OpError, Pulled, Rules};
use crate::ir::shape::{ShapeError, show};
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD};
use rustc_hash::FxHashMap;
use rustfft::num_complex::Complex;
use rustfft::{Fft as Plan, FftPlanner};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::Arc;

/// The transform along `axis` of complex numbers held as real pairs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fft {
    /// The axis transformed (not the last one, which holds the pairs).
    pub axis: u8,
    /// The backward transform (`e^(+2 pi i jk/n)`, unnormalized).
    pub backward: bool,
}

/// Plans by length and direction.
type Plans = FxHashMap<(usize, bool), Arc<dyn Plan<f64>>>;

thread_local! {
    static PLANNER: RefCell<(FftPlanner<f64>, Plans)> =
        RefCell::new((FftPlanner::new(), FxHashMap::default()));
}

/// The plan of a transform of `len` numbers in the given direction, made
/// once per thread.
fn plan(len: usize, backward: bool) -> Arc<dyn Plan<f64>> {
    PLANNER.with(|p| {
        let (planner, plans) = &mut *p.borrow_mut();
        plans
            .entry((len, backward))
            .or_insert_with(|| {
                if backward {
                    planner.plan_fft_inverse(len)
                } else {
                    planner.plan_fft_forward(len)
                }
            })
            .clone()
    })
}

/// Transforms in place the lines of `data`, complex numbers as
/// interleaved pairs laid out `[outer, len, inner]`: for each of the
/// `outer` blocks, `inner` lines of `len` numbers `inner` apart. Every
/// line is gathered into one buffer and transformed in one call.
pub(crate) fn transform_lines(
    data: &mut [f64],
    outer: usize,
    len: usize,
    inner: usize,
    backward: bool,
) {
    if len == 0 || outer * inner == 0 {
        return;
    }
    let at = |o: usize, k: usize, i: usize| 2 * ((o * len + k) * inner + i);
    let mut lines: Vec<Complex<f64>> = Vec::with_capacity(outer * inner * len);
    for o in 0..outer {
        for i in 0..inner {
            lines.extend((0..len).map(|k| {
                let p = at(o, k, i);
                Complex::new(data[p], data[p + 1])
            }));
        }
    }
    plan(len, backward).process(&mut lines);
    for o in 0..outer {
        for i in 0..inner {
            let line = &lines[(o * inner + i) * len..][..len];
            for (k, z) in line.iter().enumerate() {
                let p = at(o, k, i);
                data[p] = z.re;
                data[p + 1] = z.im;
            }
        }
    }
}

impl Fft {
    /// `(outer, len, inner)` of a result of `shape`: the blocks before
    /// the axis, its length, and the numbers (pairs) after it.
    fn lines(&self, shape: &[usize]) -> (usize, usize, usize) {
        let axis = usize::from(self.axis);
        let outer = shape[..axis].iter().product();
        let inner = shape[axis + 1..shape.len() - 1].iter().product();
        (outer, shape[axis], inner)
    }

    fn with(&self, axis: u8, backward: bool) -> Op {
        Op::Fft(Fft { axis, backward })
    }
}

impl Definition for Fft {
    fn describe(&self) -> String {
        let name = if self.backward { "ifft" } else { "fft" };
        format!("{name}[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        if x.last() != Some(&2) {
            return Err(ShapeError(format!(
                "a transform takes complex numbers as real pairs (a last axis of 2), got shape {}",
                show(x)
            )));
        }
        if usize::from(self.axis) + 1 >= x.len() {
            return Err(ShapeError(format!(
                "axis {} is out of range for complex numbers of shape {}",
                self.axis,
                show(&x[..x.len() - 1])
            )));
        }
        Ok(x.iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let (outer, len, inner) = self.lines(shape);
        let x = operands[0].as_standard_layout();
        let data = x.as_slice().expect("a standard-layout array is contiguous");
        let mut out = data.to_vec();
        transform_lines(&mut out, outer, len, inner, self.backward);
        array(shape, out)
    }

    /// On a device: the operand copied to the result, transformed there
    /// in place (cuFFT on CUDA).
    fn device_solve(&self, _operands: &[&[usize]], shape: &[usize]) -> Option<DeviceSolve> {
        let (outer, len, inner) = self.lines(shape);
        let mut solve = DeviceSolve::default();
        solve.copy(Slot::Operand(0), Slot::Out, 2 * outer * len * inner);
        let routine = Routine::Fft {
            len,
            inner,
            outer,
            backward: self.backward,
        };
        solve.routine(routine, &[], &[Slot::Out]);
        Some(solve)
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        let adjoint = self.with(self.axis, !self.backward);
        SmallVec::from_slice(&[Some(rules.graph.add_valid(TOp::Op(adjoint), &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let op = self.with(self.axis + rules.lead() as u8, self.backward);
        rules.graph.add_valid(TOp::Op(op), &[t])
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        let len = shape[usize::from(self.axis)].max(1);
        let numbers: usize = shape.iter().product::<usize>() / 2;
        // 5 n log2 n per line of n, the usual count.
        (5.0 * numbers as f64 * (len as f64).log2().max(1.0)) as u64
    }

    /// Linear: the transform of the summed tensor.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<Op> {
        let axis = self.axis.checked_sub(1)?;
        (batched == [true]).then(|| self.with(axis, self.backward))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = self.with(self.axis + 1, self.backward);
        crate::ir::ops::batching::shifted_axis(graph, op, operands, batched, size)
    }
}

#[cfg(test)]
mod tests;

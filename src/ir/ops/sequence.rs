//! Operations along one axis in order: a first-order linear recurrence
//! (`h[0] = b[0]`, `h[i] = a[i] h[i-1] + b[i]`), which is `cumsum` with
//! `a = 1` and `cumprod` with `a = x`, `b = (x[0], 0, 0, ...)`, and `flip`.
//!
//! The recurrence is closed under differentiation: its reverse is the same
//! recurrence run the other way over the cotangent, and its tangent is the
//! recurrence over `da * h[i-1] + db`, so second derivatives of `cumsum`
//! and `cumprod` need nothing more (and `cumprod` is exact at zeros, where
//! `prod / x` is not).

use super::indexing::array;
use super::{CudaKernel, Definition, Op, OpError, Pulled, Rules};
use crate::ir::shape::{ShapeError, broadcasts_to, show};
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};
use smallvec::SmallVec;

/// Lanes are split over threads above this many numbers.
const PARALLEL: usize = 1 << 15;

/// `h[i] = a[i] h[i-1] + b[i]` along `axis` (from the last element
/// backwards when `reverse`: `h[i] = a[i] h[i+1] + b[i]`). Operands
/// `(a, b)`; `a` broadcasts to `b`'s shape, which is the result's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Recurrence {
    /// The axis the recurrence runs along.
    pub axis: u8,
    /// Whether it runs from the end.
    pub reverse: bool,
}

/// `x` moved one place along `axis` toward the end (`forward`) or the
/// start, the vacated place filled with zeros.
fn shift(rules: &mut Rules<'_>, x: Id, axis: u8, forward: bool) -> Id {
    let len = rules.shape(x)[usize::from(axis)];
    if len == 0 {
        return x;
    }
    let (start, end, before, after) = if forward {
        (0, len - 1, 1, 0)
    } else {
        (1, len, 0, 1)
    };
    let kept = rules.graph.add_valid(TOp::Slice { axis, start, end }, &[x]);
    rules.graph.add_valid(
        TOp::Pad {
            axis,
            before,
            after,
        },
        &[kept],
    )
}

impl Recurrence {
    fn op(&self, lead: usize, reverse: bool) -> Op {
        Op::Recurrence(Recurrence {
            axis: self.axis + lead as u8,
            reverse,
        })
    }
}

impl Definition for Recurrence {
    fn describe(&self) -> String {
        format!(
            "recurrence[{}{}]",
            self.axis,
            if self.reverse { " reverse" } else { "" }
        )
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let (a, b) = (operands[0], operands[1]);
        if usize::from(self.axis) >= b.len() {
            return Err(ShapeError(format!(
                "axis {} is out of range for a tensor of shape {}",
                self.axis,
                show(b)
            )));
        }
        if !broadcasts_to(a, b) {
            return Err(ShapeError(format!(
                "a recurrence's factors of shape {} do not broadcast to {}",
                show(a),
                show(b)
            )));
        }
        Ok(b.iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let axis = usize::from(self.axis);
        let a = operands[0]
            .broadcast(IxDyn(shape))
            .ok_or_else(|| OpError::new("internal: factors do not broadcast"))?;
        let mut out = operands[1].as_standard_layout().into_owned();
        let run = |mut lane: ndarray::ArrayViewMut1<'_, f64>,
                   factors: ndarray::ArrayView1<'_, f64>| {
            let n = lane.len();
            if self.reverse {
                for i in (0..n.saturating_sub(1)).rev() {
                    lane[i] += factors[i] * lane[i + 1];
                }
            } else {
                for i in 1..n {
                    lane[i] += factors[i] * lane[i - 1];
                }
            }
        };
        let lanes = out.lanes_mut(Axis(axis));
        let factor_lanes = a.lanes(Axis(axis));
        if shape.iter().product::<usize>() >= PARALLEL {
            ndarray::Zip::from(lanes)
                .and(factor_lanes)
                .par_for_each(&run);
        } else {
            ndarray::Zip::from(lanes).and(factor_lanes).for_each(run);
        }
        let data = out.into_raw_vec_and_offset().0;
        array(shape, data)
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (outer, len, inner) = super::indexing::split(shape, self.axis);
        // The factors' flat position of the result's element `p`, reading
        // broadcast axes at stride 0.
        let a = operands[0];
        let offset = shape.len() - a.len();
        let mut position = String::from("        long long rest = p, at = 0;\n");
        let mut stride = 1usize;
        let mut strides = vec![0usize; shape.len()];
        for d in (0..a.len()).rev() {
            strides[d + offset] = if a[d] == 1 { 0 } else { stride };
            stride *= a[d];
        }
        for d in (0..shape.len()).rev() {
            position.push_str(&format!(
                "        at += (rest % {dim}LL) * {step}LL; rest /= {dim}LL;\n",
                dim = shape[d].max(1),
                step = strides[d]
            ));
        }
        // The element before `k` in the recurrence's order.
        let step = if self.reverse { "k + 1" } else { "k - 1" };
        Some(CudaKernel {
            name: "recurrence",
            source: format!(
                "extern \"C\" __global__ void recurrence(long long n, const double* a, const double* b, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long o = e / {inner}LL, i = e % {inner}LL;
        for (long long j = 0; j < {len}LL; j++) {{
            long long k = {reverse} ? {last}LL - j : j;
            long long p = (o * {len}LL + k) * {inner}LL + i;
            double h = b[p];
            if (j > 0) {{
{position}                h += a[at] * out[(o * {len}LL + ({step})) * {inner}LL + i];
            }}
            out[p] = h;
        }}
    }}
}}
",
                inner = inner.max(1),
                reverse = if self.reverse { 1 } else { 0 },
                last = len.saturating_sub(1),
            ),
            threads: if len == 0 { 0 } else { outer * inner },
            zeroed: false,
            copy_first: false,
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let (a, b) = (operands[0], operands[1]);
        let axis = self.axis;
        let full = rules.shape(b);
        // lambda[i] = g[i] + a[i+1] lambda[i+1]: the same recurrence the
        // other way, with the factors moved one place against it.
        let a_len = rules.shape(a);
        let rank_gap = full.len() - a_len.len();
        let along = usize::from(axis)
            .checked_sub(rank_gap)
            .map(|k| a_len[k])
            .unwrap_or(1);
        let moved = if along == 1 {
            a
        } else {
            shift(rules, a, axis - rank_gap as u8, self.reverse)
        };
        let lambda = rules.op(self.op(0, !self.reverse), &[moved, g]);
        // da[i] = lambda[i] h[i-1] (h[i+1] when reversed), 0 at the start.
        let previous = shift(rules, node, axis, !self.reverse);
        let da = rules.mul(lambda, previous);
        let da = rules.sum_to_like(da, a);
        SmallVec::from_slice(&[Some(da), Some(lambda)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let (a, b) = (operands[0], operands[1]);
        let lead = rules.lead();
        let mut driver = tangents[1];
        if let Some(da) = tangents[0] {
            let previous = shift(rules, node, self.axis, !self.reverse);
            let term = rules.mul(da, previous);
            driver = Some(match driver {
                Some(db) => rules.add(db, term),
                None => term,
            });
        }
        let driver = rules.tangent_or_zero(b, driver);
        let mut shape: Shape = rules.batch().into_iter().collect();
        shape.extend_from_slice(&rules.shape(b));
        let driver = rules.graph.expand_to(driver, &shape);
        rules.op(self.op(lead, self.reverse), &[a, driver])
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        2 * shape.iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        // The elements of a and b up to this one along the axis (from it
        // to the end, reversed); a broadcasts to b from the right.
        let a = usize::from(self.axis);
        let index = crate::ir::ops::reads::unravel(element, shape);
        let steps = if self.reverse {
            index[a]..shape[a]
        } else {
            0..index[a] + 1
        };
        let coefficients = operands[0];
        let lead = shape.len() - coefficients.len();
        for i in steps {
            let mut at = index.clone();
            at[a] = i;
            out.push((1, crate::ir::ops::reads::ravel(&at, shape)));
            let from: SmallVec<[usize; 6]> = (0..coefficients.len())
                .map(|d| {
                    if coefficients[d] == 1 {
                        0
                    } else {
                        at[lead + d]
                    }
                })
                .collect();
            out.push((0, crate::ir::ops::reads::ravel(&from, coefficients)));
        }
        true
    }

    /// Linear in `b` for a shared `a`: the recurrence of the summed `b`.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<Op> {
        let axis = self.axis.checked_sub(1)?;
        (batched == [false, true]).then_some(Op::Recurrence(Recurrence {
            axis,
            reverse: self.reverse,
        }))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        // `b` has the result's shape: made batched; `a` broadcasts to it
        // from the right, so a batched `a` keeps its batch axis in front.
        let rank = graph.shape(operands[1]).len() - usize::from(batched[1]);
        let a = crate::ir::ops::batching::align(graph, operands[0], batched[0], rank);
        let b = crate::ir::ops::batching::full(graph, operands[1], batched[1], size);
        let op = crate::ir::ops::Op::Recurrence(Recurrence {
            axis: self.axis + 1,
            reverse: self.reverse,
        });
        graph.add(TOp::Op(op), &[a, b]).ok()
    }
}

/// The elements in reverse order along `axis`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Flip {
    /// The axis reversed.
    pub axis: u8,
}

impl Definition for Flip {
    fn describe(&self) -> String {
        format!("flip[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        if usize::from(self.axis) >= x.len() {
            return Err(ShapeError(format!(
                "axis {} is out of range for a tensor of shape {}",
                self.axis,
                show(x)
            )));
        }
        Ok(x.iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let mut view = operands[0].clone();
        view.invert_axis(Axis(usize::from(self.axis)));
        let data: Vec<f64> = view.as_standard_layout().iter().copied().collect();
        array(shape, data)
    }

    fn cuda(&self, _operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (_, len, inner) = super::indexing::split(shape, self.axis);
        let (len, inner) = (len.max(1), inner.max(1));
        Some(CudaKernel {
            name: "flip",
            source: format!(
                "extern \"C\" __global__ void flip(long long n, const double* x, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long i = e % {inner}LL, k = (e / {inner}LL) % {len}LL, o = e / ({inner}LL * {len}LL);
        out[e] = x[(o * {len}LL + ({len}LL - 1 - k)) * {inner}LL + i];
    }}
}}
"
            ),
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        SmallVec::from_slice(&[Some(rules.flip(g, usize::from(self.axis)))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let axis = usize::from(self.axis) + rules.lead();
        rules.flip(t, axis)
    }

    fn flops(&self, _operands: &[&[usize]], _shape: &[usize]) -> u64 {
        0
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = operands;
        let a = usize::from(self.axis);
        let mut index = crate::ir::ops::reads::unravel(element, shape);
        index[a] = shape[a] - 1 - index[a];
        out.push((0, crate::ir::ops::reads::ravel(&index, shape)));
        true
    }

    /// Linear: the summed tensor reversed.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<Op> {
        let axis = self.axis.checked_sub(1)?;
        (batched == [true]).then_some(Op::Flip(Flip { axis }))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Flip(Flip {
            axis: self.axis + 1,
        });
        crate::ir::ops::batching::shifted_axis(graph, op, operands, batched, size)
    }
}

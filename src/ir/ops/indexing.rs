//! Indexing with integer tensors: `gather` (slices at positions along an
//! axis), `scatter-add` (updates added at positions) and `index-set`
//! (slices replaced at positions). Indices are whole numbers stored as
//! floats; negative ones count from the end; anything else is an error
//! naming the index. The reverse of a gather is a scatter-add and of a
//! scatter-add a gather; `index-set`'s reverse gathers for the updates
//! that were kept (the last one of repeated positions) and zeroes the
//! overwritten slices for the tensor.
//!
//! Layout: along `axis` of `t` (shape `outer x len x inner`), an index
//! tensor of `m` elements selects slices of `inner` contiguous numbers; the
//! selected slices form a tensor of shape `t[..axis] ++ idx ++ t[axis+1..]`.

#[path = "indexing_kernels.rs"]
mod kernels;

use super::{CudaKernel, Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::math::language::Math;
use crate::ir::shape::{ShapeError, show};
use crate::ir::{CmpOp, Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Work below this many numbers runs on one thread.
pub(super) const PARALLEL: usize = 1 << 15;

/// The shape of the slices `idx` selects from `t` along `axis`.
fn gathered_shape(t: &[usize], idx: &[usize], axis: u8, what: &str) -> Result<Shape, ShapeError> {
    let axis = usize::from(axis);
    if axis >= t.len() {
        return Err(ShapeError(format!(
            "{what}: axis {axis} is out of range for a tensor of shape {}",
            show(t)
        )));
    }
    let mut out: Shape = t[..axis].iter().copied().collect();
    out.extend_from_slice(idx);
    out.extend_from_slice(&t[axis + 1..]);
    Ok(out)
}

/// `(outer, len, inner)` of `shape` around `axis`.
pub(super) fn split(shape: &[usize], axis: u8) -> (usize, usize, usize) {
    let axis = usize::from(axis);
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// The positions `idx` names along an axis of length `len`, checked:
/// whole, in range (negative ones counting from the end).
pub fn positions(idx: &ArrayViewD<'_, f64>, len: usize) -> Result<Vec<usize>, OpError> {
    let check = |&k: &f64| kernels::position(k, len);
    match idx.as_slice() {
        Some(slice) if slice.len() >= PARALLEL => slice.par_iter().map(check).collect(),
        Some(slice) => slice.iter().map(check).collect(),
        None => idx.iter().map(check).collect(),
    }
}

/// Checks the positions `idx` names along an axis of length `len` (as
/// `positions` does, without keeping them).
pub fn check_positions(idx: &ArrayViewD<'_, f64>, len: usize) -> Result<(), OpError> {
    kernels::check(&contiguous(idx), len)
}

/// Contiguous numbers of a view (copied only when they are not).
pub(super) fn contiguous<'a>(x: &'a ArrayViewD<'_, f64>) -> std::borrow::Cow<'a, [f64]> {
    match x.as_slice() {
        Some(slice) => std::borrow::Cow::Borrowed(slice),
        None => std::borrow::Cow::Owned(x.iter().copied().collect()),
    }
}

/// `gather`: `out[o, j, i] = t[o, idx[j], i]`. Operands `(t, idx)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gather {
    /// The axis of `t` the indices select along.
    pub axis: u8,
    /// Where it was called.
    pub site: Site,
}

impl Definition for Gather {
    fn describe(&self) -> String {
        format!("gather[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        gathered_shape(operands[0], operands[1], self.axis, "gather")
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        self.cpu_in(operands, shape, &|_| None)
    }

    fn cpu_in(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
        storage: &dyn Fn(usize) -> Option<Vec<f64>>,
    ) -> Result<ArrayD<f64>, OpError> {
        let sizes = split(operands[0].shape(), self.axis);
        let source = contiguous(&operands[0]);
        let idx = contiguous(&operands[1]);
        let kept = storage(shape.iter().product()).unwrap_or_default();
        array(shape, kernels::gather(&source, &idx, sizes, kept)?)
    }

    fn differentiable(&self, operand: usize) -> bool {
        operand == 0
    }

    fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        Some((1, *operands[0].get(usize::from(self.axis))?))
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let (t, idx) = (operands[0], operands[1]);
        let shape = rules.shape(t);
        let zeros = rules.graph.full(0.0, &shape);
        let scatter = ScatterAdd {
            axis: self.axis,
            site: self.site,
        };
        let back = rules.op(super::Op::ScatterAdd(scatter), &[zeros, idx, g]);
        SmallVec::from_slice(&[Some(back), None])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let shifted = Gather {
            axis: self.axis + rules.lead() as u8,
            site: self.site,
        };
        rules.op(super::Op::Gather(shifted), &[t, operands[1]])
    }

    fn flops(&self, operands: &[&[usize]], shape: &[usize]) -> u64 {
        (shape.iter().product::<usize>() + operands[1].iter().product::<usize>()) as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        // The lane along the axis: the positions are values.
        let (t, picked) = (operands[0], operands[1].len());
        let a = usize::from(self.axis);
        let index = crate::ir::ops::reads::unravel(element, shape);
        let mut at: SmallVec<[usize; 6]> = index[..a].iter().copied().collect();
        at.push(0);
        at.extend_from_slice(&index[a + picked..]);
        crate::ir::ops::reads::lane(out, 0, t, &at, a);
        true
    }

    /// Linear in `t`: the same positions of the summed tensor.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        let axis = self.axis.checked_sub(1)?;
        (batched == [true, false]).then_some(crate::ir::ops::Op::Gather(Gather {
            axis,
            site: self.site,
        }))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let (t, idx) = (operands[0], operands[1]);
        let axis = self.axis;
        let gather = |axis: u8| {
            crate::ir::ops::Op::Gather(Gather {
                axis,
                site: self.site,
            })
        };
        match (batched[0], batched[1]) {
            // The same positions in every example's tensor.
            (true, false) => graph.add(TOp::Op(gather(axis + 1)), &[t, idx]).ok(),
            // Each example's positions in one shared tensor: the batch
            // lands at `axis`, moved to the front.
            (false, true) => {
                let node = graph.add(TOp::Op(gather(axis)), &[t, idx]).ok()?;
                Some(batch_to_front(graph, node, axis))
            }
            // Each example's positions in its own tensor: positions along
            // the axis, slice by slice (`take-along`).
            _ => {
                let t_shape = graph.shape(t).clone();
                let idx_shape = graph.shape(idx).clone();
                let a = usize::from(axis) + 1;
                let (positions, _) = positions_along(graph, idx, &t_shape, a, size);
                let op = crate::ir::ops::Op::TakeAlong(super::along::TakeAlong {
                    axis: axis + 1,
                    site: self.site,
                });
                let taken = graph.add(TOp::Op(op), &[t, positions]).ok()?;
                let mut out: Shape = t_shape[..a].iter().copied().collect();
                out.extend_from_slice(&idx_shape[1..]);
                out.extend_from_slice(&t_shape[a + 1..]);
                Some(graph.reshape(taken, &out))
            }
        }
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (outer, len, inner) = split(operands[0], self.axis);
        let _ = outer;
        let m: usize = operands[1].iter().product();
        Some(CudaKernel {
            name: "gather",
            source: format!(
                "extern \"C\" __global__ void gather(long long n, const double* t, const double* idx, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long i = e % {inner}LL;
        long long row = e / {inner}LL;
        long long j = row % {m}LL;
        long long o = row / {m}LL;
        double k = idx[j];
        if (k < 0.0) k += {len}.0;
        out[e] = (k >= 0.0 && k < {len}.0 && k == floor(k)) ? t[(o * {len}LL + (long long)k) * {inner}LL + i] : nan(\"\");
    }}
}}
",
                inner = inner.max(1),
                m = m.max(1),
            ),
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        })
    }

    fn site(&self) -> Site {
        self.site
    }
}

/// `scatter-add`: `out = t` with `out[o, idx[j], i] += u[o, j, i]`.
/// Operands `(t, idx, updates)`; the updates have the gathered shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScatterAdd {
    /// The axis of `t` the indices select along.
    pub axis: u8,
    /// Where it was called.
    pub site: Site,
}

/// Checks that `updates` has the shape `idx` selects from `t`.
fn check_updates(
    t: &[usize],
    idx: &[usize],
    updates: &[usize],
    axis: u8,
    what: &str,
) -> Result<Shape, ShapeError> {
    let expected = gathered_shape(t, idx, axis, what)?;
    if expected[..] != *updates {
        return Err(ShapeError(format!(
            "{what}: the values have shape {}, the positions select {} from a tensor of shape {}",
            show(updates),
            show(&expected),
            show(t)
        )));
    }
    Ok(t.iter().copied().collect())
}

/// What an element of `scatter-add`'s or `index-set`'s result may read:
/// the same element of t, and every update aimed along the axis at the
/// element's lane (the positions are values).
fn scatter_reads(
    axis: u8,
    operands: &[&[usize]],
    shape: &[usize],
    element: usize,
    out: &mut Vec<(usize, usize)>,
) {
    let (idx, updates) = (operands[1], operands[2]);
    let a = usize::from(axis);
    let index = crate::ir::ops::reads::unravel(element, shape);
    out.push((0, element));
    let picks: usize = idx.iter().product();
    let mut at: SmallVec<[usize; 6]> = index[..a].iter().copied().collect();
    at.extend(std::iter::repeat_n(0, idx.len()));
    at.extend_from_slice(&index[a + 1..]);
    for j in 0..picks {
        let which = crate::ir::ops::reads::unravel(j, idx);
        at[a..a + idx.len()].copy_from_slice(&which);
        out.push((2, crate::ir::ops::reads::ravel(&at, updates)));
    }
}

impl Definition for ScatterAdd {
    fn describe(&self) -> String {
        format!("scatter-add[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        check_updates(
            operands[0],
            operands[1],
            operands[2],
            self.axis,
            "scatter-add",
        )
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let (outer, len, inner) = split(shape, self.axis);
        let (t, idx) = (contiguous(&operands[0]), contiguous(&operands[1]));
        let updates = contiguous(&operands[2]);
        array(
            shape,
            kernels::scatter_add(&t, &idx, &updates, outer, len, inner)?,
        )
    }

    fn differentiable(&self, operand: usize) -> bool {
        operand != 1
    }

    fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        Some((1, *operands[0].get(usize::from(self.axis))?))
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let gather = Gather {
            axis: self.axis,
            site: self.site,
        };
        let to_updates = rules.op(super::Op::Gather(gather), &[g, operands[1]]);
        SmallVec::from_slice(&[Some(g), None, Some(to_updates)])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let u = rules.tangent_or_zero(operands[2], tangents[2]);
        let shifted = ScatterAdd {
            axis: self.axis + rules.lead() as u8,
            site: self.site,
        };
        rules.op(super::Op::ScatterAdd(shifted), &[t, operands[1], u])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        operands[2].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        scatter_reads(self.axis, operands, shape, element, out);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let t = crate::ir::ops::batching::full(graph, operands[0], batched[0], size);
        let updates = crate::ir::ops::batching::full(graph, operands[2], batched[2], size);
        let idx = operands[1];
        if !batched[1] {
            let op = crate::ir::ops::Op::ScatterAdd(ScatterAdd {
                axis: self.axis + 1,
                site: self.site,
            });
            return graph.add(TOp::Op(op), &[t, idx, updates]).ok();
        }
        // Each example's positions: added along the axis slice by slice
        // (`put-along-add`), the positions spread over the other axes.
        let t_shape = graph.shape(t).clone();
        let a = usize::from(self.axis) + 1;
        let (positions, spread) = positions_along(graph, idx, &t_shape, a, size);
        let updates = graph.reshape(updates, &spread);
        let op = crate::ir::ops::Op::PutAlongAdd(super::along::PutAlongAdd {
            axis: self.axis + 1,
            site: self.site,
        });
        graph.add(TOp::Op(op), &[t, positions, updates]).ok()
    }

    fn cuda(&self, operands: &[&[usize]], _shape: &[usize]) -> Option<CudaKernel> {
        let (_, len, inner) = split(operands[0], self.axis);
        let m: usize = operands[1].iter().product();
        Some(CudaKernel {
            name: "scatter_add",
            source: format!(
                "extern \"C\" __global__ void scatter_add(long long n, const double* t, const double* idx, const double* u, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long i = e % {inner}LL;
        long long row = e / {inner}LL;
        long long j = row % {m}LL;
        long long o = row / {m}LL;
        double k = idx[j];
        if (k < 0.0) k += {len}.0;
        if (k >= 0.0 && k < {len}.0 && k == floor(k)) atomicAdd(&out[(o * {len}LL + (long long)k) * {inner}LL + i], u[e]);
    }}
}}
",
                inner = inner.max(1),
                m = m.max(1),
            ),
            threads: operands[2].iter().product(),
            zeroed: false,
            copy_first: true,
        })
    }

    fn site(&self) -> Site {
        self.site
    }
}

/// `index-set`: `out = t` with `out[o, idx[j], i] = v[o, j, i]`; of
/// repeated positions the last one is kept. Operands `(t, idx, values)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexSet {
    /// The axis of `t` the indices select along.
    pub axis: u8,
    /// Where it was called.
    pub site: Site,
}

/// Over a batch of positions `idx` (`[size] ++ shape`, along an axis of
/// length `len`, counted from the end where negative), 1.0 where a
/// position is the last of its example's occurrences of it: one pass over
/// all examples' positions, each offset by its example's number times
/// `len`.
fn last_occurrences(graph: &mut TensorGraph, idx: Id, len: usize, size: usize) -> Option<Id> {
    let idx_shape = graph.shape(idx).clone();
    let per_example: usize = idx_shape[1..].iter().product();
    let zero = graph.num(0.0);
    let length = graph.num(len as f64);
    let negative = graph.add(TOp::Compare(CmpOp::Lt), &[idx, zero]).ok()?;
    let wrapped = graph
        .add(TOp::Map(Math::Add([Id::from(0); 2])), &[idx, length])
        .ok()?;
    let idx = graph.add(TOp::Where, &[negative, wrapped, idx]).ok()?;
    // The examples' numbers 0..size, as a running count of ones.
    let one = graph.num(1.0);
    let ones = graph.full(1.0, &[size]);
    let counting = Op::Recurrence(super::sequence::Recurrence {
        axis: 0,
        reverse: false,
    });
    let count = graph.add(TOp::Op(counting), &[one, ones]).ok()?;
    let numbers = graph
        .add(TOp::Map(Math::Sub([Id::from(0); 2])), &[count, one])
        .ok()?;
    let mut lined: Shape = smallvec::smallvec![1; idx_shape.len()];
    lined[0] = size;
    let numbers = graph.reshape(numbers, &lined);
    let offsets = graph
        .add(TOp::Map(Math::Mul([Id::from(0); 2])), &[numbers, length])
        .ok()?;
    let spread = graph
        .add(TOp::Map(Math::Add([Id::from(0); 2])), &[idx, offsets])
        .ok()?;
    let flat = graph.reshape(spread, &[size * per_example]);
    let last = Op::LastOccurrence(LastOccurrence { len: size * len });
    let last = graph.add(TOp::Op(last), &[flat]).ok()?;
    Some(graph.reshape(last, &idx_shape))
}

impl IndexSet {
    /// `index-set` over a batch whose positions differ between examples
    /// (`t`, `values` and `idx` batched): the last value written at each
    /// example's position, scattered with `scatter-add`, where the
    /// example's positions hit; `t` elsewhere. Each example's last
    /// occurrences are found in one pass over all examples' positions,
    /// offset by the example's number times the axis length.
    fn batch_positions(
        &self,
        graph: &mut TensorGraph,
        t: Id,
        idx: Id,
        values: Id,
        size: usize,
    ) -> Option<Id> {
        let a = usize::from(self.axis) + 1;
        let t_shape = graph.shape(t).clone();
        let len = t_shape[a];
        let idx_shape = graph.shape(idx).clone();
        let last = last_occurrences(graph, idx, len, size)?;
        let value_rank = graph.shape(values).len();
        let mut kept_shape: Shape = smallvec::smallvec![1; value_rank];
        kept_shape[0] = size;
        kept_shape[a..a + idx_shape.len() - 1].copy_from_slice(&idx_shape[1..]);
        let last = graph.reshape(last, &kept_shape);
        let kept = graph
            .add(TOp::Map(Math::Mul([Id::from(0); 2])), &[values, last])
            .ok()?;
        let scatter = ScatterAdd {
            axis: self.axis,
            site: self.site,
        };
        let empty = graph.full(0.0, &t_shape);
        let value_shape = graph.shape(values).clone();
        let marks = graph.full(1.0, &value_shape);
        let all = [true; 3];
        let hits = scatter.batch(graph, &[empty, idx, marks], &all, size)?;
        let zero = graph.num(0.0);
        let hit = graph.add(TOp::Compare(CmpOp::Gt), &[hits, zero]).ok()?;
        let written = scatter.batch(graph, &[empty, idx, kept], &all, size)?;
        graph.add(TOp::Where, &[hit, written, t]).ok()
    }
}

impl Definition for IndexSet {
    fn describe(&self) -> String {
        format!("index-set[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        check_updates(
            operands[0],
            operands[1],
            operands[2],
            self.axis,
            "index-set",
        )
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let (outer, len, inner) = split(shape, self.axis);
        let picks = positions(&operands[1], len)?;
        let mut out = contiguous(&operands[0]).into_owned();
        let values = contiguous(&operands[2]);
        let m = picks.len();
        for o in 0..outer {
            for (j, &k) in picks.iter().enumerate() {
                let from = &values[(o * m + j) * inner..(o * m + j + 1) * inner];
                let start = (o * len + k) * inner;
                out[start..start + inner].copy_from_slice(from);
            }
        }
        array(shape, out)
    }

    fn differentiable(&self, operand: usize) -> bool {
        operand != 1
    }

    fn cuda(&self, operands: &[&[usize]], _shape: &[usize]) -> Option<CudaKernel> {
        let (outer, len, inner) = split(operands[0], self.axis);
        let m: usize = operands[1].iter().product();
        // One thread per lane (o, i) sets the positions in order, so the
        // last of repeated positions wins; a position out of range makes
        // the lane NaN (the CPU reports it).
        Some(CudaKernel {
            name: "index_set",
            source: format!(
                "extern \"C\" __global__ void index_set(long long n, const double* t, const double* idx, const double* v, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long i = e % {inner}LL, o = e / {inner}LL;
        for (long long j = 0; j < {m}LL; j++) {{
            double k = idx[j];
            if (k < 0.0) k += {len}.0;
            if (!(k >= 0.0 && k < {len}.0 && k == floor(k))) {{
                for (long long r = 0; r < {len}LL; r++) out[(o * {len}LL + r) * {inner}LL + i] = eps_nan();
                break;
            }}
            out[(o * {len}LL + (long long)k) * {inner}LL + i] = v[(o * {m}LL + j) * {inner}LL + i];
        }}
    }}
}}
",
                inner = inner.max(1),
            ),
            threads: if len == 0 { 0 } else { outer * inner },
            zeroed: false,
            copy_first: true,
        })
    }

    fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        Some((1, *operands[0].get(usize::from(self.axis))?))
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let (idx, values) = (operands[1], operands[2]);
        let value_shape = rules.shape(values);
        let zeros = rules.graph.full(0.0, &value_shape);
        let cleared = rules.op(super::Op::IndexSet(self.clone()), &[g, idx, zeros]);
        let gather = Gather {
            axis: self.axis,
            site: self.site,
        };
        let picked = rules.op(super::Op::Gather(gather), &[g, idx]);
        // Only the last of repeated positions was written: the others get
        // no cotangent.
        let len = rules.shape(operands[0])[usize::from(self.axis)];
        let kept = rules.op(super::Op::LastOccurrence(LastOccurrence { len }), &[idx]);
        let idx_rank = rules.rank(idx);
        let mut kept_shape: Shape = std::iter::repeat_n(1, usize::from(self.axis)).collect();
        kept_shape.extend_from_slice(&rules.shape(idx));
        kept_shape.extend(std::iter::repeat_n(
            1,
            value_shape.len() - usize::from(self.axis) - idx_rank,
        ));
        let kept = rules.reshape(kept, &kept_shape);
        let to_values = rules.mul(picked, kept);
        SmallVec::from_slice(&[Some(cleared), None, Some(to_values)])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        let v = rules.tangent_or_zero(operands[2], tangents[2]);
        let shifted = IndexSet {
            axis: self.axis + rules.lead() as u8,
            site: self.site,
        };
        rules.op(super::Op::IndexSet(shifted), &[t, operands[1], v])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        operands[2].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        scatter_reads(self.axis, operands, shape, element, out);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let t = crate::ir::ops::batching::full(graph, operands[0], batched[0], size);
        let values = crate::ir::ops::batching::full(graph, operands[2], batched[2], size);
        if batched[1] {
            return self.batch_positions(graph, t, operands[1], values, size);
        }
        let op = crate::ir::ops::Op::IndexSet(IndexSet {
            axis: self.axis + 1,
            site: self.site,
        });
        graph.add(TOp::Op(op), &[t, operands[1], values]).ok()
    }

    fn site(&self) -> Site {
        self.site
    }
}

/// The longest index list whose last occurrences are found on a device
/// (each position is compared with every later one).
const LAST_OCCURRENCE_ON_DEVICE: usize = 1 << 14;

/// For each element of an index tensor (in row-major order), 1.0 where no
/// later element names the same position along an axis of length `len`,
/// else 0.0. Not differentiable (the indices carry no derivative).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LastOccurrence {
    /// The length of the axis the indices select along.
    pub len: usize,
}

impl Definition for LastOccurrence {
    fn describe(&self) -> String {
        format!("last-occurrence[{}]", self.len)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let picks = positions(&operands[0], self.len)?;
        let mut seen = vec![false; self.len];
        let mut out = vec![0.0; picks.len()];
        for (j, &k) in picks.iter().enumerate().rev() {
            if !std::mem::replace(&mut seen[k], true) {
                out[j] = 1.0;
            }
        }
        array(shape, out)
    }

    fn differentiable(&self, _operand: usize) -> bool {
        false
    }

    fn cuda(&self, operands: &[&[usize]], _shape: &[usize]) -> Option<CudaKernel> {
        // Each position compared with every later one: for index lists of
        // modest length (longer ones run on the host).
        let m: usize = operands[0].iter().product();
        if m > LAST_OCCURRENCE_ON_DEVICE {
            return None;
        }
        let len = self.len;
        Some(CudaKernel {
            name: "last_occurrence",
            source: format!(
                "extern \"C\" __global__ void last_occurrence(long long n, const double* idx, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        double k = idx[e];
        if (k < 0.0) k += {len}.0;
        if (!(k >= 0.0 && k < {len}.0 && k == floor(k))) {{ out[e] = eps_nan(); continue; }}
        double last = 1.0;
        for (long long j = e + 1; j < n; j++) {{
            double other = idx[j];
            if (other < 0.0) other += {len}.0;
            if (other == k) {{ last = 0.0; break; }}
        }}
        out[e] = last;
    }}
}}
"
            ),
            threads: m,
            zeroed: false,
            copy_first: false,
        })
    }

    fn positions(&self, _operands: &[&[usize]]) -> Option<(usize, usize)> {
        Some((0, self.len))
    }

    fn vjp(&self, _rules: &mut Rules<'_>, _node: Id, _operands: &[Id], _g: Id) -> Pulled {
        SmallVec::from_slice(&[None])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        node: Id,
        _operands: &[Id],
        _tangents: &[Option<Id>],
    ) -> Id {
        rules.zero_tangent(node)
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        operands[0].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = (operands, shape, element, out);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let _ = batched;
        last_occurrences(graph, operands[0], self.len, size)
    }
}

/// `data` as an array of `shape`.
pub(crate) fn array(shape: &[usize], data: Vec<f64>) -> Result<ArrayD<f64>, OpError> {
    ArrayD::from_shape_vec(IxDyn(shape), data)
        .map_err(|e| OpError::new(format!("internal: a result of the wrong size ({e})")))
}

/// A batch of positions (`[size] ++ shape`) per example, flattened and
/// laid along batched axis `a` of a tensor of `t_shape`, spread over its
/// other axes: the positions of a `take-along` or `put-along-add` that
/// does what a `gather` or `scatter-add` with those positions does, one
/// example at a time. Returns them and their shape.
fn positions_along(
    graph: &mut TensorGraph,
    idx: Id,
    t_shape: &[usize],
    a: usize,
    size: usize,
) -> (Id, Shape) {
    let k: usize = graph.shape(idx)[1..].iter().product();
    let mut spread: Shape = t_shape.iter().copied().collect();
    spread[a] = k;
    let mut lined: Shape = smallvec::smallvec![1; spread.len()];
    lined[0] = size;
    lined[a] = k;
    let flat = graph.reshape(idx, &lined);
    (graph.broadcast(flat, &spread), spread)
}

/// A gather's result over a shared tensor with batched positions has the
/// batch at `axis`: moved to the front.
fn batch_to_front(graph: &mut TensorGraph, node: Id, axis: u8) -> Id {
    if axis == 0 {
        return node;
    }
    let rank = graph.shape(node).len() as u8;
    let perm: smallvec::SmallVec<[u8; 4]> = std::iter::once(axis)
        .chain((0..rank).filter(|&d| d != axis))
        .collect();
    graph.add_valid(TOp::Transpose(perm), &[node])
}

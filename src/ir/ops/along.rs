//! Indexing along an axis with an index tensor of the data's own layout
//! (NumPy's `take_along_axis`): `take-along` picks, in each 1-d slice of
//! `t` along `axis`, the elements the matching slice of `idx` names, and
//! its adjoint `put-along-add` adds updates back at those positions. Each
//! is the other's reverse rule, and each is its own forward rule (applied
//! to the tangents, the axis shifted past a batch of directions).
//!
//! Layout: `t` has shape `lead ++ [len] ++ rest`, `idx` has shape
//! `lead' ++ [m] ++ rest`, where `lead'` is a suffix of `lead` (the index
//! tensor is shared by `t`'s extra leading axes, which is how the forward
//! sweep's batch of tangents reuses one index tensor). The result, and the
//! updates of `put-along-add`, have shape `lead ++ [m] ++ rest`. The
//! built-in broadcasts NumPy-style before it gets here; these operations
//! only accept that layout. Indices are whole numbers stored as floats,
//! negative ones counting from the end; anything else is an error naming
//! the index.

use super::indexing::{PARALLEL, array, contiguous, positions, split};
use super::{CudaKernel, Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::{ShapeError, show};
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD};
use rayon::prelude::*;
use smallvec::SmallVec;

/// The result's shape: `t`'s with `axis` replaced by the index tensor's
/// length there, after checking that `idx` fits `t` (see the module docs).
fn along_shape(t: &[usize], idx: &[usize], axis: u8, what: &str) -> Result<Shape, ShapeError> {
    let axis = usize::from(axis);
    let misfit = || {
        ShapeError(format!(
            "{what}: positions of shape {} do not fit a tensor of shape {} along axis {axis}",
            show(idx),
            show(t)
        ))
    };
    if axis >= t.len() {
        return Err(ShapeError(format!(
            "{what}: axis {axis} is out of range for a tensor of shape {}",
            show(t)
        )));
    }
    if idx.len() > t.len() || idx.len() < t.len() - axis {
        return Err(misfit());
    }
    let offset = t.len() - idx.len();
    for (d, &n) in idx.iter().enumerate() {
        if d + offset != axis && n != t[d + offset] {
            return Err(misfit());
        }
    }
    let mut out: Shape = t.iter().copied().collect();
    out[axis] = idx[axis - offset];
    Ok(out)
}

/// The blocks of the layout: `(outer, len, inner)` of `t` around `axis`,
/// the index tensor's length `m` along it and its number of leading
/// blocks `idx_outer` (which divides `outer`).
#[derive(Clone, Copy, Debug)]
struct Blocks {
    outer: usize,
    len: usize,
    inner: usize,
    m: usize,
    idx_outer: usize,
}

fn blocks(t: &[usize], idx: &[usize], axis: u8) -> Blocks {
    let (outer, len, inner) = split(t, axis);
    let axis_idx = usize::from(axis) - (t.len() - idx.len());
    Blocks {
        outer,
        len,
        inner,
        m: idx[axis_idx],
        idx_outer: idx[..axis_idx].iter().product(),
    }
}

/// The CUDA lines that find, for element `e` of a `(outer, m, inner)`
/// block layout, its index `k` along the axis and whether it is valid.
fn cuda_position(b: Blocks) -> String {
    format!(
        "        long long i = e % {inner}LL;
        long long row = e / {inner}LL;
        long long j = row % {m}LL;
        long long o = row / {m}LL;
        double k = idx[((o % {idx_outer}LL) * {m}LL + j) * {inner}LL + i];
        if (k < 0.0) k += {len}.0;
        bool valid = k >= 0.0 && k < {len}.0 && k == floor(k);
        long long at = (o * {len}LL + (long long)k) * {inner}LL + i;
",
        inner = b.inner.max(1),
        m = b.m.max(1),
        idx_outer = b.idx_outer.max(1),
        len = b.len,
    )
}

/// Runs `f(o, row)` on each row of `row_len` numbers of `out`, rows
/// grouped into tasks of about `PARALLEL / 8` numbers when there is
/// enough work for threads.
fn for_rows(out: &mut [f64], row_len: usize, f: impl Fn(usize, &mut [f64]) + Sync) {
    if row_len == 0 {
        return;
    }
    if out.len() < PARALLEL {
        out.chunks_mut(row_len)
            .enumerate()
            .for_each(|(o, row)| f(o, row));
        return;
    }
    let rows = (PARALLEL / 8 / row_len).max(1);
    out.par_chunks_mut(rows * row_len)
        .enumerate()
        .for_each(|(task, chunk)| {
            for (r, row) in chunk.chunks_mut(row_len).enumerate() {
                f(task * rows + r, row);
            }
        });
}

/// `take-along`: `out[o, j, i] = t[o, idx[o', j, i], i]` (`o'` the index
/// tensor's own leading block of `o`). Operands `(t, idx)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TakeAlong {
    /// The axis of `t` the indices select along.
    pub axis: u8,
    /// Where it was called.
    pub site: Site,
}

impl Definition for TakeAlong {
    fn describe(&self) -> String {
        format!("take-along[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        along_shape(operands[0], operands[1], self.axis, "take-along")
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let b = blocks(operands[0].shape(), operands[1].shape(), self.axis);
        let picks = positions(&operands[1], b.len)?;
        let source = contiguous(&operands[0]);
        let block = b.m * b.inner;
        let mut out = vec![0.0; b.outer * block];
        for_rows(&mut out, block, |o, row| {
            let picked = &picks[(o % b.idx_outer.max(1)) * block..][..block];
            let lane = &source[o * b.len * b.inner..][..b.len * b.inner];
            if b.inner == 1 {
                for (slot, &k) in row.iter_mut().zip(picked) {
                    *slot = lane[k];
                }
            } else {
                for (e, (slot, &k)) in row.iter_mut().zip(picked).enumerate() {
                    *slot = lane[k * b.inner + e % b.inner];
                }
            }
        });
        array(shape, out)
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
        let put = PutAlongAdd {
            axis: self.axis,
            site: self.site,
        };
        let back = rules.op(Op::PutAlongAdd(put), &[zeros, idx, g]);
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
        let shifted = TakeAlong {
            axis: self.axis + rules.lead() as u8,
            site: self.site,
        };
        rules.op(Op::TakeAlong(shifted), &[t, operands[1]])
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
        let a = usize::from(self.axis);
        let mut index = crate::ir::ops::reads::unravel(element, shape);
        index[a] = 0;
        crate::ir::ops::reads::lane(out, 0, operands[0], &index, a);
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
        let idx = spread_positions(
            graph,
            operands[1],
            batched[1],
            &graph.shape(t).clone(),
            self.axis,
        );
        let op = crate::ir::ops::Op::TakeAlong(TakeAlong {
            axis: self.axis + 1,
            site: self.site,
        });
        graph.add(TOp::Op(op), &[t, idx]).ok()
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let b = blocks(operands[0], operands[1], self.axis);
        Some(CudaKernel {
            name: "take_along",
            source: format!(
                "extern \"C\" __global__ void take_along(long long n, const double* t, const double* idx, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
{position}        out[e] = valid ? t[at] : nan(\"\");
    }}
}}
",
                position = cuda_position(b),
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

/// `put-along-add`: `out = t` with `out[o, idx[o', j, i], i] += u[o, j,
/// i]`; repeated positions add up. Operands `(t, idx, updates)`, the
/// updates of the shape `take-along` gives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PutAlongAdd {
    /// The axis of `t` the indices select along.
    pub axis: u8,
    /// Where it was called.
    pub site: Site,
}

impl Definition for PutAlongAdd {
    fn describe(&self) -> String {
        format!("put-along-add[{}]", self.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let (t, idx, updates) = (operands[0], operands[1], operands[2]);
        let expected = along_shape(t, idx, self.axis, "put-along-add")?;
        if expected[..] != *updates {
            return Err(ShapeError(format!(
                "put-along-add: the updates have shape {}, the positions select {} from a tensor of shape {}",
                show(updates),
                show(&expected),
                show(t)
            )));
        }
        Ok(t.iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let b = blocks(shape, operands[1].shape(), self.axis);
        let picks = positions(&operands[1], b.len)?;
        let mut out = contiguous(&operands[0]).into_owned();
        let updates = contiguous(&operands[2]);
        let block = b.m * b.inner;
        if block > 0 {
            for_rows(&mut out, b.len * b.inner, |o, lane| {
                let picked = &picks[(o % b.idx_outer.max(1)) * block..][..block];
                let from = &updates[o * block..][..block];
                for (e, (&k, &u)) in picked.iter().zip(from).enumerate() {
                    lane[k * b.inner + e % b.inner] += u;
                }
            });
        }
        array(shape, out)
    }

    fn differentiable(&self, operand: usize) -> bool {
        operand != 1
    }

    fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        Some((1, *operands[0].get(usize::from(self.axis))?))
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let take = TakeAlong {
            axis: self.axis,
            site: self.site,
        };
        let to_updates = rules.op(Op::TakeAlong(take), &[g, operands[1]]);
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
        let shifted = PutAlongAdd {
            axis: self.axis + rules.lead() as u8,
            site: self.site,
        };
        rules.op(Op::PutAlongAdd(shifted), &[t, operands[1], u])
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
        let a = usize::from(self.axis);
        out.push((0, element));
        let mut index = crate::ir::ops::reads::unravel(element, shape);
        index[a] = 0;
        crate::ir::ops::reads::lane(out, 2, operands[2], &index, a);
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
        let idx = spread_positions(
            graph,
            operands[1],
            batched[1],
            &graph.shape(t).clone(),
            self.axis,
        );
        let updates = crate::ir::ops::batching::full(graph, operands[2], batched[2], size);
        let op = crate::ir::ops::Op::PutAlongAdd(PutAlongAdd {
            axis: self.axis + 1,
            site: self.site,
        });
        graph.add(TOp::Op(op), &[t, idx, updates]).ok()
    }

    fn cuda(&self, operands: &[&[usize]], _shape: &[usize]) -> Option<CudaKernel> {
        let b = blocks(operands[0], operands[1], self.axis);
        Some(CudaKernel {
            name: "put_along_add",
            source: format!(
                "extern \"C\" __global__ void put_along_add(long long n, const double* t, const double* idx, const double* u, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
{position}        if (valid) atomicAdd(&out[at], u[e]);
    }}
}}
",
                position = cuda_position(b),
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

/// The positions of a batched `take-along` or `put-along-add` over the
/// batched tensor of shape `t_shape` along example axis `axis`: shared
/// positions broadcast from the right as they are; batched ones are
/// spread over every axis of the tensor but the one they index.
fn spread_positions(
    graph: &mut TensorGraph,
    idx: Id,
    batched: bool,
    t_shape: &[usize],
    axis: u8,
) -> Id {
    if !batched {
        return idx;
    }
    let rank = t_shape.len() - 1;
    let aligned = crate::ir::ops::batching::align(graph, idx, true, rank);
    let mut spread: Shape = t_shape.iter().copied().collect();
    let a = usize::from(axis) + 1;
    spread[a] = graph.shape(aligned)[a];
    graph.expand_to(aligned, &spread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{IxDyn, array};

    fn take(t: &ArrayD<f64>, idx: &ArrayD<f64>, axis: u8) -> Result<ArrayD<f64>, OpError> {
        let op = TakeAlong {
            axis,
            site: Site::default(),
        };
        let shape = op
            .shape(&[t.shape(), idx.shape()])
            .map_err(|e| OpError::new(e.0))?;
        op.cpu(&[t.view(), idx.view()], &shape)
    }

    #[test]
    fn takes_along_rows_and_columns() {
        let t = array![[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]].into_dyn();
        let rows = array![[2.0, 0.0], [-1.0, 1.0]].into_dyn();
        assert_eq!(
            take(&t, &rows, 1).unwrap(),
            array![[12.0, 10.0], [22.0, 21.0]].into_dyn()
        );
        let cols = array![[1.0, 0.0, 1.0]].into_dyn();
        assert_eq!(
            take(&t, &cols, 0).unwrap(),
            array![[20.0, 11.0, 22.0]].into_dyn()
        );
    }

    #[test]
    fn an_index_tensor_is_shared_by_extra_leading_axes() {
        let t = ArrayD::from_shape_fn(IxDyn(&[2, 2, 3]), |i| {
            (i[0] * 100 + i[1] * 10 + i[2]) as f64
        });
        let idx = array![[2.0], [0.0]].into_dyn();
        let out = take(&t, &idx, 2).unwrap();
        assert_eq!(out.shape(), &[2, 2, 1]);
        assert_eq!(
            out.iter().copied().collect::<Vec<_>>(),
            vec![2.0, 10.0, 102.0, 110.0]
        );
    }

    #[test]
    fn bad_indices_and_shapes_are_errors_naming_them() {
        let t = array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
        let error = take(&t, &array![[0.0], [2.0]].into_dyn(), 1).unwrap_err();
        assert!(error.message.contains("index 2"), "{error}");
        let error = take(&t, &array![[0.5], [0.0]].into_dyn(), 1).unwrap_err();
        assert!(error.message.contains("0.5"), "{error}");
        let error = take(&t, &array![[0.0, 1.0, 0.0]].into_dyn(), 1).unwrap_err();
        assert!(
            error.message.contains("[1 3]") && error.message.contains("[2 2]"),
            "{error}"
        );
    }

    #[test]
    fn put_along_add_adds_repeated_positions() {
        let op = PutAlongAdd {
            axis: 1,
            site: Site::default(),
        };
        let t = ArrayD::zeros(IxDyn(&[2, 3]));
        let idx = array![[0.0, 0.0], [2.0, 1.0]].into_dyn();
        let u = array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
        let out = op.cpu(&[t.view(), idx.view(), u.view()], &[2, 3]).unwrap();
        assert_eq!(out, array![[3.0, 0.0, 0.0], [0.0, 4.0, 3.0]].into_dyn());
    }
}

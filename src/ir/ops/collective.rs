//! Collectives across the ranks of an MPI job (`crate::distributed`), as
//! operations of the table so they are recorded by traces and run inside
//! tapes, `jit` and `scan` bodies like any other: `allreduce`,
//! `allgather` and its adjoint `reduce-scatter`, `halo-exchange` and its
//! adjoint, the reverse exchange.
//!
//! Derivatives follow the SPMD convention: a program run on every rank
//! differentiates the sum over ranks of what each rank returns. Each
//! collective is linear (a max or min one is linear given which rank
//! holds the extreme), and its adjoint is the transposed communication:
//! the adjoint of a sum-allreduce is a sum-allreduce of the cotangents;
//! of an allgather, the sum over ranks of each rank's block of the
//! cotangents (reduce-scatter); of a halo exchange, each halo's cotangent
//! sent back to the rank it came from and added into that rank's boundary
//! cells. Tangents take the same collective as the values.
//!
//! Every rank runs the same program, so the collectives of a tape run in
//! the same order on every rank; kernels run on the host (a CUDA tape
//! copies the operand to the host and the result back), except an
//! allreduce, which a CUDA device built with the feature `nccl` runs on
//! device memory through NCCL (`device_allreduce`).

use super::indexing::array;
use super::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::distributed::{self, Boundaries, Received, Reduction};
use crate::ir::shape::{ShapeError, show};
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};
use smallvec::SmallVec;

/// The operand's numbers in row-major order.
fn numbers(x: &ArrayViewD<'_, f64>) -> Vec<f64> {
    x.as_standard_layout().iter().copied().collect()
}

/// `op` over one operand: a node, or `None` when the shapes do not fit.
fn one(graph: &mut TensorGraph, op: Op, operand: Id) -> Option<Id> {
    graph.add(TOp::Op(op), &[operand]).ok()
}

/// The tangent of operand 0, zeros when it has none.
fn tangent(rules: &mut Rules<'_>, operands: &[Id], tangents: &[Option<Id>]) -> Id {
    rules.tangent_or_zero(operands[0], tangents[0])
}

/// An axis that must lie within `rank` axes (`inclusive`: or just past
/// the last, for an axis inserted there).
fn check_axis(axis: u8, rank: usize, inclusive: bool, x: &[usize]) -> Result<(), ShapeError> {
    let a = usize::from(axis);
    if a < rank || (inclusive && a == rank) {
        return Ok(());
    }
    Err(ShapeError(format!(
        "axis {axis} is out of range for a tensor of shape {}",
        show(x)
    )))
}

/// `allreduce`: every rank's tensor combined element by element, the
/// result the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Allreduce {
    /// How elements combine.
    pub reduction: Reduction,
    /// Where it was called.
    pub site: Site,
}

impl Allreduce {
    fn with(&self, reduction: Reduction) -> Op {
        Op::Allreduce(Allreduce {
            reduction,
            site: self.site,
        })
    }

    /// For a max or min: 1 where this rank holds the extreme, and how
    /// many ranks hold it (ties share the derivative).
    fn holders(&self, rules: &mut Rules<'_>, node: Id, x: Id) -> (Id, Id) {
        let mask = rules.equal(x, node);
        let count = rules.op(self.with(Reduction::Sum), &[mask]);
        (mask, count)
    }
}

impl Definition for Allreduce {
    fn describe(&self) -> String {
        format!("allreduce[{}]", self.reduction.name())
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let mut data = numbers(&operands[0]);
        distributed::allreduce(&mut data, shape, self.reduction).map_err(OpError::new)?;
        array(shape, data)
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let pulled = match self.reduction {
            Reduction::Sum | Reduction::Mean => rules.op(self.with(self.reduction), &[g]),
            Reduction::Max | Reduction::Min => {
                let (mask, count) = self.holders(rules, node, operands[0]);
                let total = rules.op(self.with(Reduction::Sum), &[g]);
                let share = rules.div(total, count);
                rules.mul(mask, share)
            }
        };
        SmallVec::from_slice(&[Some(pulled)])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let t = tangent(rules, operands, tangents);
        match self.reduction {
            Reduction::Sum | Reduction::Mean => rules.op(self.with(self.reduction), &[t]),
            Reduction::Max | Reduction::Min => {
                let (mask, count) = self.holders(rules, node, operands[0]);
                let held = rules.mul(mask, t);
                let total = rules.op(self.with(Reduction::Sum), &[held]);
                rules.div(total, count)
            }
        }
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        operands[0].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        _operands: &[&[usize]],
        _shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        out.push((0, element));
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        _batched: &[bool],
        _size: usize,
    ) -> Option<Id> {
        // Element by element: the batch is one more axis of elements.
        one(graph, Op::Allreduce(self.clone()), operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }

    fn device_allreduce(&self) -> Option<Reduction> {
        Some(self.reduction)
    }
}

/// Where the ranks' axis of an allgather (or its reverse) lies, and how
/// many ranks there are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stacking {
    /// The ranks' axis: inserted by an allgather, removed by its reverse.
    pub axis: u8,
    /// How many ranks there are.
    pub ranks: u32,
    /// Where the allgather was called.
    pub site: Site,
}

impl Stacking {
    /// The same with the axis `by` places further (past a batch axis).
    fn shifted(&self, by: usize) -> Stacking {
        Stacking {
            axis: self.axis + by as u8,
            ..self.clone()
        }
    }
}

/// `allgather`: every rank's tensor stacked along a new axis, in rank
/// order, the result the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Allgather(pub Stacking);

/// The adjoint of [`Allgather`]: each rank's block along the ranks' axis
/// summed over the ranks and given to that rank, the axis removed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReduceScatter(pub Stacking);

impl Definition for Allgather {
    fn describe(&self) -> String {
        format!("allgather[{}]", self.0.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        check_axis(self.0.axis, x.len(), true, x)?;
        let mut shape: Shape = x.iter().copied().collect();
        shape.insert(usize::from(self.0.axis), self.0.ranks as usize);
        Ok(shape)
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let local = &operands[0];
        let all = distributed::allgather(&numbers(local), local.shape()).map_err(OpError::new)?;
        let axis = usize::from(self.0.axis);
        if axis == 0 {
            return array(shape, all);
        }
        // Stacked along axis 0 as gathered; moved to `axis`.
        let mut stacked: Vec<usize> = vec![self.0.ranks as usize];
        stacked.extend_from_slice(local.shape());
        let gathered = array(&stacked, all)?;
        let mut order: Vec<usize> = (1..=axis).collect();
        order.push(0);
        order.extend(axis + 1..stacked.len());
        let moved = gathered.permuted_axes(IxDyn(&order));
        array(shape, moved.as_standard_layout().iter().copied().collect())
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        let op = Op::ReduceScatter(ReduceScatter(self.0.clone()));
        SmallVec::from_slice(&[Some(rules.op(op, &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = tangent(rules, operands, tangents);
        let op = Op::Allgather(Allgather(self.0.shifted(rules.lead())));
        rules.op(op, &[t])
    }

    fn flops(&self, _operands: &[&[usize]], _shape: &[usize]) -> u64 {
        0
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        _batched: &[bool],
        _size: usize,
    ) -> Option<Id> {
        one(
            graph,
            Op::Allgather(Allgather(self.0.shifted(1))),
            operands[0],
        )
    }

    fn site(&self) -> Site {
        self.0.site
    }
}

impl Definition for ReduceScatter {
    fn describe(&self) -> String {
        format!("reduce-scatter[{}]", self.0.axis)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        check_axis(self.0.axis, x.len(), false, x)?;
        let axis = usize::from(self.0.axis);
        if x[axis] != self.0.ranks as usize {
            return Err(ShapeError(format!(
                "axis {axis} of shape {} should have one entry per rank ({})",
                show(x),
                self.0.ranks
            )));
        }
        let mut shape: Shape = x.iter().copied().collect();
        shape.remove(axis);
        Ok(shape)
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let x = operands[0].clone();
        let axis = usize::from(self.0.axis);
        // The ranks' blocks one after the other: the axis moved first.
        let mut order: Vec<usize> = vec![axis];
        order.extend((0..x.ndim()).filter(|&k| k != axis));
        let blocks = numbers(&x.permuted_axes(IxDyn(&order)));
        let mine = distributed::reduce_scatter(&blocks, shape).map_err(OpError::new)?;
        array(shape, mine)
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        let op = Op::Allgather(Allgather(self.0.clone()));
        SmallVec::from_slice(&[Some(rules.op(op, &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = tangent(rules, operands, tangents);
        let op = Op::ReduceScatter(ReduceScatter(self.0.shifted(rules.lead())));
        rules.op(op, &[t])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        operands[0].iter().product::<usize>() as u64
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        _batched: &[bool],
        _size: usize,
    ) -> Option<Id> {
        one(
            graph,
            Op::ReduceScatter(ReduceScatter(self.0.shifted(1))),
            operands[0],
        )
    }

    fn site(&self) -> Site {
        self.0.site
    }
}

/// A halo along one axis of blocks split across the ranks in rank order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Halo {
    /// The axis the domain is split along.
    pub axis: u8,
    /// The halo's width.
    pub width: u32,
    /// Whether the ranks form a ring.
    pub periodic: bool,
    /// Where the exchange was called.
    pub site: Site,
}

impl Halo {
    /// The same with the axis `by` places further (past a batch axis).
    fn shifted(&self, by: usize) -> Halo {
        Halo {
            axis: self.axis + by as u8,
            ..self.clone()
        }
    }

    fn describe(&self, name: &str) -> String {
        format!(
            "{name}[{} width {}{}]",
            self.axis,
            self.width,
            if self.periodic { " periodic" } else { "" }
        )
    }

    /// Sends `x`'s cells `left` to the left neighbour and `right` to the
    /// right one (along the axis), and receives theirs: slabs of `slab`.
    fn swap(
        &self,
        x: &ArrayViewD<'_, f64>,
        left: std::ops::Range<usize>,
        right: std::ops::Range<usize>,
        slab: &[usize],
    ) -> Result<Received, OpError> {
        let axis = usize::from(self.axis);
        let to_left = numbers(&x.slice_axis(Axis(axis), Slice::from(left)));
        let to_right = numbers(&x.slice_axis(Axis(axis), Slice::from(right)));
        distributed::exchange(&Boundaries {
            to_left: &to_left,
            to_right: &to_right,
            slab,
            periodic: self.periodic,
        })
        .map_err(OpError::new)
    }
}

/// `halo-exchange`: the block extended by `width` cells on each side of
/// `axis`, filled with the neighbours' boundary cells: the left halo is
/// the last `width` cells of rank - 1, the right halo the first `width`
/// of rank + 1; zeros at the two ends of the domain, or (`periodic`) the
/// other end's cells.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HaloExchange(pub Halo);

/// The adjoint of [`HaloExchange`]: the halos' cotangents (`width` cells
/// at each end of `axis`) sent back to the neighbours they came from and
/// added into their boundary cells; the interior kept.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HaloReturn(pub Halo);

/// A received slab as an array of `slab`'s shape.
fn slab_view<'a>(data: &'a [f64], slab: &[usize]) -> Result<ArrayViewD<'a, f64>, OpError> {
    ArrayViewD::from_shape(IxDyn(slab), data)
        .map_err(|e| OpError::new(format!("internal: a slab of the wrong size ({e})")))
}

/// `shape` with `width` cells along `axis`: one slab.
fn slab_of(shape: &[usize], axis: usize, width: usize) -> Vec<usize> {
    let mut slab = shape.to_vec();
    slab[axis] = width;
    slab
}

impl Definition for HaloExchange {
    fn describe(&self) -> String {
        self.0.describe("halo-exchange")
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let x = operands[0];
        check_axis(self.0.axis, x.len(), false, x)?;
        let axis = usize::from(self.0.axis);
        let width = self.0.width as usize;
        if x[axis] < width {
            return Err(ShapeError(format!(
                "a halo of width {width} needs at least {width} cells along axis {axis}, but the block has shape {}",
                show(x)
            )));
        }
        let mut shape: Shape = x.iter().copied().collect();
        shape[axis] += 2 * width;
        Ok(shape)
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let x = &operands[0];
        let (axis, w) = (usize::from(self.0.axis), self.0.width as usize);
        let n = x.shape()[axis];
        let slab = slab_of(x.shape(), axis, w);
        let received = self.0.swap(x, 0..w, n - w..n, &slab)?;
        let mut out = ArrayD::<f64>::zeros(IxDyn(shape));
        out.slice_axis_mut(Axis(axis), Slice::from(w..w + n))
            .assign(x);
        if let Some(left) = &received.from_left {
            out.slice_axis_mut(Axis(axis), Slice::from(0..w))
                .assign(&slab_view(left, &slab)?);
        }
        if let Some(right) = &received.from_right {
            out.slice_axis_mut(Axis(axis), Slice::from(n + w..n + 2 * w))
                .assign(&slab_view(right, &slab)?);
        }
        Ok(out)
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        let op = Op::HaloReturn(HaloReturn(self.0.clone()));
        SmallVec::from_slice(&[Some(rules.op(op, &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = tangent(rules, operands, tangents);
        let op = Op::HaloExchange(HaloExchange(self.0.shifted(rules.lead())));
        rules.op(op, &[t])
    }

    fn flops(&self, _operands: &[&[usize]], _shape: &[usize]) -> u64 {
        0
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        _batched: &[bool],
        _size: usize,
    ) -> Option<Id> {
        one(
            graph,
            Op::HaloExchange(HaloExchange(self.0.shifted(1))),
            operands[0],
        )
    }

    fn site(&self) -> Site {
        self.0.site
    }
}

impl Definition for HaloReturn {
    fn describe(&self) -> String {
        self.0.describe("halo-return")
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let g = operands[0];
        check_axis(self.0.axis, g.len(), false, g)?;
        let axis = usize::from(self.0.axis);
        let width = self.0.width as usize;
        if g[axis] < 3 * width {
            return Err(ShapeError(format!(
                "a halo of width {width} on both sides of a block of at least {width} cells needs {} cells along axis {axis}, got shape {}",
                3 * width,
                show(g)
            )));
        }
        let mut shape: Shape = g.iter().copied().collect();
        shape[axis] -= 2 * width;
        Ok(shape)
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let g = &operands[0];
        let (axis, w) = (usize::from(self.0.axis), self.0.width as usize);
        let n = shape[axis];
        let slab = slab_of(shape, axis, w);
        // The left halo came from the left neighbour's last cells, the
        // right halo from the right neighbour's first: send them back.
        let received = self.0.swap(g, 0..w, n + w..n + 2 * w, &slab)?;
        let mut out = g
            .slice_axis(Axis(axis), Slice::from(w..w + n))
            .as_standard_layout()
            .into_owned();
        if let Some(left) = &received.from_left {
            let mut first = out.slice_axis_mut(Axis(axis), Slice::from(0..w));
            first += &slab_view(left, &slab)?;
        }
        if let Some(right) = &received.from_right {
            let mut last = out.slice_axis_mut(Axis(axis), Slice::from(n - w..n));
            last += &slab_view(right, &slab)?;
        }
        array(shape, out.into_raw_vec_and_offset().0)
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        let op = Op::HaloExchange(HaloExchange(self.0.clone()));
        SmallVec::from_slice(&[Some(rules.op(op, &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = tangent(rules, operands, tangents);
        let op = Op::HaloReturn(HaloReturn(self.0.shifted(rules.lead())));
        rules.op(op, &[t])
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        shape.iter().product::<usize>() as u64
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        _batched: &[bool],
        _size: usize,
    ) -> Option<Id> {
        one(
            graph,
            Op::HaloReturn(HaloReturn(self.0.shifted(1))),
            operands[0],
        )
    }

    fn site(&self) -> Site {
        self.0.site
    }
}

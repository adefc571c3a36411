//! `logsumexp` and its softmax as one operation, packed into one flat
//! vector: the softmax (the operand's shape), then the logsumexp (the
//! reduced axes kept as 1). The derivative of a `logsumexp` is its
//! softmax, so its reverse and forward rules ask for this operation, and
//! [`shared`] then reads the program's `logsumexp` from its second part:
//! each exponential is taken once, stored and summed, where a
//! `logsumexp` followed by `exp(x - logsumexp)` takes it twice (JAX keeps
//! the exponentials of the forward pass the same way).
//!
//! The logsumexp part has the bits of [`LogSumExp`] on the same operand:
//! the same shifts, the same exponentials, summed in the same order. The
//! softmax of a lane is its shifted exponentials times the reciprocal of
//! their sum (0 in a lane whose numbers are all -inf, where the sum is 0;
//! NaN in a lane holding a NaN).
//! Lanes along the last axis of a tensor in row-major order (up to
//! `TASK` numbers long) are computed in one pass; other layouts take the
//! logsumexp and then `exp(x - logsumexp)` (within an ulp or two of each
//! other). Knows arrays and the scalar kernels, nothing of executors.

use super::indexing::array;
use super::reduction::{BUFFER, LogSumExp, TASK, shift, top};
use super::{CudaKernel, Definition, Op, OpError, Pulled, Rules};
use crate::ir::op::{TNode, TOp};
use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TensorGraph};
use crate::scalar;
use egg::{Id, Language, RecExpr};
use ndarray::{ArrayD, ArrayViewD, Zip};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// `logsumexp` over `axes` (sorted, distinct) and its softmax, packed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogSumExpSoftmax {
    /// The reduced axes.
    pub axes: SmallVec<[u8; 4]>,
}

impl LogSumExpSoftmax {
    fn logsumexp(&self) -> LogSumExp {
        LogSumExp {
            axes: self.axes.clone(),
        }
    }

    /// The packed parts for an operand of shape `x`: the softmax, then
    /// the logsumexp with its reduced axes kept.
    pub fn parts(&self, x: &[usize]) -> Result<[Shape; 2], ShapeError> {
        Ok([Shape::from_slice(x), self.logsumexp().shape(&[x])?])
    }

    /// The softmax part of `node`, this operation over `x`.
    pub fn softmax_of(&self, rules: &mut Rules<'_>, node: Id, x: Id) -> Id {
        let parts = self.parts_in(rules, x);
        rules.unpack(node, &parts)[0]
    }

    fn parts_in(&self, rules: &Rules<'_>, x: Id) -> [Shape; 2] {
        let shape = rules.shape(x);
        self.parts(&shape)
            .expect("the operation was built over this operand, so its axes fit")
    }

    fn axes_after(&self, lead: usize) -> Vec<usize> {
        self.axes.iter().map(|&a| usize::from(a) + lead).collect()
    }
}

impl Definition for LogSumExpSoftmax {
    fn describe(&self) -> String {
        let axes: Vec<String> = self.axes.iter().map(u8::to_string).collect();
        format!("logsumexp-softmax[{}]", axes.join(" "))
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let parts = self.parts(operands[0])?;
        Ok(SmallVec::from_slice(&[super::packed_len(&parts)]))
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
        let x = &operands[0];
        let lse = self.logsumexp();
        let (data, outer, len, inner) = lse.layout(x);
        let one_pass = lse.split_runs(x.shape()).is_none()
            && inner == 1
            && (1..=TASK).contains(&len)
            && outer > 0;
        if !one_pass {
            return in_two_passes(&lse, x, shape);
        }
        let data = data
            .as_slice()
            .ok_or_else(|| OpError::new("internal: a row-major copy is not contiguous"))?;
        let n = data.len();
        let mut out: Vec<f64> = storage(n + outer).unwrap_or_default();
        out.clear();
        out.try_reserve_exact(n + outer).map_err(|_| {
            OpError::new(format!(
                "out of memory: cannot allocate {:.3} GB for logsumexp's softmax",
                (n + outer) as f64 * 8.0 / 1e9
            ))
        })?;
        let (softmax, sums) = out.spare_capacity_mut()[..n + outer].split_at_mut(n);
        if n < TASK {
            softmax_rows(softmax, sums, data, len);
        } else {
            let per = (TASK / len).max(1);
            softmax
                .par_chunks_mut(per * len)
                .zip(sums.par_chunks_mut(per))
                .zip(data.par_chunks(per * len))
                .for_each(|((softmax, sums), data)| softmax_rows(softmax, sums, data, len));
        }
        // SAFETY: `softmax_rows` wrote every one of the first n + outer
        // elements: a softmax per number of each row, a logsumexp per row.
        unsafe { out.set_len(n + outer) };
        array(shape, out)
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        // d lse = softmax dx; d softmax = softmax (dx - sum(softmax dx)).
        let x = operands[0];
        let parts = self.parts_in(rules, x);
        let softmax = rules.unpack(node, &parts)[0];
        let pieces = rules.unpack(g, &parts);
        let (g_softmax, g_lse) = (pieces[0], pieces[1]);
        let weighted = rules.mul(g_softmax, softmax);
        let axes = self.axes_after(0);
        let total = rules.sum_axes(weighted, &axes, true);
        let centered = rules.sub(g_softmax, total);
        let both = rules.add(centered, g_lse);
        SmallVec::from_slice(&[Some(rules.mul(softmax, both))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let x = operands[0];
        let t = rules.tangent_or_zero(x, tangents[0]);
        let softmax = self.softmax_of(rules, node, x);
        let weighted = rules.mul(t, softmax);
        let axes = self.axes_after(rules.lead());
        let t_lse = rules.sum_axes(weighted, &axes, true);
        let centered = rules.sub(t, t_lse);
        let t_softmax = rules.mul(softmax, centered);
        rules.pack_tangent(&[t_softmax, t_lse])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        5 * operands[0].iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        // Each number of either part reads its lane.
        let x = operands[0];
        let Ok([_, lse_shape]) = self.parts(x) else {
            return false;
        };
        let n: usize = x.iter().product();
        let lane = if element < n {
            let mut index = super::reads::unravel(element, x);
            for &a in &self.axes {
                index[usize::from(a)] = 0;
            }
            super::reads::ravel(&index, &lse_shape)
        } else {
            element - n
        };
        self.logsumexp().reads(operands, &lse_shape, lane, out)
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let shifted = LogSumExpSoftmax {
            axes: self.axes.iter().map(|&a| a + 1).collect(),
        };
        let op = Op::LogSumExpSoftmax(shifted.clone());
        let node = super::batching::shifted_axis(graph, op, operands, batched, size)?;
        let x = graph.shape(node_operand(graph, node)).clone();
        let parts = shifted.parts(&x).ok()?;
        Some(super::batching::repacked(graph, node, &parts, size))
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        Some(self.cuda_kernel(operands[0], shape))
    }
}

/// The operand of the one-operand node `node`.
fn node_operand(graph: &TensorGraph, node: Id) -> Id {
    graph.node(node).children[0]
}

/// Both parts for layouts without a one-pass kernel: the logsumexp, then
/// `exp(x - shift)` with each lane's shift the logsumexp (0 where it is
/// -inf, so such a lane's softmax is 0).
fn in_two_passes(
    lse: &LogSumExp,
    x: &ArrayViewD<'_, f64>,
    shape: &[usize],
) -> Result<ArrayD<f64>, OpError> {
    let lse_shape = lse.shape(&[x.shape()]).map_err(|e| OpError::new(e.0))?;
    let sums = lse.cpu(std::slice::from_ref(x), &lse_shape)?;
    let shifts = sums.mapv(|l| if l < f64::MIN { 0.0 } else { l });
    let shifts = shifts
        .broadcast(x.raw_dim())
        .ok_or_else(|| OpError::new("internal: a logsumexp that does not broadcast"))?;
    let mut softmax = ArrayD::zeros(x.raw_dim());
    Zip::from(&mut softmax)
        .and(x)
        .and(&shifts)
        .for_each(|o, &v, &s| *o = scalar::exp(v - s));
    // `zeros` made the softmax row-major, so its storage is in order.
    let (mut out, _) = softmax.into_raw_vec_and_offset();
    out.extend(sums.iter().copied());
    array(shape, out)
}

crate::simd::widest_fns! {
    /// `softmax_lanes` compiled for the widest SIMD the host has.
    fn softmax_rows(softmax: &mut [MaybeUninit<f64>], sums: &mut [MaybeUninit<f64>], data: &[f64], len: usize) = softmax_lanes;
}

/// For each row of `len` numbers of `data`: its softmax into `softmax`
/// and its logsumexp into `sums`, every element written. The shift,
/// exponentials and the sums of each `BUFFER` of them, added in order,
/// are `LogSumExp`'s own, so the logsumexp has its bits.
#[inline(always)]
fn softmax_lanes(
    softmax: &mut [MaybeUninit<f64>],
    sums: &mut [MaybeUninit<f64>],
    data: &[f64],
    len: usize,
) {
    for ((row, out), sum) in data
        .chunks_exact(len)
        .zip(softmax.chunks_exact_mut(len))
        .zip(sums)
    {
        let s = shift(top(row));
        let mut total = 0.0;
        for (piece, out) in row.chunks(BUFFER).zip(out.chunks_mut(BUFFER)) {
            for (o, &v) in out.iter_mut().zip(piece) {
                o.write(scalar::exp_kernel(v - s));
            }
            total += scalar::sum(written(out));
        }
        sum.write(total.ln() + s);
        let scale = if total == 0.0 { 0.0 } else { 1.0 / total };
        for o in written(out) {
            *o *= scale;
        }
    }
}

/// `out` once every element has been written.
#[inline(always)]
fn written(out: &mut [MaybeUninit<f64>]) -> &mut [f64] {
    // SAFETY: callers pass only elements they have written, and
    // `MaybeUninit<f64>` has the layout of `f64`.
    unsafe { &mut *(out as *mut [MaybeUninit<f64>] as *mut [f64]) }
}

impl LogSumExpSoftmax {
    /// One thread per lane: its largest number, its exponentials stored
    /// and summed, its logsumexp, then the exponentials scaled.
    fn cuda_kernel(&self, x: &[usize], shape: &[usize]) -> CudaKernel {
        let (start, at, len) = self.logsumexp().cuda_lanes(x);
        let n: usize = x.iter().product();
        let lanes = shape.iter().product::<usize>() - n;
        let source = format!(
            "extern \"C\" __global__ void logsumexp_softmax(long long n, const double* x, double* out) {{
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; e < n; e += (long long)gridDim.x * blockDim.x) {{
{start}        double total = 0.0;
        for (long long r = 0; r < {len}LL; r++) {{
            long long q = r, at = base;
{at}            double v = exp(x[at] - shift);
            out[at] = v;
            total += v;
        }}
        out[{n}LL + e] = log(total) + shift;
        double scale = total == 0.0 ? 0.0 : 1.0 / total;
        for (long long r = 0; r < {len}LL; r++) {{
            long long q = r, at = base;
{at}            out[at] *= scale;
        }}
    }}
}}
"
        );
        CudaKernel {
            name: "logsumexp_softmax",
            source,
            threads: lanes,
            zeroed: false,
            copy_first: false,
        }
    }
}

/// `expr` (of `shapes`) with each `logsumexp` read from the logsumexp part
/// of a `logsumexp-softmax` over the same operand and axes, where the
/// program has one, and `roots` renumbered; `None` when no `logsumexp`
/// has such a partner. The packed operation moves up to the `logsumexp`'s
/// place, so everything that reads either finds it computed.
pub fn shared(
    expr: &RecExpr<TNode>,
    shapes: &[Shape],
    roots: &[Id],
) -> Option<(RecExpr<TNode>, Vec<Id>)> {
    let nodes = expr.as_ref();
    let partners: FxHashMap<(Id, &[u8]), usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, node)| match &node.op {
            TOp::Op(Op::LogSumExpSoftmax(op)) => Some(((node.children[0], &op.axes[..]), i)),
            _ => None,
        })
        .collect();
    let partner = |node: &TNode| match &node.op {
        TOp::Op(Op::LogSumExp(op)) => partners.get(&(node.children[0], &op.axes[..])).copied(),
        _ => None,
    };
    if !nodes.iter().any(|node| partner(node).is_some()) {
        return None;
    }
    let mut out = RecExpr::default();
    let mut map: Vec<Option<Id>> = vec![None; nodes.len()];
    let moved = |node: &TNode, map: &[Option<Id>]| -> TNode {
        node.clone()
            .map_children(|c| map[usize::from(c)].expect("operands come first"))
    };
    for (i, node) in nodes.iter().enumerate() {
        if map[i].is_some() {
            // A packed operation moved up already.
            continue;
        }
        let Some(p) = partner(node) else {
            map[i] = Some(out.add(moved(node, &map)));
            continue;
        };
        let packed = match map[p] {
            Some(packed) => packed,
            None => {
                let packed = out.add(moved(&nodes[p], &map));
                map[p] = Some(packed);
                packed
            }
        };
        let n: usize = shapes[usize::from(node.children[0])].iter().product();
        let lanes: usize = shapes[i].iter().product();
        let part = out.add(TNode::new(
            TOp::Slice {
                axis: 0,
                start: n,
                end: n + lanes,
            },
            &[packed],
        ));
        map[i] = Some(out.add(TNode::new(TOp::Reshape(shapes[i].clone()), &[part])));
    }
    let roots = roots
        .iter()
        .map(|&r| map[usize::from(r)].expect("every node is mapped"))
        .collect();
    Some((out, roots))
}

#[cfg(test)]
mod tests {
    use super::{LogSumExpSoftmax, shared};
    use crate::ir::Shape;
    use crate::ir::op::{TNode, TOp};
    use crate::ir::ops::reduction::LogSumExp;
    use crate::ir::ops::{Definition, Op};
    use egg::{Id, RecExpr};
    use ndarray::{ArrayD, IxDyn};
    use proptest::prelude::*;
    use smallvec::SmallVec;

    /// The shape of every node of `expr`.
    fn shapes_of(expr: &RecExpr<TNode>) -> Vec<Shape> {
        let mut shapes: Vec<Shape> = Vec::new();
        for node in expr.as_ref() {
            let operands: Vec<&[usize]> = node
                .children
                .iter()
                .map(|&c| &shapes[usize::from(c)][..])
                .collect();
            let shape = crate::ir::shape::infer(&node.op, &operands).expect("shapes fit");
            shapes.push(shape);
        }
        shapes
    }

    /// Numbers from `seed`, with an infinity or a NaN now and then.
    fn numbers(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                match state % 307 {
                    0 => f64::NEG_INFINITY,
                    1 => f64::INFINITY,
                    2 => f64::NAN,
                    k => (k as f64 - 150.0) * 2.5,
                }
            })
            .collect()
    }

    /// The two parts of the operation over `x`.
    fn parts(op: &LogSumExpSoftmax, x: &ArrayD<f64>) -> (Vec<f64>, ArrayD<f64>) {
        let shape = op.shape(&[x.shape()]).expect("axes in range");
        let packed = op.cpu(&[x.view()], &shape).expect("runs");
        let packed = packed.as_slice().expect("row-major").to_vec();
        let n = x.len();
        let lse = ArrayD::from_shape_vec(
            IxDyn(&op.parts(x.shape()).expect("fits")[1]),
            packed[n..].to_vec(),
        )
        .expect("sizes agree");
        (packed[..n].to_vec(), lse)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The logsumexp part has `logsumexp`'s bits, and the softmax is
        /// `exp(x - logsumexp)` to within rounding: 0 in a lane of -inf,
        /// NaN where the lane's logsumexp is NaN or where the number is
        /// +inf, in every layout (one pass along the last axis, or two).
        #[test]
        fn parts_are_the_logsumexp_and_its_softmax(
            shape in prop::collection::vec(prop_oneof![Just(1usize), 2usize..6, Just(16), 30usize..700], 1..4)
                .prop_filter("at most 100,000 numbers", |s| s.iter().product::<usize>() <= 100_000),
            pick in 1u8..8,
            seed in any::<u64>(),
        ) {
            let rank = shape.len();
            let axes: SmallVec<[u8; 4]> = (0..rank as u8).filter(|a| pick & (1 << a) != 0).collect();
            prop_assume!(!axes.is_empty());
            let n: usize = shape.iter().product();
            let x = ArrayD::from_shape_vec(IxDyn(&shape), numbers(n, seed)).expect("sizes agree");
            let op = LogSumExpSoftmax { axes: axes.clone() };
            let (softmax, lse) = parts(&op, &x);
            let plain = LogSumExp { axes: axes.clone() };
            let want = plain.cpu(&[x.view()], lse.shape()).expect("runs");
            for (g, w) in lse.iter().zip(&want) {
                prop_assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "{:?} over {:?}: logsumexp {} against {}", shape, axes, g, w);
            }
            let broadcast = lse.broadcast(x.raw_dim()).expect("keeps the reduced axes");
            for ((&s, &v), &l) in softmax.iter().zip(x.iter()).zip(broadcast.iter()) {
                let expected = if l == f64::NEG_INFINITY { 0.0 } else { (v - l).exp() };
                let agree = (s.is_nan() && expected.is_nan())
                    || (s - expected).abs() <= 1e-13 * expected.abs().max(1e-300);
                prop_assert!(agree, "{:?} over {:?}: softmax {} against {} (x {}, lse {})",
                    shape, axes, s, expected, v, l);
            }
        }
    }

    /// A lane of -inf has logsumexp -inf and softmax 0; a lane holding
    /// +inf has logsumexp +inf; a NaN makes its lane NaN.
    #[test]
    fn special_lanes() {
        let inf = f64::INFINITY;
        let x = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![-inf, -inf, inf, 0.0, f64::NAN, 1.0])
            .expect("sizes agree");
        let op = LogSumExpSoftmax {
            axes: SmallVec::from_slice(&[1]),
        };
        let (softmax, lse) = parts(&op, &x);
        assert_eq!(&softmax[..2], &[0.0, 0.0]);
        assert_eq!(lse[[0, 0]], -inf);
        assert_eq!(lse[[1, 0]], inf);
        assert!(softmax[2].is_nan() && softmax[3] == 0.0);
        assert!(lse[[2, 0]].is_nan() && softmax[4].is_nan() && softmax[5].is_nan());
    }

    /// A program's `logsumexp` whose softmax is also taken is read from
    /// the packed operation, which moves up to its place; a `logsumexp`
    /// over other axes stays.
    #[test]
    fn a_logsumexp_beside_its_softmax_is_read_from_it() {
        let mut expr: RecExpr<TNode> = RecExpr::default();
        let x = expr.add(TNode::new(
            TOp::Input {
                index: 0,
                shape: SmallVec::from_slice(&[4, 3]),
                dtype: crate::dtype::DType::F64,
            },
            &[],
        ));
        let axes = |a: u8| SmallVec::from_slice(&[a]);
        let lse = expr.add(TNode::new(
            TOp::Op(Op::LogSumExp(LogSumExp { axes: axes(1) })),
            &[x],
        ));
        let other = expr.add(TNode::new(
            TOp::Op(Op::LogSumExp(LogSumExp { axes: axes(0) })),
            &[x],
        ));
        let packed = expr.add(TNode::new(
            TOp::Op(Op::LogSumExpSoftmax(LogSumExpSoftmax { axes: axes(1) })),
            &[x],
        ));
        let shapes = shapes_of(&expr);
        let roots = [lse, other, packed];
        let (moved, new_roots) = shared(&expr, &shapes, &roots).expect("one pair shares");
        let nodes = moved.as_ref();
        let count = |f: &dyn Fn(&TOp) -> bool| nodes.iter().filter(|n| f(&n.op)).count();
        assert_eq!(
            count(&|op| matches!(op, TOp::Op(Op::LogSumExpSoftmax(_)))),
            1
        );
        assert_eq!(count(&|op| matches!(op, TOp::Op(Op::LogSumExp(_)))), 1);
        let new_shapes = shapes_of(&moved);
        for (old, new) in roots.iter().zip(&new_roots) {
            assert_eq!(shapes[usize::from(*old)], new_shapes[usize::from(*new)]);
        }
        assert_eq!(
            nodes[usize::from(new_roots[0])].op,
            TOp::Reshape(SmallVec::from_slice(&[4, 1]))
        );
        assert!(matches!(
            nodes[usize::from(new_roots[2])].op,
            TOp::Op(Op::LogSumExpSoftmax(_))
        ));
        let without: RecExpr<TNode> = {
            let mut e = RecExpr::default();
            let x = e.add(nodes[0].clone());
            e.add(TNode::new(
                TOp::Op(Op::LogSumExp(LogSumExp { axes: axes(1) })),
                &[x],
            ));
            e
        };
        assert!(shared(&without, &shapes_of(&without), &[Id::from(1usize)]).is_none());
    }
}

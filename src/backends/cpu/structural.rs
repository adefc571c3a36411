//! Kernels that move or combine elements: reductions, broadcasting,
//! reshapes, permutations, slices and pads, joins, rolls, arg-extremes and
//! matrix products (ndarray's `dot`, i.e. matrixmultiply's gemm, threaded).

use crate::egraph::tensor::{ReduceOp, TOp};
use crate::scalar;
use ndarray::{ArrayD, ArrayViewD, Axis, Ix1, Ix2, IxDyn, Slice};
use rayon::prelude::*;

/// Sums of at least this many elements run on the rayon pool.
const PARALLEL_SUM: usize = 1 << 16;

/// Runs a non-elementwise tensor operation.
pub fn structural(op: &TOp, args: &[ArrayViewD<'_, f64>], shape: &[usize]) -> ArrayD<f64> {
    let x = &args[0];
    match op {
        TOp::Reduce { op, axes, keepdims } => reduce(*op, x, axes, *keepdims, shape),
        TOp::ArgExtreme { max, axis } => arg_extreme(x, *max, *axis),
        TOp::Broadcast(target) => x
            .broadcast(IxDyn(target))
            .expect("tape shapes broadcast")
            .as_standard_layout()
            .into_owned(),
        TOp::Reshape(target) => {
            let data: Vec<f64> = match x.as_slice() {
                Some(s) => s.to_vec(),
                None => x.iter().copied().collect(),
            };
            ArrayD::from_shape_vec(IxDyn(target), data).expect("reshape keeps the size")
        }
        TOp::Transpose(perm) => {
            let perm: Vec<usize> = perm.iter().map(|&p| usize::from(p)).collect();
            x.clone()
                .permuted_axes(IxDyn(&perm))
                .as_standard_layout()
                .into_owned()
        }
        TOp::Slice { axis, start, end } => x
            .slice_axis(Axis(usize::from(*axis)), Slice::from(*start..*end))
            .as_standard_layout()
            .into_owned(),
        TOp::Pad { axis, before, .. } => {
            let mut out = ArrayD::zeros(IxDyn(shape));
            let len = x.shape()[usize::from(*axis)];
            out.slice_axis_mut(Axis(usize::from(*axis)), Slice::from(*before..before + len))
                .assign(x);
            out
        }
        TOp::Concat(axis) => {
            ndarray::concatenate(Axis(usize::from(*axis)), args).expect("tape shapes join")
        }
        TOp::Roll { axis, shift } => {
            let a = usize::from(*axis);
            let len = x.shape()[a];
            let mut out = ArrayD::zeros(IxDyn(shape));
            if len > 0 {
                let shift = shift % len;
                out.slice_axis_mut(Axis(a), Slice::from(shift..))
                    .assign(&x.slice_axis(Axis(a), Slice::from(..len - shift)));
                out.slice_axis_mut(Axis(a), Slice::from(..shift))
                    .assign(&x.slice_axis(Axis(a), Slice::from(len - shift..)));
            }
            out
        }
        TOp::StopGradient | TOp::Tag(_) | TOp::Linearized => x.to_owned(),
        other => unreachable!("{other} is not a structural operation"),
    }
}

fn reduce(
    op: ReduceOp,
    x: &ArrayViewD<'_, f64>,
    axes: &[u8],
    keepdims: bool,
    shape: &[usize],
) -> ArrayD<f64> {
    if axes.len() == x.ndim()
        && let Some(slice) = x.as_slice()
    {
        let value = reduce_slice(op, slice);
        return ArrayD::from_elem(IxDyn(shape), value);
    }
    let mut result = x.to_owned();
    for &axis in axes.iter().rev() {
        let axis = Axis(usize::from(axis));
        result = match op {
            ReduceOp::Sum => result.sum_axis(axis),
            ReduceOp::Prod => result.fold_axis(axis, 1.0, |a, b| a * b),
            ReduceOp::Max => {
                result.fold_axis(axis, f64::NEG_INFINITY, |&a, &b| scalar::nan_max(a, b))
            }
            ReduceOp::Min => result.fold_axis(axis, f64::INFINITY, |&a, &b| scalar::nan_min(a, b)),
        };
        if keepdims {
            result.insert_axis_inplace(axis);
        }
    }
    result
        .into_shape_with_order(IxDyn(shape))
        .expect("reduction shape")
}

fn reduce_slice(op: ReduceOp, slice: &[f64]) -> f64 {
    let fold = |chunk: &[f64]| match op {
        ReduceOp::Sum => scalar::sum(chunk),
        ReduceOp::Prod => chunk.iter().product(),
        ReduceOp::Max => chunk
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| scalar::nan_max(a, b)),
        ReduceOp::Min => chunk
            .iter()
            .fold(f64::INFINITY, |a, &b| scalar::nan_min(a, b)),
    };
    let combine = |a: f64, b: f64| match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        ReduceOp::Max => scalar::nan_max(a, b),
        ReduceOp::Min => scalar::nan_min(a, b),
    };
    if slice.len() >= PARALLEL_SUM {
        let parts: Vec<f64> = slice.par_chunks(PARALLEL_SUM / 4).map(fold).collect();
        parts
            .into_iter()
            .reduce(combine)
            .unwrap_or_else(|| fold(&[]))
    } else {
        // Blocks keep rounding error growing with log of the length, not
        // the length.
        slice
            .chunks(1024)
            .map(fold)
            .reduce(combine)
            .unwrap_or_else(|| fold(&[]))
    }
}

fn arg_extreme(x: &ArrayViewD<'_, f64>, max: bool, axis: Option<u8>) -> ArrayD<f64> {
    let pick = |lane: ndarray::ArrayView1<'_, f64>| {
        let mut best = 0usize;
        for (i, &v) in lane.iter().enumerate() {
            let current = lane[best];
            let better = (max && v > current) || (!max && v < current);
            // The first NaN wins, as NumPy's argmax does.
            if !current.is_nan() && (v.is_nan() || better) {
                best = i;
            }
        }
        best as f64
    };
    match axis {
        None => {
            let flat: ndarray::Array1<f64> = x.iter().copied().collect();
            ArrayD::from_elem(IxDyn(&[]), pick(flat.view()))
        }
        Some(axis) => x.map_axis(Axis(usize::from(axis)), pick),
    }
}

/// Products of stacks of matrices (ranks 2 and more), the leading axes
/// broadcast.
fn stacked_gemm(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>) -> ArrayD<f64> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let rank = ra.max(rb);
    let lead = |s: &[usize], r: usize| -> Vec<usize> {
        let mut v = vec![1; rank - r];
        v.extend_from_slice(&s[..r - 2]);
        v
    };
    let (la, lb) = (lead(a.shape(), ra), lead(b.shape(), rb));
    let batch: Vec<usize> = la.iter().zip(&lb).map(|(&x, &y)| x.max(y)).collect();
    let (m, k, n) = (a.shape()[ra - 2], a.shape()[ra - 1], b.shape()[rb - 1]);
    let with = |batch: &[usize], x: usize, y: usize| -> Vec<usize> {
        batch.iter().copied().chain([x, y]).collect()
    };
    let a_full = a
        .broadcast(IxDyn(&with(&batch, m, k)))
        .expect("batch axes broadcast");
    let b_full = b
        .broadcast(IxDyn(&with(&batch, k, n)))
        .expect("batch axes broadcast");
    let count: usize = batch.iter().product();
    let a_flat = a_full
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((count, m, k))
        .expect("sizes agree");
    let b_flat = b_full
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((count, k, n))
        .expect("sizes agree");
    let mut out = ndarray::Array3::<f64>::zeros((count, m, n));
    for i in 0..count {
        let product = a_flat
            .index_axis(Axis(0), i)
            .dot(&b_flat.index_axis(Axis(0), i));
        out.index_axis_mut(Axis(0), i).assign(&product);
    }
    out.into_shape_with_order(IxDyn(&with(&batch, m, n)))
        .expect("sizes agree")
}

/// NumPy `matmul` for ranks 1 and 2, operands optionally transposed.
pub fn gemm(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>, ta: bool, tb: bool) -> ArrayD<f64> {
    fn matrix<'a>(m: &ArrayViewD<'a, f64>, t: bool) -> ndarray::ArrayView2<'a, f64> {
        let m = m.clone().into_dimensionality::<Ix2>().expect("rank 2");
        if t { m.reversed_axes() } else { m }
    }
    fn vector<'a>(v: &ArrayViewD<'a, f64>) -> ndarray::ArrayView1<'a, f64> {
        v.clone().into_dimensionality::<Ix1>().expect("rank 1")
    }
    match (a.ndim(), b.ndim()) {
        (ra, rb) if ra > 2 || rb > 2 => stacked_gemm(a, b),
        (2, 2) => matrix(a, ta).dot(&matrix(b, tb)).into_dyn(),
        (2, 1) => matrix(a, ta).dot(&vector(b)).into_dyn(),
        (1, 2) => vector(a).dot(&matrix(b, tb)).into_dyn(),
        _ => ArrayD::from_elem(IxDyn(&[]), vector(a).dot(&vector(b))),
    }
}

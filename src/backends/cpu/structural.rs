//! Kernels that move or combine elements: reshapes, permutations, slices
//! and pads, joins, rolls and arg-extremes here; reductions (`reduce`),
//! broadcasts (`broadcast`) and matrix products (`matmul`) in their own
//! files.

use crate::egraph::tensor::TOp;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};

/// Runs a non-elementwise tensor operation.
pub fn structural(op: &TOp, args: &[ArrayViewD<'_, f64>], shape: &[usize]) -> ArrayD<f64> {
    let x = &args[0];
    match op {
        TOp::Reduce { op, axes, .. } => super::reduce::reduce(*op, x, axes, shape),
        TOp::ArgExtreme { max, axis } => arg_extreme(x, *max, *axis),
        TOp::Broadcast(target) => super::broadcast::broadcast(x, target),
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

/// NumPy `matmul` of `a` and `b`, operands optionally transposed (see
/// `matmul::matmul`).
pub fn gemm(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>, ta: bool, tb: bool) -> ArrayD<f64> {
    super::matmul::matmul(a, b, ta, tb)
}

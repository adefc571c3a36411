//! Kernels that move or combine elements: reshapes, permutations, slices
//! and pads, joins, rolls and arg-extremes here; reductions (`reduce`),
//! broadcasts (`broadcast`) and matrix products (`matmul`) in their own
//! files.

use crate::ir::TOp;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};

/// Runs a non-elementwise tensor operation.
pub fn structural(op: &TOp, args: &[ArrayViewD<'_, f64>], shape: &[usize]) -> ArrayD<f64> {
    let x = &args[0];
    match op {
        TOp::Reduce { op, axes, .. } => super::reduce::reduce(*op, x, axes, shape),
        TOp::ArgExtreme { max, axis } => arg_extreme(x, *max, *axis),
        TOp::Broadcast(target) => super::broadcast::broadcast(x, target),
        // Copies into storage from the pool (its pages already mapped).
        TOp::Reshape(target) => super::broadcast::standard(x)
            .into_shape_with_order(IxDyn(target))
            .expect("a standard-layout array of the target's size takes its shape"),
        TOp::Transpose(perm) => {
            let perm: Vec<usize> = perm.iter().map(|&p| usize::from(p)).collect();
            x.clone()
                .permuted_axes(IxDyn(&perm))
                .as_standard_layout()
                .into_owned()
        }
        TOp::Slice { axis, start, end } => super::broadcast::standard(
            &x.slice_axis(Axis(usize::from(*axis)), Slice::from(*start..*end)),
        ),
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
        TOp::Roll { axis, shift } => roll(x, usize::from(*axis), *shift, shape),
        TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_) => {
            super::broadcast::standard(x)
        }
        other => unreachable!("{other} is not a structural operation"),
    }
}

/// Rows (the rolled axis and those after it) at most this long are
/// rolled number by number.
const SHORT_ROW: usize = 16;

/// `x` rolled by `shift` along `axis`: element `i` moves to `(i + shift) %
/// len`. Seen as `[outer, len, inner]` row-major blocks, each row moves
/// as two contiguous copies (its last `shift` blocks to the front, the
/// rest after them; short rows number by number). Large arrays are split
/// by outer rows across threads.
fn roll(x: &ArrayViewD<'_, f64>, axis: usize, shift: usize, shape: &[usize]) -> ArrayD<f64> {
    use rayon::prelude::*;
    let len = x.shape()[axis];
    let n: usize = shape.iter().product();
    if len == 0 || n == 0 {
        return ArrayD::zeros(IxDyn(shape));
    }
    let shift = shift % len;
    let inner: usize = x.shape()[axis + 1..].iter().product();
    let row = len * inner;
    let x = match x.as_slice() {
        Some(_) => ndarray::CowArray::from(x.view()),
        None => ndarray::CowArray::from(super::broadcast::standard(x)),
    };
    let data = x.as_slice().expect("standard layout");
    let mut out = super::storage::take(n).unwrap_or_else(|| vec![0.0; n]);
    // Within each `[len, inner]` row the roll is two block copies: the
    // last `shift` blocks to the front, the rest after them.
    let split = (len - shift) * inner;
    let move_rows = |out: &mut [f64], data: &[f64]| {
        // Rows of 2 to 4 numbers (a cross product's roll of 3-vectors)
        // as fixed moves.
        match (row, split) {
            (2, 1) => return rolled_rows::<2, 1>(out, data),
            (3, 1) => return rolled_rows::<3, 1>(out, data),
            (3, 2) => return rolled_rows::<3, 2>(out, data),
            (4, 1) => return rolled_rows::<4, 1>(out, data),
            (4, 2) => return rolled_rows::<4, 2>(out, data),
            (4, 3) => return rolled_rows::<4, 3>(out, data),
            _ => {}
        }
        if row <= SHORT_ROW {
            // Short rows number by number: two calls to copy a row of 3
            // cost more than the row (15% of the BA residuals).
            for (to, from) in out.chunks_exact_mut(row).zip(data.chunks_exact(row)) {
                let (head, tail) = from.split_at(split);
                for (t, &f) in to.iter_mut().zip(tail.iter().chain(head)) {
                    *t = f;
                }
            }
            return;
        }
        for (to, from) in out.chunks_exact_mut(row).zip(data.chunks_exact(row)) {
            let (head, tail) = from.split_at(split);
            to[..row - split].copy_from_slice(tail);
            to[row - split..].copy_from_slice(head);
        }
    };
    const TASK: usize = 1 << 16;
    if n >= 4 * TASK {
        let rows = (TASK / row).max(1) * row;
        out.par_chunks_mut(rows)
            .zip(data.par_chunks(rows))
            .for_each(|(out, data)| move_rows(out, data));
    } else {
        move_rows(&mut out, data);
    }
    ArrayD::from_shape_vec(IxDyn(shape), out).expect("roll keeps the shape")
}

/// Rows of `L` numbers rolled so that each starts at its number `S`:
/// `out[i] = data[(i + S) % L]` row by row, moves the compiler lays out.
fn rolled_rows<const L: usize, const S: usize>(out: &mut [f64], data: &[f64]) {
    for (to, from) in out.chunks_exact_mut(L).zip(data.chunks_exact(L)) {
        let (Ok(to), Ok(from)) = (<&mut [f64; L]>::try_from(to), <&[f64; L]>::try_from(from))
        else {
            continue;
        };
        *to = std::array::from_fn(|i| from[(i + S) % L]);
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

#[cfg(test)]
mod tests {
    use super::roll;
    use ndarray::{ArrayD, Axis, IxDyn};

    /// `np.roll` by definition: element `i` along the axis moves to
    /// `(i + shift) % len`.
    fn reference(x: &ArrayD<f64>, axis: usize, shift: usize) -> ArrayD<f64> {
        let len = x.shape()[axis];
        let mut out = x.clone();
        for i in 0..len {
            out.index_axis_mut(Axis(axis), (i + shift) % len)
                .assign(&x.index_axis(Axis(axis), i));
        }
        out
    }

    #[test]
    fn rolls_agree_with_the_definition_on_any_axis_and_size() {
        // Short and long last axes, inner blocks, and one large enough to
        // be split across threads.
        for (shape, axis, shift) in [
            (vec![7, 3], 1, 1),
            (vec![7, 3], 1, 5),
            (vec![5, 2], 1, 1),
            (vec![5, 4], 1, 1),
            (vec![5, 4], 1, 2),
            (vec![5, 4], 1, 3),
            (vec![6, 1, 3], 1, 0),
            (vec![4, 5, 3], 1, 2),
            (vec![4, 5, 3], 0, 3),
            (vec![6], 0, 0),
            (vec![300_000, 3], 1, 2),
            (vec![3, 100_000], 0, 1),
            (vec![2, 0, 3], 2, 1),
        ] {
            let n: usize = shape.iter().product();
            let x = ArrayD::from_shape_vec(IxDyn(&shape), (0..n).map(|k| k as f64 * 0.5).collect())
                .expect("sizes agree");
            // A transposed view too, which is copied to row-major first.
            let got = roll(&x.view(), axis, shift, &shape);
            assert_eq!(
                got,
                reference(&x, axis, shift),
                "{shape:?} axis {axis} shift {shift}"
            );
            if shape.len() == 2 {
                let t = x.t();
                let tshape = t.shape().to_vec();
                let want = reference(&t.to_owned(), 1 - axis, shift);
                assert_eq!(
                    roll(&t, 1 - axis, shift, &tshape),
                    want,
                    "transposed {shape:?}"
                );
            }
        }
    }
}

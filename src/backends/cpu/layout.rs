//! Strided and broadcast views of contiguous data: their strides, and
//! copying one into row-major order fast (the innermost axis is one
//! `copy_from_slice` for stride 1, one fill for stride 0, a strided loop
//! otherwise; the outer axes are walked with an odometer). ndarray's general
//! iterator takes several nanoseconds per element on such views, which made
//! broadcasting a column to a matrix dominate elementwise work.

use ndarray::{ArrayD, IxDyn};

/// The elements of `data` read at `offset + sum_k i_k * strides[k]` for
/// every index `i` of `shape`, in row-major order (strides are in elements;
/// 0 repeats along a broadcast axis).
pub fn gather_strided(data: &[f64], offset: usize, strides: &[usize], shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = shape.len();
    if rank == 0 {
        out.push(data[offset]);
        return out;
    }
    let (len, step) = (shape[rank - 1], strides[rank - 1]);
    let outer = &shape[..rank - 1];
    let mut index = vec![0usize; outer.len()];
    let mut base = offset;
    loop {
        match step {
            1 => out.extend_from_slice(&data[base..base + len]),
            0 => out.extend(std::iter::repeat_n(data[base], len)),
            _ => out.extend((0..len).map(|k| data[base + k * step])),
        }
        // Next outer index (the odometer), moving `base` with it.
        let mut axis = outer.len();
        loop {
            if axis == 0 {
                return out;
            }
            axis -= 1;
            index[axis] += 1;
            base += strides[axis];
            if index[axis] < outer[axis] {
                break;
            }
            base -= strides[axis] * outer[axis];
            index[axis] = 0;
        }
    }
}

/// Row-major strides (in elements) of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; shape.len()];
    let mut step = 1usize;
    for k in (0..shape.len()).rev() {
        strides[k] = step;
        step *= shape[k];
    }
    strides
}

/// The strides that read a view of shape `from` and strides `from_strides`
/// broadcast to `shape` (0 along broadcast axes), or `None` when the shapes
/// do not broadcast.
pub fn broadcast_strides(
    from: &[usize],
    from_strides: &[usize],
    shape: &[usize],
) -> Option<Vec<usize>> {
    if from.len() > shape.len() {
        return None;
    }
    let lead = shape.len() - from.len();
    let mut strides = vec![0usize; shape.len()];
    for k in 0..from.len() {
        let (dim, target) = (from[k], shape[lead + k]);
        if dim == target {
            strides[lead + k] = if dim == 1 { 0 } else { from_strides[k] };
        } else if dim != 1 {
            return None;
        }
    }
    Some(strides)
}

/// The view of `data` from `offset` with `from` shape and `strides`,
/// broadcast to `shape` with NumPy's rules, as a row-major array; `None`
/// when the shapes do not broadcast.
pub fn broadcast_strided(
    data: &[f64],
    offset: usize,
    from: &[usize],
    from_strides: &[usize],
    shape: &[usize],
) -> Option<ArrayD<f64>> {
    let strides = broadcast_strides(from, from_strides, shape)?;
    let data = gather_strided(data, offset, &strides, shape);
    ArrayD::from_shape_vec(IxDyn(shape), data).ok()
}

/// `source` (contiguous, row-major, of shape `from`) broadcast to `shape`.
pub fn broadcast_contiguous(
    source: &[f64],
    from: &[usize],
    shape: &[usize],
) -> Option<ArrayD<f64>> {
    broadcast_strided(source, 0, from, &row_major_strides(from), shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array, ArrayViewD};

    fn reference(view: &ArrayViewD<'_, f64>, shape: &[usize]) -> Vec<f64> {
        view.broadcast(IxDyn(shape))
            .expect("broadcasts")
            .iter()
            .copied()
            .collect()
    }

    #[test]
    fn broadcasts_agree_with_ndarray() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[5, 1], &[5, 3]),
            (&[1, 4], &[3, 4]),
            (&[4], &[2, 3, 4]),
            (&[2, 1, 3], &[2, 4, 3]),
            (&[1], &[7]),
            (&[], &[2, 2]),
            (&[3, 1, 1], &[3, 2, 2]),
            (&[2, 0], &[2, 0]),
        ];
        for (from, to) in cases {
            let n: usize = from.iter().product();
            let source = Array::from_iter((0..n).map(|k| k as f64 * 1.5 - 2.0))
                .into_shape_with_order(IxDyn(from))
                .expect("sizes agree");
            let got = broadcast_contiguous(source.as_slice().expect("contiguous"), from, to)
                .expect("broadcasts");
            assert_eq!(got.shape(), *to);
            assert_eq!(
                got.iter().copied().collect::<Vec<_>>(),
                reference(&source.view(), to),
                "{from:?} -> {to:?}"
            );
        }
        assert!(broadcast_contiguous(&[1.0, 2.0], &[2], &[3]).is_none());
    }
}

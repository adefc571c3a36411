//! Strides of row-major data and of its broadcasts: how an elementwise
//! group reads a broadcast or sliced operand in place (`sources.rs`), one
//! run at a time, without copying it.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_strides_repeat_along_new_and_unit_axes() {
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        type Case<'a> = (&'a [usize], &'a [usize], Option<&'a [usize]>);
        let cases: &[Case<'_>] = &[
            (&[5, 1], &[5, 3], Some(&[1, 0])),
            (&[1, 4], &[3, 4], Some(&[0, 1])),
            (&[4], &[2, 3, 4], Some(&[0, 0, 1])),
            (&[2, 1, 3], &[2, 4, 3], Some(&[3, 0, 1])),
            (&[], &[2, 2], Some(&[0, 0])),
            (&[2], &[3], None),
            (&[2, 3], &[3], None),
        ];
        for (from, to, want) in cases {
            let got = broadcast_strides(from, &row_major_strides(from), to);
            assert_eq!(got.as_deref(), *want, "{from:?} -> {to:?}");
        }
    }
}

//! Data movements (slices, pads, broadcasts, transposes, joins, rolls)
//! element by element: where each element of the result comes from. The
//! CPU plans turn this into runs of copies; sparse derivatives follow it
//! to know which inputs each element depends on.

use super::op::TOp;
use smallvec::SmallVec;

/// A data movement from operands of known shapes.
pub struct Movement {
    op: TOp,
    shapes: SmallVec<[SmallVec<[usize; 4]>; 4]>,
    strides: SmallVec<[SmallVec<[usize; 4]>; 4]>,
}

impl Movement {
    /// The movement `op` does on operands of `shapes`; `None` for an
    /// operation that is not one.
    pub fn new(op: &TOp, shapes: &[&[usize]]) -> Option<Movement> {
        if !matches!(
            op,
            TOp::Slice { .. }
                | TOp::Pad { .. }
                | TOp::Broadcast(_)
                | TOp::Transpose(_)
                | TOp::Concat(_)
                | TOp::Roll { .. }
        ) {
            return None;
        }
        Some(Movement {
            op: op.clone(),
            shapes: shapes.iter().map(|s| SmallVec::from_slice(s)).collect(),
            strides: shapes.iter().map(|s| row_major_strides(s)).collect(),
        })
    }

    /// Where the element at `index` (of the result) comes from: an
    /// operand and a flat position in it, or `None` for a padded zero.
    pub fn source(&self, index: &[usize]) -> Option<(u8, usize)> {
        match &self.op {
            TOp::Slice { axis, start, .. } => {
                let axis = usize::from(*axis);
                Some((
                    0,
                    flat(index, &self.strides[0], |d, i| {
                        if d == axis { i + start } else { i }
                    }),
                ))
            }
            TOp::Pad { axis, before, .. } => {
                let axis = usize::from(*axis);
                let i = index[axis];
                if i < *before || i >= before + self.shapes[0][axis] {
                    return None;
                }
                Some((
                    0,
                    flat(index, &self.strides[0], |d, i| {
                        if d == axis { i - before } else { i }
                    }),
                ))
            }
            TOp::Broadcast(_) => {
                let input = &self.shapes[0];
                let lead = index.len() - input.len();
                let mut at = 0;
                for (d, &extent) in input.iter().enumerate() {
                    if extent != 1 {
                        at += index[lead + d] * self.strides[0][d];
                    }
                }
                Some((0, at))
            }
            TOp::Transpose(perm) => {
                let mut at = 0;
                for (i, &p) in perm.iter().enumerate() {
                    at += index[i] * self.strides[0][usize::from(p)];
                }
                Some((0, at))
            }
            TOp::Concat(axis) => {
                let axis = usize::from(*axis);
                let mut i = index[axis];
                for (k, s) in self.shapes.iter().enumerate() {
                    if i < s[axis] {
                        let at = flat(
                            index,
                            &self.strides[k],
                            |d, j| if d == axis { i } else { j },
                        );
                        return Some((k as u8, at));
                    }
                    i -= s[axis];
                }
                None
            }
            TOp::Roll { axis, shift } => {
                let axis = usize::from(*axis);
                let len = self.shapes[0][axis];
                Some((
                    0,
                    flat(index, &self.strides[0], |d, i| {
                        if d == axis {
                            (i + len - shift % len.max(1)) % len.max(1)
                        } else {
                            i
                        }
                    }),
                ))
            }
            _ => None,
        }
    }
}

/// Row-major strides of `shape`.
fn row_major_strides(shape: &[usize]) -> SmallVec<[usize; 4]> {
    let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, shape.len());
    let mut step = 1usize;
    for k in (0..shape.len()).rev() {
        strides[k] = step;
        step *= shape[k];
    }
    strides
}

/// The flat position of `index` (each coordinate mapped by `map(axis,
/// coordinate)`) under `strides`.
fn flat(index: &[usize], strides: &[usize], map: impl Fn(usize, usize) -> usize) -> usize {
    index
        .iter()
        .zip(strides)
        .enumerate()
        .map(|(d, (&i, &s))| map(d, i) * s)
        .sum()
}

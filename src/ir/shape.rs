//! Shape inference: the shape of each operation's result from its
//! operands' shapes, with NumPy broadcasting. A mismatch is a `ShapeError`
//! naming the shapes, which the tracer reports at the Lisp call.

use super::op::{Shape, TOp};
use smallvec::SmallVec;
use std::fmt;

/// Operand shapes that an operation cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError(pub String);

/// The most axes a tensor may have (NumPy's limit): deeper shapes are an
/// error where they are given (a literal, a file, a derivative's shape),
/// never a stack overflow in a kernel that walks the axes.
pub const MAX_RANK: usize = 64;

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}

/// `[2 3]`: a shape as Epsilon prints it.
pub fn show(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(" "))
}

/// The number of elements of a shape.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The NumPy broadcast of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Result<Shape, ShapeError> {
    let rank = a.len().max(b.len());
    let mut out: Shape = SmallVec::with_capacity(rank);
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(ShapeError(format!(
                    "shapes {} and {} do not broadcast",
                    show(a),
                    show(b)
                )));
            }
        });
    }
    Ok(out)
}

/// Whether `from` broadcasts to exactly `to`.
pub fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == 1)
}

fn axis_in(axis: u8, rank: usize) -> Result<usize, ShapeError> {
    let axis = usize::from(axis);
    if axis < rank {
        Ok(axis)
    } else {
        Err(ShapeError(format!(
            "axis {axis} is out of range for rank {rank}"
        )))
    }
}

/// The result shape of `op` on operands of `shapes`.
pub fn infer(op: &TOp, shapes: &[&[usize]]) -> Result<Shape, ShapeError> {
    let one = |i: usize| -> &[usize] { shapes[i] };
    Ok(match op {
        TOp::Input { shape, .. } | TOp::Placeholder { shape, .. } => shape.clone(),
        TOp::Custom(rule) => {
            if shapes.len() != rule.operand_count() {
                return Err(ShapeError(format!(
                    "a call of {} with its rule has {} operands, not {}",
                    rule.name,
                    rule.operand_count(),
                    shapes.len()
                )));
            }
            SmallVec::from_slice(one(0))
        }
        TOp::Scalar(_) => Shape::new(),
        TOp::Map(_) | TOp::Compare(_) | TOp::Where => {
            let mut out: Shape = SmallVec::from_slice(shapes[0]);
            for shape in &shapes[1..] {
                out = broadcast(&out, shape)?;
            }
            out
        }
        TOp::Round(_) | TOp::Cast(_) | TOp::StopGradient | TOp::Tag(_) => {
            SmallVec::from_slice(one(0))
        }
        TOp::Linearized => {
            if shapes.len().is_multiple_of(2) {
                return Err(ShapeError(format!(
                    "a linearized call takes its value, n arguments and n partials, not {} operands",
                    shapes.len()
                )));
            }
            let value = one(0);
            let n = TOp::linearized_arity(shapes.len());
            for (k, shape) in shapes[1..].iter().enumerate() {
                if !broadcasts_to(shape, value) {
                    let what = if k < n {
                        "argument"
                    } else {
                        "partial derivative"
                    };
                    return Err(ShapeError(format!(
                        "a function with declared partial derivatives works elementwise: its {what} of shape {} does not broadcast to its result's shape {}",
                        show(shape),
                        show(value)
                    )));
                }
            }
            SmallVec::from_slice(value)
        }
        TOp::Scan(scan) | TOp::ScanVjp(scan) => {
            let mut expected = scan.operand_shapes();
            if let TOp::ScanVjp(_) = op {
                expected.push(scan.output_shape());
            }
            if expected.len() != shapes.len()
                || expected.iter().zip(shapes).any(|(a, b)| a[..] != b[..])
            {
                return Err(ShapeError(format!(
                    "scan operands have shapes {}, the loop expects {}",
                    shapes.iter().map(|s| show(s)).collect::<Vec<_>>().join(" "),
                    expected
                        .iter()
                        .map(|s| show(s))
                        .collect::<Vec<_>>()
                        .join(" ")
                )));
            }
            match op {
                TOp::ScanVjp(_) => SmallVec::from_slice(&[scan.adjoint_len()]),
                _ => scan.output_shape(),
            }
        }
        TOp::Reduce { axes, keepdims, .. } => {
            let input = one(0);
            for &axis in axes {
                axis_in(axis, input.len())?;
            }
            input
                .iter()
                .enumerate()
                .filter_map(|(i, &d)| match (axes.contains(&(i as u8)), keepdims) {
                    (false, _) => Some(d),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect()
        }
        TOp::ArgExtreme { axis, .. } => match axis {
            None => Shape::new(),
            Some(axis) => {
                let input = one(0);
                let axis = axis_in(*axis, input.len())?;
                if input[axis] == 0 {
                    return Err(ShapeError("argmax of an empty axis".into()));
                }
                input
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != axis)
                    .map(|(_, &d)| d)
                    .collect()
            }
        },
        TOp::Broadcast(shape) => {
            if !broadcasts_to(one(0), shape) {
                return Err(ShapeError(format!(
                    "cannot broadcast {} to {}",
                    show(one(0)),
                    show(shape)
                )));
            }
            shape.clone()
        }
        TOp::Reshape(shape) => {
            if numel(shape) != numel(one(0)) {
                return Err(ShapeError(format!(
                    "cannot reshape {} to {}",
                    show(one(0)),
                    show(shape)
                )));
            }
            shape.clone()
        }
        TOp::Transpose(perm) => {
            let input = one(0);
            let mut seen = vec![false; input.len()];
            if perm.len() != input.len() {
                return Err(ShapeError(format!(
                    "a permutation of {} axes for a tensor of rank {}",
                    perm.len(),
                    input.len()
                )));
            }
            for &p in perm {
                let p = axis_in(p, input.len())?;
                if std::mem::replace(&mut seen[p], true) {
                    return Err(ShapeError("repeated axis in a permutation".into()));
                }
            }
            perm.iter().map(|&p| input[usize::from(p)]).collect()
        }
        TOp::MatMul => matmul_shape(one(0), one(1))?,
        TOp::Slice { axis, start, end } => {
            let input = one(0);
            let a = axis_in(*axis, input.len())?;
            if start > end || *end > input[a] {
                return Err(ShapeError(format!(
                    "slice {start}..{end} is out of range for length {}",
                    input[a]
                )));
            }
            let mut out: Shape = SmallVec::from_slice(input);
            out[a] = end - start;
            out
        }
        TOp::Pad {
            axis,
            before,
            after,
        } => {
            let input = one(0);
            let a = axis_in(*axis, input.len())?;
            let mut out: Shape = SmallVec::from_slice(input);
            out[a] += before + after;
            out
        }
        TOp::Concat(axis) => {
            let Some(first) = shapes.first().copied() else {
                return Err(ShapeError("a join of no tensors".to_string()));
            };
            let a = axis_in(*axis, first.len())?;
            let mut out: Shape = SmallVec::from_slice(first);
            for shape in &shapes[1..] {
                let same_elsewhere = shape.len() == first.len()
                    && (0..first.len()).all(|i| i == a || shape[i] == first[i]);
                if !same_elsewhere {
                    return Err(ShapeError(format!(
                        "cannot join {} and {} along axis {a}",
                        show(first),
                        show(shape)
                    )));
                }
                out[a] += shape[a];
            }
            out
        }
        TOp::Roll { axis, .. } => {
            axis_in(*axis, one(0).len())?;
            SmallVec::from_slice(one(0))
        }
        TOp::Op(op) => op.shape(shapes)?,
    })
}

/// NumPy `matmul` for operands of rank 1 or 2.
pub fn matmul_shape(a: &[usize], b: &[usize]) -> Result<Shape, ShapeError> {
    let mismatch = || ShapeError(format!("shapes {} and {} do not align", show(a), show(b)));
    match (a.len(), b.len()) {
        (1, 1) if a[0] == b[0] => Ok(Shape::new()),
        (2, 1) if a[1] == b[0] => Ok(SmallVec::from_slice(&[a[0]])),
        (1, 2) if a[0] == b[0] => Ok(SmallVec::from_slice(&[b[1]])),
        (2, 2) if a[1] == b[0] => Ok(SmallVec::from_slice(&[a[0], b[1]])),
        (1 | 2, 1 | 2) => Err(mismatch()),
        (ra, rb) if ra >= 2 && rb >= 2 => {
            // Stacks of matrices: the leading (batch) axes broadcast.
            let (m, k) = (a[ra - 2], a[ra - 1]);
            let (k2, n) = (b[rb - 2], b[rb - 1]);
            if k != k2 {
                return Err(mismatch());
            }
            let mut out = broadcast(&a[..ra - 2], &b[..rb - 2])?;
            out.push(m);
            out.push(n);
            Ok(out)
        }
        _ => Err(ShapeError(format!(
            "shapes {} and {}: matmul of a stack of matrices and a vector is not traceable yet",
            show(a),
            show(b)
        ))),
    }
}

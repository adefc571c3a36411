//! Tensor helpers shared by the evaluator and the built-ins: building tensors
//! from elements, NumPy broadcasting, elementwise maps (parallel above a size
//! threshold), axis and shape arguments.

use super::error::{EvalError, EvalResult};
use super::value::Value;
use ndarray::{ArrayD, IxDyn, Zip};

/// Elementwise work on at least this many elements runs on the rayon pool.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// The largest tensor Epsilon makes, in elements (32 GiB of f64).
pub const MAX_ELEMENTS: usize = 1 << 32;

/// The most axes a tensor may have (the tensor language's limit).
pub use crate::ir::shape::MAX_RANK;

/// An error unless `rank` axes are within [`MAX_RANK`].
pub fn check_rank(rank: usize) -> EvalResult<()> {
    if rank > MAX_RANK {
        return Err(EvalError::range(format!(
            "a tensor may have at most {MAX_RANK} axes, got {rank}"
        )));
    }
    Ok(())
}

/// Results of at least this many elements (128 MiB) are probed before they
/// are made.
const PROBE_ELEMENTS: usize = 1 << 24;

/// The number of elements of a tensor of `shape`, after checking that it can
/// be made: within [`MAX_ELEMENTS`], and for a large one, that the allocator
/// grants the memory. An impossible request is then an error, where the
/// allocation itself would abort the process.
pub fn check_allocation(shape: &[usize]) -> EvalResult<usize> {
    check_allocation_of(shape, 8)
}

/// [`check_allocation`] for elements of `element_bytes` bytes (4 for f32
/// storage).
pub fn check_allocation_of(shape: &[usize], element_bytes: usize) -> EvalResult<usize> {
    check_rank(shape.len())?;
    let too_large = || {
        EvalError::range(format!(
            "a tensor of shape {} is too large (more than {MAX_ELEMENTS} elements)",
            format_shape(shape)
        ))
    };
    let len = shape
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d))
        .filter(|n| *n <= MAX_ELEMENTS)
        .ok_or_else(too_large)?;
    // ndarray also refuses shapes whose non-zero axes multiply past isize,
    // even when another axis is 0 (and panics on them).
    shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(too_large)?;
    if len.saturating_mul(element_bytes) >= PROBE_ELEMENTS * 8 {
        let bytes = len.saturating_mul(element_bytes);
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| {
            EvalError::range(format!(
                "not enough memory for a tensor of shape {} ({:.1} GB)",
                format_shape(shape),
                bytes as f64 * 1e-9
            ))
        })?;
    }
    Ok(len)
}

/// A result array as a value: 0-dimensional arrays become floats.
pub fn to_value(array: ArrayD<f64>) -> Value {
    if array.ndim() == 0 {
        Value::Float(array.iter().next().copied().unwrap_or(f64::NAN))
    } else {
        Value::tensor(array)
    }
}

/// `[2 3]`: a shape as Epsilon prints it.
pub fn format_shape(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(" "))
}

/// Stacks numbers (into a vector) or equal-shape tensors (along a new first
/// axis): the meaning of a bracket form `[a b c]`.
pub fn stack_elements(values: &[Value]) -> EvalResult<ArrayD<f64>> {
    if values.is_empty() {
        return Ok(ArrayD::zeros(IxDyn(&[0])));
    }
    let mut inner_shape: Option<Vec<usize>> = None;
    let mut data = Vec::new();
    for (position, value) in values.iter().enumerate() {
        let (shape, elements): (Vec<usize>, Vec<f64>) = match value {
            Value::Int(n) => (vec![], vec![*n as f64]),
            Value::Float(x) => (vec![], vec![*x]),
            Value::Tensor(t) => (t.shape().to_vec(), t.iter().copied().collect()),
            other => {
                return Err(EvalError::type_error(format!(
                    "tensor elements must be numbers or tensors, element {position} is {} {}",
                    other.type_name(),
                    other.short()
                )));
            }
        };
        match &inner_shape {
            None => {
                check_rank(shape.len() + 1)?;
                inner_shape = Some(shape)
            }
            Some(expected) if *expected != shape => {
                return Err(EvalError::shape(format!(
                    "ragged tensor: element 0 has shape {} but element {position} has shape {}",
                    format_shape(expected),
                    format_shape(&shape)
                )));
            }
            Some(_) => {}
        }
        data.extend(elements);
    }
    let mut shape = vec![values.len()];
    shape.extend(inner_shape.unwrap_or_default());
    ArrayD::from_shape_vec(IxDyn(&shape), data)
        .map_err(|err| EvalError::shape(format!("cannot build tensor: {err}")))
}

/// The NumPy broadcast of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> EvalResult<Vec<usize>> {
    let ndim = a.len().max(b.len());
    let mut shape = vec![0; ndim];
    for (position, dim) in shape.iter_mut().enumerate() {
        let dim_a = dim_from_end(a, ndim - 1 - position);
        let dim_b = dim_from_end(b, ndim - 1 - position);
        *dim = match (dim_a, dim_b) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(EvalError::shape(format!(
                    "shapes {} and {} cannot be broadcast together",
                    format_shape(a),
                    format_shape(b)
                )));
            }
        };
    }
    Ok(shape)
}

/// The dimension `from_end` places before the last (1 beyond the rank).
fn dim_from_end(shape: &[usize], from_end: usize) -> usize {
    if from_end < shape.len() {
        shape[shape.len() - 1 - from_end]
    } else {
        1
    }
}

/// Applies `f` elementwise to two broadcast arrays.
pub fn zip_map(
    a: &ArrayD<f64>,
    b: &ArrayD<f64>,
    f: impl Fn(f64, f64) -> f64 + Sync + Send,
) -> EvalResult<ArrayD<f64>> {
    let shape = broadcast_shape(a.shape(), b.shape())?;
    check_allocation(&shape)?;
    let (Some(a_view), Some(b_view)) = (a.broadcast(IxDyn(&shape)), b.broadcast(IxDyn(&shape)))
    else {
        return Err(EvalError::shape(format!(
            "shapes {} and {} cannot be broadcast together",
            format_shape(a.shape()),
            format_shape(b.shape())
        )));
    };
    let zip = Zip::from(&a_view).and(&b_view);
    Ok(if a_view.len() >= PARALLEL_THRESHOLD {
        zip.par_map_collect(|x, y| f(*x, *y))
    } else {
        zip.map_collect(|x, y| f(*x, *y))
    })
}

/// Applies `f` to every element (an error where the result cannot be
/// allocated).
pub fn map(a: &ArrayD<f64>, f: impl Fn(f64) -> f64 + Sync + Send) -> EvalResult<ArrayD<f64>> {
    check_allocation(a.shape())?;
    let zip = Zip::from(a);
    Ok(if a.len() >= PARALLEL_THRESHOLD {
        zip.par_map_collect(|x| f(*x))
    } else {
        zip.map_collect(|x| f(*x))
    })
}

/// A possibly negative axis, checked against `ndim`.
pub fn normalize_axis(axis: i64, ndim: usize) -> EvalResult<usize> {
    let resolved = if axis < 0 { axis + ndim as i64 } else { axis };
    if resolved < 0 || resolved >= ndim as i64 {
        return Err(EvalError::range(format!(
            "axis {axis} is out of range for a tensor of rank {ndim}"
        )));
    }
    Ok(resolved as usize)
}

/// A shape given as a list of sizes, one integer, or several integers.
pub fn shape_from_args(args: &[Value]) -> EvalResult<Vec<usize>> {
    match args {
        [single @ (Value::Pair(_) | Value::Nil)] => shape_from_list(single),
        many => {
            check_rank(many.len())?;
            many.iter().map(dimension).collect()
        }
    }
}

/// A shape given as a list of sizes.
pub fn shape_from_list(list: &Value) -> EvalResult<Vec<usize>> {
    let sizes = list.list_to_vec()?;
    check_rank(sizes.len())?;
    sizes.iter().map(dimension).collect()
}

fn dimension(value: &Value) -> EvalResult<usize> {
    let n = value.as_i64()?;
    usize::try_from(n)
        .map_err(|_| EvalError::range(format!("a dimension cannot be negative, got {n}")))
}

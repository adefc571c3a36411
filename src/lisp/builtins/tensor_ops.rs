//! Tensor algebra and structure: products, selection, joining, slicing,
//! indexing and rolling. Conventions follow NumPy where SPEC says nothing.

use super::{builtin, with_options};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{
    broadcast_shape, check_allocation, format_shape, normalize_axis, to_value,
};
use crate::lisp::value::Value;
use ndarray::{ArrayD, ArrayView2, Axis, Ix2, IxDyn, Slice, Zip};

fn as_matrix(t: &ArrayD<f64>) -> EvalResult<ArrayView2<'_, f64>> {
    t.view()
        .into_dimensionality::<Ix2>()
        .map_err(|e| EvalError::shape(e.to_string()))
}

/// NumPy `matmul`: vectors are promoted to matrices and the added axis is
/// removed afterwards; leading (batch) axes broadcast. Runs the CPU
/// backend's kernel (the one compiled tapes run).
pub fn matmul_arrays(a: &ArrayD<f64>, b: &ArrayD<f64>) -> EvalResult<ArrayD<f64>> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(EvalError::shape(
            "matmul needs tensors of rank 1 or more (use * for scalars)",
        ));
    }
    let (ra, rb) = (a.ndim(), b.ndim());
    let k = a.shape()[ra - 1];
    let k2 = b.shape()[if rb == 1 { 0 } else { rb - 2 }];
    if k != k2 {
        return Err(EvalError::shape(format!(
            "shapes {} and {} do not align ({k} != {k2})",
            format_shape(a.shape()),
            format_shape(b.shape())
        )));
    }
    // Vectors beside stacks: promoted here, the added axis removed after.
    let stacked = ra > 2 || rb > 2;
    let a_view = if ra == 1 && stacked {
        a.view().insert_axis(Axis(0))
    } else {
        a.view()
    };
    let b_view = if rb == 1 && stacked {
        b.view().insert_axis(Axis(1))
    } else {
        b.view()
    };
    let (sa, sb) = (a_view.shape(), b_view.shape());
    let mut out_shape = broadcast_shape(
        &sa[..sa.len().saturating_sub(2)],
        &sb[..sb.len().saturating_sub(2)],
    )?;
    if sa.len() >= 2 {
        out_shape.push(sa[sa.len() - 2]);
    }
    if sb.len() >= 2 {
        out_shape.push(sb[sb.len() - 1]);
    }
    check_allocation(&out_shape)?;
    let mut result = crate::backends::cpu::matmul(&a_view, &b_view, false, false);
    if rb == 1 && stacked {
        let last = result.ndim() - 1;
        result = result.index_axis_move(Axis(last), 0);
    }
    if ra == 1 && stacked {
        let row_axis = result.ndim() - if rb == 1 { 1 } else { 2 };
        result = result.index_axis_move(Axis(row_axis), 0);
    }
    Ok(result)
}

fn matmul(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    matmul_arrays(&*args[0].as_tensor()?, &*args[1].as_tensor()?).map(to_value)
}

fn dot(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (a, b) = (args[0].as_tensor()?, args[1].as_tensor()?);
    if a.ndim() == 0 || b.ndim() == 0 {
        return super::numeric::binary(&args[0], &args[1], Some(i64::checked_mul), |x, y| x * y);
    }
    matmul_arrays(&a, &b).map(to_value)
}

fn outer(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (a, b) = (args[0].as_tensor()?, args[1].as_tensor()?);
    let (n, m) = (a.len(), b.len());
    check_allocation(&[n, m])?;
    let values: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x * y))
        .collect();
    ArrayD::from_shape_vec(IxDyn(&[n, m]), values)
        .map(Value::tensor)
        .map_err(|e| EvalError::shape(e.to_string()))
}

fn trace(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    if t.ndim() != 2 {
        return Err(EvalError::shape(format!(
            "trace needs a matrix, got shape {}",
            format_shape(t.shape())
        )));
    }
    let matrix = as_matrix(&t)?;
    Ok(Value::Float(matrix.diag().sum()))
}

fn where_fn(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let Value::Bool(_) | Value::Nil = &args[0] {
        return Ok(if args[0].is_truthy() {
            args[1].clone()
        } else {
            args[2].clone()
        });
    }
    let (mask, a, b) = (
        args[0].as_tensor()?,
        args[1].as_tensor()?,
        args[2].as_tensor()?,
    );
    let shape = broadcast_shape(&broadcast_shape(mask.shape(), a.shape())?, b.shape())?;
    check_allocation(&shape)?;
    let dims = IxDyn(&shape);
    let views = (
        mask.broadcast(dims.clone()),
        a.broadcast(dims.clone()),
        b.broadcast(dims),
    );
    let (Some(mask), Some(a), Some(b)) = views else {
        return Err(EvalError::shape("where: arguments do not broadcast"));
    };
    let out = Zip::from(&mask)
        .and(&a)
        .and(&b)
        .map_collect(|m, x, y| if *m != 0.0 { *x } else { *y });
    Ok(to_value(out))
}

fn axis_option(args: &Args, ndim: usize, default: i64) -> EvalResult<usize> {
    let axis = match args.option("axis") {
        Some(value) => value.as_i64()?,
        None => default,
    };
    normalize_axis(axis, ndim)
}

fn tensors_of(list: &Value) -> EvalResult<Vec<std::rc::Rc<ArrayD<f64>>>> {
    let items = list.list_to_vec()?;
    if items.is_empty() {
        return Err(EvalError::type_error(
            "expected a non-empty list of tensors",
        ));
    }
    items.iter().map(Value::as_tensor).collect()
}

fn concat(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let tensors = tensors_of(&args[0])?;
    let ndim = tensors[0].ndim();
    if ndim == 0 {
        return Err(EvalError::shape("concat needs tensors of rank 1 or more"));
    }
    let axis = axis_option(args, ndim, 0)?;
    // The result's size is checked (and, when large, its memory probed)
    // first, so a join past memory is an error rather than an abort.
    let mut shape = tensors[0].shape().to_vec();
    shape[axis] = tensors
        .iter()
        .map(|t| t.shape().get(axis).copied().unwrap_or(0))
        .try_fold(0usize, usize::checked_add)
        .unwrap_or(usize::MAX);
    crate::lisp::tensor::check_allocation(&shape)?;
    let views: Vec<_> = tensors.iter().map(|t| t.view()).collect();
    ndarray::concatenate(Axis(axis), &views)
        .map(Value::tensor)
        .map_err(|_| {
            let shapes: Vec<String> = tensors.iter().map(|t| format_shape(t.shape())).collect();
            EvalError::shape(format!(
                "concat along axis {axis}: shapes {} differ off that axis",
                shapes.join(", ")
            ))
        })
}

fn stack(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let tensors = tensors_of(&args[0])?;
    let axis = axis_option(args, tensors[0].ndim() + 1, 0)?;
    let mut shape = tensors[0].shape().to_vec();
    shape.insert(axis, tensors.len());
    crate::lisp::tensor::check_allocation(&shape)?;
    let views: Vec<_> = tensors.iter().map(|t| t.view()).collect();
    ndarray::stack(Axis(axis), &views)
        .map(Value::tensor)
        .map_err(|_| {
            let shapes: Vec<String> = tensors.iter().map(|t| format_shape(t.shape())).collect();
            EvalError::shape(format!(
                "stack needs equal shapes, got {}",
                shapes.join(", ")
            ))
        })
}

/// A slice bound: negative counts from the end, clamped to [0, len].
pub(crate) fn bound(value: &Value, len: usize) -> EvalResult<isize> {
    let n = value.as_i64()?;
    let resolved = if n < 0 { n + len as i64 } else { n };
    Ok(resolved.clamp(0, len as i64) as isize)
}

fn slice(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if super::indexing::traced_position(&args.values[1..]) {
        return super::indexing::slice_traced(interp, args);
    }
    let t = args[0].as_tensor()?;
    if t.ndim() == 0 {
        return Err(EvalError::shape("cannot slice a number"));
    }
    let axis = axis_option(args, t.ndim(), 0)?;
    let len = t.shape()[axis];
    let start = bound(&args[1], len)?;
    let end = match args.get(2) {
        None | Some(Value::Nil) => len as isize,
        Some(end) => bound(end, len)?,
    };
    let step = match args.option("step") {
        Some(step) => step.as_i64()?,
        None => 1,
    };
    if step <= 0 {
        return Err(EvalError::range("slice :step must be positive"));
    }
    let end = end.max(start);
    let view = t.slice_axis(Axis(axis), Slice::new(start, Some(end), step as isize));
    Ok(Value::tensor(view.to_owned()))
}

fn index(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if super::indexing::traced_position(&args.values[1..]) {
        return super::indexing::index_traced(interp, args);
    }
    let t = args[0].as_tensor()?;
    let indices = &args[1..];
    if indices.len() > t.ndim() {
        return Err(EvalError::range(format!(
            "{} indices for a tensor of rank {}",
            indices.len(),
            t.ndim()
        )));
    }
    let mut view = t.view();
    for (axis, value) in indices.iter().enumerate() {
        let len = t.shape()[axis];
        let k = value.as_i64()?;
        let resolved = if k < 0 { k + len as i64 } else { k };
        if resolved < 0 || resolved >= len as i64 {
            return Err(EvalError::range(format!(
                "index {k} is out of range for axis {axis} of length {len}"
            )));
        }
        view = view.index_axis_move(Axis(0), resolved as usize);
    }
    Ok(to_value(view.to_owned()))
}

fn roll_axis(t: &ArrayD<f64>, shift: i64, axis: usize) -> ArrayD<f64> {
    let len = t.shape()[axis];
    if len == 0 {
        return t.clone();
    }
    let shift = shift.rem_euclid(len as i64) as usize;
    if shift == 0 {
        return t.clone();
    }
    let split = len - shift;
    let tail = t.slice_axis(Axis(axis), Slice::from(split..));
    let head = t.slice_axis(Axis(axis), Slice::from(..split));
    ndarray::concatenate(Axis(axis), &[tail, head]).unwrap_or_else(|_| t.clone())
}

fn roll(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let shift = args[1].as_i64()?;
    if t.ndim() == 0 {
        return Ok(args[0].clone());
    }
    match args.option("axis") {
        Some(axis) => {
            let axis = normalize_axis(axis.as_i64()?, t.ndim())?;
            Ok(Value::tensor(roll_axis(&t, shift, axis)))
        }
        None => {
            let flat: Vec<f64> = t.iter().copied().collect();
            let len = flat.len();
            let flat = ArrayD::from_shape_vec(IxDyn(&[len]), flat)
                .map_err(|e| EvalError::shape(e.to_string()))?;
            let rolled: Vec<f64> = roll_axis(&flat, shift, 0).iter().copied().collect();
            ArrayD::from_shape_vec(t.raw_dim(), rolled)
                .map(Value::tensor)
                .map_err(|e| EvalError::shape(e.to_string()))
        }
    }
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("matmul", "(matmul a b)", "Matrix product with NumPy's rules: a matrix times a vector is a vector; leading axes are batch axes and broadcast.", 2, Some(2), matmul),
    builtin("dot", "(dot a b)", "Inner product of two vectors (a float); matrix product for matrices; plain product with a number.", 2, Some(2), dot),
    builtin("outer", "(outer a b)", "The matrix of products a_i * b_j (inputs flattened).", 2, Some(2), outer),
    builtin("trace", "(trace m)", "The sum of the diagonal of a matrix.", 1, Some(1), trace),
    builtin("where", "(where mask a b)", "Elementwise a where mask is non-zero, else b (broadcasting); mask comes from comparisons.", 3, Some(3), where_fn),
    with_options(builtin("concat", "(concat (list a b ...) :axis k)", "Joins tensors along an existing axis (default 0).", 1, Some(1), concat), &["axis"]),
    with_options(builtin("stack", "(stack (list a b ...) :axis k)", "Joins equal-shape tensors along a new axis (default 0).", 1, Some(1), stack), &["axis"]),
    with_options(builtin("slice", "(slice t start end :axis k :step s)", "Elements start (inclusive) to end (exclusive) along axis k (default 0); negative bounds count from the end; end () means to the end.", 2, Some(3), slice), &["axis", "step"]),
    builtin("index", "(index t i j ...)", "The element or sub-tensor at integer indices on the leading axes (negative counts from the end); a float when every axis is indexed.", 1, None, index),
    with_options(builtin("roll", "(roll t shift :axis k)", "Elements moved shift places toward higher indices, wrapping around; without :axis, over the flattened tensor.", 2, Some(2), roll), &["axis"]),
];

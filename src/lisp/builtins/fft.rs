//! Discrete Fourier transforms with NumPy's names, arguments and
//! normalisation: `fft ifft rfft irfft fft2 ifft2`, `fftfreq rfftfreq`,
//! `fftshift ifftshift`.
//!
//! Each transform is the table's `Fft` operation (rustfft, plans cached
//! per length) on the operand's parts packed as real pairs `[..., 2]`,
//! its result unpacked into a complex value; padding, truncation,
//! scaling and the Hermitian half of real transforms are built-ins on
//! the parts. Everything is therefore recorded and differentiated like
//! any other operation (the transform's reverse rule is the other
//! direction).

use super::{builtin, with_options};
use crate::ir::ops::Op;
use crate::ir::ops::fft::Fft;
use crate::lisp::builtins::apply::Apply;
use crate::lisp::complex::{Lower, Parts, shape_of};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::symbol::Symbol;
use crate::lisp::tensor::normalize_axis;
use crate::lisp::value::Value;

fn lower(interp: &mut Interp) -> Lower<'_> {
    let span = interp.call_span;
    Lower { interp, span }
}

fn keyword(name: &str) -> Value {
    Value::Keyword(Symbol::intern(name))
}

fn ints(dims: &[usize]) -> Value {
    Value::list(dims.iter().map(|&d| Value::Int(d as i64)))
}

/// The operand of a transform: a number or tensor, real or complex, of
/// rank 1 or more.
fn operand(args: &Args, what: &str) -> EvalResult<(Parts, Vec<usize>)> {
    let value = &args[0];
    let shape = shape_of(value)?;
    if shape.is_empty() {
        return Err(EvalError::shape(format!(
            "{what} needs a tensor (rank 1 or more), got a number"
        )));
    }
    Ok((Parts::of(value), shape))
}

/// The scale NumPy's `norm` gives a transform of length `n`: `'backward`
/// (the default) scales the inverse by 1/n, `'forward` the forward one,
/// `'ortho` both by 1/sqrt(n).
fn scale(args: &Args, n: usize, inverse: bool) -> EvalResult<f64> {
    let name = match args.option("norm") {
        None | Some(Value::Nil) => "backward".to_string(),
        Some(Value::Symbol(s)) => s.name().to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => other.short(),
    };
    let n = n as f64;
    Ok(match (name.as_str(), inverse) {
        ("backward", false) | ("forward", true) => 1.0,
        ("backward", true) | ("forward", false) => 1.0 / n,
        ("ortho", _) => 1.0 / n.sqrt(),
        (other, _) => {
            return Err(EvalError::type_error(format!(
                ":norm is 'backward, 'ortho or 'forward, got {other}"
            )));
        }
    })
}

/// The axis option (default the last), as an axis of `shape`.
fn axis_option(args: &Args, rank: usize) -> EvalResult<usize> {
    match args.option("axis") {
        None => Ok(rank - 1),
        Some(axis) => normalize_axis(axis.as_i64()?, rank),
    }
}

/// The length option `:n` (default `default`): a positive whole number.
fn length_option(args: &Args, default: usize, what: &str) -> EvalResult<usize> {
    match args.option("n") {
        None | Some(Value::Nil) => match default {
            0 => Err(EvalError::shape(format!(
                "{what}: the transformed axis has no elements"
            ))),
            n => Ok(n),
        },
        Some(n) => match n.as_i64()? {
            n if n >= 1 => Ok(n as usize),
            n => Err(EvalError::range(format!(
                "{what}: :n must be a positive length, got {n}"
            ))),
        },
    }
}

/// `part` cut or padded with zeros to length `n` along `axis`.
fn resized(lower: &mut Lower, part: Value, axis: usize, n: usize) -> EvalResult<Value> {
    let mut shape = shape_of(&part)?;
    let len = shape[axis];
    let along = [keyword("axis"), Value::Int(axis as i64)];
    if n < len {
        let mut args = vec![part, Value::Int(0), Value::Int(n as i64)];
        args.extend(along);
        return lower.call("slice", &args);
    }
    if n == len {
        return Ok(part);
    }
    shape[axis] = n - len;
    let zeros = lower.call("zeros", &[ints(&shape)])?;
    let zeros = match crate::lisp::trace::value_dtype(&part) {
        crate::dtype::DType::F32 => lower.call("astype", &[zeros, Value::symbol("f32")])?,
        _ => zeros,
    };
    let mut args = vec![Value::list([part, zeros])];
    args.extend(along);
    lower.call("concat", &args)
}

/// Both parts resized (a zero imaginary part stays `None`).
fn resized_parts(lower: &mut Lower, z: Parts, axis: usize, n: usize) -> EvalResult<Parts> {
    let re = resized(lower, z.re, axis, n)?;
    let im = match z.im {
        Some(im) => Some(resized(lower, im, axis, n)?),
        None => None,
    };
    Ok(Parts { re, im })
}

/// The unnormalized transform of `z` along `axis`, times `factor`.
fn transform(
    lower: &mut Lower,
    z: Parts,
    axis: usize,
    backward: bool,
    factor: f64,
) -> EvalResult<Parts> {
    let traced = crate::lisp::trace::ops::involves_traced(&z.re)
        || z.im
            .as_ref()
            .is_some_and(crate::lisp::trace::ops::involves_traced);
    if !traced {
        return transform_now(z, axis, backward, factor);
    }
    let im = match z.im {
        Some(im) => im,
        None => lower.zeros_like(&z.re)?,
    };
    let packed = lower.call(
        "stack",
        &[Value::list([z.re, im]), keyword("axis"), Value::Int(-1)],
    )?;
    let apply = Apply::new(lower.interp, std::slice::from_ref(&packed));
    let axis =
        u8::try_from(axis).map_err(|_| EvalError::range(format!("axis {axis} is out of range")))?;
    let transformed = apply.table(Op::Fft(Fft { axis, backward }), &[&packed])?;
    let transformed = match factor == 1.0 {
        true => transformed,
        false => lower.call("*", &[transformed, Value::Float(factor)])?,
    };
    // Each part is a slice of the pairs' axis (a view, fused where it is
    // read), without that axis.
    let mut shape = shape_of(&transformed)?;
    shape.pop();
    let part = |lower: &mut Lower, k: i64| {
        let pairs = lower.call(
            "slice",
            &[
                transformed.clone(),
                Value::Int(k),
                Value::Int(k + 1),
                keyword("axis"),
                Value::Int(-1),
            ],
        )?;
        lower.call("reshape", &[pairs, ints(&shape)])
    };
    let re = part(lower, 0)?;
    let im = part(lower, 1)?;
    Ok(Parts { re, im: Some(im) })
}

/// The numbers of a concrete real part, row-major (f32 widened).
fn row_major(part: &Value) -> EvalResult<(Vec<f64>, Vec<usize>, bool)> {
    let single = matches!(part, Value::TensorF32(_));
    let array = part.as_tensor()?;
    let numbers = match array.as_slice() {
        Some(slice) => slice.to_vec(),
        None => array.as_standard_layout().iter().copied().collect(),
    };
    Ok((numbers, array.shape().to_vec(), single))
}

/// `transform` of concrete parts, at once: the parts interleaved into
/// pairs and the result split back, each in one pass (the general path's
/// `stack` and slices of the pairs' axis are strided copies).
fn transform_now(z: Parts, axis: usize, backward: bool, factor: f64) -> EvalResult<Parts> {
    let (re, shape, single_re) = row_major(&z.re)?;
    let (im, single_im) = match &z.im {
        Some(im) => {
            let (im, _, single) = row_major(im)?;
            (Some(im), single)
        }
        None => (None, single_re),
    };
    let mut pairs = Vec::with_capacity(2 * re.len());
    match &im {
        Some(im) => pairs.extend(re.iter().zip(im).flat_map(|(&r, &i)| [r, i])),
        None => pairs.extend(re.iter().flat_map(|&r| [r, 0.0])),
    }
    let mut pair_shape = shape.clone();
    pair_shape.push(2);
    let packed = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&pair_shape), pairs)
        .map_err(|e| EvalError::shape(e.to_string()))?;
    let axis =
        u8::try_from(axis).map_err(|_| EvalError::range(format!("axis {axis} is out of range")))?;
    let op = Fft { axis, backward };
    let out = crate::ir::ops::Definition::cpu(&op, &[packed.view()], &pair_shape)
        .map_err(|e| EvalError::range(e.message))?;
    let out = out.as_standard_layout();
    let flat = out.as_slice().unwrap_or(&[]);
    let (mut re, mut im): (Vec<f64>, Vec<f64>) = (
        Vec::with_capacity(flat.len() / 2),
        Vec::with_capacity(flat.len() / 2),
    );
    for pair in flat.chunks_exact(2) {
        re.push(pair[0] * factor);
        im.push(pair[1] * factor);
    }
    let part = |numbers: Vec<f64>| -> EvalResult<Value> {
        let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), numbers)
            .map_err(|e| EvalError::shape(e.to_string()))?;
        Ok(match single_re && single_im {
            true => Value::TensorF32(std::rc::Rc::new(crate::dtype::narrow(&array))),
            false => Value::tensor(array),
        })
    };
    Ok(Parts {
        re: part(re)?,
        im: Some(part(im)?),
    })
}

fn complex_value(lower: &mut Lower, z: Parts) -> EvalResult<Value> {
    lower.value(z.re, z.im)
}

fn fft_along(interp: &mut Interp, args: &Args, inverse: bool, what: &str) -> EvalResult<Value> {
    let (z, shape) = operand(args, what)?;
    let axis = axis_option(args, shape.len())?;
    let n = length_option(args, shape[axis], what)?;
    let factor = scale(args, n, inverse)?;
    let mut lower = lower(interp);
    let z = resized_parts(&mut lower, z, axis, n)?;
    let z = transform(&mut lower, z, axis, inverse, factor)?;
    complex_value(&mut lower, z)
}

fn fft(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    fft_along(interp, args, false, "fft")
}

fn ifft(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    fft_along(interp, args, true, "ifft")
}

fn rfft(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if matches!(args[0], Value::Complex(_)) {
        return Err(EvalError::type_error(
            "rfft takes real input (use fft for complex input)",
        ));
    }
    let (z, shape) = operand(args, "rfft")?;
    let axis = axis_option(args, shape.len())?;
    let n = length_option(args, shape[axis], "rfft")?;
    let factor = scale(args, n, false)?;
    let mut lower = lower(interp);
    let z = resized_parts(&mut lower, z, axis, n)?;
    let z = transform(&mut lower, z, axis, false, factor)?;
    // The non-negative frequencies: the rest is their conjugate.
    let z = resized_parts(&mut lower, z, axis, n / 2 + 1)?;
    complex_value(&mut lower, z)
}

/// The inverse of `rfft`: a real signal of length `:n` (default
/// `2 (m - 1)` for `m` frequencies) whose spectrum's non-negative half is
/// the operand. The full spectrum is the operand's first `n / 2 + 1`
/// entries (zeros past its end) followed by the conjugates of entries
/// `n - n / 2 - 1 .. 1`; its inverse transform's real part is the result
/// (the imaginary parts of the zero and Nyquist entries, which a real
/// signal cannot have, drop out, as in NumPy).
fn irfft(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (z, shape) = operand(args, "irfft")?;
    let axis = axis_option(args, shape.len())?;
    let m = shape[axis];
    if m == 0 {
        return Err(EvalError::shape(
            "irfft: the transformed axis has no elements",
        ));
    }
    let n = length_option(args, 2 * (m - 1), "irfft")?;
    let factor = scale(args, n, true)?;
    let half = n / 2 + 1;
    let mut lower = lower(interp);
    let z = resized_parts(&mut lower, z, axis, half)?;
    let tail = n - half;
    let full = match tail {
        0 => z,
        _ => {
            let along = [keyword("axis"), Value::Int(axis as i64)];
            let mirror = |lower: &mut Lower, part: &Value, negate: bool| -> EvalResult<Value> {
                let mut args = vec![part.clone(), Value::Int(1), Value::Int(tail as i64 + 1)];
                args.extend(along.iter().cloned());
                let cut = lower.call("slice", &args)?;
                let mut args = vec![cut];
                args.extend(along.iter().cloned());
                let flipped = lower.call("flip", &args)?;
                match negate {
                    true => lower.call("-", &[flipped]),
                    false => Ok(flipped),
                }
            };
            let join = |lower: &mut Lower, a: Value, b: Value| {
                let mut args = vec![Value::list([a, b])];
                args.extend(along.iter().cloned());
                lower.call("concat", &args)
            };
            let re_tail = mirror(&mut lower, &z.re, false)?;
            let re = join(&mut lower, z.re.clone(), re_tail)?;
            let im = match &z.im {
                Some(im) => {
                    let im_tail = mirror(&mut lower, im, true)?;
                    Some(join(&mut lower, im.clone(), im_tail)?)
                }
                None => None,
            };
            Parts { re, im }
        }
    };
    let signal = transform(&mut lower, full, axis, true, factor)?;
    Ok(signal.re)
}

/// The axes of a two-dimensional transform: `:axes` (two axes) or the
/// last two.
fn two_axes(args: &Args, rank: usize, what: &str) -> EvalResult<[usize; 2]> {
    if rank < 2 {
        return Err(EvalError::shape(format!(
            "{what} needs a tensor of rank 2 or more, got rank {rank}"
        )));
    }
    match args.option("axes") {
        None => Ok([rank - 2, rank - 1]),
        Some(list) => match list.list_to_vec()?.as_slice() {
            [a, b] => {
                let a = normalize_axis(a.as_i64()?, rank)?;
                let b = normalize_axis(b.as_i64()?, rank)?;
                match a == b {
                    true => Err(EvalError::shape(format!(
                        "{what}: :axes names axis {a} twice"
                    ))),
                    false => Ok([a, b]),
                }
            }
            _ => Err(EvalError::type_error(format!(
                "{what}: :axes is a list of two axes"
            ))),
        },
    }
}

fn fft2_along(interp: &mut Interp, args: &Args, inverse: bool, what: &str) -> EvalResult<Value> {
    let (mut z, shape) = operand(args, what)?;
    let axes = two_axes(args, shape.len(), what)?;
    let count = shape[axes[0]] * shape[axes[1]];
    if count == 0 {
        return Err(EvalError::shape(format!(
            "{what}: the transformed axes have no elements"
        )));
    }
    let factor = scale(args, count, inverse)?;
    let mut lower = lower(interp);
    for (k, axis) in axes.into_iter().enumerate() {
        let factor = if k == 0 { factor } else { 1.0 };
        z = transform(&mut lower, z, axis, inverse, factor)?;
    }
    complex_value(&mut lower, z)
}

fn fft2(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    fft2_along(interp, args, false, "fft2")
}

fn ifft2(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    fft2_along(interp, args, true, "ifft2")
}

/// A length argument: a positive whole number.
fn count_argument(value: &Value, what: &str) -> EvalResult<usize> {
    match value.as_i64()? {
        n if n >= 1 => Ok(n as usize),
        n => Err(EvalError::range(format!(
            "{what}: the length must be positive, got {n}"
        ))),
    }
}

/// The spacing argument `d` (default 1), a positive number.
fn spacing(args: &Args, what: &str) -> EvalResult<f64> {
    match args.get(1) {
        None => Ok(1.0),
        Some(d) => match d.as_f64()? {
            d if d > 0.0 && d.is_finite() => Ok(d),
            d => Err(EvalError::range(format!(
                "{what}: the spacing must be a positive number, got {d}"
            ))),
        },
    }
}

fn fftfreq(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let n = count_argument(&args[0], "fftfreq")?;
    let d = spacing(args, "fftfreq")?;
    let positive = n.div_ceil(2);
    let frequencies = (0..n).map(|k| match k < positive {
        true => k as f64,
        false => k as f64 - n as f64,
    });
    let values: Vec<f64> = frequencies.map(|k| k / (d * n as f64)).collect();
    Ok(Value::tensor(ndarray::Array1::from(values).into_dyn()))
}

fn rfftfreq(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let n = count_argument(&args[0], "rfftfreq")?;
    let d = spacing(args, "rfftfreq")?;
    let values: Vec<f64> = (0..=n / 2).map(|k| k as f64 / (d * n as f64)).collect();
    Ok(Value::tensor(ndarray::Array1::from(values).into_dyn()))
}

fn shifted(interp: &mut Interp, args: &Args, inverse: bool) -> EvalResult<Value> {
    let shape = shape_of(&args[0])?;
    let axes: Vec<usize> = match args.option("axes") {
        None => (0..shape.len()).collect(),
        Some(Value::Nil | Value::Pair(_)) => args
            .option("axes")
            .map(Value::list_to_vec)
            .transpose()?
            .unwrap_or_default()
            .iter()
            .map(|a| normalize_axis(a.as_i64()?, shape.len()))
            .collect::<EvalResult<_>>()?,
        Some(single) => vec![normalize_axis(single.as_i64()?, shape.len())?],
    };
    let mut lower = lower(interp);
    let mut value = args[0].clone();
    for axis in axes {
        let half = (shape[axis] / 2) as i64;
        let shift = if inverse { -half } else { half };
        value = lower.call(
            "roll",
            &[
                value,
                Value::Int(shift),
                keyword("axis"),
                Value::Int(axis as i64),
            ],
        )?;
    }
    Ok(value)
}

fn fftshift(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    shifted(interp, args, false)
}

fn ifftshift(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    shifted(interp, args, true)
}

#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("fft", "(fft t :n n :axis k :norm 'backward)", "The discrete Fourier transform along axis k (default -1) of a real or complex tensor, NumPy's numpy.fft.fft: y_k = sum_j x_j e^(-2 pi i jk/n), unnormalized ('ortho divides by sqrt n, 'forward by n). :n cuts or pads the axis with zeros first. Differentiable (the reverse rule is the inverse transform, unnormalized).", 1, Some(1), fft), &["n", "axis", "norm"]),
    with_options(builtin("ifft", "(ifft t :n n :axis k :norm 'backward)", "The inverse discrete Fourier transform along axis k (default -1), NumPy's numpy.fft.ifft: divided by n, so that (ifft (fft x)) is x.", 1, Some(1), ifft), &["n", "axis", "norm"]),
    with_options(builtin("rfft", "(rfft t :n n :axis k :norm 'backward)", "The Fourier transform of a real tensor along axis k (default -1): its n/2 + 1 non-negative frequencies (the others are their conjugates), NumPy's numpy.fft.rfft.", 1, Some(1), rfft), &["n", "axis", "norm"]),
    with_options(builtin("irfft", "(irfft t :n n :axis k :norm 'backward)", "The inverse of rfft: the real signal of length n (default 2 (m - 1) for m frequencies) whose non-negative frequencies are t, NumPy's numpy.fft.irfft. Give :n for odd lengths.", 1, Some(1), irfft), &["n", "axis", "norm"]),
    with_options(builtin("fft2", "(fft2 t :axes (a b) :norm 'backward)", "The two-dimensional discrete Fourier transform over the last two axes (or :axes), NumPy's numpy.fft.fft2.", 1, Some(1), fft2), &["axes", "norm"]),
    with_options(builtin("ifft2", "(ifft2 t :axes (a b) :norm 'backward)", "The inverse two-dimensional discrete Fourier transform over the last two axes (or :axes), NumPy's numpy.fft.ifft2.", 1, Some(1), ifft2), &["axes", "norm"]),
    builtin("fftfreq", "(fftfreq n d)", "The frequencies of fft's outputs for n samples spaced d apart (default 1): [0 1 ... -2 -1] / (d n), NumPy's numpy.fft.fftfreq.", 1, Some(2), fftfreq),
    builtin("rfftfreq", "(rfftfreq n d)", "The frequencies of rfft's outputs for n samples spaced d apart: [0 1 ... n/2] / (d n), NumPy's numpy.fft.rfftfreq.", 1, Some(2), rfftfreq),
    with_options(builtin("fftshift", "(fftshift t :axes axes)", "t rolled so that the zero frequency is in the middle of each axis (all axes, or :axes), NumPy's numpy.fft.fftshift.", 1, Some(1), fftshift), &["axes"]),
    with_options(builtin("ifftshift", "(ifftshift t :axes axes)", "The inverse of fftshift.", 1, Some(1), ifftshift), &["axes"]),
];

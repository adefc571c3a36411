//! Complex numbers made and taken apart: `complex`, `real`, `imag`,
//! `conj`, `angle`, `complex?`, and `vdot`. These take complex values
//! themselves; the other numeric built-ins take them through
//! `lisp::complex`.

use super::builtin;
use crate::lisp::complex::{Lower, Parts, is_complex};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;

fn lower(interp: &mut Interp) -> Lower<'_> {
    let span = interp.call_span;
    Lower { interp, span }
}

/// A real argument, or an error naming its position.
fn real_argument<'a>(args: &'a Args, k: usize, what: &str) -> EvalResult<&'a Value> {
    let value = &args[k];
    match value {
        Value::Int(_)
        | Value::Float(_)
        | Value::Tensor(_)
        | Value::TensorF32(_)
        | Value::Traced(_) => Ok(value),
        other => Err(EvalError::type_error(format!(
            "the {what} must be a real number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn complex(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let re = real_argument(args, 0, "real part")?.clone();
    let im = match args.get(1) {
        Some(_) => real_argument(args, 1, "imaginary part")?.clone(),
        None => Value::Float(0.0),
    };
    // Parts broadcast to one shape, of one type (f32 only when neither
    // is f64).
    lower(interp).value(re, Some(im))
}

fn real(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Complex(z) => Ok(z.re.clone()),
        _ => real_argument(args, 0, "argument").cloned(),
    }
}

fn imag(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Complex(z) => Ok(z.im.clone()),
        _ => {
            let x = real_argument(args, 0, "argument")?.clone();
            lower(interp).zeros_like(&x)
        }
    }
}

fn conj(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Complex(z) => {
            let im = lower(interp).call("-", std::slice::from_ref(&z.im))?;
            Ok(Value::complex(z.re.clone(), im))
        }
        _ => real_argument(args, 0, "argument").cloned(),
    }
}

fn angle(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let z = match &args[0] {
        Value::Complex(_) => Parts::of(&args[0]),
        _ => Parts::of(real_argument(args, 0, "argument")?),
    };
    let mut lower = lower(interp);
    let im = match z.im {
        Some(im) => im,
        None => lower.zeros_like(&z.re)?,
    };
    lower.call("atan2", &[im, z.re])
}

fn is_complex_value(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Bool(is_complex(&args[0])))
}

/// NumPy's `vdot`: both operands flattened, the first conjugated.
fn vdot(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut lower = lower(interp);
    let a = lower.call("flatten", &[args[0].clone()])?;
    let b = lower.call("flatten", &[args[1].clone()])?;
    let a = match &a {
        Value::Complex(z) => {
            let im = lower.call("-", std::slice::from_ref(&z.im))?;
            Value::complex(z.re.clone(), im)
        }
        _ => a,
    };
    lower.call("dot", &[a, b])
}

#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("complex", "(complex re im)", "The complex number or tensor re + i im (parts broadcast to one shape; im defaults to 0). Written #c(1.0 2.0) for numbers, and printed so.", 1, Some(2), complex),
    builtin("real", "(real z)", "The real part of a complex number or tensor (a real value is its own real part).", 1, Some(1), real),
    builtin("imag", "(imag z)", "The imaginary part of a complex number or tensor (zeros for a real value).", 1, Some(1), imag),
    builtin("conj", "(conj z)", "The complex conjugate re - i im (a real value is its own conjugate).", 1, Some(1), conj),
    builtin("angle", "(angle z)", "The argument of z in radians, in (-pi, pi]: (atan2 (imag z) (real z)).", 1, Some(1), angle),
    builtin("complex?", "(complex? v)", "True when v is a complex number or tensor.", 1, Some(1), is_complex_value),
    builtin("vdot", "(vdot a b)", "NumPy's vdot: the sum of (conj a) * b over both operands flattened (dot does not conjugate).", 2, Some(2), vdot),
];

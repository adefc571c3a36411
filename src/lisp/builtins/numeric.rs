//! Arithmetic and elementwise mathematics on numbers and tensors: the
//! operators, and the functions whose built-ins are not plain maps
//! (`abs`, `sign` and `relu` keep integers, `heaviside` has a default, ...);
//! the plain ones (`exp`, `sin`, ...) come from the elementwise table
//! (`elementwise.rs`).
//!
//! Integers stay integers under `+ - *` (overflow is an error, not a wrap);
//! any float makes the result a float; any tensor makes it a tensor, with
//! NumPy broadcasting. `/` always gives a float, and dividing by the integer
//! 0 is an error while dividing by 0.0 follows IEEE (inf, nan).

use super::builtin;
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{map, to_value, zip_map};
use crate::lisp::value::Value;
use crate::scalar;
use ndarray::ArrayD;
use std::rc::Rc;

/// A numeric argument.
pub(crate) enum Operand {
    Int(i64),
    Float(f64),
    Tensor(Rc<ArrayD<f64>>),
}

pub(crate) fn operand(value: &Value) -> EvalResult<Operand> {
    match value {
        Value::Int(n) => Ok(Operand::Int(*n)),
        Value::Float(x) => Ok(Operand::Float(*x)),
        Value::Tensor(t) => Ok(Operand::Tensor(Rc::clone(t))),
        other => Err(EvalError::type_error(format!(
            "expected a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

impl Operand {
    fn to_f64(&self) -> Option<f64> {
        match self {
            Operand::Int(n) => Some(*n as f64),
            Operand::Float(x) => Some(*x),
            Operand::Tensor(_) => None,
        }
    }

    fn to_tensor(&self) -> Rc<ArrayD<f64>> {
        match self {
            Operand::Tensor(t) => Rc::clone(t),
            scalar => Rc::new(ArrayD::from_elem(
                ndarray::IxDyn(&[]),
                scalar.to_f64().unwrap_or(f64::NAN),
            )),
        }
    }
}

/// A binary elementwise operation: integer rule (None = overflow), float rule.
pub(crate) fn binary(
    a: &Value,
    b: &Value,
    int_op: Option<fn(i64, i64) -> Option<i64>>,
    float_op: fn(f64, f64) -> f64,
) -> EvalResult<Value> {
    let (a, b) = (operand(a)?, operand(b)?);
    match (&a, &b, int_op) {
        (Operand::Int(x), Operand::Int(y), Some(int_op)) => {
            int_op(*x, *y).map(Value::Int).ok_or_else(|| {
                EvalError::new(
                    EvalErrorKind::Range,
                    format!("integer overflow with {x} and {y} (use floats for large values)"),
                )
            })
        }
        (Operand::Tensor(_), _, _) | (_, Operand::Tensor(_), _) => {
            zip_map(&a.to_tensor(), &b.to_tensor(), float_op).map(to_value)
        }
        _ => Ok(Value::Float(float_op(
            a.to_f64().unwrap_or(f64::NAN),
            b.to_f64().unwrap_or(f64::NAN),
        ))),
    }
}

/// A unary operation giving floats (integers convert).
pub(crate) fn float_unary(value: &Value, f: fn(f64) -> f64) -> EvalResult<Value> {
    match operand(value)? {
        Operand::Tensor(t) => Ok(Value::tensor(map(&t, f)?)),
        scalar => Ok(Value::Float(f(scalar.to_f64().unwrap_or(f64::NAN)))),
    }
}

/// A unary operation that keeps integers integers.
fn keeping_unary(
    value: &Value,
    int_op: fn(i64) -> Option<i64>,
    f: fn(f64) -> f64,
) -> EvalResult<Value> {
    match operand(value)? {
        Operand::Int(n) => int_op(n)
            .map(Value::Int)
            .ok_or_else(|| EvalError::range(format!("integer overflow with {n}"))),
        Operand::Float(x) => Ok(Value::Float(f(x))),
        Operand::Tensor(t) => Ok(Value::tensor(map(&t, f)?)),
    }
}

fn add(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let Some((first, rest)) = args.split_first() else {
        return Ok(Value::Int(0));
    };
    // The sum starts at the first argument, not at 0: 0 + -0.0 is 0.0,
    // and IEEE (and NumPy) give -0.0 + -0.0 = -0.0.
    let start = match first {
        Value::Int(_) | Value::Float(_) | Value::Tensor(_) => first.clone(),
        other => binary(&Value::Int(0), other, Some(i64::checked_add), |a, b| a + b)?,
    };
    rest.iter().try_fold(start, |acc, x| {
        binary(&acc, x, Some(i64::checked_add), |a, b| a + b)
    })
}

fn mul(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    args.iter().try_fold(Value::Int(1), |acc, x| {
        binary(&acc, x, Some(i64::checked_mul), |a, b| a * b)
    })
}

fn sub(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[..] {
        [only] => keeping_unary(only, i64::checked_neg, |x| -x),
        [first, rest @ ..] => rest.iter().try_fold(first.clone(), |acc, x| {
            binary(&acc, x, Some(i64::checked_sub), |a, b| a - b)
        }),
        [] => Ok(Value::Int(0)),
    }
}

fn div(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let divide = |a: &Value, b: &Value| {
        if matches!(b, Value::Int(0)) {
            return Err(EvalError::new(
                EvalErrorKind::DivisionByZero,
                "division by the integer 0",
            ));
        }
        binary(a, b, None, |x, y| x / y)
    };
    match &args[..] {
        [only] => divide(&Value::Float(1.0), only),
        [first, rest @ ..] => rest
            .iter()
            .try_fold(first.clone(), |acc, x| divide(&acc, x)),
        [] => Ok(Value::Float(1.0)),
    }
}

fn integers(name: &str, a: &Value, b: &Value) -> EvalResult<(i64, i64)> {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return Err(EvalError::type_error(format!(
            "{name} takes integers, got {} and {}",
            a.type_name(),
            b.type_name()
        )));
    };
    if *y == 0 {
        return Err(EvalError::new(
            EvalErrorKind::DivisionByZero,
            format!("{name} by the integer 0"),
        ));
    }
    Ok((*x, *y))
}

fn quotient(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (x, y) = integers("quotient", &args[0], &args[1])?;
    x.checked_div(y)
        .map(Value::Int)
        .ok_or_else(|| EvalError::range(format!("integer overflow in (quotient {x} {y})")))
}

fn floor_mod_f64(x: f64, y: f64) -> f64 {
    x - y * (x / y).floor()
}

fn remainder(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let (Value::Int(_), Value::Int(_)) = (&args[0], &args[1]) {
        let (x, y) = integers("remainder", &args[0], &args[1])?;
        return Ok(Value::Int(x.wrapping_rem(y)));
    }
    binary(&args[0], &args[1], None, |x, y| x % y)
}

fn modulo(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let (Value::Int(_), Value::Int(_)) = (&args[0], &args[1]) {
        let (x, y) = integers("mod", &args[0], &args[1])?;
        let r = x.wrapping_rem(y);
        return Ok(Value::Int(if r != 0 && ((r < 0) != (y < 0)) {
            r + y
        } else {
            r
        }));
    }
    binary(&args[0], &args[1], None, floor_mod_f64)
}

fn pow(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let (Value::Int(base), Value::Int(exponent)) = (&args[0], &args[1])
        && *exponent >= 0
    {
        return u32::try_from(*exponent)
            .ok()
            .and_then(|e| base.checked_pow(e))
            .map(Value::Int)
            .ok_or_else(|| {
                EvalError::range(format!(
                    "integer overflow in (pow {base} {exponent}) (use a float base)"
                ))
            });
    }
    binary(&args[0], &args[1], None, scalar::pow)
}

fn clamp(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let lower = binary(
        &args[0],
        &args[1],
        Some(|x, lo| Some(x.max(lo))),
        scalar::nan_max,
    )?;
    binary(
        &lower,
        &args[2],
        Some(|x, hi| Some(x.min(hi))),
        scalar::nan_min,
    )
}

fn to_int(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Int(n) => Ok(Value::Int(*n)),
        Value::Float(x) if x.is_finite() && x.abs() < 9.2e18 => Ok(Value::Int(x.trunc() as i64)),
        Value::Float(x) => Err(EvalError::range(format!(
            "cannot convert {x} to an integer"
        ))),
        Value::Str(s) => s
            .trim()
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| EvalError::type_error(format!("cannot convert {s:?} to an integer"))),
        other => Err(EvalError::type_error(format!(
            "cannot convert {} to an integer",
            other.type_name()
        ))),
    }
}

fn to_float(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Tensor(t) => Ok(Value::Tensor(Rc::clone(t))),
        other => other.as_f64().map(Value::Float),
    }
}

fn log2(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    float_unary(&args[0], f64::log2)
}

fn log10(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    float_unary(&args[0], f64::log10)
}

fn neg(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], i64::checked_neg, |x| -x)
}

fn abs(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], i64::checked_abs, f64::abs)
}

fn heaviside(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let at_zero = args.get(1).cloned().unwrap_or(Value::Float(0.5));
    binary(&args[0], &at_zero, None, scalar::heaviside)
}

fn sign(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], |n| Some(n.signum()), scalar::sign)
}

fn relu(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], |n| Some(n.max(0)), scalar::relu)
}

fn floor(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], Some, f64::floor)
}

fn ceil(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], Some, f64::ceil)
}

fn round(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    keeping_unary(&args[0], Some, f64::round_ties_even)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("+", "(+ x...)", "Sum of the arguments (0 with none). Integers stay integers; tensors broadcast.", 0, None, add),
    builtin("-", "(- x y...)", "x minus each y; with one argument, its negation.", 1, None, sub),
    builtin("*", "(* x...)", "Product of the arguments (1 with none); elementwise on tensors.", 0, None, mul),
    builtin("/", "(/ x y...)", "x divided by each y, always a float: (/ 1 2) is 0.5. Dividing by the integer 0 is an error; by 0.0 gives inf or nan. With one argument, 1/x.", 1, None, div),
    builtin("pow", "(pow x y)", "x to the power y; an integer for integer x and non-negative integer y.", 2, Some(2), pow),
    builtin("neg", "(neg x)", "The negation of x.", 1, Some(1), neg),
    builtin("abs", "(abs x)", "Absolute value (elementwise on tensors).", 1, Some(1), abs),
    builtin("sign", "(sign x)", "-1, 0 or 1 by the sign of x (NaN stays NaN).", 1, Some(1), sign),
    builtin("heaviside", "(heaviside x [at-zero])", "The step function: 0 for x < 0, 1 for x > 0, at-zero (default 0.5) at 0, elementwise.", 1, Some(2), heaviside),
    builtin("log2", "(log2 x)", "Base-2 logarithm.", 1, Some(1), log2),
    builtin("log10", "(log10 x)", "Base-10 logarithm.", 1, Some(1), log10),
    builtin("relu", "(relu x)", "max(x, 0), elementwise: the rectified linear unit.", 1, Some(1), relu),
    builtin("clamp", "(clamp x lo hi)", "x limited to the interval [lo, hi] (elementwise, broadcasting).", 3, Some(3), clamp),
    builtin("floor", "(floor x)", "Largest integral value not above x (a float for float x).", 1, Some(1), floor),
    builtin("ceil", "(ceil x)", "Smallest integral value not below x (a float for float x).", 1, Some(1), ceil),
    builtin("round", "(round x)", "Nearest integral value, ties to even (as NumPy).", 1, Some(1), round),
    builtin("quotient", "(quotient n d)", "Integer division truncated toward zero; d = 0 is an error.", 2, Some(2), quotient),
    builtin("remainder", "(remainder n d)", "Remainder with the sign of n; for integers d = 0 is an error.", 2, Some(2), remainder),
    builtin("mod", "(mod n d)", "Remainder with the sign of d (floor modulo); for integers d = 0 is an error.", 2, Some(2), modulo),
    builtin("int", "(int x)", "x as an integer, truncating toward zero (also parses strings).", 1, Some(1), to_int),
    builtin("float", "(float x)", "x as a float.", 1, Some(1), to_float),
];

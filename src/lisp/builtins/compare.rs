//! Comparison, logic, equality and type predicates.
//!
//! Numeric comparisons chain over several numbers (`(< a b c)`); on tensors
//! they compare two arguments elementwise and give a 0.0/1.0 mask.

use super::builtin;
use super::numeric::{Operand, operand};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, Procedure};
use crate::lisp::tensor::{to_value, zip_map};
use crate::lisp::value::Value;
use std::rc::Rc;

/// Compares numbers pairwise along the arguments, or two tensors elementwise.
fn compare(args: &Args, holds: fn(f64, f64) -> bool) -> EvalResult<Value> {
    let has_tensor = args.iter().any(|a| matches!(a, Value::Tensor(_)));
    if has_tensor {
        let [a, b] = &args[..] else {
            return Err(EvalError::type_error(
                "comparing tensors takes exactly two arguments",
            ));
        };
        let (a, b) = (a.as_tensor()?, b.as_tensor()?);
        return zip_map(&a, &b, move |x, y| if holds(x, y) { 1.0 } else { 0.0 }).map(to_value);
    }
    for pair in args.windows(2) {
        let ordered = match (operand(&pair[0])?, operand(&pair[1])?) {
            (Operand::Int(x), Operand::Int(y)) => holds_int(x, y, holds),
            (x, y) => holds(as_float(&x), as_float(&y)),
        };
        if !ordered {
            return Ok(Value::Bool(false));
        }
    }
    if let [only] = &args[..] {
        operand(only)?;
    }
    Ok(Value::Bool(true))
}

/// Integer comparison without the precision loss of going through f64.
fn holds_int(x: i64, y: i64, holds: fn(f64, f64) -> bool) -> bool {
    let ordering = x.cmp(&y) as i8 as f64;
    holds(ordering, 0.0)
}

fn as_float(operand: &Operand) -> f64 {
    match operand {
        Operand::Int(n) => *n as f64,
        Operand::Float(x) => *x,
        Operand::Tensor(_) => f64::NAN,
    }
}

fn num_eq(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let numeric = args
        .iter()
        .all(|a| matches!(a, Value::Int(_) | Value::Float(_) | Value::Tensor(_)));
    if numeric {
        compare(args, |x, y| x == y)
    } else {
        Ok(Value::Bool(args.windows(2).all(|w| equal(&w[0], &w[1]))))
    }
}

fn num_ne(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    match num_eq(interp, args)? {
        Value::Bool(b) => Ok(Value::Bool(!b)),
        Value::Tensor(mask) => Ok(Value::tensor(mask.mapv(|x| 1.0 - x))),
        other => Ok(other),
    }
}

fn lt(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    compare(args, |x, y| x < y)
}

fn gt(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    compare(args, |x, y| x > y)
}

fn le(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    compare(args, |x, y| x <= y)
}

fn ge(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    compare(args, |x, y| x >= y)
}

fn not(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Bool(!args[0].is_truthy()))
}

/// Inside a traced function, comparisons look at the values (control flow
/// follows them): the same node is the same value, others compare as the
/// numbers they hold.
fn traced_comparison(a: &Value, b: &Value, compare: fn(&Value, &Value) -> bool) -> Option<bool> {
    match (a, b) {
        (Value::Traced(x), Value::Traced(y)) if Rc::ptr_eq(&x.trace, &y.trace) && x.id == y.id => {
            Some(true)
        }
        // A value that cannot be computed equals nothing.
        (Value::Traced(x), other) => Some(x.concrete_value().is_ok_and(|v| compare(&v, other))),
        (other, Value::Traced(y)) => Some(y.concrete_value().is_ok_and(|v| compare(other, &v))),
        _ => None,
    }
}

/// Identity: the same number, symbol, boolean or keyword, or the very same
/// object for strings, lists, tensors and procedures.
pub fn eq(a: &Value, b: &Value) -> bool {
    if let Some(same) = traced_comparison(a, b, eq) {
        return same;
    }
    match (a, b) {
        (Value::Nil, Value::Nil) | (Value::Void, Value::Void) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Symbol(x), Value::Symbol(y)) | (Value::Keyword(x), Value::Keyword(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => Rc::ptr_eq(x, y),
        (Value::Pair(x), Value::Pair(y)) => Rc::ptr_eq(x, y),
        (Value::Tensor(x), Value::Tensor(y)) => Rc::ptr_eq(x, y),
        (Value::TensorF32(x), Value::TensorF32(y)) => Rc::ptr_eq(x, y),
        (Value::Procedure(x), Value::Procedure(y)) => Rc::ptr_eq(x, y) || same_closure(x, y),
        (Value::Macro(x), Value::Macro(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// Two closures of the same code over the same frame are the same function
/// (a local function is rebuilt each time its slot is read).
fn same_closure(x: &Procedure, y: &Procedure) -> bool {
    match (x, y) {
        (Procedure::Closure(a), Procedure::Closure(b)) => {
            Rc::ptr_eq(&a.def, &b.def)
                && match (&a.env, &b.env) {
                    (Some(e), Some(f)) => Rc::ptr_eq(e, f),
                    (None, None) => true,
                    _ => false,
                }
        }
        _ => false,
    }
}

/// Structural equality: same type and same contents (`1` and `1.0` differ;
/// tensors need equal shapes and elements).
pub fn equal(a: &Value, b: &Value) -> bool {
    if let Some(same) = traced_comparison(a, b, equal) {
        return same;
    }
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Complex(x), Value::Complex(y)) => equal(&x.re, &y.re) && equal(&x.im, &y.im),
        (Value::Tensor(x), Value::Tensor(y)) => {
            x.shape() == y.shape()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        }
        // Tensors of one type are equal when their elements are.
        (Value::TensorF32(x), Value::TensorF32(y)) => {
            x.shape() == y.shape()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        }
        (Value::Pair(_), Value::Pair(_)) => {
            let (mut left, mut right) = (a, b);
            loop {
                match (left, right) {
                    (Value::Pair(p), Value::Pair(q)) => {
                        if Rc::ptr_eq(p, q) {
                            return true;
                        }
                        if !equal(&p.car, &q.car) {
                            return false;
                        }
                        left = &p.cdr;
                        right = &q.cdr;
                    }
                    (x, y) => return equal(x, y),
                }
            }
        }
        _ => eq(a, b),
    })
}

fn is_eq(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Bool(eq(&args[0], &args[1])))
}

fn is_equal(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Bool(equal(&args[0], &args[1])))
}

/// Applies an integer test, or a float test, to a number.
fn number_test(
    value: &Value,
    int_test: fn(i64) -> bool,
    float_test: fn(f64) -> bool,
) -> EvalResult<Value> {
    match value {
        Value::Int(n) => Ok(Value::Bool(int_test(*n))),
        Value::Float(x) => Ok(Value::Bool(float_test(*x))),
        other => Err(EvalError::type_error(format!(
            "expected a number, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn is_zero(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    number_test(&args[0], |n| n == 0, |x| x == 0.0)
}

fn is_positive(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    number_test(&args[0], |n| n > 0, |x| x > 0.0)
}

fn is_negative(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    number_test(&args[0], |n| n < 0, |x| x < 0.0)
}

fn is_even(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let n = args[0].as_i64()?;
    Ok(Value::Bool(n % 2 == 0))
}

fn is_odd(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let n = args[0].as_i64()?;
    Ok(Value::Bool(n % 2 != 0))
}

macro_rules! predicates {
    ($($fname:ident => $test:expr;)*) => {
        $(fn $fname(_: &mut Interp, args: &Args) -> EvalResult<Value> {
            let test: fn(&Value) -> bool = $test;
            Ok(Value::Bool(test(&args[0])))
        })*
    };
}

predicates! {
    is_list => |v| v.is_list();
    is_pair => |v| matches!(v, Value::Pair(_));
    is_null => |v| v.is_nil();
    is_number => |v| matches!(v, Value::Int(_) | Value::Float(_));
    is_integer => |v| matches!(v, Value::Int(_));
    is_float => |v| matches!(v, Value::Float(_));
    is_boolean => |v| matches!(v, Value::Bool(_));
    is_symbol => |v| matches!(v, Value::Symbol(_));
    is_keyword => |v| matches!(v, Value::Keyword(_));
    is_string => |v| matches!(v, Value::Str(_));
    is_procedure => |v| matches!(v, Value::Procedure(_));
    is_tensor => |v| matches!(v, Value::Tensor(_) | Value::TensorF32(_));
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("=", "(= x y...)", "Numeric equality along the arguments (1 = 1.0); elementwise 0/1 mask on two tensors; structural equality for other values.", 1, None, num_eq),
    builtin("/=", "(/= x y)", "The negation of =.", 1, None, num_ne),
    builtin("<", "(< x y...)", "True when the numbers increase strictly; elementwise 0/1 mask on two tensors.", 1, None, lt),
    builtin(">", "(> x y...)", "True when the numbers decrease strictly; elementwise 0/1 mask on two tensors.", 1, None, gt),
    builtin("<=", "(<= x y...)", "True when the numbers never decrease; elementwise 0/1 mask on two tensors.", 1, None, le),
    builtin(">=", "(>= x y...)", "True when the numbers never increase; elementwise 0/1 mask on two tensors.", 1, None, ge),
    builtin("not", "(not x)", "#t for #f and (), #f for anything else.", 1, Some(1), not),
    builtin("eq?", "(eq? a b)", "Identity: equal numbers, symbols and booleans, or the very same list, string or tensor.", 2, Some(2), is_eq),
    builtin("equal?", "(equal? a b)", "Structural equality of numbers (of the same type), strings, lists and tensors.", 2, Some(2), is_equal),
    builtin("zero?", "(zero? x)", "True when the number x is 0.", 1, Some(1), is_zero),
    builtin("positive?", "(positive? x)", "True when the number x is above 0.", 1, Some(1), is_positive),
    builtin("negative?", "(negative? x)", "True when the number x is below 0.", 1, Some(1), is_negative),
    builtin("even?", "(even? n)", "True when the integer n is even.", 1, Some(1), is_even),
    builtin("odd?", "(odd? n)", "True when the integer n is odd.", 1, Some(1), is_odd),
    builtin("list?", "(list? x)", "True for proper lists, () included.", 1, Some(1), is_list),
    builtin("pair?", "(pair? x)", "True for a cons cell (a non-empty list).", 1, Some(1), is_pair),
    builtin("null?", "(null? x)", "True for the empty list ().", 1, Some(1), is_null),
    builtin("number?", "(number? x)", "True for integers and floats.", 1, Some(1), is_number),
    builtin("integer?", "(integer? x)", "True for integers.", 1, Some(1), is_integer),
    builtin("float?", "(float? x)", "True for floats.", 1, Some(1), is_float),
    builtin("boolean?", "(boolean? x)", "True for #t and #f.", 1, Some(1), is_boolean),
    builtin("symbol?", "(symbol? x)", "True for symbols.", 1, Some(1), is_symbol),
    builtin("keyword?", "(keyword? x)", "True for keywords such as :axis.", 1, Some(1), is_keyword),
    builtin("string?", "(string? x)", "True for strings.", 1, Some(1), is_string),
    builtin("procedure?", "(procedure? x)", "True for functions: lambdas and built-ins.", 1, Some(1), is_procedure),
    builtin("tensor?", "(tensor? x)", "True for tensors.", 1, Some(1), is_tensor),
];

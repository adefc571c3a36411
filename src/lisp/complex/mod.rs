//! Complex numbers and tensors at the Lisp level.
//!
//! A complex value is a pair of real values of one shape
//! (`Value::Complex`): numbers, f64 or f32 tensors, or traced values
//! (docs/design.md, decision 18). A numeric built-in called on one is
//! lowered here to the same built-ins on the parts (`lowering.rs`): `+`
//! adds the parts, `*` is four products and two sums, `exp` is the
//! elementwise table's formula over the real and imaginary parts
//! (`formula.rs`). The parts being real values of the engine, a complex
//! computation is recorded, differentiated, compiled, batched and looped
//! exactly as a real one: reverse mode gives `df/dx` and `df/dy` of each
//! part, from which `grad` takes JAX's convention (`autodiff`).
//!
//! A numeric built-in that has no complex rule refuses complex operands
//! with an error naming it; built-ins over lists, text and procedures see
//! complex values as values.

mod formula;
mod linalg;
mod lowering;

use super::error::{EvalError, EvalResult};
use super::interp::Interp;
use super::procedure::Builtin;
use super::value::Value;
use crate::dtype::DType;
use crate::reader::Span;
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

pub(crate) use lowering::handles;

/// A complex operand: its real part and its imaginary part, `None` when
/// it is known to be zero (a real operand), so that mixed operations do
/// no work on zeros.
#[derive(Clone)]
pub(crate) struct Parts {
    pub re: Value,
    pub im: Option<Value>,
}

impl Parts {
    /// The parts of a complex value, or of a real one (imaginary part zero).
    pub fn of(value: &Value) -> Parts {
        match value {
            Value::Complex(z) => Parts {
                re: z.re.clone(),
                im: Some(z.im.clone()),
            },
            other => Parts {
                re: other.clone(),
                im: None,
            },
        }
    }
}

/// Whether `value` is complex.
pub fn is_complex(value: &Value) -> bool {
    matches!(value, Value::Complex(_))
}

/// Whether a call of `name` on `args` involves complex values: an
/// argument, or for the built-ins that take a list of tensors (`concat`,
/// `stack`, `tensor`), an element of that list. Other built-ins do not
/// look into lists: a list holding a complex number is not a tensor to
/// them, and every call would pay for the look.
pub(crate) fn involves(name: &str, args: &[Value]) -> bool {
    args.iter().any(|arg| match arg {
        Value::Complex(_) => true,
        Value::Pair(_) if takes_tensor_lists(name) => holds_complex(arg),
        _ => false,
    })
}

/// The built-ins whose list argument holds the tensors they join.
fn takes_tensor_lists(name: &str) -> bool {
    matches!(name, "concat" | "stack" | "tensor")
}

/// The shape of a real number, tensor or traced value.
pub(crate) fn shape_of(value: &Value) -> EvalResult<Vec<usize>> {
    match value {
        Value::Int(_) | Value::Float(_) => Ok(Vec::new()),
        Value::Tensor(t) => Ok(t.shape().to_vec()),
        Value::TensorF32(t) => Ok(t.shape().to_vec()),
        Value::Traced(t) => Ok(t.shape.to_vec()),
        Value::Complex(z) => shape_of(&z.re),
        other => Err(EvalError::type_error(format!(
            "expected a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// The type of a part: numbers are weak (they take the other part's).
fn part_type(part: &Value) -> DType {
    super::trace::value_dtype(part)
}

/// The built-in named `name`.
pub(crate) fn builtin_named(name: &str) -> Option<&'static Builtin> {
    static BY_NAME: OnceLock<FxHashMap<&'static str, &'static Builtin>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            super::builtins::TABLES
                .iter()
                .flat_map(|table| table.iter())
                .map(|builtin| (builtin.name, builtin))
                .collect()
        })
        .get(name)
        .copied()
}

/// Calls built-ins on real parts for one complex call.
pub(crate) struct Lower<'a> {
    pub interp: &'a mut Interp,
    pub span: Span,
}

impl Lower<'_> {
    /// `(name args...)`, the built-in called as from Lisp at this call's
    /// place (keyword options as `Value::Keyword` then the value).
    pub fn call(&mut self, name: &str, args: &[Value]) -> EvalResult<Value> {
        let builtin = builtin_named(name)
            .ok_or_else(|| EvalError::type_error(format!("no built-in named {name}")))?;
        self.interp.call_builtin(builtin, args, self.span)
    }

    /// `a + b`, either possibly zero (`None`).
    pub fn add(&mut self, a: Option<Value>, b: Option<Value>) -> EvalResult<Option<Value>> {
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(self.call("+", &[a, b])?),
            (a, None) => a,
            (None, b) => b,
        })
    }

    /// `a - b`, either possibly zero.
    pub fn sub(&mut self, a: Option<Value>, b: Option<Value>) -> EvalResult<Option<Value>> {
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(self.call("-", &[a, b])?),
            (a, None) => a,
            (None, Some(b)) => Some(self.call("-", &[b])?),
        })
    }

    /// `a * b`, either possibly zero.
    pub fn mul(&mut self, a: Option<&Value>, b: Option<&Value>) -> EvalResult<Option<Value>> {
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(self.call("*", &[a.clone(), b.clone()])?),
            _ => None,
        })
    }

    /// The zero of `like`'s shape (a number for a number), as a part.
    pub fn zeros_like(&mut self, like: &Value) -> EvalResult<Value> {
        let shape = shape_of(like)?;
        match shape.is_empty() {
            true => Ok(Value::Float(0.0)),
            false => {
                let dims = Value::list(shape.iter().map(|&d| Value::Int(d as i64)));
                let zeros = self.call("zeros", &[dims])?;
                match super::trace::value_dtype(like) {
                    crate::dtype::DType::F32 => self.call("astype", &[zeros, Value::symbol("f32")]),
                    _ => Ok(zeros),
                }
            }
        }
    }

    /// The complex value of `parts` (a zero imaginary part made), its
    /// parts brought to one shape and one type: a part computed without
    /// the other operand's (`z + 1`'s imaginary part) may have neither.
    pub fn value(&mut self, re: Value, im: Option<Value>) -> EvalResult<Value> {
        let im = match im {
            Some(im) => im,
            None => self.zeros_like(&re)?,
        };
        let (re_shape, im_shape) = (shape_of(&re)?, shape_of(&im)?);
        let shape = crate::lisp::tensor::broadcast_shape(&re_shape, &im_shape)?;
        let dtype = part_type(&re).promote(part_type(&im));
        let re = self.fitted(re, &re_shape, &shape, dtype)?;
        let im = self.fitted(im, &im_shape, &shape, dtype)?;
        Ok(Value::complex(re, im))
    }

    /// `part` broadcast to `shape` and of type `dtype` (f32 or f64 for
    /// tensors; numbers stay numbers).
    fn fitted(
        &mut self,
        part: Value,
        part_shape: &[usize],
        shape: &[usize],
        dtype: DType,
    ) -> EvalResult<Value> {
        let part = match part {
            Value::Int(n) => Value::Float(n as f64),
            other => other,
        };
        let part = match part_shape == shape {
            true => part,
            false => {
                let dims = Value::list(shape.iter().map(|&d| Value::Int(d as i64)));
                self.call("broadcast-to", &[part, dims])?
            }
        };
        match (dtype, super::trace::value_dtype(&part), shape.is_empty()) {
            (DType::F64, DType::F32, _) => self.call("astype", &[part, Value::symbol("f64")]),
            (DType::F32, DType::F64 | DType::Weak, false) => {
                self.call("astype", &[part, Value::symbol("f32")])
            }
            _ => Ok(part),
        }
    }
}

/// Calls `builtin` on `args`, some of them complex: its complex rule, or
/// an error when it has none. `None` when the built-in takes any value
/// (lists, printing) and the call goes on as usual.
pub(crate) fn call(
    interp: &mut Interp,
    builtin: &Builtin,
    args: &[Value],
    span: Span,
) -> Option<EvalResult<Value>> {
    let mut lower = Lower { interp, span };
    lowering::call(&mut lower, builtin, args)
}

/// A bracket form with complex elements: the real parts stacked, the
/// imaginary parts stacked.
pub(crate) fn tensor_literal(
    interp: &mut Interp,
    values: &[Value],
    span: Span,
) -> EvalResult<Value> {
    let mut lower = Lower { interp, span };
    let mut re = Vec::with_capacity(values.len());
    let mut im = Vec::with_capacity(values.len());
    for value in values {
        let parts = Parts::of(value);
        im.push(match parts.im {
            Some(im) => im,
            None => lower.zeros_like(&parts.re).map_err(|e| e.at(span))?,
        });
        re.push(parts.re);
    }
    let re = lower.interp.tensor_literal(&re, span)?;
    let im = lower.interp.tensor_literal(&im, span)?;
    Ok(Value::complex(re, im))
}

/// `value` with every complex value in it (through lists) conjugated:
/// JAX's convention for cotangents of complex values. Reverse mode on
/// the pairs gives `df/dx + i df/dy` for an input `x + iy`; `grad` and
/// `vjp` return its conjugate, and `vjp` reads its cotangent conjugated.
pub(crate) fn conjugated(interp: &mut Interp, value: &Value) -> EvalResult<Value> {
    let span = interp.call_span;
    let mut lower = Lower { interp, span };
    conjugated_with(&mut lower, value, 0)
}

fn conjugated_with(lower: &mut Lower, value: &Value, depth: usize) -> EvalResult<Value> {
    match value {
        Value::Complex(z) => {
            let im = lower.call("-", std::slice::from_ref(&z.im))?;
            Ok(Value::complex(z.re.clone(), im))
        }
        Value::Pair(_) if depth < crate::reader::MAX_NESTING => {
            let items = value.list_to_vec()?;
            let items = items
                .iter()
                .map(|item| conjugated_with(lower, item, depth + 1))
                .collect::<EvalResult<Vec<_>>>()?;
            Ok(Value::list(items))
        }
        other => Ok(other.clone()),
    }
}

/// Whether `value` holds a complex value (through lists, to the reader's
/// nesting limit).
pub(crate) fn holds_complex(value: &Value) -> bool {
    holds_complex_within(value, crate::reader::MAX_NESTING)
}

fn holds_complex_within(value: &Value, depth: usize) -> bool {
    match value {
        Value::Complex(_) => true,
        Value::Pair(_) if depth > 0 => value
            .iter()
            .any(|(item, _)| holds_complex_within(item, depth - 1)),
        _ => false,
    }
}

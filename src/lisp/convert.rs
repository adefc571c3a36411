//! Turns reader data ([`Sexp`]) into values, keeping each list element's span
//! in its cons cell so analysis can point at code.
//!
//! A bracket form whose elements are all number literals (or such bracket
//! forms, with a consistent shape) becomes a tensor constant right away, so
//! `[1.0 2.0]` reads back as the tensor it prints. Any other bracket form
//! becomes `(tensor-literal e...)`, evaluated element by element.

use super::symbol::{Symbol, sym};
use super::tensor::stack_elements;
use super::value::Value;
use crate::reader::{Sexp, SexpKind};

/// The value of a datum.
pub fn sexp_to_value(sexp: &Sexp) -> Value {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &sexp.kind {
        SexpKind::Int(n) => Value::Int(*n),
        SexpKind::Float(x) => Value::Float(*x),
        SexpKind::Complex(re, im) => Value::complex(Value::Float(*re), Value::Float(*im)),
        SexpKind::Bool(b) => Value::Bool(*b),
        SexpKind::Str(s) => Value::string(s.as_str()),
        SexpKind::Symbol(name) => Value::Symbol(Symbol::intern(name)),
        SexpKind::Keyword(name) => Value::Keyword(Symbol::intern(name)),
        SexpKind::List(items, tail) => {
            let tail = tail.as_deref().map_or(Value::Nil, sexp_to_value);
            list_of(items, tail)
        }
        SexpKind::Tensor(items) => match constant_tensor(items, 1) {
            Some(tensor) => tensor,
            None => Value::cons_at(
                Value::Symbol(sym::TENSOR_LITERAL),
                list_of(items, Value::Nil),
                sexp.span,
            ),
        },
    })
}

fn list_of(items: &[Sexp], tail: Value) -> Value {
    items.iter().rev().fold(tail, |rest, item| {
        Value::cons_at(sexp_to_value(item), rest, item.span)
    })
}

/// The tensor for a bracket form of number literals (the `depth`-th
/// bracket level), if it is one; one of more axes than a tensor may have
/// is left to evaluation, which reports it.
fn constant_tensor(items: &[Sexp], depth: usize) -> Option<Value> {
    if depth > super::tensor::MAX_RANK {
        return None;
    }
    let mut elements = Vec::with_capacity(items.len());
    for item in items {
        elements.push(match &item.kind {
            SexpKind::Int(n) => Value::Int(*n),
            SexpKind::Float(x) => Value::Float(*x),
            SexpKind::Tensor(inner) => constant_tensor(inner, depth + 1)?,
            _ => return None,
        });
    }
    stack_elements(&elements).ok().map(Value::tensor)
}

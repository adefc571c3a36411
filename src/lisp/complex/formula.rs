//! The elementwise table's complex formulas (`ComplexRule`) evaluated on
//! the parts of a complex operand: each formula is read once and then
//! evaluated by calling the built-ins it names, so it is computed,
//! recorded and differentiated like any Lisp code over real values. The
//! formulas are data of the table, evaluated here with the built-ins
//! themselves (a user's redefinition of `exp` does not change them).

use super::{Lower, Parts};
use crate::ir::math::elementwise::{ComplexRule, row_named};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::value::Value;
use crate::reader::{FileId, Sexp, SexpKind, read_all};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    /// Formulas read so far, by their text's address (table text is static).
    static READ: RefCell<FxHashMap<usize, Rc<Vec<Sexp>>>> = RefCell::default();
}

/// The formula `text`, read once.
fn read(text: &'static str) -> EvalResult<Rc<Vec<Sexp>>> {
    let key = text.as_ptr() as usize;
    if let Some(found) = READ.with(|read| read.borrow().get(&key).cloned()) {
        return Ok(found);
    }
    let data = read_all(text, FileId::NONE)
        .map_err(|e| EvalError::type_error(format!("complex formula {text}: {e}")))?;
    let data = Rc::new(data);
    READ.with(|read| read.borrow_mut().insert(key, Rc::clone(&data)));
    Ok(data)
}

/// `f(z)` for the table row `name` (which has a complex rule).
pub(super) fn apply_row(lower: &mut Lower, name: &str, z: &Parts) -> EvalResult<Value> {
    let rule = row_named(name)
        .and_then(|row| row.complex)
        .ok_or_else(|| EvalError::type_error(format!("{name} has no complex rule")))?;
    apply(lower, rule, z)
}

/// `f(z)` by `rule`.
pub(super) fn apply(lower: &mut Lower, rule: ComplexRule, z: &Parts) -> EvalResult<Value> {
    match rule {
        ComplexRule::Parts(re, im) => {
            let y = match &z.im {
                Some(im) => im.clone(),
                None => lower.zeros_like(&z.re)?,
            };
            let mut scope = vec![("x", z.re.clone()), ("y", y)];
            let re = evaluate(lower, re, &mut scope)?;
            let im = evaluate(lower, im, &mut scope)?;
            lower.value(re, Some(im))
        }
        ComplexRule::Composed(text) => {
            let z = Value::complex(
                z.re.clone(),
                match &z.im {
                    Some(im) => im.clone(),
                    None => lower.zeros_like(&z.re)?,
                },
            );
            let mut scope = vec![("z", z)];
            evaluate(lower, text, &mut scope)
        }
    }
}

fn evaluate(
    lower: &mut Lower,
    text: &'static str,
    scope: &mut Vec<(&'static str, Value)>,
) -> EvalResult<Value> {
    let data = read(text)?;
    let [form] = data.as_slice() else {
        return Err(EvalError::type_error(format!(
            "complex formula {text}: one expression expected"
        )));
    };
    eval(lower, form, scope)
}

/// A formula: numbers, `#c(re im)`, the variables in `scope`, `let*` and
/// calls of built-ins.
fn eval(
    lower: &mut Lower,
    form: &Sexp,
    scope: &mut Vec<(&'static str, Value)>,
) -> EvalResult<Value> {
    let bad = || EvalError::type_error("a complex formula of the elementwise table is malformed");
    match &form.kind {
        SexpKind::Int(n) => Ok(Value::Float(*n as f64)),
        SexpKind::Float(x) => Ok(Value::Float(*x)),
        SexpKind::Complex(re, im) => Ok(Value::complex(Value::Float(*re), Value::Float(*im))),
        SexpKind::Symbol(name) => scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(bad),
        SexpKind::List(items, None) => {
            let [head, rest @ ..] = items.as_slice() else {
                return Err(bad());
            };
            let SexpKind::Symbol(name) = &head.kind else {
                return Err(bad());
            };
            if name == "let*" {
                let [bindings, body] = rest else {
                    return Err(bad());
                };
                let SexpKind::List(bindings, None) = &bindings.kind else {
                    return Err(bad());
                };
                let depth = scope.len();
                for binding in bindings {
                    let SexpKind::List(pair, None) = &binding.kind else {
                        return Err(bad());
                    };
                    let [variable, value] = pair.as_slice() else {
                        return Err(bad());
                    };
                    let SexpKind::Symbol(variable) = &variable.kind else {
                        return Err(bad());
                    };
                    let value = eval(lower, value, scope)?;
                    scope.push((leak_name(variable), value));
                }
                let result = eval(lower, body, scope);
                scope.truncate(depth);
                return result;
            }
            let args = rest
                .iter()
                .map(|arg| eval(lower, arg, scope))
                .collect::<EvalResult<Vec<_>>>()?;
            lower.call(name, &args)
        }
        _ => Err(bad()),
    }
}

/// A `let*` variable's name with the formula's lifetime: formulas name a
/// handful of single letters, interned once.
fn leak_name(name: &str) -> &'static str {
    crate::lisp::symbol::Symbol::intern(name).name()
}

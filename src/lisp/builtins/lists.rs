//! Lists: construction, access, and the higher-order functions over them.
//!
//! Argument orders follow SPEC: `(nth lst k)`, `(assoc key alist)`,
//! `(reduce f init lst)`, `(map f lst...)`. Folds call `(f acc x)`.

use super::builtin;
use super::compare::equal;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::memory;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::to_value;
use crate::lisp::value::Value;
use ndarray::Axis;
use std::rc::Rc;

fn pair_parts(value: &Value, what: &str) -> EvalResult<(Value, Value)> {
    match value {
        Value::Pair(pair) => Ok((pair.car.clone(), pair.cdr.clone())),
        Value::Nil => Err(EvalError::type_error(format!("{what} of the empty list"))),
        other => Err(EvalError::type_error(format!(
            "expected a list, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn list(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::list(args.iter().cloned()))
}

fn cons(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::cons(args[0].clone(), args[1].clone()))
}

fn car(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    pair_parts(&args[0], "car").map(|(car, _)| car)
}

fn cdr(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    pair_parts(&args[0], "cdr").map(|(_, cdr)| cdr)
}

fn second(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (_, rest) = pair_parts(&args[0], "second")?;
    pair_parts(&rest, "second of a one-element list").map(|(car, _)| car)
}

fn third(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (_, rest) = pair_parts(&args[0], "third")?;
    let (_, rest) = pair_parts(&rest, "third of a one-element list")?;
    pair_parts(&rest, "third of a two-element list").map(|(car, _)| car)
}

fn rest(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Nil => Ok(Value::Nil),
        other => pair_parts(other, "rest").map(|(_, cdr)| cdr),
    }
}

fn last(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    args[0]
        .list_to_vec()?
        .pop()
        .ok_or_else(|| EvalError::type_error("last of the empty list"))
}

fn index_arg(value: &Value, len: usize) -> EvalResult<usize> {
    let k = value.as_i64()?;
    let resolved = if k < 0 { k + len as i64 } else { k };
    if resolved < 0 || resolved >= len as i64 {
        return Err(EvalError::range(format!(
            "index {k} is out of range for length {len}"
        )));
    }
    Ok(resolved as usize)
}

fn nth(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Tensor(t) if t.ndim() > 0 => {
            let k = index_arg(&args[1], t.shape()[0])?;
            Ok(to_value(t.index_axis(Axis(0), k).to_owned()))
        }
        Value::TensorF32(t) if t.ndim() > 0 => {
            let k = index_arg(&args[1], t.shape()[0])?;
            let row = t.index_axis(Axis(0), k).to_owned();
            Ok(match row.ndim() {
                0 => Value::Float(f64::from(row.iter().next().copied().unwrap_or(f32::NAN))),
                _ => Value::TensorF32(Rc::new(row)),
            })
        }
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            let k = index_arg(&args[1], chars.len())?;
            Ok(Value::string(chars[k].to_string()))
        }
        other => {
            let items = other.list_to_vec()?;
            let k = index_arg(&args[1], items.len())?;
            Ok(items[k].clone())
        }
    }
}

fn length(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
        Value::Tensor(t) if t.ndim() > 0 => Ok(Value::Int(t.shape()[0] as i64)),
        Value::TensorF32(t) if t.ndim() > 0 => Ok(Value::Int(t.shape()[0] as i64)),
        // A traced tensor's first axis has a static length (the same on
        // every call of a compiled function of these shapes).
        Value::Traced(t) if !t.shape.is_empty() => Ok(Value::Int(t.shape[0] as i64)),
        other => Ok(Value::Int(other.list_to_vec()?.len() as i64)),
    }
}

fn append(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let Some((tail, init)) = args.split_last() else {
        return Ok(Value::Nil);
    };
    let mut items = Vec::new();
    for list in init {
        items.extend(list.list_to_vec()?);
    }
    memory::room_for(items.len())?;
    Ok(Value::list_with_tail(items, tail.clone()))
}

fn reverse(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut items = args[0].list_to_vec()?;
    memory::room_for(items.len())?;
    items.reverse();
    Ok(Value::list(items))
}

/// The lists of `(f lst...)` as vectors, iterated up to the shortest.
fn columns(lists: &[Value]) -> EvalResult<(Vec<Vec<Value>>, usize)> {
    let vectors = lists
        .iter()
        .map(Value::list_to_vec)
        .collect::<EvalResult<Vec<_>>>()?;
    let count = vectors.iter().map(Vec::len).min().unwrap_or(0);
    Ok((vectors, count))
}

fn map(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (lists, count) = columns(&args[1..])?;
    memory::room_for(count)?;
    let mut results = Vec::with_capacity(count);
    for position in 0..count {
        let call_args = lists.iter().map(|l| l[position].clone()).collect();
        results.push(interp.apply(&args[0], call_args)?);
    }
    Ok(Value::list(results))
}

fn for_each(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (lists, count) = columns(&args[1..])?;
    for position in 0..count {
        let call_args = lists.iter().map(|l| l[position].clone()).collect();
        interp.apply(&args[0], call_args)?;
    }
    Ok(Value::Void)
}

fn filter(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut kept = Vec::new();
    for item in args[1].list_to_vec()? {
        if interp.apply(&args[0], vec![item.clone()])?.is_truthy() {
            kept.push(item);
        }
    }
    Ok(Value::list(kept))
}

fn fold_left(interp: &mut Interp, f: &Value, init: Value, list: &Value) -> EvalResult<Value> {
    let mut acc = init;
    for item in list.list_to_vec()? {
        acc = interp.apply(f, vec![acc, item])?;
    }
    Ok(acc)
}

fn reduce(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[..] {
        [f, init, list] => fold_left(interp, f, init.clone(), list),
        [f, list] => {
            let (first, rest) = pair_parts(list, "reduce without an initial value")?;
            fold_left(interp, f, first, &rest)
        }
        _ => Err(EvalError::type_error("usage: (reduce f init lst)")),
    }
}

fn foldl(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    fold_left(interp, &args[0], args[1].clone(), &args[2])
}

fn foldr(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut acc = args[1].clone();
    for item in args[2].list_to_vec()?.into_iter().rev() {
        acc = interp.apply(&args[0], vec![item, acc])?;
    }
    Ok(acc)
}

/// Numbers from `start` below `end` by `step`, as integers when all are.
fn range(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (start, end, step) = match &args[..] {
        [end] => (Value::Int(0), end.clone(), Value::Int(1)),
        [start, end] => (start.clone(), end.clone(), Value::Int(1)),
        [start, end, step] => (start.clone(), end.clone(), step.clone()),
        _ => {
            return Err(EvalError::type_error(
                "usage: (range n) or (range start end [step])",
            ));
        }
    };
    const MAX_RANGE: usize = 100_000_000;
    if let (Value::Int(a), Value::Int(b), Value::Int(s)) = (&start, &end, &step) {
        if *s == 0 {
            return Err(EvalError::range("range step cannot be 0"));
        }
        let count = if (*s > 0 && b > a) || (*s < 0 && b < a) {
            ((*b as i128 - *a as i128).abs() + s.abs() as i128 - 1) / s.abs() as i128
        } else {
            0
        };
        if count as usize > MAX_RANGE {
            return Err(EvalError::range(format!(
                "range of {count} elements is too long"
            )));
        }
        memory::room_for(count as usize)?;
        let items = (0..count as i64).map(|k| Value::Int(a + k * s));
        return Ok(Value::list(items.collect::<Vec<_>>()));
    }
    let (a, b, s) = (start.as_f64()?, end.as_f64()?, step.as_f64()?);
    if s == 0.0 || !s.is_finite() || !a.is_finite() || !b.is_finite() {
        return Err(EvalError::range(
            "range needs finite bounds and a non-zero step",
        ));
    }
    let count = ((b - a) / s).ceil().max(0.0);
    if count > MAX_RANGE as f64 {
        return Err(EvalError::range(format!(
            "range of {count} elements is too long"
        )));
    }
    memory::room_for(count as usize)?;
    let items: Vec<Value> = (0..count as usize)
        .map(|k| Value::Float(a + k as f64 * s))
        .collect();
    Ok(Value::list(items))
}

fn apply(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (f, rest) = args
        .split_first()
        .ok_or_else(|| EvalError::type_error("apply needs a function"))?;
    let mut call_args: Vec<Value> = Vec::new();
    if let Some((list, spread)) = rest.split_last() {
        call_args.extend(spread.iter().cloned());
        call_args.extend(list.list_to_vec()?);
    }
    interp.apply(f, call_args)
}

fn assoc(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    for entry in args[1].list_to_vec()? {
        if let Value::Pair(pair) = &entry
            && equal(&pair.car, &args[0])
        {
            return Ok(entry.clone());
        }
    }
    Ok(Value::Bool(false))
}

fn member(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut current = args[1].clone();
    while let Value::Pair(pair) = &current {
        if equal(&pair.car, &args[0]) {
            return Ok(current.clone());
        }
        current = pair.cdr.clone();
    }
    Ok(Value::Bool(false))
}

fn take(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let items = args[0].list_to_vec()?;
    let n = (args[1].as_i64()?.max(0) as usize).min(items.len());
    Ok(Value::list(items.into_iter().take(n).collect::<Vec<_>>()))
}

fn drop(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let items = args[0].list_to_vec()?;
    let n = (args[1].as_i64()?.max(0) as usize).min(items.len());
    Ok(Value::list(items.into_iter().skip(n).collect::<Vec<_>>()))
}

fn zip(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (lists, count) = columns(args)?;
    let rows: Vec<Value> = (0..count)
        .map(|k| Value::list(lists.iter().map(|l| l[k].clone()).collect::<Vec<_>>()))
        .collect();
    Ok(Value::list(rows))
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("list", "(list x...)", "A list of the arguments.", 0, None, list),
    builtin("cons", "(cons x lst)", "A new list with x in front of lst (a pair when lst is not a list).", 2, Some(2), cons),
    builtin("car", "(car lst)", "The first element of a non-empty list.", 1, Some(1), car),
    builtin("cdr", "(cdr lst)", "A non-empty list without its first element.", 1, Some(1), cdr),
    builtin("first", "(first lst)", "The first element of a non-empty list.", 1, Some(1), car),
    builtin("second", "(second lst)", "The second element of a list.", 1, Some(1), second),
    builtin("third", "(third lst)", "The third element of a list.", 1, Some(1), third),
    builtin("rest", "(rest lst)", "The list without its first element (() for ()).", 1, Some(1), rest),
    builtin("last", "(last lst)", "The last element of a non-empty list.", 1, Some(1), last),
    builtin("nth", "(nth lst k)", "Element k (from 0; negative counts from the end) of a list, string, or the first axis of a tensor.", 2, Some(2), nth),
    builtin("length", "(length x)", "Number of elements of a list, characters of a string, or rows of a tensor.", 1, Some(1), length),
    builtin("append", "(append lst...)", "The lists joined end to end.", 0, None, append),
    builtin("reverse", "(reverse lst)", "The list in reverse order.", 1, Some(1), reverse),
    builtin("map", "(map f lst...)", "The list of (f x...) over the elements of the lists, up to the shortest.", 2, None, map),
    builtin("for-each", "(for-each f lst...)", "Calls (f x...) on each element, for its effect.", 2, None, for_each),
    builtin("filter", "(filter pred lst)", "The elements of lst for which (pred x) is true.", 2, Some(2), filter),
    builtin("reduce", "(reduce f init lst)", "Folds lst from the left with (f acc x), starting from init; (reduce f lst) starts from the first element.", 2, Some(3), reduce),
    builtin("foldl", "(foldl f init lst)", "Folds from the left: (f (f (f init x1) x2) x3).", 3, Some(3), foldl),
    builtin("foldr", "(foldr f init lst)", "Folds from the right: (f x1 (f x2 (f x3 init))).", 3, Some(3), foldr),
    builtin("range", "(range n) or (range start end [step])", "The numbers from start (default 0) below end, by step (default 1).", 1, Some(3), range),
    builtin("apply", "(apply f x... lst)", "Calls f with the xs followed by the elements of lst.", 1, None, apply),
    builtin("assoc", "(assoc key alist)", "The first entry of alist whose first element is equal? to key, or #f.", 2, Some(2), assoc),
    builtin("member", "(member x lst)", "The tail of lst starting at the first element equal? to x, or #f.", 2, Some(2), member),
    builtin("take", "(take lst n)", "The first n elements of lst.", 2, Some(2), take),
    builtin("drop", "(drop lst n)", "lst without its first n elements.", 2, Some(2), drop),
    builtin("zip", "(zip lst...)", "Lists of corresponding elements: (zip '(1 2) '(a b)) is ((1 a) (2 b)).", 1, None, zip),
];

//! Quasiquote: analysing templates and building values from them.
//!
//! A template is analysed once into constant parts and holes (`,x` and
//! `,@xs`); running it conses only the parts that contain holes. Nested
//! quasiquotes keep their inner unquotes as data, one level per backquote.

use super::error::{EvalError, EvalResult};
use super::node::{Node, Piece, Template};
use super::symbol::{Symbol, sym};
use super::value::Value;
use crate::reader::Span;

/// The single argument of `(head x)` when `form` has that shape.
fn wrapped(form: &Value, head: Symbol) -> Option<(&Value, Span)> {
    let Value::Pair(pair) = form else { return None };
    if !matches!(pair.car, Value::Symbol(s) if s == head) {
        return None;
    }
    match &pair.cdr {
        Value::Pair(rest) if rest.cdr.is_nil() => Some((&rest.car, rest.span)),
        _ => None,
    }
}

/// Analyses `form` as a template at quasiquote nesting `level` (1 = the
/// outermost backquote). `analyze` turns the holes into nodes.
pub fn analyze_template(
    form: &Value,
    level: usize,
    analyze: &mut dyn FnMut(&Value, Span) -> EvalResult<Node>,
) -> EvalResult<Template> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || template(form, level, analyze))
}

fn template(
    form: &Value,
    level: usize,
    analyze: &mut dyn FnMut(&Value, Span) -> EvalResult<Node>,
) -> EvalResult<Template> {
    if let Some((inner, span)) = wrapped(form, sym::UNQUOTE) {
        if level == 1 {
            return Ok(Template::Unquote(analyze(inner, span)?));
        }
        let inner = analyze_template(inner, level - 1, analyze)?;
        return Ok(wrap(sym::UNQUOTE, inner));
    }
    if let Some((inner, _)) = wrapped(form, sym::QUASIQUOTE) {
        let inner = analyze_template(inner, level + 1, analyze)?;
        return Ok(wrap(sym::QUASIQUOTE, inner));
    }
    let Value::Pair(_) = form else {
        return Ok(Template::Const(form.clone()));
    };
    let mut items = Vec::new();
    let mut current = form;
    let mut tail = None;
    loop {
        match current {
            Value::Nil => break,
            // `(a . ,b)` reads as `(a unquote b)`: the rest is a hole.
            Value::Pair(_) if wrapped(current, sym::UNQUOTE).is_some() => {
                tail = Some(Box::new(analyze_template(current, level, analyze)?));
                break;
            }
            Value::Pair(pair) => {
                match wrapped(&pair.car, sym::UNQUOTE_SPLICING) {
                    Some((inner, span)) if level == 1 => {
                        items.push(Piece::Splice(analyze(inner, span.or(pair.span))?));
                    }
                    _ => items.push(Piece::One(analyze_template(&pair.car, level, analyze)?)),
                }
                current = &pair.cdr;
            }
            other => {
                tail = Some(Box::new(Template::Const(other.clone())));
                break;
            }
        }
    }
    let all_constant = items
        .iter()
        .all(|piece| matches!(piece, Piece::One(Template::Const(_))))
        && tail
            .as_deref()
            .is_none_or(|t| matches!(t, Template::Const(_)));
    if all_constant {
        return Ok(Template::Const(form.clone()));
    }
    Ok(Template::List { items, tail })
}

/// `(head inner)` as a template.
fn wrap(head: Symbol, inner: Template) -> Template {
    match inner {
        Template::Const(value) => Template::Const(Value::list([Value::Symbol(head), value])),
        other => Template::List {
            items: vec![
                Piece::One(Template::Const(Value::Symbol(head))),
                Piece::One(other),
            ],
            tail: None,
        },
    }
}

/// The node for a whole template written at `span` (a constant one is just
/// quoted data).
pub fn into_node(template: Template, span: Span) -> Node {
    match template {
        Template::Const(value) => Node::Const(value),
        other => Node::Quasi {
            template: Box::new(other),
            span,
        },
    }
}

/// Builds the value of `template`, evaluating holes with `eval`.
pub fn instantiate(
    template: &Template,
    eval: &mut dyn FnMut(&Node) -> EvalResult<Value>,
) -> EvalResult<Value> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match template {
        Template::Const(value) => Ok(value.clone()),
        Template::Unquote(node) => eval(node),
        Template::List { items, tail } => {
            let mut values = Vec::with_capacity(items.len());
            for piece in items {
                match piece {
                    Piece::One(inner) => values.push(instantiate(inner, eval)?),
                    Piece::Splice(node) => {
                        let spliced = eval(node)?;
                        let elements = spliced.list_to_vec().map_err(|_| {
                            EvalError::type_error(format!(
                                ",@ needs a list, got {} {}",
                                spliced.type_name(),
                                spliced.short()
                            ))
                        })?;
                        values.extend(elements);
                    }
                }
            }
            let tail = match tail {
                Some(tail) => instantiate(tail, eval)?,
                None => Value::Nil,
            };
            Ok(Value::list_with_tail(values, tail))
        }
    })
}

//! Control forms with clauses: `cond` and `try`.

use super::{Analyzer, Scope, proper_items, syntax};
use crate::lisp::error::EvalResult;
use crate::lisp::node::{Clause, ClauseAction, Node};
use crate::lisp::symbol::sym;
use crate::lisp::value::Value;
use crate::reader::Span;

impl Analyzer<'_> {
    pub(super) fn cond(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        let mut clauses = Vec::with_capacity(args.len());
        for (position, (clause, clause_span)) in args.iter().enumerate() {
            let clause_span = clause_span.or(span);
            let items = proper_items(clause, clause_span)
                .ok()
                .filter(|items| !items.is_empty())
                .ok_or_else(|| syntax("cond: each clause is a list (test body...)", clause_span))?;
            let is_else =
                matches!(items[0].0, Value::Symbol(s) if s == sym::ELSE && !self.is_local(s));
            if is_else && position + 1 != args.len() {
                return Err(syntax("cond: else must be the last clause", clause_span));
            }
            let test = if is_else {
                Node::Const(Value::Bool(true))
            } else {
                self.analyze(&items[0].0, items[0].1)?
            };
            let action = match &items[1..] {
                [] => ClauseAction::Value,
                [(Value::Symbol(arrow), _), (f, f_span)] if *arrow == sym::ARROW => {
                    ClauseAction::Apply(self.analyze(f, *f_span)?)
                }
                body => ClauseAction::Body(self.sequence(body, clause_span)?),
            };
            clauses.push(Clause { test, action });
        }
        Ok(Node::Cond(clauses.into()))
    }

    pub(super) fn try_form(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        let usage = "try takes a body and ends with (catch (e) handler...)";
        let Some(((catch_form, catch_span), body)) = args.split_last() else {
            return Err(syntax(usage, span));
        };
        let catch_items = proper_items(catch_form, *catch_span).map_err(|_| syntax(usage, span))?;
        let [
            (Value::Symbol(catch), _),
            (binder, binder_span),
            handler @ ..,
        ] = catch_items.as_slice()
        else {
            return Err(syntax(usage, *catch_span));
        };
        if *catch != sym::CATCH || handler.is_empty() || body.is_empty() {
            return Err(syntax(usage, *catch_span));
        }
        let error_name = match binder {
            Value::Symbol(name) => *name,
            Value::Pair(pair) => match (&pair.car, &pair.cdr) {
                (Value::Symbol(name), Value::Nil) => *name,
                _ => {
                    return Err(syntax(
                        "catch binds one variable: (catch (e) ...)",
                        *binder_span,
                    ));
                }
            },
            _ => {
                return Err(syntax(
                    "catch binds one variable: (catch (e) ...)",
                    *binder_span,
                ));
            }
        };
        let body = self.sequence(body, span)?;
        self.scopes.push(Scope {
            names: vec![error_name],
        });
        let handler = self.body_in_current_scope(handler, *catch_span);
        let size = self.scopes.pop().map(|s| s.names.len()).unwrap_or(1);
        Ok(Node::Try {
            body: Box::new(body),
            handler_size: size as u32,
            handler: Box::new(handler?),
        })
    }
}

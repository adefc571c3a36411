//! Binding forms: `define`, `set!`, `lambda`, `let`, `let*`, `letrec` and
//! named `let`, with parameter and binding-list parsing.

use super::{Analyzer, LambdaParts, Scope, proper_items, syntax, tail_items};
use crate::lisp::error::EvalResult;
use crate::lisp::node::{LambdaDef, Node};
use crate::lisp::symbol::{Symbol, sym};
use crate::lisp::value::Value;
use crate::reader::Span;
use std::rc::Rc;

impl Analyzer<'_> {
    pub(super) fn define(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        let Some(((target, target_span), rest)) = args.split_first() else {
            return Err(syntax("define needs a name and a value", span));
        };
        let (name, value) = match target {
            Value::Symbol(name) => {
                let [(value, value_span)] = rest else {
                    return Err(syntax(
                        format!(
                            "(define {name} value) takes exactly one value, got {}",
                            rest.len()
                        ),
                        span,
                    ));
                };
                (*name, self.bound_value(*name, value, *value_span)?)
            }
            Value::Pair(signature) => {
                let Value::Symbol(name) = signature.car else {
                    return Err(syntax(
                        "define: the function name must be a symbol",
                        *target_span,
                    ));
                };
                if rest.is_empty() {
                    return Err(syntax(
                        format!("define: function {name} needs a body"),
                        span,
                    ));
                }
                let def =
                    self.lambda(Some(name), &signature.cdr, target_span.or(span), rest, span)?;
                (name, Node::Lambda(def))
            }
            other => {
                return Err(syntax(
                    format!(
                        "define: expected a name or (name params...), found {} {}",
                        other.type_name(),
                        other.short()
                    ),
                    *target_span,
                ));
            }
        };
        if self.scopes.is_empty() {
            return Ok(Node::DefineGlobal {
                name,
                value: Box::new(value),
            });
        }
        let scope = self.scopes.last().map(|s| &s.names);
        match scope.and_then(|names| names.iter().rposition(|n| *n == name)) {
            Some(index) => Ok(Node::SetLocal {
                depth: 0,
                index: index as u32,
                value: Box::new(value),
            }),
            None => Err(syntax(
                format!(
                    "(define {name} ...) must stand directly in a body (of a function, let or begin); use let or set! here"
                ),
                span,
            )),
        }
    }

    /// Analyses the value bound to `name`; a lambda written there takes the
    /// name (for printing, `doc` and error messages).
    pub(super) fn bound_value(
        &mut self,
        name: Symbol,
        form: &Value,
        span: Span,
    ) -> EvalResult<Node> {
        match self.lambda_form(form) {
            Some((params, params_span, body)) => Ok(Node::Lambda(self.lambda(
                Some(name),
                &params,
                params_span.or(span),
                &body,
                span,
            )?)),
            None => self.analyze(form, span),
        }
    }

    /// If `form` is `(lambda params body...)` (not shadowed), its parts.
    pub(super) fn lambda_form(&self, form: &Value) -> Option<LambdaParts> {
        let Value::Pair(pair) = form else { return None };
        let Value::Symbol(head) = pair.car else {
            return None;
        };
        if (head != sym::LAMBDA && head != sym::FN) || self.is_local(head) {
            return None;
        }
        let items = tail_items(form, Span::NONE).ok()?;
        let ((params, params_span), body) = items.split_first()?;
        Some((params.clone(), *params_span, body.to_vec()))
    }

    pub(super) fn set(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        let [(Value::Symbol(name), _), (value, value_span)] = args else {
            return Err(syntax("set! takes a variable name and a value", span));
        };
        let value = Box::new(self.analyze(value, *value_span)?);
        Ok(match self.resolve(*name) {
            Some((depth, index)) => Node::SetLocal {
                depth,
                index,
                value,
            },
            None => Node::SetGlobal {
                name: *name,
                value,
                span,
            },
        })
    }

    /// Analyses a lambda: parameters, optional docstring, body.
    pub(super) fn lambda(
        &mut self,
        name: Option<Symbol>,
        params: &Value,
        params_span: Span,
        body: &[(Value, Span)],
        span: Span,
    ) -> EvalResult<Rc<LambdaDef>> {
        let (names, rest) = parse_params(params, params_span)?;
        let (doc, body) = match body {
            [(Value::Str(doc), _), rest_of_body @ ..] if !rest_of_body.is_empty() => {
                (Some(doc.to_string()), rest_of_body)
            }
            _ => (None, body),
        };
        if body.is_empty() {
            return Err(syntax("a function needs a body", span));
        }
        self.scopes.push(Scope {
            names: names.clone(),
        });
        let analysed = self.body_in_current_scope(body, span);
        let scope = self.scopes.pop().map(|s| s.names).unwrap_or_default();
        Ok(Rc::new(LambdaDef {
            name,
            params: names,
            rest,
            frame_size: scope.len() as u32,
            body: analysed?,
            doc,
            span,
        }))
    }

    pub(super) fn let_form(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        if let Some((Value::Symbol(loop_name), _)) = args.first() {
            return self.named_let(*loop_name, &args[1..], span);
        }
        let Some(((bindings, bindings_span), body)) = args.split_first() else {
            return Err(syntax("let needs bindings and a body", span));
        };
        let bindings = parse_bindings("let", bindings, bindings_span.or(span))?;
        let mut inits = Vec::with_capacity(bindings.len());
        for (index, (_, init, init_span)) in bindings.iter().enumerate() {
            inits.push((index as u32, self.analyze(init, *init_span)?));
        }
        let names = bindings.iter().map(|(name, _, _)| *name).collect();
        self.scoped_let(names, inits, false, body, span)
    }

    pub(super) fn scoped_let(
        &mut self,
        names: Vec<Symbol>,
        inits: Vec<(u32, Node)>,
        sequential: bool,
        body: &[(Value, Span)],
        span: Span,
    ) -> EvalResult<Node> {
        if body.is_empty() {
            return Err(syntax("let needs a body", span));
        }
        self.scopes.push(Scope { names });
        let body = self.body_in_current_scope(body, span);
        let size = self.scopes.pop().map(|s| s.names.len()).unwrap_or(0);
        Ok(Node::Let {
            size: size as u32,
            sequential,
            inits: inits.into(),
            body: Box::new(body?),
        })
    }

    /// `let*` binds one name after another; `letrec` binds all names first.
    pub(super) fn let_star(
        &mut self,
        args: &[(Value, Span)],
        span: Span,
        recursive: bool,
    ) -> EvalResult<Node> {
        let form_name = if recursive { "letrec" } else { "let*" };
        let Some(((bindings, bindings_span), body)) = args.split_first() else {
            return Err(syntax(
                format!("{form_name} needs bindings and a body"),
                span,
            ));
        };
        if body.is_empty() {
            return Err(syntax(format!("{form_name} needs a body"), span));
        }
        let bindings = parse_bindings(form_name, bindings, bindings_span.or(span))?;
        let all_names: Vec<Symbol> = bindings.iter().map(|(name, _, _)| *name).collect();
        self.scopes.push(Scope {
            names: if recursive { all_names } else { Vec::new() },
        });
        let result = (|| -> EvalResult<(Vec<(u32, Node)>, Node)> {
            let mut inits = Vec::with_capacity(bindings.len());
            for (position, (name, init, init_span)) in bindings.iter().enumerate() {
                let value = self.bound_value(*name, init, *init_span)?;
                let index = if recursive {
                    position
                } else {
                    let names = &mut self.scopes.last_mut().expect("let* scope was pushed").names;
                    names.push(*name);
                    names.len() - 1
                };
                inits.push((index as u32, value));
            }
            let body = self.body_in_current_scope(body, span)?;
            Ok((inits, body))
        })();
        let size = self.scopes.pop().map(|s| s.names.len()).unwrap_or(0);
        let (inits, body) = result?;
        Ok(Node::Let {
            size: size as u32,
            sequential: true,
            inits: inits.into(),
            body: Box::new(body),
        })
    }

    /// `(let loop ((i 0)) body...)` is `((letrec ((loop (lambda (i) body...))) loop) 0)`.
    pub(super) fn named_let(
        &mut self,
        loop_name: Symbol,
        args: &[(Value, Span)],
        span: Span,
    ) -> EvalResult<Node> {
        let Some(((bindings, bindings_span), body)) = args.split_first() else {
            return Err(syntax("named let needs bindings and a body", span));
        };
        if body.is_empty() {
            return Err(syntax("named let needs a body", span));
        }
        let bindings = parse_bindings("let", bindings, bindings_span.or(span))?;
        let params = Value::list(bindings.iter().map(|(name, _, _)| Value::Symbol(*name)));
        // The initial values are computed inside the frame that holds the
        // loop function (they are the arguments of its first call), but in
        // the scope outside it: a name no program can write stands for the
        // slot, so the addresses of outer variables count that frame.
        self.scopes.push(Scope {
            names: vec![Symbol::intern(" loop function")],
        });
        let mut inits = Vec::with_capacity(bindings.len());
        for (_, init, init_span) in &bindings {
            match self.analyze(init, *init_span) {
                Ok(node) => inits.push(node),
                Err(error) => {
                    self.scopes.pop();
                    return Err(error);
                }
            }
        }
        self.scopes.pop();
        self.scopes.push(Scope {
            names: vec![loop_name],
        });
        let def = self.lambda(Some(loop_name), &params, *bindings_span, body, span);
        self.scopes.pop();
        let def = def?;
        let call = Node::Call {
            callee: Box::new(Node::Local {
                depth: 0,
                index: 0,
                name: loop_name,
                span,
            }),
            args: inits.into(),
            span,
        };
        Ok(Node::Let {
            size: 1,
            sequential: true,
            inits: vec![(0, Node::Lambda(def))].into(),
            body: Box::new(call),
        })
    }
}

/// The symbol a `(define name ...)` or `(define (name ...) ...)` form defines.
pub(super) fn defined_name(form: &Value) -> Option<Symbol> {
    let Value::Pair(pair) = form else { return None };
    if !matches!(pair.car, Value::Symbol(s) if s == sym::DEFINE) {
        return None;
    }
    let Value::Pair(rest) = &pair.cdr else {
        return None;
    };
    match &rest.car {
        Value::Symbol(name) => Some(*name),
        Value::Pair(signature) => match signature.car {
            Value::Symbol(name) => Some(name),
            _ => None,
        },
        _ => None,
    }
}

/// The parameter names and whether the last one is a rest parameter.
pub(super) fn parse_params(params: &Value, span: Span) -> EvalResult<(Vec<Symbol>, bool)> {
    let mut names = Vec::new();
    let mut rest = false;
    let mut iter = params.iter();
    let mut expect_rest_name = false;
    for (param, param_span) in iter.by_ref() {
        let Value::Symbol(name) = param else {
            return Err(syntax(
                format!(
                    "parameters must be symbols, found {} {}",
                    param.type_name(),
                    param.short()
                ),
                param_span.or(span),
            ));
        };
        if *name == sym::AMP_REST {
            if rest || expect_rest_name {
                return Err(syntax("&rest may appear once", span));
            }
            expect_rest_name = true;
            continue;
        }
        if rest {
            return Err(syntax("only one parameter may follow &rest", span));
        }
        if expect_rest_name {
            rest = true;
            expect_rest_name = false;
        }
        if names.contains(name) {
            return Err(syntax(
                format!("parameter {name} appears twice"),
                param_span.or(span),
            ));
        }
        names.push(*name);
    }
    if expect_rest_name {
        return Err(syntax("&rest must be followed by a parameter name", span));
    }
    match iter.rest() {
        Value::Nil => {}
        Value::Symbol(tail) if !rest => {
            if names.contains(tail) {
                return Err(syntax(format!("parameter {tail} appears twice"), span));
            }
            names.push(*tail);
            rest = true;
        }
        other => {
            return Err(syntax(
                format!("bad parameter list ending in {}", other.short()),
                span,
            ));
        }
    }
    Ok((names, rest))
}

/// Parses `((name init) ...)`.
pub(super) fn parse_bindings(
    form: &str,
    bindings: &Value,
    span: Span,
) -> EvalResult<Vec<(Symbol, Value, Span)>> {
    let usage = || {
        syntax(
            format!("{form}: bindings are a list of (name value) pairs"),
            span,
        )
    };
    let items = proper_items(bindings, span).map_err(|_| usage())?;
    let mut parsed = Vec::with_capacity(items.len());
    for (binding, binding_span) in items {
        let parts = proper_items(&binding, binding_span.or(span)).map_err(|_| usage())?;
        match parts.as_slice() {
            [(Value::Symbol(name), _), (init, init_span)] => {
                parsed.push((*name, init.clone(), init_span.or(binding_span).or(span)));
            }
            _ => {
                return Err(syntax(
                    format!(
                        "{form}: each binding is (name value), found {}",
                        binding.short()
                    ),
                    binding_span.or(span),
                ));
            }
        }
    }
    Ok(parsed)
}

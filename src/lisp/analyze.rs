//! Analysis: turns code (a [`Value`]) into a [`Node`] tree.
//!
//! This is where special forms are recognised, macros are expanded (by
//! calling their expanders), and each local variable gets its lexical address.
//! A body's internal `define`s are found before the body is analysed, so they
//! get slots in the body's frame. Analysis recurses on nested forms; the depth
//! is bounded and the stack grows on demand, so generated code cannot
//! overflow it.

use super::error::{EvalError, EvalErrorKind, EvalResult};
use super::interp::Interp;
use super::node::{Clause, ClauseAction, LambdaDef, Node};
use super::quasi;
use super::symbol::{Symbol, sym};
use super::value::Value;
use crate::reader::Span;
use std::rc::Rc;

/// The deepest nesting of forms analysis accepts.
const MAX_ANALYSIS_DEPTH: usize = 20_000;

/// Special forms with their usage and documentation, for `doc` and completion.
pub const SPECIAL_FORMS: &[(&str, &str, &str)] = &[
    (
        "quote",
        "(quote datum) or 'datum",
        "The datum itself, unevaluated.",
    ),
    (
        "quasiquote",
        "`template",
        "A template: ,x inserts the value of x and ,@xs splices the list xs.",
    ),
    (
        "define",
        "(define name value) or (define (name params...) \"doc\" body...)",
        "Binds a variable, or defines a function with an optional docstring.",
    ),
    (
        "set!",
        "(set! name value)",
        "Assigns to an existing variable.",
    ),
    (
        "lambda",
        "(lambda (params... [. rest]) body...)",
        "A function; a dotted last parameter (or &rest) collects the remaining arguments.",
    ),
    ("fn", "(fn (params...) body...)", "Same as lambda."),
    (
        "let",
        "(let ((name value)...) body...) or (let loop ((name init)...) body...)",
        "Binds variables for a body; the named form defines a local loop function.",
    ),
    (
        "let*",
        "(let* ((name value)...) body...)",
        "Like let, each binding seeing the ones before it.",
    ),
    (
        "letrec",
        "(letrec ((name value)...) body...)",
        "Like let, every binding seeing all of them (for mutually recursive functions).",
    ),
    (
        "if",
        "(if test then [else])",
        "Evaluates then when test is true (anything but #f and ()), else otherwise.",
    ),
    (
        "cond",
        "(cond (test body...)... (else body...))",
        "The body of the first clause whose test is true; (test => f) calls f on the test value.",
    ),
    (
        "when",
        "(when test body...)",
        "Evaluates the body when test is true; () otherwise.",
    ),
    (
        "unless",
        "(unless test body...)",
        "Evaluates the body when test is false; () otherwise.",
    ),
    (
        "and",
        "(and x...)",
        "The first false value, or the last value (#t with none).",
    ),
    (
        "or",
        "(or x...)",
        "The first true value, or the last value (#f with none).",
    ),
    (
        "begin",
        "(begin x...)",
        "Evaluates in order, giving the last value.",
    ),
    (
        "while",
        "(while test body...)",
        "Repeats the body while test is true.",
    ),
    (
        "defmacro",
        "(defmacro name (params...) \"doc\" body...)",
        "Defines a macro: its body computes the code that replaces each use.",
    ),
    (
        "try",
        "(try body... (catch (e) handler...))",
        "Evaluates the body; on an error, binds its message to e and evaluates the handler.",
    ),
    (
        "time",
        "(time expr)",
        "Evaluates expr, prints the elapsed wall time to stderr, and gives its value.",
    ),
];

/// A form with the span it was read at.
type Spanned = (Value, Span);

/// The parts of a `(lambda params body...)` form.
type LambdaParts = (Value, Span, Vec<Spanned>);

/// The names in scope at one frame, in slot order.
struct Scope {
    names: Vec<Symbol>,
}

/// Analyses one top-level form at a time, with access to the interpreter for
/// macro expansion.
pub struct Analyzer<'i> {
    interp: &'i mut Interp,
    scopes: Vec<Scope>,
    depth: usize,
    /// The span used for code built at run time (macro output), which has none.
    fallback: Span,
}

fn syntax(message: impl Into<String>, span: Span) -> EvalError {
    EvalError::syntax(message).at(span)
}

fn is_special_form(name: Symbol) -> bool {
    SPECIAL_FORMS
        .iter()
        .any(|(form, _, _)| *form == name.name())
        || name == sym::TENSOR_LITERAL
}

impl<'i> Analyzer<'i> {
    /// An analyser at the top level (no local scopes).
    pub fn new(interp: &'i mut Interp) -> Self {
        Analyzer {
            interp,
            scopes: Vec::new(),
            depth: 0,
            fallback: Span::NONE,
        }
    }

    /// Analyses a top-level form read at `span`.
    pub fn analyze_top(&mut self, form: &Value, span: Span) -> EvalResult<Node> {
        self.fallback = span;
        self.analyze(form, span)
    }

    fn analyze(&mut self, form: &Value, span: Span) -> EvalResult<Node> {
        let span = span.or(self.fallback);
        self.depth += 1;
        if self.depth > MAX_ANALYSIS_DEPTH {
            self.depth -= 1;
            return Err(EvalError::new(
                EvalErrorKind::Recursion,
                format!("code nested deeper than {MAX_ANALYSIS_DEPTH} levels"),
            )
            .at(span));
        }
        let result = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.analyze_form(form, span));
        self.depth -= 1;
        result
    }

    fn analyze_form(&mut self, form: &Value, span: Span) -> EvalResult<Node> {
        match form {
            Value::Symbol(name) => Ok(self.variable(*name, span)),
            Value::Pair(pair) => {
                if let Value::Symbol(head) = pair.car {
                    if !self.is_local(head) {
                        if is_special_form(head) {
                            return self.special_form(head, form, span);
                        }
                        if let Some(expander) = self.macro_named(head) {
                            let expansion = self.expand(&expander, form, span)?;
                            let saved = std::mem::replace(&mut self.fallback, span);
                            let node = self.analyze(&expansion, Span::NONE);
                            self.fallback = saved;
                            return node;
                        }
                    }
                }
                self.call(form, span)
            }
            Value::Undefined => Err(syntax("undefined value in code", span)),
            other => Ok(Node::Const(other.clone())),
        }
    }

    fn variable(&self, name: Symbol, span: Span) -> Node {
        match self.resolve(name) {
            Some((depth, index)) => Node::Local {
                depth,
                index,
                name,
                span,
            },
            None => Node::Global { name, span },
        }
    }

    /// The lexical address of a local variable, innermost binding first.
    fn resolve(&self, name: Symbol) -> Option<(u32, u32)> {
        for (depth, scope) in self.scopes.iter().rev().enumerate() {
            if let Some(index) = scope.names.iter().rposition(|n| *n == name) {
                return Some((depth as u32, index as u32));
            }
        }
        None
    }

    fn is_local(&self, name: Symbol) -> bool {
        self.resolve(name).is_some()
    }

    fn macro_named(&self, name: Symbol) -> Option<Value> {
        match self.interp.global(name) {
            Some(value @ Value::Macro(_)) => Some(value),
            _ => None,
        }
    }

    fn expand(&mut self, expander: &Value, form: &Value, span: Span) -> EvalResult<Value> {
        let Value::Macro(closure) = expander else {
            return Err(syntax("internal: not a macro", span));
        };
        let args = tail_items(form, span)?
            .into_iter()
            .map(|(value, _)| value)
            .collect();
        self.interp
            .apply_closure(closure, args, span)
            .map_err(|e| e.called_from(span))
    }

    /// Expands macros at the head of `form` until it is not a macro call.
    fn expand_head(&mut self, mut form: Value, mut span: Span) -> EvalResult<(Value, Span)> {
        loop {
            let expander = match &form {
                Value::Pair(pair) => match pair.car {
                    Value::Symbol(head) if !self.is_local(head) && !is_special_form(head) => {
                        self.macro_named(head)
                    }
                    _ => None,
                },
                _ => None,
            };
            let Some(expander) = expander else {
                return Ok((form, span));
            };
            form = self.expand(&expander, &form, span)?;
            span = span.or(self.fallback);
        }
    }

    fn call(&mut self, form: &Value, span: Span) -> EvalResult<Node> {
        let Value::Pair(pair) = form else {
            return Err(syntax("internal: call of a non-list", span));
        };
        let callee = self.analyze(&pair.car, pair.span.or(span))?;
        let args = self.analyze_all(&pair.cdr, span)?;
        Ok(Node::Call {
            callee: Box::new(callee),
            args: args.into(),
            span,
        })
    }

    fn analyze_all(&mut self, forms: &Value, span: Span) -> EvalResult<Vec<Node>> {
        proper_items(forms, span)?
            .iter()
            .map(|(form, form_span)| self.analyze(form, form_span.or(span)))
            .collect()
    }

    fn special_form(&mut self, head: Symbol, form: &Value, span: Span) -> EvalResult<Node> {
        let args = tail_items(form, span)?;
        let name = head.name();
        match head {
            sym::QUOTE => {
                expect_count(name, &args, 1, span)?;
                Ok(Node::Const(args[0].0.clone()))
            }
            sym::QUASIQUOTE => {
                expect_count(name, &args, 1, span)?;
                let template = quasi::analyze_template(&args[0].0, 1, &mut |form, at| {
                    self.analyze(form, at.or(span))
                })?;
                Ok(quasi::into_node(template))
            }
            sym::UNQUOTE | sym::UNQUOTE_SPLICING => Err(syntax(
                format!("{name} outside a quasiquote (`) template"),
                span,
            )),
            sym::DEFINE => self.define(&args, span),
            sym::SET => self.set(&args, span),
            sym::LAMBDA | sym::FN => {
                let Some(((params, params_span), body)) = args.split_first() else {
                    return Err(syntax(
                        format!("{name} needs a parameter list and a body"),
                        span,
                    ));
                };
                let def = self.lambda(None, params, params_span.or(span), body, span)?;
                Ok(Node::Lambda(def))
            }
            sym::LET => self.let_form(&args, span),
            sym::LET_STAR => self.let_star(&args, span, false),
            sym::LETREC => self.let_star(&args, span, true),
            sym::IF => {
                if args.len() < 2 || args.len() > 3 {
                    return Err(syntax(
                        format!(
                            "if takes a test, a then branch and an optional else branch; got {} forms",
                            args.len()
                        ),
                        span,
                    ));
                }
                let test = self.analyze(&args[0].0, args[0].1)?;
                let then = self.analyze(&args[1].0, args[1].1)?;
                let otherwise = match args.get(2) {
                    Some((form, at)) => self.analyze(form, *at)?,
                    None => Node::Const(Value::Nil),
                };
                Ok(Node::If {
                    test: Box::new(test),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                })
            }
            sym::WHEN | sym::UNLESS => {
                let Some(((test, test_span), body)) = args.split_first() else {
                    return Err(syntax(format!("{name} needs a test"), span));
                };
                let test = self.analyze(test, *test_span)?;
                let body = self.sequence(body, span)?;
                let (then, otherwise) = if head == sym::WHEN {
                    (body, Node::Const(Value::Nil))
                } else {
                    (Node::Const(Value::Nil), body)
                };
                Ok(Node::If {
                    test: Box::new(test),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                })
            }
            sym::COND => self.cond(&args, span),
            sym::AND | sym::OR => {
                let nodes: Vec<Node> = args
                    .iter()
                    .map(|(form, at)| self.analyze(form, *at))
                    .collect::<EvalResult<_>>()?;
                Ok(match (head == sym::AND, nodes.len()) {
                    (true, 0) => Node::Const(Value::Bool(true)),
                    (false, 0) => Node::Const(Value::Bool(false)),
                    (true, _) => Node::And(nodes.into()),
                    (false, _) => Node::Or(nodes.into()),
                })
            }
            sym::BEGIN => self.body_in_current_scope(&args, span),
            sym::WHILE => {
                let Some(((test, test_span), body)) = args.split_first() else {
                    return Err(syntax("while needs a test and a body", span));
                };
                let test = self.analyze(test, *test_span)?;
                let body = self.sequence(body, span)?;
                Ok(Node::While {
                    test: Box::new(test),
                    body: Box::new(body),
                })
            }
            sym::DEFMACRO => {
                let [(name_form, name_span), (params, params_span), body @ ..] = args.as_slice()
                else {
                    return Err(syntax(
                        "defmacro needs a name, a parameter list and a body",
                        span,
                    ));
                };
                let Value::Symbol(macro_name) = name_form else {
                    return Err(syntax(
                        "defmacro: the macro name must be a symbol",
                        *name_span,
                    ));
                };
                let def =
                    self.lambda(Some(*macro_name), params, params_span.or(span), body, span)?;
                Ok(Node::DefMacro {
                    name: *macro_name,
                    def,
                })
            }
            sym::TRY => self.try_form(&args, span),
            sym::TIME => {
                expect_count(name, &args, 1, span)?;
                let expr = self.analyze(&args[0].0, args[0].1)?;
                Ok(Node::Time {
                    expr: Box::new(expr),
                    span,
                })
            }
            sym::TENSOR_LITERAL => {
                let items = args
                    .iter()
                    .map(|(form, at)| self.analyze(form, *at))
                    .collect::<EvalResult<Vec<_>>>()?;
                Ok(Node::TensorLiteral {
                    items: items.into(),
                    span,
                })
            }
            _ => Err(syntax(format!("{name} is not a special form"), span)),
        }
    }

    fn define(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
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
                let value = match self.lambda_form(value) {
                    Some((params, params_span, body)) => Node::Lambda(self.lambda(
                        Some(*name),
                        &params,
                        params_span.or(*value_span),
                        &body,
                        *value_span,
                    )?),
                    None => self.analyze(value, *value_span)?,
                };
                (*name, value)
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
                    format!("define: cannot define a {}", other.type_name()),
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

    /// If `form` is `(lambda params body...)` (not shadowed), its parts.
    fn lambda_form(&self, form: &Value) -> Option<LambdaParts> {
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

    fn set(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
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
    fn lambda(
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

    /// A sequence of forms (not a body: no internal defines of its own).
    fn sequence(&mut self, forms: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        let mut nodes: Vec<Node> = forms
            .iter()
            .map(|(form, at)| self.analyze(form, at.or(span)))
            .collect::<EvalResult<_>>()?;
        Ok(match nodes.len() {
            0 => Node::Const(Value::Nil),
            1 => nodes.pop().unwrap_or(Node::Const(Value::Nil)),
            _ => Node::Seq(nodes.into()),
        })
    }

    /// A body: expands macros at its head positions, splices `begin`, gives
    /// its `define`s slots in the innermost scope, then analyses the forms.
    fn body_in_current_scope(&mut self, forms: &[(Value, Span)], span: Span) -> EvalResult<Node> {
        if self.scopes.is_empty() {
            return self.sequence(forms, span);
        }
        let mut expanded = Vec::with_capacity(forms.len());
        self.flatten_body(forms, span, &mut expanded)?;
        for (form, _) in &expanded {
            if let Some(name) = defined_name(form) {
                let scope = self.scopes.last_mut().map(|s| &mut s.names);
                if let Some(names) = scope {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
        self.sequence(&expanded, span)
    }

    fn flatten_body(
        &mut self,
        forms: &[(Value, Span)],
        span: Span,
        out: &mut Vec<(Value, Span)>,
    ) -> EvalResult<()> {
        for (form, form_span) in forms {
            let (form, form_span) = self.expand_head(form.clone(), form_span.or(span))?;
            let is_begin = matches!(&form, Value::Pair(p)
                if matches!(p.car, Value::Symbol(s) if s == sym::BEGIN && !self.is_local(s)));
            if is_begin {
                let inner = tail_items(&form, form_span)?;
                self.flatten_body(&inner, form_span, out)?;
            } else {
                out.push((form, form_span));
            }
        }
        Ok(())
    }

    fn let_form(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
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

    fn scoped_let(
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
    fn let_star(
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
                let value = match self.lambda_form(init) {
                    Some((params, params_span, lambda_body)) => Node::Lambda(self.lambda(
                        Some(*name),
                        &params,
                        params_span.or(*init_span),
                        &lambda_body,
                        *init_span,
                    )?),
                    None => self.analyze(init, *init_span)?,
                };
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
    fn named_let(
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
        let mut inits = Vec::with_capacity(bindings.len());
        for (_, init, init_span) in &bindings {
            inits.push(self.analyze(init, *init_span)?);
        }
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

    fn cond(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
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

    fn try_form(&mut self, args: &[(Value, Span)], span: Span) -> EvalResult<Node> {
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

/// The symbol a `(define name ...)` or `(define (name ...) ...)` form defines.
fn defined_name(form: &Value) -> Option<Symbol> {
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
fn parse_params(params: &Value, span: Span) -> EvalResult<(Vec<Symbol>, bool)> {
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
fn parse_bindings(
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

/// The elements of a proper list with their spans.
pub fn proper_items(list: &Value, span: Span) -> EvalResult<Vec<(Value, Span)>> {
    let mut iter = list.iter();
    let items: Vec<(Value, Span)> = iter.by_ref().map(|(v, s)| (v.clone(), s)).collect();
    match iter.rest() {
        Value::Nil => Ok(items),
        other => Err(syntax(
            format!(
                "expected a proper list, found one ending in . {}",
                other.short()
            ),
            span,
        )),
    }
}

/// The arguments of a form (its elements after the head).
fn tail_items(form: &Value, span: Span) -> EvalResult<Vec<(Value, Span)>> {
    match form {
        Value::Pair(pair) => proper_items(&pair.cdr, span),
        _ => Ok(Vec::new()),
    }
}

fn expect_count(name: &str, args: &[(Value, Span)], count: usize, span: Span) -> EvalResult<()> {
    if args.len() == count {
        Ok(())
    } else {
        Err(syntax(
            format!(
                "{name} takes {count} form{}, got {}",
                if count == 1 { "" } else { "s" },
                args.len()
            ),
            span,
        ))
    }
}

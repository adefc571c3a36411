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
use super::node::Node;
use super::primitive::Primitive;
use super::procedure::{Builtin, Procedure};
use super::quasi;
use super::symbol::{Symbol, sym};
use super::value::Value;
use crate::reader::Span;

mod binding;
mod control;
mod special_forms;

use binding::defined_name;
pub use special_forms::SPECIAL_FORMS;

/// The deepest nesting of forms analysis accepts.
const MAX_ANALYSIS_DEPTH: usize = 20_000;

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
    matches!(
        name,
        sym::QUOTE
            | sym::QUASIQUOTE
            | sym::UNQUOTE
            | sym::UNQUOTE_SPLICING
            | sym::DEFINE
            | sym::SET
            | sym::LAMBDA
            | sym::FN
            | sym::LET
            | sym::LET_STAR
            | sym::LETREC
            | sym::IF
            | sym::COND
            | sym::WHEN
            | sym::UNLESS
            | sym::AND
            | sym::OR
            | sym::BEGIN
            | sym::WHILE
            | sym::DEFMACRO
            | sym::TRY
            | sym::TIME
            | sym::TENSOR_LITERAL
    )
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
        let span = span.or(head_span(form)).or(self.fallback);
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
                if let Value::Symbol(head) = pair.car
                    && !self.is_local(head)
                {
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
        let args = match self.primitive_call(&callee, args, span) {
            Ok(node) => return Ok(node),
            Err(args) => args,
        };
        Ok(Node::Call {
            callee: Box::new(callee),
            args: args.into(),
            span,
        })
    }

    /// A call of two arguments to a global bound to a built-in with an
    /// inline path (`primitive.rs`); otherwise the arguments back.
    fn primitive_call(
        &self,
        callee: &Node,
        args: Vec<Node>,
        span: Span,
    ) -> Result<Node, Vec<Node>> {
        let Node::Global { name, .. } = callee else {
            return Err(args);
        };
        let Some(Value::Procedure(procedure)) = self.interp.global_ref(*name) else {
            return Err(args);
        };
        let Procedure::Builtin(builtin) = &**procedure else {
            return Err(args);
        };
        let Some(primitive) = Primitive::named(builtin.name) else {
            return Err(args);
        };
        let builtin: &'static Builtin = builtin;
        let args: Box<[Node; 2]> = match args.try_into() {
            Ok(pair) => Box::new(pair),
            Err(args) => return Err(args),
        };
        let leaves = args.iter().all(|arg| {
            matches!(
                arg,
                Node::Const(_) | Node::Local { .. } | Node::Global { .. }
            )
        });
        Ok(Node::Primitive {
            primitive,
            builtin,
            name: *name,
            args,
            leaves,
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
                Ok(quasi::into_node(template, span))
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
                if let Some(names) = scope
                    && !names.contains(&name)
                {
                    names.push(name);
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
}

/// The elements of a proper list with their spans.
pub fn proper_items(list: &Value, span: Span) -> EvalResult<Vec<(Value, Span)>> {
    let mut iter = list.iter();
    let items: Vec<(Value, Span)> = iter
        .by_ref()
        .map(|(v, s)| (v.clone(), s.or(head_span(v))))
        .collect();
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

/// Where a list form's head was read: the place of a form that a macro moved
/// into new list cells (a body spliced by `,@body`), whose old cell held
/// the span of the whole form. Nearer the mistake than the macro call.
fn head_span(form: &Value) -> Span {
    match form {
        Value::Pair(pair) => pair.span,
        _ => Span::NONE,
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

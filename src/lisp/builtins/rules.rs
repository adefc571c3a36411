//! Functions with their own derivative rules for tensor code (`defvjp`,
//! `defjvp`, SPEC sections 4 and 7), made by `custom-vjp` and
//! `custom-jvp`:
//!
//! - outside a trace the function is its body;
//! - inside a traced function a call records one `TOp::Custom` node
//!   (`ir::custom`): the body's value on the arguments with
//!   their gradients stopped, the arguments, and the rule traced on
//!   placeholders (a pullback on a placeholder cotangent, a pushforward on
//!   placeholder tangents). The sweeps instantiate the rule with the real
//!   cotangent or tangents; the other mode is the rule's transpose.
//!
//! Arguments that are numbers or tensors get their derivatives from the
//! rule; any other argument (a list, a function, a symbol) is passed as it
//! is, and derivatives through traced values inside it follow the body.
//! A function may return one number or tensor, or a list of them.

use super::custom::DepthGuard;
use super::{builtin, with_options};
use crate::ad::custom_sweep::{self as custom, Traced as TracedCall};
use crate::ir::math::functions::MAX_RULE_DEPTH;
use crate::ir::shape::show;
use crate::ir::{Shape, TOp};
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, NativeFn, Procedure};
use crate::lisp::trace::{TraceRef, node_of, traced};
use crate::lisp::value::Value;
use egg::Id;
use std::cell::Cell;
use std::rc::Rc;

/// The rules a function carries (at least one).
struct Rule {
    /// `(lambda (args...) (lambda (g) cotangents))`, or `(lambda (g y) ..)`
    /// to read the function's value `y` too.
    pullback: Option<Value>,
    /// `(lambda (args... tangents...) tangent-out)`.
    pushforward: Option<Value>,
}

impl Rule {
    fn form(&self) -> &'static str {
        match self.pullback {
            Some(_) => "defvjp",
            None => "defjvp",
        }
    }
}

/// A function with its own derivative rule.
struct RuleFunction {
    name: String,
    /// A function of the arguments.
    body: Value,
    rule: Rule,
    /// Rules being traced for this function: a rule may call the function
    /// itself, which traces the rule again; past `MAX_RULE_DEPTH` a call
    /// is its body.
    depth: Cell<usize>,
}

fn is_numeric(value: &Value) -> bool {
    matches!(
        value,
        Value::Int(_) | Value::Float(_) | Value::Tensor(_) | Value::TensorF32(_) | Value::Traced(_)
    )
}

/// A function's result: its numbers and tensors, and whether they came
/// as a list.
struct Results {
    nodes: Vec<Id>,
    listed: bool,
}

impl RuleFunction {
    fn call(&self, interp: &mut Interp, args: &[Value]) -> EvalResult<Value> {
        // A complex argument would be differentiated through the body, the
        // rule never called: refuse it rather than ignore the rule.
        if interp.numeric.trace.is_some()
            && args
                .iter()
                .any(|a| matches!(a, Value::Complex(z) if crate::lisp::trace::ops::involves_traced(&z.re) || crate::lisp::trace::ops::involves_traced(&z.im)))
        {
            return Err(EvalError::type_error(format!(
                "{} ({}): custom derivative rules take real arguments; pass the real and imaginary parts as two arguments",
                self.name,
                self.rule.form()
            )));
        }
        let any_traced = args.iter().any(|a| matches!(a, Value::Traced(_)));
        let trace = match &interp.numeric.trace {
            Some(trace) if any_traced && self.depth.get() < MAX_RULE_DEPTH => Rc::clone(trace),
            _ => return interp.apply(&self.body, args.to_vec()),
        };
        let numeric: Vec<usize> = (0..args.len()).filter(|&k| is_numeric(&args[k])).collect();
        let xs: Vec<Id> = numeric
            .iter()
            .map(|&k| node_of(&trace, &args[k]))
            .collect::<EvalResult<_>>()?;
        // The value, from the arguments with their gradients stopped.
        let mut stopped = args.to_vec();
        for (&k, &x) in numeric.iter().zip(&xs) {
            let id = add(&trace, TOp::StopGradient, &[x])?;
            stopped[k] = traced(&trace, id);
        }
        let value = interp
            .apply(&self.body, stopped)
            .map_err(|e| self.context(e, "its body"))?;
        let results = self.results(&trace, &value, "the body")?;
        let shapes: Vec<Shape> = {
            let t = trace.borrow();
            results
                .nodes
                .iter()
                .map(|&id| t.graph.shape(id).clone())
                .collect()
        };
        let packed = pack(&trace, &results.nodes)?;
        let (cotangent, output, tangents) = {
            let mut t = trace.borrow_mut();
            let shape = t.graph.shape(packed).clone();
            let dtype = t.graph.dtype(packed);
            let cotangent = t.graph.placeholder(&shape, dtype);
            let output = t.graph.placeholder(&shape, dtype);
            let tangents: Vec<Id> = xs
                .iter()
                .map(|&x| {
                    let shape = t.graph.shape(x).clone();
                    let dtype = t.graph.dtype(x);
                    t.graph.placeholder(&shape, dtype)
                })
                .collect();
            (cotangent, output, tangents)
        };
        let (pulled, pushed, transpose) = {
            let _guard = DepthGuard {
                cell: &self.depth,
                saved: self.depth.get(),
            };
            self.depth.set(self.depth.get() + 1);
            // Only the rules a sweep of the requests under way may use: a
            // mode's own rule, or the other one to transpose.
            let modes = trace.borrow().modes;
            let (has_pullback, has_pushforward) = (
                self.rule.pullback.is_some(),
                self.rule.pushforward.is_some(),
            );
            let want_pullback = modes.reverse || (modes.forward && !has_pushforward);
            let want_pushforward = modes.forward || (modes.reverse && !has_pullback);
            let pulled = match &self.rule.pullback {
                Some(maker) if want_pullback => {
                    let g = unpack(&trace, cotangent, &shapes, results.listed)?;
                    let y = unpack(&trace, output, &shapes, results.listed)?;
                    Some(self.pullback(interp, &trace, maker, args, &numeric, &xs, g, y)?)
                }
                _ => None,
            };
            let pushed = match &self.rule.pushforward {
                Some(rule) if want_pushforward => {
                    let mut operands = args.to_vec();
                    let mut tangent_values = vec![Value::Nil; args.len()];
                    for (&k, &t) in numeric.iter().zip(&tangents) {
                        tangent_values[k] = traced(&trace, t);
                    }
                    operands.extend(tangent_values);
                    if reads_value(rule, 2 * args.len() + 1) {
                        operands.push(unpack(&trace, output, &shapes, results.listed)?);
                    }
                    let out = interp
                        .apply(rule, operands)
                        .map_err(|e| self.context(e, "its pushforward"))?;
                    let out = self.results(&trace, &out, "the pushforward")?;
                    self.check_tangents(&trace, &out, &shapes)?;
                    Some(pack(&trace, &out.nodes)?)
                }
                _ => None,
            };
            // The other mode from the rule traced, if a sweep may need it.
            let transpose =
                (modes.reverse && pulled.is_none()) || (modes.forward && pushed.is_none());
            (pulled, pushed, transpose)
        };
        let id = {
            let mut t = trace.borrow_mut();
            custom::add_call(
                &mut t.graph,
                TracedCall {
                    name: &self.name,
                    value: packed,
                    args: &xs,
                    cotangent,
                    output,
                    tangents: &tangents,
                    pulled: pulled.as_deref(),
                    pushed,
                    transpose,
                },
            )
            .map_err(|e| EvalError::shape(format!("{}: {}", self.name, e.0)))?
        };
        unpack(&trace, id, &shapes, results.listed)
    }

    /// The pullback's cotangents, one per numeric argument (zeros where
    /// it gave `nil`).
    #[allow(clippy::too_many_arguments)]
    fn pullback(
        &self,
        interp: &mut Interp,
        trace: &TraceRef,
        maker: &Value,
        args: &[Value],
        numeric: &[usize],
        xs: &[Id],
        g: Value,
        y: Value,
    ) -> EvalResult<Vec<Id>> {
        let pullback = interp
            .apply(maker, args.to_vec())
            .map_err(|e| self.context(e, "its pullback"))?;
        let reads_value = match &pullback {
            Value::Procedure(_) => reads_value(&pullback, 2),
            other => {
                return Err(EvalError::type_error(format!(
                    "{}: the pullback must be a function of the cotangent, got {}",
                    self.name,
                    other.short()
                )));
            }
        };
        let operands = if reads_value { vec![g, y] } else { vec![g] };
        let out = interp
            .apply(&pullback, operands)
            .map_err(|e| self.context(e, "its pullback"))?;
        let entries = match out.is_list() {
            true => out.list_to_vec()?,
            false => {
                return Err(EvalError::type_error(format!(
                    "{}: the pullback must return a list of cotangents, one per argument, got {}",
                    self.name,
                    describe(&out)
                )));
            }
        };
        if entries.len() != args.len() {
            return Err(EvalError::new(
                EvalErrorKind::Arity,
                format!(
                    "{}: the pullback returned {} cotangent{} for {} argument{}",
                    self.name,
                    entries.len(),
                    if entries.len() == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        let mut pulled = Vec::with_capacity(xs.len());
        for (&k, &x) in numeric.iter().zip(xs) {
            let shape = trace.borrow().graph.shape(x).clone();
            let node = match &entries[k] {
                Value::Nil | Value::Bool(false) => trace.borrow_mut().graph.full(0.0, &shape),
                entry if is_numeric(entry) => node_of(trace, entry)?,
                other => {
                    return Err(EvalError::type_error(format!(
                        "{}: the pullback's cotangent for argument {} must be a number, a tensor or nil, got {}",
                        self.name,
                        k + 1,
                        other.short()
                    )));
                }
            };
            let got = trace.borrow().graph.shape(node).clone();
            if got != shape {
                return Err(EvalError::shape(format!(
                    "{}: the pullback's cotangent for argument {} has shape {}, the argument has shape {}",
                    self.name,
                    k + 1,
                    show(&got),
                    show(&shape)
                )));
            }
            pulled.push(node);
        }
        Ok(pulled)
    }

    /// The numbers and tensors of a body's or rule's result.
    fn results(&self, trace: &TraceRef, value: &Value, what: &str) -> EvalResult<Results> {
        let (items, listed) = match value {
            v if is_numeric(v) => (vec![v.clone()], false),
            v if v.is_list() && !matches!(v, Value::Nil) => (v.list_to_vec()?, true),
            other => {
                return Err(EvalError::type_error(format!(
                    "{}: {what} must return a number, a tensor or a list of them, got {}",
                    self.name,
                    other.short()
                )));
            }
        };
        let nodes = items
            .iter()
            .map(|item| match item {
                v if is_numeric(v) => node_of(trace, v),
                other => Err(EvalError::type_error(format!(
                    "{}: {what} must return numbers or tensors, got {}",
                    self.name,
                    other.short()
                ))),
            })
            .collect::<EvalResult<_>>()?;
        Ok(Results { nodes, listed })
    }

    /// A pushforward gives one tangent per result, of its shape.
    fn check_tangents(&self, trace: &TraceRef, out: &Results, shapes: &[Shape]) -> EvalResult<()> {
        if out.nodes.len() != shapes.len() {
            return Err(EvalError::new(
                EvalErrorKind::Arity,
                format!(
                    "{}: the pushforward returned {} tangent{} for {} result{}",
                    self.name,
                    out.nodes.len(),
                    if out.nodes.len() == 1 { "" } else { "s" },
                    shapes.len(),
                    if shapes.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        let t = trace.borrow();
        for (k, (&node, shape)) in out.nodes.iter().zip(shapes).enumerate() {
            let got = t.graph.shape(node);
            if got != shape {
                return Err(EvalError::shape(format!(
                    "{}: the pushforward's tangent of result {} has shape {}, the result has shape {}",
                    self.name,
                    k + 1,
                    show(got),
                    show(shape)
                )));
            }
        }
        Ok(())
    }

    fn context(&self, mut error: EvalError, what: &str) -> EvalError {
        if !error.is_uncatchable() {
            error.message = format!(
                "{} ({}): {what}: {}",
                self.name,
                self.rule.form(),
                error.message
            );
        }
        error
    }
}

/// Whether a rule takes the function's value as its last argument: a
/// closure with a rest parameter, or with `with_value` parameters.
fn reads_value(rule: &Value, with_value: usize) -> bool {
    match rule {
        Value::Procedure(p) => match &**p {
            Procedure::Closure(c) => c.def.rest || c.def.params.len() == with_value,
            _ => false,
        },
        _ => false,
    }
}

/// A value for a message, without computing a traced one.
fn describe(value: &Value) -> String {
    match value {
        Value::Traced(t) if t.shape.is_empty() => "a number".to_string(),
        Value::Traced(t) => format!("a tensor of shape {}", show(&t.shape)),
        other => other.short(),
    }
}

fn add(trace: &TraceRef, op: TOp, children: &[Id]) -> EvalResult<Id> {
    trace
        .borrow_mut()
        .graph
        .add(op, children)
        .map_err(|e| EvalError::shape(e.0))
}

/// Several results as one vector (each flattened, in order); one result
/// as it is.
fn pack(trace: &TraceRef, nodes: &[Id]) -> EvalResult<Id> {
    if let [one] = nodes {
        return Ok(*one);
    }
    let mut t = trace.borrow_mut();
    let flat: Vec<Id> = nodes
        .iter()
        .map(|&id| {
            let n: usize = t.graph.shape(id).iter().product();
            t.graph.reshape(id, &[n])
        })
        .collect();
    if flat.is_empty() {
        return Err(EvalError::type_error(
            "a function with a derivative rule must return at least one number or tensor",
        ));
    }
    t.graph
        .add(TOp::Concat(0), &flat)
        .map_err(|e| EvalError::shape(e.0))
}

/// The values a packed node holds, as the body returned them.
fn unpack(trace: &TraceRef, packed: Id, shapes: &[Shape], listed: bool) -> EvalResult<Value> {
    if !listed {
        return Ok(traced(trace, packed));
    }
    if let [_] = shapes {
        return Ok(Value::list([traced(trace, packed)]));
    }
    let mut items = Vec::with_capacity(shapes.len());
    let mut offset = 0;
    for shape in shapes {
        let n: usize = shape.iter().product();
        let id = {
            let mut t = trace.borrow_mut();
            let part = t.graph.add_valid(
                TOp::Slice {
                    axis: 0,
                    start: offset,
                    end: offset + n,
                },
                &[packed],
            );
            t.graph.reshape(part, shape)
        };
        offset += n;
        items.push(traced(trace, id));
    }
    Ok(Value::list(items))
}

fn make(args: &Args, form: &str) -> EvalResult<Value> {
    let (body, rule) = (&args[0], &args[1]);
    for (what, f) in [("body", body), ("rule", rule)] {
        if !matches!(f, Value::Procedure(_)) {
            return Err(EvalError::type_error(format!(
                "{form}: the {what} must be a function, got {}",
                f.short()
            )));
        }
    }
    let name = match args.get(2) {
        Some(Value::Symbol(s)) => s.name().to_string(),
        Some(Value::Str(s)) => s.to_string(),
        None | Some(Value::Nil) => match body {
            Value::Procedure(p) => p.name(),
            _ => "lambda".to_string(),
        },
        Some(other) => {
            return Err(EvalError::type_error(format!(
                "{form}: the name must be a symbol or string, got {}",
                other.short()
            )));
        }
    };
    let rule = match form {
        "custom-vjp" => {
            let pushforward = match args.option("jvp") {
                None | Some(Value::Nil) | Some(Value::Bool(false)) => None,
                Some(f @ Value::Procedure(_)) => Some(f.clone()),
                Some(other) => {
                    return Err(EvalError::type_error(format!(
                        "custom-vjp: :jvp must be a pushforward function, got {}",
                        other.short()
                    )));
                }
            };
            Rule {
                pullback: Some(rule.clone()),
                pushforward,
            }
        }
        _ => Rule {
            pullback: None,
            pushforward: Some(rule.clone()),
        },
    };
    let doc = format!(
        "A function with its own {} rule (custom derivative).",
        rule.form()
    );
    let function = RuleFunction {
        name: name.clone(),
        body: body.clone(),
        rule,
        depth: Cell::new(0),
    };
    Ok(Value::Procedure(Rc::new(Procedure::Native(NativeFn {
        name,
        doc: Some(doc),
        func: Box::new(move |interp, args| function.call(interp, args)),
    }))))
}

fn custom_vjp(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    make(args, "custom-vjp")
}

fn custom_jvp(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    make(args, "custom-jvp")
}

/// `(opaque f args...)`: f run on the values of args outside any trace;
/// inside a traced function its numbers and tensors come back as inputs
/// of the traced program (constants to derivatives).
fn opaque(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (f, rest) = (&args[0], &args[1..]);
    let Some(trace) = interp.numeric.trace.clone() else {
        return interp.apply(f, rest.to_vec());
    };
    if trace.borrow().loop_body {
        return Err(EvalError::type_error(
            "opaque runs its function on values, which a loop step (compiled once for every step) does not have: call it outside the loop",
        ));
    }
    let values: Vec<Value> = rest.iter().map(concrete_tree).collect::<EvalResult<_>>()?;
    let saved = interp.numeric.trace.take();
    let result = interp.apply(f, values);
    interp.numeric.trace = saved;
    as_inputs(&trace, &result?)
}

/// A value with its traced leaves (in lists too) replaced by their numbers.
fn concrete_tree(value: &Value) -> EvalResult<Value> {
    match value {
        Value::Traced(t) => t.concrete_value(),
        v if v.is_list() && !matches!(v, Value::Nil) => Ok(Value::list(
            v.list_to_vec()?
                .iter()
                .map(concrete_tree)
                .collect::<EvalResult<Vec<_>>>()?,
        )),
        other => Ok(other.clone()),
    }
}

/// A value with its numbers and tensors (in lists too) made inputs of
/// `trace`.
fn as_inputs(trace: &TraceRef, value: &Value) -> EvalResult<Value> {
    match value {
        Value::Float(x) => {
            let id = trace
                .borrow_mut()
                .add_input(crate::backends::cpu::Buf::Scalar(*x));
            Ok(traced(trace, id))
        }
        Value::Tensor(_) | Value::TensorF32(_) => {
            let id = trace.borrow_mut().add_value_input(value)?;
            Ok(traced(trace, id))
        }
        v if v.is_list() && !matches!(v, Value::Nil) => Ok(Value::list(
            v.list_to_vec()?
                .iter()
                .map(|item| as_inputs(trace, item))
                .collect::<EvalResult<Vec<_>>>()?,
        )),
        other => Ok(other.clone()),
    }
}

#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("custom-vjp", "(custom-vjp body pullback [name] :jvp pushforward)", "The function body with a reverse rule: (pullback args...) returns a function of the result's cotangent g (or of g and the result y) giving the list of the arguments' cotangents (nil: zero). Forward mode uses :jvp, a pushforward as for custom-jvp, if given, and transposes the pullback otherwise. defvjp is the usual spelling.", 2, Some(3), custom_vjp), &["jvp"]),
    builtin("opaque", "(opaque f args...)", "Calls f on the values of args outside any trace: inside a differentiated or compiled function the arguments' values are computed now, f may branch and loop on them freely (an optimizer, a line search), and the numbers and tensors it returns (in lists too) enter the traced program as inputs, constants to derivatives (give them a rule with defvjp). Outside a trace, (f args...). Inside a loop step it is an error.", 1, None, opaque),
    builtin("custom-jvp", "(custom-jvp body pushforward [name])", "The function body with a forward rule: (pushforward args... tangents...) returns the result's tangent. Reverse mode transposes it when it is linear in the tangents. defjvp is the usual spelling.", 2, Some(3), custom_jvp),
];

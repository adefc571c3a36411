//! The evaluator: runs [`Node`] trees.
//!
//! Tail positions (`if` branches, the last form of a body, `cond` clauses,
//! `let` bodies, calls to closures) loop instead of recursing, so a
//! tail-recursive loop runs in constant Rust stack. Other calls recurse; the
//! recursion depth is counted against a limit and the stack grows on demand
//! (`stacker`), so deep recursion ends in an error, never a stack overflow.

use super::env::{Env, Frame, Slots};
use super::error::{EvalError, EvalErrorKind, EvalResult};
use super::interp::Interp;
use super::node::{ClauseAction, Node};
use super::primitive::{Number, Primitive};
use super::procedure::{Args, Builtin, Closure, Procedure};
use super::quasi;
use super::symbol::Symbol;
use super::tensor::stack_elements;
use super::value::Value;
use crate::reader::Span;
use smallvec::SmallVec;
use std::rc::Rc;
use std::time::Instant;

/// Stack kept free before growing (bytes).
const RED_ZONE: usize = 128 * 1024;
/// Size of each new stack segment (bytes).
const STACK_SEGMENT: usize = 4 * 1024 * 1024;
/// Primitive calls nested in one another that run without a stack check
/// of their own (a few hundred bytes each, far inside `RED_ZONE`).
const INLINE_NESTING: u32 = 32;

/// What a call's head names, found without evaluating it.
enum Callee {
    /// A built-in.
    Builtin(&'static Builtin),
    /// A closure.
    Closure(Closure),
    /// Anything else: the head is evaluated as an expression.
    Other,
}

/// What evaluating a node in tail position produced.
enum Step {
    /// A finished value.
    Value(Value),
    /// A call to a closure, left for the caller's loop to run, with the
    /// frame holding its arguments (not yet checked against its
    /// parameters).
    TailCall(Closure, Rc<Frame>, Span),
}

impl Interp {
    /// Evaluates `node` in `env`. Constants and local variables are read
    /// here, inlined into the caller; everything else is `eval_compound`.
    #[inline(always)]
    pub fn eval(&mut self, node: &Node, env: &Env) -> EvalResult<Value> {
        match node {
            Node::Const(value) => Ok(copied(value)),
            Node::Local {
                depth,
                index,
                name,
                span,
            } => lookup_local(env, *depth, *index, *name, *span),
            Node::Primitive { leaves: true, .. } => self.eval_leaf_primitive(node, env),
            _ => self.eval_compound(node, env),
        }
    }

    /// Evaluates a primitive call whose arguments are constants or
    /// variables (`(< n 2)`, `(+ i 1)`, `(< i K)`): reading them cannot
    /// recurse, so
    /// it needs neither the depth count nor the stack check.
    #[inline(never)]
    fn eval_leaf_primitive(&mut self, node: &Node, env: &Env) -> EvalResult<Value> {
        let Node::Primitive {
            primitive,
            builtin,
            name,
            args,
            ..
        } = node
        else {
            return self.eval_compound(node, env);
        };
        if self.inline_primitive(*name, builtin)
            && let Some(a) = leaf_number(&args[0], env, &self.globals)
            && let Some(b) = leaf_number(&args[1], env, &self.globals)
            && let Some(value) = primitive.on_numbers(a, b)
        {
            return Ok(value);
        }
        // Anything but two plain numbers (a tensor, an undefined
        // variable, a rebound head) takes the general path.
        self.eval_compound(node, env)
    }

    /// Evaluates a node that is not a constant or a local variable.
    /// A primitive call nested in another runs inline (no depth count, no
    /// stack check) up to `INLINE_NESTING` levels; every other node counts
    /// against the recursion limit and grows the stack if needed.
    #[inline(never)]
    fn eval_compound(&mut self, node: &Node, env: &Env) -> EvalResult<Value> {
        match node {
            Node::Global { name, span } => return self.lookup_global(*name, *span),
            Node::Primitive {
                primitive,
                builtin,
                name,
                args,
                span,
                ..
            } if self.inline_nesting < INLINE_NESTING && self.inline_primitive(*name, builtin) => {
                self.inline_nesting += 1;
                let result = self.eval_primitive(*primitive, builtin, args, *span, env);
                self.inline_nesting -= 1;
                return result;
            }
            _ => {}
        }
        self.enter()?;
        let nesting = std::mem::replace(&mut self.inline_nesting, 0);
        let result = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            // A call of a closure runs it directly (the common non-tail
            // call: an argument of another call).
            if let Node::Call { callee, args, span } = node
                && let Callee::Closure(closure) = self.callee_of(callee, env)
            {
                let values = self.closure_arguments(&closure, args, env)?;
                return self.run_closure(closure, values, *span);
            }
            match self.eval_step(node, env)? {
                Step::Value(value) => Ok(value),
                Step::TailCall(closure, args, span) => self.run_closure(closure, args, span),
            }
        });
        self.inline_nesting = nesting;
        self.leave();
        result
    }

    /// Calls `procedure` (any callable value) with `args`.
    pub fn apply(&mut self, procedure: &Value, args: Vec<Value>) -> EvalResult<Value> {
        let span = self.call_span;
        match procedure {
            Value::Procedure(proc) => match &**proc {
                Procedure::Closure(closure) => self.apply_closure(closure, args, span),
                Procedure::Builtin(builtin) => self.call_builtin(builtin, &args, span),
                Procedure::Host(host) => {
                    crate::lisp::autodiff::replay::note_host_call(self);
                    (host.func)(&args).map_err(|e| e.at(span))
                }
                Procedure::Native(native) => {
                    (native.func)(self, &args).map_err(|e| e.called_from(span))
                }
            },
            other => Err(not_callable(other).at(span)),
        }
    }

    /// Calls a closure (also used to run macro expanders).
    pub fn apply_closure(
        &mut self,
        closure: &Closure,
        args: Vec<Value>,
        span: Span,
    ) -> EvalResult<Value> {
        self.enter()?;
        let result = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            let frame = self.frame_of(closure, args);
            self.run_closure(closure.clone(), frame, span)
        });
        self.leave();
        result
    }

    fn enter(&mut self) -> EvalResult<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            self.depth -= 1;
            return Err(EvalError::new(
                EvalErrorKind::Recursion,
                format!(
                    "recursion deeper than {} nested calls (is a base case missing?)",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Runs a closure call and every tail call that follows from it.
    /// `frame` holds the arguments; the frames of finished calls go back
    /// to the pool.
    fn run_closure(
        &mut self,
        mut closure: Closure,
        mut frame: Rc<Frame>,
        mut span: Span,
    ) -> EvalResult<Value> {
        self.closure_span = span;
        // Tail calls replace `span`; the first call site is kept so that an
        // error still names where the chain was entered (say, the user's
        // call of a library function that loops by tail calls).
        let entry = span;
        loop {
            self.check_interrupt().map_err(|e| e.at(span))?;
            let env = bind_arguments(&closure, frame).map_err(|e| e.at(span))?;
            let step = self.eval_step(&closure.def.body, &env);
            self.frame_pool.give_back(env);
            match step {
                Ok(Step::Value(value)) => return Ok(value),
                Ok(Step::TailCall(next, next_frame, next_span)) => {
                    closure = next;
                    frame = next_frame;
                    span = next_span;
                }
                Err(error) => {
                    let error = error.called_from(span);
                    return Err(if entry == span {
                        error
                    } else {
                        error.called_from(entry)
                    });
                }
            }
        }
    }

    /// A call frame for `closure` holding `args`.
    fn frame_of(&mut self, closure: &Closure, args: impl IntoIterator<Item = Value>) -> Rc<Frame> {
        let frame = Frame::for_call(
            &mut self.frame_pool,
            closure.def.frame_size as usize,
            &closure.env,
        );
        frame.slots.borrow_mut().extend(args);
        frame
    }

    /// The value of a bracket form `[a b c]` whose elements (numbers,
    /// tensors or traced values) are `values`.
    pub(crate) fn tensor_literal(&mut self, values: &[Value], span: Span) -> EvalResult<Value> {
        if let Some(trace) = &self.numeric.trace
            && values.iter().any(crate::lisp::trace::ops::involves_traced)
        {
            let args = crate::lisp::procedure::Args {
                values,
                options: Vec::new(),
            };
            let trace = trace.clone();
            if let Some(result) = crate::lisp::trace::ops::call(&trace, "tensor", &args) {
                return result.map_err(|e| e.at(span));
            }
        }
        // f32 elements (with numbers) make an f32 tensor.
        let f32_items = values.iter().any(|v| matches!(v, Value::TensorF32(_)));
        let widened: Vec<Value>;
        let items = if f32_items {
            widened = values
                .iter()
                .map(|v| crate::lisp::builtins::dtype::converted(v, crate::dtype::DType::F64))
                .collect();
            &widened
        } else {
            values
        };
        let stacked = stack_elements(items)
            .map(Value::tensor)
            .map_err(|e| e.at(span))?;
        let f32_result = f32_items && !values.iter().any(|v| matches!(v, Value::Tensor(_)));
        Ok(match f32_result {
            true => crate::lisp::builtins::dtype::converted(&stacked, crate::dtype::DType::F32),
            false => stacked,
        })
    }

    /// Calls a built-in: checks arity, splits keyword options, runs it.
    pub(crate) fn call_builtin(
        &mut self,
        builtin: &Builtin,
        args: &[Value],
        span: Span,
    ) -> EvalResult<Value> {
        let (positional, options) = split_options(builtin, args).map_err(|e| e.at(span))?;
        check_arity(builtin, positional.len()).map_err(|e| e.at(span))?;
        if crate::lisp::complex::involves(builtin.name, args)
            && !crate::lisp::complex::handles(builtin.name)
            && let Some(result) = crate::lisp::complex::call(self, builtin, args, span)
        {
            return result.map_err(|mut error| {
                if !error.span.is_known() && !error.message.starts_with(builtin.name) {
                    error.message = format!("{}: {}", builtin.name, error.message);
                }
                error.at(span)
            });
        }
        let saved = std::mem::replace(&mut self.call_span, span);
        let args = Args {
            values: positional,
            options,
        };
        crate::lisp::autodiff::replay::note_call(self, builtin);
        // Without a trace, only the arguments themselves are looked at (a
        // traced value escaped into a list is reported where it is used):
        // walking every list argument made list code quadratic.
        let involves_traced = match self.numeric.trace {
            Some(_) => args.iter().any(crate::lisp::trace::ops::involves_traced),
            None => args.iter().any(|a| matches!(a, Value::Traced(_))),
        };
        if involves_traced && self.numeric.trace.is_none() {
            self.call_span = saved;
            return Err(EvalError::type_error(format!(
                "{}: a traced value escaped the function being differentiated (was it stored in a global?)",
                builtin.name
            ))
            .at(span));
        }
        let traced = involves_traced && self.numeric.trace.is_some();
        let concrete;
        let (args, traced) = if traced && crate::lisp::trace::ops::reads_values(builtin.name, &args)
        {
            concrete = match crate::lisp::trace::ops::concrete_args(args.values) {
                Ok(values) => values,
                Err(error) => {
                    self.call_span = saved;
                    return Err(error.at(span));
                }
            };
            let options = args.options;
            (
                Args {
                    values: &concrete,
                    options,
                },
                false,
            )
        } else {
            (args, traced)
        };
        let recorded = match &self.numeric.trace {
            Some(trace) if traced => {
                let before = trace.borrow().graph.len();
                let recorded = crate::lisp::trace::ops::call(&trace.clone(), builtin.name, &args);
                if self.numeric.debug_nans {
                    let mut t = trace.borrow_mut();
                    let after = t.graph.len();
                    t.sources.resize(after, None);
                    for source in &mut t.sources[before..after] {
                        source.get_or_insert((span, builtin.name));
                    }
                }
                recorded
            }
            _ => None,
        };
        let result = match recorded {
            Some(result) => result,
            None => self.call_typed(builtin, &args, traced).map_err(|mut error| {
                // Loops and checkpoints take traced values themselves; their
                // refusals explain themselves. An error with a place already
                // came from code this built-in ran (a function given to
                // `taylor`), not from the built-in refusing a traced value.
                let trace_aware = matches!(builtin.name, "scan" | "checkpoint" | "while-loop");
                if traced
                    && error.kind == EvalErrorKind::Type
                    && !trace_aware
                    && !error.span.is_known()
                {
                    error.message.push_str(&format!(
                        " ({} has no derivative: inside a differentiated or compiled function it receives traced values, so call it outside)",
                        builtin.name
                    ));
                }
                error
            }),
        };
        self.call_span = saved;
        let result = match result {
            Ok(value) if self.numeric.debug_nans && !traced => {
                crate::lisp::debug_nans::check_call(builtin.name, args.values, value)
                    .map_err(|e| e.at(span))
            }
            other => other,
        };
        result.map_err(|mut error| {
            let raised_by_program = error.kind == EvalErrorKind::User || error.is_uncatchable();
            // The built-in's name goes in front, unless the message already
            // starts with it ("cholesky needs square matrices").
            if !error.span.is_known()
                && !raised_by_program
                && !error.message.starts_with(builtin.name)
            {
                error.message = format!("{}: {}", builtin.name, error.message);
            }
            error.at(span)
        })
    }

    /// Calls `builtin`'s function, converting f32 arguments and results
    /// as `builtins::dtype::Conversion` says.
    /// A call on traced values records them with their types as they are.
    fn call_typed(&mut self, builtin: &Builtin, args: &Args, traced: bool) -> EvalResult<Value> {
        use crate::lisp::builtins::dtype::{Conversion, converted_checked, explicit_dtype};
        let explicit = explicit_dtype(builtin, args)?;
        if traced {
            return (builtin.func)(self, args);
        }
        let conversion = Conversion::of(self, builtin, args, explicit)?;
        if conversion.is_plain() {
            return (builtin.func)(self, args);
        }
        let result = match &conversion.widened {
            Some(values) => {
                let widened = Args {
                    values,
                    options: args.options.clone(),
                };
                (builtin.func)(self, &widened)
            }
            None => (builtin.func)(self, args),
        }?;
        match conversion.result {
            Some(dtype) => converted_checked(&result, dtype),
            None => Ok(result),
        }
    }

    fn lookup_global(&self, name: Symbol, span: Span) -> EvalResult<Value> {
        match self.global(name) {
            Some(value) => Ok(value),
            None => Err(
                EvalError::new(EvalErrorKind::Unbound, format!("unbound symbol: {name}")).at(span),
            ),
        }
    }

    /// Evaluates a node whose value is the result of the enclosing form:
    /// loops through tail positions and hands closure calls back.
    fn eval_step(&mut self, node: &Node, outer: &Env) -> EvalResult<Step> {
        let mut node = node;
        // A `let` or a handler in tail position makes a frame the rest of
        // the loop runs in; until then the caller's is only borrowed.
        let mut made: Option<Env> = None;
        // No interrupt check here: each pass of this loop moves to a
        // smaller node, and every loop that can run forever goes through
        // `run_closure` or `while`, which check.
        loop {
            let env = made.as_ref().unwrap_or(outer);
            match node {
                Node::Const(_) | Node::Local { .. } | Node::Global { .. } => {
                    return self.eval(node, env).map(Step::Value);
                }
                Node::If {
                    test,
                    then,
                    otherwise,
                } => {
                    // A comparison's boolean needs no drop (the common test).
                    let yes = match self.eval(test, env)? {
                        Value::Bool(yes) => yes,
                        other => truthy(&other)?,
                    };
                    node = if yes { then } else { otherwise };
                }
                Node::Seq(nodes) => {
                    let Some((last, init)) = nodes.split_last() else {
                        return Ok(Step::Value(Value::Nil));
                    };
                    for effect in init {
                        self.eval(effect, env)?;
                    }
                    node = last;
                }
                Node::Let {
                    size,
                    sequential,
                    inits,
                    body,
                } => {
                    made = Some(self.enter_let(*size, *sequential, inits, env)?);
                    node = body;
                }
                Node::And(nodes) | Node::Or(nodes) => {
                    let want = matches!(node, Node::Or(_));
                    let Some((last, init)) = nodes.split_last() else {
                        return Ok(Step::Value(Value::Bool(!want)));
                    };
                    for test in init {
                        let value = self.eval(test, env)?;
                        if truthy(&value)? == want {
                            return Ok(Step::Value(value));
                        }
                    }
                    node = last;
                }
                Node::Cond(clauses) => {
                    let mut chosen = None;
                    for clause in clauses.iter() {
                        let value = self.eval(&clause.test, env)?;
                        if truthy(&value)? {
                            chosen = Some((clause, value));
                            break;
                        }
                    }
                    let Some((clause, value)) = chosen else {
                        return Ok(Step::Value(Value::Nil));
                    };
                    match &clause.action {
                        ClauseAction::Value => return Ok(Step::Value(value)),
                        ClauseAction::Body(body) => node = body,
                        ClauseAction::Apply(f) => {
                            let f = self.eval(f, env)?;
                            return self.call_value(f, smallvec::smallvec![value], Span::NONE);
                        }
                    }
                }
                Node::Primitive {
                    primitive,
                    builtin,
                    name,
                    args,
                    span,
                    ..
                } => {
                    if self.inline_primitive(*name, builtin) {
                        return self
                            .eval_primitive(*primitive, builtin, args, *span, env)
                            .map(Step::Value);
                    }
                    // The head was rebound: an ordinary call.
                    let f = self.lookup_global(*name, *span)?;
                    let values =
                        smallvec::smallvec![self.eval(&args[0], env)?, self.eval(&args[1], env)?];
                    return self.call_value(f, values, *span);
                }
                Node::Call { callee, args, span } => {
                    match self.callee_of(callee, env) {
                        Callee::Builtin(builtin) => {
                            // The common case (arithmetic, list access): no
                            // allocation for the arguments, no procedure clone.
                            let mut values: Slots = SmallVec::with_capacity(args.len());
                            for arg in args.iter() {
                                values.push(self.eval(arg, env)?);
                            }
                            return self.call_builtin(builtin, &values, *span).map(Step::Value);
                        }
                        Callee::Closure(closure) => {
                            let values = self.closure_arguments(&closure, args, env)?;
                            return Ok(Step::TailCall(closure, values, *span));
                        }
                        Callee::Other => {}
                    }
                    let f = self.eval(callee, env)?;
                    let capacity = match &f {
                        Value::Procedure(p) => match &**p {
                            Procedure::Closure(c) => (c.def.frame_size as usize).max(args.len()),
                            _ => args.len(),
                        },
                        _ => args.len(),
                    };
                    let mut values: Slots = SmallVec::with_capacity(capacity);
                    for arg in args.iter() {
                        values.push(self.eval(arg, env)?);
                    }
                    return self.call_value(f, values, *span);
                }
                Node::Try {
                    body,
                    handler_size,
                    handler,
                } => match self.eval(body, env) {
                    Ok(value) => return Ok(Step::Value(value)),
                    Err(error) if error.is_uncatchable() => return Err(error),
                    Err(error) => {
                        let mut slots: Slots =
                            smallvec::smallvec![Value::Undefined; *handler_size as usize];
                        slots[0] = Value::string(error.into_message());
                        made = Some(Frame::new(slots, env));
                        node = handler;
                    }
                },
                _ => return self.eval_effect(node, env).map(Step::Value),
            }
        }
    }

    /// Whether a [`Node::Primitive`] naming `name` may take its inline
    /// path: the name is still bound to the built-in it was analysed
    /// with, and no NaN check wants every built-in result.
    #[inline]
    fn inline_primitive(&self, name: Symbol, builtin: &'static Builtin) -> bool {
        let bound = match self.global_ref(name) {
            Some(Value::Procedure(procedure)) => {
                matches!(&**procedure, Procedure::Builtin(b) if std::ptr::eq(*b, builtin))
            }
            _ => false,
        };
        bound && !self.numeric.debug_nans
    }

    /// Runs a primitive call: inline on two plain numbers, else the built-in.
    #[inline(always)]
    fn eval_primitive(
        &mut self,
        primitive: Primitive,
        builtin: &'static Builtin,
        args: &[Node; 2],
        span: Span,
        env: &Env,
    ) -> EvalResult<Value> {
        let a = self.eval(&args[0], env)?;
        let b = self.eval(&args[1], env)?;
        match primitive.apply(&a, &b) {
            Some(value) => {
                // Plain numbers own nothing: no drop to run.
                std::mem::forget(a);
                std::mem::forget(b);
                Ok(value)
            }
            None => self.call_builtin(builtin, &[a, b], span),
        }
    }

    /// The arguments of a call of `closure`, evaluated into the frame
    /// the call will run in. A closure named by a variable makes no
    /// procedure value (a loop's own function is stored as code).
    fn closure_arguments(
        &mut self,
        closure: &Closure,
        args: &[Node],
        env: &Env,
    ) -> EvalResult<Rc<Frame>> {
        let capacity = (closure.def.frame_size as usize).max(args.len());
        let frame = Frame::for_call(&mut self.frame_pool, capacity, &closure.env);
        for arg in args {
            let value = self.eval(arg, env)?;
            frame.slots.borrow_mut().push(value);
        }
        Ok(frame)
    }

    /// What a callee node names, looked at without evaluating it: a
    /// global bound to a built-in, or a variable holding a closure (read
    /// without making a procedure value).
    fn callee_of(&self, callee: &Node, env: &Env) -> Callee {
        let value = match callee {
            Node::Local { depth, index, .. } => {
                let Some(frame) = Frame::ancestor(env, *depth) else {
                    return Callee::Other;
                };
                let slots = frame.slots.borrow();
                return match slots.get(*index as usize) {
                    Some(Value::FrameClosure(def)) => Callee::Closure(Closure {
                        def: Rc::clone(def),
                        env: Some(Rc::clone(frame)),
                    }),
                    Some(Value::Procedure(procedure)) => match &**procedure {
                        Procedure::Closure(closure) => Callee::Closure(closure.clone()),
                        _ => Callee::Other,
                    },
                    _ => Callee::Other,
                };
            }
            Node::Global { name, .. } => self.global_ref(*name),
            _ => None,
        };
        match value {
            Some(Value::Procedure(procedure)) => match &**procedure {
                Procedure::Builtin(builtin) => Callee::Builtin(builtin),
                Procedure::Closure(closure) => Callee::Closure(closure.clone()),
                _ => Callee::Other,
            },
            _ => Callee::Other,
        }
    }

    /// Calls `f` from a tail position: closures go back to the caller's loop.
    fn call_value(&mut self, f: Value, args: Slots, span: Span) -> EvalResult<Step> {
        let Value::Procedure(proc) = &f else {
            return Err(not_callable(&f).at(span));
        };
        match &**proc {
            Procedure::Closure(closure) => {
                let frame = self.frame_of(closure, args);
                Ok(Step::TailCall(closure.clone(), frame, span))
            }
            Procedure::Builtin(builtin) => self.call_builtin(builtin, &args, span).map(Step::Value),
            Procedure::Host(host) => {
                crate::lisp::autodiff::replay::note_host_call(self);
                (host.func)(&args).map(Step::Value).map_err(|e| e.at(span))
            }
            Procedure::Native(native) => (native.func)(self, &args)
                .map(Step::Value)
                .map_err(|e| e.called_from(span)),
        }
    }

    /// Nodes with no tail position: definitions, assignments, loops, literals.
    fn eval_effect(&mut self, node: &Node, env: &Env) -> EvalResult<Value> {
        match node {
            Node::SetLocal {
                depth,
                index,
                value,
            } => {
                let value = self.eval(value, env)?;
                let frame = Frame::ancestor(env, *depth).ok_or_else(|| {
                    EvalError::new(EvalErrorKind::Internal, "local frame missing")
                })?;
                // A frame a closure can read after the call, older than
                // the trace being recorded if one is: replays must see the
                // change.
                if frame.captured.get()
                    && self
                        .numeric
                        .recording_frames
                        .is_none_or(|first| frame.serial < first)
                {
                    self.numeric.world += 1;
                }
                frame.store(*index as usize, value);
                Ok(Value::Void)
            }
            Node::SetGlobal { name, value, span } => {
                if self.global(*name).is_none() {
                    return Err(EvalError::new(
                        EvalErrorKind::Unbound,
                        format!("set!: {name} is not defined (define it first)"),
                    )
                    .at(*span));
                }
                let value = self.eval(value, env)?;
                self.set_global(*name, value);
                Ok(Value::Void)
            }
            Node::DefineGlobal { name, value } => {
                let value = self.eval(value, env)?;
                self.set_global(*name, value);
                Ok(Value::Void)
            }
            Node::Lambda(def) => {
                Frame::capture(env);
                Ok(Value::Procedure(Rc::new(Procedure::Closure(Closure {
                    def: Rc::clone(def),
                    env: env.clone(),
                }))))
            }
            Node::While { test, body } => {
                while truthy(&self.eval(test, env)?)? {
                    self.check_interrupt()?;
                    self.eval(body, env)?;
                }
                Ok(Value::Void)
            }
            Node::Quasi { template, span } => {
                quasi::instantiate(template, &mut |hole| self.eval(hole, env))
                    .map_err(|e| e.at(*span))
            }
            Node::TensorLiteral { items, span } => {
                let values = items
                    .iter()
                    .map(|item| self.eval(item, env))
                    .collect::<EvalResult<Vec<_>>>()?;
                if values.iter().any(crate::lisp::complex::is_complex) {
                    return crate::lisp::complex::tensor_literal(self, &values, *span);
                }
                self.tensor_literal(&values, *span)
            }
            Node::Time { expr, span } => {
                let started = Instant::now();
                let value = self.eval(expr, env)?;
                let elapsed = started.elapsed();
                self.write_error_line(&format!(
                    "time: {} ({}:{})",
                    format_duration(elapsed.as_secs_f64()),
                    span.line,
                    span.col
                ));
                Ok(value)
            }
            Node::DefMacro { name, def } => {
                Frame::capture(env);
                let closure = Closure {
                    def: Rc::clone(def),
                    env: env.clone(),
                };
                self.set_global(*name, Value::Macro(Rc::new(closure)));
                Ok(Value::Void)
            }
            _ => Err(EvalError::new(
                EvalErrorKind::Internal,
                "node with a tail position reached eval_effect",
            )),
        }
    }

    fn enter_let(
        &mut self,
        size: u32,
        sequential: bool,
        inits: &[(u32, Node)],
        env: &Env,
    ) -> EvalResult<Env> {
        if sequential {
            let frame = Frame::new(smallvec::smallvec![Value::Undefined; size as usize], env);
            for (index, init) in inits {
                let value = self.eval(init, &frame)?;
                if let Some(frame) = &frame {
                    frame.store(*index as usize, value);
                }
            }
            Ok(frame)
        } else {
            let mut slots = Slots::with_capacity(size as usize);
            for (_, init) in inits {
                slots.push(self.eval(init, env)?);
            }
            slots.resize(size as usize, Value::Undefined);
            Ok(Frame::new(slots, env))
        }
    }
}

/// A clone of `value`, plain numbers copied inline.
#[inline(always)]
fn copied(value: &Value) -> Value {
    match value {
        Value::Int(n) => Value::Int(*n),
        Value::Float(x) => Value::Float(*x),
        other => other.clone(),
    }
}

/// The value of a constant or local variable when it is a plain number.
#[inline(always)]
fn leaf_number(node: &Node, env: &Env, globals: &[Value]) -> Option<Number> {
    match node {
        Node::Const(value) => Number::of(value),
        Node::Global { name, .. } => Number::of(globals.get(name.index())?),
        Node::Local { depth, index, .. } => {
            let frame = Frame::ancestor(env, *depth)?;
            Number::of(frame.slots.borrow().get(*index as usize)?)
        }
        _ => None,
    }
}

/// A local variable's value; the common case is inlined into `eval`.
#[inline(always)]
fn lookup_local(env: &Env, depth: u32, index: u32, name: Symbol, span: Span) -> EvalResult<Value> {
    if let Some(frame) = Frame::ancestor(env, depth) {
        match frame.slots.borrow().get(index as usize) {
            Some(Value::FrameClosure(_) | Value::Undefined) | None => {}
            Some(value) => return Ok(copied(value)),
        }
    }
    lookup_local_rest(env, depth, index, name, span)
}

/// A local variable holding its frame's own closure, or not yet defined.
#[cold]
#[inline(never)]
fn lookup_local_rest(
    env: &Env,
    depth: u32,
    index: u32,
    name: Symbol,
    span: Span,
) -> EvalResult<Value> {
    let value = Frame::ancestor(env, depth).and_then(|frame| frame.load(index as usize));
    match value {
        Some(Value::Undefined) => Err(EvalError::new(
            EvalErrorKind::Unbound,
            format!("{name} is used before its definition"),
        )
        .at(span)),
        Some(value) => Ok(value),
        None => {
            Err(EvalError::new(EvalErrorKind::Internal, format!("no slot for {name}")).at(span))
        }
    }
}

/// The frame of a call of `closure`, its arguments checked against the
/// parameters (a rest parameter collects the extra ones as a list) and
/// its slots for internal definitions added.
fn bind_arguments(closure: &Closure, frame: Rc<Frame>) -> EvalResult<Env> {
    let def = &closure.def;
    let required = def.required();
    let mut slots = frame.slots.borrow_mut();
    let count = slots.len();
    if count < required || (!def.rest && count > required) {
        let expected = if def.rest {
            format!("at least {required}")
        } else {
            required.to_string()
        };
        return Err(EvalError::new(
            EvalErrorKind::Arity,
            format!(
                "{} expects {expected} argument{}, got {count}",
                def.signature(),
                if required == 1 && !def.rest { "" } else { "s" }
            ),
        ));
    }
    if def.rest {
        let rest = Value::list(slots.drain(required..).collect::<Vec<_>>());
        slots.push(rest);
    }
    if slots.len() < def.frame_size as usize {
        slots.resize(def.frame_size as usize, Value::Undefined);
    }
    drop(slots);
    Ok(Some(frame))
}

fn split_options<'a>(builtin: &Builtin, args: &'a [Value]) -> EvalResult<(&'a [Value], Options)> {
    if builtin.options.is_empty() {
        return Ok((args, Vec::new()));
    }
    let first_option = args.iter().position(|arg| matches!(arg, Value::Keyword(_)));
    let Some(first_option) = first_option else {
        return Ok((args, Vec::new()));
    };
    let mut options = Vec::new();
    let mut rest = &args[first_option..];
    while let [key, tail @ ..] = rest {
        let Value::Keyword(name) = key else {
            return Err(EvalError::syntax(format!(
                "{}: positional argument {} after keyword options",
                builtin.name,
                key.short()
            )));
        };
        if !builtin.options.contains(&name.name()) {
            return Err(EvalError::syntax(format!(
                "{}: unknown option :{name} (accepted: {})",
                builtin.name,
                builtin
                    .options
                    .iter()
                    .map(|o| format!(":{o}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let [value, after @ ..] = tail else {
            return Err(EvalError::syntax(format!(
                "{}: option :{name} needs a value",
                builtin.name
            )));
        };
        options.push((*name, value.clone()));
        rest = after;
    }
    Ok((&args[..first_option], options))
}

fn check_arity(builtin: &Builtin, count: usize) -> EvalResult<()> {
    let too_few = count < builtin.min;
    let too_many = builtin.max.is_some_and(|max| count > max);
    if !too_few && !too_many {
        return Ok(());
    }
    let expected = match builtin.max {
        Some(max) if max == builtin.min => format!("{max}"),
        Some(max) => format!("{} to {max}", builtin.min),
        None => format!("at least {}", builtin.min),
    };
    Err(EvalError::new(
        EvalErrorKind::Arity,
        format!(
            "{} expects {expected} argument{}, got {count}; usage: {}",
            builtin.name,
            if expected.ends_with(" 1") || expected == "1" {
                ""
            } else {
                "s"
            },
            builtin.usage
        ),
    ))
}

fn not_callable(value: &Value) -> EvalError {
    match value {
        Value::Macro(_) => EvalError::type_error(
            "a macro cannot be called as a function (define macros at top level before the code that uses them)",
        ),
        other => EvalError::type_error(format!(
            "not a procedure: {} {}",
            other.type_name(),
            other.short()
        )),
    }
}

/// Keyword options of a built-in call, as (name, value) in call order.
type Options = Vec<(Symbol, Value)>;

/// Seconds as a readable duration.
pub fn format_duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.3} s")
    } else if seconds >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// Whether a test's value is true. A comparison recorded in a
/// `while-loop`'s condition is a traced number with no truth value yet.
fn truthy(value: &Value) -> EvalResult<bool> {
    if let Value::Traced(t) = value
        && t.trace.borrow().record_comparisons
    {
        return Err(EvalError::type_error(
            "a while-loop's condition is compiled once for every step, so it cannot test a comparison with if, and, or, cond or when: combine comparisons with (* a b) for and, (max a b) for or",
        ));
    }
    Ok(value.is_truthy())
}

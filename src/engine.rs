//! The embedding API: an [`Engine`] is one Epsilon interpreter that a Rust
//! program (or the command line) feeds source text and calls into.
//!
//! Every entry point catches panics from inside the interpreter (bugs) and
//! reports them as errors, so a host program survives them.

use crate::compiled::CompiledGrad;
use crate::error::Error;
use crate::lisp::autodiff;
use crate::lisp::builtins::formula::Notation;
use crate::lisp::builtins::system::doc_text;
use crate::lisp::procedure::{HostFn, Procedure};
use crate::lisp::{EvalError, EvalErrorKind, EvalResult, Interp, Symbol, Value};
use ndarray::{ArrayD, IxDyn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// An Epsilon interpreter with the standard library loaded.
///
/// ```
/// let mut eps = epsilon::Engine::new();
/// let v = eps.eval("(+ 1 2)").unwrap();
/// assert_eq!(v.as_i64().unwrap(), 3);
/// eps.eval("(define (square x) (* x x))").unwrap();
/// let nine = eps.call_named("square", &[3.0.into()]).unwrap();
/// assert_eq!(nine.as_f64().unwrap(), 9.0);
/// ```
pub struct Engine {
    interp: Interp,
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

/// The error for a panic of the stack-growing crate (stacker), which
/// panics when the system refuses memory for another stack segment:
/// recursion deeper than this machine can hold, not a bug.
fn stack_growth_failure(detail: &str) -> Option<EvalError> {
    let refused =
        detail.contains("failed to allocate stack") || detail.contains("mprotect/mmap failed");
    refused.then(|| {
        // The system's reason, without the assertion's operands.
        let reason = detail
            .split_once("failed")
            .map_or(detail, |(_, rest)| rest)
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches([':', ' ']);
        EvalError::new(
            EvalErrorKind::Recursion,
            format!(
                "recursion deeper than this machine's memory can hold: the stack could not grow ({reason}); lower the depth, or the limit with set-recursion-limit!"
            ),
        )
    })
}

impl Engine {
    /// A new engine with the built-ins and the prelude loaded.
    pub fn new() -> Self {
        let interp = Interp::new().expect("the embedded prelude evaluates without error");
        Engine { interp }
    }

    /// Runs `work` on the interpreter, turning errors and panics into [`Error`]s.
    fn guarded<T>(&mut self, work: impl FnOnce(&mut Interp) -> EvalResult<T>) -> Result<T, Error> {
        let outcome = catch_unwind(AssertUnwindSafe(|| work(&mut self.interp)));
        self.interp.flush_output();
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Error::from_eval(error, &self.interp.sources)),
            Err(panic) => {
                let span = self.interp.closure_span;
                self.interp.reset_after_abort();
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                if let Some(error) = stack_growth_failure(&detail) {
                    return Err(Error::from_eval(error.at(span), &self.interp.sources));
                }
                Err(Error::from_eval(
                    EvalError::new(
                        EvalErrorKind::Internal,
                        format!("internal error (a bug in Epsilon, please report it): {detail}"),
                    ),
                    &self.interp.sources,
                ))
            }
        }
    }

    /// Compiles the gradient of the scalar function `source` (a Lisp
    /// expression evaluating to a function) with respect to all its
    /// arguments, for arguments of `shapes` (`&[]` for a number). The
    /// function is traced at zeros; see [`Engine::compile_grad_at`] to
    /// choose the point that decides its control flow.
    pub fn compile_grad(
        &mut self,
        source: &str,
        shapes: &[&[usize]],
    ) -> Result<CompiledGrad, Error> {
        let examples: Vec<ArrayD<f64>> = shapes
            .iter()
            .map(|shape| ArrayD::zeros(IxDyn(shape)))
            .collect();
        self.compile_grad_at(source, &examples)
    }

    /// Like [`Engine::compile_grad`], traced at the values `examples`.
    pub fn compile_grad_at(
        &mut self,
        source: &str,
        examples: &[ArrayD<f64>],
    ) -> Result<CompiledGrad, Error> {
        let f = self.eval_named(source, "<compile_grad>")?;
        self.guarded(|interp| {
            let args: Vec<Value> = examples
                .iter()
                .map(|a| {
                    if a.ndim() == 0 {
                        Value::Float(a.iter().next().copied().unwrap_or(0.0))
                    } else {
                        Value::tensor(a.clone())
                    }
                })
                .collect();
            let all = (0..args.len()).collect();
            let call = autodiff::compile_call(
                interp,
                &f,
                &args,
                &autodiff::Request::Grad {
                    wrt: all,
                    value: true,
                },
            )?;
            Ok(CompiledGrad::new(call))
        })
    }

    /// Evaluates every form in `source` and returns the value of the last.
    ///
    /// ```
    /// let mut eps = epsilon::Engine::new();
    /// let v = eps.eval("(define x 4) (* x 2.5)").unwrap();
    /// assert_eq!(v.as_f64().unwrap(), 10.0);
    /// let err = eps.eval("(car 5)").unwrap_err();
    /// assert!(err.render().starts_with("<eval>:1:1: error:"));
    /// assert!(err.to_string().starts_with("<eval>:1:1: car:"));
    /// ```
    pub fn eval(&mut self, source: &str) -> Result<Value, Error> {
        self.eval_named(source, "<eval>")
    }

    /// Like [`Engine::eval`], naming the source `name` in error messages.
    pub fn eval_named(&mut self, source: &str, name: &str) -> Result<Value, Error> {
        self.guarded(|interp| interp.eval_source(source, name, None))
    }

    /// Evaluates the file at `path`.
    pub fn run_file(&mut self, path: impl AsRef<Path>) -> Result<Value, Error> {
        let path = path.as_ref().to_path_buf();
        self.guarded(|interp| interp.load_file(&path))
    }

    /// Calls a procedure value with `args`.
    ///
    /// ```
    /// let mut eps = epsilon::Engine::new();
    /// let f = eps.eval("(lambda (x y) (* x (sin y)))").unwrap();
    /// let v = eps.call(&f, &[2.0.into(), 0.0.into()]).unwrap();
    /// assert_eq!(v.as_f64().unwrap(), 0.0);
    /// ```
    pub fn call(&mut self, procedure: &Value, args: &[Value]) -> Result<Value, Error> {
        let procedure = procedure.clone();
        let args = args.to_vec();
        self.guarded(move |interp| interp.apply(&procedure, args))
    }

    /// Calls the global function `name` with `args`.
    pub fn call_named(&mut self, name: &str, args: &[Value]) -> Result<Value, Error> {
        let procedure = self
            .get(name)
            .ok_or_else(|| Error::msg(format!("unbound symbol: {name}")))?;
        self.call(&procedure, args)
    }

    /// Makes a Rust function callable from Epsilon as `name`.
    ///
    /// ```
    /// let mut eps = epsilon::Engine::new();
    /// eps.register_fn("square", |args: &[epsilon::Value]| {
    ///     let x = args[0].as_f64()?;
    ///     Ok((x * x).into())
    /// }).unwrap();
    /// assert_eq!(eps.eval("(square 1.5)").unwrap().as_f64().unwrap(), 2.25);
    /// ```
    pub fn register_fn<F>(&mut self, name: &str, func: F) -> Result<(), Error>
    where
        F: Fn(&[Value]) -> Result<Value, Error> + 'static,
    {
        let valid = !name.is_empty()
            && !name.chars().any(|c| c.is_whitespace() || "()[]\"';`,".contains(c))
            && crate::reader::read_all(name, crate::reader::FileId::NONE)
                .is_ok_and(|data| matches!(data.as_slice(), [d] if matches!(d.kind, crate::reader::SexpKind::Symbol(_))));
        if !valid {
            return Err(Error::msg(format!(
                "register_fn: {name:?} is not a valid symbol name"
            )));
        }
        let symbol = Symbol::intern(name);
        let host = HostFn {
            name: symbol,
            func: Box::new(move |args: &[Value]| {
                // A Rust function sees numbers and tensors; a value being
                // differentiated or compiled would give it a confusing
                // type error.
                if let Some(traced) = args.iter().find(|a| matches!(a, Value::Traced(_))) {
                    return Err(EvalError::type_error(format!(
                        "{symbol} is a Rust function (register_fn), which grad, jit and vmap cannot see into: it got the traced {} {}; call it outside the transformed function, or give it a derivative with custom-vjp",
                        traced.type_name(),
                        traced.short()
                    )));
                }
                func(args).map_err(|error| {
                    EvalError::new(EvalErrorKind::User, error.message().to_string())
                })
            }),
        };
        self.interp
            .set_global(symbol, Value::Procedure(Rc::new(Procedure::Host(host))));
        Ok(())
    }

    /// How many calls of `jit`, `grad` and `value-and-grad` functions ran
    /// the tape of an earlier call's trace without running the Lisp
    /// function again (see `lisp::autodiff::replay`).
    pub fn replayed_calls(&self) -> u64 {
        self.interp.numeric.replayed
    }

    /// The value of the global `name`, if bound.
    pub fn get(&self, name: &str) -> Option<Value> {
        self.interp.global(Symbol::intern(name))
    }

    /// Binds the global `name` to `value`.
    pub fn set(&mut self, name: &str, value: Value) {
        self.interp.set_global(Symbol::intern(name), value);
    }

    /// Sets `*args*`, the script arguments, to a list of strings.
    pub fn set_args(&mut self, args: &[String]) {
        let list = Value::list(
            args.iter()
                .map(|a| Value::string(a.as_str()))
                .collect::<Vec<_>>(),
        );
        self.set("*args*", list);
    }

    /// The documentation of a global name or special form.
    pub fn doc(&self, name: &str) -> Option<String> {
        doc_text(&self.interp, name)
    }

    /// `value` in `notation` when it is a symbolic expression (or a list of
    /// them) with at least one operation; `None` for anything else.
    pub fn show_formula(&self, value: &Value, notation: Notation) -> Option<String> {
        crate::lisp::builtins::formula::display(value, &self.interp.symbolic.functions, notation)
    }

    /// The names bound in the global environment.
    pub fn global_names(&self) -> Vec<&'static str> {
        self.interp.global_names()
    }

    /// A flag that, when set from another thread (a Ctrl-C handler), stops
    /// the running evaluation with an "interrupted" error.
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt_flag()
    }

    /// Sends the output of `display`, `print` and `println` to `output`
    /// instead of standard output.
    pub fn set_output(&mut self, output: Box<dyn std::io::Write>) {
        self.interp.set_output(output);
    }

    /// Sends warnings and the output of `eprintln` and `time` to `output`
    /// instead of standard error.
    pub fn set_error_output(&mut self, output: Box<dyn std::io::Write>) {
        self.interp.set_error_output(output);
    }

    /// Makes `read-line` read from `input` (a front end's prompt) instead
    /// of standard input.
    pub fn set_input(&mut self, input: Box<dyn crate::input::LineInput>) {
        self.interp.set_input(input);
    }

    /// Sends rich items (charts, progress bars) to `display` as programs
    /// make them; without one, charts only go to their files and progress
    /// bars only to a terminal.
    pub fn set_display(&mut self, display: Box<dyn crate::display::RichDisplay>) {
        self.interp.set_display(display);
    }
}

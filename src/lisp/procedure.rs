//! Callable values: closures, built-in functions and host (Rust) functions.

use super::env::Env;
use super::error::EvalResult;
use super::interp::Interp;
use super::node::LambdaDef;
use super::symbol::Symbol;
use super::value::Value;
use std::rc::Rc;

/// Something `apply` can call.
pub enum Procedure {
    /// A `lambda` with the frame it closes over.
    Closure(Closure),
    /// A function of the standard library written in Rust.
    Builtin(&'static Builtin),
    /// A function registered by the embedding program.
    Host(HostFn),
    /// A function made by a differentiation form (`(grad f)`, `(jit f)`).
    Native(NativeFn),
}

/// The body of a `NativeFn`.
pub type NativeBody = dyn Fn(&mut Interp, &[Value]) -> EvalResult<Value>;

/// A function implemented in Rust that calls back into the interpreter.
pub struct NativeFn {
    /// Its name, for printing and errors (`grad of f`).
    pub name: String,
    /// What `doc` shows: the usage line and the docstring (`defderiv`).
    pub doc: Option<String>,
    /// The body.
    pub func: Box<NativeBody>,
}

/// A lambda and its environment.
#[derive(Clone)]
pub struct Closure {
    /// The code.
    pub def: Rc<LambdaDef>,
    /// The captured frame.
    pub env: Env,
}

/// The Rust signature of a built-in function.
pub type BuiltinFn = fn(&mut Interp, &Args<'_>) -> EvalResult<Value>;

/// A built-in function with its documentation and arity.
pub struct Builtin {
    /// Its name in the global environment.
    pub name: &'static str,
    /// How to call it, e.g. `(nth lst k)`.
    pub usage: &'static str,
    /// What it does.
    pub doc: &'static str,
    /// Fewest positional arguments.
    pub min: usize,
    /// Most positional arguments (`None`: any number).
    pub max: Option<usize>,
    /// Keyword options it accepts (`:axis`, ...), without colons.
    pub options: &'static [&'static str],
    /// The implementation.
    pub func: BuiltinFn,
}

/// The Rust closure behind a [`HostFn`].
pub type HostFnBody = dyn Fn(&[Value]) -> EvalResult<Value>;

/// A function registered from Rust through the embedding API.
pub struct HostFn {
    /// Its name.
    pub name: Symbol,
    /// The implementation.
    pub func: Box<HostFnBody>,
}

/// The arguments of a built-in call: positional values and keyword options.
pub struct Args<'a> {
    /// Positional arguments.
    pub values: &'a [Value],
    /// Keyword options as (name, value), in call order.
    pub options: Vec<(Symbol, Value)>,
}

impl<'a> std::ops::Deref for Args<'a> {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        self.values
    }
}

impl Args<'_> {
    /// The value of option `name` (given without its colon), if passed.
    pub fn option(&self, name: &str) -> Option<&Value> {
        self.options
            .iter()
            .rev()
            .find(|(key, _)| key.name() == name)
            .map(|(_, value)| value)
    }
}

impl Procedure {
    /// The name used when printing and in error messages.
    pub fn name(&self) -> String {
        match self {
            Procedure::Closure(closure) => closure
                .def
                .name
                .map(|s| s.name().to_string())
                .unwrap_or_else(|| "lambda".to_string()),
            Procedure::Builtin(builtin) => builtin.name.to_string(),
            Procedure::Host(host) => host.name.name().to_string(),
            Procedure::Native(native) => native.name.clone(),
        }
    }
}

//! Functions defined together with their partial derivatives (`defderiv`,
//! SPEC section 4 "Extensibility"). The `defderiv` macro of the prelude
//! calls `define-with-derivatives!` with the definition as data and as
//! closures; one definition serves every path:
//!
//! - outside a trace the function is its body;
//! - inside a traced function (`grad`, `jvp`, `hessian`, `jit`, `scan`
//!   steps, ...) a call records one `TOp::Linearized` node: the body's
//!   value computed from the arguments with their gradients stopped, the
//!   arguments, and each partial evaluated on the real arguments. Sweeps
//!   take derivatives from the partials, and since those are ordinary
//!   traced nodes of the arguments, second derivatives differentiate them;
//! - symbolic forms see the function as a `Math::Call` whose partials and
//!   body are the definition converted to formulas (`SymbolicState`).

use super::builtin;
use crate::ir::TOp;
use crate::ir::math::functions::{MAX_RULE_DEPTH, UserFunction};
use crate::lisp::analyze::SPECIAL_FORMS;
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, NativeFn, Procedure};
use crate::lisp::symbol::Symbol;
use crate::lisp::symbolic::formula_from_value;
use crate::lisp::trace::{TraceRef, node_of, traced};
use crate::lisp::value::Value;
use egg::Id;
use std::cell::Cell;
use std::rc::Rc;

/// A function with declared partial derivatives.
struct Custom {
    name: Symbol,
    params: Vec<Symbol>,
    /// `(lambda params body)`.
    body: Value,
    /// `(lambda params partial)`, one per parameter.
    partials: Vec<Value>,
    /// How many evaluations of this function's partials are under way: a
    /// partial may call the function itself (as `exp`'s would), and each
    /// such call evaluates the partials again. Past `MAX_RULE_DEPTH` a call
    /// is its body, so derivatives up to that order follow the declared
    /// rule.
    depth: Cell<usize>,
}

/// Resets a depth counter when the rules are traced, errors included.
pub(super) struct DepthGuard<'a> {
    pub(super) cell: &'a Cell<usize>,
    pub(super) saved: usize,
}

impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.cell.set(self.saved);
    }
}

impl Custom {
    fn call(&self, interp: &mut Interp, args: &[Value]) -> EvalResult<Value> {
        let arity = self.params.len();
        if args.len() != arity {
            return Err(EvalError::new(
                EvalErrorKind::Arity,
                format!(
                    "{} takes {arity} argument{}, got {}",
                    self.name,
                    if arity == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        let any_traced = args.iter().any(|a| matches!(a, Value::Traced(_)));
        let trace = match &interp.numeric.trace {
            Some(trace) if any_traced => Rc::clone(trace),
            _ => return interp.apply(&self.body, args.to_vec()),
        };
        if self.depth.get() >= MAX_RULE_DEPTH {
            return interp.apply(&self.body, args.to_vec());
        }
        let xs: Vec<Id> = args
            .iter()
            .map(|a| node_of(&trace, a))
            .collect::<EvalResult<_>>()
            .map_err(|e| self.context(e, "its arguments"))?;
        let value = self.value(interp, &trace, &xs)?;
        let partials = {
            let _guard = DepthGuard {
                cell: &self.depth,
                saved: self.depth.get(),
            };
            self.depth.set(self.depth.get() + 1);
            self.partial_nodes(interp, &trace, args)?
        };
        let mut operands = vec![value];
        operands.extend_from_slice(&xs);
        operands.extend(partials);
        let id = trace
            .borrow_mut()
            .graph
            .add(TOp::Linearized, &operands)
            .map_err(|e| EvalError::shape(format!("{}: {}", self.name, e.0)))?;
        Ok(traced(&trace, id))
    }

    /// The body's value on the arguments with their gradients stopped.
    fn value(&self, interp: &mut Interp, trace: &TraceRef, xs: &[Id]) -> EvalResult<Id> {
        let stopped: Vec<Value> = xs
            .iter()
            .map(|&x| {
                let id = trace
                    .borrow_mut()
                    .graph
                    .add(TOp::StopGradient, &[x])
                    .map_err(|e| EvalError::shape(e.0))?;
                Ok(traced(trace, id))
            })
            .collect::<EvalResult<_>>()?;
        let value = interp.apply(&self.body, stopped)?;
        node_of(trace, &value).map_err(|_| {
            EvalError::type_error(format!(
                "{}: the body must return a number or tensor, got {}",
                self.name,
                value.short()
            ))
        })
    }

    /// Each partial evaluated on the (traced) arguments.
    fn partial_nodes(
        &self,
        interp: &mut Interp,
        trace: &TraceRef,
        args: &[Value],
    ) -> EvalResult<Vec<Id>> {
        let mut nodes = Vec::with_capacity(self.partials.len());
        for (partial, param) in self.partials.iter().zip(&self.params) {
            let what = format!("the partial derivative with respect to {param}");
            let value = interp
                .apply(partial, args.to_vec())
                .map_err(|e| self.context(e, &what))?;
            let node = node_of(trace, &value).map_err(|_| {
                EvalError::type_error(format!(
                    "{}: {what} must be a number or tensor, got {}",
                    self.name,
                    value.short()
                ))
            })?;
            nodes.push(node);
        }
        Ok(nodes)
    }

    fn context(&self, mut error: EvalError, what: &str) -> EvalError {
        if !error.is_uncatchable() {
            error.message = format!("{}: {what}: {}", self.name, error.message);
        }
        error
    }
}

fn symbols(value: &Value, what: &str) -> EvalResult<Vec<Symbol>> {
    if !value.is_list() {
        return Err(EvalError::syntax(format!(
            "defderiv: {what} must be a list of symbols, got {}",
            value.short()
        )));
    }
    let mut out: Vec<Symbol> = Vec::new();
    for (item, _) in value.iter() {
        match item {
            Value::Symbol(name) if out.contains(name) => {
                return Err(EvalError::syntax(format!(
                    "defderiv: the parameter {name} appears twice"
                )));
            }
            Value::Symbol(name) => out.push(*name),
            other => {
                return Err(EvalError::syntax(format!(
                    "defderiv: {what} must be symbols, got {}",
                    other.short()
                )));
            }
        }
    }
    Ok(out)
}

/// Refuses names that would shadow the language: special forms, built-in
/// functions and macros.
fn check_name(interp: &Interp, name: Symbol) -> EvalResult<()> {
    let text = name.name();
    if SPECIAL_FORMS.iter().any(|(form, _, _)| *form == text) {
        return Err(EvalError::syntax(format!(
            "defderiv: {text} is a special form; choose another name"
        )));
    }
    match interp.global(name) {
        Some(Value::Procedure(p)) if matches!(&*p, Procedure::Builtin(_)) => {
            Err(EvalError::type_error(format!(
                "defderiv: {text} is a built-in function; choose another name"
            )))
        }
        Some(Value::Macro(_)) => Err(EvalError::type_error(format!(
            "defderiv: {text} is a macro; choose another name"
        ))),
        _ => Ok(()),
    }
}

fn define_with_derivatives(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let name = match &args[0] {
        Value::Symbol(name) => *name,
        other => {
            return Err(EvalError::syntax(format!(
                "defderiv: the name must be a symbol, got {}",
                other.short()
            )));
        }
    };
    check_name(interp, name)?;
    let params = symbols(&args[1], "the parameters")?;
    let (body, partials_data) = (&args[2], &args[3]);
    if !partials_data.is_list() {
        return Err(EvalError::syntax(format!(
            "defderiv {name}: the partial derivatives must be a list with one expression per parameter, got {}",
            partials_data.short()
        )));
    }
    let partials_data = partials_data.list_to_vec()?;
    if partials_data.len() != params.len() {
        return Err(EvalError::new(
            EvalErrorKind::Arity,
            format!(
                "defderiv {name}: {} parameter{} need{} {} partial derivative{}, got {}",
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                if params.len() == 1 { "s" } else { "" },
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                partials_data.len()
            ),
        ));
    }
    let body_fn = args[4].clone();
    let partial_fns = args[5].list_to_vec()?;
    if !matches!(body_fn, Value::Procedure(_))
        || partial_fns.len() != params.len()
        || partial_fns
            .iter()
            .any(|f| !matches!(f, Value::Procedure(_)))
    {
        return Err(EvalError::type_error(
            "define-with-derivatives! takes the body and each partial as functions of the parameters (use defderiv)",
        ));
    }
    let doc = match args.get(6) {
        None | Some(Value::Nil) => None,
        Some(Value::Str(text)) => Some(text.to_string()),
        Some(other) => {
            return Err(EvalError::type_error(format!(
                "defderiv {name}: the docstring must be a string, got {}",
                other.short()
            )));
        }
    };
    // The symbolic form: the body may call functions defined before, the
    // partials this one too (a partial may be written with the function).
    let egg_name = egg::Symbol::from(name.name());
    let egg_params: Vec<egg::Symbol> = params.iter().map(|p| egg::Symbol::from(p.name())).collect();
    let global_number = |text: &str| match interp.global(Symbol::intern(text)) {
        Some(Value::Float(x)) => Some(x),
        Some(Value::Int(n)) => Some(n as f64),
        _ => None,
    };
    let mut functions = interp.symbolic.functions.clone();
    functions.remove(egg_name);
    let symbolic_body = formula_from_value(body, &egg_params, &functions, global_number);
    functions.insert(
        egg_name,
        UserFunction {
            params: egg_params.clone(),
            body: Err("being defined".to_string()),
            partials: Err("being defined".to_string()),
        },
    );
    let symbolic_partials = partials_data
        .iter()
        .map(|p| formula_from_value(p, &egg_params, &functions, global_number))
        .collect::<Result<Vec<_>, String>>();
    interp.symbolic.functions.insert(
        egg_name,
        UserFunction {
            params: egg_params,
            body: symbolic_body,
            partials: symbolic_partials,
        },
    );
    let signature = format!(
        "({name}{})",
        params.iter().map(|p| format!(" {p}")).collect::<String>()
    );
    let doc = format!(
        "{signature}\n  {}",
        doc.unwrap_or_else(
            || "A function defined with defderiv (declared partial derivatives).".to_string()
        )
    );
    let custom = Custom {
        name,
        params,
        body: body_fn,
        partials: partial_fns,
        depth: Cell::new(0),
    };
    let function = Value::Procedure(Rc::new(Procedure::Native(NativeFn {
        name: name.name().to_string(),
        doc: Some(doc),
        func: Box::new(move |interp, args| custom.call(interp, args)),
    })));
    interp.set_global(name, function);
    Ok(Value::Symbol(name))
}

#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("define-with-derivatives!", "(define-with-derivatives! name params body partials body-fn partial-fns [doc])", "Defines the global function name with declared partial derivatives; defderiv is the usual spelling. body and partials are the quoted expressions (for the symbolic forms), body-fn and partial-fns the same as functions of params.", 6, Some(7), define_with_derivatives),
];

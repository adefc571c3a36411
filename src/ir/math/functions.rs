//! User functions with declared partial derivatives (`defderiv`), as data
//! the e-graph layer can use: a body and one partial per argument, each a
//! `RecExpr<Math>` over placeholder variables (the parameters). A call
//! `(f a b)` is the node `Math::Call(f, [a, b])`; the reverse sweep takes
//! its local partials from here (the parameters replaced by the call's
//! operands), and evaluation goes through the body.
//!
//! The Lisp layer converts the definitions; this file knows nothing of
//! Lisp values.

use super::language::Math;
use super::partials::PartialBuilder;
use egg::{Id, Language, RecExpr, Symbol};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One formula: a program and its root.
#[derive(Clone, Debug)]
pub struct Formula {
    /// The program; its only variables are the function's parameters.
    pub expr: RecExpr<Math>,
    /// The result.
    pub root: Id,
}

/// A user function: parameters, body and partials. A body or partials
/// that are not symbolic expressions (they use Lisp forms the `Math`
/// language lacks) are kept as the reason, reported when they are needed.
#[derive(Clone, Debug)]
pub struct UserFunction {
    /// The parameters, which are the formulas' variables.
    pub params: Vec<Symbol>,
    /// The value, as a formula of the parameters.
    pub body: Result<Formula, String>,
    /// d f / d parameter k, for each k.
    pub partials: Result<Vec<Formula>, String>,
}

/// The user functions by name. `Functions::EMPTY` serves callers that
/// have none (the Rust API, the numeric sweeps).
#[derive(Clone, Debug, Default)]
pub struct Functions {
    table: BTreeMap<Symbol, Arc<UserFunction>>,
}

/// An empty table.
pub static NO_FUNCTIONS: Functions = Functions {
    table: BTreeMap::new(),
};

/// How many calls deep a formula's partial derivatives are written out in
/// a program (a partial may call its own function, as `exp`'s does); past
/// this depth a call is its body. Derivatives up to this order use the
/// declared rules; higher ones differentiate the body.
pub const MAX_RULE_DEPTH: usize = 4;

/// How many calls deep bodies expand (a body calling a function whose body
/// calls the first again never ends).
pub const MAX_BODY_DEPTH: usize = 64;

impl Functions {
    /// The function `name`, if defined.
    pub fn get(&self, name: Symbol) -> Option<&Arc<UserFunction>> {
        self.table.get(&name)
    }

    /// Defines (or replaces) `name`.
    pub fn insert(&mut self, name: Symbol, function: UserFunction) {
        self.table.insert(name, Arc::new(function));
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: Symbol) {
        self.table.remove(&name);
    }

    /// The number of parameters of `name`, if defined.
    pub fn arity(&self, name: Symbol) -> Option<usize> {
        self.get(name).map(|f| f.params.len())
    }

    /// Whether no function is defined.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Checks that every call in `expr`, and in the partials of the
    /// functions called (transitively), has symbolic partial derivatives,
    /// so the reverse sweep can differentiate it to any order.
    pub fn check_differentiable(&self, expr: &RecExpr<Math>) -> Result<(), String> {
        self.check_calls(expr, |name, function| {
            let partials = function.partials.as_ref().map_err(|reason| {
                format!(
                    "{name}'s partial derivatives are not symbolic expressions ({reason}), so it is differentiated only numerically"
                )
            })?;
            Ok(partials.iter().flat_map(|partial| calls(&partial.expr)).collect())
        })
    }

    /// Checks that every call in `expr` (transitively through bodies) has
    /// a symbolic body, so it can be evaluated.
    pub fn check_evaluable(&self, expr: &RecExpr<Math>) -> Result<(), String> {
        self.check_calls(expr, |name, function| {
            let body = function.body.as_ref().map_err(|reason| {
                format!("{name}'s body is not a symbolic expression ({reason}), so it cannot be evaluated here; call {name} as a function instead")
            })?;
            Ok(calls(&body.expr))
        })
    }

    /// Visits every function called in `expr` and, transitively, in what
    /// `check` returns for each (the calls of its partials or its body),
    /// once each; the first failure is the error.
    fn check_calls(
        &self,
        expr: &RecExpr<Math>,
        check: impl Fn(Symbol, &UserFunction) -> Result<Vec<Symbol>, String>,
    ) -> Result<(), String> {
        let mut seen: Vec<Symbol> = Vec::new();
        let mut pending: Vec<Symbol> = calls(expr);
        while let Some(name) = pending.pop() {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let function = self
                .get(name)
                .ok_or_else(|| format!("{name} is not a function defined with defderiv"))?;
            pending.extend(check(name, function)?);
        }
        Ok(())
    }

    /// The partial derivatives of the call node `node` (stored in `b`),
    /// written with `b` in terms of its operands; `None` for a function
    /// without symbolic partials (callers check first with
    /// `check_differentiable`).
    pub fn call_partials<B: PartialBuilder>(
        &self,
        node: &Math,
        b: &mut B,
    ) -> Option<Vec<Option<Id>>> {
        let Math::Call(name, args) = node else {
            return None;
        };
        let function = self.get(*name)?;
        let partials = function.partials.as_ref().ok()?;
        Some(
            partials
                .iter()
                .map(|partial| Some(instantiate(partial, &function.params, args, b)))
                .collect(),
        )
    }
}

/// The names of the functions called in `expr`.
pub fn calls(expr: &RecExpr<Math>) -> Vec<Symbol> {
    let mut names: Vec<Symbol> = expr.as_ref().iter().filter_map(Math::call_name).collect();
    names.sort();
    names.dedup();
    names
}

/// `formula` written into `b` with parameter `k` replaced by `args[k]`.
/// A variable that is not a parameter does not occur (definitions are
/// checked when converted); it would stay a variable.
pub fn instantiate<B: PartialBuilder>(
    formula: &Formula,
    params: &[Symbol],
    args: &[Id],
    b: &mut B,
) -> Id {
    let mut ids: Vec<Id> = Vec::with_capacity(formula.expr.len());
    for node in formula.expr.as_ref() {
        let id = match node {
            Math::Var(name) => match params.iter().position(|p| p == name) {
                Some(k) => args[k],
                None => b.add(node.clone()),
            },
            Math::Num(c) => b.num(c.get()),
            op => b.add(op.clone().map_children(|c| ids[usize::from(c)])),
        };
        ids.push(id);
    }
    ids[usize::from(formula.root)]
}

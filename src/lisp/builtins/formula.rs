//! Formulas out (SPEC section 7): `cse`, `infix` and `latex` on quoted
//! expressions or nested lists of them, through `crate::formula`.

use super::{builtin, with_options};
use crate::formula::{self, Term};
use crate::lisp::error::EvalError;
use crate::lisp::error::EvalResult;
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::symbolic::{
    Nesting, exprs_from_value, exprs_in_scope, exprs_to_values, is_expression, term_value,
};
use crate::lisp::value::Value;
use egg::{Id, RecExpr};
use std::collections::HashMap;
use std::rc::Rc;

/// The expressions of a builtin's argument, as one DAG.
fn parsed(
    interp: &Interp,
    value: &Value,
) -> EvalResult<(RecExpr<crate::egraph::Math>, Vec<Id>, Nesting)> {
    let mut builder = crate::egraph::ExprBuilder::new();
    let (roots, nesting) = exprs_from_value(
        value,
        crate::reader::Span::NONE,
        &mut builder,
        &interp.symbolic.functions,
    )?;
    let (expr, roots) = crate::egraph::builder::compact(builder.expr(), &roots);
    Ok((expr, roots, nesting))
}

/// `nesting` rebuilt as Lisp code: lists as `(list ...)` calls.
fn as_code(nesting: &Nesting, values: &[Value]) -> Value {
    // Formulas nest as deep as the data a loop built: the stack grows
    // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match nesting {
        Nesting::One(index) => values[*index].clone(),
        Nesting::List(items) => Value::list(
            std::iter::once(Value::symbol("list"))
                .chain(items.iter().map(|item| as_code(item, values)))
                .collect::<Vec<_>>(),
        ),
    })
}

/// `(cse expr-or-list)`: a `let*` naming each shared subterm once.
fn cse(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (expr, roots, nesting) = parsed(interp, &args[0])?;
    let shared = formula::cse(&expr, &roots);
    let mut memo = HashMap::new();
    let results: Vec<Value> = shared
        .results
        .iter()
        .map(|t| term_value(t, &mut memo))
        .collect();
    let body = as_code(&nesting, &results);
    if shared.definitions.is_empty() {
        return Ok(body);
    }
    let bindings: Vec<Value> = shared
        .definitions
        .iter()
        .map(|(name, term)| {
            Value::list(vec![
                Value::symbol(name.as_str()),
                term_value(term, &mut memo),
            ])
        })
        .collect();
    Ok(Value::list(vec![
        Value::symbol("let*"),
        Value::list(bindings),
        body,
    ]))
}

/// `(subs expr-or-list '((x e1) (y e2) ...))`: each variable replaced by
/// its expression, all at once (a replacement is not substituted into).
fn subs(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let functions = &interp.symbolic.functions;

    let present = variables_of(interp, &args[0]);
    let mut builder = crate::egraph::ExprBuilder::new();
    let mut scope = Vec::new();
    for (binding, span) in args[1].iter() {
        let parts: Vec<&Value> = binding.iter().map(|(v, _)| v).collect();
        let (Some(Value::Symbol(name)), [_, replacement]) = (parts.first().copied(), &parts[..])
        else {
            return Err(EvalError::type_error(format!(
                "subs takes bindings (variable expression), not {}",
                binding.short()
            ))
            .at(span));
        };
        let name = egg::Symbol::from(name.name());
        if !present.contains(&name) {
            let mut known: Vec<&str> = present.iter().map(|s| s.as_str()).collect();
            known.sort_unstable();
            return Err(EvalError::type_error(format!(
                "subs: {name} is not a variable of the expression (its variables: {})",
                known.join(" ")
            )));
        }

        let id =
            crate::lisp::symbolic::expr_from_value(replacement, span, &mut builder, functions)?;
        scope.push((name, id));
    }
    if !args[1].is_list() {
        return Err(EvalError::type_error(
            "subs takes a list of bindings (variable expression)",
        ));
    }
    let (roots, nesting) = exprs_in_scope(
        &args[0],
        crate::reader::Span::NONE,
        &mut builder,
        &mut scope,
        functions,
    )?;
    let (expr, roots) = crate::egraph::builder::compact(builder.expr(), &roots);
    Ok(nesting.rebuild(&exprs_to_values(&expr, &roots)))
}

/// The variables written in an expression (or list of them), before any
/// identity removes one (`(* x 0)` has `x`).
fn variables_of(interp: &Interp, value: &Value) -> std::collections::HashSet<egg::Symbol> {
    let functions = &interp.symbolic.functions;
    let mut names = std::collections::HashSet::new();
    // An explicit work list, each list visited once: formulas built by a
    // loop nest deeper than the stack and share subterms (a DAG whose
    // paths are exponentially many).
    let mut seen = std::collections::HashSet::new();
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Symbol(name) => {
                names.insert(egg::Symbol::from(name.name()));
            }
            Value::Pair(pair) if seen.insert(std::rc::Rc::as_ptr(pair)) => {
                // An operator's name is not a variable; a list of
                // expressions may start with one (the gradient `(y x)`).
                let items = match is_expression(value, functions) {
                    true => &pair.cdr,
                    false => value,
                };
                pending.extend(items.iter().map(|(item, _)| item));
            }
            _ => {}
        }
    }
    names
}

/// `(codegen expr-or-list '(x y) :lang 'c :name "f")`: the source of a
/// function of the variables computing the expression(s).
fn codegen(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (expr, roots, _) = parsed(interp, &args[0])?;
    let params = symbols(&args[1])?;
    let language = match args.option("lang") {
        None => formula::Language::C,
        Some(value) => {
            let name = match value {
                Value::Symbol(s) => s.name().to_string(),
                Value::Str(s) => s.to_string(),
                other => other.short(),
            };
            formula::Language::named(&name).ok_or_else(|| {
                EvalError::type_error(format!(
                    "codegen: :lang is 'c, 'rust or 'python, not {name}"
                ))
            })?
        }
    };
    let name = match args.option("name") {
        None => "f".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(Value::Symbol(s)) => s.name().to_string(),
        Some(other) => {
            return Err(EvalError::type_error(format!(
                "codegen: :name is a string, not {}",
                other.short()
            )));
        }
    };
    formula::codegen(&expr, &roots, &params, language, &name)
        .map(Value::string)
        .map_err(EvalError::type_error)
}

/// `(sparsity expr-list vars)`: the Jacobian's entries that may be
/// non-zero as `(rows cols)`, two vectors, row-major (as
/// `sparse-jacobian` lists its entries).
fn sparsity(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (expr, roots, _) = parsed(interp, &args[0])?;
    let vars = symbols(&args[1])?;
    let pattern = formula::sparsity(&expr, &roots, &vars);
    let vector = |data: Vec<f64>| {
        Value::tensor(
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[data.len()]), data).expect("a vector"),
        )
    };
    let rows = pattern.iter().map(|&(r, _)| r as f64).collect();
    let cols = pattern.iter().map(|&(_, c)| c as f64).collect();
    Ok(Value::list([vector(rows), vector(cols)]))
}

/// A symbol or a list of symbols.
fn symbols(value: &Value) -> EvalResult<Vec<egg::Symbol>> {
    match value {
        Value::Symbol(name) => Ok(vec![egg::Symbol::from(name.name())]),
        list => list
            .list_to_vec()?
            .iter()
            .map(|v| v.as_symbol().map(|s| egg::Symbol::from(s.name())))
            .collect(),
    }
}

/// Each root's term rendered by `render`, as strings in the argument's
/// nesting.
fn rendered(interp: &Interp, value: &Value, render: fn(&Term) -> String) -> EvalResult<Value> {
    let (expr, roots, nesting) = parsed(interp, value)?;
    let (_, terms) = formula::terms(&expr, &roots, &[]);
    let strings: Vec<Value> = terms
        .iter()
        .map(|t: &Rc<Term>| Value::string(render(t)))
        .collect();
    Ok(nesting.rebuild(&strings))
}

fn infix(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    rendered(interp, &args[0], formula::infix)
}

fn latex(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    rendered(interp, &args[0], formula::latex)
}

/// `cse`, `infix`, `latex`.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("cse", "(cse expr-or-list)", "A let* naming each subterm used more than once (t1, t2, ...) and then the expression (a list as (list ...)); evaluate, lambdify and the other symbolic functions read it.", 1, Some(1), cse),
    builtin("subs", "(subs expr '((x e1) (y e2)))", "expr (or a list of expressions) with each variable replaced by its expression, all at once; a variable the expression lacks is an error.", 2, Some(2), subs),
    with_options(builtin("codegen", "(codegen expr-or-list '(x y) :lang 'c :name \"f\")", "Source of a function of the variables computing the expression(s) with shared subterms as temporaries: 'c (results in out[] for a list), 'rust ([f64; n]) or 'python (NumPy); a function the language lacks is an error.", 2, Some(2), codegen), &["lang", "name"]),
    builtin("sparsity", "(sparsity expr-list vars)", "The Jacobian's entries that may be non-zero, read from the formulas, as (rows cols): two vectors, row-major, as sparse-jacobian lists them (sign passes no dependence on, heaviside only its value at zero).", 2, Some(2), sparsity),
    with_options(builtin("explain", "(explain expr :wrt 'x :assume '((x positive)))", "The rewrites from expr to its simplified form as text, one step a line: the rule, the subterm it rewrote and the whole expression after; with :wrt, first the derivative rule at each node and the unsimplified derivative.", 1, Some(1), explain), &["wrt", "assume"]),
    builtin("infix", "(infix expr)", "expr as infix text, x^2 + sin(x*y)/2, with parentheses only where needed (a list of expressions gives a list of strings).", 1, Some(1), infix),
    builtin("latex", "(latex expr)", "expr as LaTeX: \\frac, \\sqrt, powers, function names upright, Greek names as letters and trailing digits as subscripts (a list gives a list of strings).", 1, Some(1), latex),
];

fn explain(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut builder = crate::egraph::ExprBuilder::verbatim();
    let (roots, _) = exprs_from_value(
        &args[0],
        crate::reader::Span::NONE,
        &mut builder,
        &interp.symbolic.functions,
    )?;
    let [root] = roots[..] else {
        return Err(EvalError::type_error(format!(
            "explain takes one expression, got a list of {}",
            roots.len()
        )));
    };
    let wrt = match args.option("wrt") {
        None => None,
        Some(Value::Symbol(name)) => Some(egg::Symbol::from(name.name())),
        Some(other) => {
            return Err(EvalError::type_error(format!(
                "explain: :wrt is one variable, a symbol, not {}",
                other.short()
            )));
        }
    };
    let assumptions = super::symbolic::assumed(args)?;
    let expr = builder.into_expr();
    if wrt.is_some() {
        interp
            .symbolic
            .functions
            .check_differentiable(&expr)
            .map_err(EvalError::type_error)?;
    }
    let explanation = super::symbolic::with_options_of(interp, &assumptions, |options| {
        crate::egraph::explain::explain(&expr, root, wrt, options)
    });
    Ok(Value::string(explanation.to_string()))
}

/// How a symbolic result is shown (the REPL's `:sexp`, `:infix`, `:latex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    /// As Lisp data.
    Sexp,
    /// `infix`.
    Infix,
    /// `latex`.
    Latex,
}

/// `value` in `notation` when it is a symbolic expression with at least one
/// operation, or a (nested) list of expressions holding one: lists as
/// `[a, b]`. `None` for anything else (numbers, strings, tensors, plain
/// data), which shows as itself.
pub fn display(
    value: &Value,
    functions: &crate::egraph::Functions,
    notation: Notation,
) -> Option<String> {
    let render: fn(&Term) -> String = match notation {
        Notation::Sexp => return None,
        Notation::Infix => formula::infix,
        Notation::Latex => formula::latex,
    };
    if !has_operation(value, functions) {
        return None;
    }
    let mut builder = crate::egraph::ExprBuilder::new();
    let (roots, nesting) =
        exprs_from_value(value, crate::reader::Span::NONE, &mut builder, functions).ok()?;
    let (expr, roots) = crate::egraph::builder::compact(builder.expr(), &roots);
    let (_, terms) = formula::terms(&expr, &roots, &[]);
    let texts: Vec<String> = terms.iter().map(|t| render(t)).collect();
    Some(bracketed(&nesting, &texts))
}

fn has_operation(value: &Value, functions: &crate::egraph::Functions) -> bool {
    match value {
        Value::Pair(_) if crate::lisp::symbolic::is_expression(value, functions) => true,
        Value::Pair(_) => value.iter().any(|(item, _)| has_operation(item, functions)),
        _ => false,
    }
}

fn bracketed(nesting: &Nesting, texts: &[String]) -> String {
    // Formulas nest as deep as the data a loop built: the stack grows
    // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match nesting {
        Nesting::One(index) => texts[*index].clone(),
        Nesting::List(items) => {
            let inner: Vec<String> = items.iter().map(|i| bracketed(i, texts)).collect();
            format!("[{}]", inner.join(", "))
        }
    })
}

//! Symbolic differentiation on quoted expressions (SPEC section 4): `diff`,
//! `grad`, `jacobian`, `hessian`, `simplify`, `evaluate`, `lambdify`,
//! `expr-size`, user rules, and the simplifier's settings.

use super::{builtin, with_options};
use crate::backends::cpu::Buf;
use crate::egraph::derivatives::{self, Derived, Options};
use crate::egraph::{Assumptions, ExprBuilder, Functions, Level, Math, MathRewrite, Report};
use crate::ir::lift::{LiftError, lift, lift_into};
use crate::ir::math::eval::Program;
use crate::ir::{Shape, TensorGraph};
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, HostFn, Procedure};
use crate::lisp::symbol::Symbol;
use crate::lisp::symbolic::{
    Nesting, expr_from_value, expr_size, exprs_from_value, exprs_to_values, is_expression,
    pattern_from_value,
};
use crate::lisp::tensor::{broadcast_shape, check_allocation};
use crate::lisp::trace::{buf_to_value, node_of, traced, value_to_buf};
use crate::lisp::value::Value;
use crate::tape::compile as compile_tape;
use egg::{Id, Language, RecExpr, Rewrite};
use std::rc::Rc;
use std::time::Duration;

/// The variables of a `wrt` argument: a symbol or a list of symbols.
fn variables(value: &Value) -> EvalResult<Vec<egg::Symbol>> {
    let symbols: Vec<Value> = match value {
        Value::Symbol(_) => vec![value.clone()],
        _ => value.list_to_vec()?,
    };
    symbols
        .iter()
        .map(|item| match item {
            Value::Symbol(name) => Ok(egg::Symbol::from(name.name())),
            other => Err(EvalError::type_error(format!(
                "variables are symbols, got {}",
                other.short()
            ))),
        })
        .collect()
}

/// Runs a symbolic operation with the interpreter's settings, records its
/// reports for `simplify-stats` and prints a warning if a limit cut it short.
fn with_settings(
    interp: &mut Interp,
    name: &str,
    operation: impl FnOnce(&Options) -> Result<Derived, String>,
) -> EvalResult<Derived> {
    with_settings_assuming(interp, name, &derivatives::NO_ASSUMPTIONS, operation)
}

/// `with_settings` under assumptions on the variables.
fn with_settings_assuming(
    interp: &mut Interp,
    name: &str,
    assumptions: &Assumptions,
    operation: impl FnOnce(&Options) -> Result<Derived, String>,
) -> EvalResult<Derived> {
    let derived = with_options_of(interp, assumptions, operation).map_err(EvalError::range)?;
    let level = interp.symbolic.level;
    // One warning per operation: later runs of a call hit the same limit.
    if let Some(warning) = derived
        .reports
        .iter()
        .find_map(|report| report.warning(level))
    {
        interp.warn(&format!("{name}: {warning}"));
    }
    interp.symbolic.last_reports = derived.reports.clone();
    Ok(derived)
}

/// Runs `operation` with options made of the interpreter's settings (level,
/// limits, rules, functions) and `assumptions`.
pub(crate) fn with_options_of<T>(
    interp: &Interp,
    assumptions: &Assumptions,
    operation: impl FnOnce(&Options) -> T,
) -> T {
    let state = &interp.symbolic;
    let rules: Vec<MathRewrite> = state.rules.iter().map(|(_, rule)| rule.clone()).collect();
    let options = Options {
        level: state.level,
        limits: state.limits,
        rules: &rules,
        functions: &state.functions,
        assumptions,
        deadline: None,
    };
    operation(&options)
}

fn one_expr(interp: &Interp, value: &Value) -> EvalResult<(ExprBuilder, Id)> {
    let mut builder = ExprBuilder::new();
    let root = expr_from_value(
        value,
        crate::reader::Span::NONE,
        &mut builder,
        &interp.symbolic.functions,
    )?;
    Ok((builder, root))
}

/// Checks that the user functions `expr` calls have symbolic partials.
fn check_differentiable(interp: &Interp, expr: &RecExpr<Math>) -> EvalResult<()> {
    interp
        .symbolic
        .functions
        .check_differentiable(expr)
        .map_err(EvalError::type_error)?;
    check_defined(expr)
}

/// An expression with a part that has no value anywhere — no variable in
/// it and no finite value, as `(/ 1 0)` or `(log -1)` — has no
/// derivative: an error naming that part, rather than a derivative that
/// folds it away (the derivative of a constant is 0 only where the
/// constant exists).
fn check_defined(expr: &RecExpr<Math>) -> EvalResult<()> {
    let nodes = expr.as_ref();
    let mut values: Vec<Option<f64>> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let constant = node
            .children()
            .iter()
            .all(|&c| values[usize::from(c)].is_some());
        let value = if constant {
            crate::ir::math::eval::apply_op(node, |id| values[usize::from(id)].unwrap_or(f64::NAN))
        } else {
            None
        };
        if let Some(v) = value
            && !v.is_finite()
        {
            let part = node.build_recexpr(|id| nodes[usize::from(id)].clone());
            return Err(EvalError::range(format!(
                "the expression is undefined: {part} has no finite value ({v}), so it has no derivative"
            )));
        }
        values.push(value);
    }
    Ok(())
}

/// `n_rows` rows of `width` values each (rows are empty when `width` is 0).
fn rows(values: Vec<Value>, n_rows: usize, width: usize) -> Value {
    let row = |index: usize| Value::list(values[index * width..(index + 1) * width].to_vec());
    Value::list((0..n_rows).map(row).collect::<Vec<_>>())
}

/// The highest derivative order `diff` takes: each order is a full
/// differentiation and simplification, and a runaway order would not end.
const MAX_ORDER: usize = 100;

fn diff(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (builder, root) = one_expr(interp, &args[0])?;
    let var = match &args[1] {
        Value::Symbol(name) => egg::Symbol::from(name.name()),
        other => {
            return Err(EvalError::type_error(format!(
                "the variable must be a symbol, got {}",
                other.short()
            )));
        }
    };
    let order = match args.get(2) {
        None => 1,
        Some(n) => usize::try_from(n.as_i64()?)
            .ok()
            .filter(|&order| order <= MAX_ORDER)
            .ok_or_else(|| {
                EvalError::range(format!("the order of a derivative is 0 to {MAX_ORDER}"))
            })?,
    };
    let expr = builder.into_expr();
    check_differentiable(interp, &expr)?;
    let derived = with_settings(interp, "diff", |options| {
        derivatives::nth_derivative(&expr, root, var, order, options)
            .map_err(|too_large| too_large.to_string())
    })?;
    Ok(exprs_to_values(&derived.expr, &derived.roots).remove(0))
}

fn grad(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let Value::Procedure(_) = &args[0] {
        return super::autodiff::grad_of_function(args, false);
    }
    let Some(wrt) = args.get(1) else {
        return Err(EvalError::new(
            EvalErrorKind::Arity,
            "an expression needs its variables: (grad '(* x y) '(x y))",
        ));
    };
    let wrt = variables(wrt)?;
    let (builder, root) = one_expr(interp, &args[0])?;
    let expr = builder.into_expr();
    check_differentiable(interp, &expr)?;
    let derived = with_settings(interp, "grad", |options| {
        Ok(derivatives::jacobian(&expr, &[root], &wrt, options))
    })?;
    Ok(Value::list(exprs_to_values(&derived.expr, &derived.roots)))
}

fn jacobian(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let Value::Procedure(_) = &args[0] {
        return super::autodiff::jacobian_of_function(args);
    }
    let wrt = variables(args.get(1).unwrap_or(&Value::Nil))?;
    if !args[0].is_list() || is_expression(&args[0], &interp.symbolic.functions) {
        return Err(EvalError::type_error(
            "jacobian takes a list of expressions, such as '((* x y) (+ x y)); for one expression use grad",
        ));
    }
    let mut builder = ExprBuilder::new();
    let mut outputs = Vec::new();
    for (item, span) in args[0].iter() {
        outputs.push(expr_from_value(
            item,
            span,
            &mut builder,
            &interp.symbolic.functions,
        )?);
    }
    let expr = builder.into_expr();
    check_differentiable(interp, &expr)?;
    let derived = with_settings(interp, "jacobian", |options| {
        Ok(derivatives::jacobian(&expr, &outputs, &wrt, options))
    })?;
    Ok(rows(
        exprs_to_values(&derived.expr, &derived.roots),
        outputs.len(),
        wrt.len(),
    ))
}

fn hessian(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    if let Value::Procedure(_) = &args[0] {
        return super::autodiff::hessian_of_function(args);
    }
    let wrt = variables(args.get(1).unwrap_or(&Value::Nil))?;
    let (builder, root) = one_expr(interp, &args[0])?;
    let expr = builder.into_expr();
    check_differentiable(interp, &expr)?;
    let derived = with_settings(interp, "hessian", |options| {
        Ok(derivatives::hessian(&expr, root, &wrt, options))
    })?;
    Ok(rows(
        exprs_to_values(&derived.expr, &derived.roots),
        wrt.len(),
        wrt.len(),
    ))
}

fn simplify(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut builder = ExprBuilder::new();
    let (roots, nesting) = exprs_from_value(
        &args[0],
        crate::reader::Span::NONE,
        &mut builder,
        &interp.symbolic.functions,
    )?;
    let expr = builder.into_expr();
    let assumptions = assumed(args)?;
    let derived = with_settings_assuming(interp, "simplify", &assumptions, |options| {
        Ok(derivatives::simplify_all(&expr, &roots, options))
    })?;
    Ok(nesting.rebuild(&exprs_to_values(&derived.expr, &derived.roots)))
}

/// The `:assume` option of a call; none when it is not given.
pub(crate) fn assumed(args: &Args) -> EvalResult<Assumptions> {
    args.option("assume")
        .map_or_else(|| Ok(Assumptions::none()), assumptions)
}

/// `:assume '((x positive) (n integer))`: each entry a variable and one or
/// more properties.
fn assumptions(value: &Value) -> EvalResult<Assumptions> {
    let shape_error = |got: &Value| {
        EvalError::type_error(format!(
            ":assume takes a list of (variable property...) lists such as ((x positive) (n integer)), got {}",
            got.short()
        ))
    };
    let mut pairs = Vec::new();
    for entry in value.list_to_vec().map_err(|_| shape_error(value))? {
        let items = entry.list_to_vec().map_err(|_| shape_error(&entry))?;
        let Some((Value::Symbol(name), properties)) = items.split_first() else {
            return Err(shape_error(&entry));
        };
        if properties.is_empty() {
            return Err(shape_error(&entry));
        }
        for property in properties {
            let Value::Symbol(property) = property else {
                return Err(shape_error(&entry));
            };
            pairs.push((egg::Symbol::from(name.name()), property.name().to_string()));
        }
    }
    Assumptions::from_pairs(pairs.iter().map(|(name, p)| (*name, p.as_str())))
        .map_err(EvalError::range)
}

/// A compiled expression (or nested list of them) with its parameters.
struct Compiled {
    expr: RecExpr<crate::egraph::Math>,
    roots: Vec<egg::Id>,
    params: Vec<egg::Symbol>,
    tapes: std::cell::RefCell<rustc_hash::FxHashMap<Vec<Shape>, Rc<crate::tape::Tape>>>,
    nesting: Nesting,
    /// `pi` was not a parameter, so it is passed as the constant, last.
    pi_appended: bool,
    /// The user functions (`defderiv`) when compiled.
    functions: Functions,
    /// A rectangular list of lists returned as one tensor of the
    /// arguments' batch shape followed by `[rows, cols]` (`lambdify`).
    matrix: Option<(usize, usize)>,
}

impl Compiled {
    /// The results of `roots` (ids of `graph`) as the expression's value:
    /// the nesting rebuilt, or one stacked tensor for a matrix.
    fn results(&self, graph: &mut TensorGraph, roots: Vec<Id>) -> EvalResult<Vec<Id>> {
        let Some((rows, cols)) = self.matrix else {
            return Ok(roots);
        };
        graph
            .stack_matrix(&roots, rows, cols)
            .map(|id| vec![id])
            .ok_or_else(|| {
                let shapes: Vec<String> = roots
                    .iter()
                    .map(|&r| format!("{:?}", graph.shape(r).as_slice()))
                    .collect();
                EvalError::shape(format!(
                    "the matrix entries' shapes do not broadcast together: {}",
                    shapes.join(", ")
                ))
            })
    }

    /// One value per root of `results` as the expression's value.
    fn rebuild(&self, values: &[Value]) -> Value {
        match self.matrix {
            Some(_) => values[0].clone(),
            None => self.nesting.rebuild(values),
        }
    }
}

/// The rows and columns of `nesting` when it is a list of lists of
/// expressions, every row of the same non-zero length.
fn matrix_shape(nesting: &Nesting) -> Option<(usize, usize)> {
    let Nesting::List(rows) = nesting else {
        return None;
    };
    let mut cols = None;
    for row in rows {
        let Nesting::List(entries) = row else {
            return None;
        };
        if entries.is_empty()
            || entries.iter().any(|e| !matches!(e, Nesting::One(_)))
            || cols.is_some_and(|c| c != entries.len())
        {
            return None;
        }
        cols = Some(entries.len());
    }
    Some((rows.len(), cols?))
}

/// Compiles `exprs` as a function of `params`; `pi`, unless a parameter,
/// is the constant. With `as_matrix`, a rectangular list of lists gives one
/// tensor.
fn compile(
    exprs: &Value,
    params: &[egg::Symbol],
    functions: &Functions,
    as_matrix: bool,
) -> EvalResult<Compiled> {
    let mut builder = ExprBuilder::new();
    let (roots, nesting) =
        exprs_from_value(exprs, crate::reader::Span::NONE, &mut builder, functions)?;
    let expr: RecExpr<_> = builder.into_expr();
    functions
        .check_evaluable(&expr)
        .map_err(EvalError::type_error)?;
    let pi = egg::Symbol::from("pi");
    let pi_appended = !params.contains(&pi);
    let params: Vec<egg::Symbol> = params
        .iter()
        .copied()
        .chain(pi_appended.then_some(pi))
        .collect();
    // Unbound variables are reported now, not at the first call.
    Program::new(&expr, &roots, &params).map_err(|name| {
        EvalError::new(
            EvalErrorKind::Unbound,
            format!("no value for variable {name}"),
        )
    })?;
    let matrix = as_matrix.then(|| matrix_shape(&nesting)).flatten();
    Ok(Compiled {
        expr,
        roots,
        params,
        tapes: Default::default(),
        nesting,
        pi_appended,
        functions: functions.clone(),
        matrix,
    })
}

fn lift_error(error: LiftError) -> EvalError {
    match error {
        LiftError::Unbound(name) => EvalError::new(
            EvalErrorKind::Unbound,
            format!("no value for variable {name}"),
        ),
        LiftError::Shape(e) => EvalError::shape(e.0),
        LiftError::Function(message) => EvalError::type_error(message),
    }
}

/// Runs `compiled` on numbers or tensors (broadcast together; the
/// expression is applied elementwise) through a tape compiled once per
/// signature of argument shapes.
fn run_compiled(compiled: &Compiled, args: &[Value]) -> EvalResult<Value> {
    // Inside a differentiated function the formula is recorded in the
    // trace, so derivatives pass through it.
    if let Some(trace) = args.iter().find_map(|a| match a {
        Value::Traced(t) => Some(Rc::clone(&t.trace)),
        _ => None,
    }) {
        let mut nodes = args
            .iter()
            .map(|a| node_of(&trace, a))
            .collect::<EvalResult<Vec<_>>>()?;
        if compiled.pi_appended {
            nodes.push(trace.borrow_mut().number(std::f64::consts::PI));
        }
        let roots = {
            let mut borrowed = trace.borrow_mut();
            let roots = lift_into(
                &mut borrowed.graph,
                &compiled.expr,
                &compiled.roots,
                &compiled.params,
                &nodes,
                &compiled.functions,
            )
            .map_err(lift_error)?;
            compiled.results(&mut borrowed.graph, roots)?
        };
        let values: Vec<Value> = roots.iter().map(|&id| traced(&trace, id)).collect();
        return Ok(compiled.rebuild(&values));
    }
    let mut inputs: Vec<Buf> = args.iter().map(value_to_buf).collect::<EvalResult<_>>()?;
    if compiled.pi_appended {
        inputs.push(Buf::Scalar(std::f64::consts::PI));
    }
    let shapes: Vec<Shape> = inputs.iter().map(|b| Shape::from(b.shape())).collect();
    let cached = compiled.tapes.borrow().get(&shapes).cloned();
    let tape = match cached {
        Some(tape) => tape,
        None => {
            let (mut graph, roots) = lift(
                &compiled.expr,
                &compiled.roots,
                &compiled.params,
                &shapes,
                &compiled.functions,
            )
            .map_err(lift_error)?;
            let roots = compiled.results(&mut graph, roots)?;
            let out_shape = roots
                .iter()
                .try_fold(Vec::new(), |acc, &r| broadcast_shape(&acc, graph.shape(r)))?;
            check_allocation(&out_shape)?;
            let tape = Rc::new(compile_tape(graph.expr(), graph.shapes(), &roots, &shapes));
            compiled.tapes.borrow_mut().insert(shapes, Rc::clone(&tape));
            tape
        }
    };
    let outputs = crate::backends::run(&tape, &inputs).map_err(|e| EvalError::shape(e.message))?;
    let values: Vec<Value> = outputs.into_iter().map(buf_to_value).collect();
    Ok(compiled.rebuild(&values))
}

fn evaluate(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut params = Vec::new();
    let mut values = Vec::new();
    for (binding, _) in args[1].iter() {
        let (name, value) = match binding {
            Value::Pair(pair) => match &pair.cdr {
                Value::Pair(rest) if rest.cdr.is_nil() => (&pair.car, &rest.car),
                Value::Pair(_) => return Err(EvalError::type_error("a binding is (name value)")),
                value => (&pair.car, value),
            },
            other => {
                return Err(EvalError::type_error(format!(
                    "a binding is (name value), got {}",
                    other.short()
                )));
            }
        };
        let Value::Symbol(name) = name else {
            return Err(EvalError::type_error(format!(
                "a binding's name is a symbol, got {}",
                name.short()
            )));
        };
        let name = egg::Symbol::from(name.name());
        if params.contains(&name) {
            return Err(EvalError::type_error(format!("{name} is bound twice")));
        }
        params.push(name);
        values.push(value.clone());
    }
    if !args[1].is_list() {
        return Err(EvalError::type_error("bindings are a list of (name value)"));
    }
    let compiled = compile(&args[0], &params, &interp.symbolic.functions, false)?;
    run_compiled(&compiled, &values)
}

fn lambdify(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let params = variables(&args[0])?;
    if let Some(name) = params
        .iter()
        .enumerate()
        .find_map(|(i, p)| params[..i].contains(p).then_some(p))
    {
        return Err(EvalError::type_error(format!(
            "the parameter {name} appears twice"
        )));
    }
    let arity = params.len();
    let compiled = compile(&args[1], &params, &interp.symbolic.functions, true)?;
    let func = move |call_args: &[Value]| {
        if call_args.len() != arity {
            return Err(EvalError::new(
                EvalErrorKind::Arity,
                format!(
                    "this lambdified function takes {arity} argument{}, got {}",
                    if arity == 1 { "" } else { "s" },
                    call_args.len()
                ),
            ));
        }
        run_compiled(&compiled, call_args)
    };
    let host = HostFn {
        name: Symbol::intern("lambdified"),
        func: Box::new(func),
    };
    Ok(Value::Procedure(Rc::new(Procedure::Host(host))))
}

fn size(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Int(
        expr_size(&args[0], &interp.symbolic.functions)? as i64
    ))
}

fn add_rule(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let name = args[0].as_symbol()?;
    let lhs = pattern_from_value(&args[1], "left")?;
    let rhs = pattern_from_value(&args[2], "right")?;
    let rule: MathRewrite = Rewrite::new(format!("user/{}", name.name()), lhs.clone(), rhs.clone())
        .map_err(|err| EvalError::syntax(format!("rule {}: {err}", name.name())))?;
    if let Some(message) = crate::egraph::rules::check::counterexample(&lhs, &rhs) {
        interp.warn(&format!(
            "defrule {}: the two sides differ: {message}",
            name.name()
        ));
    }
    let rules = &mut interp.symbolic.rules;
    rules.retain(|(existing, _)| *existing != name);
    rules.push((name, rule));
    Ok(Value::Symbol(name))
}

fn set_optimize(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let level = Level::from_number(args[0].as_i64()?)
        .ok_or_else(|| EvalError::range("the optimization level is 0, 1 or 2"))?;
    interp.symbolic.level = level;
    interp.symbolic.limits = level.default_limits();
    Ok(Value::Void)
}

fn set_simplify_limits(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let limits = &mut interp.symbolic.limits;
    if let Some(nodes) = args.option("nodes") {
        limits.nodes = usize::try_from(nodes.as_i64()?)
            .map_err(|_| EvalError::range(":nodes must be a non-negative integer"))?;
    }
    if let Some(iterations) = args.option("iterations") {
        limits.iterations = usize::try_from(iterations.as_i64()?)
            .map_err(|_| EvalError::range(":iterations must be a non-negative integer"))?;
    }
    if let Some(seconds) = args.option("seconds") {
        let seconds = seconds.as_f64()?;
        limits.time = Duration::try_from_secs_f64(seconds).map_err(|_| {
            EvalError::range(
                ":seconds must be a non-negative number of seconds (at most about 10^19)",
            )
        })?;
    }
    Ok(Value::Void)
}

fn report_value(report: &Report) -> Value {
    let pair = |key: &str, value: Value| Value::cons(Value::symbol(key), value);
    Value::list(vec![
        pair(
            "stop",
            Value::symbol(&report.stop.describe().replace(' ', "-")),
        ),
        pair("iterations", Value::Int(report.iterations as i64)),
        pair("egraph-nodes", Value::Int(report.egraph_nodes as i64)),
        pair("egraph-classes", Value::Int(report.egraph_classes as i64)),
        pair("cost-before", Value::Int(report.cost_before as i64)),
        pair("cost-after", Value::Int(report.cost_after as i64)),
        pair(
            "extraction",
            Value::symbol(&format!("{:?}", report.extraction).to_lowercase()),
        ),
        pair("seconds", Value::Float(report.elapsed.as_secs_f64())),
    ])
}

fn simplify_stats(interp: &mut Interp, _: &Args) -> EvalResult<Value> {
    Ok(Value::list(
        interp
            .symbolic
            .last_reports
            .iter()
            .map(report_value)
            .collect::<Vec<_>>(),
    ))
}

#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("diff", "(diff expr var [n])", "The (n-th) derivative of the quoted expression expr with respect to the symbol var, simplified.", 2, Some(3), diff),
    with_options(builtin("grad", "(grad expr vars) or (grad f :wrt k)", "On a quoted expression: the list of partial derivatives with respect to each symbol of vars, simplified together. On a function: a function returning the gradient with respect to argument k (default 0; a list of positions or 'all gives a list of gradients). Of a real function of complex arguments: JAX's convention, df/dx - i df/dy (the conjugate of PyTorch's); :holomorphic #t gives the complex derivative f'(z) of a holomorphic function.", 1, Some(2), grad), &["wrt", "holomorphic"]),
    with_options(builtin("jacobian", "(jacobian exprs vars) or (jacobian f)", "On a list of expressions: one row of partial derivatives per expression. On a function: a function returning the dense Jacobian with respect to its first argument (result axes first); complex arguments or results follow JAX (:holomorphic #t for a complex function of a complex argument).", 1, Some(2), jacobian), &["holomorphic"]),
    builtin("hessian", "(hessian expr vars) or (hessian f)", "On an expression: the Hessian as a list of rows, exactly symmetric. On a function: a function returning the dense Hessian with respect to its first argument (forward over reverse).", 1, Some(2), hessian),
    with_options(builtin("simplify", "(simplify expr :assume '((x positive) (n integer)))", "expr simplified by equality saturation (a list of expressions is simplified jointly); :assume lets rules use signs (positive, negative, nonnegative, nonpositive, nonzero, zero) and integer of variables.", 1, Some(1), simplify), &["assume"]),
    builtin("evaluate", "(evaluate expr bindings)", "The value of expr (or a list of expressions) with bindings ((x 1.0) (y 2.0)); tensors apply elementwise.", 2, Some(2), evaluate),
    builtin("lambdify", "(lambdify vars expr)", "A function of vars computing expr (or a list of expressions) on numbers or, elementwise, tensors; a matrix (list of equal-length lists) gives one tensor, the arguments' broadcast shape then (rows cols).", 2, Some(2), lambdify),
    builtin("expr-size", "(expr-size expr)", "Node count of expr as a DAG (shared subterms once); on a list of expressions, the count over all jointly.", 1, Some(1), size),
    builtin("add-rule!", "(add-rule! name lhs rhs)", "Adds the rewrite lhs => rhs (egg patterns, ?a for variables) to the simplifier; defrule is the usual spelling.", 3, Some(3), add_rule),
    builtin("set-optimize!", "(set-optimize! level)", "0: no e-graph; 1: bounded saturation (default); 2: level 1, then saturation from its result to a fixed point or the larger limits (5 s), keeping the cheaper.", 1, Some(1), set_optimize),
    with_options(builtin("set-simplify-limits!", "(set-simplify-limits! :nodes n :iterations k :seconds s)", "Sets the limits of each saturation run.", 0, Some(0), set_simplify_limits), &["nodes", "iterations", "seconds"]),
    builtin("simplify-stats", "(simplify-stats)", "Reports of the last symbolic operation's saturation runs: stop reason, iterations, e-graph size, costs, time.", 0, Some(0), simplify_stats),
];

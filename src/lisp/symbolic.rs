//! The glue between Lisp data and the e-graph layer: quoted expressions to
//! `RecExpr<Math>` and back, lists of expressions (gradients, Hessian rows)
//! with their nesting, user rules, and the interpreter's symbolic settings.

use super::error::{EvalError, EvalResult};
use super::printer::write_string;
use super::symbol::Symbol;
use super::value::{Pair, Value};
use crate::egraph::builder::compact;
use crate::egraph::{ExprBuilder, Functions, Level, Limits, Math, MathRewrite, Report};
use crate::formula::Term;
use crate::ir::math::functions::Formula;
use crate::ir::math::language::{Constant, OPERATORS, operator_arity};
use crate::reader::Span;
use egg::{Id, Language, Pattern, RecExpr};
use std::collections::HashMap;
use std::rc::Rc;

/// Symbolic settings of an interpreter: `set-optimize!`, the limits, user
/// rules, and the reports of the last operation (`simplify-stats`).
pub struct SymbolicState {
    /// The optimization level.
    pub level: Level,
    /// Limits for each saturation run.
    pub limits: Limits,
    /// User rules by name, in definition order.
    pub rules: Vec<(Symbol, MathRewrite)>,
    /// User functions with declared partial derivatives (`defderiv`).
    pub functions: Functions,
    /// Reports of the last symbolic operation.
    pub last_reports: Vec<Report>,
}

impl Default for SymbolicState {
    fn default() -> Self {
        SymbolicState {
            level: Level::Bounded,
            limits: Level::Bounded.default_limits(),
            rules: Vec::new(),
            functions: Functions::default(),
            last_reports: Vec::new(),
        }
    }
}

/// How results nest: one expression, or a list of such.
#[derive(Clone, Debug)]
pub enum Nesting {
    /// The expression with this index among the flattened roots.
    One(usize),
    /// A list.
    List(Vec<Nesting>),
}

/// A list of expressions nested as deep as the data it came from would
/// otherwise be dropped recursively; this unlinks its levels iteratively.
impl Drop for Nesting {
    fn drop(&mut self) {
        let Nesting::List(items) = self else {
            return;
        };
        let mut pending = std::mem::take(items);
        while let Some(mut item) = pending.pop() {
            if let Nesting::List(inner) = &mut item {
                pending.append(inner);
            }
        }
    }
}

impl Nesting {
    /// Rebuilds the nested value from one value per flattened root.
    pub fn rebuild(&self, values: &[Value]) -> Value {
        // Formulas nest as deep as the data a loop built: the stack grows
        // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match self {
            Nesting::One(index) => values[*index].clone(),
            Nesting::List(items) => Value::list(
                items
                    .iter()
                    .map(|item| item.rebuild(values))
                    .collect::<Vec<_>>(),
            ),
        })
    }
}

/// Whether `value` reads as one expression (a number, a symbol, or a call
/// of an operator or of a function of `functions`) rather than a list of
/// expressions.
///
/// A list headed by anything but an operator is a list of expressions: the
/// gradient `(y (+ (cos y) x))` starts with the variable `y`. (Variables
/// never take operator names, so the two cannot be confused.)
pub fn is_expression(value: &Value, functions: &Functions) -> bool {
    match value {
        Value::Pair(pair) => matches!(&pair.car, Value::Symbol(head)
            if is_operator_name(head.name())
                || functions.arity(egg::Symbol::from(head.name())).is_some()),
        Value::Int(_) | Value::Float(_) | Value::Symbol(_) => true,
        _ => false,
    }
}

fn is_operator_name(name: &str) -> bool {
    operator_arity(name).is_some() || name == "multigammaln"
}

/// `(multigammaln x p)` for a whole number p (a literal): the sum
/// p (p - 1)/4 ln(pi) + lgamma(x) + lgamma(x - 1/2) + ... + lgamma(x - (p-1)/2),
/// which every symbolic operation then differentiates and simplifies.
fn multigammaln(args: &[Id], builder: &mut ExprBuilder) -> Result<Id, String> {
    let p = match builder.constant(args[1]) {
        Some(p) if p.fract() == 0.0 && (1.0..=100.0).contains(&p) => p,
        _ => {
            return Err(
                "multigammaln takes a whole number p from 1 to 100 as its second argument in a symbolic expression"
                    .to_string(),
            );
        }
    };
    let x = args[0];
    let mut sum = builder.add(Math::Lgamma([x]));
    let mut j = 2.0;
    while j <= p {
        let offset = builder.num((1.0 - j) / 2.0);
        let shifted = builder.add2(x, offset);
        let term = builder.add(Math::Lgamma([shifted]));
        sum = builder.add2(sum, term);
        j += 1.0;
    }
    let constant = builder.num(p * (p - 1.0) / 4.0 * std::f64::consts::PI.ln());
    Ok(builder.add2(constant, sum))
}

/// Adds `value` — one expression or a (nested) list of them — to `builder`,
/// returning the roots in order and their nesting.
pub fn exprs_from_value(
    value: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    functions: &Functions,
) -> EvalResult<(Vec<Id>, Nesting)> {
    exprs_in_scope(value, span, builder, &mut Vec::new(), functions)
}

/// `exprs_from_value` with the variables of `scope` standing for the nodes
/// they are bound to (`subs`).
pub fn exprs_in_scope(
    value: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    scope: &mut Scope,
    functions: &Functions,
) -> EvalResult<(Vec<Id>, Nesting)> {
    let mut roots = Vec::new();
    let nesting = collect_exprs(value, span, builder, &mut roots, scope, functions)?;
    Ok((roots, nesting))
}

/// Names bound by the `let*` forms around an expression (what `cse`
/// writes), innermost last.
pub type Scope = Vec<(egg::Symbol, Id)>;

fn collect_exprs(
    value: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    roots: &mut Vec<Id>,
    scope: &mut Scope,
    functions: &Functions,
) -> EvalResult<Nesting> {
    // Formulas nest as deep as the data a loop built: the stack grows
    // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let Some((bindings, body)) = let_star(value) {
            let depth = scope.len();
            bind(bindings, span, builder, scope, functions)?;
            let nesting = collect_exprs(body, span, builder, roots, scope, functions);
            scope.truncate(depth);
            return nesting;
        }
        if is_expression(value, functions) || !matches!(value, Value::Pair(_)) {
            let mut memo = HashMap::new();
            roots.push(convert(value, span, builder, &mut memo, scope, functions)?);
            return Ok(Nesting::One(roots.len() - 1));
        }
        if !value.is_list() {
            return Err(
                EvalError::type_error("a list of expressions must be a proper list").at(span),
            );
        }
        // `(list e1 e2 ...)` (as `cse` writes a list) or the data `(e1 e2 ...)`.
        let items = match value {
            Value::Pair(pair) if matches!(&pair.car, Value::Symbol(s) if s.name() == "list") => {
                pair.cdr.clone()
            }
            _ => value.clone(),
        };
        let mut nested = Vec::new();
        for (item, item_span) in items.iter() {
            nested.push(collect_exprs(
                item,
                item_span.or(span),
                builder,
                roots,
                scope,
                functions,
            )?);
        }
        Ok(Nesting::List(nested))
    })
}

/// The bindings and body of `(let* ((name expr) ...) body)`.
fn let_star(value: &Value) -> Option<(&Value, &Value)> {
    let Value::Pair(pair) = value else {
        return None;
    };
    if !matches!(&pair.car, Value::Symbol(s) if s.name() == "let*" || s.name() == "let") {
        return None;
    }
    let Value::Pair(rest) = &pair.cdr else {
        return None;
    };
    let Value::Pair(body) = &rest.cdr else {
        return None;
    };
    body.cdr.is_nil().then_some((&rest.car, &body.car))
}

/// Converts each `(name expr)` of `bindings` in order, each seeing the
/// ones before, and adds them to `scope`.
fn bind(
    bindings: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    scope: &mut Scope,
    functions: &Functions,
) -> EvalResult<()> {
    if !bindings.is_list() {
        return Err(EvalError::type_error("let* bindings must be a list").at(span));
    }
    for (binding, binding_span) in bindings.iter() {
        let at = binding_span.or(span);
        let parts: Vec<&Value> = binding.iter().map(|(v, _)| v).collect();
        let (Value::Symbol(name), [_, expr]) =
            (parts.first().copied().unwrap_or(&Value::Nil), &parts[..])
        else {
            return Err(EvalError::type_error(format!(
                "a let* binding is (name expression), not {}",
                binding.short()
            ))
            .at(at));
        };
        let mut memo = HashMap::new();
        let id = convert(expr, at, builder, &mut memo, scope, functions)?;
        scope.push((egg::Symbol::from(name.name()), id));
    }
    Ok(())
}

/// Adds one quoted expression to `builder`. `+ * - / min max` take any
/// number of arguments (folded to the left); `(heaviside x)` means
/// `(heaviside x 0.5)`; functions of `functions` (`defderiv`) are calls.
/// Errors point at the offending subexpression.
pub fn expr_from_value(
    value: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    functions: &Functions,
) -> EvalResult<Id> {
    convert(
        value,
        span,
        builder,
        &mut HashMap::new(),
        &mut Vec::new(),
        functions,
    )
}

/// `expr_from_value` with a memo of the cons cells already converted, so a
/// shared subterm (a DAG built in Lisp) is converted once, not once per path.
fn convert(
    value: &Value,
    span: Span,
    builder: &mut ExprBuilder,
    memo: &mut HashMap<*const Pair, Id>,
    scope: &mut Scope,
    functions: &Functions,
) -> EvalResult<Id> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        match value {
        Value::Int(n) => Ok(builder.num(*n as f64)),
        Value::Float(x) => match Constant::new(*x) {
            Some(constant) => Ok(builder.constant_node(constant)),
            None => Err(EvalError::range(format!(
                "symbolic expressions take finite numbers, not {x}"
            ))
            .at(span)),
        },
        Value::Symbol(name) if is_operator_name(name.name()) => Err(EvalError::type_error(
            format!("{} is an operator, not a variable", name.name()),
        )
        .at(span)),
        Value::Symbol(name) => {
            let name = egg::Symbol::from(name.name());
            match scope.iter().rev().find(|(bound, _)| *bound == name) {
                Some(&(_, id)) => Ok(id),
                None => Ok(builder.var(name)),
            }
        }
        Value::Pair(pair) => {
            if let Some(&id) = memo.get(&Rc::as_ptr(pair)) {
                return Ok(id);
            }
            if let Some((bindings, body)) = let_star(value) {
                // Names are looked up, not memoized: the body's cells are
                // converted under this scope only.
                let depth = scope.len();
                bind(bindings, span, builder, scope, functions)?;
                let mut inner = HashMap::new();
                let id = convert(body, span, builder, &mut inner, scope, functions);
                scope.truncate(depth);
                return id;
            }
            let Value::Symbol(head) = &pair.car else {
                return Err(EvalError::type_error(format!(
                    "a symbolic expression starts with an operator, not {}",
                    pair.car.short()
                ))
                .at(span));
            };
            let head_span = pair.span.or(span);
            let mut args = Vec::new();
            let mut iter = pair.cdr.iter();
            for (arg, arg_span) in iter.by_ref() {
                args.push(convert(
                    arg,
                    arg_span.or(span),
                    builder,
                    memo,
                    scope,
                    functions,
                )?);
            }
            if !iter.rest().is_nil() {
                return Err(
                    EvalError::type_error("a symbolic expression must be a proper list")
                        .at(head_span),
                );
            }
            let id = call_node(head.name(), &args, builder, functions)
                .map_err(|message| EvalError::type_error(message).at(head_span))?;
            memo.insert(Rc::as_ptr(pair), id);
            Ok(id)
        }
        Value::Complex(_) => Err(EvalError::type_error(format!(
            "a symbolic expression is made of real numbers, symbols and operator calls, not the complex number {}: write the real and imaginary parts as two expressions, or differentiate numerically with grad (docs/complex.md)",
            value.short()
        ))
        .at(span)),
        other => Err(EvalError::type_error(format!(
            "a symbolic expression is made of numbers, symbols and operator calls, not {} {}",
            other.type_name(),
            other.short()
        ))
        .at(span)),
    }
    })
}

fn call_node(
    op: &str,
    args: &[Id],
    builder: &mut ExprBuilder,
    functions: &Functions,
) -> Result<Id, String> {
    let fold = |builder: &mut ExprBuilder, make: fn([Id; 2]) -> Math| {
        args[1..]
            .iter()
            .fold(args[0], |acc, &arg| builder.add(make([acc, arg])))
    };
    match (op, args.len()) {
        ("+", 0) => Ok(builder.num(0.0)),
        ("*", 0) => Ok(builder.num(1.0)),
        ("-" | "/" | "min" | "max", 0) => Err(format!(
            "{op} takes at least 1 argument in a symbolic expression, got 0"
        )),
        ("+" | "*" | "min" | "max", 1) => Ok(args[0]),
        ("-", 1) => Ok(builder.neg(args[0])),
        ("/", 1) => {
            let one = builder.num(1.0);
            Ok(builder.div(one, args[0]))
        }
        ("heaviside", 1) => {
            let half = builder.num(0.5);
            Ok(builder.add(Math::Heaviside([args[0], half])))
        }
        ("+", _) => Ok(fold(builder, Math::Add)),
        ("*", _) => Ok(fold(builder, Math::Mul)),
        ("-", _) => Ok(fold(builder, Math::Sub)),
        ("/", _) => Ok(fold(builder, Math::Div)),
        ("min", _) => Ok(fold(builder, Math::Min)),
        ("max", _) => Ok(fold(builder, Math::Max)),
        ("multigammaln", 2) => multigammaln(args, builder),
        ("multigammaln", n) => Err(format!(
            "multigammaln takes 2 arguments in a symbolic expression, got {n}"
        )),
        _ => match operator_arity(op) {
            Some(arity) if arity == args.len() => Math::from_op_name(op, args)
                .map(|node| builder.add(node))
                .ok_or_else(|| format!("cannot build ({op} ...)")),
            Some(arity) => Err(format!(
                "{op} takes {arity} argument{} in a symbolic expression, got {}",
                if arity == 1 { "" } else { "s" },
                args.len()
            )),
            None => match functions.arity(egg::Symbol::from(op)) {
                Some(arity) if arity == args.len() => Ok(builder.add(Math::Call(
                    egg::Symbol::from(op),
                    args.to_vec().into_boxed_slice(),
                ))),
                Some(arity) => Err(format!(
                    "{op} takes {arity} argument{}, got {}",
                    if arity == 1 { "" } else { "s" },
                    args.len()
                )),
                None => Err(format!(
                    "{op} is not a differentiable operator; symbolic expressions use {} (or functions defined with defderiv)",
                    OPERATORS
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join(" ")
                )),
            },
        },
    }
}

/// A `defderiv` body or partial as a formula of `params`: a quoted
/// expression whose free symbols are the parameters or globals bound to
/// numbers (which become those numbers); calls of `functions` are calls.
/// The error says why it is no symbolic expression.
pub fn formula_from_value(
    value: &Value,
    params: &[egg::Symbol],
    functions: &Functions,
    global_number: impl Fn(&str) -> Option<f64>,
) -> Result<Formula, String> {
    let mut builder = ExprBuilder::new();
    let root = expr_from_value(value, Span::NONE, &mut builder, functions)
        .map_err(|error| error.into_message())?;
    let expr = builder.into_expr();
    let mut out = ExprBuilder::new();
    let mut ids: Vec<Id> = Vec::with_capacity(expr.len());
    for node in expr.as_ref() {
        let id = match node {
            Math::Var(name) if params.contains(name) => out.var(*name),
            Math::Var(name) => match global_number(name.as_str()).and_then(Constant::new) {
                Some(constant) => out.constant_node(constant),
                None => {
                    return Err(format!("{name} is neither an argument nor a global number"));
                }
            },
            op => out.add(op.clone().map_children(|c| ids[usize::from(c)])),
        };
        ids.push(id);
    }
    let (expr, roots) = compact(out.expr(), &[ids[usize::from(root)]]);
    Ok(Formula {
        expr,
        root: roots[0],
    })
}

/// The values of `roots` of `expr` as Lisp data, shared subterms as shared
/// cons cells, under the printing rules of `formula::term` (sums and
/// products spliced into their own operator's users, numbers first in
/// products, numbers folded).
pub fn exprs_to_values(expr: &RecExpr<Math>, roots: &[Id]) -> Vec<Value> {
    let (_, terms) = crate::formula::terms(expr, roots, &[]);
    let mut memo = HashMap::new();
    terms.iter().map(|t| term_value(t, &mut memo)).collect()
}

/// A shown term as Lisp data; a term reached twice is one value.
pub fn term_value(term: &Rc<Term>, memo: &mut HashMap<*const Term, Value>) -> Value {
    // Formulas nest as deep as the data a loop built: the stack grows
    // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let Some(value) = memo.get(&Rc::as_ptr(term)) {
            return value.clone();
        }
        let value = match &**term {
            Term::Num(constant) => number_value(*constant),
            Term::Var(name) => Value::symbol(name.as_str()),
            Term::Apply(op, args) => Value::list(
                std::iter::once(Value::symbol(op.as_str()))
                    .chain(args.iter().map(|a| term_value(a, memo)))
                    .collect::<Vec<_>>(),
            ),
        };
        memo.insert(Rc::as_ptr(term), value.clone());
        value
    })
}

/// A constant as Lisp data: integers as integers.
pub fn number_value(constant: Constant) -> Value {
    let value = constant.get();
    if constant.is_integer() && value.abs() < 9.0e15 {
        Value::Int(value as i64)
    } else {
        Value::Float(value)
    }
}

/// The number of distinct subterms of `value` (one expression, or a nested
/// list of expressions counted jointly, the lists themselves not counted).
/// Numbers and symbols count as nodes; a call counts once however many
/// arguments it has.
pub fn expr_size(value: &Value, functions: &Functions) -> EvalResult<usize> {
    // Converting checks operators, arities and atoms, with the same errors
    // as `diff` gives.
    exprs_from_value(value, Span::NONE, &mut ExprBuilder::new(), functions)?;
    let mut terms = TermTable::default();
    let mut pending = vec![value];
    while let Some(item) = pending.pop() {
        if matches!(item, Value::Pair(_)) && !is_expression(item, functions) {
            pending.extend(item.iter().map(|(element, _)| element));
        } else {
            terms.intern(item);
        }
    }
    Ok(terms.ids.len())
}

/// Hash-consing of Lisp terms: equal terms get equal ids.
#[derive(Default)]
struct TermTable {
    ids: HashMap<TermKey, usize>,
    /// Cons cells already interned: shared cells are walked once.
    seen: HashMap<*const Pair, usize>,
}

#[derive(PartialEq, Eq, Hash)]
enum TermKey {
    Number(u64),
    Atom(String),
    Call(String, Vec<usize>),
}

impl TermTable {
    /// The id of `term`, interning it and all its subterms (explicit stack:
    /// expressions may be deep).
    fn intern(&mut self, term: &Value) -> usize {
        let mut done: Vec<usize> = Vec::new();
        let mut stack = vec![(term, false)];
        while let Some((item, children_done)) = stack.pop() {
            match item {
                Value::Pair(pair) if children_done => {
                    let n = pair.cdr.iter().count();
                    let children = done.split_off(done.len() - n);
                    let id = self.id(TermKey::Call(write_string(&pair.car), children));
                    self.seen.insert(Rc::as_ptr(pair), id);
                    done.push(id);
                }
                Value::Pair(pair) if self.seen.contains_key(&Rc::as_ptr(pair)) => {
                    done.push(self.seen[&Rc::as_ptr(pair)]);
                }
                Value::Pair(pair) => {
                    stack.push((item, true));
                    // The operator is part of the call's key, not a node;
                    // arguments are pushed in reverse so they finish in order.
                    let args: Vec<&Value> = pair.cdr.iter().map(|(arg, _)| arg).collect();
                    stack.extend(args.into_iter().rev().map(|arg| (arg, false)));
                }
                // Numbers are keyed by value: 1 and 1.0 are one constant.
                Value::Int(n) => done.push(self.id(TermKey::Number((*n as f64).to_bits()))),
                Value::Float(x) => done.push(self.id(TermKey::Number((x + 0.0).to_bits()))),
                atom => done.push(self.id(TermKey::Atom(write_string(atom)))),
            }
        }
        done.pop().unwrap_or(0)
    }

    fn id(&mut self, key: TermKey) -> usize {
        let next = self.ids.len();
        *self.ids.entry(key).or_insert(next)
    }
}

/// Parses a user rule side: Lisp data in egg's pattern syntax (`?a`).
pub fn pattern_from_value(value: &Value, side: &str) -> EvalResult<Pattern<Math>> {
    check_pattern(value)
        .map_err(|message| EvalError::syntax(format!("the {side} side: {message}")))?;
    let text = write_string(value);
    text.parse::<Pattern<Math>>().map_err(|err| {
        EvalError::syntax(format!(
            "the {side} side {text} is not a pattern: {err}; patterns use the operators {} with + - * binary, and ?names for variables",
            OPERATORS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(" ")
        ))
    })
}

/// How deep a rule pattern may nest: egg parses patterns recursively.
const MAX_PATTERN_DEPTH: usize = 1_000;

/// Checks that `value` is made of finite numbers, symbols (`?a` for
/// pattern variables) and proper calls of operators with their arity (`+ -
/// *` binary, as in the e-graph).
fn check_pattern(value: &Value) -> Result<(), String> {
    let mut pending = vec![(value, 0usize)];
    while let Some((item, depth)) = pending.pop() {
        if depth > MAX_PATTERN_DEPTH {
            return Err(format!(
                "patterns nest at most {MAX_PATTERN_DEPTH} calls deep"
            ));
        }
        match item {
            Value::Int(_) | Value::Symbol(_) => {}
            Value::Float(x) if x.is_finite() => {}
            Value::Float(x) => return Err(format!("patterns take finite numbers, not {x}")),
            Value::Pair(pair) => {
                let Value::Symbol(head) = &pair.car else {
                    return Err(format!(
                        "a pattern call starts with an operator, not {}",
                        pair.car.short()
                    ));
                };
                if !item.is_list() {
                    return Err("a pattern must be a proper list".to_string());
                }
                let args: Vec<&Value> = pair.cdr.iter().map(|(arg, _)| arg).collect();
                match operator_arity(head.name()) {
                    Some(arity) if arity == args.len() => {
                        pending.extend(args.into_iter().map(|arg| (arg, depth + 1)))
                    }
                    Some(arity) => {
                        return Err(format!(
                            "{} takes {arity} argument{} in a pattern, got {}",
                            head.name(),
                            if arity == 1 { "" } else { "s" },
                            args.len()
                        ));
                    }
                    None => {
                        return Err(format!(
                            "{} is not an operator of symbolic expressions",
                            head.name()
                        ));
                    }
                }
            }
            other => {
                return Err(format!(
                    "patterns are made of numbers, symbols and operator calls, not {} {}",
                    other.type_name(),
                    other.short()
                ));
            }
        }
    }
    Ok(())
}

//! Symbolic differentiation from Rust, without an interpreter:
//! `epsilon::symbolic::{diff, grad, hessian, simplify, explain}` on expression text
//! or on parsed [`Expr`]s, with the default settings (bounded saturation).
//!
//! ```
//! let d = epsilon::symbolic::diff("(* x (sin x))", "x")?;
//! assert_eq!(d.to_string(), "(+ (sin x) (* x (cos x)))");
//! let at = d.eval(&[("x", 0.5)])?;
//! assert!((at - (0.5f64.sin() + 0.5 * 0.5f64.cos())).abs() < 1e-15);
//! let g = epsilon::symbolic::grad("(* x y z)", &["x", "y", "z"])?;
//! assert_eq!(g[0].to_string(), "(* y z)");
//! # Ok::<(), epsilon::Error>(())
//! ```

use crate::egraph::derivatives::{self, Derived, Options};
pub use crate::egraph::explain::Explanation;
use crate::egraph::{ExprBuilder, Math, builder};
use crate::error::Error;
use crate::ir::math::eval::evaluate;
use crate::lisp::EvalError;
use crate::lisp::printer::write_string;
use crate::lisp::source::SourceMap;
use crate::lisp::symbolic::{expr_from_value, expr_size, exprs_to_values};
use crate::reader;
use egg::{Id, RecExpr, Symbol};
use std::fmt;
use std::str::FromStr;

/// A scalar expression over the differentiable operators (SPEC section 4).
/// `Display` prints it as an s-expression, as the REPL would.
#[derive(Clone, Debug)]
pub struct Expr {
    expr: RecExpr<Math>,
    root: Id,
}

impl Expr {
    /// Parses expression text such as `"(* x (sin y))"`.
    pub fn parse(text: &str) -> Result<Expr, Error> {
        Expr::parse_into(text, ExprBuilder::new())
    }

    /// Parses into `builder` (which may apply identities or not).
    fn parse_into(text: &str, mut builder: ExprBuilder) -> Result<Expr, Error> {
        let mut sources = SourceMap::default();
        let file = sources.add("<expr>", None, text);
        let data = reader::read_all(text, file)
            .map_err(|err| Error::from_eval(EvalError::from(err), &sources))?;
        let [datum] = data.as_slice() else {
            return Err(Error::msg(format!(
                "expected one expression, found {}",
                data.len()
            )));
        };
        let value = crate::lisp::convert::sexp_to_value(datum);
        let root = expr_from_value(
            &value,
            datum.span,
            &mut builder,
            &crate::ir::math::functions::NO_FUNCTIONS,
        )
        .map_err(|err| Error::from_eval(err, &sources))?;
        Ok(compact(builder.expr(), root))
    }

    /// The value at a point: one `(name, value)` per variable (`pi` is the
    /// constant unless bound).
    pub fn eval(&self, bindings: &[(&str, f64)]) -> Result<f64, Error> {
        let env = |name: Symbol| {
            bindings
                .iter()
                .find(|(bound, _)| *bound == name.as_str())
                .map(|(_, value)| *value)
                .or_else(|| (name.as_str() == "pi").then_some(std::f64::consts::PI))
        };
        evaluate(&self.expr, &[self.root], env)
            .map(|values| values[0])
            .map_err(|name| Error::msg(format!("no value for variable {name}")))
    }

    /// The node count of the expression as a DAG, as `expr-size` counts it.
    pub fn size(&self) -> usize {
        // An `Expr` is always a valid expression, so counting cannot fail.
        expr_size(&self.to_value(), &crate::ir::math::functions::NO_FUNCTIONS).unwrap_or(0)
    }

    /// The variables the expression uses, in first-use order.
    pub fn variables(&self) -> Vec<String> {
        self.expr
            .as_ref()
            .iter()
            .filter_map(|node| match node {
                Math::Var(name) => Some(name.to_string()),
                _ => None,
            })
            .collect()
    }

    /// The expression as Lisp data.
    pub fn to_value(&self) -> crate::Value {
        exprs_to_values(&self.expr, &[self.root]).remove(0)
    }
}

impl FromStr for Expr {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Expr::parse(text)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&write_string(&self.to_value()))
    }
}

/// Anything the symbolic functions accept as an expression: text or an
/// [`Expr`].
pub trait IntoExpr {
    /// The parsed expression.
    fn into_expr(self) -> Result<Expr, Error>;
}

impl IntoExpr for &str {
    fn into_expr(self) -> Result<Expr, Error> {
        Expr::parse(self)
    }
}

impl IntoExpr for String {
    fn into_expr(self) -> Result<Expr, Error> {
        Expr::parse(&self)
    }
}

impl IntoExpr for Expr {
    fn into_expr(self) -> Result<Expr, Error> {
        Ok(self)
    }
}

impl IntoExpr for &Expr {
    fn into_expr(self) -> Result<Expr, Error> {
        Ok(self.clone())
    }
}

/// The part of `expr` that `root` reaches, as its own expression.
fn compact(expr: &RecExpr<Math>, root: Id) -> Expr {
    let (expr, roots) = builder::compact(expr, &[root]);
    Expr {
        expr,
        root: roots[0],
    }
}

fn split(derived: &Derived) -> Vec<Expr> {
    derived
        .roots
        .iter()
        .map(|&root| compact(&derived.expr, root))
        .collect()
}

fn symbols(vars: &[&str]) -> Vec<Symbol> {
    vars.iter().map(|&name| Symbol::from(name)).collect()
}

/// The derivative of `expr` with respect to `var`, simplified.
pub fn diff(expr: impl IntoExpr, var: &str) -> Result<Expr, Error> {
    diff_n(expr, var, 1)
}

/// The `n`-th derivative of `expr` with respect to `var`. Each order is a
/// full differentiation and simplification (`diff` in Lisp caps `n` at 100).
pub fn diff_n(expr: impl IntoExpr, var: &str, n: usize) -> Result<Expr, Error> {
    let expr = expr.into_expr()?;
    let derived = derivatives::nth_derivative(
        &expr.expr,
        expr.root,
        Symbol::from(var),
        n,
        &Options::default(),
    )
    .map_err(|too_large| Error::msg(too_large.to_string()))?;
    Ok(split(&derived).remove(0))
}

/// The partial derivatives of `expr` with respect to each of `vars`,
/// simplified together.
pub fn grad(expr: impl IntoExpr, vars: &[&str]) -> Result<Vec<Expr>, Error> {
    let expr = expr.into_expr()?;
    let derived = derivatives::jacobian(
        &expr.expr,
        &[expr.root],
        &symbols(vars),
        &Options::default(),
    );
    Ok(split(&derived))
}

/// The Hessian of `expr` with respect to `vars`, as rows (exactly symmetric).
pub fn hessian(expr: impl IntoExpr, vars: &[&str]) -> Result<Vec<Vec<Expr>>, Error> {
    let expr = expr.into_expr()?;
    let derived = derivatives::hessian(&expr.expr, expr.root, &symbols(vars), &Options::default());
    let entries = split(&derived);
    Ok(entries
        .chunks(vars.len().max(1))
        .map(<[Expr]>::to_vec)
        .collect())
}

/// `expr` simplified by bounded equality saturation.
pub fn simplify(expr: impl IntoExpr) -> Result<Expr, Error> {
    let expr = expr.into_expr()?;
    let derived = derivatives::simplify_all(&expr.expr, &[expr.root], &Options::default());
    Ok(split(&derived).remove(0))
}

/// Why `expr` simplifies as it does: the rewrites from it, exactly as
/// written (no identity applied first), to its simplified form; with
/// `wrt`, of its derivative with respect to that variable, with the rule
/// applied at each node. `Display` gives the text `explain` prints.
pub fn explain(text: &str, wrt: Option<&str>) -> Result<Explanation, Error> {
    let expr = Expr::parse_into(text, ExprBuilder::verbatim())?;
    Ok(crate::egraph::explain::explain(
        &expr.expr,
        expr.root,
        wrt.map(Symbol::from),
        &Options::default(),
    ))
}

//! The symbolic operations as whole programs: gradients and Jacobians (one
//! reverse sweep per output, all rows simplified together), n-th
//! derivatives, Hessians, and plain simplification.

use super::assume::Assumptions;
use super::builder::ExprBuilder;
use super::reverse::gradient;
use super::rules::MathRewrite;
use super::simplify::{Level, Limits, Report, simplify};
use crate::ir::math::functions::{Functions, NO_FUNCTIONS};
use crate::ir::math::language::Math;
use egg::{Id, RecExpr, Symbol};
use std::sync::LazyLock;
use std::time::Instant;

/// No assumptions, for options that make none.
pub static NO_ASSUMPTIONS: LazyLock<Assumptions> = LazyLock::new(Assumptions::none);

/// How to simplify: the level, its limits and the user's rules.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// `set-optimize!` level.
    pub level: Level,
    /// Limits for each saturation run.
    pub limits: Limits,
    /// User rules (`defrule`), run with the built-in ones.
    pub rules: &'a [MathRewrite],
    /// User functions (`defderiv`) the expressions may call.
    pub functions: &'a Functions,
    /// What is assumed of the variables (`simplify :assume`).
    pub assumptions: &'a Assumptions,
    /// When the whole operation must end; `None` sets it to the time limit
    /// from the start of the call, so the limit covers every saturation run
    /// of an operation (all orders of `diff`, both passes of `hessian`).
    pub deadline: Option<Instant>,
}

impl Options<'_> {
    /// These options with the deadline fixed from now, unless already set.
    fn started(&self) -> Self {
        Options {
            deadline: Some(
                self.deadline
                    .unwrap_or_else(|| Instant::now() + self.limits.time),
            ),
            ..*self
        }
    }

    /// The limits left for the next saturation run.
    fn remaining(&self) -> Limits {
        let left = self.deadline.map_or(self.limits.time, |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        Limits {
            time: left.min(self.limits.time),
            ..self.limits
        }
    }
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            level: Level::Bounded,
            limits: Level::Bounded.default_limits(),
            rules: &[],
            functions: &NO_FUNCTIONS,
            assumptions: &NO_ASSUMPTIONS,
            deadline: None,
        }
    }
}

/// Results: a program with one root per result, and a report per
/// saturation run it took.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The program.
    pub expr: RecExpr<Math>,
    /// Its results, in the order the operation documents.
    pub roots: Vec<Id>,
    /// One report per saturation run.
    pub reports: Vec<Report>,
}

fn run(builder: ExprBuilder, roots: &[Id], options: &Options, mut reports: Vec<Report>) -> Derived {
    let simplified = simplify(
        builder.expr(),
        roots,
        options.level,
        options.remaining(),
        options.rules,
        options.assumptions,
    );
    // Report the operation's limits, not what was left of them.
    reports.push(Report {
        limits: options.limits,
        ..simplified.report
    });
    Derived {
        expr: simplified.expr,
        roots: simplified.roots,
        reports,
    }
}

/// Simplifies `roots` of `expr` together.
pub fn simplify_all(expr: &RecExpr<Math>, roots: &[Id], options: &Options) -> Derived {
    let options = &options.started();
    let mut builder = ExprBuilder::new();
    let roots = builder.add_expr(expr, roots);
    run(builder, &roots, options, Vec::new())
}

/// The Jacobian of `outputs` with respect to `wrt`, row-major: results
/// `outputs.len() * wrt.len()` (one output is a gradient).
pub fn jacobian(
    expr: &RecExpr<Math>,
    outputs: &[Id],
    wrt: &[Symbol],
    options: &Options,
) -> Derived {
    let options = &options.started();
    let mut builder = ExprBuilder::new();
    let outputs = builder.add_expr(expr, outputs);
    let mut roots = Vec::with_capacity(outputs.len() * wrt.len());
    for &output in &outputs {
        roots.extend(gradient(&mut builder, output, wrt, options.functions));
    }
    run(builder, &roots, options, Vec::new())
}

/// The `n`-th derivative of `root` with respect to `var`, simplifying after
/// each step (`n = 0` simplifies the expression).
pub fn nth_derivative(
    expr: &RecExpr<Math>,
    root: Id,
    var: Symbol,
    n: usize,
    options: &Options,
) -> Result<Derived, TooLarge> {
    let options = &options.started();
    let mut current = simplify_all(expr, &[root], options);
    for order in 0..n {
        if current.expr.len() > MAX_DERIVATIVE_NODES {
            return Err(TooLarge {
                order,
                nodes: current.expr.len(),
            });
        }
        let next = jacobian(&current.expr, &current.roots, &[var], options);
        current.reports.extend(next.reports);
        current = Derived {
            expr: next.expr,
            roots: next.roots,
            reports: current.reports,
        };
    }
    Ok(current)
}

/// Derivatives of order n can grow exponentially in n; past this many nodes
/// the next order is refused rather than filling memory.
pub const MAX_DERIVATIVE_NODES: usize = 200_000;

/// An n-th derivative that grew past `MAX_DERIVATIVE_NODES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The order reached.
    pub order: usize,
    /// Its size in nodes.
    pub nodes: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the derivative of order {} already has {} nodes (more than {MAX_DERIVATIVE_NODES}); higher orders are refused",
            self.order, self.nodes
        )
    }
}

/// The Hessian of `root` with respect to `wrt`, row-major (`wrt.len()`²
/// results). The gradient is simplified first; only the upper triangle is
/// differentiated, and the lower one is its mirror, so the result is
/// exactly symmetric.
pub fn hessian(expr: &RecExpr<Math>, root: Id, wrt: &[Symbol], options: &Options) -> Derived {
    let options = &options.started();
    let first = jacobian(expr, &[root], wrt, options);
    let mut builder = ExprBuilder::new();
    let partials = builder.add_expr(&first.expr, &first.roots);
    let n = wrt.len();
    let mut upper = Vec::with_capacity(n * (n + 1) / 2);
    for (i, &partial) in partials.iter().enumerate() {
        upper.extend(gradient(
            &mut builder,
            partial,
            &wrt[i..],
            options.functions,
        ));
    }
    let simplified = run(builder, &upper, options, first.reports);
    let mut roots = vec![Id::from(0usize); n * n];
    let mut next = simplified.roots.iter();
    for i in 0..n {
        for j in i..n {
            let id = *next
                .next()
                .expect("one upper-triangle entry per (i, j) with i <= j");
            roots[i * n + j] = id;
            roots[j * n + i] = id;
        }
    }
    Derived {
        expr: simplified.expr,
        roots,
        reports: simplified.reports,
    }
}

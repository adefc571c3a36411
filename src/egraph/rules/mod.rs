//! The simplification rule set, in families (`arith`, `exp_log`, `trig`,
//! `special`), and the guards that keep every rule inside the domain of
//! definition.
//!
//! Invariant: a rule may only fire where both sides are defined exactly
//! where the left side is. `(/ ?a ?a) => 1` needs `?a` non-zero and total;
//! `(* ?a 0) => 0` needs `?a` total; `(sqrt (* ?a ?a))` is `(abs ?a)`.
//! `tests/rules.rs` checks every rule numerically at random points.

mod arith;
pub mod check;
mod exp_log;
mod special;
mod trig;

use super::analysis::{Facts, FactsAnalysis, MathGraph, Signs};
use crate::ir::math::language::{Constant, Math};
use egg::{Id, Rewrite, Subst, Var};
use std::sync::LazyLock;

/// A rewrite over `Math` with the `Facts` analysis.
pub type MathRewrite = Rewrite<Math, FactsAnalysis>;

static RULES: LazyLock<Vec<MathRewrite>> = LazyLock::new(|| {
    let mut rules = arith::rules();
    rules.extend(exp_log::rules());
    rules.extend(trig::rules());
    rules.extend(special::rules());
    rules
});

/// Every built-in simplification rule.
pub fn all_rules() -> &'static [MathRewrite] {
    &RULES
}

fn var(name: &str) -> Var {
    name.parse()
        .expect("rule tables name pattern variables as ?name")
}

fn facts<'a>(egraph: &'a MathGraph, subst: &Subst, v: Var) -> &'a Facts {
    &egraph[subst[v]].data
}

/// A guard on the facts of one pattern variable.
fn guard(
    name: &str,
    test: impl Fn(&Facts) -> bool + Send + Sync + 'static,
) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    let v = var(name);
    move |egraph, _, subst| test(facts(egraph, subst, v))
}

/// `?a` is defined everywhere.
fn total(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.total)
}

/// `?a` is defined everywhere and never zero.
fn non_zero(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.total && f.signs.is_non_zero())
}

/// `?a` is positive wherever it is defined.
fn positive(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.signs.is_pos())
}

/// `?a` is zero or positive wherever it is defined.
fn non_negative(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.signs.is_non_neg())
}

/// `?a` is zero or negative wherever it is defined.
fn non_positive(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.signs.intersect(Signs::NON_POS) == Some(f.signs))
}

/// `?a` is negative wherever it is defined.
fn negative(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.signs == Signs::NEG)
}

/// `?n` is a whole number: a whole constant, or assumed integer
/// (`simplify :assume`).
fn integer(name: &str) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, |f| f.integer)
}

/// `?n` is a constant satisfying `test`.
fn constant(
    name: &str,
    test: fn(f64) -> bool,
) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    guard(name, move |f| {
        f.constant.map(Constant::get).is_some_and(test)
    })
}

/// Both guards hold.
fn both(
    a: impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static,
    b: impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static,
) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    move |egraph, id, subst| a(egraph, id, subst) && b(egraph, id, subst)
}

/// Either guard holds.
fn either(
    a: impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static,
    b: impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static,
) -> impl Fn(&mut MathGraph, Id, &Subst) -> bool + Send + Sync + 'static {
    move |egraph, id, subst| a(egraph, id, subst) || b(egraph, id, subst)
}

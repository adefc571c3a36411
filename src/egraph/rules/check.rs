//! A numeric check of a rewrite: both sides evaluated at pseudo-random
//! points. `defrule` uses it to warn about user rules that are not
//! identities; the built-in rules have their own, stricter test
//! (`tests/rules.rs`).

use crate::ir::math::eval::evaluate;
use crate::ir::math::language::Math;
use egg::{ENodeOrVar, Id, Pattern, RecExpr, Symbol};

/// A pattern as an expression whose pattern variables are variables named
/// `?a`.
pub fn pattern_as_expr(pattern: &Pattern<Math>) -> RecExpr<Math> {
    let mut expr = RecExpr::default();
    for node in pattern.ast.as_ref() {
        expr.add(match node {
            ENodeOrVar::ENode(math) => math.clone(),
            ENodeOrVar::Var(var) => Math::Var(Symbol::from(var.to_string())),
        });
    }
    expr
}

/// The first of 64 pseudo-random points (each variable in [-3, 3]) where
/// both sides are finite and differ, described for a message; `None` when
/// they agree everywhere they were compared.
pub fn counterexample(lhs: &Pattern<Math>, rhs: &Pattern<Math>) -> Option<String> {
    let (left, right) = (pattern_as_expr(lhs), pattern_as_expr(rhs));
    let vars = lhs.vars();
    let last = |expr: &RecExpr<Math>| Id::from(expr.as_ref().len().saturating_sub(1));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..64 {
        let point: Vec<f64> = vars
            .iter()
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) * 6.0 - 3.0
            })
            .collect();
        let env = |name: Symbol| {
            vars.iter()
                .position(|v| v.to_string() == name.as_str())
                .map(|i| point[i])
        };
        let a = evaluate(&left, &[last(&left)], env).ok()?[0];
        let b = evaluate(&right, &[last(&right)], env).ok()?[0];
        if a.is_finite() && b.is_finite() && (a - b).abs() > 1e-9 * a.abs().max(b.abs()).max(1.0) {
            let at: Vec<String> = vars
                .iter()
                .zip(&point)
                .map(|(v, x)| format!("{v} = {x:.4}"))
                .collect();
            let place = if at.is_empty() {
                String::new()
            } else {
                format!("at {} ", at.join(", "))
            };
            return Some(format!(
                "{place}the left side is {a} and the right side {b}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_pass_and_non_identities_are_described() {
        let pattern = |text: &str| text.parse::<Pattern<Math>>().expect("test pattern parses");
        assert_eq!(
            counterexample(&pattern("(* 2 ?a)"), &pattern("(+ ?a ?a)")),
            None
        );
        let message =
            counterexample(&pattern("(sin ?a)"), &pattern("(cos ?a)")).expect("sin is not cos");
        assert!(message.starts_with("at ?a = "), "{message}");
    }
}

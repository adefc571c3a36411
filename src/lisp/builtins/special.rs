//! The special functions of SPEC section 7: `lgamma`, `digamma`,
//! `polygamma`, `erf`, `erfc` (scalar operators of the `Math` language,
//! elementwise on tensors; the built-ins of all but `polygamma`, which
//! checks its order, come from their rows of the elementwise table) and
//! `multigammaln` (a composition of `lgamma`). The two here are written
//! over `Apply`, so each runs at once on numbers and tensors and is
//! recorded inside traced functions (`grad`, `jvp`, `jit`, `scan`), with
//! the same kernels (`crate::scalar::{gamma, erf}`) either way.

use super::apply::Apply;
use super::builtin;
use crate::ir::math::language::Math;
use crate::ir::op::map_op;
use crate::ir::{CmpOp, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use egg::Id;

/// The largest `p` of `multigammaln` (its formula has p terms).
const MAX_DIMENSION: i64 = 10_000;

/// The scalar operator `math` over `operands`, elementwise.
fn map(apply: &Apply, math: Math, operands: &[&Value]) -> EvalResult<Value> {
    apply.op(map_op(&math), operands)
}

fn polygamma(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    // A number as the order must be a whole number (a tensor of orders
    // gives NaN where one is not).
    if let Value::Int(_) | Value::Float(_) = &args[0] {
        let n = args[0].as_f64()?;
        if !(n >= 0.0 && n.fract() == 0.0) {
            return Err(EvalError::range(format!(
                "the order n must be a whole number >= 0, got {}",
                args[0].short()
            )));
        }
    }
    let apply = Apply::new(interp, args.values);
    map(
        &apply,
        Math::Polygamma([Id::from(0); 2]),
        &[&args[0], &args[1]],
    )
}

/// ln Γ_p(x) = p (p - 1)/4 ln(pi) + sum over j = 1..p of lgamma(x + (1 - j)/2),
/// NaN where x < (p - 1)/2 (+inf at x = (p - 1)/2, a pole).
fn multigammaln(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let p = match &args[1] {
        Value::Int(_) | Value::Float(_) => args[1].as_i64().ok(),
        _ => None,
    };
    let p = match p {
        Some(p) if (1..=MAX_DIMENSION).contains(&p) => p,
        _ => {
            return Err(EvalError::range(format!(
                "the dimension p must be a whole number from 1 to {MAX_DIMENSION}, got {}",
                args[1].short()
            )));
        }
    };
    let apply = Apply::new(interp, args.values);
    let x = &args[0];
    let lgamma = |value: &Value| map(&apply, Math::Lgamma([Id::from(0)]), &[value]);
    let add = |a: &Value, b: &Value| map(&apply, Math::Add([Id::from(0); 2]), &[a, b]);
    let mut sum = lgamma(x)?;
    for j in 2..=p {
        let shifted = add(x, &Apply::number((1 - j) as f64 / 2.0))?;
        sum = add(&sum, &lgamma(&shifted)?)?;
    }
    let p = p as f64;
    let constant = p * (p - 1.0) / 4.0 * std::f64::consts::PI.ln();
    let value = add(&sum, &Apply::number(constant))?;
    let outside = apply.op(
        TOp::Compare(CmpOp::Lt),
        &[x, &Apply::number((p - 1.0) / 2.0)],
    )?;
    apply.op(TOp::Where, &[&outside, &Apply::number(f64::NAN), &value])
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("polygamma", "(polygamma n x)", "The polygamma function ψ⁽ⁿ⁾(x), the n-th derivative of digamma ((polygamma 0 x) is (digamma x)), elementwise with broadcasting; n must be a whole number from 0 to 170 (to 62 for negative x), else NaN (an error when n is a number). (-1)^(n+1) inf at the poles 0, -1, -2, ... Differentiable in x: d/dx (polygamma n x) = (polygamma (+ n 1) x); not in n.", 2, Some(2), polygamma),
    builtin("multigammaln", "(multigammaln x p)", "The logarithm of the multivariate gamma function, ln Γ_p(x) = p(p-1)/4 ln(pi) + Σ_{j=1..p} lgamma(x + (1-j)/2), elementwise in x; p is a whole number from 1 to 10000. Defined for x > (p-1)/2: +inf at x = (p-1)/2 and NaN below (where SciPy raises an error). Differentiable in x; in symbolic expressions with a literal p it expands into the sum of lgamma terms.", 2, Some(2), multigammaln),
];

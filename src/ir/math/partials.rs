//! The table of local partial derivatives: for each operator, d node /
//! d child, written with the builder in terms of the node's children and
//! the node itself (`exp`'s partial is the node, so the primal is shared).
//!
//! The arithmetic operators' rules are here, each function's in its row of
//! the elementwise table (`elementwise.rs`); `local_partials` is the one
//! entry point, which the reverse sweep (symbolic `grad`, `hessian`, n-th
//! `diff`), the tensor sweeps and the straight-line gradients apply. Calls
//! of user functions (`defderiv`) take the partials their definition
//! declares (`functions.rs`).
//!
//! Among the rows: the special functions (d lgamma = digamma, d digamma =
//! polygamma of order 1, d polygamma(n, x) / dx = polygamma(n + 1, x),
//! none in the order n, a whole number; d erf = 2/sqrt(pi) exp(-x^2) =
//! -d erfc), and the conventions at kinks: `relu'(0) = 0`, `abs'(0) =
//! sign(0) = 0`, the derivatives of `min`/`max` split ties evenly (1/2
//! each, so the partials of `(max x x)` still add up to 1), as do
//! `logaddexp`'s, `hypot`'s are 1/2 each at the origin (JAX's), `sinc`'s
//! is 0 at 0 and `cbrt`'s +inf there.

use super::functions::Functions;
use super::language::Math;
use egg::Id;
use smallvec::{SmallVec, smallvec};

/// What the table needs to build partials: numbers and scalar operators.
/// The e-graph layer's scalar `ExprBuilder` implements it, and so does the tensor graph,
/// where each operator applies elementwise with broadcasting — one table
/// serves symbolic, numeric reverse and forward mode.
pub trait PartialBuilder {
    /// The number `value` (finite).
    fn num(&mut self, value: f64) -> Id;
    /// The number stored at `id`, if it is a constant.
    fn constant(&self, id: Id) -> Option<f64>;
    /// The operator `node` over ids of this builder.
    fn add(&mut self, node: Math) -> Id;
    /// `a + b`.
    fn add2(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Add([a, b]))
    }
    /// `a - b`.
    fn sub(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Sub([a, b]))
    }
    /// `a * b`.
    fn mul(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Mul([a, b]))
    }
    /// `a / b`.
    fn div(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Div([a, b]))
    }
    /// `-a`.
    fn neg(&mut self, a: Id) -> Id {
        self.add(Math::Neg([a]))
    }
}

/// The partial derivatives of `node` (stored at `this`) with respect to each
/// child, in child order; `None` where the partial is zero everywhere it is
/// defined (a step function, a constant argument such as heaviside's value
/// at zero). A user function's call takes its partials from `functions`
/// (none there: no dependence, which `Functions::check_differentiable`
/// rules out beforehand).
pub fn local_partials<B: PartialBuilder>(
    node: &Math,
    this: Id,
    b: &mut B,
    functions: &Functions,
) -> SmallVec<[Option<Id>; 2]> {
    if let Math::Call(_, args) = node {
        return match functions.call_partials(node, b) {
            Some(partials) => partials.into_iter().collect(),
            None => args.iter().map(|_| None).collect(),
        };
    }
    let one = b.num(1.0);
    match *node {
        Math::Num(_) | Math::Var(_) | Math::Call(..) => smallvec![],
        Math::Add(_) => smallvec![Some(one), Some(one)],
        Math::Sub(_) => smallvec![Some(one), Some(b.num(-1.0))],
        Math::Mul([x, y]) => smallvec![Some(y), Some(x)],
        Math::Div([_, y]) => {
            // d/dx = 1/y; d/dy = -(x/y)/y, which reuses the quotient.
            let reciprocal = b.div(one, y);
            let quotient_over_y = b.div(this, y);
            smallvec![Some(reciprocal), Some(b.neg(quotient_over_y))]
        }
        Math::Pow([x, y]) => {
            // y * x^(y-1); the builder folds y - 1 when y is a number
            // and the difference is exact (not for y = 1e308). A power 0
            // is the constant 1: no derivative in the base, not
            // 0 * x^-1 (NaN at x = 0).
            let d_base = if b.constant(y) == Some(0.0) {
                None
            } else {
                let y_minus_one = b.sub(y, one);
                let power = b.add(Math::Pow([x, y_minus_one]));
                Some(b.mul(y, power))
            };
            // this * log(x), but 0 where this is 0 (x = 0 and y > 0); a
            // positive constant base needs no such care.
            let d_exponent = if b.constant(x).is_some_and(|c| c > 0.0) {
                let log_x = b.add(Math::Log([x]));
                b.mul(this, log_x)
            } else {
                b.add(Math::Xlogy([this, x]))
            };
            smallvec![d_base, Some(d_exponent)]
        }
        Math::Neg(_) => smallvec![Some(b.num(-1.0))],
        // Every function: its row of the elementwise table.
        ref row => super::elementwise::partials(row, this, b).unwrap_or_default(),
    }
}

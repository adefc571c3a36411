//! The table of local partial derivatives: for each operator, d node /
//! d child, written with the builder in terms of the node's children and
//! the node itself (`exp`'s partial is the node, so the primal is shared).
//!
//! This is the one place where differentiation rules live; the reverse
//! sweep (symbolic `grad`, `hessian`, n-th `diff`) applies them. Calls of
//! user functions (`defderiv`) take the partials their definition declares
//! (`functions.rs`).
//!
//! The special functions: d lgamma = digamma, d digamma = polygamma of
//! order 1, d polygamma(n, x) / dx = polygamma(n + 1, x) (none in the
//! order n, a whole number), d erf = 2/sqrt(pi) exp(-x^2) = -d erfc.
//!
//! Conventions at kinks: `relu'(0) = 0`, `abs'(0) = sign(0) = 0`, and the
//! derivatives of `min`/`max` split ties evenly (1/2 each), so the partials
//! of `(max x x)` still add up to 1.

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
        Math::Exp(_) => smallvec![Some(this)],
        Math::Log([x]) => smallvec![Some(b.div(one, x))],
        Math::Log1p([x]) => {
            let one_plus_x = b.add2(one, x);
            smallvec![Some(b.div(one, one_plus_x))]
        }
        Math::Expm1([x]) => smallvec![Some(b.add(Math::Exp([x])))],
        Math::Sqrt(_) => {
            let half = b.num(0.5);
            smallvec![Some(b.div(half, this))]
        }
        Math::Sin([x]) => smallvec![Some(b.add(Math::Cos([x])))],
        Math::Cos([x]) => {
            let sin = b.add(Math::Sin([x]));
            smallvec![Some(b.neg(sin))]
        }
        Math::Tan(_) => {
            // 1 + tan^2, reusing the node.
            let square = b.mul(this, this);
            smallvec![Some(b.add2(one, square))]
        }
        Math::Asin([x]) | Math::Acos([x]) => {
            let square = b.mul(x, x);
            let rest = b.sub(one, square);
            let root = b.add(Math::Sqrt([rest]));
            let d = b.div(one, root);
            smallvec![Some(if matches!(node, Math::Acos(_)) {
                b.neg(d)
            } else {
                d
            })]
        }
        Math::Atan([x]) => {
            let square = b.mul(x, x);
            let denominator = b.add2(one, square);
            smallvec![Some(b.div(one, denominator))]
        }
        Math::Atan2([y, x]) => {
            let (x2, y2) = (b.mul(x, x), b.mul(y, y));
            let r2 = b.add2(x2, y2);
            let d_y = b.div(x, r2);
            let y_over_r2 = b.div(y, r2);
            smallvec![Some(d_y), Some(b.neg(y_over_r2))]
        }
        Math::Sinh([x]) => smallvec![Some(b.add(Math::Cosh([x])))],
        Math::Cosh([x]) => smallvec![Some(b.add(Math::Sinh([x])))],
        Math::Tanh(_) => {
            let square = b.mul(this, this);
            smallvec![Some(b.sub(one, square))]
        }
        Math::Sigmoid(_) => {
            let complement = b.sub(one, this);
            smallvec![Some(b.mul(this, complement))]
        }
        Math::Softplus([x]) => smallvec![Some(b.add(Math::Sigmoid([x])))],
        Math::Relu([x]) => {
            let zero = b.num(0.0);
            smallvec![Some(b.add(Math::Heaviside([x, zero])))]
        }
        Math::Abs([x]) => smallvec![Some(b.add(Math::Sign([x])))],
        Math::Xlogy([x, y]) => {
            let log_y = b.add(Math::Log([y]));
            smallvec![Some(log_y), Some(b.div(x, y))]
        }
        Math::Sign(_) => smallvec![None],
        Math::Heaviside(_) => smallvec![None, None],
        Math::Lgamma([x]) => smallvec![Some(b.add(Math::Digamma([x])))],
        Math::Digamma([x]) => {
            let order = b.num(1.0);
            smallvec![Some(b.add(Math::Polygamma([order, x])))]
        }
        Math::Polygamma([n, x]) => {
            // The order is a whole number: no derivative in it.
            let next = b.add2(n, one);
            smallvec![None, Some(b.add(Math::Polygamma([next, x])))]
        }
        Math::Erf([x]) | Math::Erfc([x]) => {
            // ±2/sqrt(pi) exp(-x^2).
            let square = b.mul(x, x);
            let minus_square = b.neg(square);
            let gauss = b.add(Math::Exp([minus_square]));
            let scale = if matches!(node, Math::Erf(_)) {
                std::f64::consts::FRAC_2_SQRT_PI
            } else {
                -std::f64::consts::FRAC_2_SQRT_PI
            };
            let scale = b.num(scale);
            smallvec![Some(b.mul(scale, gauss))]
        }
        Math::Min([x, y]) | Math::Max([x, y]) => {
            let half = b.num(0.5);
            let (x_minus_y, y_minus_x) = (b.sub(x, y), b.sub(y, x));
            let (first, second) = if matches!(node, Math::Max(_)) {
                (x_minus_y, y_minus_x)
            } else {
                (y_minus_x, x_minus_y)
            };
            let d_x = b.add(Math::Heaviside([first, half]));
            let d_y = b.add(Math::Heaviside([second, half]));
            smallvec![Some(d_x), Some(d_y)]
        }
    }
}

//! How each elementwise operation becomes machine code: arithmetic,
//! comparisons and selection as instructions, everything else as a call
//! to the very Rust function the interpreter applies (so both paths give
//! the same bits).

use super::transcendental::Inline;
use crate::ir::math::language::Math;
use crate::ir::{CmpOp, RoundOp, TOp};
use crate::scalar;

/// A function of one number, callable from generated code.
pub type Unary = extern "C" fn(f64) -> f64;

/// A function of two numbers, callable from generated code.
pub type Binary = extern "C" fn(f64, f64) -> f64;

/// The code for one step of a fused group.
#[derive(Clone, Copy, Debug)]
pub enum Lowering {
    /// `x + y`, `x - y`, `x * y`, `x / y`.
    Add,
    Sub,
    Mul,
    Div,
    /// `min` and `max` propagating NaN, -0 below +0 (`scalar::nan_min`,
    /// `scalar::nan_max`).
    Min,
    Max,
    /// `-x`, `|x|`, `sqrt x` (IEEE operations, exact as in Rust).
    Neg,
    Abs,
    Sqrt,
    /// 1 where the comparison holds, else 0.
    Compare(CmpOp),
    /// `if c != 0 { a } else { b }` (a NaN condition selects `a`).
    Where,
    /// A number.
    Constant(f64),
    /// `x` rounded to f32 (and widened back): an f32 step's result.
    Round32,
    /// `x` as it is (a conversion to f64).
    Identity,
    /// `exp`, `tanh` or `sigmoid` as instructions (`transcendental`).
    Inline(Inline),
    /// A call per element.
    Unary(Unary),
    Binary(Binary),
}

/// The lowering of an elementwise operation; `None` for an operation
/// that is not elementwise.
pub fn lowering(op: &TOp) -> Option<Lowering> {
    Some(match op {
        TOp::Map(math) => match math {
            Math::Add(_) => Lowering::Add,
            Math::Sub(_) => Lowering::Sub,
            Math::Mul(_) => Lowering::Mul,
            Math::Div(_) => Lowering::Div,
            Math::Neg(_) => Lowering::Neg,
            Math::Abs(_) => Lowering::Abs,
            Math::Sqrt(_) => Lowering::Sqrt,
            Math::Num(c) => Lowering::Constant(c.get()),
            Math::Var(_) | Math::Call(..) => Lowering::Constant(f64::NAN),
            Math::Pow(_) => Lowering::Binary(pow),
            Math::Atan2(_) => Lowering::Binary(atan2),
            Math::Heaviside(_) => Lowering::Binary(heaviside),
            Math::Xlogy(_) => Lowering::Binary(xlogy),
            Math::Min(_) => Lowering::Min,
            Math::Max(_) => Lowering::Max,
            Math::Polygamma(_) => Lowering::Binary(polygamma),
            Math::Exp(_) => inline_or(Inline::Exp, exp),
            Math::Log(_) => Lowering::Unary(ln),
            Math::Log1p(_) => Lowering::Unary(ln_1p),
            Math::Expm1(_) => Lowering::Unary(exp_m1),
            Math::Sin(_) => Lowering::Unary(sin),
            Math::Cos(_) => Lowering::Unary(cos),
            Math::Tan(_) => Lowering::Unary(tan),
            Math::Asin(_) => Lowering::Unary(asin),
            Math::Acos(_) => Lowering::Unary(acos),
            Math::Atan(_) => Lowering::Unary(atan),
            Math::Sinh(_) => Lowering::Unary(sinh),
            Math::Cosh(_) => Lowering::Unary(cosh),
            Math::Tanh(_) => inline_or(Inline::Tanh, tanh),
            Math::Sigmoid(_) => inline_or(Inline::Sigmoid, sigmoid),
            Math::Relu(_) => Lowering::Unary(relu),
            Math::Softplus(_) => Lowering::Unary(softplus),
            Math::Sign(_) => Lowering::Unary(sign),
            Math::Lgamma(_) => Lowering::Unary(lgamma),
            Math::Digamma(_) => Lowering::Unary(digamma),
            Math::Erf(_) => Lowering::Unary(erf),
            Math::Erfc(_) => Lowering::Unary(erfc),
        },
        TOp::Compare(cmp) => Lowering::Compare(*cmp),
        TOp::Round(RoundOp::Floor) => Lowering::Unary(floor),
        TOp::Round(RoundOp::Ceil) => Lowering::Unary(ceil),
        TOp::Round(RoundOp::Round) => Lowering::Unary(round_ties_even),
        TOp::Where => Lowering::Where,
        TOp::Cast(crate::dtype::DType::F32) => Lowering::Round32,
        TOp::Cast(_) => Lowering::Identity,
        _ => return None,
    })
}

/// `f` as instructions where the host fuses multiply-adds (so the code
/// gives the Rust function's bits), else a call to `call`.
fn inline_or(f: Inline, call: Unary) -> Lowering {
    if scalar::host_fuses() {
        Lowering::Inline(f)
    } else {
        Lowering::Unary(call)
    }
}

/// `extern "C"` wrappers of the interpreter's functions.
macro_rules! callable {
    ($($name:ident($($arg:ident),+) = $f:expr;)*) => {
        $(extern "C" fn $name($($arg: f64),+) -> f64 {
            $f($($arg),+)
        })*
    };
}

callable! {
    pow(x, y) = scalar::pow;
    atan2(y, x) = f64::atan2;
    heaviside(x, at_zero) = scalar::heaviside;
    xlogy(x, y) = scalar::xlogy;
    polygamma(n, x) = scalar::gamma::polygamma;
    exp(x) = scalar::exp;
    ln(x) = f64::ln;
    ln_1p(x) = f64::ln_1p;
    exp_m1(x) = f64::exp_m1;
    sin(x) = f64::sin;
    cos(x) = f64::cos;
    tan(x) = f64::tan;
    asin(x) = f64::asin;
    acos(x) = f64::acos;
    atan(x) = f64::atan;
    sinh(x) = f64::sinh;
    cosh(x) = f64::cosh;
    tanh(x) = scalar::tanh;
    sigmoid(x) = scalar::sigmoid;
    relu(x) = scalar::relu;
    softplus(x) = scalar::softplus;
    sign(x) = scalar::sign;
    lgamma(x) = scalar::gamma::lgamma;
    digamma(x) = scalar::gamma::digamma;
    erf(x) = scalar::erf::erf;
    erfc(x) = scalar::erf::erfc;
    floor(x) = f64::floor;
    ceil(x) = f64::ceil;
    round_ties_even(x) = f64::round_ties_even;
}

//! How each elementwise operation becomes machine code: arithmetic,
//! comparisons and selection as instructions, everything else as a call
//! to the very Rust function the interpreter applies (so both paths give
//! the same bits): a function's `extern "C"` wrapper comes from its row of
//! the elementwise table (`ir::math::elementwise`).

use super::transcendental::Inline;
use crate::ir::math::elementwise::{self, NativeFn};
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
            Math::Min(_) => Lowering::Min,
            Math::Max(_) => Lowering::Max,
            Math::Exp(_) => inline_or(Inline::Exp, math)?,
            Math::Tanh(_) => inline_or(Inline::Tanh, math)?,
            Math::Sigmoid(_) => inline_or(Inline::Sigmoid, math)?,
            // Every other function: a call of its row's function.
            row => call(row)?,
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
/// gives the Rust function's bits), else a call of its row's function.
fn inline_or(f: Inline, math: &Math) -> Option<Lowering> {
    if scalar::host_fuses() {
        Some(Lowering::Inline(f))
    } else {
        call(math)
    }
}

/// A call per element of the function of `math`'s row of the elementwise
/// table (the interpreter's very function).
fn call(math: &Math) -> Option<Lowering> {
    Some(match elementwise::row(math)?.native {
        NativeFn::Unary(f) => Lowering::Unary(f),
        NativeFn::Binary(f) => Lowering::Binary(f),
    })
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
    floor(x) = f64::floor;
    ceil(x) = f64::ceil;
    round_ties_even(x) = f64::round_ties_even;
}

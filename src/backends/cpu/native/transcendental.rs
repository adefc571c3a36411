//! `exp`, `tanh` and `sigmoid` as instructions: the very operations of
//! `scalar`'s kernels (the same constants, the same fused multiply-adds
//! in the same order, the same bit trick for powers of two), so native
//! code keeps intermediates in registers, two lanes at a time, and still
//! gives the interpreter's bits. Used only where the host fuses
//! multiply-adds in one instruction (`scalar::host_fuses`); elsewhere the
//! lowering calls the Rust functions.

use super::codegen::constant;
use crate::scalar::{EXP_MAX, EXP_MIN, EXPM1_COEFFICIENTS, LN2_HI, LN2_LO, SHIFTER};
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value, types};
use cranelift_frontend::FunctionBuilder;

/// Which function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    Exp,
    Tanh,
    Sigmoid,
}

/// `f(x)` in every lane of `x` (`ty` is `f64` or `f64x2`).
pub fn emit(b: &mut FunctionBuilder, f: Inline, x: Value, ty: Type) -> Value {
    match f {
        Inline::Exp => exp(b, x, ty),
        Inline::Tanh => tanh(b, x, ty),
        Inline::Sigmoid => sigmoid(b, x, ty),
    }
}

/// `scalar::exp_kernel`.
fn exp(b: &mut FunctionBuilder, x: Value, ty: Type) -> Value {
    let low = constant(b, EXP_MIN - 1.0, ty);
    let high = constant(b, EXP_MAX + 1.0, ty);
    // `clamp` keeps a NaN; so do `fmax` and `fmin`.
    let clamped = b.ins().fmax(x, low);
    let clamped = b.ins().fmin(clamped, high);
    let log2e = constant(b, std::f64::consts::LOG2_E, ty);
    let scaled = b.ins().fmul(clamped, log2e);
    let k = round_even(b, scaled, ty);
    let r = reduce(b, k, clamped, ty);
    let p = expm1_reduced(b, r, ty);
    let (a, c) = pow2(b, k, ty);
    let one = constant(b, 1.0, ty);
    let e = b.ins().fadd(one, p);
    let e = b.ins().fmul(e, a);
    b.ins().fmul(e, c)
}

/// `scalar::tanh_kernel`.
fn tanh(b: &mut FunctionBuilder, x: Value, ty: Type) -> Value {
    let magnitude = b.ins().fabs(x);
    let forty = constant(b, 40.0, ty);
    // `f64::min` would give 40 for a NaN where `fmin` gives NaN; the
    // result is `x` itself for a NaN either way.
    let a = b.ins().fmin(magnitude, forty);
    let two = constant(b, 2.0, ty);
    let y = b.ins().fmul(two, a);
    let log2e = constant(b, std::f64::consts::LOG2_E, ty);
    let scaled = b.ins().fmul(y, log2e);
    let k = round_even(b, scaled, ty);
    let r = reduce(b, k, y, ty);
    let p = expm1_reduced(b, r, ty);
    let (s1, s2) = pow2(b, k, ty);
    let s = b.ins().fmul(s1, s2);
    let one = constant(b, 1.0, ty);
    let s_minus_one = b.ins().fsub(s, one);
    let u = b.ins().fma(s, p, s_minus_one);
    let denominator = b.ins().fadd(u, two);
    let t = b.ins().fdiv(u, denominator);
    let signed = copysign(b, t, x, ty);
    let nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    select(b, nan, x, signed, ty)
}

/// `scalar::sigmoid_kernel`.
fn sigmoid(b: &mut FunctionBuilder, x: Value, ty: Type) -> Value {
    let magnitude = b.ins().fabs(x);
    let negative = b.ins().fneg(magnitude);
    let e = exp(b, negative, ty);
    let one = constant(b, 1.0, ty);
    let denominator = b.ins().fadd(one, e);
    let above = b.ins().fdiv(one, denominator);
    let below = b.ins().fdiv(e, denominator);
    let zero = constant(b, 0.0, ty);
    let non_negative = b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
    select(b, non_negative, above, below, ty)
}

/// `x - k ln 2` in two fused steps (`LN2_HI`, then `LN2_LO`).
fn reduce(b: &mut FunctionBuilder, k: Value, x: Value, ty: Type) -> Value {
    let minus_k = b.ins().fneg(k);
    let hi = constant(b, LN2_HI, ty);
    let lo = constant(b, LN2_LO, ty);
    let r = b.ins().fma(minus_k, hi, x);
    b.ins().fma(minus_k, lo, r)
}

/// `scalar::expm1_reduced`.
fn expm1_reduced(b: &mut FunctionBuilder, r: Value, ty: Type) -> Value {
    let mut p = constant(b, EXPM1_COEFFICIENTS[9], ty);
    for &c in EXPM1_COEFFICIENTS[..9].iter().rev() {
        let c = constant(b, c, ty);
        p = b.ins().fma(p, r, c);
    }
    let square = b.ins().fmul(r, r);
    b.ins().fma(square, p, r)
}

/// `scalar::round_even`.
fn round_even(b: &mut FunctionBuilder, x: Value, ty: Type) -> Value {
    let magic = constant(b, 1.5 * SHIFTER, ty);
    let shifted = b.ins().fadd(x, magic);
    b.ins().fsub(shifted, magic)
}

/// `scalar::pow2`: 2^k as two factors.
fn pow2(b: &mut FunctionBuilder, k: Value, ty: Type) -> (Value, Value) {
    let half = constant(b, 0.5, ty);
    let halved = b.ins().fmul(k, half);
    let first = round_even(b, halved, ty);
    let rest = b.ins().fsub(k, first);
    (power(b, first, ty), power(b, rest, ty))
}

/// 2^e for an integer-valued `e` in the normal range: `e + 1023 + 2^52`
/// holds the biased exponent in its low bits, shifted into place.
fn power(b: &mut FunctionBuilder, e: Value, ty: Type) -> Value {
    let bias = constant(b, 1023.0 + SHIFTER, ty);
    let biased = b.ins().fadd(e, bias);
    let integer = integer_type(ty);
    let bits = b.ins().bitcast(integer, MemFlagsData::new(), biased);
    let shifted = b.ins().ishl_imm_u(bits, 52);
    b.ins().bitcast(ty, MemFlagsData::new(), shifted)
}

/// `magnitude` with the sign of `sign`, by bits (Cranelift has no vector
/// `fcopysign` on every host).
fn copysign(b: &mut FunctionBuilder, magnitude: Value, sign: Value, ty: Type) -> Value {
    let integer = integer_type(ty);
    let m = b.ins().bitcast(integer, MemFlagsData::new(), magnitude);
    let s = b.ins().bitcast(integer, MemFlagsData::new(), sign);
    let sign_bit = b.ins().iconst(types::I64, i64::MIN);
    let rest = b.ins().iconst(types::I64, i64::MAX);
    let (sign_bit, rest) = if ty == types::F64 {
        (sign_bit, rest)
    } else {
        (
            b.ins().splat(integer, sign_bit),
            b.ins().splat(integer, rest),
        )
    };
    let m = b.ins().band(m, rest);
    let s = b.ins().band(s, sign_bit);
    let bits = b.ins().bor(m, s);
    b.ins().bitcast(ty, MemFlagsData::new(), bits)
}

/// The integer type of `ty`'s shape.
fn integer_type(ty: Type) -> Type {
    if ty == types::F64 {
        types::I64
    } else {
        types::I64X2
    }
}

/// `if condition { x } else { y }` lane by lane.
fn select(b: &mut FunctionBuilder, condition: Value, x: Value, y: Value, ty: Type) -> Value {
    if ty == types::F64 {
        b.ins().select(condition, x, y)
    } else {
        let mask = b.ins().bitcast(ty, MemFlagsData::new(), condition);
        b.ins().bitselect(mask, x, y)
    }
}

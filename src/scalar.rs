//! Scalar kernels shared by every layer: the Lisp built-ins, the e-graph's
//! constant folding and evaluation, and (later) the backends. One definition
//! per function keeps every path computing the same number.
//!
//! This module knows nothing but `f64`.

/// The logistic function 1 / (1 + exp(-x)), computed without overflow.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(1 + exp(x)), computed without overflow.
pub fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// max(x, 0); NaN stays NaN.
pub fn relu(x: f64) -> f64 {
    // A comparison with NaN is false.
    if x > 0.0 || x.is_nan() { x } else { 0.0 }
}

/// -1, 0 or 1 by the sign of x; ±0 and NaN are returned unchanged.
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// The step function: 0 for x < 0, `at_zero` for x = 0, 1 for x > 0
/// (NumPy's `heaviside(x, at_zero)`); NaN stays NaN.
pub fn heaviside(x: f64, at_zero: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        0.0
    } else if x == 0.0 {
        at_zero
    } else {
        f64::NAN
    }
}

/// `a` to the power `b`; unlike IEEE `pow`, a NaN operand always gives NaN
/// (IEEE defines `pow(1, NaN) = 1` and `pow(NaN, 0) = 1`), so an undefined
/// exponent or base stays undefined, as the simplifier's rules assume.
pub fn pow(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.powf(b)
    }
}

/// `x * log(y)`, and 0 when `x` is 0 (unless `y` is NaN), as SciPy's
/// `xlogy`: the derivative of `y^p` in `p` is `xlogy(y^p, y)`, which is 0,
/// not NaN, at `y = 0`.
pub fn xlogy(x: f64, y: f64) -> f64 {
    if x == 0.0 && !y.is_nan() {
        0.0
    } else {
        x * y.ln()
    }
}

/// `max` that propagates NaN (as NumPy's `maximum` does).
pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// `min` that propagates NaN.
pub fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

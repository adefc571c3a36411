//! Scalar kernels shared by every layer: the Lisp built-ins, the e-graph's
//! constant folding and evaluation, and (later) the backends. One definition
//! per function keeps every path computing the same number.
//!
//! This module knows nothing but `f64`. The special functions live in
//! its submodules: `gamma` (`lgamma`, `digamma`, `polygamma`) and `erf`
//! (`erf`, `erfc`).

pub mod erf;
pub mod gamma;

/// The logistic function 1 / (1 + exp(-x)), computed without overflow.
pub fn sigmoid(x: f64) -> f64 {
    let e = exp(-x.abs());
    if x >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    }
}

/// log(1 + exp(x)), computed without overflow.
pub fn softplus(x: f64) -> f64 {
    x.max(0.0) + exp(-x.abs()).ln_1p()
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

/// The sum of `values` as tapes compute it: eight interleaved partial sums
/// (independent additions, so the loop vectorizes and is not bound by the
/// latency of one chain), added pairwise, then the last few values. Its
/// error bound is no worse than adding from left to right (a given input
/// may round either way).
pub fn sum(values: &[f64]) -> f64 {
    let mut partial = [0.0; 8];
    let blocks = values.chunks_exact(8);
    let rest = blocks.remainder();
    for block in blocks {
        for (p, &x) in partial.iter_mut().zip(block) {
            *p += x;
        }
    }
    let [a, b, c, d, e, f, g, h] = partial;
    let mut total = ((a + e) + (b + f)) + ((c + g) + (d + h));
    for &x in rest {
        total += x;
    }
    total
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

/// Largest argument whose exponential is finite.
const EXP_MAX: f64 = 709.782_712_893_384;
/// Arguments below this have an exponential that rounds to 0.
const EXP_MIN: f64 = -745.133_219_101_941_1;
/// ln 2 split so that `k * LN2_HI` is exact for |k| < 2^11.
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// exp(r) - 1 for |r| <= ln(2)/2, by its Taylor polynomial (the first
/// neglected term is below 1e-17 relative).
#[inline(always)]
fn expm1_reduced(r: f64) -> f64 {
    const C: [f64; 13] = [
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362880.0,
        1.0 / 3628800.0,
        1.0 / 39916800.0,
        1.0 / 479001600.0,
        1.0 / 6227020800.0,
        1.0 / 87178291200.0,
    ];
    let mut p = C[12];
    for &c in C[..12].iter().rev() {
        p = p * r + c;
    }
    // r + r^2 * (1/2 + r/6 + ...)
    r + (r * r) * p
}

/// 2^k for integer-valued |k| <= 1100 (two factors, so results in the
/// subnormal range are exact).
#[inline(always)]
fn pow2(k: f64) -> (f64, f64) {
    let half = round_even(k * 0.5);
    let rest = k - half;
    // e + 1023 + 2^52 holds the biased exponent in its low mantissa bits;
    // shifted into place they make 2^e (no float-to-integer conversion, so
    // the loop vectorizes on any x86-64).
    let bits = |e: f64| f64::from_bits((e + (1023.0 + SHIFTER)).to_bits() << 52);
    (bits(half), bits(rest))
}

/// 2^52: adding it to a float of smaller magnitude rounds to an integer.
const SHIFTER: f64 = 4_503_599_627_370_496.0;

/// x rounded to the nearest integer, ties to even, for |x| < 2^51.
#[inline(always)]
fn round_even(x: f64) -> f64 {
    let magic = 1.5 * SHIFTER;
    (x + magic) - magic
}

/// e^x, written without branches on the data so that loops over it
/// vectorize; within 1 ulp of the correctly rounded result in tests. Every
/// layer uses it (built-ins, constant folding, tapes), so they agree.
#[inline]
pub fn exp(x: f64) -> f64 {
    let clamped = x.clamp(EXP_MIN - 1.0, EXP_MAX + 1.0);
    let k = round_even(clamped * std::f64::consts::LOG2_E);
    let r = (clamped - k * LN2_HI) - k * LN2_LO;
    let (a, b) = pow2(k);
    let value = (1.0 + expm1_reduced(r)) * a * b;
    if x > EXP_MAX {
        f64::INFINITY
    } else if x < EXP_MIN {
        0.0
    } else if x.is_nan() {
        x
    } else {
        value
    }
}

/// Loops `out[i] = f(x[i])` for a function written without branches on
/// the data, compiled for the widest SIMD the host has (AVX-512, AVX2 or
/// the baseline), chosen at run time. Every version does the same IEEE
/// operations on each lane (Rust never fuses a multiply and an add), so
/// all give the bits of `f` called on each number.
macro_rules! widest {
    ($($(#[$doc:meta])* $name:ident = $f:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(x: &[f64], out: &mut [f64]) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512(x: &[f64], out: &mut [f64]) {
                    for (o, &v) in out.iter_mut().zip(x) {
                        *o = $f(v);
                    }
                }
                #[target_feature(enable = "avx2")]
                fn avx2(x: &[f64], out: &mut [f64]) {
                    for (o, &v) in out.iter_mut().zip(x) {
                        *o = $f(v);
                    }
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the host has AVX-512F, checked just above.
                    return unsafe { avx512(x, out) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the host has AVX2, checked just above.
                    return unsafe { avx2(x, out) };
                }
            }
            for (o, &v) in out.iter_mut().zip(x) {
                *o = $f(v);
            }
        }
    )*};
}

widest! {
    /// `out[i] = exp(x[i])` in the host's widest vectors.
    exp_slice = exp;
    /// `out[i] = tanh(x[i])` in the host's widest vectors.
    tanh_slice = tanh;
    /// `out[i] = sigmoid(x[i])` in the host's widest vectors.
    sigmoid_slice = sigmoid;
}

/// tanh(x) from exp(2|x|) - 1 without cancellation near 0, within 4 ulps
/// of the correctly rounded result in tests; branch-free on the data like
/// `exp`.
#[inline]
pub fn tanh(x: f64) -> f64 {
    let a = x.abs().min(40.0);
    let y = 2.0 * a;
    let k = round_even(y * std::f64::consts::LOG2_E);
    let r = (y - k * LN2_HI) - k * LN2_LO;
    let p = expm1_reduced(r);
    let (s1, s2) = pow2(k);
    // expm1(y) = 2^k (1 + p) - 1 = (2^k - 1) + 2^k p, where 2^k - 1 is
    // exact for the k that matter (no rounding of 1 + p).
    let s = s1 * s2;
    let u = (s - 1.0) + s * p;
    let t = u / (u + 2.0);
    if x.is_nan() { x } else { t.copysign(x) }
}

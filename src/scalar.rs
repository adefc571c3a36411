//! Scalar kernels shared by every layer: the Lisp built-ins, the e-graph's
//! constant folding and evaluation, and (later) the backends. One definition
//! per function keeps every path computing the same number.
//!
//! This module knows nothing but `f64` and slices of them. The special
//! functions live in its submodules: `gamma` (`lgamma`, `digamma`,
//! `polygamma`) and `erf` (`erf`, `erfc`).

pub mod erf;
pub mod gamma;

/// The logistic function 1 / (1 + exp(-x)), computed without overflow.
#[inline(always)]
fn sigmoid_kernel(x: f64) -> f64 {
    let e = exp_kernel(-x.abs());
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
#[inline]
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

/// `max` that propagates NaN (as NumPy's `maximum` does), with -0 below
/// +0 (as the native code's `fmax` instruction has it).
pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        // Equal: the same number, or zeros of either sign (+0 if either).
        f64::from_bits(a.to_bits() & b.to_bits())
    } else if a > b {
        a
    } else {
        b
    }
}

/// `min` that propagates NaN, with -0 below +0.
pub fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        // Equal: the same number, or zeros of either sign (-0 if either).
        f64::from_bits(a.to_bits() | b.to_bits())
    } else if a < b {
        a
    } else {
        b
    }
}

/// x * x (NumPy's `square`).
pub fn square(x: f64) -> f64 {
    x * x
}

/// log(exp(x) + exp(y)) as NumPy's `logaddexp` computes it: the larger
/// argument plus log1p(exp(-|x - y|)), so nothing overflows; equal
/// arguments give x + log 2 (infinities of one sign included: -inf with
/// -inf is -inf, inf with inf is inf), and a NaN gives NaN.
pub fn logaddexp(x: f64, y: f64) -> f64 {
    if x == y {
        return x + std::f64::consts::LN_2;
    }
    let d = x - y;
    if d > 0.0 {
        x + exp(-d).ln_1p()
    } else if d <= 0.0 {
        y + exp(d).ln_1p()
    } else {
        d
    }
}

/// log2(2^x + 2^y) as NumPy's `logaddexp2` computes it (as `logaddexp`,
/// in base 2: equal arguments give x + 1).
pub fn logaddexp2(x: f64, y: f64) -> f64 {
    if x == y {
        return x + 1.0;
    }
    let d = x - y;
    if d > 0.0 {
        x + (-d).exp2().ln_1p() * std::f64::consts::LOG2_E
    } else if d <= 0.0 {
        y + d.exp2().ln_1p() * std::f64::consts::LOG2_E
    } else {
        d
    }
}

/// The normalized sinc function sin(pi x) / (pi x), 1 at 0 (NumPy's
/// `sinc`); NaN at the infinities.
pub fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let t = std::f64::consts::PI * x;
        t.sin() / t
    }
}

/// x degrees in radians: x * (pi / 180), the constant rounded once, as
/// NumPy's `deg2rad` computes it.
pub fn deg2rad(x: f64) -> f64 {
    x * (std::f64::consts::PI / 180.0)
}

/// x radians in degrees: x * (180 / pi), as NumPy's `rad2deg`.
pub fn rad2deg(x: f64) -> f64 {
    x * (180.0 / std::f64::consts::PI)
}

/// Largest argument whose exponential is finite.
pub(crate) const EXP_MAX: f64 = 709.782_712_893_384;
/// Arguments below this have an exponential that rounds to 0.
pub(crate) const EXP_MIN: f64 = -745.133_219_101_941_1;
/// ln 2 split so that `k * LN2_HI` is exact for |k| < 2^11.
pub(crate) const LN2_HI: f64 = 0.693_147_180_369_123_8;
pub(crate) const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// exp(r) - 1 for |r| <= ln(2)/2, as r + r^2 p(r) with p of degree 9
/// fitted to (exp(r) - 1 - r) / r^2 on that interval (Chebyshev, 50
/// digits, `bench/reference/exp_polynomial.py`): p's error is below 1.1e-16
/// of p, so the result's below 0.3 ulp before rounding.
#[inline(always)]
fn expm1_reduced(r: f64) -> f64 {
    const C: [f64; 10] = EXPM1_COEFFICIENTS;
    let mut p = C[9];
    for &c in C[..9].iter().rev() {
        p = p.mul_add(r, c);
    }
    // r + r^2 * (1/2 + r/6 + ...)
    (r * r).mul_add(p, r)
}

/// The coefficients of `expm1_reduced`'s polynomial p, lowest degree
/// first (native code evaluates the same polynomial).
pub(crate) const EXPM1_COEFFICIENTS: [f64; 10] = [
    0.500_000_000_000_000_1,
    0.166_666_666_666_666_69,
    0.041_666_666_666_624_164,
    0.008_333_333_333_330_065,
    0.001_388_888_891_719_671_9,
    0.000_198_412_698_630_405_45,
    2.480_152_132_236_869_2e-5,
    2.755_726_848_031_002_4e-6,
    2.762_007_587_998_336_7e-7,
    2.510_037_583_256_123_4e-8,
];

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
pub(crate) const SHIFTER: f64 = 4_503_599_627_370_496.0;

/// x rounded to the nearest integer, ties to even, for |x| < 2^51.
#[inline(always)]
fn round_even(x: f64) -> f64 {
    let magic = 1.5 * SHIFTER;
    (x + magic) - magic
}

/// e^x, written without branches or selects on the data so that loops over
/// it vectorize, with fused multiply-adds (`f64::mul_add`, exactly rounded
/// on every machine: an instruction where the host has one, the C
/// library's `fma` elsewhere, so every path gives the same bits); within
/// 1 ulp of the correctly rounded result in tests.
#[inline(always)]
pub(crate) fn exp_kernel(x: f64) -> f64 {
    let clamped = x.clamp(EXP_MIN - 1.0, EXP_MAX + 1.0);
    let k = round_even(clamped * std::f64::consts::LOG2_E);
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, clamped));
    let (a, b) = pow2(k);
    // No selects: beyond EXP_MAX the product overflows to infinity, below
    // EXP_MIN it rounds to 0, and a NaN stays NaN through every step.
    (1.0 + expm1_reduced(r)) * a * b
}

/// tanh(x) from exp(2|x|) - 1 without cancellation near 0, within 4 ulps
/// of the correctly rounded result in tests; branch-free on the data like
/// `exp`.
#[inline(always)]
fn tanh_kernel(x: f64) -> f64 {
    let a = x.abs().min(40.0);
    let y = 2.0 * a;
    let k = round_even(y * std::f64::consts::LOG2_E);
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, y));
    let p = expm1_reduced(r);
    let (s1, s2) = pow2(k);
    // expm1(y) = 2^k (1 + p) - 1 = (2^k - 1) + 2^k p, where 2^k - 1 is
    // exact for the k that matter (no rounding of 1 + p).
    let s = s1 * s2;
    let u = s.mul_add(p, s - 1.0);
    let t = u / (u + 2.0);
    if x.is_nan() { x } else { t.copysign(x) }
}

/// Whether the host multiplies and adds in one instruction (x86-64 with
/// FMA3; every other target Rust builds for fuses in hardware or does
/// not matter here).
#[inline]
pub(crate) fn host_fuses() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// One number at a time through a kernel, compiled with fused
/// multiply-adds where the host has them (else `mul_add` calls the C
/// library): the public `exp`, `tanh` and `sigmoid`.
macro_rules! fused {
    ($($(#[$doc:meta])* $name:ident = $kernel:ident;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(x: f64) -> f64 {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "fma")]
                fn with_fma(x: f64) -> f64 {
                    $kernel(x)
                }
                if host_fuses() {
                    // SAFETY: the host has FMA, checked just above.
                    return unsafe { with_fma(x) };
                }
            }
            $kernel(x)
        }
    )*};
}

fused! {
    /// e^x (see `exp_kernel`). Every layer uses it (built-ins, constant
    /// folding, tapes), so they agree.
    exp = exp_kernel;
    /// tanh(x) (see `tanh_kernel`).
    tanh = tanh_kernel;
    /// The logistic function 1 / (1 + exp(-x)), computed without overflow.
    sigmoid = sigmoid_kernel;
}

/// Loops `out[i] = f(x[i])` for a kernel written without branches on the
/// data, compiled for the widest SIMD the host has (AVX-512, AVX2 with
/// FMA, or the baseline), chosen at run time. Every version does the same
/// IEEE operations on each lane (Rust fuses a multiply and an add only
/// where `mul_add` says so), so all give the bits of the kernel called on
/// each number.
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
                #[target_feature(enable = "avx2,fma")]
                fn avx2(x: &[f64], out: &mut [f64]) {
                    for (o, &v) in out.iter_mut().zip(x) {
                        *o = $f(v);
                    }
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the host has AVX-512F, checked just above.
                    return unsafe { avx512(x, out) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && host_fuses() {
                    // SAFETY: the host has AVX2 and FMA, checked just above.
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
    exp_slice = exp_kernel;
    /// `out[i] = tanh(x[i])` in the host's widest vectors.
    tanh_slice = tanh_kernel;
    /// `out[i] = sigmoid(x[i])` in the host's widest vectors.
    sigmoid_slice = sigmoid_kernel;
}

//! The gamma family: `lgamma` (the logarithm of |Γ(x)|), `digamma` (ψ, its
//! derivative) and `polygamma` (ψ⁽ⁿ⁾, the n-th derivative of ψ), written
//! here from their series so that every layer (built-ins, constant folding,
//! tapes, native kernels) computes the same number. The CUDA prelude
//! (`backends/cuda/special.rs`) follows the same steps with the same
//! coefficients.
//!
//! Like its parent module it knows nothing but `f64`.
//!
//! Accuracy (tests/special_functions.rs against mpmath): a few units in the
//! last place for x > 0, relative accuracy kept near the zeros of `lgamma`
//! at 1 and 2 and of `digamma` at 1.4616...; for x < 0 the reflection
//! formulas lose relative accuracy only near the zeros of the functions
//! there (absolute accuracy stays about 1e-15).
//!
//! Values at the poles follow SciPy: `lgamma` is +inf at 0, -1, -2, ...;
//! `digamma` is -inf at +0, +inf at -0 and NaN at -1, -2, ...;
//! `polygamma` of order n >= 1 is (-1)^(n+1) inf at every pole. Unlike
//! SciPy's `gammaln(-inf)` (-inf), `lgamma(-inf)` is +inf, as C's `lgamma`.

/// ln(pi).
pub(crate) const LN_PI: f64 = 1.144_729_885_849_400_2;
/// ln(2 pi) / 2.
pub(crate) const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;
const PI: f64 = core::f64::consts::PI;

/// lgamma(2 + z) = sum over k >= 1 of `LGAMMA_2P[k - 1]` z^k for |z| <= 1/2:
/// the first coefficient is 1 - γ, the k-th (-1)^k (ζ(k) - 1) / k
/// (bench/reference/special_functions.py prints them).
pub(crate) const LGAMMA_2P: [f64; 28] = [
    0.422_784_335_098_467_13,
    0.322_467_033_424_113_2,
    -0.067_352_301_053_198_1,
    0.020_580_808_427_784_546,
    -0.007_385_551_028_673_986,
    0.002_890_510_330_741_523_4,
    -0.001_192_753_911_703_261,
    0.000_509_669_524_743_042_5,
    -0.000_223_154_758_453_579_39,
    9.945_751_278_180_853e-5,
    -4.492_623_673_813_314e-5,
    2.050_721_277_567_069e-5,
    -9.439_488_275_268_397e-6,
    4.374_866_789_907_488e-6,
    -2.039_215_753_801_366e-6,
    9.551_412_130_407_42e-7,
    -4.492_469_198_764_566e-7,
    2.120_718_480_555_466_5e-7,
    -1.004_322_482_396_809_9e-7,
    4.769_810_169_363_980_4e-8,
    -2.271_109_460_894_316_4e-8,
    1.083_865_921_489_695_5e-8,
    -5.183_475_041_970_047e-9,
    2.483_674_543_802_478_5e-9,
    -1.192_140_140_586_091_2e-9,
    5.731_367_241_678_862e-10,
    -2.759_522_885_124_233_4e-10,
    1.330_476_437_424_449e-10,
];

/// The Stirling series of lgamma: B_2k / (2k (2k - 1)) for k = 1..9.
pub(crate) const STIRLING: [f64; 9] = [
    1.0 / 12.0,
    -1.0 / 360.0,
    1.0 / 1260.0,
    -1.0 / 1680.0,
    1.0 / 1188.0,
    -691.0 / 360_360.0,
    1.0 / 156.0,
    -3617.0 / 122_400.0,
    43867.0 / 244_188.0,
];

/// The asymptotic series of digamma: B_2k / (2k) for k = 1..9.
pub(crate) const DIGAMMA_ASYMPTOTIC: [f64; 9] = [
    1.0 / 12.0,
    -1.0 / 120.0,
    1.0 / 252.0,
    -1.0 / 240.0,
    1.0 / 132.0,
    -691.0 / 32760.0,
    1.0 / 12.0,
    -3617.0 / 8160.0,
    43867.0 / 14364.0,
];

/// Bernoulli numbers over factorials, B_2k / (2k)! for k = 1..16: the
/// Euler-Maclaurin tail of the Hurwitz zeta function.
pub(crate) const BERNOULLI_OVER_FACTORIAL: [f64; 16] = [
    0.083_333_333_333_333_33,
    -0.001_388_888_888_888_889,
    3.306_878_306_878_307e-5,
    -8.267_195_767_195_768e-7,
    2.087_675_698_786_81e-8,
    -5.284_190_138_687_493e-10,
    1.338_253_653_068_467_9e-11,
    -3.389_680_296_322_582_7e-13,
    8.586_062_056_277_845e-15,
    -2.174_868_698_558_062e-16,
    5.509_002_828_360_229_5e-18,
    -1.395_446_468_581_252_2e-19,
    3.534_707_039_629_467e-21,
    -8.953_517_427_037_546e-23,
    2.267_952_452_337_683e-24,
    -5.744_790_668_872_202e-26,
];

/// The zero of digamma on the positive axis, x0 = X0_HI + X0_LO.
pub(crate) const X0_HI: f64 = 1.461_632_144_968_362_2;
pub(crate) const X0_LO: f64 = 9.549_995_429_965_697e-17;

/// digamma(x0 + z) = sum over k >= 1 of `DIGAMMA_ROOT[k - 1]` z^k, the
/// Taylor series ψ^(k)(x0) / k! around the zero, used for |z| < 1/4.
pub(crate) const DIGAMMA_ROOT: [f64; 25] = [
    0.967_672_245_447_621_2,
    -0.442_763_168_983_592_1,
    0.258_499_760_955_651,
    -0.163_942_705_442_406_52,
    0.107_824_050_691_262_37,
    -0.072_199_561_256_454_71,
    0.048_804_288_164_143_11,
    -0.033_161_126_474_847_36,
    0.022_597_648_232_218_104,
    -0.015_424_765_904_948_96,
    0.010_538_791_616_612_175,
    -0.007_204_534_386_356_869,
    0.004_926_781_395_729_853,
    -0.003_369_801_655_439_328,
    0.002_305_126_326_734_928,
    -0.001_576_936_771_430_197_2,
    0.001_078_825_201_916_296_7,
    -0.000_738_070_938_996_005_2,
    0.000_504_953_265_834_602,
    -0.000_345_468_025_106_307_7,
    0.000_236_356_015_640_270_53,
    -0.000_161_706_220_919_748_03,
    0.000_110_633_727_687_474_1,
    -7.569_179_582_195_066e-5,
    5.178_575_795_222_081e-5,
];

/// `c[0] + c[1] z + c[2] z^2 + ...` by Horner's rule.
#[inline]
fn poly(c: &[f64], z: f64) -> f64 {
    let mut acc = 0.0;
    for &coefficient in c.iter().rev() {
        acc = acc * z + coefficient;
    }
    acc
}

/// lgamma(2 + z) for |z| <= 1/2.
#[inline]
fn lgamma_2p(z: f64) -> f64 {
    poly(&LGAMMA_2P, z) * z
}

/// lgamma(1 + z) for |z| <= 1/2, exact in z (no rounding of 1 + z).
#[inline]
fn lgamma_1p(z: f64) -> f64 {
    lgamma_2p(z) - z.ln_1p()
}

/// x minus the nearest integer, exactly: in [-1/2, 1/2].
#[inline]
fn reduce(x: f64) -> f64 {
    x - x.round()
}

/// Whether x is 0 or a negative integer: a pole of the gamma function.
#[inline]
fn is_pole(x: f64) -> bool {
    x <= 0.0 && x == x.floor()
}

/// ln |Γ(x)|: +inf at the poles (0, -1, -2, ...) and at ±inf, NaN for NaN.
pub fn lgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() || is_pole(x) {
        return f64::INFINITY;
    }
    if x < -0.5 {
        // Reflection: |Γ(x)| Γ(1 - x) = pi / |sin(pi x)|, with the sine's
        // argument reduced exactly, so large x keep their accuracy.
        let sine = (PI * reduce(x)).sin().abs();
        return LN_PI - sine.ln() - lgamma_positive(1.0 - x);
    }
    if x < 0.5 {
        // Γ(x) = Γ(1 + x) / x, with Γ(1 + x) from the series in x itself.
        return lgamma_1p(x) - x.abs().ln();
    }
    lgamma_positive(x)
}

/// ln Γ(x) for x >= 1/2.
fn lgamma_positive(x: f64) -> f64 {
    if x < 1.5 {
        lgamma_1p(x - 1.0)
    } else if x < 2.5 {
        lgamma_2p(x - 2.0)
    } else if x < 10.0 {
        // Γ(x) = Γ(y) y (y + 1) ... (x - 1) with y = x - n in [1.5, 2.5);
        // y is exact (x and n are multiples of y's unit in the last place).
        let n = (x - 1.5).floor();
        let y = x - n;
        let mut product = y;
        let mut k = 1.0;
        while k < n {
            product *= y + k;
            k += 1.0;
        }
        lgamma_2p(y - 2.0) + product.ln()
    } else {
        // Stirling: (x - 1/2) ln x - x + ln(2 pi)/2 + the series in 1/x.
        let w = 1.0 / x;
        let tail = w * poly(&STIRLING, w * w);
        (x - 0.5) * (x.ln() - 1.0) + (HALF_LN_2PI - 0.5) + tail
    }
}

/// ψ(x), the logarithmic derivative of Γ: -inf at +0, +inf at -0 and
/// +inf, NaN at the negative integers, at -inf and for NaN.
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        // The sign of the zero picks the side: -1/x.
        return -1.0 / x;
    }
    if is_pole(x) {
        return f64::NAN;
    }
    if x < 0.0 {
        // Reflection: ψ(x) = ψ(1 - x) - pi cot(pi x).
        let angle = PI * reduce(x);
        return digamma_positive(1.0 - x) - PI * angle.cos() / angle.sin();
    }
    digamma_positive(x)
}

/// ψ(2 + z) for |z| <= 1/2: the derivative of `lgamma_2p`'s series.
#[inline]
fn digamma_2p(z: f64) -> f64 {
    let mut acc = 0.0;
    let mut k = LGAMMA_2P.len();
    while k > 0 {
        acc = acc * z + k as f64 * LGAMMA_2P[k - 1];
        k -= 1;
    }
    acc
}

/// ψ(x) for x > 0. Every branch adds terms of one sign to a series
/// value, so no digits cancel: near the zero x0 = 1.4616... its Taylor
/// series; below 2.5 the series around 2 with ψ(x) = ψ(x + 1) - 1/x; up
/// to 10 the series plus 1/y + 1/(y + 1) + ... down from x; above 10 the
/// asymptotic series.
fn digamma_positive(x: f64) -> f64 {
    let z = (x - X0_HI) - X0_LO;
    if z.abs() < 0.25 {
        return poly(&DIGAMMA_ROOT, z) * z;
    }
    if x < 0.5 {
        // ψ(x) = ψ(2 + x) - 1/(1 + x) - 1/x.
        return digamma_2p(x) - 1.0 / (1.0 + x) - 1.0 / x;
    }
    if x < 1.5 {
        return digamma_2p(x - 1.0) - 1.0 / x;
    }
    if x < 10.0 {
        // ψ(x) = ψ(y) + 1/y + ... + 1/(x - 1), y = x - n in [1.5, 2.5)
        // exactly (as in lgamma).
        let n = (x - 1.5).floor();
        let y = x - n;
        let mut sum = 0.0;
        let mut k = n - 1.0;
        while k >= 0.0 {
            sum += 1.0 / (y + k);
            k -= 1.0;
        }
        return digamma_2p(y - 2.0) + sum;
    }
    let w = 1.0 / x;
    let w2 = w * w;
    x.ln() - 0.5 * w - w2 * poly(&DIGAMMA_ASYMPTOTIC, w2)
}

/// The largest order `polygamma` computes: n! overflows beyond it.
pub(crate) const MAX_ORDER: f64 = 170.0;

/// The largest order of the reflection for x < 0 (the degree of the
/// polynomial in cot(pi x) it builds is n + 1).
pub(crate) const MAX_REFLECTED_ORDER: usize = 62;

/// ψ⁽ⁿ⁾(x), the n-th derivative of digamma (`polygamma(0, x)` is
/// `digamma(x)`). NaN unless n is a whole number in [0, 170] (orders up
/// to 62 for x < 0); at the poles (-1)^(n+1) inf; (-1)^(n+1) 0 at +inf,
/// NaN at -inf.
pub fn polygamma(n: f64, x: f64) -> f64 {
    if n.is_nan() || x.is_nan() || !(0.0..=MAX_ORDER).contains(&n) || n != n.floor() {
        return f64::NAN;
    }
    if n == 0.0 {
        return digamma(x);
    }
    // (-1)^(n+1).
    let sign = if n % 2.0 == 0.0 { -1.0 } else { 1.0 };
    if x == f64::INFINITY {
        return sign * 0.0;
    }
    if x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if is_pole(x) {
        return sign * f64::INFINITY;
    }
    if x < 0.0 {
        return polygamma_reflected(n as usize, x);
    }
    polygamma_positive(n, x)
}

/// ψ⁽ⁿ⁾(x) = (-1)^(n+1) n! ζ(n + 1, x) for whole n in [1, 170] and x > 0.
fn polygamma_positive(n: f64, x: f64) -> f64 {
    let sign = if n % 2.0 == 0.0 { -1.0 } else { 1.0 };
    sign * factorial(n) * hurwitz_zeta(n + 1.0, x)
}

/// n! for whole n in [0, 170].
fn factorial(n: f64) -> f64 {
    let mut product = 1.0;
    let mut k = 2.0;
    while k <= n {
        product *= k;
        k += 1.0;
    }
    product
}

/// ζ(s, x) = sum over k >= 0 of (x + k)^-s, for whole s >= 2 and x > 0:
/// the first terms directly, the rest by Euler-Maclaurin from a >= 10 + s.
fn hurwitz_zeta(s: f64, x: f64) -> f64 {
    let power = -(s as i32);
    let mut head = 0.0;
    let mut k = 0.0;
    while x + k < 10.0 + s {
        head += (x + k).powi(power);
        k += 1.0;
    }
    let a = x + k;
    let a_s = a.powi(power);
    // a^(1-s) / (s - 1) + a^-s / 2 + sum B_2j/(2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1).
    let w2 = 1.0 / (a * a);
    let mut rising = s; // s (s + 1) ... (s + 2j - 2)
    let mut power_of_a = a_s / a; // a^(-s-2j+1)
    let mut tail = 0.0;
    for (j, &b) in BERNOULLI_OVER_FACTORIAL.iter().enumerate() {
        let term = b * rising * power_of_a;
        tail += term;
        if term.abs() <= 1e-18 * tail.abs() {
            break;
        }
        let m = 2.0 * j as f64;
        rising *= (s + m + 1.0) * (s + m + 2.0);
        power_of_a *= w2;
    }
    // a^(1-s) directly: a * a^-s would lose digits where a^-s is subnormal.
    head + (a.powi(power + 1) / (s - 1.0) + 0.5 * a_s + tail)
}

/// ψ⁽ⁿ⁾(x) for x < 0, not a pole, 1 <= n: by the reflection
/// ψ⁽ⁿ⁾(x) = (-1)^n ψ⁽ⁿ⁾(1 - x) - pi^(n+1) P_n(cot(pi x)), where P_0(c) = c
/// and P_(k+1)(c) = -(1 + c^2) P_k'(c) (the derivatives of cot).
fn polygamma_reflected(n: usize, x: f64) -> f64 {
    if n > MAX_REFLECTED_ORDER {
        return f64::NAN;
    }
    // Coefficients of P_k by ascending powers of c; P_k has degree k + 1.
    let mut p = [0.0f64; MAX_REFLECTED_ORDER + 2];
    p[1] = 1.0;
    for k in 0..n {
        // Derivative (degree k), then times -(1 + c^2) (degree k + 2).
        let mut next = [0.0f64; MAX_REFLECTED_ORDER + 2];
        for i in 0..=k {
            let d = (i + 1) as f64 * p[i + 1];
            next[i] -= d;
            next[i + 2] -= d;
        }
        p = next;
    }
    let angle = PI * reduce(x);
    let c = angle.cos() / angle.sin();
    let cot_part = PI.powi(n as i32 + 1) * poly(&p[..n + 2], c);
    let mirrored = polygamma_positive(n as f64, 1.0 - x);
    let mirrored = if n.is_multiple_of(2) {
        mirrored
    } else {
        -mirrored
    };
    mirrored - cot_part
}

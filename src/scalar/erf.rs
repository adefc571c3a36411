//! The error function `erf` and its complement `erfc`, written here so
//! that every layer computes the same number; the CUDA prelude
//! (`backends/cuda/special.rs`) follows the same steps with the same
//! coefficients. Knows nothing but `f64`.
//!
//! For |x| < 1/2, erf is its Taylor series. Otherwise, with z = |x| and
//! t = 2 / (2 + z), erfc(z) = t exp(-z^2 + g(t)), where g is a smooth
//! function of t on [0, 1] given by a Chebyshev series (coefficients
//! fitted with mpmath by bench/reference/special_functions.py, after the
//! form of Numerical Recipes' `erfccheb`); z^2 is split into an exact part
//! and a small correction so the exponential keeps full relative accuracy
//! in the tail (erfc(26) ~ 5.7e-296). Accuracy against mpmath: a few units
//! in the last place (tests/special_functions.rs).

/// erf(x) = x (c0 + c1 x^2 + ...) for |x| < 1/2: the Taylor coefficients
/// 2/sqrt(pi) (-1)^n / (n! (2n + 1)).
pub(crate) const ERF_TAYLOR: [f64; 14] = [
    core::f64::consts::FRAC_2_SQRT_PI,
    -0.376_126_389_031_837_54,
    0.112_837_916_709_551_26,
    -0.026_866_170_645_131_252,
    0.005_223_977_625_442_188,
    -0.000_854_832_702_345_085_3,
    0.000_120_553_329_817_896_64,
    -1.492_565_035_840_625e-5,
    1.646_211_436_588_924_8e-6,
    -1.636_584_469_123_492_4e-7,
    1.480_719_281_587_921_8e-8,
    -1.229_055_530_171_792_8e-9,
    9.422_759_064_650_411e-11,
    -6.711_366_855_164_110_5e-12,
];

/// g(t) = ln(erfc(z) / t) + z^2 as a Chebyshev series in u = 2t - 1 =
/// (2 - z) / (2 + z): g = sum c_k T_k(u), the first coefficient already
/// halved.
pub(crate) const ERFC_CHEBYSHEV: [f64; 30] = [
    -0.651_326_859_890_854_7,
    0.641_969_792_356_490_2,
    0.019_476_473_204_185_836,
    -0.009_561_514_786_808_632,
    -0.000_946_595_344_482_036_9,
    0.000_366_839_497_852_761_45,
    4.252_332_480_690_777e-5,
    -2.027_857_811_253_424_2e-5,
    -1.624_290_004_647_025_6e-6,
    1.303_655_835_580_523_2e-6,
    1.562_644_172_206_614_2e-8,
    -8.523_809_591_492_654e-8,
    6.529_054_439_098_851_5e-9,
    5.059_343_495_551_469e-9,
    -9.913_641_564_930_33e-10,
    -2.273_651_222_931_836e-10,
    9.646_791_102_015_527e-11,
    2.394_038_083_039_114_6e-12,
    -6.886_027_526_497_553e-12,
    8.944_879_273_090_725e-13,
    3.130_921_399_342_958e-13,
    -1.127_082_236_136_725_2e-13,
    3.810_905_255_189_232e-16,
    7.106_097_613_609_237e-15,
    -1.523_028_201_457_104_3e-15,
    -9.457_494_571_291_233e-17,
    1.210_237_189_224_279e-16,
    -2.816_663_087_747_177e-17,
    5.003_005_559_445_909e-20,
    2.328_104_257_952_925_3e-18,
];

/// Beyond this erfc(z) is below the smallest subnormal number.
const ERFC_ZERO: f64 = 27.3;

/// erf(x): odd, ±1 at ±inf, NaN for NaN.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let z = x.abs();
    if z < 0.5 {
        let x2 = x * x;
        let mut acc = 0.0;
        for &c in ERF_TAYLOR.iter().rev() {
            acc = acc * x2 + c;
        }
        return x * acc;
    }
    (1.0 - erfc_positive(z)).copysign(x)
}

/// erfc(x) = 1 - erf(x), with full relative accuracy for large x: 2 at
/// -inf, 0 at +inf, NaN for NaN.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        2.0 - erfc_positive(-x)
    } else {
        erfc_positive(x)
    }
}

/// erfc(z) for z >= 0 (infinity included).
fn erfc_positive(z: f64) -> f64 {
    if z > ERFC_ZERO {
        return 0.0;
    }
    let t = 2.0 / (2.0 + z);
    let u = (2.0 - z) / (2.0 + z);
    // Clenshaw's recurrence for sum c_k T_k(u), written so that only one
    // multiplication and one addition depend on the previous step.
    let two_u = 2.0 * u;
    let (mut b1, mut b2) = (0.0, 0.0);
    for &c in ERFC_CHEBYSHEV[1..].iter().rev() {
        let b0 = (c - b2) + two_u * b1;
        b2 = b1;
        b1 = b0;
    }
    let g = u * b1 - b2 + ERFC_CHEBYSHEV[0];
    // z^2 = high^2 + (z - high)(z + high), with high the leading 26 bits
    // of z (Veltkamp's split), so high^2 is exact.
    let split = 134_217_729.0 * z;
    let high = split - (split - z);
    let correction = (z - high) * (z + high);
    t * super::exp(g - correction) * super::exp(-high * high)
}

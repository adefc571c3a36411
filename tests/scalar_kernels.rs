//! The shared scalar kernels that replace the C library's (`exp`, `tanh`)
//! against the C library, over a wide range of arguments and the special
//! values; and the tapes' summation against an exact sum.

use epsilon::scalar::{exp, sum, tanh};

/// Distance in units in the last place.
fn ulps(a: f64, b: f64) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

fn points() -> Vec<f64> {
    let mut points = vec![
        0.0, -0.0, 1e-300, -1e-300, 1e-20, 0.5, -0.5, 1.0, 20.0, -20.0,
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
        points.push((unit - 0.5) * 1500.0);
        points.push((unit - 0.5) * 4.0);
        points.push((unit - 0.5) * 1e-6);
    }
    points
}

#[test]
fn exp_is_within_one_ulp_of_the_library() {
    for x in points() {
        let (ours, reference) = (exp(x), x.exp());
        assert!(
            ulps(ours, reference) <= 1,
            "exp({x:e}) = {ours:e}, libm {reference:e}"
        );
    }
    assert_eq!(exp(f64::INFINITY), f64::INFINITY);
    assert_eq!(exp(f64::NEG_INFINITY), 0.0);
    assert!(exp(f64::NAN).is_nan());
    assert_eq!(exp(710.0), f64::INFINITY);
    assert_eq!(exp(-746.0), 0.0);
}

#[test]
fn tanh_is_within_four_ulps_of_the_library() {
    for x in points() {
        let (ours, reference) = (tanh(x), x.tanh());
        assert!(
            ulps(ours, reference) <= 4,
            "tanh({x:e}) = {ours:e}, libm {reference:e}"
        );
    }
    assert_eq!(tanh(f64::INFINITY), 1.0);
    assert_eq!(tanh(f64::NEG_INFINITY), -1.0);
    assert!(tanh(f64::NAN).is_nan());
    assert_eq!(tanh(-0.0).to_bits(), (-0.0f64).to_bits());
}

/// The exact sum of `values`, rounded once (Neumaier's compensated sum in
/// pairs of doubles is exact enough for these sizes; checked against
/// integers below).
fn compensated(values: &[f64]) -> f64 {
    let (mut total, mut carry) = (0.0f64, 0.0f64);
    for &x in values {
        let t = total + x;
        carry += if total.abs() >= x.abs() {
            (total - t) + x
        } else {
            (x - t) + total
        };
        total = t;
    }
    total + carry
}

#[test]
fn sum_is_exact_on_integers_and_close_on_random_values() {
    // Integers below 2^53 add exactly in any order.
    for n in [0usize, 1, 7, 8, 9, 255, 256, 1001] {
        let values: Vec<f64> = (0..n).map(|i| (i * i) as f64 - 300.0).collect();
        let want: f64 = (0..n).map(|i| (i * i) as f64 - 300.0).sum();
        assert_eq!(sum(&values), want, "n = {n}");
    }
    // Random values: within n * eps * sum |x| of the compensated sum.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for n in [3usize, 17, 256, 10_000] {
        let values: Vec<f64> = (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.3) * 1e3
            })
            .collect();
        let bound = n as f64 * f64::EPSILON * values.iter().map(|x| x.abs()).sum::<f64>();
        let error = (sum(&values) - compensated(&values)).abs();
        assert!(error <= bound, "n = {n}: error {error:e} above {bound:e}");
    }
    // NaN and infinities propagate.
    assert!(sum(&[1.0, f64::NAN, 2.0]).is_nan());
    assert_eq!(sum(&[1.0; 9].map(|x| x * f64::INFINITY)), f64::INFINITY);
}

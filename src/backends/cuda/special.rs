//! CUDA C for the special functions (`lgamma`, `digamma`, `polygamma`,
//! `erf`, `erfc`): device functions that take the same steps as
//! `crate::scalar::{gamma, erf}` with the same coefficients, written into
//! the source from the Rust tables so the two cannot drift apart. CUDA's
//! own `lgamma`/`erfc` would differ from the CPU near the zeros of
//! `lgamma` on the negative axis and at the poles; these agree with it to
//! rounding (the host tests compare them on many points).
//!
//! The prelude is added to a kernel only when one of its steps calls a
//! special function, so other kernels compile as fast as before.

use crate::scalar::erf::{ERF_TAYLOR, ERFC_CHEBYSHEV};
use crate::scalar::gamma::{
    BERNOULLI_OVER_FACTORIAL, DIGAMMA_ASYMPTOTIC, DIGAMMA_ROOT, HALF_LN_2PI, LGAMMA_2P, LN_PI,
    MAX_ORDER, MAX_REFLECTED_ORDER, STIRLING, X0_HI, X0_LO,
};
use std::sync::OnceLock;

/// The device functions, with `{NAME}` where a table or a constant goes.
const TEMPLATE: &str = r#"// Epsilon's special functions (see src/scalar/gamma.rs and erf.rs).
static __device__ const double eps_lgamma_2p_c[] = {LGAMMA_2P};
static __device__ const double eps_stirling_c[] = {STIRLING};
static __device__ const double eps_digamma_asymptotic_c[] = {DIGAMMA_ASYMPTOTIC};
static __device__ const double eps_digamma_root_c[] = {DIGAMMA_ROOT};
static __device__ const double eps_bernoulli_c[] = {BERNOULLI};
static __device__ const double eps_erf_taylor_c[] = {ERF_TAYLOR};
static __device__ const double eps_erfc_chebyshev_c[] = {ERFC_CHEBYSHEV};
__device__ double eps_poly(const double* c, int n, double z) {
    double acc = 0.0;
    for (int k = n - 1; k >= 0; --k) acc = acc * z + c[k];
    return acc;
}
__device__ double eps_reduce(double x) { return x - round(x); }
__device__ bool eps_is_pole(double x) { return x <= 0.0 && x == floor(x); }
__device__ double eps_lgamma_2p(double z) { return eps_poly(eps_lgamma_2p_c, {N_LGAMMA_2P}, z) * z; }
__device__ double eps_lgamma_1p(double z) { return eps_lgamma_2p(z) - log1p(z); }
__device__ double eps_lgamma_positive(double x) {
    if (x < 1.5) return eps_lgamma_1p(x - 1.0);
    if (x < 2.5) return eps_lgamma_2p(x - 2.0);
    if (x < 10.0) {
        const double n = floor(x - 1.5);
        const double y = x - n;
        double product = y;
        for (double k = 1.0; k < n; k += 1.0) product *= y + k;
        return eps_lgamma_2p(y - 2.0) + log(product);
    }
    const double w = 1.0 / x;
    const double tail = w * eps_poly(eps_stirling_c, {N_STIRLING}, w * w);
    return (x - 0.5) * (log(x) - 1.0) + ({HALF_LN_2PI} - 0.5) + tail;
}
__device__ double eps_lgamma(double x) {
    if (isnan(x)) return x;
    if (fabs(x) == eps_inf() || eps_is_pole(x)) return eps_inf();
    if (x < -0.5) {
        const double sine = fabs(sin({PI} * eps_reduce(x)));
        return {LN_PI} - log(sine) - eps_lgamma_positive(1.0 - x);
    }
    if (x < 0.5) return eps_lgamma_1p(x) - log(fabs(x));
    return eps_lgamma_positive(x);
}
__device__ double eps_digamma_2p(double z) {
    double acc = 0.0;
    for (int k = {N_LGAMMA_2P}; k > 0; --k) acc = acc * z + (double)k * eps_lgamma_2p_c[k - 1];
    return acc;
}
__device__ double eps_digamma_positive(double x) {
    const double z = (x - {X0_HI}) - {X0_LO};
    if (fabs(z) < 0.25) return eps_poly(eps_digamma_root_c, {N_DIGAMMA_ROOT}, z) * z;
    if (x < 0.5) return eps_digamma_2p(x) - 1.0 / (1.0 + x) - 1.0 / x;
    if (x < 1.5) return eps_digamma_2p(x - 1.0) - 1.0 / x;
    if (x < 10.0) {
        const double n = floor(x - 1.5);
        const double y = x - n;
        double sum = 0.0;
        for (double k = n - 1.0; k >= 0.0; k -= 1.0) sum += 1.0 / (y + k);
        return eps_digamma_2p(y - 2.0) + sum;
    }
    const double w = 1.0 / x, w2 = w * w;
    return log(x) - 0.5 * w - w2 * eps_poly(eps_digamma_asymptotic_c, {N_DIGAMMA_ASYMPTOTIC}, w2);
}
__device__ double eps_digamma(double x) {
    if (isnan(x) || x == -eps_inf()) return eps_nan();
    if (x == eps_inf()) return x;
    if (x == 0.0) return -1.0 / x;
    if (eps_is_pole(x)) return eps_nan();
    if (x < 0.0) {
        const double angle = {PI} * eps_reduce(x);
        return eps_digamma_positive(1.0 - x) - {PI} * cos(angle) / sin(angle);
    }
    return eps_digamma_positive(x);
}
__device__ double eps_hurwitz_zeta(double s, double x) {
    const double power = -s;
    double head = 0.0, k = 0.0;
    while (x + k < 10.0 + s) {
        head += pow(x + k, power);
        k += 1.0;
    }
    const double a = x + k, a_s = pow(a, power), w2 = 1.0 / (a * a);
    double rising = s, power_of_a = a_s / a, tail = 0.0;
    for (int j = 0; j < {N_BERNOULLI}; ++j) {
        const double term = eps_bernoulli_c[j] * rising * power_of_a;
        tail += term;
        if (fabs(term) <= 1e-18 * fabs(tail)) break;
        const double m = 2.0 * j;
        rising *= (s + m + 1.0) * (s + m + 2.0);
        power_of_a *= w2;
    }
    return head + (pow(a, power + 1.0) / (s - 1.0) + 0.5 * a_s + tail);
}
__device__ double eps_polygamma_positive(double n, double x) {
    const double sign = fmod(n, 2.0) == 0.0 ? -1.0 : 1.0;
    double factorial = 1.0;
    for (double k = 2.0; k <= n; k += 1.0) factorial *= k;
    return sign * factorial * eps_hurwitz_zeta(n + 1.0, x);
}
__device__ double eps_polygamma_reflected(int n, double x) {
    if (n > {MAX_REFLECTED_ORDER}) return eps_nan();
    double p[{MAX_REFLECTED_ORDER} + 2], next[{MAX_REFLECTED_ORDER} + 2];
    for (int i = 0; i < {MAX_REFLECTED_ORDER} + 2; ++i) p[i] = 0.0;
    p[1] = 1.0;
    for (int k = 0; k < n; ++k) {
        for (int i = 0; i < {MAX_REFLECTED_ORDER} + 2; ++i) next[i] = 0.0;
        for (int i = 0; i <= k; ++i) {
            const double d = (double)(i + 1) * p[i + 1];
            next[i] -= d;
            next[i + 2] -= d;
        }
        for (int i = 0; i < {MAX_REFLECTED_ORDER} + 2; ++i) p[i] = next[i];
    }
    const double angle = {PI} * eps_reduce(x);
    const double c = cos(angle) / sin(angle);
    const double cot_part = pow({PI}, (double)(n + 1)) * eps_poly(p, n + 2, c);
    const double mirrored = eps_polygamma_positive((double)n, 1.0 - x);
    return (n % 2 == 0 ? mirrored : -mirrored) - cot_part;
}
__device__ double eps_polygamma(double n, double x) {
    if (isnan(n) || isnan(x) || !(n >= 0.0 && n <= {MAX_ORDER}) || n != floor(n)) return eps_nan();
    if (n == 0.0) return eps_digamma(x);
    const double sign = fmod(n, 2.0) == 0.0 ? -1.0 : 1.0;
    if (x == eps_inf()) return sign * 0.0;
    if (x == -eps_inf()) return eps_nan();
    if (eps_is_pole(x)) return sign * eps_inf();
    if (x < 0.0) return eps_polygamma_reflected((int)n, x);
    return eps_polygamma_positive(n, x);
}
__device__ double eps_erfc_positive(double z) {
    if (z > 27.3) return 0.0;
    const double t = 2.0 / (2.0 + z);
    const double u = (2.0 - z) / (2.0 + z);
    const double two_u = 2.0 * u;
    double b1 = 0.0, b2 = 0.0;
    for (int k = {N_ERFC_CHEBYSHEV} - 1; k >= 1; --k) {
        const double b0 = (eps_erfc_chebyshev_c[k] - b2) + two_u * b1;
        b2 = b1;
        b1 = b0;
    }
    const double g = u * b1 - b2 + eps_erfc_chebyshev_c[0];
    const double split = 134217729.0 * z;
    const double high = split - (split - z);
    const double correction = (z - high) * (z + high);
    return t * exp(g - correction) * exp(-high * high);
}
__device__ double eps_erf(double x) {
    if (isnan(x)) return x;
    const double z = fabs(x);
    if (z < 0.5) return x * eps_poly(eps_erf_taylor_c, {N_ERF_TAYLOR}, x * x);
    return copysign(1.0 - eps_erfc_positive(z), x);
}
__device__ double eps_erfc(double x) {
    if (isnan(x)) return x;
    return x < 0.0 ? 2.0 - eps_erfc_positive(-x) : eps_erfc_positive(x);
}
"#;

/// A number as a C literal that reads back to the same `f64`.
fn literal(x: f64) -> String {
    format!("{x:?}")
}

/// The device functions of the special functions.
pub fn prelude() -> &'static str {
    static PRELUDE: OnceLock<String> = OnceLock::new();
    PRELUDE.get_or_init(|| {
        let table = |values: &[f64]| {
            let items: Vec<String> = values.iter().map(|&v| literal(v)).collect();
            format!("{{{}}}", items.join(", "))
        };
        let mut text = TEMPLATE.to_string();
        let substitutions: [(&str, String); 21] = [
            ("{LGAMMA_2P}", table(&LGAMMA_2P)),
            ("{STIRLING}", table(&STIRLING)),
            ("{DIGAMMA_ASYMPTOTIC}", table(&DIGAMMA_ASYMPTOTIC)),
            ("{DIGAMMA_ROOT}", table(&DIGAMMA_ROOT)),
            ("{BERNOULLI}", table(&BERNOULLI_OVER_FACTORIAL)),
            ("{ERF_TAYLOR}", table(&ERF_TAYLOR)),
            ("{ERFC_CHEBYSHEV}", table(&ERFC_CHEBYSHEV)),
            ("{N_LGAMMA_2P}", LGAMMA_2P.len().to_string()),
            ("{N_STIRLING}", STIRLING.len().to_string()),
            ("{N_DIGAMMA_ROOT}", DIGAMMA_ROOT.len().to_string()),
            (
                "{N_DIGAMMA_ASYMPTOTIC}",
                DIGAMMA_ASYMPTOTIC.len().to_string(),
            ),
            ("{N_BERNOULLI}", BERNOULLI_OVER_FACTORIAL.len().to_string()),
            ("{N_ERF_TAYLOR}", ERF_TAYLOR.len().to_string()),
            ("{N_ERFC_CHEBYSHEV}", ERFC_CHEBYSHEV.len().to_string()),
            ("{HALF_LN_2PI}", literal(HALF_LN_2PI)),
            ("{LN_PI}", literal(LN_PI)),
            ("{PI}", literal(std::f64::consts::PI)),
            ("{X0_HI}", literal(X0_HI)),
            ("{X0_LO}", literal(X0_LO)),
            ("{MAX_ORDER}", literal(MAX_ORDER)),
            ("{MAX_REFLECTED_ORDER}", MAX_REFLECTED_ORDER.to_string()),
        ];
        for (name, value) in substitutions {
            text = text.replace(name, &value);
        }
        text
    })
}

/// Whether a kernel calling `math` needs the prelude.
pub fn needs_prelude(math: &crate::ir::math::language::Math) -> bool {
    use crate::ir::math::elementwise::{Spelling, row};
    matches!(row(math).map(|row| row.cuda), Some(Spelling::Special(_)))
}

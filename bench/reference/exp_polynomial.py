"""The polynomial of Epsilon's exp (src/scalar.rs, `expm1_reduced`).

exp(x) = 2^k (1 + expm1(r)) with |r| <= ln(2)/2, and expm1(r) = r + r^2 p(r),
p of degree 9 fitted to (exp(r) - 1 - r) / r^2 on [-ln(2)/2, ln(2)/2] by
mpmath's Chebyshev fit at 50 digits. Prints the coefficients (lowest degree
first, as Rust literals), the fit's error, and the worst error of the
double-precision evaluation `r + (r*r)*p` over 20,001 points, in units of
2^-53 (half an ulp of numbers near 1).

Run: python3 bench/reference/exp_polynomial.py   (needs mpmath)
"""
import mpmath as mp

mp.mp.dps = 50
DEGREE = 9
HALF_LN2 = mp.log(2) / 2


def target(r):
    if abs(r) < mp.mpf("1e-30"):
        return mp.mpf(1) / 2
    return (mp.exp(r) - 1 - r) / r**2


def main():
    poly, error = mp.chebyfit(target, [-HALF_LN2, HALF_LN2], DEGREE + 1, error=True)
    coefficients = [float(c) for c in poly]  # highest degree first
    worst = mp.mpf(0)
    for i in range(20001):
        r = float(-HALF_LN2 + 2 * HALF_LN2 * i / 20000)
        p = 0.0
        for c in coefficients:
            p = p * r + c
        value = r + (r * r) * p
        exact = mp.expm1(mp.mpf(r))
        worst = max(worst, abs((1 + mp.mpf(value)) - (1 + exact)) / (1 + exact))
    for c in reversed(coefficients):
        print(repr(c))
    print(f"fit error {float(error):.3e}; evaluation worst {float(worst / mp.mpf(2) ** -53):.3f} x 2^-53")


if __name__ == "__main__":
    main()

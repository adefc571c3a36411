//! The special functions: the error function's complement and symmetry,
//! and `digamma` as the polygamma function of order 0. Every rule here
//! holds wherever its left side is defined (`erf` and `erfc` are total;
//! `polygamma 0` is `digamma` at every point, poles included).

use super::*;
use egg::rewrite as rw;

#[rustfmt::skip]
pub(super) fn rules() -> Vec<MathRewrite> {
    vec![
        rw!("erfc-def";        "(- 1 (erf ?a))"            => "(erfc ?a)"),
        rw!("erf-def";         "(- 1 (erfc ?a))"           => "(erf ?a)"),
        rw!("erf-of-neg";      "(erf (neg ?a))"            => "(neg (erf ?a))"),
        rw!("erfc-of-neg";     "(erfc (neg ?a))"           => "(- 2 (erfc ?a))"),
        rw!("polygamma-zero";  "(polygamma 0 ?a)"          => "(digamma ?a)"),
    ]
}

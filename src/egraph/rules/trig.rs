//! Trigonometric and hyperbolic identities: parity, Pythagoras, quotients.

use super::*;
use egg::rewrite as rw;

#[rustfmt::skip]
pub(super) fn rules() -> Vec<MathRewrite> {
    vec![
        rw!("sin-neg";        "(sin (neg ?a))"                             => "(neg (sin ?a))"),
        rw!("cos-neg";        "(cos (neg ?a))"                             => "(cos ?a)"),
        rw!("tan-neg";        "(tan (neg ?a))"                             => "(neg (tan ?a))"),
        rw!("sinh-neg";       "(sinh (neg ?a))"                            => "(neg (sinh ?a))"),
        rw!("cosh-neg";       "(cosh (neg ?a))"                            => "(cosh ?a)"),
        rw!("tanh-neg";       "(tanh (neg ?a))"                            => "(neg (tanh ?a))"),
        rw!("pythagoras";     "(+ (* (sin ?a) (sin ?a)) (* (cos ?a) (cos ?a)))" => "1" if total("?a")),
        rw!("one-minus-sin2"; "(- 1 (* (sin ?a) (sin ?a)))"                => "(* (cos ?a) (cos ?a))"),
        rw!("one-minus-cos2"; "(- 1 (* (cos ?a) (cos ?a)))"                => "(* (sin ?a) (sin ?a))"),
        rw!("tan-def";        "(/ (sin ?a) (cos ?a))"                      => "(tan ?a)"),
        rw!("tan-expand";     "(tan ?a)"                                   => "(/ (sin ?a) (cos ?a))"),
        rw!("hyperbolic-one"; "(- (* (cosh ?a) (cosh ?a)) (* (sinh ?a) (sinh ?a)))" => "1" if total("?a")),
        rw!("tanh-def";       "(/ (sinh ?a) (cosh ?a))"                    => "(tanh ?a)"),
        rw!("one-minus-tanh2"; "(- 1 (* (tanh ?a) (tanh ?a)))"             => "(/ 1 (* (cosh ?a) (cosh ?a)))"),
        rw!("double-sin";     "(* (sin ?a) (cos ?a))"                      => "(* 0.5 (sin (* 2 ?a)))"),
    ]
}

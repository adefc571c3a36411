//! Exponentials and logarithms, with their accurate variants (`log1p`,
//! `expm1`) and the logistic family (`sigmoid`, `softplus`).

use super::*;
use egg::rewrite as rw;

#[rustfmt::skip]
pub(super) fn rules() -> Vec<MathRewrite> {
    vec![
        rw!("exp-add";         "(exp (+ ?a ?b))"           => "(* (exp ?a) (exp ?b))"),
        rw!("exp-mul-exp";     "(* (exp ?a) (exp ?b))"     => "(exp (+ ?a ?b))"),
        rw!("exp-sub";         "(exp (- ?a ?b))"           => "(/ (exp ?a) (exp ?b))"),
        rw!("exp-div-exp";     "(/ (exp ?a) (exp ?b))"     => "(exp (- ?a ?b))"),
        rw!("exp-neg";         "(exp (neg ?a))"            => "(/ 1 (exp ?a))"),
        rw!("recip-exp";       "(/ 1 (exp ?a))"            => "(exp (neg ?a))"),
        rw!("exp-log";         "(exp (log ?a))"            => "?a" if positive("?a")),
        rw!("log-exp";         "(log (exp ?a))"            => "?a"),
        rw!("log-mul";         "(log (* ?a ?b))"           => "(+ (log ?a) (log ?b))" if both(positive("?a"), positive("?b"))),
        rw!("log-add-log";     "(+ (log ?a) (log ?b))"     => "(log (* ?a ?b))" if both(positive("?a"), positive("?b"))),
        rw!("log-div";         "(log (/ ?a ?b))"           => "(- (log ?a) (log ?b))" if both(positive("?a"), positive("?b"))),
        rw!("log-sub-log";     "(- (log ?a) (log ?b))"     => "(log (/ ?a ?b))" if both(positive("?a"), positive("?b"))),
        rw!("log-pow";         "(log (pow ?a ?n))"         => "(* ?n (log ?a))" if positive("?a")),
        rw!("log-sqrt";        "(log (sqrt ?a))"           => "(* 0.5 (log ?a))"),
        rw!("pow-as-exp";      "(pow ?a ?b)"               => "(exp (* ?b (log ?a)))" if positive("?a")),
        rw!("exp-as-pow";      "(exp (* ?b (log ?a)))"     => "(pow ?a ?b)" if positive("?a")),
        rw!("log1p-def";       "(log (+ 1 ?a))"            => "(log1p ?a)"),
        rw!("log1p-def-right"; "(log (+ ?a 1))"            => "(log1p ?a)"),
        rw!("expm1-def";       "(- (exp ?a) 1)"            => "(expm1 ?a)"),
        rw!("expm1-add-one";   "(+ (expm1 ?a) 1)"          => "(exp ?a)"),
        rw!("sigmoid-def";     "(/ 1 (+ 1 (exp (neg ?a))))" => "(sigmoid ?a)"),
        rw!("sigmoid-ratio";   "(/ (exp ?a) (+ 1 (exp ?a)))" => "(sigmoid ?a)"),
        rw!("sigmoid-neg";     "(- 1 (sigmoid ?a))"        => "(sigmoid (neg ?a))"),
        rw!("sigmoid-of-neg";  "(sigmoid (neg ?a))"        => "(- 1 (sigmoid ?a))"),
        rw!("softplus-def";    "(log1p (exp ?a))"          => "(softplus ?a)"),
        rw!("exp-softplus";    "(exp (softplus ?a))"       => "(+ 1 (exp ?a))"),
        rw!("xlogy-as-mul";    "(xlogy ?a ?b)"             => "(* ?a (log ?b))" if positive("?b")),
        rw!("exp-log1p";       "(exp (log1p ?a))"          => "(+ 1 ?a)" if positive("?a")),
    ]
}

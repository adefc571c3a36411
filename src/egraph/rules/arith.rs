//! Algebra: commutativity and associativity, identities, negation and
//! subtraction, division, collecting like terms and powers, factoring.

use super::*;
use egg::rewrite as rw;

#[rustfmt::skip]
pub(super) fn rules() -> Vec<MathRewrite> {
    let mut rules = vec![
        rw!("add-comm";       "(+ ?a ?b)"               => "(+ ?b ?a)"),
        rw!("mul-comm";       "(* ?a ?b)"               => "(* ?b ?a)"),
        rw!("add-assoc";      "(+ ?a (+ ?b ?c))"        => "(+ (+ ?a ?b) ?c)"),
        rw!("mul-assoc";      "(* ?a (* ?b ?c))"        => "(* (* ?a ?b) ?c)"),
        rw!("add-zero";       "(+ ?a 0)"                => "?a"),
        rw!("mul-one";        "(* ?a 1)"                => "?a"),
        rw!("mul-zero";       "(* ?a 0)"                => "0" if total("?a")),
        rw!("sub-zero";       "(- ?a 0)"                => "?a"),
        rw!("zero-sub";       "(- 0 ?a)"                => "(neg ?a)"),
        rw!("sub-self";       "(- ?a ?a)"               => "0" if total("?a")),
        rw!("sub-as-add";     "(- ?a ?b)"               => "(+ ?a (neg ?b))"),
        rw!("add-neg-as-sub"; "(+ ?a (neg ?b))"         => "(- ?a ?b)"),
        rw!("sub-sub-left";   "(- (- ?a ?b) ?c)"        => "(- ?a (+ ?b ?c))"),
        rw!("sub-sub";        "(- ?a (- ?b ?c))"        => "(+ (- ?a ?b) ?c)"),
        rw!("neg-neg";        "(neg (neg ?a))"          => "?a"),
        rw!("neg-sub";        "(neg (- ?a ?b))"         => "(- ?b ?a)"),
        rw!("neg-as-mul";     "(neg ?a)"                => "(* -1 ?a)"),
        rw!("mul-neg-one";    "(* -1 ?a)"               => "(neg ?a)"),
        rw!("neg-add";        "(neg (+ ?a ?b))"         => "(+ (neg ?a) (neg ?b))"),
        rw!("mul-neg";        "(* (neg ?a) ?b)"         => "(neg (* ?a ?b))"),
        rw!("neg-mul";        "(neg (* ?a ?b))"         => "(* (neg ?a) ?b)"),
        rw!("div-neg";        "(/ (neg ?a) ?b)"         => "(neg (/ ?a ?b))"),
        rw!("neg-div";        "(neg (/ ?a ?b))"         => "(/ (neg ?a) ?b)"),
        rw!("div-one";        "(/ ?a 1)"                => "?a"),
        rw!("div-self";       "(/ ?a ?a)"               => "1" if non_zero("?a")),
        rw!("div-cancel";     "(/ (* ?a ?b) ?b)"        => "?a" if non_zero("?b")),
        rw!("mul-div-cancel"; "(* (/ ?a ?b) ?b)"        => "?a" if non_zero("?b")),
        rw!("div-div";        "(/ (/ ?a ?b) ?c)"        => "(/ ?a (* ?b ?c))"),
        rw!("div-by-div";     "(/ ?a (/ ?b ?c))"        => "(/ (* ?a ?c) ?b)" if non_zero("?c")),
        rw!("mul-div";        "(* ?a (/ ?b ?c))"        => "(/ (* ?a ?b) ?c)"),
        rw!("div-mul";        "(/ (* ?a ?b) ?c)"        => "(* ?a (/ ?b ?c))"),
        rw!("add-div";        "(+ (/ ?a ?c) (/ ?b ?c))" => "(/ (+ ?a ?b) ?c)"),
        rw!("sub-div";        "(- (/ ?a ?c) (/ ?b ?c))" => "(/ (- ?a ?b) ?c)"),
        rw!("div-as-mul";     "(/ ?a ?b)"               => "(* ?a (/ 1 ?b))"),
        rw!("mul-recip";      "(* ?a (/ 1 ?b))"         => "(/ ?a ?b)"),
        rw!("recip-as-pow";   "(/ 1 ?a)"                => "(pow ?a -1)"),
        rw!("pow-as-recip";   "(pow ?a -1)"             => "(/ 1 ?a)"),
        rw!("distribute";     "(* ?a (+ ?b ?c))"        => "(+ (* ?a ?b) (* ?a ?c))"),
        rw!("distribute-sub"; "(* ?a (- ?b ?c))"        => "(- (* ?a ?b) (* ?a ?c))"),
        rw!("factor";         "(+ (* ?a ?b) (* ?a ?c))" => "(* ?a (+ ?b ?c))"),
        rw!("factor-sub";     "(- (* ?a ?b) (* ?a ?c))" => "(* ?a (- ?b ?c))"),
        rw!("factor-one";     "(+ (* ?a ?b) ?a)"        => "(* ?a (+ ?b 1))"),
        rw!("add-same";       "(+ ?a ?a)"               => "(* 2 ?a)"),
        rw!("sub-factor-one"; "(- (* ?a ?b) ?a)"        => "(* ?a (- ?b 1))"),
        rw!("mul-same";       "(* ?a ?a)"               => "(pow ?a 2)"),
        rw!("square-as-mul";  "(pow ?a 2)"              => "(* ?a ?a)"),
        rw!("pow-one";        "(pow ?a 1)"              => "?a"),
        rw!("pow-zero";       "(pow ?a 0)"              => "1" if total("?a")),
        rw!("pow-mul-base";   "(* (pow ?a ?m) ?a)"      => "(pow ?a (+ ?m 1))"
            if either(constant("?m", |m| m >= 0.0), non_zero("?a"))),
        rw!("pow-mul-pow";    "(* (pow ?a ?m) (pow ?a ?n))" => "(pow ?a (+ ?m ?n))"
            if either(positive("?a"), both(integer("?m"), both(integer("?n"),
                either(non_zero("?a"), both(non_negative("?m"), non_negative("?n"))))))),
        rw!("pow-div-base";   "(/ (pow ?a ?m) ?a)"      => "(pow ?a (- ?m 1))" if non_zero("?a")),
        rw!("pow-pow";        "(pow (pow ?a ?m) ?n)"    => "(pow ?a (* ?m ?n))"
            if either(positive("?a"), both(integer("?m"), both(integer("?n"),
                either(non_zero("?a"), non_negative("?m")))))),
        rw!("pow-of-mul";     "(pow (* ?a ?b) ?n)"      => "(* (pow ?a ?n) (pow ?b ?n))"
            if both(integer("?n"), either(constant("?n", |n| n > 0.0), both(total("?a"), total("?b"))))),
        rw!("mul-of-pow";     "(* (pow ?a ?n) (pow ?b ?n))" => "(pow (* ?a ?b) ?n)"
            if both(integer("?n"), either(constant("?n", |n| n > 0.0), both(total("?a"), total("?b"))))),
        rw!("recip-pow";      "(/ 1 (pow ?a ?n))"       => "(pow ?a (neg ?n))"
            if both(integer("?n"), either(constant("?n", |n| n > 0.0), non_zero("?a")))),
        rw!("div-pow";        "(/ ?b (pow ?a ?n))"      => "(* ?b (pow ?a (neg ?n)))"
            if both(integer("?n"), either(constant("?n", |n| n > 0.0), non_zero("?a")))),
        rw!("sqrt-as-pow";    "(sqrt ?a)"               => "(pow ?a 0.5)"),
        rw!("pow-half";       "(pow ?a 0.5)"            => "(sqrt ?a)"),
        rw!("sqrt-square";    "(sqrt (* ?a ?a))"        => "(abs ?a)"),
        rw!("sqrt-pow2";      "(sqrt (pow ?a 2))"       => "(abs ?a)"),
        rw!("square-sqrt";    "(* (sqrt ?a) (sqrt ?a))" => "?a" if non_negative("?a")),
        rw!("sqrt-mul-self";  "(* ?a (sqrt ?a))"        => "(pow ?a 1.5)"),
        rw!("div-sqrt";       "(/ ?a (sqrt ?a))"        => "(sqrt ?a)" if positive("?a")),
        rw!("abs-non-neg";    "(abs ?a)"                => "?a" if non_negative("?a")),
        rw!("abs-non-pos";    "(abs ?a)"                => "(neg ?a)" if non_positive("?a")),
        rw!("abs-neg";        "(abs (neg ?a))"          => "(abs ?a)"),
        rw!("abs-square";     "(* (abs ?a) (abs ?a))"   => "(* ?a ?a)"),
        rw!("sign-abs";       "(* (sign ?a) (abs ?a))"  => "?a"),
        rw!("mul-sign";       "(* ?a (sign ?a))"        => "(abs ?a)"),
        rw!("sign-pos";       "(sign ?a)"               => "1" if both(total("?a"), positive("?a"))),
        rw!("sign-negative";  "(sign ?a)"               => "-1" if both(total("?a"), negative("?a"))),
        rw!("relu-non-neg";   "(relu ?a)"               => "?a" if non_negative("?a")),
        rw!("max-zero";       "(max ?a 0)"              => "(relu ?a)"),
        rw!("max-self";       "(max ?a ?a)"             => "?a"),
        rw!("min-self";       "(min ?a ?a)"             => "?a"),
        rw!("max-comm";       "(max ?a ?b)"             => "(max ?b ?a)"),
        rw!("min-comm";       "(min ?a ?b)"             => "(min ?b ?a)"),
        rw!("step-pos";       "(heaviside ?a ?h)"       => "1" if both(total("?a"), both(total("?h"), positive("?a")))),
        rw!("step-negative";  "(heaviside ?a ?h)"       => "0" if both(total("?a"), both(total("?h"), negative("?a")))),
    ];
    rules.extend(rw!("sub-neg";  "(- ?a (neg ?b))" <=> "(+ ?a ?b)"));
    rules
}

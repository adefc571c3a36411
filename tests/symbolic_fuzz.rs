//! Random expressions through the whole symbolic pipeline: `simplify` keeps
//! the value wherever the input is defined, and `grad` agrees with central
//! finite differences wherever the input is smooth and the derivative is
//! not NaN (see `gradients_match_finite_differences_where_smooth`).

use epsilon::symbolic::{self, Expr};
use proptest::prelude::*;

/// Random expression text over x and y, at most `depth` calls deep.
fn expression(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        (-3i32..=3).prop_map(|n| n.to_string()),
        Just("0.5".to_string()),
    ];
    leaf.prop_recursive(depth, 24, 2, |inner| {
        let unary = prop_oneof![
            Just("neg"),
            Just("exp"),
            Just("log"),
            Just("sqrt"),
            Just("sin"),
            Just("cos"),
            Just("tanh"),
            Just("sigmoid"),
            Just("softplus"),
            Just("atan"),
            Just("log1p"),
            Just("expm1"),
            Just("sinh"),
            Just("abs"),
            Just("erf"),
            Just("erfc"),
            Just("lgamma"),
            Just("square"),
            Just("cbrt"),
            Just("exp2"),
            Just("sinc"),
        ];
        let binary = prop_oneof![
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("pow"),
            Just("atan2"),
            Just("max"),
            Just("hypot"),
            Just("logaddexp")
        ];
        prop_oneof![
            (unary, inner.clone()).prop_map(|(op, a)| format!("({op} {a})")),
            (binary, inner.clone(), inner).prop_map(|(op, a, b)| format!("({op} {a} {b})")),
        ]
    })
    .boxed()
}

const POINTS: [(f64, f64); 6] = [
    (0.3, 0.7),
    (-0.6, 1.3),
    (1.7, -0.4),
    (2.1, 0.9),
    (-1.2, -1.9),
    (0.9, 2.4),
];

/// Whether every subterm of `text` is finite at the point: IEEE turns some
/// undefined values into numbers (`pow(exp(log1p(-1)), 0)` is 1).
fn defined(text: &str, x: f64, y: f64) -> bool {
    let expr: egg::RecExpr<epsilon::egraph::Math> = text.parse().expect("generated text is binary");
    let all: Vec<egg::Id> = (0..expr.as_ref().len()).map(egg::Id::from).collect();
    let env = |name: egg::Symbol| match name.as_str() {
        "x" => Some(x),
        _ => Some(y),
    };
    epsilon::ir::math::eval::evaluate(&expr, &all, env).is_ok_and(|values| {
        values.iter().all(|v| v.is_finite())
            && !expr
                .as_ref()
                .iter()
                .any(|node| on_branch_cut(node, &values))
    })
}

/// Whether `node` is an `atan2` at a point of its branch cut (a zero first
/// argument, a negative second): there its value is pi or -pi by the sign
/// of the zero, which simplification over the reals does not keep
/// (`-(0/x)` is `0/x`), as no computer algebra system does. Likewise a
/// power of a negative base, defined only at whole exponents: a sum
/// reassociated by the simplifier may round such an exponent off a whole
/// number (`(-0.4 - 2) + 3.4` is 1, `-0.4 + (3.4 - 2)` is not).
fn on_branch_cut(node: &epsilon::egraph::Math, values: &[f64]) -> bool {
    match node {
        epsilon::egraph::Math::Atan2([y, x]) => {
            values[usize::from(*y)] == 0.0 && values[usize::from(*x)] < 0.0
        }
        epsilon::egraph::Math::Pow([base, _]) => values[usize::from(*base)] < 0.0,
        _ => false,
    }
}

fn value(expr: &Expr, x: f64, y: f64) -> f64 {
    expr.eval(&[("x", x), ("y", y)])
        .expect("only x and y occur")
}

/// Whether `a` and `b` agree to rounding, relative to `scale`.
fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-7 * scale.max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn simplify_keeps_values_where_the_input_is_defined(text in expression(4)) {
        let input = Expr::parse(&text).expect("generated expressions parse");
        let simplified = symbolic::simplify(&input).expect("simplify succeeds");
        for (x, y) in POINTS {
            let (before, after) = (value(&input, x, y), value(&simplified, x, y));
            if defined(&text, x, y) && before.abs() < 1e6 {
                prop_assert!(
                    close(before, after, before.abs()),
                    "{text} = {before} but simplified {simplified} = {after} at x={x}, y={y}"
                );
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences_where_smooth(text in expression(3)) {
        let input = Expr::parse(&text).expect("generated expressions parse");
        let gradient = symbolic::grad(&input, &["x", "y"]).expect("grad succeeds");
        for (x, y) in POINTS {
            if !defined(&text, x, y) {
                continue;
            }
            for (index, partial) in gradient.iter().enumerate() {
                let shifted = |delta: f64| {
                    if index == 0 { value(&input, x + delta, y) } else { value(&input, x, y + delta) }
                };
                let fd = |h: f64| (shifted(h) - shifted(-h)) / (2.0 * h);
                let (coarse, fine) = (fd(1e-4), fd(1e-6));
                // Skip points near a kink or a singularity: the two step
                // sizes then disagree, or the values are not finite/small.
                // One-sided differences differ at a kink even where the
                // central ones agree (a tie of max gives the mean slope).
                let h = 1e-6;
                let (forward, backward) = ((shifted(h) - shifted(0.0)) / h, (shifted(0.0) - shifted(-h)) / h);
                let smooth = coarse.is_finite() && fine.is_finite() && fine.abs() < 1e5
                    && close(coarse, fine, fine.abs() * 10.0)
                    && (forward - backward).abs() <= 1e-3 * fine.abs().max(1.0);
                if !smooth {
                    continue;
                }
                let exact = value(partial, x, y);
                // The chain rule is applied literally, as in JAX: where a
                // local partial is undefined (log of a negative base in
                // pow's exponent partial) the result is NaN even if that
                // path is multiplied by zero. Finite results must be right.
                if exact.is_nan() {
                    continue;
                }
                prop_assert!(
                    (exact - fine).abs() <= 1e-4 * fine.abs().max(1.0),
                    "d/d{} {text} = {partial} = {exact}, finite difference {fine} at x={x}, y={y}",
                    if index == 0 { "x" } else { "y" }
                );
            }
        }
    }
}

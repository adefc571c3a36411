//! Gradients through selections never take NaN or infinity from the
//! branch not taken (issue 18, item 4): the cotangent a selection gives
//! the branch it did not take is zero there, and it stays zero through
//! every partial after it, however infinite or undefined the partial.
//! Each case is a value where the plain product (the single `where` JAX
//! users know) gives NaN; each answer is the exact derivative of the
//! branch taken.

use super::*;

/// `(form, argument, gradient)`: the gradient of the one-argument
/// function `form` at the argument, numbers or vectors.
const CASES: &[(&str, &str, &[f64])] = &[
    (
        "(lambda (x) (sum (where (> x 0) (sqrt x) 0)))",
        "(tensor -1.0 4.0)",
        &[0.0, 0.25],
    ),
    (
        "(lambda (x) (sum (where (> x 0) (log x) 0)))",
        "(tensor 0.0 2.0)",
        &[0.0, 0.5],
    ),
    (
        "(lambda (x) (sum (where (> x 0) (/ 1.0 x) 0)))",
        "(tensor 0.0 2.0)",
        &[0.0, -0.25],
    ),
    (
        "(lambda (x) (where (> x 10) x (exp (* x x))))",
        "30.0",
        &[1.0],
    ),
    ("(lambda (x) (clamp (log x) -10 10))", "0.0", &[0.0]),
    // x log x, masked at 0: log's partial 1/x is infinite there.
    (
        "(lambda (x) (sum (where (> x 0) (* x (log x)) 0)))",
        "(tensor 0.0 2.0)",
        &[0.0, 1.6931471805599454],
    ),
    (
        "(lambda (x) (sum (where (> x 0) (xlogy x x) 0)))",
        "(tensor 0.0 2.0)",
        &[0.0, 1.6931471805599454],
    ),
    // logsumexp of -inf: the gradient of a constant -inf lane is 0, and
    // a lane of numbers beside it keeps its softmax.
    (
        "(lambda (x) (logsumexp x))",
        "(tensor (- (exp 1000.0)) (- (exp 1000.0)))",
        &[0.0, 0.0],
    ),
    (
        "(lambda (x) (sum (logsumexp x :axis 1)))",
        "(reshape (tensor (- (exp 1000.0)) (- (exp 1000.0)) 1.0 2.0) '(2 2))",
        &[0.0, 0.0, 0.2689414213699951, 0.7310585786300049],
    ),
    // The norm at the origin: the zero subgradient.
    ("(lambda (x) (norm x))", "(tensor 0.0 0.0)", &[0.0, 0.0]),
    // Log of masked negatives, the other branch taken.
    (
        "(lambda (x) (where (> x 0) (log x) (* 2 x)))",
        "-3.0",
        &[2.0],
    ),
    (
        "(lambda (x) (where (> x 0) (sqrt x) (- x)))",
        "-4.0",
        &[-1.0],
    ),
    // Division by a masked zero.
    (
        "(lambda (x) (sum (where (= x 1) 0 (/ x (- x 1)))))",
        "(tensor 1.0 3.0)",
        &[0.0, -0.25],
    ),
    // A power with base 0 under a mask.
    (
        "(lambda (x) (sum (where (> x 0) (pow x 0.5) 0)))",
        "(tensor 0.0 0.25)",
        &[0.0, 1.0],
    ),
    (
        "(lambda (x) (sum (where (> x 0) (pow x 1.5) 0)))",
        "(tensor -2.0 4.0)",
        &[0.0, 3.0],
    ),
    // Outside an inverse sine's domain.
    (
        "(lambda (x) (where (< (abs x) 1) (asin x) x))",
        "2.0",
        &[1.0],
    ),
    // Selections nested, and a traced `if`.
    (
        "(lambda (x) (where (> x 0) (where (> x 1) (log (- x 1)) (sqrt x)) 0))",
        "-1.0",
        &[0.0],
    ),
    ("(lambda (x) (if (> x 0) (sqrt x) 0.0))", "-1.0", &[0.0]),
    // The masked branch under a reduction and a product of branches.
    (
        "(lambda (x) (sum (* 3 (where (> x 0) (log x) 0))))",
        "(tensor 0.0 1.0)",
        &[0.0, 3.0],
    ),
    (
        "(lambda (x) (sum (where (> x 0) (* (sqrt x) (log x)) 0)))",
        "(tensor 0.0 1.0)",
        &[0.0, 1.0],
    ),
    // Overflowing branches: exp and the square of a huge number.
    ("(lambda (x) (where (< x 700) (exp x) 0))", "800.0", &[0.0]),
    (
        "(lambda (x) (where (< x 1e200) (* x x) x))",
        "1e300",
        &[1.0],
    ),
];

fn gradient(engine: &mut Engine, form: &str) -> Vec<f64> {
    match eval(engine, form) {
        Value::Float(x) => vec![x],
        other => array(&other).unwrap().iter().copied().collect(),
    }
}

#[test]
fn branches_not_taken_give_finite_exact_gradients() {
    let mut engine = engine();
    for &(f, x, want) in CASES {
        for form in [
            format!("((grad {f}) {x})"),
            format!("((jit (grad {f})) {x})"),
            format!("(second ((value-and-grad {f}) {x}))"),
        ] {
            let got = gradient(&mut engine, &form);
            assert_eq!(got.len(), want.len(), "{form}");
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(
                    g.is_finite() && close(*g, *w, 1e-12),
                    "{form}: {got:?}, want {want:?}"
                );
            }
        }
    }
}

/// Where nothing is masked the gradients are those of the plain product:
/// a selection between two smooth branches against central differences.
#[test]
fn selections_between_defined_branches_match_finite_differences() {
    let mut engine = engine();
    let f = "(lambda (x) (sum (where (> x 0.5) (* (sin x) (exp x)) (max (* x x) (- 1 x)))))";
    let error = number(
        &mut engine,
        &format!("(check-grad {f} (list (tensor 0.1 0.7 -0.3 1.9)))"),
    );
    assert!(error < 1e-6, "check-grad {error}");
}

/// Forward mode selects the tangent of the branch taken (no product with
/// the untaken branch's partial is formed).
#[test]
fn forward_mode_through_an_untaken_branch_is_finite() {
    let mut engine = engine();
    let got = parts(&eval(
        &mut engine,
        "(jvp (lambda (x) (sum (where (> x 0) (sqrt x) 0))) (list (tensor -1.0 4.0)) (list (tensor 1.0 1.0)))",
    ))
    .unwrap();
    assert_eq!(got[1].iter().copied().collect::<Vec<_>>(), [0.25]);
}

/// `(form, argument, derivative)`: a selection (`clamp`, `max`, `min`,
/// `relu`) feeding a function with an infinite partial at the selected
/// value, and other points where a naive product gives NaN: the
/// selection's zero partial keeps the derivative 0 (the function is
/// locally constant there), in reverse and forward mode alike.
const FEEDING_CASES: &[(&str, f64, f64)] = &[
    ("(lambda (x) (sqrt (clamp x 0 1)))", -0.5, 0.0),
    ("(lambda (x) (sqrt (clamp x 0 1)))", 0.25, 1.0),
    ("(lambda (x) (sqrt (max x 0)))", -2.0, 0.0),
    ("(lambda (x) (sqrt (- (min x 0))))", 3.0, 0.0),
    ("(lambda (x) (sqrt (relu x)))", -1.0, 0.0),
    ("(lambda (x) (log (max x 0)))", -1.0, 0.0),
    ("(lambda (x) (pow x 0))", 0.0, 0.0),
    ("(lambda (x) (pow x 0.0))", 0.0, 0.0),
    ("(lambda (x) (* 3.0 (pow x 0)))", 2.0, 0.0),
    ("(lambda (x) (log (sigmoid x)))", -1000.0, 1.0),
    ("(lambda (x) (log (sigmoid x)))", 2.0, 0.11920292202211755),
];

#[test]
fn a_selection_feeding_an_infinite_partial_gives_zero_in_both_modes() {
    let mut engine = engine();
    for &(f, x, want) in FEEDING_CASES {
        for form in [
            format!("((grad {f}) {x:?})"),
            format!("((jit (grad {f})) {x:?})"),
            format!("(second ((value-and-grad {f}) {x:?}))"),
            format!("(second (jvp {f} (list {x:?}) (list 1.0)))"),
            format!("(index ((grad (lambda (v) (sum ({f} v)))) (tensor {x:?} {x:?})) 0)"),
        ] {
            let got = number(&mut engine, &form);
            assert!(
                got.is_finite() && close(got, want, 1e-12),
                "{form}: {got}, want {want}"
            );
        }
    }
    // The value stays right where the sigmoid underflows.
    let value = number(
        &mut engine,
        "(first ((value-and-grad (lambda (x) (log (sigmoid x)))) -1000.0))",
    );
    assert_eq!(value, -1000.0);
}

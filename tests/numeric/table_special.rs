//! The special functions (`lgamma`, `digamma`, `polygamma`, `erf`, `erfc`,
//! `multigammaln`) through the table harness (`table::run_table`): `grad`,
//! `vjp` and `jvp` against finite differences, `jit`, a gradient through
//! `scan`, Hessians, and batching, on random tensors whose values stay
//! away from the poles of the gamma family. Closed-form derivatives
//! (the gradient of `sum (lgamma x)` is `digamma x`, its Hessian is
//! `diag (polygamma 1 x)`) and native kernels against the interpreter on
//! large tensors follow.

use super::ops::{arg, instance};
use super::table::{Pick, run_table};
use super::*;

/// Positive arguments, away from the poles at 0, -1, ...
const GAMMA: Domain = Domain::Range(0.3, 6.0);

/// Between the poles -2 and -1, where the reflection formulas work.
const NEGATIVE: Domain = Domain::Range(-1.9, -1.1);

fn shape(p: &Pick) -> Vec<usize> {
    let [a, b, _] = p.dims;
    match p.variant % 3 {
        0 => vec![],
        1 => vec![a],
        _ => vec![a, b],
    }
}

#[test]
fn lgamma_on_positive_and_negative_arguments() {
    run_table("lgamma", true, |p| {
        let domain = if p.variant % 4 == 3 { NEGATIVE } else { GAMMA };
        instance("(lambda (x) (lgamma x))", vec![arg(shape(p), domain)])
    });
}

#[test]
fn digamma_on_positive_and_negative_arguments() {
    run_table("digamma", true, |p| {
        let domain = if p.variant % 4 == 3 { NEGATIVE } else { GAMMA };
        instance("(lambda (x) (digamma x))", vec![arg(shape(p), domain)])
    });
}

#[test]
fn polygamma_of_orders_one_to_three() {
    run_table("polygamma", true, |p| {
        let n = 1 + p.variant % 3;
        instance(
            format!("(lambda (x) (polygamma {n} x))"),
            vec![arg(shape(p), Domain::Range(0.5, 5.0))],
        )
    });
}

#[test]
fn erf_and_erfc() {
    run_table("erf/erfc", true, |p| {
        let op = if p.variant.is_multiple_of(2) {
            "erf"
        } else {
            "erfc"
        };
        instance(format!("(lambda (x) ({op} x))"), vec![arg(shape(p), R2)])
    });
}

#[test]
fn multigammaln_in_dimensions_one_to_four() {
    run_table("multigammaln", true, |p| {
        let dimension = 1 + p.variant % 4;
        let low = (dimension as f64 - 1.0) / 2.0;
        instance(
            format!("(lambda (x) (multigammaln x {dimension}))"),
            vec![arg(shape(p), Domain::Range(low + 0.3, low + 5.0))],
        )
    });
}

#[test]
fn compositions_of_special_functions() {
    run_table("special compositions", true, |p| {
        let source = match p.variant % 3 {
            0 => "(lambda (x) (* (erf x) (lgamma (+ 2 (* x x)))))",
            1 => "(lambda (x) (- (lgamma (+ x 1.5)) (digamma (exp x))))",
            _ => "(lambda (x) (erfc (* x (digamma (+ 3 x)))))",
        };
        instance(source, vec![arg(shape(p), R1)])
    });
}

/// The numbers of a value (a number or a tensor).
fn numbers(value: &Value) -> Vec<f64> {
    match array(value) {
        Ok(a) => a.iter().copied().collect(),
        Err(message) => panic!("{message}"),
    }
}

#[test]
fn gradient_of_lgamma_is_digamma_and_its_hessian_is_trigamma() {
    let mut engine = engine();
    let x = "[0.3 1.0 1.4616321449683622 2.5 7.0 -1.5 -0.25]";
    let g = numbers(&eval(
        &mut engine,
        &format!("((grad (lambda (x) (sum (lgamma x)))) {x})"),
    ));
    let d = numbers(&eval(&mut engine, &format!("(digamma {x})")));
    assert_eq!(g, d, "grad of sum lgamma is digamma, bit for bit");
    let h = numbers(&eval(
        &mut engine,
        &format!("((hessian (lambda (x) (sum (lgamma x)))) {x})"),
    ));
    let t = numbers(&eval(&mut engine, &format!("(polygamma 1 {x})")));
    let n = t.len();
    for i in 0..n {
        for j in 0..n {
            let want = if i == j { t[i] } else { 0.0 };
            assert!(
                (h[i * n + j] - want).abs() <= 1e-12 * want.abs(),
                "hessian[{i}][{j}] = {}, want {want}",
                h[i * n + j]
            );
        }
    }
    // Forward mode: the tangent of erf is 2/sqrt(pi) exp(-x^2) t.
    let out = eval(
        &mut engine,
        "(second (jvp (lambda (x) (erf x)) (list [0.5 -1.0 2.0]) (list [1.0 2.0 3.0])))",
    );
    let got = numbers(&out);
    for (k, (&x, &t)) in [0.5f64, -1.0, 2.0].iter().zip(&[1.0, 2.0, 3.0]).enumerate() {
        let want = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp() * t;
        assert!(
            (got[k] - want).abs() <= 1e-15 * want.abs().max(1.0),
            "{got:?}"
        );
    }
}

#[test]
fn native_kernels_agree_with_the_interpreter_on_large_tensors() {
    // Over native::MIN_ELEMENTS elements a jitted group runs as native
    // code; the same function on a few elements runs in the interpreter.
    // Both call the same Rust functions, so the bits agree.
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (special x) (list (lgamma x) (digamma x) (polygamma 2 x) (erf x) (erfc x) (multigammaln (abs x) 2)))",
    );
    eval(&mut engine, "(define big (linspace -12.3 30.7 9001))");
    let whole = eval(&mut engine, "((jit special) big)");
    let pieces = eval(
        &mut engine,
        "(map (lambda (k) ((jit special) (slice big k (+ k 7)))) (range 0 9001 1000))",
    );
    let list = |value: &Value| items(value).unwrap_or_else(|message| panic!("{message}"));
    let whole: Vec<Vec<f64>> = list(&whole).iter().map(numbers).collect();
    for (piece, start) in list(&pieces).iter().zip((0..9001).step_by(1000)) {
        for (f, values) in list(piece).iter().enumerate() {
            for (k, got) in numbers(values).into_iter().enumerate() {
                let want = whole[f][start + k];
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "function {f} at element {}: interpreter {got:e}, native {want:e}",
                    start + k
                );
            }
        }
    }
}

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

/// The parts of `form`'s value with native kernels on and off (this
/// thread only), and how many kernels the first run compiled.
fn native_and_interpreted(engine: &mut Engine, form: &str) -> (Vec<f64>, Vec<f64>, usize) {
    use epsilon::backends::cpu::native;
    let flat = |value: &Value| -> Vec<f64> {
        parts(value)
            .unwrap_or_else(|message| panic!("{message}"))
            .iter()
            .flat_map(|a| a.iter().copied().collect::<Vec<_>>())
            .collect()
    };
    native::set_native_kernels(true);
    let before = native::kernels_compiled();
    let on = flat(&eval(engine, form));
    let compiled = native::kernels_compiled() - before;
    native::set_native_kernels(false);
    let off = flat(&eval(engine, form));
    native::set_native_kernels(true);
    (on, off, compiled)
}

#[test]
fn native_kernels_give_the_interpreters_bits() {
    // Tensors over native::MIN_ELEMENTS elements (poles, negative
    // arguments and the tail of erfc included), their gradients, and a
    // loop over numbers (the native whole-loop and reverse-step kernels).
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (special x) (list (lgamma x) (digamma x) (polygamma 2 x) (erf x) (erfc x) (multigammaln (abs x) 2)))",
    );
    eval(&mut engine, "(define big (linspace -12.5 30.5 9001))");
    for form in [
        "((jit special) big)",
        // (erf and erfc have exp in their derivatives, whose groups run
        // interpreted; their forward kernels are compiled just above.)
        "((grad (lambda (x) (sum (* (lgamma x) (digamma (abs x)))))) big)",
        "((grad (lambda (x) (scan (lambda (s i) (+ (* 0.5 s) (lgamma (+ 1.5 (* s s))) (erf s) (digamma (+ 2 (* s s))))) x 40))) 0.3)",
    ] {
        let (on, off, compiled) = native_and_interpreted(&mut engine, form);
        assert_eq!(on.len(), off.len(), "{form}");
        for (k, (a, b)) in on.iter().zip(&off).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{form}: element {k}: native {a:e}, interpreted {b:e} ({compiled} kernels)"
            );
        }
        if !form.contains("scan") {
            assert!(compiled > 0, "{form}: no native kernel was compiled");
        }
    }
}

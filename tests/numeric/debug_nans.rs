//! `(debug-nans #t)` (issue 18 item 5): the first operation that makes a
//! NaN or an infinity from finite operands is an error naming the
//! operation, the pass and the line of the Lisp call that made it, in
//! eager code, in traced functions (forward pass, reverse pass, forward
//! mode) and under jit; without NaNs the results are those of the
//! compiled tapes; `(debug-nans #f)` turns it off.

use super::*;

const SOURCE: &str = "(define (f x)
  (sum (log x)))
(define (g x)
  (let ((y (sqrt x)))
    (sum (* 3 y))))
(define (h x)
  (sum (/ x (- x 1.0))))
";

/// The rendered error of `form`, which must fail.
fn failure(engine: &mut Engine, form: &str) -> String {
    match engine.eval(form) {
        Ok(value) => panic!("{form} should fail, gave {value}"),
        Err(error) => error.render(),
    }
}

#[test]
fn the_first_operation_making_a_nan_is_named_with_its_pass_and_line() {
    let mut engine = engine();
    engine.eval_named(SOURCE, "model.lisp").unwrap();
    eval(&mut engine, "(debug-nans #t)");
    let cases = [
        (
            "((grad f) (tensor 1.0 0.0))",
            "log in (log ...) made -inf (forward pass)",
            "model.lisp:2:",
        ),
        (
            "((grad g) (tensor 1.0 0.0))",
            "/ in the reverse pass (the derivative of (sqrt ...)) made inf",
            "model.lisp:4:",
        ),
        (
            "(jvp g (list (tensor 1.0 0.0)) (list (tensor 1.0 1.0)))",
            "the forward-mode pass (the tangent of (sqrt ...)) made inf",
            "model.lisp:4:",
        ),
        (
            "((jit h) (tensor 2.0 1.0))",
            "/ in (/ ...) made inf (forward pass)",
            "model.lisp:7:",
        ),
        (
            "(h (tensor 2.0 1.0))",
            "debug-nans: (/ ...) made inf (forward pass)",
            "model.lisp:7:",
        ),
    ];
    for (form, what, line) in cases {
        let message = failure(&mut engine, form);
        assert!(message.contains(what), "{form}: {message}");
        assert!(message.contains(line), "{form}: {message}");
    }
}

#[test]
fn without_nans_results_are_those_of_the_compiled_tapes() {
    let mut engine = engine();
    engine.eval_named(SOURCE, "model.lisp").unwrap();
    let forms = [
        "((grad f) (tensor 1.0 2.0))",
        "((grad g) (tensor 1.0 4.0))",
        "(second (jvp g (list (tensor 1.0 4.0)) (list (tensor 1.0 -1.0))))",
        "((jit h) (tensor 2.0 3.0))",
        "((hessian (lambda (x) (sum (* x x (exp x))))) (tensor 0.3 -0.2))",
        "((grad (lambda (x) (sum (scan (lambda (s i) (tanh (* 1.5 s))) x 5)))) (tensor 0.1 0.2))",
    ];
    for form in forms {
        let compiled = parts(&eval(&mut engine, form)).unwrap();
        eval(&mut engine, "(debug-nans #t)");
        let checked = parts(&eval(&mut engine, form)).unwrap();
        eval(&mut engine, "(debug-nans #f)");
        for (a, b) in checked.iter().zip(&compiled) {
            compare(form, a, b, 1e-12).unwrap();
        }
    }
    // Off again: the NaN is a value, not an error.
    let value = array(&eval(&mut engine, "((grad g) (tensor 1.0 0.0))")).unwrap();
    assert!(value[1].is_infinite(), "{value}");
}

//! `(sparse-jacobian f x)` (issue 19, item 3): its entries against the
//! dense `jacobian` (every entry outside the pattern zero there, every
//! entry inside equal), the pattern's size for stencils, and the errors.

use super::*;

const SETUP: &str = r"
(seed! 19)
(define W (randn '(4 6)))
(define (stencil u) (+ (roll u 1) (roll u -1) (* -2.0 u) (* 0.1 u u u)))
(define (forward-difference u) (- (slice u 1 6) (slice u 0 5)))
(define (masked u) (where (> u 0.0) (log (+ 1.0 (* u u))) (* 2.0 u)))
(define (mixed u) (+ (matmul W u) (sum (* u u))))
(define (rows m) (sum (* m m) :axis 1))
(define (scaled u) (* (exp u) (max u 0.3)))
";

/// The dense matrix (rows: f's result, flattened; columns: x's) the
/// triplets describe, and whether each entry was listed.
fn dense_of(triplets: &[ArrayD<f64>], rows: usize, cols: usize) -> (Vec<f64>, Vec<bool>) {
    let mut dense = vec![0.0; rows * cols];
    let mut listed = vec![false; rows * cols];
    for ((&i, &j), &v) in triplets[0].iter().zip(&triplets[1]).zip(&triplets[2]) {
        let at = i as usize * cols + j as usize;
        dense[at] = v;
        listed[at] = true;
    }
    (dense, listed)
}

#[test]
fn sparse_jacobians_equal_the_dense_ones() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for (f, x) in [
        ("stencil", "(randn '(6))"),
        ("forward-difference", "(randn '(6))"),
        ("masked", "(randn '(6))"),
        ("mixed", "(randn '(6))"),
        ("rows", "(randn '(3 4))"),
        ("scaled", "(randn '(6))"),
    ] {
        eval(&mut engine, &format!("(define x {x})"));
        let triplets = parts(&eval(&mut engine, &format!("(sparse-jacobian {f} x)"))).unwrap();
        let dense = array(&eval(&mut engine, &format!("((jacobian {f}) x)"))).unwrap();
        let cols = array(&eval(&mut engine, "x")).unwrap().len();
        let rows = dense.len() / cols;
        let (got, listed) = dense_of(&triplets, rows, cols);
        for (k, (&want, (&g, &l))) in dense.iter().zip(got.iter().zip(&listed)).enumerate() {
            assert!(
                (g - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{f}: entry ({}, {}) is {g}, the dense Jacobian's {want}",
                k / cols,
                k % cols
            );
            assert!(
                l || want == 0.0,
                "{f}: entry ({}, {}) = {want} missing from the pattern",
                k / cols,
                k % cols
            );
        }
    }
}

#[test]
fn stencil_patterns_hold_three_entries_a_row() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    let n = number(
        &mut engine,
        "(size (nth (sparse-jacobian stencil (randn '(1000))) 2))",
    );
    assert_eq!(n, 3000.0);
    // A number in, a number out.
    let one = parts(&eval(
        &mut engine,
        "(sparse-jacobian (lambda (x) (* x x x)) 2.0)",
    ))
    .unwrap();
    assert_eq!(one[2].iter().copied().collect::<Vec<_>>(), vec![12.0]);
}

#[test]
fn sparse_jacobian_errors_are_clear() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for (form, expected) in [
        ("(sparse-jacobian 3 [1.0 2.0])", "expected a function"),
        (
            "(sparse-jacobian stencil \"x\")",
            "must be a number or tensor",
        ),
        (
            "(sparse-jacobian (lambda (u) (list u u)) [1.0 2.0])",
            "returning one number or tensor",
        ),
        // Every entry of 7100 x 7100 may be non-zero: refused, not built.
        (
            "(sparse-jacobian (lambda (u) (* u (sum u))) (ones '(7100)))",
            "compute it densely",
        ),
        (
            "(grad (lambda (u) (sum (nth (sparse-jacobian stencil u) 2))))",
            "",
        ),
    ] {
        match try_eval(&mut engine, form) {
            Ok(value) if expected.is_empty() => drop(value),
            Ok(value) => panic!("{form} gave {}", value.short()),
            Err(message) => assert!(message.contains(expected), "{form}: {message}"),
        }
    }
    let inside = try_eval(
        &mut engine,
        "((grad (lambda (u) (sum (nth (sparse-jacobian stencil u) 2)))) [1.0 2.0 3.0])",
    );
    let message = inside.unwrap_err();
    assert!(
        message.contains("call it outside") || message.contains("at top level"),
        "{message}"
    );
}

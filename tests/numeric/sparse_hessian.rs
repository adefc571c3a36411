//! `(sparse-hessian f x)` (issue 19, item 3) against the dense `hessian`,
//! and both sparse derivatives on random sparse programs (proptest):
//! every entry the dense matrix holds is listed with its value, the
//! entries left out are zero there, and the number of colours a stencil
//! takes does not grow with its size.

use super::sparse_jacobian::compare_within;
use super::*;

const SETUP: &str = r"
(seed! 23)
(define (chain u) (sum (* (- (slice u 1 8) (slice u 0 7)) (- (slice u 1 8) (slice u 0 7)))))
(define (periodic u) (sum (+ (* (roll u 1) u u) (sin u))))
(define (arrow u) (+ (sum (exp (* 0.3 u))) (* (index u 0) (sum u))))
(define (coupled m) (sum (* (sum (* m m) :axis 1) (sum m :axis 1))))
(define (branches u) (sum (where (> u 0.0) (* u u u) (log (+ 2.0 u)))))
(define (extremes u) (sum (* (max u (roll u 2)) u)))
";

/// `compare_within` at the tolerance these Hessians are checked to.
fn compare(engine: &mut Engine, f: &str, form: &str, dense_form: &str) -> Result<usize, String> {
    compare_within(engine, f, form, dense_form, 1e-10)
}

#[test]
fn sparse_hessians_equal_the_dense_ones() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for (f, x, entries) in [
        // Tridiagonal: 8 + 2 * 7.
        ("chain", "(randn '(8))", Some(22)),
        // Cyclic tridiagonal.
        ("periodic", "(randn '(8))", Some(24)),
        // An arrow: the first row and column and the diagonal.
        ("arrow", "(randn '(8))", Some(8 + 2 * 7)),
        // Each row of m couples its own elements only: blocks of 4 x 4.
        ("coupled", "(randn '(3 4))", Some(3 * 16)),
        ("branches", "(randn '(8))", Some(8)),
        ("extremes", "(randn '(8))", None),
    ] {
        eval(&mut engine, &format!("(define x {x})"));
        let listed = compare(&mut engine, f, "sparse-hessian", "hessian").unwrap();
        if let Some(entries) = entries {
            assert_eq!(listed, entries, "{f}: entries listed");
        }
    }
}

#[test]
fn stencil_hessians_take_three_colours_at_any_size() {
    // Listed entries count the pattern; the products are one batch whose
    // directions are the colours: a 10^4 chain is tridiagonal, 3n - 2.
    let mut engine = engine();
    eval(&mut engine, SETUP);
    let listed = number(
        &mut engine,
        "(define (long u) (sum (* (- (slice u 1 10000) (slice u 0 9999)) (- (slice u 1 10000) (slice u 0 9999)))))
         (size (nth (sparse-hessian long (randn '(10000))) 2))",
    );
    assert_eq!(listed, (3 * 10000 - 2) as f64);
    // A number: the second derivative.
    let one = parts(&eval(
        &mut engine,
        "(sparse-hessian (lambda (x) (* x x x)) 2)",
    ))
    .unwrap();
    assert_eq!(one[2].iter().copied().collect::<Vec<_>>(), vec![12.0]);
}

#[test]
fn sparse_hessian_errors_are_clear() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for (form, expected) in [
        ("(sparse-hessian 3 [1.0 2.0])", "expected a function"),
        ("(sparse-hessian chain \"x\")", "must be a number or tensor"),
        (
            "(sparse-hessian (lambda (u) (* u u)) [1.0 2.0])",
            "returning a number, this one returned shape [2]",
        ),
        (
            "(sparse-hessian (lambda (u) (* (sum u) (sum u))) (ones '(7100)))",
            "compute it densely",
        ),
        (
            "((grad (lambda (u) (sum (nth (sparse-hessian chain u) 2)))) (ones '(8)))",
            "call it outside",
        ),
    ] {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} gave {}", value.short()),
            Err(message) => assert!(message.contains(expected), "{form}: {message}"),
        }
    }
}

/// A random program over the vector `u` of 7 elements: shifts, slices
/// joined back, elementwise functions, products and selections, so its
/// Jacobian is banded or scattered but rarely dense.
fn program() -> impl Strategy<Value = String> {
    let leaf = Just("u".to_string());
    leaf.prop_recursive(5, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), -3i32..4).prop_map(|(e, k)| format!("(roll {e} {k})")),
            inner.clone().prop_map(|e| format!("(sin {e})")),
            inner.clone().prop_map(|e| format!("(exp (* 0.2 {e}))")),
            inner.clone().prop_map(|e| format!("(* {e} {e})")),
            inner
                .clone()
                .prop_map(|e| format!("(concat (list (slice {e} 2 7) (slice {e} 0 2)))")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(+ {a} (* 0.5 {b}))")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(* {a} {b})")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("(where (> {a} 0.0) {b} {a})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("(max {a} {b})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// On random sparse programs, the sparse Jacobian and the sparse
    /// Hessian of a weighted sum equal the dense ones entry by entry.
    #[test]
    fn random_programs_give_the_dense_derivatives(body in program(), seed in 0u64..1000) {
        let mut engine = engine();
        eval(&mut engine, &format!(
            "(seed! {seed})
             (define x (randn '(7)))
             (define w (randn '(7)))
             (define (field u) {body})
             (define (energy u) (sum (* w (field u))))"
        ));
        compare(&mut engine, "field", "sparse-jacobian", "jacobian")
            .map_err(TestCaseError::fail)?;
        compare(&mut engine, "energy", "sparse-hessian", "hessian")
            .map_err(TestCaseError::fail)?;
    }
}

#[test]
fn hessians_through_loops_stay_banded() {
    // The gradient program holds the loop's reverse: its pattern follows
    // the reverse step back through the forward states.
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 41)
         (define w (randn '(16)))
         (define (stepped u) (sum (* w (scan (lambda (s i) (+ s (* 0.1 (+ (roll s 1) (roll s -1) (* -2.0 s))) (* 0.05 s s))) u 2))))
         (define (kept-apart u) (sum (* w (scan (lambda (s i) (* s (+ 1.0 (* 0.1 s)))) u 3))))
         (define (over-rows u) (sum (second (scan (lambda (c row) (list (+ c (* row row)) (* c (sin row)))) (zeros '(4)) (reshape u '(4 4))))))
         (define (until u) (sum (while-loop (lambda (s) (< (sum (* s s)) 40.0)) (lambda (s) (+ (* 1.2 s) (* 0.05 s s))) u)))",
    );
    for (f, x, most) in [
        // Two steps of a three-point stencil: products reach four
        // neighbours on each side at most.
        ("stepped", "(* 0.5 (randn '(16)))", 16 * 9),
        // Elementwise steps: a diagonal Hessian.
        ("kept-apart", "(* 0.5 (randn '(16)))", 16),
        // Column j of the rows couples down the rows only.
        ("over-rows", "(* 0.5 (randn '(16)))", 4 * 16),
        // Elementwise steps of unknown number: still diagonal.
        ("until", "(* 0.3 (randn '(16)))", 16),
    ] {
        eval(&mut engine, &format!("(define x {x})"));
        let listed = compare(&mut engine, f, "sparse-hessian", "hessian").unwrap();
        assert!(
            listed <= most,
            "{f}: {listed} entries listed, at most {most} expected"
        );
    }
}

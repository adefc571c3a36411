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

/// Compares the sparse form `form` (`sparse-jacobian`, `sparse-hessian`)
/// of f at x (already defined in the engine) with the dense matrix of
/// `dense_form`, entry by entry to relative `tolerance`, every entry the
/// dense one holds listed; returns the number of listed entries.
pub(super) fn compare_within(
    engine: &mut Engine,
    f: &str,
    form: &str,
    dense_form: &str,
    tolerance: f64,
) -> Result<usize, String> {
    let triplets = parts(&eval(engine, &format!("({form} {f} x)"))).unwrap();
    let dense = array(&eval(engine, &format!("(({dense_form} {f}) x)"))).unwrap();
    let cols = array(&eval(engine, "x")).unwrap().len();
    let rows = dense.len() / cols;
    let (got, listed) = dense_of(&triplets, rows, cols);
    for (k, (&want, (&g, &l))) in dense.iter().zip(got.iter().zip(&listed)).enumerate() {
        let (i, j) = (k / cols, k % cols);
        if (g - want).abs() > tolerance * want.abs().max(1.0) {
            return Err(format!(
                "{form} {f}: entry ({i}, {j}) is {g}, the dense one {want}"
            ));
        }
        if !l && want != 0.0 {
            return Err(format!(
                "{form} {f}: entry ({i}, {j}) = {want} missing from the pattern"
            ));
        }
    }
    Ok(triplets[0].len())
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
        compare_within(&mut engine, f, "sparse-jacobian", "jacobian", 1e-12).unwrap();
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

/// Checks `(sparse-jacobian f x)` (x of `n` elements, defined) against
/// the dense Jacobian entry by entry; returns the number of entries
/// listed.
fn listed_against_dense(engine: &mut Engine, f: &str, n: usize) -> usize {
    let listed = compare_within(engine, f, "sparse-jacobian", "jacobian", 1e-12).unwrap();
    assert_eq!(
        array(&eval(engine, "x")).unwrap().len(),
        n,
        "{f}: x has {n} elements"
    );
    listed
}

#[test]
fn table_operations_say_what_they_read() {
    // Each function's sparse Jacobian against the dense one, and the
    // number of entries its pattern lists (what each element reads, not
    // everything).
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 31)
         (define S (+ (eye 3) (* 0.1 (randn '(4 3 3)))))
         (define (stacked-solve u) (solve S (reshape u '(4 3 1))))
         (define (stacked-inverse u) (inv (+ (eye 2) (* 0.1 (reshape u '(3 2 2))))))
         (define (running u) (cumsum (* u u)))
         (define (backwards u) (flip (sin u)))
         (define (rows-logsumexp u) (logsumexp (reshape u '(3 4)) :axis 1))
         (define (picked u) (gather (reshape u '(3 4)) [2 0] :axis 1))
         (define (added u) (scatter-add (reshape u '(3 4)) [1 1] (* 2.0 (slice (reshape u '(3 4)) 0 2 :axis 1)) :axis 1))
         (define (diagonals u) (diagonal (reshape u '(3 2 2))))
         (define (lower u) (tril (reshape u '(3 3))))
         (define (cholesky-stack u) (cholesky (+ (* 4.0 (eye 2)) (* 0.1 (reshape (* u u) '(3 2 2))))))
         (define (determinants u) (det (+ (eye 2) (reshape u '(3 2 2)))))",
    );
    for (f, n, entries) in [
        // Four 3 x 3 blocks.
        ("stacked-solve", 12, 4 * 9),
        // Three 4 x 4 blocks (each inverse entry reads its whole matrix).
        ("stacked-inverse", 12, 3 * 4 * 4),
        // Lower triangular: 1 + 2 + ... + 6.
        ("running", 6, 21),
        ("backwards", 6, 6),
        ("rows-logsumexp", 12, 3 * 4),
        // Each picked element reads its row's lane: 3 rows x 2 picks x 4.
        ("picked", 12, 3 * 2 * 4),
        // Each element reads itself and the row's two updates' sources.
        ("added", 12, 12 * 3 - 6),
        ("diagonals", 12, 3 * 2),
        ("lower", 9, 9),
        ("cholesky-stack", 12, 3 * 4 * 4),
        ("determinants", 12, 3 * 4),
    ] {
        eval(&mut engine, &format!("(define x (randn '({n})))"));
        let listed = listed_against_dense(&mut engine, f, n);
        assert!(
            listed <= entries,
            "{f}: {listed} entries listed, at most {entries} expected"
        );
    }
}

#[test]
fn loops_carry_their_steps_dependencies() {
    // A stencil stepped three times reads three neighbours on each side;
    // a state part the step keeps apart stays apart; outputs stacked over
    // rows of a sequence read the rows so far.
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 37)
         (define (stepped u) (scan (lambda (s i) (+ s (* 0.1 (+ (roll s 1) (roll s -1) (* -2.0 s))) (* 0.01 s s))) u 3))
         (define (apart u) (first (scan (lambda (s i) (list (* 1.1 (first s)) (sin (second s)))) (list u (* 2.0 u)) 4)))
         (define (rows u) (second (scan (lambda (c row) (list (+ c (tanh row)) (* c row))) (zeros '(3)) (reshape u '(4 3)))))
         (define (until u) (while-loop (lambda (s) (< (sum (* s s)) 100.0)) (lambda (s) (+ (* 1.2 s) (* 0.1 (roll s 1)))) u))",
    );
    for (f, n, entries) in [
        ("stepped", 12, 12 * 7),
        ("apart", 12, 12),
        // Output row t reads the rows up to t, column by column: 4 rows
        // of 3, row t's column j reading t + 1 elements.
        ("rows", 12, 3 * (1 + 2 + 3 + 4)),
        // Any number of steps of a two-point stencil: everything.
        ("until", 6, 36),
    ] {
        eval(&mut engine, &format!("(define x (* 0.5 (randn '({n}))))"));
        let listed = listed_against_dense(&mut engine, f, n);
        assert_eq!(listed, entries, "{f}: entries listed");
    }
}

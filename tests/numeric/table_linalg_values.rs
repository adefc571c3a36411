//! The dense linear algebra of the table (`det`, `slogdet`, `eigh`,
//! `svd`, `qr`, `lstsq`, `matrix-exp`) beyond finite differences:
//!
//! 1. values against closed forms (determinants of triangular matrices,
//!    reconstructions, orthogonality, normal equations, exponentials of
//!    diagonal and nilpotent matrices);
//! 2. degenerate points (repeated eigenvalues, rank-deficient and
//!    singular matrices): finite derivatives, exact where the rules allow,
//!    never NaN;
//! 3. errors: non-square and mismatched shapes (shapes in the message),
//!    rank-deficient least squares, the derivative of `slogdet` at a
//!    singular matrix, NaN entries; never a panic.

use super::*;

// ------------------------------------------------------------ closed forms

/// Evaluates each check (a Lisp expression giving an error size) and
/// asserts it is finite and at most `tol`.
fn assert_small(setup: &str, checks: &[(&str, f64)]) {
    let mut engine = engine();
    eval(&mut engine, "(seed! 7)");
    eval(
        &mut engine,
        "(define (mT x) (transpose x (append (range (- (rank x) 2)) (list (- (rank x) 1) (- (rank x) 2)))))
         (define (err x y) (max (abs (- x y))))",
    );
    eval(&mut engine, setup);
    for (check, tol) in checks {
        let value = eval(&mut engine, check);
        let size = value
            .as_f64()
            .unwrap_or_else(|_| panic!("{check} gave {value}, not a number"));
        assert!(
            size.is_finite() && size <= *tol,
            "{check} = {size}, above {tol}"
        );
    }
}

#[test]
fn determinants_match_closed_forms() {
    assert_small(
        "(define t (+ (triu (randn '(5 5))) (* 2 (eye 5))))
         (define a (randn '(3 4 4)))
         (define s (* -1 (eye 3)))",
        &[
            ("(abs (- (det t) (prod (diagonal t))))", 1e-12),
            ("(abs (- (det (mT t)) (prod (diagonal t))))", 1e-12),
            ("(err (det (inv a)) (/ 1 (det a)))", 1e-9),
            ("(err (second (slogdet a)) (log (abs (det a))))", 1e-12),
            ("(err (car (slogdet a)) (sign (det a)))", 0.0),
            ("(abs (- (det s) -1))", 0.0),
            ("(abs (- (car (slogdet s)) -1))", 0.0),
            // Singular: 0 and (0 -inf), not errors.
            ("(abs (det [[1 2] [2 4]]))", 0.0),
            ("(abs (car (slogdet [[1 2] [2 4]])))", 0.0),
            ("(if (= (second (slogdet [[1 2] [2 4]])) -inf) 0 1)", 0.0),
            ("(abs (- (det (eye 0)) 1))", 0.0),
            // The gradient of det is the transposed adjugate, finite at a
            // singular matrix.
            ("(err ((grad det) [[1 2] [2 4]]) [[4 -2] [-2 1]])", 1e-12),
            (
                "(err ((grad det) [[1 2 3] [4 5 6] [7 8 9]]) [[-3 6 -3] [6 -12 6] [-3 6 -3]])",
                1e-11,
            ),
            (
                "(err ((grad (lambda (m) (sum (det m)))) a) (* (reshape (det a) '(3 1 1)) (mT (inv a))))",
                1e-10,
            ),
            (
                "(err ((grad (lambda (m) (sum (second (slogdet m))))) a) (mT (inv a)))",
                1e-10,
            ),
        ],
    );
}

#[test]
fn eigh_reconstructs_with_orthonormal_ascending_vectors() {
    assert_small(
        "(define b (randn '(2 5 5)))
         (define a (* 0.5 (+ b (mT b))))
         (define r (eigh a))
         (define w (car r))
         (define v (second r))
         (define (row x) (reshape x '(2 1 5)))",
        &[
            ("(err (matmul (* v (row w)) (mT v)) a)", 1e-12),
            ("(err (matmul (mT v) v) (eye 5))", 1e-13),
            (
                "(max 0 (max (- (slice w 0 4 :axis 1) (slice w 1 5 :axis 1))))",
                0.0,
            ),
            // eigh reads (a + aᵀ)/2.
            ("(err (car (eigh b)) w)", 1e-12),
            // The largest entry of each eigenvector is positive.
            ("(err (max (abs v) :axis 1) (max v :axis 1))", 0.0),
            ("(err (car (eigh (diag [3 1 2]))) [1 2 3])", 0.0),
        ],
    );
}

#[test]
fn svd_reconstructs_with_orthonormal_factors() {
    assert_small(
        "(define (check a)
           (let* ((r (svd a)) (u (car r)) (s (second r)) (vt (nth r 2))
                  (k (length s)))
             (max (err (matmul (* u (reshape s (list 1 k))) vt) a)
                  (err (matmul (mT u) u) (eye k))
                  (err (matmul vt (mT vt)) (eye k))
                  (max (- (slice s 1 k) (slice s 0 (- k 1))))
                  (- (min s)))))",
        &[
            ("(check (randn '(5 3)))", 1e-12),
            ("(check (randn '(3 5)))", 1e-12),
            ("(check (randn '(4 4)))", 1e-12),
            ("(check (matmul (randn '(5 2)) (randn '(2 4))))", 1e-12),
            ("(err (second (svd [[3 0] [0 -4]])) [4 3])", 1e-15),
            (
                "(let ((a3 (randn '(3 2 4)))) (err (second (svd a3)) (stack (map (lambda (i) (second (svd (nth a3 i)))) (range 3)))))",
                1e-14,
            ),
        ],
    );
}

#[test]
fn qr_reconstructs_with_orthonormal_q_and_upper_r() {
    assert_small(
        "(define (check a)
           (let* ((r (qr a)) (q (car r)) (rr (second r)) (k (nth (shape q) 1)))
             (max (err (matmul q rr) a)
                  (err (matmul (mT q) q) (eye k))
                  (err rr (triu rr))
                  (- (min (diagonal rr))))))",
        &[
            ("(check (randn '(5 3)))", 1e-12),
            ("(check (randn '(3 5)))", 1e-12),
            ("(check (randn '(4 4)))", 1e-12),
            (
                "(apply max (map check (list (randn '(1 1)) (randn '(6 1)) (randn '(1 6)))))",
                1e-12,
            ),
        ],
    );
}

#[test]
fn lstsq_solves_the_normal_equations() {
    assert_small(
        "(define a (randn '(6 3)))
         (define b (randn '(6)))
         (define bm (randn '(6 2)))
         (define w (randn '(3 6)))
         (define y (randn '(3)))",
        &[
            // Tall: aᵀ a x = aᵀ b.
            (
                "(err (matmul (matmul (mT a) a) (lstsq a b)) (matmul (mT a) b))",
                1e-11,
            ),
            (
                "(err (matmul (matmul (mT a) a) (lstsq a bm)) (matmul (mT a) bm))",
                1e-11,
            ),
            // Square: the solve.
            (
                "(err (lstsq (slice a 0 3) (slice b 0 3)) (solve (slice a 0 3) (slice b 0 3)))",
                1e-10,
            ),
            // Wide: w x = y with x = wᵀ (w wᵀ)⁻¹ y, the smallest solution.
            ("(err (matmul w (lstsq w y)) y)", 1e-12),
            (
                "(err (lstsq w y) (matmul (mT w) (solve (matmul w (mT w)) y)))",
                1e-11,
            ),
            // Stacks broadcast against one right-hand side.
            (
                "(err (lstsq (stack (list a a)) b) (stack (list (lstsq a b) (lstsq a b))))",
                1e-13,
            ),
        ],
    );
}

#[test]
fn matrix_exp_matches_closed_forms() {
    assert_small(
        "(define a (randn '(4 4)))
         (define big (* 6 (randn '(3 3))))",
        &[
            (
                "(err (matrix-exp (diag [1 -2 0.5])) (diag (exp [1 -2 0.5])))",
                1e-14,
            ),
            (
                "(err (matrix-exp [[0 1 0] [0 0 1] [0 0 0]]) [[1 1 0.5] [0 1 1] [0 0 1]])",
                1e-15,
            ),
            (
                "(err (matmul (matrix-exp a) (matrix-exp (- a))) (eye 4))",
                1e-12,
            ),
            (
                "(err (matmul (matrix-exp big) (matrix-exp (- big))) (eye 3))",
                1e-8,
            ),
            (
                "(err (matrix-exp [[0 1] [-1 0]]) [[(cos 1) (sin 1)] [(- (sin 1)) (cos 1)]])",
                1e-15,
            ),
            ("(err (matrix-exp (zeros '(3 3))) (eye 3))", 0.0),
            // exp(2a) = exp(a)²
            (
                "(err (matrix-exp (* 2 a)) (matmul (matrix-exp a) (matrix-exp a)))",
                1e-10,
            ),
        ],
    );
}

// ------------------------------------------------------------ degenerate points

#[test]
fn derivatives_at_degenerate_points_are_finite() {
    assert_small(
        "(define i3 (eye 3))
         (define low (matmul (randn '(4 2)) (randn '(2 3))))
         (define (finite g) (max (abs g)))",
        &[
            // Repeated eigenvalues: finite, and exact for functions of the
            // eigenvalues.
            (
                "(err ((grad (lambda (a) (sum (* (car (eigh a)) (car (eigh a)))))) i3) (* 2 i3))",
                1e-14,
            ),
            (
                "(finite ((grad (lambda (a) (sum (* (second (eigh a)) (second (eigh a)))))) i3))",
                1e6,
            ),
            (
                "(finite ((grad (lambda (a) (sum (second (eigh a))))) (zeros '(3 3))))",
                1e6,
            ),
            (
                "(err (second (jvp (lambda (a) (car (eigh a))) (list i3) (list (diag [1 2 3])))) [1 2 3])",
                1e-14,
            ),
            // The documented limit of masking: sum(V diag(w) Vᵀ) = sum(a)
            // has gradient ones(3, 3), but the coupling within the repeated
            // eigenvalue is dropped and the rule gives I.
            (
                "(err ((grad (lambda (a) (let ((r (eigh a))) (sum (matmul (second r) (* (reshape (car r) '(1 3)) (mT (second r)))))))) i3) i3)",
                1e-14,
            ),
            // Second derivatives of det at a singular matrix (rank n - 1).
            (
                "(err ((hessian det) [[1 2] [2 4]]) [[[[0 0] [0 1]] [[0 0] [-1 0]]] [[[0 -1] [0 0]] [[1 0] [0 0]]]])",
                1e-12,
            ),
            // A rank-deficient svd: finite, and exact for |a|² = sum s².
            (
                "(err ((grad (lambda (a) (sum (* (second (svd a)) (second (svd a)))))) low) (* 2 low))",
                1e-11,
            ),
            (
                "(finite ((grad (lambda (a) (let ((r (svd a))) (sum (* (car r) (car r) 3))))) low))",
                1e6,
            ),
            (
                "(finite ((grad (lambda (a) (sum (nth (svd a) 2)))) (zeros '(2 4))))",
                1e6,
            ),
            ("(finite ((hessian det) (zeros '(3 3))))", 1e6),
        ],
    );
}

// ------------------------------------------------------------ errors

#[test]
fn bad_shapes_and_values_are_clear_errors() {
    let mut engine = engine();
    let cases: &[(&str, &[&str])] = &[
        ("(det [[1 2 3] [4 5 6]])", &["det", "square", "[2 3]"]),
        ("(slogdet [1 2 3])", &["slogdet", "[3]"]),
        ("(eigh (zeros '(2 3 4)))", &["eigh", "square", "[2 3 4]"]),
        (
            "(matrix-exp (zeros '(3 2)))",
            &["matrix-exp", "square", "[3 2]"],
        ),
        ("(svd [1 2])", &["svd", "[2]"]),
        ("(qr 3.0)", &["qr"]),
        (
            "(lstsq (zeros '(4 2)) (zeros '(3)))",
            &["lstsq", "[4 2]", "[3]"],
        ),
        (
            "(lstsq (zeros '(4 2)) (zeros '(3 2)))",
            &["lstsq", "[4 2]", "[3 2]"],
        ),
        (
            "(lstsq [[1 2] [2 4] [3 6]] [1 2 3])",
            &["lstsq", "rank deficient"],
        ),
        (
            "(lstsq [[1 2 3] [2 4 6]] [1 2])",
            &["lstsq", "rank deficient"],
        ),
        (
            "((jit (lambda (a b) (lstsq a b))) [[1 2] [2 4] [3 6]] [1 2 3])",
            &["lstsq", "rank deficient"],
        ),
        (
            "((grad (lambda (a) (second (slogdet a)))) [[1 2] [2 4]])",
            &["slogdet", "singular", "pivot"],
        ),
        ("(det [[1 nan] [0 1]])", &["det", "NaN"]),
        ("(eigh [[1 inf] [0 1]])", &["eigh", "NaN or an infinite"]),
        ("(matrix-exp [[nan]])", &["matrix-exp", "NaN"]),
    ];
    let mut failures = String::new();
    for (source, needles) in cases {
        match engine.eval(source) {
            Ok(value) => {
                let _ = writeln!(failures, "{source}: no error, the value {value}");
            }
            Err(error) => {
                let message = error.render();
                if error.kind() == EvalErrorKind::Internal {
                    let _ = writeln!(failures, "{source}: a caught panic: {message}");
                }
                for needle in *needles {
                    if !message.contains(needle) {
                        let _ = writeln!(failures, "{source}: {needle:?} not in {message}");
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

//! Solvers differentiated by the implicit function theorem (issue 18
//! item 2): `fixed-point` and `root`, with every linear solve of their
//! rules (dense, BiCGSTAB, conjugate gradients). Each gradient is checked
//! against central finite differences of the solver run eagerly (outside
//! any trace) and, for the fixed point, against the gradient of the
//! iteration unrolled to convergence; forward mode against finite
//! differences; closed forms where they exist. The gradient's tape holds
//! no reverse loop: the iterations are never differentiated.

use super::*;

const DEFINITIONS: &str = r"
(define (cell x W b) (tanh (+ (matmul W x) b)))
(define c4 (tensor 0.7 -1.3 0.4 2.1))
(define x4 (zeros '(4)))
(define (fp-loss how) (lambda (W b) (sum (* c4 (fixed-point cell x4 W b :tol 1e-14 :solve how)))))
(define (unrolled W b) (sum (* c4 (scan (lambda (x i) (cell x W b)) x4 400))))
;; x = x - eta (A x - b): the fixed point A^-1 b, df/dx = I - eta A symmetric.
(define (relax x A b) (- x (* 0.1 (- (matmul A x) b))))
(define (cubic x A b) (- (+ (matmul A x) (* 0.2 (* x x x))) b))
(define (root-loss how) (lambda (A b) (sum (* c4 (sin (root cubic x4 A b :tol 1e-13 :solve how))))))
";

fn implicit_engine() -> Engine {
    let mut engine = engine();
    eval(&mut engine, DEFINITIONS);
    engine
}

/// A contractive matrix (norm about 0.5) and a vector, from `seed`.
fn contractive(rng: &mut Rng) -> (ArrayD<f64>, ArrayD<f64>) {
    (
        rng.array(&[4, 4], Domain::Range(-0.25, 0.25)),
        rng.array(&[4], R1),
    )
}

/// A well-conditioned matrix (4 I plus noise; symmetric when asked).
fn conditioned(rng: &mut Rng, symmetric: bool) -> ArrayD<f64> {
    let mut a = rng.array(&[4, 4], R1);
    if symmetric {
        a = &a + &a.t();
    }
    for i in 0..4 {
        a[[i, i]] += 5.0;
    }
    a
}

fn gradients_of(
    engine: &mut Engine,
    form: &str,
    args: &[Value],
) -> Result<Vec<ArrayD<f64>>, String> {
    let f = try_eval(engine, form)?;
    parts(&call(engine, &f, args)?)
}

/// Reverse (plain and jit) and forward mode of `loss` at `xs` against
/// finite differences of the eager `loss`.
fn check_against_differences(
    engine: &mut Engine,
    loss: &str,
    xs: &[ArrayD<f64>],
    seed: u64,
) -> Result<(), String> {
    let args: Vec<Value> = xs.iter().map(value_of).collect();
    let f = try_eval(engine, loss)?;
    let fd: Vec<ArrayD<f64>> = (0..xs.len())
        .map(|k| fd_gradient(engine, &f, xs, k))
        .collect::<Result<_, _>>()?;
    for form in [
        format!("(grad {loss} :wrt '(0 1))"),
        format!("(jit (grad {loss} :wrt '(0 1)))"),
    ] {
        let got = gradients_of(engine, &form, &args)?;
        for (k, (g, want)) in got.iter().zip(&fd).enumerate() {
            compare(&format!("{form} argument {k}"), g, want, 1e-6)?;
        }
    }
    let mut rng = Rng(seed ^ 0x5eed);
    let tangents: Vec<ArrayD<f64>> = xs.iter().map(|x| rng.array(x.shape(), R1)).collect();
    let want = fd_directional(engine, &f, xs, &tangents)?;
    let jvp = try_eval(
        engine,
        &format!("(lambda (xs ts) (second (jvp {loss} xs ts)))"),
    )?;
    let t_args: Vec<Value> = tangents.iter().map(value_of).collect();
    let got = parts(&call(engine, &jvp, &[list_of(args), list_of(t_args)])?)?;
    compare("jvp", &got[0], &want[0], 1e-6)
}

#[test]
fn fixed_point_gradients_match_differences_and_the_unrolled_iteration() {
    let engine = RefCell::new(implicit_engine());
    let mut runner = TestRunner::new(op_config(6));
    let result = runner.run(&any::<u64>(), |seed| {
        let engine = &mut engine.borrow_mut();
        let (w, b) = contractive(&mut Rng(seed));
        let args = [value_of(&w), value_of(&b)];
        let unrolled = gradients_of(engine, "(grad unrolled :wrt '(0 1))", &args)
            .map_err(TestCaseError::fail)?;
        for how in ["'dense", "'bicgstab", "'auto"] {
            let loss = format!("(fp-loss {how})");
            check_against_differences(engine, &loss, &[w.clone(), b.clone()], seed)
                .map_err(|e| TestCaseError::fail(format!("{how}: {e}")))?;
            let got = gradients_of(engine, &format!("(grad {loss} :wrt '(0 1))"), &args)
                .map_err(TestCaseError::fail)?;
            for (k, (g, u)) in got.iter().zip(&unrolled).enumerate() {
                compare(&format!("{how} vs unrolled, argument {k}"), g, u, 1e-9)
                    .map_err(TestCaseError::fail)?;
            }
        }
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

#[test]
fn root_gradients_match_differences() {
    let engine = RefCell::new(implicit_engine());
    let mut runner = TestRunner::new(op_config(6));
    let result = runner.run(&any::<u64>(), |seed| {
        let engine = &mut engine.borrow_mut();
        let mut rng = Rng(seed);
        let a = conditioned(&mut rng, false);
        let b = rng.array(&[4], R2);
        for how in ["'dense", "'bicgstab"] {
            check_against_differences(
                engine,
                &format!("(root-loss {how})"),
                &[a.clone(), b.clone()],
                seed,
            )
            .map_err(|e| TestCaseError::fail(format!("{how}: {e}")))?;
        }
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Closed forms: the cube root and its derivative; a relaxation whose
/// fixed point is A^-1 b, so the gradient of c . x* with respect to b is
/// A^-1 c (conjugate gradients: df/dx is symmetric).
#[test]
fn closed_forms() {
    let mut engine = implicit_engine();
    for c in [8.0f64, 2.0, 0.5] {
        let x = number(
            &mut engine,
            &format!("(root (lambda (x c) (- (* x x x) c)) 1.0 {c} :tol 1e-14)"),
        );
        assert!(close(x, c.cbrt(), 1e-12), "cube root of {c}: {x}");
        let d = number(
            &mut engine,
            &format!(
                "((grad (lambda (c) (root (lambda (x c) (- (* x x x) c)) 1.0 c :tol 1e-14))) {c})"
            ),
        );
        assert!(
            close(d, 1.0 / (3.0 * c.cbrt().powi(2)), 1e-10),
            "d cbrt({c}): {d}"
        );
    }
    let mut rng = Rng(11);
    let a = conditioned(&mut rng, true);
    let b = rng.array(&[4], R1);
    let c = rng.array(&[4], R1);
    eval(
        &mut engine,
        &format!(
            "(define A {}) (define b {}) (define c {})",
            literal(&a),
            literal(&b),
            literal(&c)
        ),
    );
    let want = array(&eval(&mut engine, "(solve A c)")).unwrap();
    for how in ["'cg", "'bicgstab", "'dense"] {
        let got = array(&eval(
            &mut engine,
            &format!("((grad (lambda (b) (sum (* c (fixed-point relax (zeros '(4)) A b :tol 1e-14 :solve {how}))))) b)"),
        ))
        .unwrap();
        compare(how, &got, &want, 1e-8).unwrap();
    }
    // The linear solvers themselves.
    let x = array(&eval(
        &mut engine,
        "(cg (lambda (v) (matmul A v)) c :tol 1e-14)",
    ))
    .unwrap();
    compare("cg", &x, &want, 1e-10).unwrap();
    let x = array(&eval(
        &mut engine,
        "(bicgstab (lambda (v) (matmul (transpose (+ A (tensor '((0 1 0 0) (0 0 1 0) (0 0 0 1) (0 0 0 0))))) v)) c :tol 1e-14)",
    ))
    .unwrap();
    let want = array(&eval(
        &mut engine,
        "(solve (transpose (+ A (tensor '((0 1 0 0) (0 0 1 0) (0 0 0 1) (0 0 0 0))))) c)",
    ))
    .unwrap();
    compare("bicgstab", &x, &want, 1e-10).unwrap();
}

fn literal(a: &ArrayD<f64>) -> String {
    let rows: Vec<String> = a
        .outer_iter()
        .map(|row| {
            if row.ndim() == 0 {
                format!("{:?}", row.iter().next().unwrap())
            } else {
                format!(
                    "({})",
                    row.iter()
                        .map(|x| format!("{x:?}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        })
        .collect();
    if a.ndim() == 1 {
        format!(
            "(tensor {})",
            a.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        )
    } else {
        format!("(tensor '({}))", rows.join(" "))
    }
}

/// The gradient's tape runs the forward iterations and the linear solve,
/// two loops, and never a loop's reverse; inside a scan step and under
/// jit the rule is the same.
#[test]
fn the_iterations_are_never_differentiated() {
    let mut engine = implicit_engine();
    let tape = eval(
        &mut engine,
        "(show-tape (grad (fp-loss 'bicgstab) :wrt '(0 1)) (list (* 0.2 (eye 4)) c4))",
    )
    .to_string();
    assert_eq!(tape.matches("scan[while").count(), 2, "{tape}");
    assert!(!tape.contains("scan-vjp"), "{tape}");
    let got = number(
        &mut engine,
        "(check-grad (lambda (a) (sum (scan (lambda (s i) (fixed-point (lambda (x s) (+ s (* 0.5 (tanh x)))) s s :tol 1e-14)) a 3))) (list (tensor 0.2 0.4)))",
    );
    assert!(
        got < 1e-6,
        "check-grad through a scan of fixed points: {got}"
    );
}

#[test]
fn solvers_that_do_not_converge_are_errors_naming_them() {
    let mut engine = implicit_engine();
    let cases = [
        (
            "(fixed-point (lambda (x a) (* a x)) 1.0 1.5 :max-iter 50)",
            "fixed-point: no convergence within :max-iter 50 iterations",
        ),
        (
            "((jit (lambda (a) (fixed-point (lambda (x a) (+ 1 (* a x))) 1.0 a :max-iter 40))) 1.5)",
            "fixed-point: no convergence within :max-iter 40 iterations",
        ),
        (
            "(root (lambda (x) (+ 1 (* x x))) 1.0 :max-iter 20)",
            "root: Newton's method did not converge within :max-iter 20 iterations",
        ),
        (
            "(cg (lambda (v) (matmul (tensor '((0.0 1.0) (-1.0 0.0))) v)) (tensor 1.0 2.0) :max-iter 5 :who 'my-solver)",
            "my-solver: the linear solve (conjugate gradients) did not converge within 5 iterations",
        ),
    ];
    for (form, want) in cases {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} should fail, gave {value}"),
            Err(message) => assert!(message.contains(want), "{form}: {message}"),
        }
    }
    // A bad linear solver is found when the rule is traced.
    let error = try_eval(
        &mut engine,
        "((grad (lambda (b) (sum (fixed-point cell x4 (* 0.1 (eye 4)) b :solve 'lu)))) c4)",
    )
    .unwrap_err();
    assert!(error.contains(":solve must be"), "{error}");
}

/// Bilevel optimization: the minimizer of ||x - theta||^2 + 0.1 ||x||^2 is
/// theta / 1.1, so the gradient of c . x* in theta is c / 1.1; reverse and
/// forward mode, plain and compiled, and against finite differences of the
/// eager search. `opaque` runs its function on values and hands back
/// inputs, constants to derivatives.
#[test]
fn minimize_is_differentiable_in_the_objectives_parameters() {
    let mut engine = implicit_engine();
    eval(
        &mut engine,
        "(define (inner x theta) (+ (sum (pow (- x theta) 2)) (* 0.1 (sum (* x x)))))
         (define c3 (tensor 1.0 -2.0 0.5))
         (define theta0 (tensor 1.0 2.0 3.0))
         (define (outer theta) (sum (* c3 (lookup (minimize inner (zeros '(3)) theta) 'x))))",
    );
    let want = [1.0 / 1.1, -2.0 / 1.1, 0.5 / 1.1];
    for form in ["((grad outer) theta0)", "((jit (grad outer)) theta0)"] {
        let got = array(&eval(&mut engine, form)).unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w, 1e-9), "{form}: {got}");
        }
    }
    let tangent = number(
        &mut engine,
        "(second (jvp outer (list theta0) (list (tensor 0.0 1.0 0.0))))",
    );
    assert!(close(tangent, want[1], 1e-9), "jvp {tangent}");
    let error = number(&mut engine, "(check-grad outer (list theta0))");
    assert!(error < 1e-6, "check-grad {error}");
    // The report keeps its other entries.
    assert_eq!(
        eval(
            &mut engine,
            "(lookup (minimize inner (zeros '(3)) theta0) 'converged)"
        )
        .to_string(),
        "#t"
    );
    // opaque: values in, inputs out, no derivative through it.
    assert_eq!(
        number(
            &mut engine,
            "((grad (lambda (x) (* x (opaque (lambda (v) (* v v)) x)))) 3.0)"
        ),
        9.0
    );
    let refused = try_eval(
        &mut engine,
        "((grad (lambda (x) (scan (lambda (s i) (opaque sin s)) x 2))) 1.0)",
    )
    .unwrap_err();
    assert!(
        refused.contains("opaque runs its function on values"),
        "{refused}"
    );
}

//! Taylor mode (`jet`, `taylor`, `derivatives`; SPEC section 8) against
//! references that share no code with it: JAX's derivatives of every
//! elementwise function in a composition to order 6 (`tests/data/jet.tsv`,
//! made by `bench/reference/jet_reference.py`), closed forms to order 20,
//! nested gradients of the same function, and the same loop unrolled.

use epsilon::{Engine, Value};

/// Every number of a value, in order.
fn numbers(value: &Value, into: &mut Vec<f64>) {
    match value {
        Value::Float(x) => into.push(*x),
        Value::Int(n) => into.push(*n as f64),
        Value::Tensor(t) => into.extend(t.iter()),
        Value::Pair(_) => value.iter().for_each(|(item, _)| numbers(item, into)),
        _ => {}
    }
}

fn eval_numbers(engine: &mut Engine, program: &str) -> Vec<f64> {
    let value = engine
        .eval(program)
        .unwrap_or_else(|e| panic!("{program}\nfails: {e}"));
    let mut out = Vec::new();
    numbers(&value, &mut out);
    out
}

/// The message of the error `program` gives (a value is a failure).
fn error(engine: &mut Engine, program: &str) -> String {
    match engine.eval(program) {
        Ok(v) => panic!("{program} gave {v}"),
        Err(e) => e.to_string(),
    }
}

fn assert_close(got: &[f64], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * w.abs().max(1.0),
            "{what}: term {k} is {g}, expected {w}"
        );
    }
}

#[test]
fn jet_agrees_with_jax_on_every_elementwise_function_to_order_6() {
    let table = include_str!("data/jet.tsv");
    let mut engine = Engine::new();
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (name, body) = (fields[0], fields[1]);
        let want: Vec<f64> = fields[2..].iter().map(|x| x.parse().unwrap()).collect();
        let program = format!(
            "(jet (lambda (x) {body}) (list 0.8) (list (list 0.7 -0.3 0.2 0.1 -0.05 0.02)))"
        );
        let got = eval_numbers(&mut engine, &program);
        assert_close(&got, &want, 1e-9, name);
        rows += 1;
    }
    assert!(rows >= 45, "{rows} rows");
}

#[test]
fn derivatives_to_order_20_match_closed_forms() {
    let mut engine = Engine::new();
    let factorial = |k: usize| (1..=k).map(|i| i as f64).product::<f64>();
    // exp: every derivative is exp(x).
    let got = eval_numbers(&mut engine, "(derivatives exp 0.3 20)");
    assert_close(&got, &[0.3f64.exp(); 21], 1e-12, "exp");
    // sin: sin, cos, -sin, -cos, ...
    let got = eval_numbers(&mut engine, "(derivatives (lambda (x) (sin x)) 0.7 20)");
    let want: Vec<f64> = (0..=20)
        .map(|k| match k % 4 {
            0 => 0.7f64.sin(),
            1 => 0.7f64.cos(),
            2 => -(0.7f64.sin()),
            _ => -(0.7f64.cos()),
        })
        .collect();
    assert_close(&got, &want, 1e-12, "sin");
    // 1/(1-x): k! / (1-x)^(k+1), up to 2.6e20 at order 20.
    let got = eval_numbers(
        &mut engine,
        "(derivatives (lambda (x) (/ 1 (- 1 x))) 0.2 20)",
    );
    let want: Vec<f64> = (0..=20)
        .map(|k| factorial(k) / 0.8f64.powi(k as i32 + 1))
        .collect();
    assert_close(&got, &want, 1e-12, "1/(1-x)");
    // log: (-1)^(k-1) (k-1)! / x^k.
    let got = eval_numbers(&mut engine, "(derivatives log 1.5 20)");
    let want: Vec<f64> = (0..=20)
        .map(|k| {
            if k == 0 {
                1.5f64.ln()
            } else {
                let sign = if k % 2 == 1 { 1.0 } else { -1.0 };
                sign * factorial(k - 1) / 1.5f64.powi(k as i32)
            }
        })
        .collect();
    assert_close(&got, &want, 1e-12, "log");
    // Order 0 is the value; a whole-number power at a zero base is fine.
    let got = eval_numbers(&mut engine, "(derivatives (lambda (x) (pow x 3)) 0.0 5)");
    assert_close(&got, &[0.0, 0.0, 0.0, 6.0, 0.0, 0.0], 1e-15, "x^3 at 0");
    let got = eval_numbers(&mut engine, "(derivatives exp 0.0 0)");
    assert_close(&got, &[1.0], 0.0, "order 0");
}

#[test]
fn taylor_of_a_tensor_function_agrees_with_nested_gradients() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(seed! 3)
             (define w (randn '(3 4))) (define x (randn '(4))) (define v (randn '(4)))
             (define (f x) (sum (* (tanh (matmul w x)) (exp (* 0.3 (slice x 0 3))))))
             (define (g t) (f (+ x (* t v))))",
        )
        .unwrap();
    let got = eval_numbers(&mut engine, "(taylor f x v 3)");
    let want = eval_numbers(
        &mut engine,
        "(list (g 0.0) ((grad g) 0.0) ((grad (grad g)) 0.0) ((grad (grad (grad g))) 0.0))",
    );
    assert_close(&got, &want, 1e-10, "taylor of a tensor function");
    // A tensor-valued function: each derivative has the result's shape.
    let got = eval_numbers(
        &mut engine,
        "(taylor (lambda (x) (sin (matmul w x))) x v 2)",
    );
    let want = eval_numbers(
        &mut engine,
        "(let ((h (lambda (t) (sin (matmul w (+ x (* t v)))))))
           (list (h 0.0) ((jacobian h) 0.0)
                 ((jacobian (lambda (s) ((jacobian h) s))) 0.0)))",
    );
    assert_close(&got, &want, 1e-10, "taylor of a tensor result");
}

#[test]
fn taylor_coefficients_through_loops_equal_the_unrolled_loop() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(define (step s i) (+ s (* 0.1 (sin s) s)))
             (define (looped s) (sum (scan step s 4)))
             (define (unrolled s) (sum (step (step (step (step s 0) 1) 2) 3)))
             (define (until s) (sum (while-loop (lambda (s) (< (sum s) 1.5)) (lambda (s) (step s 0)) s)))
             (define s0 (tensor '(0.5 0.7)))
             (define d (tensor '(1.0 -0.5)))",
        )
        .unwrap();
    let want = eval_numbers(&mut engine, "(taylor unrolled s0 d 4)");
    let got = eval_numbers(&mut engine, "(taylor looped s0 d 4)");
    assert_close(&got, &want, 1e-10, "scan");
    // The while-loop runs the same four steps from s0 (its sum passes 1.5
    // after them: 1.43, then 1.53).
    let steps = eval_numbers(
        &mut engine,
        "(list (sum (step (step (step s0 0) 0) 0)) (sum (step (step (step (step s0 0) 0) 0) 0)))",
    );
    assert!(steps[0] < 1.5 && steps[1] >= 1.5, "{steps:?}");
    let got = eval_numbers(&mut engine, "(taylor until s0 d 4)");
    assert_close(&got, &want, 1e-10, "while-loop");
    // Higher orders through one loop carrying every order (not nested
    // tangent loops), and a loop over a sequence and a captured value
    // that move with the input, stacking an output.
    let want = eval_numbers(&mut engine, "(taylor unrolled s0 d 9)");
    let got = eval_numbers(&mut engine, "(taylor looped s0 d 9)");
    assert_close(&got, &want, 1e-9, "scan to order 9");
    engine
        .eval(
            "(define (body c x a) (let ((n (+ c (* a x (cos c))))) (list n (* n x))))
             (define (over s)
               (let* ((a (sum (* 0.1 s))) (xs (stack (list (* s 0.5) (sin s) (* s s))))
                      (r (scan (lambda (c x) (body c x a)) s xs)))
                 (+ (sum (first r)) (sum (* (second r) (second r))))))
             (define (over-unrolled s)
               (let* ((a (sum (* 0.1 s)))
                      (r1 (body s (* s 0.5) a)) (r2 (body (first r1) (sin s) a))
                      (r3 (body (first r2) (* s s) a)))
                 (+ (sum (first r3)) (sum (* (second r1) (second r1)))
                    (sum (* (second r2) (second r2))) (sum (* (second r3) (second r3))))))",
        )
        .unwrap();
    let want = eval_numbers(&mut engine, "(taylor over-unrolled s0 d 6)");
    let got = eval_numbers(&mut engine, "(taylor over s0 d 6)");
    assert_close(&got, &want, 1e-9, "scan over a sequence with a capture");
}

#[test]
fn taylor_mode_passes_checkpoint_linear_algebra_and_odeint() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(define (f x) (sum (sin (* x x))))
             (define x (tensor '(0.3 0.5))) (define v (tensor '(1.0 -0.4)))
             (define m (tensor '((3.0 0.5) (0.5 2.0))))
             (define (solved x) (sum (solve (+ m (diag (* x x))) (exp x))))
             (define (g t) (solved (+ x (* t v))))
             (define (decay y t k) (* (neg k) y))
             (define (solution k) (sum (odeint decay (tensor '(1.0 2.0)) (tensor '(0.0 1.0)) k)))",
        )
        .unwrap();
    let want = eval_numbers(&mut engine, "(taylor f x v 5)");
    let got = eval_numbers(&mut engine, "(taylor (checkpoint f) x v 5)");
    assert_close(&got, &want, 1e-12, "checkpoint");
    // A solve whose matrix and right-hand side move: against nested
    // gradients along the line.
    let got = eval_numbers(&mut engine, "(taylor solved x v 3)");
    let want = eval_numbers(
        &mut engine,
        "(list (g 0.0) ((grad g) 0.0) ((grad (grad g)) 0.0) ((grad (grad (grad g))) 0.0))",
    );
    assert_close(&got, &want, 1e-9, "solve");
    // odeint's solution 3 + 3 exp(-k) (at t = 0 and 1), to the solver's
    // tolerance.
    let got = eval_numbers(&mut engine, "(derivatives solution 0.7 3)");
    let e = 3.0 * (-0.7f64).exp();
    assert_close(&got, &[3.0 + e, -e, e, -e], 1e-6, "odeint");
}

#[test]
fn jet_takes_several_primals_and_gives_series_per_result() {
    let mut engine = Engine::new();
    // f(x, y) = x * y along x(t) = 2 + t, y(t) = 3 - 2t: 6 - t - 2t^2, so
    // the derivatives are -1 and -4.
    let got = eval_numbers(
        &mut engine,
        "(jet (lambda (x y) (* x y)) (list 2.0 3.0) (list (list 1.0 0.0) (list -2.0 0.0)))",
    );
    assert_close(&got, &[6.0, -1.0, -4.0], 1e-15, "product");
    // Two results: a series for each.
    let value = engine
        .eval("(jet (lambda (x) (list (* x x) (exp x))) (list 0.0) (list (list 1.0 0.0 0.0)))")
        .unwrap();
    assert_eq!(
        format!("{value}"),
        "((0.0 1.0) ((0.0 2.0 0.0) (1.0 1.0 1.0)))"
    );
    // The JAX documentation's example: sin(z^3) at z = 0.5.
    let (h0, h1, h2) = (0.125f64, 0.75f64, 3.0f64);
    let got = eval_numbers(
        &mut engine,
        &format!("(jet sin (list {h0}) (list (list {h1} {h2})))"),
    );
    let want = [h0.sin(), h0.cos() * h1, -h0.sin() * h1 * h1 + h0.cos() * h2];
    assert_close(&got, &want, 1e-15, "sin(z^3)");
}

#[test]
fn bad_taylor_requests_are_clear_errors() {
    let mut engine = Engine::new();
    let e = error(
        &mut engine,
        "(jet (lambda (x y) (* x y)) (list 1.0 2.0) (list (list 1.0) (list 1.0 2.0)))",
    );
    assert!(e.contains("series 0 has 1 terms, series 1 has 2"), "{e}");
    let e = error(
        &mut engine,
        "(jet (lambda (x) x) (list 1.0) (list (list (tensor '(1 2)))))",
    );
    assert!(e.contains("shape"), "{e}");
    let e = error(&mut engine, "(derivatives sin 1.0 171)");
    assert!(e.contains("from 0 to 170"), "{e}");
    let e = error(&mut engine, "(derivatives sin (tensor '(1 2)) 2)");
    assert!(e.contains("must be a number"), "{e}");
    let e = error(&mut engine, "(taylor 3 1.0 1.0 2)");
    assert!(e.contains("expected a function"), "{e}");
}

// ------------------------------------------------------------ Laplacians

use proptest::prelude::*;

const LAPLACIAN_SETUP: &str = "
    (define w1 (* 0.5 (randn '(6 4)))) (define w2 (* 0.5 (randn '(6))))
    (define (mlp x) (sum (* w2 (tanh (+ (matmul w1 x) (sin (* 0.3 (sum x))))))))
    (define (energy x) (+ (sum (pow x 4)) (* (sum (exp (* 0.2 x))) (prod (cos (* 0.1 x))))))";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Every method gives the trace of the Hessian, weighted too, and
    /// their gradients agree with central differences.
    #[test]
    fn every_laplacian_method_is_the_trace_of_the_hessian(
        seed in 0u64..1000,
        point in proptest::collection::vec(-1.5f64..1.5, 4),
    ) {
        let mut engine = Engine::new();
        engine.eval(&format!("(seed! {seed})")).unwrap();
        engine.eval(LAPLACIAN_SETUP).unwrap();
        let x = format!("(tensor '({}))", point.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "));
        engine.eval(&format!("(define x {x}) (define a (randn '(4 4)))")).unwrap();
        for f in ["mlp", "energy"] {
            let want = eval_numbers(&mut engine, &format!("(sum (diagonal ((hessian {f}) x)))"));
            for method in ["'auto", "'collapsed", "'forward", "'hessian"] {
                let got = eval_numbers(&mut engine, &format!("((laplacian {f} :method {method}) x)"));
                prop_assert!((got[0] - want[0]).abs() <= 1e-9 * want[0].abs().max(1.0),
                    "{f} {method}: {} vs {}", got[0], want[0]);
            }
            let want = eval_numbers(&mut engine, &format!("(sum (* (* 0.5 (+ a (transpose a))) ((hessian {f}) x)))"));
            let got = eval_numbers(&mut engine, &format!("((laplacian {f} :weights a) x)"));
            prop_assert!((got[0] - want[0]).abs() <= 1e-9 * want[0].abs().max(1.0),
                "{f} weighted: {} vs {}", got[0], want[0]);
            // The gradient of the Laplacian (a PINN loss's) by each method,
            // against central differences of the value.
            let h = 1e-4;
            let differences: Vec<f64> = (0..4).map(|i| {
                let mut at = |s: f64| {
                    let mut p = point.clone();
                    p[i] += s;
                    let x = format!("(tensor '({}))", p.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "));
                    eval_numbers(&mut engine, &format!("((laplacian {f}) {x})"))[0]
                };
                (at(h) - at(-h)) / (2.0 * h)
            }).collect();
            for method in ["'collapsed", "'forward", "'hessian"] {
                let got = eval_numbers(&mut engine, &format!("((grad (laplacian {f} :method {method})) x)"));
                for (g, d) in got.iter().zip(&differences) {
                    prop_assert!((g - d).abs() <= 1e-5 * d.abs().max(1.0), "{f} {method} gradient: {g} vs {d}");
                }
            }
        }
    }
}

#[test]
fn laplacians_nest_batch_and_compile() {
    let mut engine = Engine::new();
    engine.eval("(seed! 5)").unwrap();
    engine.eval(LAPLACIAN_SETUP).unwrap();
    // The biharmonic of closed forms: sum x^4 gives 24 per coordinate;
    // exp(sum x) in two coordinates gives 4 exp(sum x).
    let got = eval_numbers(
        &mut engine,
        "(list ((laplacian (laplacian (lambda (x) (sum (pow x 4))))) (tensor '(0.3 -0.2 0.7)))
               ((laplacian (laplacian (lambda (x) (exp (sum x))))) (tensor '(0.1 0.2)))
               ((laplacian (lambda (x) (* x x x))) 2.0))",
    );
    assert_close(
        &got,
        &[72.0, 4.0 * 0.3f64.exp(), 12.0],
        1e-10,
        "closed forms",
    );
    // Under vmap and jit: the Laplacian of each row of a batch.
    let want = eval_numbers(
        &mut engine,
        "(define batch (randn '(3 4)))
         (map (lambda (i) ((laplacian mlp :method 'hessian) (index batch i))) '(0 1 2))",
    );
    let got = eval_numbers(&mut engine, "((vmap (laplacian mlp)) batch)");
    assert_close(&got, &want, 1e-10, "vmap");
    let got = eval_numbers(&mut engine, "((jit (vmap (laplacian mlp))) batch)");
    assert_close(&got, &want, 1e-10, "jit of vmap");
}

#[test]
fn the_stochastic_laplacian_is_unbiased_within_its_variance() {
    let mut engine = Engine::new();
    engine.eval("(seed! 9)").unwrap();
    engine.eval(LAPLACIAN_SETUP).unwrap();
    engine.eval("(define x (randn '(4)))").unwrap();
    let exact = eval_numbers(&mut engine, "((laplacian mlp) x)")[0];
    // Var(vᵀHv) for Rademacher v: 2 * sum of squared off-diagonal entries.
    let hessian = eval_numbers(&mut engine, "((hessian mlp) x)");
    let off: f64 = (0..4)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| hessian[i * 4 + j].powi(2))
        .sum();
    let k = 4000.0;
    let sigma = (2.0 * off / k).sqrt();
    for seed in [1, 2, 3] {
        let got = eval_numbers(
            &mut engine,
            &format!("((laplacian mlp :samples 4000 :seed {seed}) x)"),
        )[0];
        assert!(
            (got - exact).abs() <= 5.0 * sigma,
            "seed {seed}: {got} vs {exact} (sigma {sigma})"
        );
    }
    // The same seed gives the same estimate.
    let a = eval_numbers(&mut engine, "((laplacian mlp :samples 10 :seed 4) x)");
    let b = eval_numbers(&mut engine, "((laplacian mlp :samples 10 :seed 4) x)");
    assert_eq!(a, b);
}

#[test]
fn bad_laplacian_requests_are_clear_errors() {
    let mut engine = Engine::new();
    let e = error(
        &mut engine,
        "((laplacian sum :method 'exact) (tensor '(1 2)))",
    );
    assert!(e.contains(":method must be"), "{e}");
    let e = error(
        &mut engine,
        "(collapsed-sum (tensor '(1 2)) (tensor '(1 2)) (tensor '(1 2 3)))",
    );
    assert!(e.contains("a vector of 2 numbers"), "{e}");
    let e = error(
        &mut engine,
        "((laplacian sum :weights (eye 3)) (tensor '(1 2)))",
    );
    assert!(e.contains("2 x 2 matrix"), "{e}");
    let e = error(&mut engine, "((laplacian sum :samples 0) (tensor '(1 2)))");
    assert!(e.contains("positive whole number"), "{e}");
}

#[test]
fn the_collapsed_laplacian_costs_less_than_the_forward_one_and_than_d_first_order_sweeps() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(seed! 2)
             (define w1 (* 0.2 (randn '(32 16)))) (define w2 (* 0.2 (randn '(32 32)))) (define w3 (randn '(32)))
             (define (net x) (sum (* w3 (tanh (matmul w2 (tanh (matmul w1 x)))))))
             (define x (randn '(16)))
             (define (flops f args) (second (assoc 'flops (tape-stats f args))))",
        )
        .unwrap();
    let got = eval_numbers(
        &mut engine,
        "(list (flops (laplacian net :method 'collapsed) (list x))
               (flops (laplacian net :method 'forward) (list x))
               (flops (lambda (x) (second (jvp net (list x) (list x)))) (list x))
               ((laplacian net :method 'collapsed) x) ((laplacian net :method 'hessian) x))",
    );
    let (collapsed, forward, first_order) = (got[0], got[1], got[2]);
    assert!(
        collapsed < forward,
        "collapsed {collapsed}, forward {forward}"
    );
    assert!(
        collapsed < 16.0 * first_order,
        "collapsed {collapsed}, one first-order sweep {first_order}"
    );
    assert_close(&got[3..4], &got[4..5], 1e-9, "the collapsed Laplacian");
}

/// `'auto` is `'collapsed` because its program costs least: on each
/// function of docs/taylor.md's table its flops are below the forward
/// Laplacian's and the Hessian trace's (and the three agree).
#[test]
fn the_collapsed_laplacian_costs_least_of_the_three_methods() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(define (flops f args) (second (assoc 'flops (tape-stats f args))))
             (define (mlp2 x) (sum (tanh (matmul (tanh (matmul (reshape x '(1 4)) (sin (reshape (arange 32.0) '(4 8))))) (cos (reshape (arange 8.0) '(8 1)))))))
             (define (wave x) (sum (exp (sin x))))
             (define (rosenbrock x) (let ((a (slice x 0 49)) (b (slice x 1 50))) (sum (+ (* 100 (square (- b (square a)))) (square (- 1 a))))))
             (define (pinn x) (sum (tanh (matmul (tanh (matmul (reshape x '(1 2)) (sin (reshape (arange 512.0) '(2 256))))) (cos (reshape (arange 256.0) '(256 1)))))))
             (define (soft x) (logsumexp (* x x)))
             (define (solved x) (sum (solve (+ (eye 6) (outer x x)) x)))
             (define (costs f x)
               (map (lambda (m) (list (flops (laplacian f :method m) (list x)) ((laplacian f :method m) x)))
                    '(collapsed forward hessian)))",
        )
        .unwrap();
    for (f, x) in [
        ("mlp2", "(* 0.1 (arange 4.0))"),
        ("wave", "(* 0.1 (arange 50.0))"),
        ("rosenbrock", "(cos (arange 50.0))"),
        ("pinn", "[0.3 0.7]"),
        ("soft", "(* 0.1 (arange 30.0))"),
        ("solved", "(* 0.1 (arange 6.0))"),
    ] {
        let got = eval_numbers(&mut engine, &format!("(costs {f} {x})"));
        let (collapsed, forward, hessian) = (got[0], got[2], got[4]);
        assert!(
            collapsed < forward && collapsed < hessian,
            "{f}: collapsed {collapsed}, forward {forward}, hessian {hessian}"
        );
        assert_close(&got[1..2], &got[5..6], 1e-9, f);
        assert_close(&got[3..4], &got[5..6], 1e-9, f);
    }
}

/// An error raised inside the function given to `taylor` under a trace
/// is that function's error, not a note that `taylor` has no derivative.
#[test]
fn errors_inside_a_traced_taylor_are_the_inner_functions() {
    let mut engine = Engine::new();
    let error = engine
        .eval("((jit (lambda (x) (third (taylor (lambda (y) (slice y 0 #f)) x x 2)))) [1.0 2.0])")
        .expect_err("slice refuses #f");
    let text = error.to_string();
    assert!(text.contains("expected an integer"), "{text}");
    assert!(!text.contains("has no derivative"), "{text}");
}

/// Operations of the table that are linear in a batched operand pass the
/// collapsed sum through (`Definition::sum_through`): Laplacians through
/// gathers, flips, `cumsum`, triangles, diagonals and solves equal the
/// Hessian's trace, under `grad` too, and cost less than the forward
/// Laplacian.
#[test]
fn the_sum_passes_through_linear_operations_of_the_table() {
    let mut engine = Engine::new();
    engine
        .eval(
            "(define (flops f args) (second (assoc 'flops (tape-stats f args))))
             (define a (+ (* 3 (eye 4)) (reshape (* 0.1 (arange 16.0)) '(4 4))))
             (define w [0.3 -0.7 1.1 0.5])
             (define fs (list
               (lambda (x) (sum (sin (gather (tanh x) [2 0 1 1 3]))))
               (lambda (x) (sum (* w (exp (flip (tanh x))))))
               (lambda (x) (sum (sin (cumsum (tanh x)))))
               (lambda (x) (sum (cos (triu (outer (tanh x) (sin x))))))
               (lambda (x) (sum (sin (diagonal (outer (tanh x) (sin x))))))
               (lambda (x) (sum (sin (matmul (diag (tanh x)) a))))
               (lambda (x) (sum (sin (solve a (tanh x)))))
               (lambda (x) (sum (sin (triangular-solve (tril a) (tanh x)))))))
             (define x [0.4 -0.3 0.8 0.1])",
        )
        .unwrap();
    for k in 0..8 {
        let got = eval_numbers(
            &mut engine,
            &format!(
                "(let ((f (nth fs {k})))
                   (list ((laplacian f) x) ((laplacian f :method 'hessian) x)
                         (flops (laplacian f) (list x)) (flops (laplacian f :method 'forward) (list x))))"
            ),
        );
        assert_close(&got[0..1], &got[1..2], 1e-10, &format!("function {k}"));
        assert!(
            got[2] < got[3],
            "function {k}: collapsed {} flops, forward {}",
            got[2],
            got[3]
        );
        // The gradient of the collapsed Laplacian against the Hessian's.
        let grads = eval_numbers(
            &mut engine,
            &format!(
                "(let ((f (nth fs {k})))
                   (list ((grad (lambda (x) (* 1.0 ((laplacian f) x)))) x)
                         ((grad (lambda (x) (* 1.0 ((laplacian f :method 'hessian) x)))) x)))"
            ),
        );
        assert_close(
            &grads[0..4],
            &grads[4..8],
            1e-9,
            &format!("function {k}'s gradient"),
        );
    }
}

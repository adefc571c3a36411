//! The standard library's solvers on random valid and invalid input: each
//! answer is right — checked against a second method (the matrix
//! exponential for linear ODEs, a linear solve for quadratics) or by its
//! residual — or it is a clear error naming the solver; never a wrong
//! number. One property test per solver: `odeint`, `fixed-point`, `root`,
//! `minimize` and `lbfgs`, and the optimizers' options.

use epsilon::{Engine, Value};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Evaluates `source`: its value, or its error's message.
fn run(engine: &mut Engine, source: &str) -> Result<Value, String> {
    engine
        .eval(source)
        .map_err(|error| error.message().to_string())
}

/// The numbers of a number or tensor value.
fn numbers(value: &Value) -> Vec<f64> {
    match value {
        Value::Float(x) => vec![*x],
        Value::Int(n) => vec![*n as f64],
        other => ndarray::ArrayD::<f64>::try_from(other.clone())
            .unwrap_or_else(|_| panic!("expected numbers, got {other}"))
            .iter()
            .copied()
            .collect(),
    }
}

fn show(xs: &[f64]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| format!("{x:?}")).collect();
    format!("(tensor {})", parts.join(" "))
}

/// An option value: a valid one, or one of the ways to get it wrong.
fn tolerance() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        4 => (-12i32..=-6).prop_map(|e| (format!("1e{e}"), true)),
        1 => Just(("0".to_string(), false)),
        1 => Just(("-1e-8".to_string(), false)),
        1 => Just(("(/ 0.0 0.0)".to_string(), false)),
        1 => Just(("'tight".to_string(), false)),
    ]
}

fn iterations() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        4 => (50u32..2000).prop_map(|n| (n.to_string(), true)),
        1 => Just(("0".to_string(), false)),
        1 => Just(("-5".to_string(), false)),
        1 => Just(("2.5".to_string(), false)),
    ]
}

/// The order of the output times.
#[derive(Clone, Copy, Debug)]
enum Order {
    Increasing,
    Decreasing,
    Shuffled,
}

proptest! {
    #![proptest_config(config())]

    /// dy/dt = A y with a random 2 x 2 A: the solution at every output
    /// time is expm(A (t - t0)) y0, forward or backward in time; times out
    /// of order and options out of range are errors naming odeint.
    #[test]
    fn odeint_is_right_or_refuses(
        a in prop::collection::vec(-1.0f64..1.0, 4),
        y0 in prop::collection::vec(-2.0f64..2.0, 2),
        steps in prop::collection::vec(0.05f64..0.6, 1..5),
        start in -1.0f64..1.0,
        order in prop_oneof![Just(Order::Increasing), Just(Order::Decreasing), Just(Order::Shuffled)],
        rtol in tolerance(),
        rk4 in any::<bool>(),
    ) {
        let mut times = vec![start];
        for step in &steps {
            times.push(times.last().unwrap() + step);
        }
        let shuffled = matches!(order, Order::Shuffled) && times.len() >= 3;
        match order {
            Order::Increasing => {}
            Order::Decreasing => times.reverse(),
            Order::Shuffled => {
                let last = times.len() - 1;
                times.swap(0, last.min(1));
            }
        }
        let method = if rk4 { ":method 'rk4 :dt 0.001" } else { "" };
        let source = format!(
            "(odeint (lambda (y t) (matmul A y)) {} {} :rtol {} :atol 1e-12 {method})",
            show(&y0), show(&times), rtol.0
        );
        let mut engine = Engine::new();
        run(&mut engine, &format!("(define A (reshape {} '(2 2)))", show(&a))).unwrap();
        let valid = rtol.1 && !shuffled;
        match run(&mut engine, &source) {
            Ok(value) => {
                prop_assert!(valid, "{source} gave {value}, an error was expected");
                let got = numbers(&value);
                prop_assert_eq!(got.len(), 2 * times.len());
                for (k, t) in times.iter().enumerate() {
                    let want = numbers(&run(
                        &mut engine,
                        &format!("(matmul (matrix-exp (* A {:?})) {})", t - times[0], show(&y0)),
                    ).unwrap());
                    for i in 0..2 {
                        let g = got[2 * k + i];
                        prop_assert!(
                            (g - want[i]).abs() <= 1e-5 * want[i].abs().max(1.0),
                            "{}: at t = {}: {} vs {}", source, t, g, want[i]
                        );
                    }
                }
            }
            Err(message) => {
                prop_assert!(!valid, "{source}: {message}");
                prop_assert!(message.starts_with("odeint:"), "{source}: {message}");
            }
        }
    }

    /// x = c cos(x) + b: a contraction for |c| < 1, whose answer satisfies
    /// the fixed-point equation to the tolerance; an expanding map or bad
    /// options are errors naming fixed-point.
    #[test]
    fn fixed_point_is_right_or_refuses(
        c in -2.0f64..2.0,
        b in -1.0f64..1.0,
        tol in tolerance(),
        max_iter in iterations(),
    ) {
        let source = format!(
            "(fixed-point (lambda (x c b) (+ (* c (cos x)) b)) 0.3 {c:?} {b:?} :tol {} :max-iter {})",
            tol.0, max_iter.0
        );
        let mut engine = Engine::new();
        match run(&mut engine, &source) {
            Ok(value) => {
                prop_assert!(tol.1 && max_iter.1, "{source} gave {value}");
                let x = numbers(&value)[0];
                let residual = (x - (c * x.cos() + b)).abs();
                prop_assert!(residual <= 1e-5 * (1.0 + x.abs()), "{source}: x = {x}, residual {residual}");
            }
            Err(message) => {
                prop_assert!(message.starts_with("fixed-point:"), "{source}: {message}");
                if tol.1 && max_iter.1 {
                    prop_assert!(message.contains("no convergence"), "{source}: {message}");
                }
            }
        }
    }

    /// Roots of x³ + p x + q by Newton's method: |f(x)| within the
    /// tolerance, or an error naming root.
    #[test]
    fn root_is_right_or_refuses(
        p in -3.0f64..3.0,
        q in -3.0f64..3.0,
        x0 in -2.0f64..2.0,
        tol in tolerance(),
        max_iter in iterations(),
    ) {
        let source = format!(
            "(root (lambda (x p q) (+ (* x x x) (* p x) q)) {x0:?} {p:?} {q:?} :tol {} :max-iter {})",
            tol.0, max_iter.0
        );
        let mut engine = Engine::new();
        match run(&mut engine, &source) {
            Ok(value) => {
                prop_assert!(tol.1 && max_iter.1, "{source} gave {value}");
                let x = numbers(&value)[0];
                let f = x * x * x + p * x + q;
                let limit: f64 = tol.0.parse().unwrap();
                prop_assert!(f.abs() <= limit, "{source}: x = {x}, f = {f}");
            }
            Err(message) => {
                prop_assert!(message.starts_with("root:"), "{source}: {message}");
            }
        }
    }

    /// A random convex quadratic ½ xᵀ M x - bᵀ x (M = LLᵀ + I): a result
    /// that says it converged has x = M⁻¹ b; one that did not says so, and
    /// its gradient norm is the true one at its x. Bad options are errors
    /// naming the function.
    #[test]
    fn minimize_and_lbfgs_are_right_or_say_so(
        l in prop::collection::vec(-1.0f64..1.0, 9),
        b in prop::collection::vec(-2.0f64..2.0, 3),
        max_iter in prop_oneof![
            4 => (0u32..60).prop_map(|n| (n.to_string(), true)),
            1 => Just(("-5".to_string(), false)),
            1 => Just(("2.5".to_string(), false)),
        ],
        tol in prop_oneof![3 => Just(("1e-9".to_string(), true)), 1 => Just(("-1.0".to_string(), false))],
        adam in any::<bool>(),
        direct in any::<bool>(),
    ) {
        let mut engine = Engine::new();
        run(&mut engine, &format!(
            "(define L (reshape {} '(3 3))) (define M (+ (eye 3) (matmul L (transpose L)))) (define b {})",
            show(&l), show(&b)
        )).unwrap();
        run(&mut engine, "(define (f x) (- (* 0.5 (sum (* x (matmul M x)))) (sum (* b x))))").unwrap();
        let (who, source) = if direct {
            ("lbfgs", format!("(lbfgs f (zeros 3) :max-iter {} :gtol {})", max_iter.0, tol.0))
        } else {
            let method = if adam { ":method (adam :lr 0.1)" } else { "" };
            ("minimize", format!("(minimize f (zeros 3) {method} :max-iter {} :tol {})", max_iter.0, tol.0))
        };
        match run(&mut engine, &format!("(define result {source})")) {
            Ok(_) => {
                prop_assert!(max_iter.1 && tol.1, "{source} was accepted");
                let x = numbers(&run(&mut engine, "(lookup result 'x)").unwrap());
                let reported = numbers(&run(&mut engine, "(lookup result 'gradient-norm)").unwrap())[0];
                let actual = numbers(&run(&mut engine, "(norm (- (matmul M (lookup result 'x)) b))").unwrap())[0];
                prop_assert!((reported - actual).abs() <= 1e-8 * actual.max(1.0), "{source}: reports {reported}, is {actual}");
                let converged = run(&mut engine, "(lookup result 'converged)").unwrap();
                if converged.is_truthy() {
                    let want = numbers(&run(&mut engine, "(solve M b)").unwrap());
                    for (g, w) in x.iter().zip(&want) {
                        prop_assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{source}: {x:?} vs {want:?}");
                    }
                }
            }
            Err(message) => {
                prop_assert!(!(max_iter.1 && tol.1), "{source}: {message}");
                prop_assert!(message.starts_with(who), "{source}: {message}");
            }
        }
    }

    /// The optimizers' options: a value out of range is an error naming the
    /// optimizer and the option when the optimizer is made; a valid one
    /// gives an optimizer whose first step moves against the gradient.
    #[test]
    fn optimizer_options_are_checked(
        which in 0usize..2,
        lr in prop_oneof![3 => (1e-4f64..1.0).prop_map(|v| format!("{v:?}")), 1 => Just("-0.1".to_string()), 1 => Just("0".to_string())],
        beta in prop_oneof![3 => (0.0f64..0.999).prop_map(|v| format!("{v:?}")), 1 => Just("1.0".to_string()), 1 => Just("-0.5".to_string())],
    ) {
        let (who, source) = if which == 0 {
            ("adam", format!("(adam :lr {lr} :beta1 {beta})"))
        } else {
            ("sgd", format!("(sgd :lr {lr} :momentum {beta})"))
        };
        let lr_ok = lr.parse::<f64>().is_ok_and(|v| v > 0.0);
        // Adam's decay rates lie in [0, 1); SGD's momentum is any number at
        // least 0 (as PyTorch's).
        let beta_ok = beta
            .parse::<f64>()
            .is_ok_and(|v| v >= 0.0 && (which == 1 || v < 1.0));
        let mut engine = Engine::new();
        match run(&mut engine, &format!("(define opt {source})")) {
            Ok(_) => {
                prop_assert!(lr_ok && beta_ok, "{source} was accepted");
                let moved = numbers(&run(&mut engine, "(opt (tensor 1.0 -1.0) (tensor 2.0 -2.0))").unwrap());
                prop_assert!(moved[0] < 1.0 && moved[1] > -1.0, "{source}: {moved:?}");
            }
            Err(message) => {
                prop_assert!(!(lr_ok && beta_ok), "{source}: {message}");
                prop_assert!(message.starts_with(who), "{source}: {message}");
            }
        }
    }
}

//! `odeint` (issue 18 item 3): values against closed forms (exponential
//! decay, the harmonic oscillator) to the tolerance asked, by the adaptive
//! Dormand-Prince method and fixed-step RK4; gradients by the continuous
//! adjoint ('backsolve) and through the steps ('direct) against closed
//! forms and against central finite differences of the eager solver;
//! forward mode against finite differences; errors for bad input.

use super::*;

const DEFINITIONS: &str = r"
(define (decay y t k) (* (neg k) y))
(define (oscillator y t w)
  (stack (list (index y 1) (* (neg (* w w)) (index y 0)))))
(define (lotka y t p)
  (let ((x (index y 0)) (z (index y 1)))
    (stack (list (- (* (index p 0) x) (* (index p 1) x z))
                 (- (* (index p 2) x z) (* (index p 3) z))))))
(define ts (linspace 0.0 2.0 6))
(define weights (tensor '((1.0 -0.5) (0.3 0.2) (-0.7 1.1) (0.4 0.4) (1.3 -0.2) (0.1 0.9))))
(define (lotka-loss adjoint)
  (lambda (y0 p) (sum (* weights (odeint lotka y0 ts p :rtol 1e-11 :atol 1e-11 :adjoint adjoint)))))
";

fn ode_engine() -> Engine {
    let mut engine = engine();
    eval(&mut engine, DEFINITIONS);
    engine
}

fn values(engine: &mut Engine, form: &str) -> Vec<f64> {
    array(&eval(engine, form))
        .unwrap()
        .iter()
        .copied()
        .collect()
}

#[test]
fn solutions_match_closed_forms_to_the_tolerance() {
    let mut engine = ode_engine();
    let times: Vec<f64> = (0..6).map(|i| 0.4 * i as f64).collect();
    for (form, tol) in [
        ("(odeint decay 1.5 ts 0.7)", 1e-7),
        ("(odeint decay 1.5 ts 0.7 :rtol 1e-12 :atol 1e-12)", 1e-11),
        ("(odeint decay 1.5 ts 0.7 :method 'rk4 :dt 0.01)", 1e-9),
    ] {
        let got = values(&mut engine, form);
        for (g, t) in got.iter().zip(&times) {
            let want = 1.5 * (-0.7 * t).exp();
            assert!(close(*g, want, tol), "{form} at t = {t}: {g} vs {want}");
        }
    }
    for (form, tol) in [
        (
            "(odeint oscillator (tensor 1.0 0.0) ts 2.0 :rtol 1e-10 :atol 1e-10)",
            1e-8,
        ),
        (
            "(odeint oscillator (tensor 1.0 0.0) ts 2.0 :method 'rk4 :dt 0.005)",
            1e-8,
        ),
    ] {
        let got = values(&mut engine, form);
        for (k, t) in times.iter().enumerate() {
            let (x, v) = ((2.0 * t).cos(), -2.0 * (2.0 * t).sin());
            assert!(
                close(got[2 * k], x, tol),
                "{form} x at t = {t}: {} vs {x}",
                got[2 * k]
            );
            assert!(
                close(got[2 * k + 1], v, tol),
                "{form} v at t = {t}: {} vs {v}",
                got[2 * k + 1]
            );
        }
    }
}

/// d/dk and d/dy0 of sum_t y0 exp(-k t), both ways of differentiating,
/// plain and compiled.
#[test]
fn gradients_match_closed_forms() {
    let mut engine = ode_engine();
    let times: Vec<f64> = (0..6).map(|i| 0.4 * i as f64).collect();
    let (y0, k) = (1.5f64, 0.7f64);
    let want_y0: f64 = times.iter().map(|t| (-k * t).exp()).sum();
    let want_k: f64 = times.iter().map(|t| -t * y0 * (-k * t).exp()).sum();
    for adjoint in ["'backsolve", "'direct"] {
        let g = format!(
            "(grad (lambda (y0 k) (sum (odeint decay y0 ts k :rtol 1e-12 :atol 1e-12 :adjoint {adjoint}))) :wrt '(0 1))"
        );
        for f in [g.clone(), format!("(jit {g})")] {
            let form = format!("({f} {y0} {k})");
            let got = parts(&eval(&mut engine, &form)).unwrap();
            let (gy, gk) = (
                got[0].iter().next().copied().unwrap(),
                got[1].iter().next().copied().unwrap(),
            );
            assert!(close(gy, want_y0, 1e-9), "{form}: d/dy0 {gy} vs {want_y0}");
            assert!(close(gk, want_k, 1e-9), "{form}: d/dk {gk} vs {want_k}");
        }
    }
}

/// Output times far denser than the steps (many times inside one step,
/// read from its dense output, and spans no step ends in): the values
/// match the closed form to the dense output's accuracy and both
/// gradients match it too, by the adjoint and through the steps.
#[test]
fn output_times_denser_than_the_steps() {
    let mut engine = ode_engine();
    eval(&mut engine, "(define dense-ts (linspace 0.0 3.0 61))");
    let steps = values(
        &mut engine,
        "(tensor (odeint-steps decay 1.0 dense-ts 0.7 :rtol 1e-6 :atol 1e-6))",
    );
    assert!(steps[0] < 30.0, "{steps:?} steps for 60 spans");
    let got = values(
        &mut engine,
        "(odeint decay 1.0 dense-ts 0.7 :rtol 1e-6 :atol 1e-6)",
    );
    for (i, y) in got.iter().enumerate() {
        let t = 0.05 * i as f64;
        assert!((y - (-0.7 * t).exp()).abs() < 1e-5, "t = {t}: {y}");
    }
    let want: f64 = (0..61)
        .map(|i| -0.05 * i as f64 * (-0.7 * 0.05 * i as f64).exp())
        .sum();
    for adjoint in ["'backsolve", "'direct"] {
        let form = format!(
            "((grad (lambda (k) (sum (odeint decay 1.0 dense-ts k :rtol 1e-6 :atol 1e-6 :adjoint {adjoint})))) 0.7)"
        );
        let g = number(&mut engine, &form);
        assert!(
            (g - want).abs() < 1e-4 * want.abs(),
            "{adjoint}: {g} vs {want}"
        );
    }
}

/// Lotka-Volterra at random parameters: reverse mode (both adjoints) and
/// forward mode against central differences of the eager solver.
#[test]
fn lotka_volterra_gradients_match_differences() {
    let engine = RefCell::new(ode_engine());
    let mut runner = TestRunner::new(op_config(4));
    let result = runner.run(&any::<u64>(), |seed| {
        let engine = &mut engine.borrow_mut();
        let mut rng = Rng(seed);
        let y0 = rng.array(&[2], Domain::Range(0.8, 1.5));
        let p = rng.array(&[4], Domain::Range(0.5, 1.5));
        let xs = [y0, p];
        let args: Vec<Value> = xs.iter().map(value_of).collect();
        for adjoint in ["'backsolve", "'direct"] {
            let loss = format!("(lotka-loss {adjoint})");
            let f = try_eval(engine, &loss).map_err(TestCaseError::fail)?;
            let grad = try_eval(engine, &format!("(grad {loss} :wrt '(0 1))"))
                .map_err(TestCaseError::fail)?;
            let got = parts(&call(engine, &grad, &args).map_err(TestCaseError::fail)?)
                .map_err(TestCaseError::fail)?;
            for (k, g) in got.iter().enumerate() {
                let want = fd_gradient(engine, &f, &xs, k).map_err(TestCaseError::fail)?;
                compare(&format!("{adjoint} argument {k}"), g, &want, 1e-5)
                    .map_err(TestCaseError::fail)?;
            }
            let tangents = [rng.array(&[2], R1), rng.array(&[4], R1)];
            let want = fd_directional(engine, &f, &xs, &tangents).map_err(TestCaseError::fail)?;
            let jvp = try_eval(
                engine,
                &format!("(lambda (xs ts) (second (jvp {loss} xs ts)))"),
            )
            .map_err(TestCaseError::fail)?;
            let t_args: Vec<Value> = tangents.iter().map(value_of).collect();
            let got = parts(
                &call(engine, &jvp, &[list_of(args.clone()), list_of(t_args)])
                    .map_err(TestCaseError::fail)?,
            )
            .map_err(TestCaseError::fail)?;
            compare(&format!("{adjoint} jvp"), &got[0], &want[0], 1e-5)
                .map_err(TestCaseError::fail)?;
        }
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

#[test]
fn bad_problems_are_errors_naming_odeint() {
    let mut engine = ode_engine();
    let cases = [
        (
            "(odeint (lambda (y t) (* y y)) 1.0 (tensor 0.0 2.0) :max-steps 2000)",
            "odeint: the integration did not reach the next output time within :max-steps 2000 steps",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :method 'rk4)",
            "odeint: :method 'rk4 needs a positive step :dt",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :method 'euler)",
            "odeint: :method must be 'dopri5 or 'rk4",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :adjoint 'magic)",
            "odeint: :adjoint must be 'backsolve or 'direct",
        ),
    ];
    for (form, want) in cases {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} should fail, gave {value}"),
            Err(message) => assert!(message.contains(want), "{form}: {message}"),
        }
    }
}

/// Decreasing times integrate backward (as diffrax and SciPy's
/// `solve_ivp` do): dy/dt = -y from y(1) = 1 gives y(t) = e^(1 - t), by
/// both methods, eagerly and under `jit`.
#[test]
fn decreasing_times_integrate_backward() {
    let mut engine = ode_engine();
    for form in [
        "(odeint (lambda (y t) (neg y)) 1.0 (tensor 1.0 0.0))",
        "(odeint (lambda (y t) (neg y)) 1.0 (tensor 1.0 0.0) :rtol 1e-12 :atol 1e-12)",
        "(odeint (lambda (y t) (neg y)) 1.0 (tensor 1.0 0.0) :method 'rk4 :dt 0.01)",
        "((jit (lambda (y0) (odeint (lambda (y t) (neg y)) y0 (tensor 1.0 0.0)))) 1.0)",
    ] {
        let got = values(&mut engine, form);
        assert_eq!(got.len(), 2, "{form}");
        assert!(close(got[0], 1.0, 1e-12), "{form}: {got:?}");
        assert!(close(got[1], std::f64::consts::E, 1e-7), "{form}: {got:?}");
    }
    // A time-dependent field: dy/dt = t y from y(2) = 1 gives
    // y(t) = exp((t² - 4) / 2), at times 2, 1.5, 0.5, -1.
    let times = [2.0f64, 1.5, 0.5, -1.0];
    let got = values(
        &mut engine,
        "(odeint (lambda (y t) (* t y)) 1.0 (tensor 2.0 1.5 0.5 -1.0) :rtol 1e-11 :atol 1e-11)",
    );
    for (g, t) in got.iter().zip(times) {
        let want = ((t * t - 4.0) / 2.0).exp();
        assert!(close(*g, want, 1e-8), "at t = {t}: {g} vs {want}");
    }
}

/// Backward in time, both gradients match the closed form: with
/// y(t) = y0 exp(-k (t - t0)) from t0 = 2 down to 0, the loss
/// sum_t y(t) has d/dy0 = sum exp(-k (t - 2)) and
/// d/dk = sum -(t - 2) y(t); by the adjoint, through the steps, under
/// `jit`, and in forward mode.
#[test]
fn backward_gradients_match_closed_forms() {
    let mut engine = ode_engine();
    eval(&mut engine, "(define back-ts (linspace 2.0 0.0 5))");
    let times: Vec<f64> = (0..5).map(|i| 2.0 - 0.5 * i as f64).collect();
    let (y0, k) = (1.5f64, 0.7f64);
    let want_y0: f64 = times.iter().map(|t| (-k * (t - 2.0)).exp()).sum();
    let want_k: f64 = times
        .iter()
        .map(|t| -(t - 2.0) * y0 * (-k * (t - 2.0)).exp())
        .sum();
    for method in ["", ":method 'rk4 :dt 0.001"] {
        for adjoint in ["'backsolve", "'direct"] {
            let g = format!(
                "(grad (lambda (y0 k) (sum (odeint decay y0 back-ts k :rtol 1e-12 :atol 1e-12 {method} :adjoint {adjoint}))) :wrt '(0 1))"
            );
            for f in [g.clone(), format!("(jit {g})")] {
                let form = format!("({f} {y0} {k})");
                let got = parts(&eval(&mut engine, &form)).unwrap();
                let gy = got[0].iter().next().copied().unwrap();
                let gk = got[1].iter().next().copied().unwrap();
                assert!(close(gy, want_y0, 1e-7), "{form}: d/dy0 {gy} vs {want_y0}");
                assert!(close(gk, want_k, 1e-7), "{form}: d/dk {gk} vs {want_k}");
                assert!(gk.abs() > 1.0, "{form}: the gradient in k is not zero");
            }
        }
    }
    // Forward mode: the tangent of the loss along k.
    let form = format!(
        "(second (jvp (lambda (k) (sum (odeint decay {y0} back-ts k :rtol 1e-12 :atol 1e-12))) (list {k}) (list 1.0)))"
    );
    let got = number(&mut engine, &form);
    assert!(close(got, want_k, 1e-7), "{form}: {got} vs {want_k}");
}

/// Times in no order, NaN times and no times are errors naming `odeint`
/// (and the first pair out of order); one time gives y0; repeated times
/// repeat the state; options out of range are errors naming the option.
#[test]
fn times_and_options_are_checked() {
    let mut engine = ode_engine();
    let cases = [
        (
            "(odeint decay 1.0 (tensor 0.0 2.0 1.0) 0.5)",
            "odeint: the times ts must be increasing or decreasing: ts[1] = 2.0 is followed by ts[2] = 1.0",
        ),
        (
            "(odeint decay 1.0 (tensor 3.0 1.0 2.0 0.0) 0.5 :method 'rk4 :dt 0.1)",
            "ts[1] = 1.0 is followed by ts[2] = 2.0",
        ),
        (
            "(odeint decay 1.0 (zeros 0) 0.5)",
            "odeint: the times ts are empty",
        ),
        (
            "(odeint decay 1.0 (tensor 0.0 (/ 0.0 0.0)) 0.5)",
            "odeint: the times ts hold a NaN",
        ),
        (
            "(odeint decay 1.0 (tensor '((0.0 1.0))) 0.5)",
            "odeint: the times ts must be a vector",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :rtol 0)",
            "odeint: :rtol must be a positive number",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :rtol -1e-8)",
            "odeint: :rtol must be a positive number",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :atol -1.0)",
            "odeint: :atol must be a number at least 0",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :max-steps 0)",
            "odeint: :max-steps must be a whole number",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :max-steps 2.5)",
            "odeint: :max-steps must be a whole number",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :dt 0.1)",
            "odeint: :dt sets the step of :method 'rk4",
        ),
        (
            "(odeint decay 1.0 ts 0.5 :method 'rk4 :dt (/ 0.0 0.0))",
            "odeint: :method 'rk4 needs a positive step :dt",
        ),
    ];
    for (form, want) in cases {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} should fail, gave {value}"),
            Err(message) => assert!(message.contains(want), "{form}: {message}"),
        }
    }
    for method in ["", ":method 'rk4 :dt 0.1"] {
        let one = values(
            &mut engine,
            &format!("(odeint decay 1.5 [0.3] 0.5 {method})"),
        );
        assert_eq!(one, vec![1.5], "{method}");
        let repeated = values(
            &mut engine,
            &format!(
                "(odeint decay 1.5 (tensor 0.0 1.0 1.0 2.0) 0.5 :rtol 1e-10 :atol 1e-10 {method})"
            ),
        );
        assert_eq!(repeated[1], repeated[2], "{method}: {repeated:?}");
        assert!(
            close(repeated[3], 1.5 * (-1.0f64).exp(), 1e-6),
            "{method}: {repeated:?}"
        );
    }
}

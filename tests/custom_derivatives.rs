//! `defderiv` (SPEC section 4 "Extensibility"): a function defined with its
//! partial derivatives, one rule for symbolic `diff`, reverse mode and
//! forward mode. Every derivative is checked against central finite
//! differences of the function run eagerly (outside any trace), at several
//! points; functions whose declared partial differs from the body's own
//! derivative show that the rule, not the body, is differentiated.

use epsilon::{Engine, Value};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use std::rc::Rc;

/// Finite-difference step and tolerance (relative to max(1, |want|)).
const H: f64 = 1e-5;
const FD_TOL: f64 = 1e-6;
/// Tolerance of results that are exact up to rounding.
const EXACT_TOL: f64 = 1e-12;

const DEFINITIONS: &str = r"
(defderiv softclip (x) (tanh x) ((- 1 (pow (tanh x) 2))))
(defderiv smooth-mul (x y)
  (* (sin x) (exp y))
  ((* (cos x) (exp y)) (* (sin x) (exp y))))
(defderiv myexp (x) (exp x) ((myexp x)))
;; Its rule says f' = f; its body (sin) disagrees from the first order.
(defderiv fake-exp (x) (sin x) ((fake-exp x)))
;; Deliberately different from the body's own derivative.
(defderiv seven (x) (sin x) (7))
(defderiv steep (x) (tanh x) ((* 2 x)))
(defderiv stopped-square (x) (* (stop-gradient x) x) ((* 2 x)))
";

fn engine() -> Engine {
    let mut engine = Engine::new();
    eval(&mut engine, DEFINITIONS);
    engine
}

fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|error| panic!("{source}\n{}", error.render()))
}

fn error_of(engine: &mut Engine, source: &str) -> String {
    match engine.eval(source) {
        Ok(value) => panic!("{source} should fail, gave {value}"),
        Err(error) => error.message().to_string(),
    }
}

fn call(engine: &mut Engine, f: &Value, args: Vec<Value>) -> Value {
    engine
        .call(f, &args)
        .unwrap_or_else(|error| panic!("call of {f}: {}", error.render()))
}

fn tensor(values: &[f64]) -> Value {
    Value::Tensor(Rc::new(
        ArrayD::from_shape_vec(IxDyn(&[values.len()]), values.to_vec()).unwrap(),
    ))
}

/// The numbers of a number, a tensor, or a (nested) list of them, flat.
fn numbers(value: &Value) -> Vec<f64> {
    match value {
        Value::Int(n) => vec![*n as f64],
        Value::Float(x) => vec![*x],
        Value::Tensor(t) => t.iter().copied().collect(),
        list if list.is_list() => list
            .list_to_vec()
            .unwrap()
            .iter()
            .flat_map(numbers)
            .collect(),
        other => panic!("expected numbers, got {other}"),
    }
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: got {got:?}, want {want:?}"
        );
    }
}

/// Central finite differences of the scalar function `f` of one vector
/// argument, run eagerly.
fn fd_gradient(engine: &mut Engine, f: &Value, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
            plus[i] += H;
            minus[i] -= H;
            let up = numbers(&call(engine, f, vec![tensor(&plus)]))[0];
            let down = numbers(&call(engine, f, vec![tensor(&minus)]))[0];
            (up - down) / (2.0 * H)
        })
        .collect()
}

/// Central finite differences of a scalar function of a scalar.
fn fd_scalar(engine: &mut Engine, f: &Value, x: f64) -> f64 {
    let up = numbers(&call(engine, f, vec![Value::Float(x + H)]))[0];
    let down = numbers(&call(engine, f, vec![Value::Float(x - H)]))[0];
    (up - down) / (2.0 * H)
}

const POINTS: &[&[f64]] = &[&[0.5, -1.0], &[0.0, 2.0, -0.3], &[1.7, -2.2, 0.1, 3.0]];

#[test]
fn reverse_and_forward_mode_agree_with_finite_differences() {
    let mut engine = engine();
    let f = eval(
        &mut engine,
        "(lambda (x) (sum (* [1 2 3 4] (softclip (* 2 (slice (concat (list x [0 0 0 0])) 0 4))))))",
    );
    let elementwise = eval(&mut engine, "(lambda (x) (softclip (* 2 x)))");
    let loss = eval(&mut engine, "(lambda (x) (sum (softclip x)))");
    for point in POINTS {
        let x = tensor(point);
        let want = fd_gradient(&mut engine, &loss, point);
        let grad = eval(&mut engine, "(grad (lambda (x) (sum (softclip x))))");
        assert_close(
            "grad",
            &numbers(&call(&mut engine, &grad, vec![x.clone()])),
            &want,
            FD_TOL,
        );
        let vg = eval(
            &mut engine,
            "(value-and-grad (lambda (x) (sum (softclip x))))",
        );
        let both = numbers(&call(&mut engine, &vg, vec![x.clone()]));
        let value = numbers(&call(&mut engine, &loss, vec![x.clone()]));
        assert_close("value-and-grad value", &both[..1], &value, EXACT_TOL);
        assert_close("value-and-grad gradient", &both[1..], &want, FD_TOL);
        // A weighted sum through a slice: the cotangent is not all ones.
        let want_f = fd_gradient(&mut engine, &f, point);
        let grad_f = eval(&mut engine, "grad");
        let grad_f = call(&mut engine, &grad_f, vec![f.clone()]);
        assert_close(
            "weighted grad",
            &numbers(&call(&mut engine, &grad_f, vec![x.clone()])),
            &want_f,
            FD_TOL,
        );
        // jvp in each unit direction is a column of the (diagonal) Jacobian.
        let n = point.len();
        let jvp = eval(&mut engine, "jvp");
        let vjp = eval(&mut engine, "vjp");
        for i in 0..n {
            let mut unit = vec![0.0; n];
            unit[i] = 1.0;
            let (mut plus, mut minus) = (point.to_vec(), point.to_vec());
            plus[i] += H;
            minus[i] -= H;
            let up = numbers(&call(&mut engine, &elementwise, vec![tensor(&plus)]));
            let down = numbers(&call(&mut engine, &elementwise, vec![tensor(&minus)]));
            let column: Vec<f64> = up
                .iter()
                .zip(&down)
                .map(|(u, d)| (u - d) / (2.0 * H))
                .collect();
            let args = Value::list(vec![x.clone()]);
            let out = call(
                &mut engine,
                &jvp,
                vec![
                    elementwise.clone(),
                    args.clone(),
                    Value::list(vec![tensor(&unit)]),
                ],
            );
            let parts = out.list_to_vec().unwrap();
            assert_close(
                "jvp value",
                &numbers(&parts[0]),
                &numbers(&call(&mut engine, &elementwise, vec![x.clone()])),
                EXACT_TOL,
            );
            assert_close("jvp tangent", &numbers(&parts[1]), &column, FD_TOL);
            let out = call(
                &mut engine,
                &vjp,
                vec![elementwise.clone(), args, tensor(&unit)],
            );
            let parts = out.list_to_vec().unwrap();
            // The Jacobian is diagonal: row i is the same as column i.
            assert_close("vjp cotangent", &numbers(&parts[1]), &column, FD_TOL);
        }
        // jit: the same numbers as the eager function.
        let jit = eval(&mut engine, "(jit (lambda (x) (softclip (* 2 x))))");
        assert_close(
            "jit",
            &numbers(&call(&mut engine, &jit, vec![x.clone()])),
            &numbers(&call(&mut engine, &elementwise, vec![x])),
            EXACT_TOL,
        );
    }
}

#[test]
fn two_arguments_broadcast_like_elementwise_built_ins() {
    let mut engine = engine();
    // x a vector, y a number broadcast against it: y's gradient is summed.
    let g = eval(
        &mut engine,
        "((grad (lambda (x y) (sum (* [1 -2 3] (smooth-mul x y)))) :wrt 'all) [0.3 -1.1 2.0] 0.4)",
    );
    let got = numbers(&g);
    let fx = eval(
        &mut engine,
        "(lambda (x) (sum (* [1 -2 3] (smooth-mul x 0.4))))",
    );
    let fy = eval(
        &mut engine,
        "(lambda (y) (sum (* [1 -2 3] (smooth-mul [0.3 -1.1 2.0] y))))",
    );
    let mut want = fd_gradient(&mut engine, &fx, &[0.3, -1.1, 2.0]);
    want.push(fd_scalar(&mut engine, &fy, 0.4));
    assert_close("grad of both arguments", &got, &want, FD_TOL);
    // Forward mode with a tangent for each argument.
    let out = eval(
        &mut engine,
        "(jvp (lambda (x y) (sum (smooth-mul x y))) (list [0.3 -1.1 2.0] 0.4) (list [1 0 2] 0.5))",
    );
    let tangent = numbers(&out)[1];
    let (x, y) = ([0.3f64, -1.1, 2.0], 0.4f64);
    let t = [1.0, 0.0, 2.0];
    let want: f64 = x
        .iter()
        .zip(&t)
        .map(|(xi, ti)| xi.cos() * y.exp() * ti + xi.sin() * y.exp() * 0.5)
        .sum();
    assert_close("jvp of two arguments", &[tangent], &[want], 1e-12);
}

#[test]
fn second_order_differentiates_the_declared_partial() {
    let mut engine = engine();
    let grad = eval(&mut engine, "(grad (lambda (x) (sum (softclip x))))");
    for point in POINTS {
        let x = tensor(point);
        let hessian = eval(&mut engine, "(hessian (lambda (x) (sum (softclip x))))");
        let h = numbers(&call(&mut engine, &hessian, vec![x.clone()]));
        let n = point.len();
        // Row i: finite differences of the gradient's i-th entry.
        for i in 0..n {
            let (mut plus, mut minus) = (point.to_vec(), point.to_vec());
            plus[i] += H;
            minus[i] -= H;
            let up = numbers(&call(&mut engine, &grad, vec![tensor(&plus)]));
            let down = numbers(&call(&mut engine, &grad, vec![tensor(&minus)]));
            let column: Vec<f64> = up
                .iter()
                .zip(&down)
                .map(|(u, d)| (u - d) / (2.0 * H))
                .collect();
            assert_close("hessian column", &h[i * n..(i + 1) * n], &column, FD_TOL);
        }
        // hvp with the first unit vector is the first column.
        let mut unit = vec![0.0; n];
        unit[0] = 1.0;
        let hvp = eval(&mut engine, "hvp");
        let f = eval(&mut engine, "(lambda (x) (sum (softclip x)))");
        let out = call(
            &mut engine,
            &hvp,
            vec![f, Value::list(vec![x]), tensor(&unit)],
        );
        let column: Vec<f64> = (0..n).map(|j| h[j * n]).collect();
        assert_close("hvp", &numbers(&out), &column, 1e-12);
    }
    // The second derivative of `steep` is d/dx (2x) = 2, whatever tanh'' is.
    for x in [-1.5, 0.0, 0.7] {
        let source = format!("((grad (grad steep)) {x})");
        assert_close(
            "grad of grad",
            &numbers(&eval(&mut engine, &source)),
            &[2.0],
            EXACT_TOL,
        );
        let source = format!("((hessian (lambda (x) (sum (steep x)))) [{x} 1.0])");
        assert_close(
            "hessian",
            &numbers(&eval(&mut engine, &source)),
            &[2.0, 0.0, 0.0, 2.0],
            EXACT_TOL,
        );
    }
    // A partial written with the function itself: every order is exp.
    for x in [-0.5, 0.3, 1.2] {
        let want = f64::exp(x);
        for order in 1..=4 {
            let mut f = "myexp".to_string();
            for _ in 0..order {
                f = format!("(grad {f})");
            }
            let got = numbers(&eval(&mut engine, &format!("({f} {x})")))[0];
            assert!(
                (got - want).abs() <= 1e-12 * want,
                "order {order} at {x}: {got} vs {want}"
            );
            // Up to order 4 the rule f' = f holds for fake-exp too.
            let fake = f.replace("myexp", "fake-exp");
            let got = numbers(&eval(&mut engine, &format!("({fake} {x})")))[0];
            assert!(
                (got - x.sin()).abs() <= 1e-12,
                "fake-exp order {order} at {x}: {got}"
            );
        }
    }
}

#[test]
fn the_declared_rule_is_used_not_the_body() {
    let mut engine = engine();
    // seven: body sin, declared derivative 7.
    assert_close(
        "value",
        &numbers(&eval(&mut engine, "(seven 1.0)")),
        &[1f64.sin()],
        EXACT_TOL,
    );
    assert_close(
        "grad",
        &numbers(&eval(&mut engine, "((grad seven) 1.0)")),
        &[7.0],
        EXACT_TOL,
    );
    assert_close(
        "grad of grad",
        &numbers(&eval(&mut engine, "((grad (grad seven)) 1.0)")),
        &[0.0],
        EXACT_TOL,
    );
    let jvp = numbers(&eval(&mut engine, "(jvp seven (list 1.0) (list 0.5))"));
    assert_close("jvp", &jvp[1..], &[3.5], EXACT_TOL);
    let vjp = numbers(&eval(
        &mut engine,
        "(vjp (lambda (x) (seven x)) (list [1.0 2.0]) [1 2])",
    ));
    assert_close("vjp", &vjp[2..], &[7.0, 14.0], EXACT_TOL);
    assert_close(
        "symbolic diff",
        &numbers(&eval(&mut engine, "(diff '(seven (* 2 x)) 'x)")),
        &[14.0],
        EXACT_TOL,
    );
    // A formula (lambdify) inside a traced function uses the rule too.
    let g = eval(
        &mut engine,
        "((grad (lambda (x) ((lambdify '(y) '(seven y)) x))) 0.3)",
    );
    assert_close("lambdify inside grad", &numbers(&g), &[7.0], EXACT_TOL);
    // The body's own derivative through stop-gradient would be x; the
    // declared one is 2x.
    let g = eval(&mut engine, "((grad stopped-square) 3.0)");
    assert_close("stop-gradient body", &numbers(&g), &[6.0], EXACT_TOL);
    // Inside a scan step.
    let g = eval(
        &mut engine,
        "((grad (lambda (x) (scan (lambda (s i) (seven s)) x 3))) 0.2)",
    );
    assert_close("scan", &numbers(&g), &[343.0], EXACT_TOL);
}

#[test]
fn scan_steps_agree_with_finite_differences() {
    let mut engine = engine();
    let f = eval(
        &mut engine,
        "(lambda (x) (sum (scan (lambda (s i) (softclip (* 1.5 s))) x 5)))",
    );
    let grad = eval(&mut engine, "grad");
    let g = call(&mut engine, &grad, vec![f.clone()]);
    for point in POINTS {
        let want = fd_gradient(&mut engine, &f, point);
        assert_close(
            "grad through scan",
            &numbers(&call(&mut engine, &g, vec![tensor(point)])),
            &want,
            FD_TOL,
        );
    }
}

/// The value of a quoted expression of x at `x` (evaluate).
fn evaluate_at(engine: &mut Engine, expr: &str, x: f64) -> f64 {
    numbers(&eval(engine, &format!("(evaluate '{expr} '((x {x})))")))[0]
}

#[test]
fn symbolic_results_agree_with_finite_differences() {
    let mut engine = engine();
    for expr in [
        "(softclip (* 2 x))",
        "(* x (softclip (sin x)))",
        "(smooth-mul x (* x x))",
        "(myexp (softclip x))",
    ] {
        let first = eval(&mut engine, &format!("(diff '{expr} 'x)")).to_string();
        let second = eval(&mut engine, &format!("(diff '{expr} 'x 2)")).to_string();
        let simplified = eval(&mut engine, &format!("(simplify '{expr})")).to_string();
        for x in [-1.3, 0.2, 0.9] {
            let value = evaluate_at(&mut engine, expr, x);
            let through_simplify = evaluate_at(&mut engine, &simplified, x);
            assert!(
                (value - through_simplify).abs() <= 1e-12 * value.abs().max(1.0),
                "{expr}: simplify"
            );
            let fd = (evaluate_at(&mut engine, expr, x + H)
                - evaluate_at(&mut engine, expr, x - H))
                / (2.0 * H);
            let got = evaluate_at(&mut engine, &first, x);
            assert!(
                (got - fd).abs() <= FD_TOL * fd.abs().max(1.0),
                "{expr}: d/dx = {first} gives {got}, fd {fd}"
            );
            let fd2 = (evaluate_at(&mut engine, &first, x + H)
                - evaluate_at(&mut engine, &first, x - H))
                / (2.0 * H);
            let got2 = evaluate_at(&mut engine, &second, x);
            assert!(
                (got2 - fd2).abs() <= FD_TOL * fd2.abs().max(1.0),
                "{expr}: d2/dx2 = {second} gives {got2}, fd {fd2}"
            );
        }
    }
    // The chain rule with the declared partial: d/dx softclip(2x) is
    // 2 (1 - tanh(2x)^2).
    let first = eval(&mut engine, "(diff '(softclip (* 2 x)) 'x)").to_string();
    for x in [-0.4f64, 0.6] {
        let want = 2.0 * (1.0 - (2.0 * x).tanh().powi(2));
        assert!((evaluate_at(&mut engine, &first, x) - want).abs() < 1e-12);
    }
    // grad and hessian of two variables, and lambdify on tensors.
    let grad = eval(&mut engine, "(grad '(* y (softclip x)) '(x y))");
    let at = "'((x 0.3) (y -1.2))";
    let g = numbers(&eval(&mut engine, &format!("(evaluate '{grad} {at})")));
    let t = 0.3f64.tanh();
    assert_close("symbolic grad", &g, &[-1.2 * (1.0 - t * t), t], 1e-12);
    let hessian = eval(&mut engine, "(hessian '(* y (softclip x)) '(x y))");
    let h = numbers(&eval(&mut engine, &format!("(evaluate '{hessian} {at})")));
    let d2 = -2.0 * t * (1.0 - t * t);
    assert_close(
        "symbolic hessian",
        &h,
        &[-1.2 * d2, 1.0 - t * t, 1.0 - t * t, 0.0],
        1e-12,
    );
    let lambdified = numbers(&eval(
        &mut engine,
        "((lambdify '(x) '(softclip (* 2 x))) [0.25 1])",
    ));
    assert_close(
        "lambdify",
        &lambdified,
        &[0.5f64.tanh(), 2f64.tanh()],
        1e-15,
    );
}

#[test]
fn errors_are_reported_without_panics() {
    let mut engine = engine();
    let cases: &[(&str, &str)] = &[
        (
            "(defderiv f (x) (sin x) ((cos x) 2))",
            "1 parameter needs 1 partial derivative, got 2",
        ),
        (
            "(defderiv g (x y) (* x y) (y))",
            "2 parameters need 2 partial derivatives, got 1",
        ),
        ("(defderiv f (x) (sin x) 5)", "must be a list"),
        ("(defderiv f (x) (sin x))", "defderiv takes a name"),
        (
            "(defderiv if (x) (sin x) ((cos x)))",
            "if is a special form",
        ),
        (
            "(defderiv sin (x) (sin x) ((cos x)))",
            "sin is a built-in function",
        ),
        (
            "(defderiv dotimes (x) (sin x) ((cos x)))",
            "dotimes is a macro",
        ),
        (
            "(defderiv (f) (x) (sin x) ((cos x)))",
            "the name must be a symbol",
        ),
        (
            "(defderiv f x (sin x) ((cos x)))",
            "the parameters must be a list of symbols",
        ),
        ("(softclip 1 2)", "softclip takes 1 argument, got 2"),
        (
            "((grad (lambda (x) (softclip x x))) 1.0)",
            "softclip takes 1 argument, got 2",
        ),
        (
            "(diff '(softclip x x) 'x)",
            "softclip takes 1 argument, got 2",
        ),
    ];
    for (source, message) in cases {
        let error = error_of(&mut engine, source);
        assert!(error.contains(message), "{source}: {error}");
    }
    // Partials that do not evaluate: an unbound name, a string, a shape
    // that is not elementwise.
    eval(
        &mut engine,
        "(defderiv unbound-partial (x) (sin x) ((cos y)))",
    );
    assert_close(
        "value still works",
        &numbers(&eval(&mut engine, "(unbound-partial 1.0)")),
        &[1f64.sin()],
        EXACT_TOL,
    );
    let error = error_of(&mut engine, "((grad unbound-partial) 1.0)");
    assert!(
        error.contains("partial derivative with respect to x") && error.contains("y"),
        "{error}"
    );
    let error = error_of(&mut engine, "(diff '(unbound-partial x) 'x)");
    assert!(error.contains("not symbolic expressions"), "{error}");
    eval(
        &mut engine,
        "(defderiv string-partial (x) (sin x) (\"one\"))",
    );
    let error = error_of(&mut engine, "((grad string-partial) 1.0)");
    assert!(error.contains("must be a number or tensor"), "{error}");
    eval(&mut engine, "(defderiv reduction (x) (sum x) (1))");
    let error = error_of(&mut engine, "((grad reduction) [1 2])");
    assert!(error.contains("elementwise"), "{error}");
    let error = error_of(&mut engine, "(evaluate '(reduction x) '((x 1)))");
    assert!(error.contains("not a symbolic expression"), "{error}");
    // A partial that is Lisp but not a formula: numeric works, symbolic
    // says why not.
    eval(
        &mut engine,
        "(defderiv branchy (x) (abs x) ((if (> x 0) 1 -1)))",
    );
    assert_close(
        "numeric branchy",
        &numbers(&eval(&mut engine, "((grad branchy) -2.0)")),
        &[-1.0],
        EXACT_TOL,
    );
    let error = error_of(&mut engine, "(diff '(branchy x) 'x)");
    assert!(
        error.contains("branchy's partial derivatives are not symbolic"),
        "{error}"
    );
    // The engine still works.
    assert_close(
        "after errors",
        &numbers(&eval(&mut engine, "((grad softclip) 0.0)")),
        &[1.0],
        EXACT_TOL,
    );
}

#[test]
fn redefinition_and_documentation() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(defderiv twice (x) \"Doubles x.\" (* 2 x) (2))",
    );
    assert_eq!(
        engine.doc("twice").as_deref(),
        Some("(twice x)\n  Doubles x.")
    );
    assert!(
        engine
            .doc("defderiv")
            .unwrap()
            .contains("partial derivatives")
    );
    eval(&mut engine, "(defderiv twice (x) (* 3 x) (3))");
    assert_close(
        "redefined",
        &numbers(&eval(&mut engine, "((grad twice) 1.0)")),
        &[3.0],
        EXACT_TOL,
    );
    assert_close(
        "redefined symbolic",
        &numbers(&eval(&mut engine, "(diff '(twice x) 'x)")),
        &[3.0],
        EXACT_TOL,
    );
    // A global number in a partial is that number in the symbolic form.
    eval(
        &mut engine,
        "(define k 4) (defderiv scaled (x) (* k x) (k))",
    );
    assert_close(
        "global number",
        &numbers(&eval(&mut engine, "(diff '(scaled (* x x)) 'x 2)")),
        &[8.0],
        EXACT_TOL,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The gradient of a defderiv function at random points equals the
    /// declared partial (and finite differences of the eager function).
    #[test]
    fn gradient_at_random_points(xs in prop::collection::vec(-3.0f64..3.0, 1..6), w in -2.0f64..2.0) {
        thread_local! {
            static ENGINE: std::cell::RefCell<Engine> = std::cell::RefCell::new(engine());
        }
        ENGINE.with(|cell| {
            let mut engine = cell.borrow_mut();
            let engine = &mut *engine;
            let f = eval(engine, &format!("(lambda (x) (sum (smooth-mul x (* {w} x))))"));
            let grad = eval(engine, "grad");
            let g = call(engine, &grad, vec![f.clone()]);
            let got = numbers(&call(engine, &g, vec![tensor(&xs)]));
            let want: Vec<f64> = xs
                .iter()
                .map(|&x| {
                    let e = (w * x).exp();
                    x.cos() * e + x.sin() * e * w
                })
                .collect();
            assert_close("declared rule", &got, &want, 1e-12);
            let fd = fd_gradient(engine, &f, &xs);
            assert_close("finite differences", &got, &fd, 1e-5);
        });
    }
}

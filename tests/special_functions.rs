//! The special functions (`lgamma`, `digamma`, `polygamma`, `erf`, `erfc`,
//! `multigammaln`) against mpmath: the table tests/data/special_functions.tsv
//! (written by bench/reference/special_functions.py) through the scalar
//! kernels, the Lisp built-ins on numbers and tensors, symbolic `evaluate`;
//! values at poles, infinities and NaN; identities at random points.

use epsilon::scalar::erf::{erf, erfc};
use epsilon::scalar::gamma::{digamma, lgamma, polygamma};
use epsilon::symbolic;
use epsilon::{Engine, Value};
use proptest::prelude::*;

/// One row of the reference table.
struct Row {
    function: String,
    args: Vec<f64>,
    expected: f64,
    rtol: f64,
}

fn table() -> Vec<Row> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/special_functions.tsv"
    );
    let text = std::fs::read_to_string(path).expect("tests/data/special_functions.tsv is readable");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("function\targs\texpected\trtol"));
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 4, "{line}");
            let number = |s: &str| s.parse::<f64>().expect("a number");
            Row {
                function: fields[0].to_string(),
                args: fields[1].split(' ').map(number).collect(),
                expected: number(fields[2]),
                rtol: number(fields[3]),
            }
        })
        .collect()
}

/// The scalar kernel's value for a row (multigammaln as its definition).
fn kernel(row: &Row) -> f64 {
    let a = &row.args;
    match row.function.as_str() {
        "lgamma" => lgamma(a[0]),
        "digamma" => digamma(a[0]),
        "polygamma" => polygamma(a[0], a[1]),
        "erf" => erf(a[0]),
        "erfc" => erfc(a[0]),
        "multigammaln" => {
            let p = a[1];
            let mut sum = lgamma(a[0]);
            let mut j = 2.0;
            while j <= p {
                sum += lgamma(a[0] + (1.0 - j) / 2.0);
                j += 1.0;
            }
            sum + p * (p - 1.0) / 4.0 * std::f64::consts::PI.ln()
        }
        other => panic!("unknown function {other} in the table"),
    }
}

fn relative_error(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        (got - want).abs() / want.abs()
    }
}

#[test]
fn kernels_match_mpmath_within_the_tolerance_of_each_row() {
    let rows = table();
    assert!(rows.len() > 600, "{} rows", rows.len());
    let mut failures = Vec::new();
    let mut worst: std::collections::BTreeMap<String, f64> = Default::default();
    for row in &rows {
        let got = kernel(row);
        let error = relative_error(got, row.expected);
        let entry = worst.entry(row.function.clone()).or_insert(0.0);
        *entry = entry.max(error);
        if error.is_nan() || error > row.rtol {
            failures.push(format!(
                "{}({:?}) = {got:e}, mpmath {:e}, relative error {error:e}",
                row.function, row.args, row.expected
            ));
        }
    }
    eprintln!("worst relative errors: {worst:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|error| panic!("{source}\n{}", error.render()))
}

fn numbers(value: &Value) -> Vec<f64> {
    match value {
        Value::Float(x) => vec![*x],
        Value::Int(n) => vec![*n as f64],
        Value::Tensor(t) => t.iter().copied().collect(),
        other => panic!("expected numbers, got {other}"),
    }
}

#[test]
fn builtins_on_tensors_give_the_kernels_values_for_every_row() {
    // One tensor per function (and order or dimension): the eager
    // built-ins and symbolic `evaluate` through `lambdify` agree with the
    // scalar kernels bit for bit.
    let mut engine = Engine::new();
    let rows = table();
    let mut groups: std::collections::BTreeMap<(String, i64), Vec<&Row>> = Default::default();
    for row in &rows {
        let key = match row.function.as_str() {
            "polygamma" => row.args[0] as i64,
            "multigammaln" => row.args[1] as i64,
            _ => 0,
        };
        groups
            .entry((row.function.clone(), key))
            .or_default()
            .push(row);
    }
    for ((function, key), rows) in groups {
        let xs: Vec<String> = rows
            .iter()
            .map(|r| {
                let x = if function == "polygamma" {
                    r.args[1]
                } else {
                    r.args[0]
                };
                format!("{x:?}")
            })
            .collect();
        let tensor = format!("(tensor (list {}))", xs.join(" "));
        let (call, formula) = match function.as_str() {
            "polygamma" => (
                format!("(polygamma {key} {tensor})"),
                format!("'(polygamma {key} x)"),
            ),
            "multigammaln" => (
                format!("(multigammaln {tensor} {key})"),
                format!("'(multigammaln x {key})"),
            ),
            f => (format!("({f} {tensor})"), format!("'({f} x)")),
        };
        let got = numbers(&eval(&mut engine, &call));
        let lambdified = numbers(&eval(
            &mut engine,
            &format!("((lambdify '(x) {formula}) {tensor})"),
        ));
        for (k, row) in rows.iter().enumerate() {
            let want = kernel(row);
            if function == "multigammaln" {
                // A composition: the same terms, summed in the same order.
                assert!(
                    relative_error(got[k], want) <= 1e-15,
                    "{call}: element {k} is {}, the kernel gives {want}",
                    got[k]
                );
                assert!(relative_error(lambdified[k], row.expected) <= row.rtol);
            } else {
                assert_eq!(got[k].to_bits(), want.to_bits(), "{call}: element {k}");
                assert_eq!(
                    lambdified[k].to_bits(),
                    want.to_bits(),
                    "{formula}: element {k}"
                );
            }
        }
    }
}

#[test]
fn poles_infinities_and_nan_follow_scipy() {
    let inf = f64::INFINITY;
    let same =
        |got: f64, want: f64| got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
    let cases: &[(&str, f64, f64)] = &[
        ("lgamma", 0.0, inf),
        ("lgamma", -0.0, inf),
        ("lgamma", -3.0, inf),
        ("lgamma", -1e20, inf),
        ("lgamma", inf, inf),
        ("lgamma", -inf, inf),
        ("lgamma", f64::NAN, f64::NAN),
        ("lgamma", 1.0, 0.0),
        ("lgamma", 2.0, 0.0),
        ("lgamma", 1e306, inf),
        ("digamma", 0.0, -inf),
        ("digamma", -0.0, inf),
        ("digamma", -2.0, f64::NAN),
        ("digamma", inf, inf),
        ("digamma", -inf, f64::NAN),
        ("digamma", f64::NAN, f64::NAN),
        ("erf", inf, 1.0),
        ("erf", -inf, -1.0),
        ("erf", 0.0, 0.0),
        ("erf", -0.0, -0.0),
        ("erf", f64::NAN, f64::NAN),
        ("erfc", inf, 0.0),
        ("erfc", -inf, 2.0),
        ("erfc", 30.0, 0.0),
        ("erfc", f64::NAN, f64::NAN),
    ];
    for &(name, x, want) in cases {
        let got = match name {
            "lgamma" => lgamma(x),
            "digamma" => digamma(x),
            "erf" => erf(x),
            _ => erfc(x),
        };
        assert!(same(got, want), "{name}({x}) = {got}, want {want}");
    }
    // polygamma: (-1)^(n+1) inf at the poles, signed zeros at +inf, NaN
    // for orders that are not whole numbers in [0, 170].
    for (n, x, want) in [
        (1.0, 0.0, inf),
        (1.0, -1.0, inf),
        (2.0, 0.0, -inf),
        (2.0, -3.0, -inf),
        (1.0, inf, 0.0),
        (2.0, inf, -0.0),
        (1.0, -inf, f64::NAN),
        (0.0, 0.0, -inf),
        (1.5, 2.0, f64::NAN),
        (-1.0, 2.0, f64::NAN),
        (171.0, 2.0, f64::NAN),
        (63.0, -0.5, f64::NAN),
        (f64::NAN, 2.0, f64::NAN),
    ] {
        let got = polygamma(n, x);
        assert!(same(got, want), "polygamma({n}, {x}) = {got}, want {want}");
    }
    assert_eq!(polygamma(0.0, 3.7), digamma(3.7));
    // The tail of erfc keeps its relative accuracy.
    assert!(relative_error(erfc(10.0), 2.088_487_583_762_545e-45) < 1e-15);
}

#[test]
fn multigammaln_domain_and_arguments() {
    let mut engine = Engine::new();
    let below = numbers(&eval(&mut engine, "(multigammaln [0.9 1.0 1.1] 3)"));
    assert!(below[0].is_nan(), "NaN below (p - 1)/2: {below:?}");
    assert_eq!(below[1], f64::INFINITY, "+inf at (p - 1)/2");
    assert!(below[2].is_finite());
    for (source, message) in [
        (
            "(multigammaln 2.0 0)",
            "the dimension p must be a whole number",
        ),
        (
            "(multigammaln 2.0 1.5)",
            "the dimension p must be a whole number",
        ),
        (
            "(multigammaln 2.0 [1 2])",
            "the dimension p must be a whole number",
        ),
        ("(polygamma 0.5 2.0)", "the order n must be a whole number"),
        ("(polygamma -1 2.0)", "the order n must be a whole number"),
        ("(lgamma \"x\")", "expected a number or tensor"),
        ("(diff '(multigammaln x y) 'x)", "whole number p"),
        (
            "(diff '(multigammaln x) 'x)",
            "multigammaln takes 2 arguments",
        ),
    ] {
        match engine.eval(source) {
            Ok(value) => panic!("{source} gave {value}, not an error"),
            Err(error) => assert!(
                error.render().contains(message),
                "{source}: {}",
                error.render()
            ),
        }
    }
    // Traced, the domain is kept: NaN below, and the gradient of the
    // selected branch (the sum of digammas) above.
    let g = numbers(&eval(
        &mut engine,
        "((grad (lambda (x) (sum (multigammaln x 2)))) [2.0 3.5])",
    ));
    for (k, x) in [2.0f64, 3.5].iter().enumerate() {
        let want = digamma(*x) + digamma(x - 0.5);
        assert!(relative_error(g[k], want) < 1e-15, "{g:?}");
    }
    let traced = numbers(&eval(
        &mut engine,
        "(first ((value-and-grad (lambda (x) (sum (multigammaln x 2)))) [0.2]))",
    ));
    assert!(traced[0].is_nan(), "{traced:?}");
}

#[test]
fn symbolic_derivatives_name_the_next_function() {
    for (expr, n, want) in [
        ("(lgamma x)", 1, "(digamma x)"),
        ("(digamma x)", 1, "(polygamma 1 x)"),
        ("(lgamma x)", 3, "(polygamma 2 x)"),
        ("(polygamma 2 x)", 1, "(polygamma 3 x)"),
        ("(multigammaln x 1)", 1, "(digamma x)"),
    ] {
        let got = symbolic::diff_n(expr, "x", n).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(got.to_string(), want, "d^{n}/dx^{n} {expr}");
    }
}

/// A symbolic derivative against a central finite difference of the
/// expression, both through `evaluate`.
fn check_symbolic(expr: &str, x: f64) -> Result<(), TestCaseError> {
    let value = |e: &symbolic::Expr, x: f64| {
        let mut engine = Engine::new();
        let source = format!("(evaluate '{e} '((x {x:?})))");
        engine.eval(&source).ok().and_then(|v| v.as_f64().ok())
    };
    let parsed = symbolic::Expr::parse(expr).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let derivative = symbolic::diff(expr, "x").map_err(|e| TestCaseError::fail(e.to_string()))?;
    let h = 1e-6 * x.abs().max(1.0);
    let (Some(up), Some(down), Some(got)) = (
        value(&parsed, x + h),
        value(&parsed, x - h),
        value(&derivative, x),
    ) else {
        return Err(TestCaseError::fail(format!(
            "{expr} does not evaluate at {x}"
        )));
    };
    let fd = (up - down) / (2.0 * h);
    prop_assert!(
        (got - fd).abs() <= 1e-6 * fd.abs().max(1.0),
        "d/dx {expr} at {x}: {derivative} = {got}, finite difference {fd}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn lgamma_recurrence_and_reflection(x in 0.01f64..60.0) {
        // lgamma(x + 1) = lgamma(x) + ln x.
        let lhs = lgamma(x + 1.0);
        let rhs = lgamma(x) + x.ln();
        prop_assert!((lhs - rhs).abs() <= 1e-13 * lhs.abs().max(1.0), "{lhs} {rhs}");
        // Reflection: lgamma(-x) = ln(pi / |x sin(pi x)|) - lgamma(x), away from the poles.
        let r = x - x.round();
        prop_assume!(r.abs() > 1e-3);
        let mirrored = (std::f64::consts::PI / (x * (std::f64::consts::PI * r).sin()).abs()).ln() - lgamma(x);
        prop_assert!((lgamma(-x) - mirrored).abs() <= 1e-12 * mirrored.abs().max(1.0));
    }

    #[test]
    fn digamma_and_polygamma_recurrences(x in 0.01f64..60.0, n in 1u32..6) {
        // psi(x + 1) = psi(x) + 1/x; psi^(n)(x + 1) = psi^(n)(x) + (-1)^n n! / x^(n+1).
        let lhs = digamma(x + 1.0);
        let rhs = digamma(x) + 1.0 / x;
        prop_assert!((lhs - rhs).abs() <= 1e-13 * lhs.abs().max(1.0 / x), "{lhs} {rhs}");
        let n = f64::from(n);
        let factorial: f64 = (1..=n as u32).map(f64::from).product();
        let sign = if n % 2.0 == 0.0 { 1.0 } else { -1.0 };
        let lhs = polygamma(n, x + 1.0);
        let rhs = polygamma(n, x) + sign * factorial / x.powf(n + 1.0);
        prop_assert!((lhs - rhs).abs() <= 1e-12 * polygamma(n, x).abs(), "{lhs} {rhs}");
    }

    #[test]
    fn erf_and_erfc_complement_each_other(x in -8.0f64..8.0) {
        prop_assert!((erf(x) + erfc(x) - 1.0).abs() <= 1e-15);
        prop_assert_eq!(erf(-x).to_bits(), (-erf(x)).to_bits());
        prop_assert!((erfc(-x) - (2.0 - erfc(x))).abs() <= 1e-15);
    }

    #[test]
    fn symbolic_derivatives_match_finite_differences(
        expr in prop::sample::select(vec![
            "(lgamma x)",
            "(lgamma (* x x))",
            "(digamma (+ 0.5 x))",
            "(polygamma 1 (+ 1 x))",
            "(polygamma 3 x)",
            "(erf (* 1.5 x))",
            "(erfc (- x 1))",
            "(* (erf x) (lgamma x))",
            "(multigammaln (+ x 1) 4)",
        ]),
        x in 0.3f64..4.0,
    ) {
        check_symbolic(expr, x)?;
    }
}

//! Symbolic differentiation (SPEC section 4) checked against oracles, as
//! STYLE.md section 8 asks: the SymPy table `tests/data/derivatives.tsv`
//! (value, central finite difference, and `grad` agreeing with `diff`),
//! proptest properties for every differentiable operator against finite
//! differences, higher derivatives, Hessians (exact symmetry and finite
//! differences of the gradient), and the Lisp builtins `jacobian`,
//! `evaluate` and `lambdify`.

use epsilon::symbolic::{self, Expr};
use epsilon::{Engine, Value};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

// ---------------------------------------------------------------- helpers

/// A point: one value per variable name.
type Point = Vec<(String, f64)>;

/// Derivative results, computed once per (expression, variables) and thread.
#[derive(Default)]
struct Cache {
    diffs: HashMap<(String, String), Result<Expr, String>>,
    grads: HashMap<(String, Vec<String>), Result<Vec<Expr>, String>>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// `symbolic::diff(expr, var)`, cached.
fn cached_diff(expr: &str, var: &str) -> Result<Expr, String> {
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .diffs
            .entry((expr.to_string(), var.to_string()))
            .or_insert_with(|| {
                symbolic::diff(expr, var).map_err(|err| format!("diff failed: {err}"))
            })
            .clone()
    })
}

/// `symbolic::grad(expr, vars)`, cached.
fn cached_grad(expr: &str, vars: &[String]) -> Result<Vec<Expr>, String> {
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .grads
            .entry((expr.to_string(), vars.to_vec()))
            .or_insert_with(|| {
                let names: Vec<&str> = vars.iter().map(String::as_str).collect();
                symbolic::grad(expr, &names).map_err(|err| format!("grad failed: {err}"))
            })
            .clone()
    })
}

fn point_of(pairs: &[(&str, f64)]) -> Point {
    pairs
        .iter()
        .map(|&(name, value)| (name.to_string(), value))
        .collect()
}

/// A point written `x=0.7 y=-1.3`.
fn parse_point(text: &str) -> Point {
    text.split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=').expect("name=value");
            (name.to_string(), value.parse::<f64>().expect("a number"))
        })
        .collect()
}

fn show_point(point: &[(String, f64)]) -> String {
    let parts: Vec<String> = point
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    parts.join(" ")
}

/// The value of `expr` at `point`.
fn eval_at(expr: &Expr, point: &[(String, f64)]) -> Result<f64, String> {
    let bindings: Vec<(&str, f64)> = point
        .iter()
        .map(|(name, value)| (name.as_str(), *value))
        .collect();
    expr.eval(&bindings)
        .map_err(|err| format!("eval of {expr} failed: {err}"))
}

/// Central finite difference of `expr` in `var` at `point`,
/// h = 1e-6 * max(1, |x|).
fn central_difference(expr: &Expr, var: &str, point: &[(String, f64)]) -> Result<f64, String> {
    let index = point
        .iter()
        .position(|(name, _)| name == var)
        .ok_or_else(|| format!("{var} is not a coordinate of the point"))?;
    let x = point[index].1;
    let h = 1e-6 * x.abs().max(1.0);
    let mut shifted = point.to_vec();
    shifted[index].1 = x + h;
    let above = eval_at(expr, &shifted)?;
    shifted[index].1 = x - h;
    let below = eval_at(expr, &shifted)?;
    Ok((above - below) / (2.0 * h))
}

/// |got - want| <= tol * max(1, |want|); false on NaN.
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

fn parse(text: &str) -> Expr {
    Expr::parse(text).unwrap_or_else(|err| panic!("{text} does not parse: {err}"))
}

// ------------------------------------------------------ the SymPy table

/// One row of `tests/data/derivatives.tsv`.
struct Row {
    expr: String,
    var: String,
    point: Point,
    expected: f64,
}

fn read_table() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/derivatives.tsv");
    let text = std::fs::read_to_string(path).expect("tests/data/derivatives.tsv is readable");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("expr\tvar\tpoint\texpected"),
        "table header"
    );
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 4, "four tab-separated fields: {line}");
            let point = parse_point(fields[2]);
            Row {
                expr: fields[0].to_string(),
                var: fields[1].to_string(),
                point,
                expected: fields[3].parse().expect("expected is a number"),
            }
        })
        .collect()
}

/// The single place that checks a table row: (a) the symbolic derivative
/// evaluates to the SymPy value, (b) it agrees with a central finite
/// difference of the expression, (c) `grad` over all the point's variables
/// gives the same partial, (d) the printed derivative reads back to the same
/// value (the Hessian test compares printed entries).
fn check_row(row: &Row) -> Result<(), String> {
    let derivative = cached_diff(&row.expr, &row.var)?;
    let got = eval_at(&derivative, &row.point)?;
    let mut problems = vec![format!("diff = {derivative}")];
    let agrees_with_sympy = close(got, row.expected, 1e-7);
    if !agrees_with_sympy {
        problems.push("(a) differs from the expected value".to_string());
    }
    let original = parse(&row.expr);
    let fd = central_difference(&original, &row.var, &row.point)?;
    if !close(got, fd, 1e-5) {
        problems.push(format!("(b) finite difference is {fd}"));
    }
    let vars: Vec<String> = row.point.iter().map(|(name, _)| name.clone()).collect();
    let partials = cached_grad(&row.expr, &vars)?;
    let index = vars
        .iter()
        .position(|name| *name == row.var)
        .ok_or("var not in point")?;
    let from_grad = eval_at(&partials[index], &row.point)?;
    if !close(from_grad, got, 1e-9) {
        problems.push(format!(
            "(c) grad entry {} gives {from_grad}",
            partials[index]
        ));
    }
    let reread = Expr::parse(&derivative.to_string()).map_err(|err| err.to_string())?;
    let from_text = eval_at(&reread, &row.point)?;
    if !close(from_text, got, 1e-12) {
        problems.push(format!(
            "(d) the printed derivative reads back as {from_text}"
        ));
    }
    if problems.len() == 1 {
        Ok(())
    } else {
        Err(format!(
            "got {got}, expected {}: {}",
            row.expected,
            problems.join("; ")
        ))
    }
}

#[test]
fn sympy_table_values_finite_differences_and_grad_agree() {
    let rows = read_table();
    assert_eq!(rows.len(), 551, "rows in the table");
    let mut cases: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.expr.as_str(), r.var.as_str()))
        .collect();
    cases.sort_unstable();
    cases.dedup();
    assert_eq!(cases.len(), 182, "distinct (expr, var) cases");
    let mut failures = String::new();
    let mut count = 0;
    for row in &rows {
        if let Err(message) = check_row(row) {
            count += 1;
            let _ = writeln!(
                failures,
                "  {}  d/d{}  at {}: {message}",
                row.expr,
                row.var,
                show_point(&row.point)
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{count} of {} rows fail:\n{failures}",
        rows.len()
    );
}

// -------------------------------------------- properties per operator

/// One property case: an expression, the interval each variable is drawn
/// from, and kink expressions whose magnitude must exceed 1e-3 at the point.
#[derive(Clone, Debug)]
struct Case {
    expr: &'static str,
    vars: &'static [(&'static str, f64, f64)],
    kinks: &'static [&'static str],
}

const fn case(expr: &'static str, vars: &'static [(&'static str, f64, f64)]) -> Case {
    Case {
        expr,
        vars,
        kinks: &[],
    }
}

const fn kinked(
    expr: &'static str,
    vars: &'static [(&'static str, f64, f64)],
    kinks: &'static [&'static str],
) -> Case {
    Case { expr, vars, kinks }
}

const X: &[(&str, f64, f64)] = &[("x", -2.0, 2.0)];
const XY: &[(&str, f64, f64)] = &[("x", -2.0, 2.0), ("y", -2.0, 2.0)];
const X_POS: &[(&str, f64, f64)] = &[("x", 0.05, 4.0)];

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Fractions in [0, 1) mapped onto the case's intervals.
fn fractions() -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(0.0..1.0f64, 4)
}

/// The symbolic derivative in every variable of the case agrees with a
/// central finite difference at the drawn point.
fn check_case(case: &Case, fractions: &[f64]) -> Result<(), TestCaseError> {
    let point: Point = case
        .vars
        .iter()
        .zip(fractions)
        .map(|(&(name, lo, hi), t)| (name.to_string(), lo + t * (hi - lo)))
        .collect();
    for kink in case.kinks {
        let distance = eval_at(&parse(kink), &point).map_err(TestCaseError::fail)?;
        prop_assume!(distance.abs() > 1e-3, "within 1e-3 of the kink {}", kink);
    }
    let original = parse(case.expr);
    for (var, _, _) in case.vars {
        let derivative = cached_diff(case.expr, var).map_err(TestCaseError::fail)?;
        let got = eval_at(&derivative, &point).map_err(TestCaseError::fail)?;
        let fd = central_difference(&original, var, &point).map_err(TestCaseError::fail)?;
        prop_assert!(
            close(got, fd, 1e-5),
            "d/d{var} {} at {}: symbolic {derivative} = {got}, finite difference {fd}",
            case.expr,
            show_point(&point)
        );
    }
    Ok(())
}

const ADD: &[Case] = &[
    case("(+ (sin x) (* x x))", X),
    case("(+ x y)", XY),
    case("(+ (* x y) (exp y))", XY),
    case("(+ 2.5 (* 1.3 x))", X),
];
const SUB: &[Case] = &[
    case("(- (exp x) (* 3 x))", X),
    case("(- x y)", XY),
    case("(- (* x x) (sin y))", XY),
    case("(- 1 (* 1.3 x))", X),
];
const MUL: &[Case] = &[
    case("(* (sin x) (exp x))", X),
    case("(* x y)", XY),
    case("(* (+ x 1) (cos y))", XY),
    case("(* 1.3 x)", X),
];
const DIV: &[Case] = &[
    case("(/ (sin x) (+ 2 (cos x)))", X),
    case("(/ x y)", &[("x", -2.0, 2.0), ("y", 0.3, 3.0)]),
    case("(/ x y)", &[("x", -2.0, 2.0), ("y", -3.0, -0.3)]),
    case("(/ (* x x) (+ 1 (* y y)))", XY),
    case("(/ 1 (+ 1.5 (sin x)))", X),
    case("(/ (* 1.3 x) 4)", X),
];
const POW: &[Case] = &[
    case("(pow x 3)", X),
    case("(pow x 2)", X),
    case("(pow (* 1.3 x) 4)", X),
    case("(pow x -2)", &[("x", 0.3, 3.0)]),
    case("(pow x -3)", &[("x", -3.0, -0.3)]),
    case("(pow x 2.5)", &[("x", 0.1, 3.0)]),
    case("(pow x 0.5)", &[("x", 0.1, 3.0)]),
    case("(pow (+ 1 (* x x)) 1.7)", X),
    case("(pow x y)", &[("x", 0.2, 3.0), ("y", -2.0, 2.0)]),
    case("(pow 2 x)", X),
    case("(pow (exp x) (sin y))", XY),
    case("(pow (+ 2 (sin x)) (cos x))", X),
];
const NEG: &[Case] = &[
    case("(neg (* 1.3 x))", X),
    case("(neg (sin x))", X),
    case("(neg (* x y))", XY),
];
const EXP: &[Case] = &[
    case("(exp (* 1.3 x))", X),
    case("(exp (sin x))", X),
    case("(exp (neg (* x x)))", X),
    case("(exp (* x y))", XY),
];
const LOG: &[Case] = &[
    case("(log x)", X_POS),
    case("(log (* 1.3 x))", X_POS),
    case("(log (+ 1 (* x x)))", X),
    case("(log (+ 2 (sin (* 3 x))))", X),
    case("(log (* x y))", &[("x", 0.1, 3.0), ("y", 0.1, 3.0)]),
];
const LOG1P: &[Case] = &[
    case("(log1p x)", &[("x", -0.9, 3.0)]),
    case("(log1p (* 1.3 x))", &[("x", -0.6, 2.0)]),
    case("(log1p (* x x))", X),
    case("(log1p (exp x))", X),
    case("(log1p (* x y))", &[("x", -0.8, 0.8), ("y", -1.0, 1.0)]),
];
const EXPM1: &[Case] = &[
    case("(expm1 x)", X),
    case("(expm1 (* 1.3 x))", X),
    case("(expm1 x)", &[("x", -1e-3, 1e-3)]),
    case("(expm1 (sin x))", X),
    case("(expm1 (* x y))", XY),
];
const SQRT: &[Case] = &[
    case("(sqrt x)", X_POS),
    case("(sqrt (* 1.3 x))", X_POS),
    case("(sqrt (+ 1 (* x x)))", X),
    case(
        "(sqrt (+ (* x x) (* y y)))",
        &[("x", 0.2, 2.0), ("y", -2.0, 2.0)],
    ),
    case("(sqrt (exp x))", X),
];
const SIN: &[Case] = &[
    case("(sin (* 1.3 x))", &[("x", -3.0, 3.0)]),
    case("(sin (* x x))", X),
    case("(sin (* x y))", XY),
];
const COS: &[Case] = &[
    case("(cos (* 1.3 x))", &[("x", -3.0, 3.0)]),
    case("(cos (* x x))", X),
    case("(cos (* x y))", XY),
];
const TAN: &[Case] = &[
    case("(tan (* 1.3 x))", &[("x", -1.0, 1.0)]),
    case("(tan (sin x))", &[("x", -3.0, 3.0)]),
    case("(tan (* x y))", &[("x", -1.0, 1.0), ("y", -1.0, 1.0)]),
];
const ASIN: &[Case] = &[
    case("(asin x)", &[("x", -0.95, 0.95)]),
    case("(asin (* 0.5 x))", &[("x", -1.9, 1.9)]),
    case("(asin (* 0.9 (sin x)))", &[("x", -3.0, 3.0)]),
    case("(asin (* x y))", &[("x", -0.95, 0.95), ("y", -0.95, 0.95)]),
];
const ACOS: &[Case] = &[
    case("(acos x)", &[("x", -0.95, 0.95)]),
    case("(acos (* 0.5 x))", &[("x", -1.9, 1.9)]),
    case("(acos (* 0.9 (sin x)))", &[("x", -3.0, 3.0)]),
    case("(acos (* x y))", &[("x", -0.95, 0.95), ("y", -0.95, 0.95)]),
];
const ATAN: &[Case] = &[
    case("(atan (* 1.3 x))", &[("x", -5.0, 5.0)]),
    case("(atan (* x x))", X),
    case("(atan (/ y x))", &[("x", 0.2, 3.0), ("y", -2.0, 2.0)]),
];
const ATAN2: &[Case] = &[
    case("(atan2 y x)", &[("x", 0.2, 3.0), ("y", -2.0, 2.0)]),
    kinked(
        "(atan2 y x)",
        &[("x", -3.0, -0.2), ("y", -2.0, 2.0)],
        &["y"],
    ),
    case("(atan2 y x)", &[("x", -2.0, 2.0), ("y", 0.2, 3.0)]),
    case("(atan2 (sin x) (+ 2 (cos x)))", &[("x", -3.0, 3.0)]),
    case("(atan2 (* x y) (+ 1 (* x x)))", XY),
    case("(atan2 (* 1.3 x) 2)", X),
];
const SINH: &[Case] = &[
    case("(sinh (* 1.3 x))", &[("x", -3.0, 3.0)]),
    case("(sinh (sin x))", X),
    case("(sinh (* x y))", XY),
];
const COSH: &[Case] = &[
    case("(cosh (* 1.3 x))", &[("x", -3.0, 3.0)]),
    case("(cosh (sin x))", X),
    case("(cosh (* x y))", XY),
];
const TANH: &[Case] = &[
    case("(tanh (* 1.3 x))", &[("x", -3.0, 3.0)]),
    case("(tanh (sin x))", X),
    case("(tanh (* x y))", XY),
];
const SIGMOID: &[Case] = &[
    case("(sigmoid (* 1.3 x))", &[("x", -6.0, 6.0)]),
    case("(sigmoid x)", &[("x", -30.0, 30.0)]),
    case("(sigmoid (sin x))", X),
    case("(sigmoid (* x y))", XY),
];
const SOFTPLUS: &[Case] = &[
    case("(softplus (* 1.3 x))", &[("x", -6.0, 6.0)]),
    case("(softplus x)", &[("x", -40.0, 40.0)]),
    case("(softplus (sin x))", X),
    case("(softplus (* x y))", XY),
];
const RELU: &[Case] = &[
    kinked("(relu (* 1.3 x))", X, &["x"]),
    kinked("(relu (- (* x x) 1))", X, &["(- (* x x) 1)"]),
    kinked("(relu (sin (* 2 x)))", X, &["(sin (* 2 x))"]),
    kinked("(relu (- x y))", XY, &["(- x y)"]),
];
const ABS: &[Case] = &[
    kinked("(abs (* 1.3 x))", X, &["x"]),
    kinked("(abs (sin (* 2 x)))", X, &["(sin (* 2 x))"]),
    kinked("(abs (- (* x y) 0.5))", XY, &["(- (* x y) 0.5)"]),
    kinked("(abs (- x y))", XY, &["(- x y)"]),
];
const MIN: &[Case] = &[
    kinked("(min x y)", XY, &["(- x y)"]),
    kinked(
        "(min (sin x) (cos x))",
        &[("x", -3.0, 3.0)],
        &["(- (sin x) (cos x))"],
    ),
    kinked("(min (* x x) (+ x 1))", X, &["(- (* x x) (+ x 1))"]),
    kinked("(min (* 1.3 x) 0.5)", X, &["(- (* 1.3 x) 0.5)"]),
    kinked("(min (* 2 x) (exp y))", XY, &["(- (* 2 x) (exp y))"]),
];
const MAX: &[Case] = &[
    kinked("(max x y)", XY, &["(- x y)"]),
    kinked(
        "(max (sin x) (cos x))",
        &[("x", -3.0, 3.0)],
        &["(- (sin x) (cos x))"],
    ),
    kinked("(max (* x x) (+ x 1))", X, &["(- (* x x) (+ x 1))"]),
    kinked("(max (* 1.3 x) 0.5)", X, &["(- (* 1.3 x) 0.5)"]),
    kinked("(max (* 2 x) (exp y))", XY, &["(- (* 2 x) (exp y))"]),
];

// The NumPy functions of the elementwise table.
const SQUARE: &[Case] = &[
    case("(square x)", X),
    case("(square (sin x))", X),
    case("(square (* x y))", XY),
];
const CBRT: &[Case] = &[
    case("(cbrt x)", X_POS),
    case("(cbrt x)", &[("x", -4.0, -0.05)]),
    case("(cbrt (+ 3 (sin x)))", X),
    case("(cbrt (* x y))", &[("x", 0.1, 2.0), ("y", -2.0, -0.1)]),
];
const EXP2: &[Case] = &[
    case("(exp2 (* 1.3 x))", X),
    case("(exp2 (sin x))", X),
    case("(exp2 (* x y))", XY),
];
const HYPOT: &[Case] = &[
    kinked("(hypot x y)", XY, &["(hypot x y)"]),
    case("(hypot x 3)", X),
    case(
        "(hypot (sin x) (* x y))",
        &[("x", 0.2, 2.0), ("y", -2.0, 2.0)],
    ),
    case(
        "(hypot (* 1e200 x) (* 1e200 y))",
        &[("x", 0.2, 2.0), ("y", 0.2, 2.0)],
    ),
];
const LOGADDEXP: &[Case] = &[
    case("(logaddexp x y)", XY),
    case("(logaddexp (* 30 x) (* 30 y))", XY),
    case("(logaddexp x (sin x))", X),
    case("(logaddexp 0 x)", &[("x", -30.0, 30.0)]),
];
const LOGADDEXP2: &[Case] = &[
    case("(logaddexp2 x y)", XY),
    case("(logaddexp2 (* 30 x) (* 30 y))", XY),
    case("(logaddexp2 x (sin x))", X),
];
const SINC: &[Case] = &[
    case("(sinc x)", &[("x", -3.0, 3.0)]),
    case("(sinc (* x y))", XY),
    case("(sinc x)", &[("x", -0.01, 0.01)]),
    case("(sinc (+ 2 (sin x)))", X),
];
const DEG2RAD: &[Case] = &[
    case("(deg2rad (* 40 x))", X),
    case("(sin (deg2rad (* 90 x)))", X),
    case("(deg2rad (* x y))", XY),
];
const RAD2DEG: &[Case] = &[
    case("(rad2deg x)", X),
    case(
        "(rad2deg (atan2 y x))",
        &[("x", 0.2, 2.0), ("y", -2.0, 2.0)],
    ),
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn add_matches_finite_differences(case in prop::sample::select(ADD), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sub_matches_finite_differences(case in prop::sample::select(SUB), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn mul_matches_finite_differences(case in prop::sample::select(MUL), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn div_matches_finite_differences(case in prop::sample::select(DIV), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn pow_matches_finite_differences(case in prop::sample::select(POW), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn neg_matches_finite_differences(case in prop::sample::select(NEG), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn exp_matches_finite_differences(case in prop::sample::select(EXP), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn log_matches_finite_differences(case in prop::sample::select(LOG), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn log1p_matches_finite_differences(case in prop::sample::select(LOG1P), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn expm1_matches_finite_differences(case in prop::sample::select(EXPM1), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sqrt_matches_finite_differences(case in prop::sample::select(SQRT), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sin_matches_finite_differences(case in prop::sample::select(SIN), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn cos_matches_finite_differences(case in prop::sample::select(COS), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn tan_matches_finite_differences(case in prop::sample::select(TAN), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn asin_matches_finite_differences(case in prop::sample::select(ASIN), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn acos_matches_finite_differences(case in prop::sample::select(ACOS), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn atan_matches_finite_differences(case in prop::sample::select(ATAN), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn atan2_matches_finite_differences(case in prop::sample::select(ATAN2), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sinh_matches_finite_differences(case in prop::sample::select(SINH), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn cosh_matches_finite_differences(case in prop::sample::select(COSH), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn tanh_matches_finite_differences(case in prop::sample::select(TANH), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sigmoid_matches_finite_differences(case in prop::sample::select(SIGMOID), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn softplus_matches_finite_differences(case in prop::sample::select(SOFTPLUS), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn relu_matches_finite_differences(case in prop::sample::select(RELU), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn abs_matches_finite_differences(case in prop::sample::select(ABS), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn min_matches_finite_differences(case in prop::sample::select(MIN), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn max_matches_finite_differences(case in prop::sample::select(MAX), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn square_matches_finite_differences(case in prop::sample::select(SQUARE), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn cbrt_matches_finite_differences(case in prop::sample::select(CBRT), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn exp2_matches_finite_differences(case in prop::sample::select(EXP2), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn hypot_matches_finite_differences(case in prop::sample::select(HYPOT), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn logaddexp_matches_finite_differences(case in prop::sample::select(LOGADDEXP), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn logaddexp2_matches_finite_differences(case in prop::sample::select(LOGADDEXP2), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn sinc_matches_finite_differences(case in prop::sample::select(SINC), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn deg2rad_matches_finite_differences(case in prop::sample::select(DEG2RAD), t in fractions()) {
        check_case(&case, &t)?;
    }

    #[test]
    fn rad2deg_matches_finite_differences(case in prop::sample::select(RAD2DEG), t in fractions()) {
        check_case(&case, &t)?;
    }
}

// ------------------------------------------------------ higher order

const HIGHER_ORDER: &[&str] = &[
    "(sin (* 2 x))",
    "(exp (* x x))",
    "(log (+ 2 x))",
    "(* x (sin x))",
    "(/ 1 (+ 1 (* x x)))",
    "(pow x 5)",
    "(tanh x)",
    "(sigmoid x)",
    "(atan x)",
    "(sqrt (+ 1 (* x x)))",
    "(softplus (* 2 x))",
    "(log1p (exp x))",
    "(square (sin x))",
    "(cbrt (+ 2 x))",
    "(exp2 x)",
    "(hypot x 2)",
    "(logaddexp x (* 2 x))",
    "(logaddexp2 x (sin x))",
    "(sinc x)",
    "(deg2rad (* x x))",
    "(rad2deg (sin x))",
];

#[test]
fn second_and_third_derivatives_match_finite_differences_of_the_lower_one() {
    let mut failures = String::new();
    for &text in HIGHER_ORDER {
        let original = parse(text);
        let orders: Vec<Expr> = (0..=3)
            .map(|n| {
                symbolic::diff_n(text, "x", n)
                    .unwrap_or_else(|err| panic!("diff_n {text} {n}: {err}"))
            })
            .collect();
        for x in [-0.7, 0.4, 1.3] {
            let point = point_of(&[("x", x)]);
            let value = eval_at(&orders[0], &point).unwrap();
            let want = eval_at(&original, &point).unwrap();
            if !close(value, want, 1e-12) {
                let _ = writeln!(
                    failures,
                    "  {text} order 0 = {} at x={x}: {value}, expected {want}",
                    orders[0]
                );
            }
            for n in 1..=3 {
                let got = eval_at(&orders[n], &point).unwrap();
                let fd = central_difference(&orders[n - 1], "x", &point).unwrap();
                if !close(got, fd, 1e-5) {
                    let _ = writeln!(
                        failures,
                        "  {text} order {n} = {} at x={x}: {got}, finite difference of order {} gives {fd}",
                        orders[n],
                        n - 1
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "higher derivatives disagree:\n{failures}"
    );
}

// ------------------------------------------------------------ Hessians

const HESSIANS: &[(&str, &[&str])] = &[
    ("(* x (sin y))", &["x", "y"]),
    ("(* x y z)", &["x", "y", "z"]),
    ("(exp (* -0.5 (+ (* x x) (* y y))))", &["x", "y"]),
    (
        "(- (* 0.5 (+ (* a a) (* b b))) (log (- (* a d) (* b c))))",
        &["a", "b", "c", "d"],
    ),
    ("(log (+ (exp x) (exp y) (exp z)))", &["x", "y", "z"]),
    ("(sqrt (+ (* x x) (* y y) 1))", &["x", "y"]),
    ("(pow x y)", &["x", "y"]),
    ("(atan2 y x)", &["x", "y"]),
    (
        "(* (sin x) (cos y) (exp z) (tanh w))",
        &["x", "y", "z", "w"],
    ),
    ("(/ (- x y) (+ x y z))", &["x", "y", "z"]),
    ("(hypot x y)", &["x", "y"]),
    ("(logaddexp x y)", &["x", "y"]),
    ("(logaddexp2 (* x y) z)", &["x", "y", "z"]),
    ("(* (sinc x) (cbrt y) (exp2 z))", &["x", "y", "z"]),
];

/// Points for up to four variables, in the order the variables are listed
/// (the first one positive, the determinant a*d - b*c positive).
const HESSIAN_POINTS: &[[f64; 4]] = &[
    [0.7, -0.4, 1.1, 0.9],
    [1.3, 0.5, -0.8, 1.6],
    [0.4, 1.2, 0.3, 2.0],
];

#[test]
fn hessians_are_symmetric_and_match_finite_differences_of_the_gradient() {
    let mut failures = String::new();
    for &(text, vars) in HESSIANS {
        let hessian =
            symbolic::hessian(text, vars).unwrap_or_else(|err| panic!("hessian {text}: {err}"));
        let gradient =
            symbolic::grad(text, vars).unwrap_or_else(|err| panic!("grad {text}: {err}"));
        let n = vars.len();
        assert_eq!(hessian.len(), n, "rows of the Hessian of {text}");
        for (i, row) in hessian.iter().enumerate() {
            assert_eq!(row.len(), n, "row {i} of the Hessian of {text}");
            for j in 0..i {
                let (upper, lower) = (hessian[j][i].to_string(), row[j].to_string());
                if upper != lower {
                    let _ = writeln!(
                        failures,
                        "  {text}: H[{j}][{i}] = {upper} but H[{i}][{j}] = {lower}"
                    );
                }
            }
        }
        for values in HESSIAN_POINTS {
            let point: Point = vars
                .iter()
                .zip(values)
                .map(|(name, &v)| (name.to_string(), v))
                .collect();
            for i in 0..n {
                for j in 0..n {
                    let got = eval_at(&hessian[i][j], &point).unwrap();
                    let fd = central_difference(&gradient[j], vars[i], &point).unwrap();
                    if !close(got, fd, 1e-5) {
                        let _ = writeln!(
                            failures,
                            "  {text} H[{i}][{j}] = {} at {}: {got}, finite difference of grad gives {fd}",
                            hessian[i][j],
                            show_point(&point)
                        );
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "Hessians disagree:\n{failures}");
}

// ------------------------------------------------ the Lisp builtins

fn numbers(value: &Value) -> Vec<f64> {
    value
        .list_to_vec()
        .unwrap_or_else(|err| panic!("{value} is not a list: {err}"))
        .iter()
        .map(|item| {
            item.as_f64()
                .unwrap_or_else(|err| panic!("{item} is not a number: {err}"))
        })
        .collect()
}

fn matrix(value: &Value) -> Vec<Vec<f64>> {
    value
        .list_to_vec()
        .unwrap_or_else(|err| panic!("{value} is not a list: {err}"))
        .iter()
        .map(numbers)
        .collect()
}

fn lisp_bindings(point: &[(&str, f64)]) -> String {
    let parts: Vec<String> = point
        .iter()
        .map(|(name, value)| format!("({name} {value:?})"))
        .collect();
    format!("'({})", parts.join(" "))
}

/// A Jacobian case: the functions, the variables, and the Jacobian by hand.
type HandJacobian = fn(&[f64]) -> Vec<Vec<f64>>;

#[test]
fn lisp_jacobian_evaluates_to_the_hand_computed_matrix() {
    let cases: &[(&str, &[&str], HandJacobian)] = &[
        ("((* x y) (sin (+ x y)))", &["x", "y"], |p| {
            let (x, y) = (p[0], p[1]);
            vec![vec![y, x], vec![(x + y).cos(), (x + y).cos()]]
        }),
        ("((* r (cos t)) (* r (sin t)))", &["r", "t"], |p| {
            let (r, t) = (p[0], p[1]);
            vec![vec![t.cos(), -r * t.sin()], vec![t.sin(), r * t.cos()]]
        }),
        ("((+ x y z) (* x y z) (exp x))", &["x", "y", "z"], |p| {
            let (x, y, z) = (p[0], p[1], p[2]);
            vec![
                vec![1.0, 1.0, 1.0],
                vec![y * z, x * z, x * y],
                vec![x.exp(), 0.0, 0.0],
            ]
        }),
        ("((* x x) (log x))", &["x"], |p| {
            vec![vec![2.0 * p[0]], vec![1.0 / p[0]]]
        }),
    ];
    let mut eng = Engine::new();
    for &(functions, vars, by_hand) in cases {
        let symbolic = eng
            .eval(&format!("(jacobian '{functions} '({}))", vars.join(" ")))
            .unwrap_or_else(|err| panic!("jacobian {functions}: {err}"));
        let rows = symbolic.list_to_vec().unwrap();
        assert_eq!(
            rows.len(),
            by_hand(&[1.0; 3]).len(),
            "rows of the Jacobian of {functions}: {symbolic}"
        );
        for row in &rows {
            assert_eq!(
                row.list_to_vec().unwrap().len(),
                vars.len(),
                "row {row} of the Jacobian of {functions}"
            );
        }
        for values in [[0.3, 0.7, 1.1], [1.4, -0.6, 0.5], [2.0, 1.5, -0.9]] {
            let point: Vec<(&str, f64)> = vars.iter().copied().zip(values).collect();
            let source = format!(
                "(evaluate (jacobian '{functions} '({})) {})",
                vars.join(" "),
                lisp_bindings(&point)
            );
            let got = matrix(
                &eng.eval(&source)
                    .unwrap_or_else(|err| panic!("{source}: {err}")),
            );
            let want = by_hand(&values);
            assert_eq!(got.len(), want.len(), "{source}");
            for (got_row, want_row) in got.iter().zip(&want) {
                assert_eq!(got_row.len(), want_row.len(), "{source}");
                for (&g, &w) in got_row.iter().zip(want_row) {
                    assert!(
                        close(g, w, 1e-12),
                        "{source}: got {got:?}, expected {want:?}"
                    );
                }
            }
        }
    }
}

const LAMBDIFY: &[&str] = &[
    "(* x (sin y))",
    "(+ (* x x) (* 3 y))",
    "(/ (exp x) (+ 1 (* y y)))",
    "(log (+ 1 (* x y)))",
    "(pow x y)",
    "(atan2 y x)",
    "(sqrt (+ (* x x) (* y y)))",
    "(* pi (tanh (- x y)))",
    "(max (sigmoid x) (softplus (neg y)))",
    "(abs (- (relu (- x 0.5)) (cos y)))",
    "(min (expm1 x) (log1p y))",
];

#[test]
fn lambdify_agrees_with_evaluate() {
    let mut eng = Engine::new();
    for &expr in LAMBDIFY {
        for (x, y) in [(0.3, 0.7), (1.7, -0.4), (2.5, 0.1)] {
            let compiled = format!("((lambdify '(x y) '{expr}) {x:?} {y:?})");
            let evaluated = format!(
                "(evaluate '{expr} {})",
                lisp_bindings(&[("x", x), ("y", y)])
            );
            let got = eng
                .eval(&compiled)
                .unwrap_or_else(|err| panic!("{compiled}: {err}"));
            let want = eng
                .eval(&evaluated)
                .unwrap_or_else(|err| panic!("{evaluated}: {err}"));
            let (got, want) = (got.as_f64().unwrap(), want.as_f64().unwrap());
            assert!(
                close(got, want, 1e-12),
                "{compiled} = {got} but {evaluated} = {want}"
            );
        }
    }
    let both = "'((* x y) (+ x (sin y)))";
    let listed = numbers(
        &eng.eval(&format!("((lambdify '(x y) {both}) 0.3 0.7)"))
            .unwrap(),
    );
    let evaluated = numbers(
        &eng.eval(&format!("(evaluate {both} '((x 0.3) (y 0.7)))"))
            .unwrap(),
    );
    assert_eq!(listed, evaluated, "lambdify on a list of expressions");
}

#[test]
fn lambdify_on_tensors_is_elementwise() {
    let mut eng = Engine::new();
    let cases = [
        ("((lambdify '(x) '(* x x)) [1 2 3])", vec![1.0, 4.0, 9.0]),
        (
            "((lambdify '(x y) '(+ x (* 2 y))) [1 2 3] [4 5 6])",
            vec![9.0, 12.0, 15.0],
        ),
        (
            "((lambdify '(x y) '(* x y)) 2 [1 2 3])",
            vec![2.0, 4.0, 6.0],
        ),
        (
            "((lambdify '(x) '(sin x)) [0.1 0.2])",
            vec![0.1f64.sin(), 0.2f64.sin()],
        ),
    ];
    for (source, want) in cases {
        let value = eng
            .eval(source)
            .unwrap_or_else(|err| panic!("{source}: {err}"));
        let tensor = value
            .as_tensor()
            .unwrap_or_else(|err| panic!("{source} gives {value}: {err}"));
        assert_eq!(tensor.shape(), &[want.len()], "{source}");
        let got: Vec<f64> = tensor.iter().copied().collect();
        for (g, w) in got.iter().zip(&want) {
            assert!(
                close(*g, *w, 1e-15),
                "{source}: got {got:?}, expected {want:?}"
            );
        }
    }
    let grid = eng
        .eval("((lambdify '(x) '(* x x)) [[1 2] [3 4]])")
        .unwrap();
    let grid = grid.as_tensor().unwrap();
    assert_eq!(grid.shape(), &[2, 2]);
    assert_eq!(
        grid.iter().copied().collect::<Vec<f64>>(),
        vec![1.0, 4.0, 9.0, 16.0]
    );
}

// ---------------------------------------- regressions for bugs this file found

/// `(-)`, `(/)`, `(min)` and `(max)` with no arguments once panicked in
/// `call_node` (`args[1..]` on an empty slice); they are errors, like `(atan2)`.
#[test]
fn operators_called_without_arguments_are_errors_not_panics() {
    let mut failures = Vec::new();
    for text in ["(-)", "(/)", "(min)", "(max)"] {
        match std::panic::catch_unwind(|| symbolic::diff(text, "x")) {
            Ok(Err(_)) => {}
            Ok(Ok(derivative)) => failures.push(format!("diff {text} gives {derivative}")),
            Err(_) => failures.push(format!("diff {text} panics")),
        }
        let mut eng = Engine::new();
        let source = format!("(diff '{text} 'x)");
        match eng.eval(&source) {
            Err(err) if !err.to_string().contains("internal error") => {}
            Err(err) => failures.push(format!("{source}: {err}")),
            Ok(value) => failures.push(format!("{source} gives {value}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// d/dy (pow x y) was `(* (pow x y) (log x))`, which is 0 * -inf = NaN at
/// x = 0; but x^y = 0 for every y > 0 there, so the partial is 0 (JAX and
/// PyTorch give 0). It is now `(xlogy (pow x y) x)`. Same for `(pow 0 x)`.
#[test]
fn pow_partial_in_the_exponent_at_a_zero_base_is_zero() {
    let cases = [
        ("(pow x y)", "y", "x=0 y=2"),
        ("(pow x y)", "y", "x=0 y=0.5"),
        ("(pow 0 x)", "x", "x=2"),
    ];
    let mut failures = Vec::new();
    for (text, var, point) in cases {
        let point = parse_point(point);
        let derivative = symbolic::diff(text, var).unwrap();
        let got = eval_at(&derivative, &point).unwrap();
        if got != 0.0 {
            failures.push(format!(
                "d/d{var} {text} = {derivative} at {}: got {got}, expected 0",
                show_point(&point)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

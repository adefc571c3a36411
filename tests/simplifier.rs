//! The simplifier's outcomes: results free of identities, the expected
//! small forms, DAG-aware extraction against egg's tree extractor, and
//! limits that stop a blow-up with a warning instead of a hang.

use egg::{Id, RecExpr, Symbol};
use epsilon::Value;
use epsilon::egraph::extract::{extract, extract_tree};
use epsilon::egraph::simplify::simplify;
use epsilon::egraph::{
    Assumptions, ExprBuilder, Level, Limits, Math, MathGraph, Stop, all_rules, reverse::gradient,
};
use epsilon::ir::math::eval::evaluate;
use epsilon::ir::math::functions::NO_FUNCTIONS;
use epsilon::symbolic;
use std::time::Duration;

/// The gradient of `text` with respect to `vars`, saturated with the
/// built-in rules: the e-graph and its roots.
fn saturated_gradient(text: &str, vars: &[&str]) -> (MathGraph, Vec<Id>) {
    let expr: RecExpr<Math> = text.parse().expect("test expression parses");
    let mut builder = ExprBuilder::new();
    let root = builder.add_expr(&expr, &[Id::from(expr.as_ref().len() - 1)])[0];
    let wrt: Vec<Symbol> = vars.iter().map(|&v| Symbol::from(v)).collect();
    let partials = gradient(&mut builder, root, &wrt, &NO_FUNCTIONS);
    let mut egraph = MathGraph::default();
    let mut map = Vec::new();
    for node in builder.expr().as_ref() {
        map.push(egraph.add(egg::Language::map_children(node.clone(), |c| {
            map[usize::from(c)]
        })));
    }
    let runner = egg::Runner::default()
        .with_egraph(egraph)
        .with_iter_limit(8)
        .with_node_limit(20_000)
        .run(all_rules());
    let roots = partials
        .iter()
        .map(|&p| runner.egraph.find(map[usize::from(p)]))
        .collect();
    (runner.egraph, roots)
}

fn values_at(expr: &RecExpr<Math>, roots: &[Id], point: &[(&str, f64)]) -> Vec<f64> {
    let env = |name: Symbol| {
        point
            .iter()
            .find(|(v, _)| *v == name.as_str())
            .map(|(_, x)| *x)
    };
    evaluate(expr, roots, env).expect("every variable has a value")
}

#[test]
fn dag_extraction_beats_tree_extraction_on_a_shared_gradient() {
    // The gradient of a cyclic product shares prefix and suffix products
    // among its six partials; a tree cost pays for each shared product at
    // every use, so it prefers forms that share less.
    let vars = ["a", "b", "c", "d", "e", "f"];
    let (egraph, roots) = saturated_gradient(
        "(* (+ a b) (* (+ b c) (* (+ c d) (* (+ d e) (* (+ e f) (+ f a))))))",
        &vars,
    );
    let dag = extract(&egraph, &roots);
    let tree = extract_tree(&egraph, &roots);
    assert!(
        dag.dag_cost < tree.dag_cost,
        "DAG extraction should cost less: {} vs {}",
        dag.dag_cost,
        tree.dag_cost
    );
    for point in [
        [0.3, -1.2, 0.7, 2.0, -0.4, 1.1],
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    ] {
        let bindings: Vec<(&str, f64)> = vars.iter().copied().zip(point).collect();
        let from_dag = values_at(&dag.expr, &dag.roots, &bindings);
        let from_tree = values_at(&tree.expr, &tree.roots, &bindings);
        for (x, y) in from_dag.iter().zip(&from_tree) {
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{from_dag:?} vs {from_tree:?}"
            );
        }
    }
}

/// Whether `value` contains an identity the simplifier should have removed.
fn identity_in(value: &Value) -> Option<String> {
    let Value::Pair(pair) = value else {
        return None;
    };
    let items: Vec<Value> = value.iter().map(|(v, _)| v.clone()).collect();
    let head = match &pair.car {
        Value::Symbol(s) => s.name().to_string(),
        _ => String::new(),
    };
    let is = |v: &Value, n: i64| matches!(v, Value::Int(k) if *k == n);
    let args = &items[1..];
    let found = match head.as_str() {
        "*" => args.iter().any(|a| is(a, 1) || is(a, 0)),
        "+" => args.iter().any(|a| is(a, 0)),
        "-" | "/" | "pow" => args.len() == 2 && is(&args[1], if head == "-" { 0 } else { 1 }),
        "neg" => {
            matches!(&args[0], Value::Pair(p) if matches!(&p.car, Value::Symbol(s) if s.name() == "neg"))
        }
        _ => false,
    };
    if found {
        return Some(epsilon::lisp::printer::write_string(value));
    }
    args.iter().find_map(identity_in)
}

#[test]
fn derivatives_are_free_of_identities() {
    let table = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/derivatives.tsv"
    ))
    .expect("the derivative table exists");
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if !seen.insert((fields[0], fields[1])) {
            continue;
        }
        let derivative =
            symbolic::diff(fields[0], fields[1]).expect("table expressions differentiate");
        if let Some(identity) = identity_in(&derivative.to_value()) {
            found.push(format!(
                "d/d{} {} = {derivative}: contains {identity}",
                fields[1], fields[0]
            ));
        }
    }
    assert!(seen.len() >= 80, "the table has {} cases", seen.len());
    assert!(
        found.is_empty(),
        "identities left in results:\n{}",
        found.join("\n")
    );
}

#[test]
fn small_results_read_as_expected() {
    assert_eq!(
        symbolic::diff("(* x x)", "x").map(|e| e.to_string()).ok(),
        Some("(* 2 x)".into())
    );
    let grad: Vec<String> = symbolic::grad("(* x y z)", &["x", "y", "z"])
        .expect("grad")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(grad, ["(* y z)", "(* x z)", "(* x y)"]);
    let grad: Vec<String> = symbolic::grad("(* x (sin y))", &["x", "y"])
        .expect("grad")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(grad, ["(sin y)", "(* x (cos y))"]);
    assert_eq!(
        symbolic::simplify("(+ (* 2 x) (* 3 x))")
            .map(|e| e.to_string())
            .ok(),
        Some("(* 5 x)".into())
    );
    assert_eq!(
        symbolic::simplify("(sqrt (* x x))")
            .map(|e| e.to_string())
            .ok(),
        Some("(abs x)".into())
    );
    // Domains are kept: x / x is undefined at 0, exp(x) / exp(x) never is.
    assert_eq!(
        symbolic::simplify("(/ x x)").map(|e| e.to_string()).ok(),
        Some("(/ x x)".into())
    );
    assert_eq!(
        symbolic::simplify("(/ (exp x) (exp x))")
            .map(|e| e.to_string())
            .ok(),
        Some("1".into())
    );
}

/// Constants fold only when no digit of an operand is lost: otherwise the
/// rules would build false equations from rounding (with `1e308 + 1`
/// folded to `1e308`, `x * x^1e308 = x^1e308` and then `x = 1`).
#[test]
fn constants_fold_only_when_no_operand_is_lost_to_rounding() {
    let simplified = |text: &str| symbolic::simplify(text).expect("simplifies").to_string();
    for unfolded in [
        "(+ 1e308 1)",
        "(+ 1e16 1)",
        "(* 1e-200 1e-200)",
        "(exp -1000)",
    ] {
        assert_eq!(simplified(unfolded), unfolded);
    }
    assert_eq!(simplified("(+ 0.1 0.2)"), "0.3");
    assert_eq!(simplified("(+ 1e10 0.1)"), "10000000000.1");
    assert_eq!(simplified("(- (+ 1e16 1) 1e16)"), "1");
    assert_eq!(simplified("(* 0 1e-200)"), "0");
    assert_ne!(simplified("(* x (pow x 1e308))"), "(pow x 1e308)");
    // d/dx x^c is c x^(c-1): the exponent 1e308 - 1 is kept as written.
    let derivative = symbolic::diff("(pow x 1e308)", "x")
        .expect("diff")
        .to_string();
    assert_eq!(derivative, "(* 1e308 (pow x (- 1e308 1)))");
    assert_eq!(
        symbolic::diff("(pow x 2.5)", "x")
            .expect("diff")
            .to_string(),
        "(* 2.5 (pow x 1.5))"
    );
}

#[test]
fn hessian_is_symmetric_and_its_rows_are_gradients_of_the_gradient() {
    let hessian =
        symbolic::hessian("(* (sin (* x y)) (exp z))", &["x", "y", "z"]).expect("hessian");
    for (i, row) in hessian.iter().enumerate() {
        for (j, entry) in row.iter().enumerate() {
            assert_eq!(entry.to_string(), hessian[j][i].to_string());
        }
    }

    let point = [("x", 0.4), ("y", -0.9), ("z", 0.3)];
    let gradient = symbolic::grad("(* (sin (* x y)) (exp z))", &["x", "y", "z"]).expect("grad");
    for (i, partial) in gradient.iter().enumerate() {
        for (j, (var, _)) in point.iter().enumerate() {
            let h = 1e-6;
            let shifted = |delta: f64| {
                let moved: Vec<(&str, f64)> = point
                    .iter()
                    .map(|&(v, x)| (v, if v == *var { x + delta } else { x }))
                    .collect();
                partial.eval(&moved).expect("all bound")
            };
            let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
            let exact = hessian[i][j].eval(&point).expect("all bound");
            assert!(
                (fd - exact).abs() < 1e-6 * fd.abs().max(1.0),
                "H[{i}][{j}] = {exact}, fd {fd}"
            );
        }
    }
}

#[test]
fn an_exploding_expression_stops_at_a_limit_with_a_warning() {
    // A sum of 40 distinct products: associativity and commutativity alone
    // can build exponentially many equal sums.
    let terms: Vec<String> = (0..40).map(|i| format!("(* x{i} y{})", i % 7)).collect();
    let text = terms
        .iter()
        .skip(1)
        .fold(terms[0].clone(), |acc, term| format!("(+ {acc} {term})"));
    let expr: RecExpr<Math> = text.parse().expect("the sum parses");
    let root = Id::from(expr.as_ref().len() - 1);
    let limits = Limits {
        iterations: 1_000,
        nodes: 5_000_000,
        time: Duration::from_millis(500),
    };
    let result = simplify(
        &expr,
        &[root],
        Level::Full,
        limits,
        &[],
        &Assumptions::none(),
    );
    assert!(
        matches!(result.report.stop, Stop::TimeLimit | Stop::NodeLimit),
        "stopped by {:?}",
        result.report.stop
    );
    let warning = result
        .report
        .warning(Level::Full)
        .expect("a limit that cut the run short is reported");
    assert!(warning.contains("limit"), "{warning}");
    // Not a timing assertion: a generous bound that only a hang would break.
    assert!(
        result.report.elapsed < Duration::from_secs(30),
        "took {:?}",
        result.report.elapsed
    );
    // The best result so far is still the same sum.
    let point: Vec<(String, f64)> = (0..40)
        .map(|i| (format!("x{i}"), 0.1 * i as f64))
        .chain((0..7).map(|i| (format!("y{i}"), 1.0 - 0.2 * i as f64)))
        .collect();
    let bindings: Vec<(&str, f64)> = point.iter().map(|(n, x)| (n.as_str(), *x)).collect();
    let before = values_at(&expr, &[root], &bindings)[0];
    let after = values_at(&result.expr, &result.roots, &bindings)[0];
    assert!((before - after).abs() < 1e-9 * before.abs().max(1.0));
}

#[test]
fn the_cli_prints_the_limit_warning_on_stderr() {
    let terms: Vec<String> = (0..40).map(|i| format!("(* x{i} y{})", i % 7)).collect();
    let program = format!(
        "(set-optimize! 2) (set-simplify-limits! :seconds 0.3) (expr-size (simplify '(+ {})))",
        terms.join(" ")
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_epsilon"))
        .args(["eval", &program])
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: simplify: simplification stopped at the"),
        "{stderr}"
    );
}

#[test]
fn the_reverse_sweep_is_linear_in_the_expression_not_in_the_variables() {
    // f = x0 x1 + x1 x2 + ... : n variables, about 3n nodes. Differentiating
    // once per variable would build O(n^2) nodes; one sweep builds O(n).
    let added_nodes = |n: usize| {
        let terms: Vec<String> = (0..n).map(|i| format!("(* x{i} x{})", i + 1)).collect();
        let text = terms
            .iter()
            .skip(1)
            .fold(terms[0].clone(), |acc, term| format!("(+ {acc} {term})"));
        let expr: RecExpr<Math> = text.parse().expect("the sum parses");
        let mut builder = ExprBuilder::new();
        let root = builder.add_expr(&expr, &[Id::from(expr.as_ref().len() - 1)])[0];
        let before = builder.len();
        let wrt: Vec<Symbol> = (0..=n).map(|i| Symbol::from(format!("x{i}"))).collect();
        let partials = gradient(&mut builder, root, &wrt, &NO_FUNCTIONS);
        assert_eq!(partials.len(), n + 1);
        (before, builder.len() - before)
    };
    let (size_small, added_small) = added_nodes(100);
    let (size_large, added_large) = added_nodes(1000);
    assert!(
        added_small <= 3 * size_small,
        "{added_small} nodes added for {size_small}"
    );
    assert!(
        added_large <= 3 * size_large,
        "{added_large} nodes added for {size_large}"
    );
    assert!(
        added_large < 12 * added_small,
        "10x the size added {added_large} vs {added_small} nodes"
    );
}

#[test]
fn level_two_is_never_worse_than_level_one() {
    for text in [
        "(+ (* (sin x) (sin x)) (* (cos x) (cos x)))",
        "(/ (- (exp (* 2 x)) 1) (+ (exp x) 1))",
        "(* (* (+ x y) (- x y)) (+ (* x x) (* y y)))",
        "(+ (log (* x (exp y))) (pow (sqrt (* x x)) 2))",
    ] {
        let expr: RecExpr<Math> = text.parse().expect("parses");
        let root = Id::from(expr.as_ref().len() - 1);
        let run = |level: Level, time_ms: u64| {
            let limits = Limits {
                time: Duration::from_millis(time_ms),
                ..level.default_limits()
            };
            simplify(&expr, &[root], level, limits, &[], &Assumptions::none())
        };
        let one = run(Level::Bounded, 2_000);
        let two = run(Level::Full, 300);
        assert!(
            two.report.cost_after <= one.report.cost_after,
            "{text}: level 2 cost {} > level 1 cost {}",
            two.report.cost_after,
            one.report.cost_after
        );
        let value = |s: &epsilon::egraph::simplify::Simplified| {
            let env = |name: Symbol| match name.as_str() {
                "x" => Some(0.7),
                "y" => Some(-0.4),
                _ => None,
            };
            evaluate(&s.expr, &s.roots, env).expect("x and y")[0]
        };
        let (a, b) = (value(&one), value(&two));
        assert!(
            (a - b).abs() < 1e-12 * a.abs().max(1.0),
            "{text}: {a} vs {b}"
        );
    }
}

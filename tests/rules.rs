//! Rule soundness: every built-in simplification rule is instantiated with
//! many substitutions, applied alone to a fresh e-graph, and — when it
//! fires — both sides are evaluated at random points. Where the left side
//! is defined the right side must be defined and equal; where the left side
//! is undefined the right side must be undefined too (rules keep domains).

use egg::{ENodeOrVar, Id, Language, PatternAst, RecExpr, Rewrite, Symbol, Var};
use epsilon::egraph::{Assumptions, FactsAnalysis, Math, MathGraph, all_rules};
use epsilon::ir::math::eval::evaluate;
use std::collections::HashMap;

/// Substitutions with a variety of facts: any sign, positive, negative,
/// non-negative, constants (integer, fractional, zero), partial functions.
const POOL: &[&str] = &[
    "x",
    "y",
    "(exp x)",
    "(neg (exp y))",
    "(* x x)",
    "(+ 1 (* y y))",
    "(sin x)",
    "(log x)",
    "(sqrt y)",
    "(- x y)",
    "(/ 1 x)",
    "(cosh y)",
    "(tanh x)",
    "(abs y)",
    "(pow x 3)",
    "2",
    "-3",
    "0.5",
    "0",
    "1",
    "-1",
];

/// A small deterministic generator (no dependency needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }

    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * (self.next() as f64 / (1u64 << 53) as f64)
    }

    fn index(&mut self, len: usize) -> usize {
        (self.next() % len as u64) as usize
    }
}

/// The pattern with each variable replaced by its substitution.
fn instantiate(pattern: &PatternAst<Math>, subst: &HashMap<Var, RecExpr<Math>>) -> RecExpr<Math> {
    let mut out = RecExpr::default();
    let mut map: Vec<Id> = Vec::new();
    for node in pattern.as_ref() {
        let id = match node {
            ENodeOrVar::ENode(math) => {
                out.add(math.clone().map_children(|child| map[usize::from(child)]))
            }
            ENodeOrVar::Var(var) => {
                let inner = &subst[var];
                let mut inner_map: Vec<Id> = Vec::new();
                for inner_node in inner.as_ref() {
                    let added = out.add(
                        inner_node
                            .clone()
                            .map_children(|child| inner_map[usize::from(child)]),
                    );
                    inner_map.push(added);
                }
                *inner_map.last().expect("substitutions are non-empty")
            }
        };
        map.push(id);
    }
    out
}

fn values(expr: &RecExpr<Math>, x: f64, y: f64) -> Vec<f64> {
    values_with(expr, &[("x", x), ("y", y)])
}

/// Every node's value with the variables bound as `bindings` says.
fn values_with(expr: &RecExpr<Math>, bindings: &[(&str, f64)]) -> Vec<f64> {
    let all: Vec<Id> = (0..expr.as_ref().len()).map(Id::from).collect();
    let env = |name: Symbol| {
        bindings
            .iter()
            .find(|(bound, _)| *bound == name.as_str())
            .map(|&(_, value)| value)
    };
    evaluate(expr, &all, env).expect("only bound variables occur")
}

fn value_at(expr: &RecExpr<Math>, x: f64, y: f64) -> f64 {
    *values(expr, x, y)
        .last()
        .expect("expressions are non-empty")
}

/// The largest finite intermediate value: rounding errors scale with it
/// (`cosh^2 - sinh^2` loses every digit for large arguments).
fn largest_intermediate(expr: &RecExpr<Math>, x: f64, y: f64) -> f64 {
    values(expr, x, y)
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(1.0, |acc, v| acc.max(v.abs()))
}

fn defined(expr: &RecExpr<Math>, x: f64, y: f64) -> bool {
    values(expr, x, y).iter().all(|v| v.is_finite())
}

fn agree(left: f64, right: f64, scale: f64) -> bool {
    (left - right).abs() <= 1e-9 * scale
}

/// One instance of `rule`: each pattern variable replaced by a random
/// entry of `pool`; the left and right sides.
fn instance(
    rule: &Rewrite<Math, FactsAnalysis>,
    pool: &[RecExpr<Math>],
    rng: &mut Lcg,
) -> (RecExpr<Math>, RecExpr<Math>) {
    let lhs = rule
        .searcher
        .get_pattern_ast()
        .expect("built-in rules are patterns");
    let rhs = rule
        .applier
        .get_pattern_ast()
        .expect("built-in rules are patterns");
    let subst: HashMap<Var, RecExpr<Math>> = rule
        .searcher
        .vars()
        .iter()
        .map(|&var| (var, pool[rng.index(pool.len())].clone()))
        .collect();
    (instantiate(lhs, &subst), instantiate(rhs, &subst))
}

/// Whether `rule`, applied once to an e-graph holding `left`, rewrites the
/// whole of it to `right` (it may also fire on a subterm; only a rewrite of
/// the whole instantiated left side is checked).
fn fires_at_root(
    rule: &Rewrite<Math, FactsAnalysis>,
    egraph: &mut MathGraph,
    left: &RecExpr<Math>,
    right: &RecExpr<Math>,
) -> bool {
    let root = egraph.add_expr(left);
    egraph.rebuild();
    let matches = rule.search(egraph);
    rule.apply(egraph, &matches);
    egraph.rebuild();
    egraph.lookup_expr(right).map(|id| egraph.find(id)) == Some(egraph.find(root))
}

#[test]
fn every_rule_keeps_values_and_domains() {
    let pool: Vec<RecExpr<Math>> = POOL
        .iter()
        .map(|text| text.parse().expect("pool entries parse"))
        .collect();
    let mut rng = Lcg(7);
    let mut failures = Vec::new();
    let mut never_fired = Vec::new();
    for rule in all_rules() {
        let mut fired = 0;
        for _ in 0..200 {
            let (left, right) = instance(rule, &pool, &mut rng);
            if !fires_at_root(rule, &mut MathGraph::default(), &left, &right) {
                continue;
            }
            fired += 1;
            // Exact points first (zeros and ones are where domains differ),
            // then random ones.
            let exact = [
                (0.0, 0.0),
                (1.0, -1.0),
                (-1.0, 0.5),
                (0.5, 0.0),
                (0.0, 1.0),
                (-2.0, -0.5),
            ];
            for step in 0..26 {
                let (x, y) = match exact.get(step) {
                    Some(&point) => point,
                    None => (rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0)),
                };
                let (a, b) = (value_at(&left, x, y), value_at(&right, x, y));
                let scale =
                    largest_intermediate(&left, x, y).max(largest_intermediate(&right, x, y));
                // Defined means every intermediate is finite: IEEE turns some
                // undefined values into numbers (pow(1, -inf) = 1).
                let sound = match (defined(&left, x, y), defined(&right, x, y)) {
                    (true, true) => agree(a, b, scale),
                    (false, false) => true,
                    _ => false,
                };
                if !sound {
                    failures.push(format!(
                        "{}: {} => {} at x={x:.4}, y={y:.4}: {a} vs {b}",
                        rule.name, left, right
                    ));
                    break;
                }
            }
        }
        if fired == 0 {
            never_fired.push(rule.name.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "unsound rewrites:\n{}",
        failures.join("\n")
    );
    assert!(
        never_fired.is_empty(),
        "rules never checked (no substitution fired them): {never_fired:?}"
    );
}

/// Expressions whose facts are checked against their values.
const FACT_CASES: &[&str] = &[
    "(exp x)",
    "(neg (exp x))",
    "(* x x)",
    "(+ 1 (* x x))",
    "(sqrt x)",
    "(log x)",
    "(/ 1 x)",
    "(/ 1 (cosh x))",
    "(pow x 2)",
    "(pow x 3)",
    "(pow x -2)",
    "(pow x 0.5)",
    "(pow x -0.5)",
    "(abs x)",
    "(relu x)",
    "(sigmoid x)",
    "(softplus x)",
    "(tanh x)",
    "(atan x)",
    "(acos x)",
    "(asin x)",
    "(log1p x)",
    "(expm1 x)",
    "(sign x)",
    "(heaviside x 0.5)",
    "(min x (exp y))",
    "(max x (exp y))",
    "(- (exp x) (exp y))",
    "(* (exp x) (neg (exp y)))",
    "(xlogy x y)",
    "(/ (exp x) (+ 1 (* y y)))",
    "(sqrt (* x x))",
    "(tan x)",
    "(sinh x)",
    "(cosh x)",
    "(erf x)",
    "(erfc x)",
    "(lgamma (exp x))",
    "(digamma (exp x))",
    "(polygamma 1 (exp x))",
    "(polygamma 2 (exp x))",
    "(lgamma x)",
    "(polygamma 1 x)",
    "(square x)",
    "(cbrt x)",
    "(exp2 x)",
    "(hypot x y)",
    "(hypot x 3)",
    "(hypot (exp x) y)",
    "(logaddexp x y)",
    "(logaddexp2 x y)",
    "(sinc x)",
    "(deg2rad x)",
    "(rad2deg x)",
];

#[test]
fn analysis_facts_hold_at_sample_points() {
    let mut rng = Lcg(11);
    let mut failures = Vec::new();
    for text in FACT_CASES {
        let expr: RecExpr<Math> = text.parse().expect("fact cases parse");
        let mut egraph = MathGraph::default();
        let root = egraph.add_expr(&expr);
        egraph.rebuild();
        let facts = egraph[root].data.clone();
        let exact = [
            (0.0, 0.0),
            (1.0, 1.0),
            (-1.0, -1.0),
            (0.5, -2.0),
            (-0.5, 2.0),
        ];
        for step in 0..205 {
            let (x, y) = match exact.get(step) {
                Some(&point) => point,
                None => (rng.uniform(-4.0, 4.0), rng.uniform(-4.0, 4.0)),
            };
            let value = value_at(&expr, x, y);
            if facts.total && value.is_nan() {
                failures.push(format!("{text} claimed total, NaN at x={x}, y={y}"));
            }
            if value.is_nan() {
                continue;
            }
            let sign_ok = (!facts.signs.is_pos() || value > 0.0)
                && (!facts.signs.is_non_neg() || value >= 0.0)
                && (!facts.signs.is_non_zero() || value != 0.0);
            if !sign_ok {
                failures.push(format!(
                    "{text}: {:?} but {value} at x={x}, y={y}",
                    facts.signs
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "facts that do not hold:\n{}",
        failures.join("\n")
    );
}

/// Substitutions for the rules under assumptions: `n`, `m` whole numbers,
/// `p` positive, `q` negative, `x` anything.
const ASSUMED_POOL: &[&str] = &[
    "n", "m", "p", "q", "x", "(* n m)", "(neg n)", "(+ p 1)", "2", "-1",
];

fn assumptions() -> Assumptions {
    let pairs = [
        ("n", "integer"),
        ("m", "integer"),
        ("p", "positive"),
        ("q", "negative"),
    ];
    Assumptions::from_pairs(pairs.iter().map(|&(n, p)| (Symbol::from(n), p))).expect("consistent")
}

#[test]
fn rules_under_assumptions_keep_values_where_the_assumptions_hold() {
    let pool: Vec<RecExpr<Math>> = ASSUMED_POOL
        .iter()
        .map(|text| text.parse().expect("pool entries parse"))
        .collect();
    let assumptions = assumptions();
    let mut rng = Lcg(13);
    let mut failures = Vec::new();
    let mut fired_by_assumption = 0;
    for rule in all_rules() {
        for _ in 0..100 {
            let (left, right) = instance(rule, &pool, &mut rng);
            let mut assuming = MathGraph::new(FactsAnalysis::assuming(assumptions.clone()));
            if !fires_at_root(rule, &mut assuming, &left, &right) {
                continue;
            }
            if !fires_at_root(rule, &mut MathGraph::default(), &left, &right) {
                fired_by_assumption += 1;
            }
            for step in 0..30 {
                let n = (rng.index(7) as f64) - 3.0;
                let m = if step == 0 {
                    0.0
                } else {
                    (rng.index(7) as f64) - 3.0
                };
                let bindings = [
                    ("n", if step == 0 { 0.0 } else { n }),
                    ("m", m),
                    ("p", rng.uniform(0.01, 3.0)),
                    ("q", rng.uniform(-3.0, -0.01)),
                    ("x", rng.uniform(-3.0, 3.0)),
                ];
                let (lv, rv) = (
                    values_with(&left, &bindings),
                    values_with(&right, &bindings),
                );
                let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
                let (a, b) = (
                    *lv.last().expect("non-empty"),
                    *rv.last().expect("non-empty"),
                );
                let scale = lv
                    .iter()
                    .chain(&rv)
                    .filter(|v| v.is_finite())
                    .fold(1.0f64, |acc, v| acc.max(v.abs()));
                let sound = match (finite(&lv), finite(&rv)) {
                    (true, true) => agree(a, b, scale),
                    (false, false) => true,
                    _ => false,
                };
                if !sound {
                    failures.push(format!(
                        "{}: {left} => {right} at {bindings:?}: {a} vs {b}",
                        rule.name
                    ));
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "unsound under assumptions:\n{}",
        failures.join("\n")
    );
    // The assumptions must matter: some rewrites fire only because of them.
    assert!(
        fired_by_assumption > 10,
        "{fired_by_assumption} rewrites needed the assumptions"
    );
}

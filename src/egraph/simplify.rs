//! Bounded equality saturation: put a program's roots into one e-graph, run
//! the rule set under node, iteration and time limits, and extract the
//! roots together with the DAG extractor.
//!
//! Reaching a limit is an outcome, not an error: the best program found so
//! far is returned with a `Report` saying which limit stopped the run.

use super::analysis::{FactsAnalysis, MathGraph};
use super::assume::Assumptions;
use super::builder::compact;
use super::cost::node_cost;
use super::extract::{Extracted, Extraction, extract};
use super::rules::{MathRewrite, all_rules};
use super::schedule::ParallelBackoff;
use crate::ir::math::language::Math;
use egg::{Id, RecExpr, Runner, StopReason};
use std::time::{Duration, Instant};

/// Programs with more nodes than this skip saturation: sharing (CSE) and
/// constant folding only, as docs/design.md (decision 4) says of large traces. Greedy
/// DAG extraction and rule matching both grow faster than linearly.
pub const MAX_SATURATION_NODES: usize = 5_000;

/// The cost of a program with each node counted once.
fn program_cost(expr: &RecExpr<Math>) -> u64 {
    let nodes = expr.as_ref();
    nodes
        .iter()
        .map(|node| node_cost(node, |id| nodes[usize::from(id)].constant().is_some()))
        .sum()
}

/// How hard to simplify (SPEC's `set-optimize!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// No e-graph: only the builder's everywhere-true identities.
    None,
    /// Bounded saturation (the default).
    Bounded,
    /// Saturate until a fixed point or the (larger) limits.
    Full,
}

/// The limits that always apply to a saturation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Rule-application rounds.
    pub iterations: usize,
    /// E-nodes in the e-graph.
    pub nodes: usize,
    /// Wall-clock time.
    pub time: Duration,
}

impl Level {
    /// The level for SPEC's numbers 0, 1, 2.
    pub fn from_number(level: i64) -> Option<Level> {
        match level {
            0 => Some(Level::None),
            1 => Some(Level::Bounded),
            2 => Some(Level::Full),
            _ => None,
        }
    }

    /// The default limits of this level.
    pub fn default_limits(self) -> Limits {
        match self {
            Level::None => Limits {
                iterations: 0,
                nodes: 0,
                time: Duration::ZERO,
            },
            Level::Bounded => Limits {
                iterations: 12,
                nodes: 30_000,
                time: Duration::from_millis(2_000),
            },
            // Measured on the W3 workloads: 60 s of saturation from scratch
            // gave one node less on one of four; 5 or 20 s after level 1
            // gave none. So level 2 is bounded to a few seconds.
            Level::Full => Limits {
                iterations: 1_000,
                nodes: 1_000_000,
                time: Duration::from_secs(5),
            },
        }
    }
}

/// How a simplification went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Level 0: no saturation was run.
    NotRun,
    /// The program has more than `MAX_SATURATION_NODES` nodes: only sharing
    /// and constant folding were applied.
    TooLarge,
    /// No rule could change anything more.
    Saturated,
    /// The iteration limit was reached.
    IterationLimit,
    /// The node limit was reached.
    NodeLimit,
    /// The time limit was reached.
    TimeLimit,
}

impl Stop {
    /// A short description for messages and `simplify-stats`.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::NotRun => "not run",
            Stop::TooLarge => "size threshold",
            Stop::Saturated => "saturated",
            Stop::IterationLimit => "iteration limit",
            Stop::NodeLimit => "node limit",
            Stop::TimeLimit => "time limit",
        }
    }
}

/// What a simplification did.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// Why saturation stopped.
    pub stop: Stop,
    /// The limits that applied.
    pub limits: Limits,
    /// Rounds of rule application run.
    pub iterations: usize,
    /// E-nodes in the final e-graph.
    pub egraph_nodes: usize,
    /// E-classes in the final e-graph.
    pub egraph_classes: usize,
    /// Cost of the program before and after (each distinct node once).
    pub cost_before: u64,
    /// See `cost_before`.
    pub cost_after: u64,
    /// Which extractor's program was kept.
    pub extraction: Extraction,
    /// Total time, saturation and extraction included.
    pub elapsed: Duration,
}

impl Report {
    /// A warning to show the user when a resource limit cut the run short,
    /// or `None` when the result is as simplified as the level asks for.
    /// At level 1 the iteration limit is the intended bound and is not
    /// warned about; node and time limits always are.
    pub fn warning(&self, level: Level) -> Option<String> {
        if self.stop == Stop::TooLarge {
            return Some(format!(
                "the expression has more than {MAX_SATURATION_NODES} nodes, so only sharing and constant folding were applied; the result is correct but may not be the smallest"
            ));
        }
        let limit = match self.stop {
            Stop::NodeLimit => format!("{} e-nodes", self.limits.nodes),
            Stop::TimeLimit => format!("{:?}", self.limits.time),
            Stop::IterationLimit if level == Level::Full => {
                format!("{} iterations", self.limits.iterations)
            }
            _ => return None,
        };
        Some(format!(
            "simplification stopped at the {} ({limit}) after {} iterations; the result is correct but may not be the smallest",
            self.stop.describe(),
            self.iterations
        ))
    }
}

/// A simplified program.
#[derive(Clone, Debug)]
pub struct Simplified {
    /// The program; `roots` index into it.
    pub expr: RecExpr<Math>,
    /// One id per input root.
    pub roots: Vec<Id>,
    /// What happened.
    pub report: Report,
}

/// Simplifies the nodes `roots` of `expr` together, so subterms they share
/// are extracted once. `extra_rules` (user rules) run with the built-in set;
/// rules guarded on signs or integrality read `assumptions`.
pub fn simplify(
    expr: &RecExpr<Math>,
    roots: &[Id],
    level: Level,
    limits: Limits,
    extra_rules: &[MathRewrite],
    assumptions: &Assumptions,
) -> Simplified {
    if level == Level::Full {
        return simplify_further(expr, roots, limits, extra_rules, assumptions);
    }
    let started = Instant::now();
    let (expr, roots) = compact(expr, roots);
    let too_large = expr.len() > MAX_SATURATION_NODES;
    if level == Level::None || too_large {
        let cost = program_cost(&expr);
        let report = Report {
            stop: if too_large {
                Stop::TooLarge
            } else {
                Stop::NotRun
            },
            limits,
            iterations: 0,
            egraph_nodes: 0,
            egraph_classes: 0,
            cost_before: cost,
            cost_after: cost,
            extraction: Extraction::Dag,
            elapsed: started.elapsed(),
        };
        return Simplified {
            expr,
            roots,
            report,
        };
    }
    let mut egraph = MathGraph::new(FactsAnalysis::assuming(assumptions.clone()));
    let egraph_roots = add_program(&mut egraph, &expr, &roots);
    let rules: Vec<&MathRewrite> = all_rules().iter().chain(extra_rules).collect();
    let Saturated {
        egraph,
        best,
        cost_before,
        iterations,
        stop,
    } = saturate(egraph, &egraph_roots, limits, &rules, started);
    let report = Report {
        stop,
        limits,
        iterations,
        egraph_nodes: egraph.total_number_of_nodes(),
        egraph_classes: egraph.number_of_classes(),
        cost_before,
        cost_after: best.dag_cost,
        extraction: best.by,
        elapsed: started.elapsed(),
    };
    Simplified {
        expr: best.expr,
        roots: best.roots,
        report,
    }
}

/// Adds the nodes `roots` of `expr` to `egraph`, returning their classes.
pub(crate) fn add_program(egraph: &mut MathGraph, expr: &RecExpr<Math>, roots: &[Id]) -> Vec<Id> {
    let mut map = Vec::with_capacity(expr.len());
    for node in expr.as_ref() {
        map.push(
            egraph.add(egg::Language::map_children(node.clone(), |child| {
                map[usize::from(child)]
            })),
        );
    }
    egraph.rebuild();
    roots.iter().map(|&root| map[usize::from(root)]).collect()
}

/// What a staged saturation left.
pub(crate) struct Saturated {
    /// The e-graph after the last stage.
    pub egraph: MathGraph,
    /// The cheapest program of any stage (or the input's own).
    pub best: Extracted,
    /// The input's cost.
    pub cost_before: u64,
    /// Rounds of rule application run.
    pub iterations: usize,
    /// Why it stopped.
    pub stop: Stop,
}

/// Saturates `egraph` with `rules` in stages of growing length, extracting
/// `roots` after each: a larger e-graph holds every smaller form, but greedy
/// extraction can do worse on it, so the best program of any stage is kept.
/// `started` is when the operation began; `limits.time` counts from it.
pub(crate) fn saturate(
    mut egraph: MathGraph,
    roots: &[Id],
    limits: Limits,
    rules: &[&MathRewrite],
    started: Instant,
) -> Saturated {
    let before = extract(&egraph, roots);
    let cost_before = before.dag_cost;
    let mut best = before;
    let mut iterations = 0;
    let mut stop = Stop::IterationLimit;
    let mut stage = 1;
    while iterations < limits.iterations {
        let stage_iterations = stage.min(limits.iterations - iterations);
        let runner = Runner::<Math, FactsAnalysis>::new(FactsAnalysis::default())
            .with_egraph(egraph)
            .with_iter_limit(stage_iterations)
            .with_node_limit(limits.nodes)
            .with_time_limit(limits.time.saturating_sub(started.elapsed()))
            .with_scheduler(ParallelBackoff::default())
            .run(rules.iter().copied());
        iterations += runner.iterations.len();
        stop = match runner.stop_reason {
            Some(StopReason::Saturated) => Stop::Saturated,
            Some(StopReason::NodeLimit(_)) => Stop::NodeLimit,
            Some(StopReason::TimeLimit(_)) => Stop::TimeLimit,
            _ => Stop::IterationLimit,
        };
        egraph = runner.egraph;
        // Extraction counts against the time limit too: once it is spent,
        // the best program of the stages before is the result.
        if started.elapsed() >= limits.time {
            stop = Stop::TimeLimit;
            break;
        }
        let candidate = extract(&egraph, roots);
        if candidate.dag_cost < best.dag_cost {
            best = candidate;
        }
        if stop != Stop::IterationLimit {
            break;
        }
        stage *= 2;
    }
    Saturated {
        egraph,
        best,
        cost_before,
        iterations,
        stop,
    }
}

/// Level 2: level 1 first, then saturation with the larger limits from
/// level 1's result, keeping the cheaper program. Starting from level 1's
/// result means level 2 is never worse than level 1, and its time goes to
/// the rewrites level 1 had no iterations left for.
fn simplify_further(
    expr: &RecExpr<Math>,
    roots: &[Id],
    limits: Limits,
    extra_rules: &[MathRewrite],
    assumptions: &Assumptions,
) -> Simplified {
    let started = Instant::now();
    let bounded = Level::Bounded.default_limits();
    // Level 1's own limits, even when an earlier pass of the operation
    // (a Hessian's gradient) spent the time: level 2 is never worse.
    let first = simplify(
        expr,
        roots,
        Level::Bounded,
        bounded,
        extra_rules,
        assumptions,
    );
    if first.report.stop == Stop::TooLarge || first.report.stop == Stop::Saturated {
        return first;
    }
    let rest = Limits {
        time: limits.time.saturating_sub(started.elapsed()),
        ..limits
    };
    let second = simplify(
        &first.expr,
        &first.roots,
        Level::Bounded,
        rest,
        extra_rules,
        assumptions,
    );
    let report = Report {
        limits,
        iterations: first.report.iterations + second.report.iterations,
        cost_before: first.report.cost_before,
        elapsed: started.elapsed(),
        ..second.report
    };
    if second.report.cost_after < first.report.cost_after {
        Simplified { report, ..second }
    } else {
        Simplified {
            report: Report {
                cost_after: first.report.cost_after,
                extraction: first.report.extraction,
                ..report
            },
            ..first
        }
    }
}

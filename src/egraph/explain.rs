//! Explanations: why a formula came out as it did. The derivative rules
//! applied to each node on the way from the output to a variable, and the
//! chain of rewrites egg records from an expression to its simplified form
//! (each step naming the rule and the subterm it rewrote).
//!
//! The simplification is the same staged saturation as `simplify`, on an
//! e-graph with egg's explanations enabled; the steps come from
//! `explain_equivalence` between the input and the extracted result.

use super::analysis::{FactsAnalysis, MathGraph};
use super::builder::{ExprBuilder, compact};
use super::derivatives::Options;
use super::reverse::gradient;
use super::rules::{MathRewrite, all_rules};
use super::simplify::{MAX_SATURATION_NODES, Saturated, Stop, add_program, saturate, simplify};
use crate::ir::math::functions::Functions;
use crate::ir::math::language::Math;
use crate::ir::math::partials::local_partials;
use egg::{FlatTerm, Id, Language, RecExpr, Symbol, TreeTerm};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// One rewrite: `rule` turned the subterm `before` into `after`, giving
/// the whole expression `expr`.
#[derive(Clone, Debug)]
pub struct Rewrite {
    /// The rule's name (`mul-one`, `fold-constant`, a `defrule` name).
    pub rule: String,
    /// The rule was applied right to left (its right side matched).
    pub backward: bool,
    /// The subterm rewritten.
    pub before: RecExpr<Math>,
    /// What it became.
    pub after: RecExpr<Math>,
    /// The whole expression after this step.
    pub expr: RecExpr<Math>,
}

/// The local derivative rule applied at one node of the expression.
#[derive(Clone, Debug)]
pub struct DerivativeRule {
    /// What the rule is called (`product rule`, `chain rule (sin)`).
    pub rule: String,
    /// The node.
    pub node: RecExpr<Math>,
    /// For each child it depends on through a variable: the child and the
    /// partial derivative of the node with respect to it.
    pub partials: Vec<(RecExpr<Math>, RecExpr<Math>)>,
}

/// How a derivative was formed.
#[derive(Clone, Debug)]
pub struct Derivation {
    /// The variable.
    pub var: Symbol,
    /// The rule at each node between the output and the variable, output
    /// first.
    pub rules: Vec<DerivativeRule>,
    /// The derivative as the reverse sweep builds it, before simplification.
    pub raw: RecExpr<Math>,
}

/// An explanation of one expression.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The derivative's formation, when one was asked for.
    pub derivation: Option<Derivation>,
    /// The expression simplification starts from.
    pub start: RecExpr<Math>,
    /// The rewrites, in order; the last `expr` is the result.
    pub steps: Vec<Rewrite>,
    /// The simplified expression.
    pub result: RecExpr<Math>,
    /// Why saturation stopped.
    pub stop: Stop,
    /// When the expression was too large to explain step by step: its
    /// size written out as a tree.
    pub too_large: Option<usize>,
}

/// Explains the simplification of the node `root` of `expr`, or, with
/// `wrt`, of its derivative with respect to that variable.
pub fn explain(
    expr: &RecExpr<Math>,
    root: Id,
    wrt: Option<Symbol>,
    options: &Options,
) -> Explanation {
    let started = Instant::now();
    let input = subterm(expr, root);
    // Rules are listed per node of the input, each with its subterm.
    let input_size = tree_size(&input);
    let listable = input_size <= MAX_EXPLAINED_SIZE;
    let (start, derivation) = match wrt {
        None => (input, None),
        Some(var) => {
            let derivation = derive(&input, var, options.functions, listable);
            (derivation.raw.clone(), Some(derivation))
        }
    };
    let written_out = tree_size(&start).max(input_size);
    if !listable || start.as_ref().len() > MAX_SATURATION_NODES || written_out > MAX_EXPLAINED_SIZE
    {
        let simplified = simplify(
            &start,
            &[Id::from(start.as_ref().len() - 1)],
            options.level,
            options.limits,
            options.rules,
            options.assumptions,
        );
        return Explanation {
            derivation,
            result: subterm(&simplified.expr, simplified.roots[0]),
            start,
            steps: Vec::new(),
            stop: simplified.report.stop,
            too_large: Some(written_out),
        };
    }
    let mut egraph = MathGraph::new(FactsAnalysis::assuming(options.assumptions.clone()))
        .with_explanations_enabled();
    let last = Id::from(start.as_ref().len() - 1);
    let roots = add_program(&mut egraph, &start, &[last]);
    let rules: Vec<&MathRewrite> = all_rules().iter().chain(options.rules).collect();
    let Saturated {
        mut egraph,
        best,
        stop,
        ..
    } = saturate(egraph, &roots, options.limits, &rules, started);
    let result = subterm(&best.expr, best.roots[0]);
    let moves = between(&mut egraph, &tree(&start), &tree(&result));
    let steps = replay(&tree(&start), moves);
    Explanation {
        derivation,
        start,
        steps,
        result,
        stop,
        too_large: None,
    }
}

/// Steps are shown as whole trees, and egg's proofs are trees too: past
/// this many nodes written out (a derivative's shared subterms repeated),
/// the expression is simplified but not explained step by step.
pub const MAX_EXPLAINED_SIZE: usize = 2_000;

/// The node count of the last node of `expr` written out as a tree
/// (saturating).
fn tree_size(expr: &RecExpr<Math>) -> usize {
    let mut sizes: Vec<usize> = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let size = node.children().iter().fold(1usize, |total, &child| {
            total.saturating_add(sizes[usize::from(child)])
        });
        sizes.push(size);
    }
    sizes.last().copied().unwrap_or(0)
}

/// The nodes `root` reaches, as their own program with `root` last
/// (`compact` keeps children before parents, and the root reaches every
/// node it keeps). Not recursive: expressions may nest deeply.
fn subterm(expr: &RecExpr<Math>, root: Id) -> RecExpr<Math> {
    compact(expr, &[root]).0
}

/// A term as a tree (egg's flat terms, without rewrite marks).
type Tree = FlatTerm<Math>;

/// The tree of the last node of `expr`.
fn tree(expr: &RecExpr<Math>) -> Tree {
    fn at(expr: &RecExpr<Math>, id: Id) -> Tree {
        let node = &expr[id];
        Tree::new(
            node.clone(),
            node.children().iter().map(|&c| at(expr, c)).collect(),
        )
    }
    at(expr, Id::from(expr.as_ref().len() - 1))
}

/// A tree as a program.
fn program(term: &Tree) -> RecExpr<Math> {
    fn add(term: &Tree, out: &mut RecExpr<Math>) -> Id {
        let children: Vec<Id> = term.children.iter().map(|c| add(c, out)).collect();
        let mut next = children.into_iter();
        out.add(
            term.node
                .clone()
                .map_children(|_| next.next().expect("one id per child")),
        )
    }
    let mut out = RecExpr::default();
    add(term, &mut out);
    out
}

/// One rewrite at a place in the whole term: the child indices leading to
/// the subterm, and what it becomes.
struct Move {
    rule: String,
    backward: bool,
    path: Vec<usize>,
    after: Tree,
}

/// The rewrites turning `from` into `to` (equal in `egraph`). Where both
/// have the same operator and equal children classes, each child is
/// explained on its own (congruence); elsewhere egg's proof is used.
fn between(egraph: &mut MathGraph, from: &Tree, to: &Tree) -> Vec<Move> {
    if from == to {
        return Vec::new();
    }
    let same_operator = from.node.matches(&to.node) && from.children.len() == to.children.len();
    if same_operator {
        let class = |egraph: &MathGraph, t: &Tree| egraph.lookup_expr(&program(t));
        let congruent = from.children.iter().zip(&to.children).all(|(a, b)| {
            let (a, b) = (class(egraph, a), class(egraph, b));
            a.is_some() && a == b
        });
        if congruent {
            let mut moves = Vec::new();
            for (index, (a, b)) in from.children.iter().zip(&to.children).enumerate() {
                for mut step in between(egraph, a, b) {
                    step.path.insert(0, index);
                    moves.push(step);
                }
            }
            return moves;
        }
    }
    let mut proof = egraph.explain_equivalence(&program(from), &program(to));
    if flat_steps(&proof.explanation_trees, &mut HashMap::new()) > MAX_PROOF_STEPS {
        return vec![Move {
            rule: format!("(a proof of more than {MAX_PROOF_STEPS} steps, not shown)"),
            backward: false,
            path: Vec::new(),
            after: to.clone(),
        }];
    }
    proof
        .make_flat_explanation()
        .iter()
        .skip(1)
        .filter_map(marked)
        .collect()
}

/// The longest proof of one equality that is flattened into steps. A
/// proof shares sub-proofs, and its flat form repeats them, so it can be
/// exponentially longer (seen after an unsound rule such as `1 -> 2`).
const MAX_PROOF_STEPS: u64 = 2_000;

/// An upper bound on the steps of the flat form of `proof`: every step of
/// every sub-proof, counted as often as the flat form repeats it
/// (saturating; shared sub-proofs are counted once each and reused).
fn flat_steps(
    proof: &[Rc<TreeTerm<Math>>],
    counted: &mut HashMap<*const TreeTerm<Math>, u64>,
) -> u64 {
    proof.iter().fold(0u64, |total, term| {
        let key = Rc::as_ptr(term);
        let steps = match counted.get(&key) {
            Some(&steps) => steps,
            None => {
                let steps = term.child_proofs.iter().fold(1u64, |sum, child| {
                    sum.saturating_add(flat_steps(child, counted))
                });
                counted.insert(key, steps);
                steps
            }
        };
        total.saturating_add(steps)
    })
}

/// The rewrite marked in one step of egg's flat proof.
fn marked(term: &Tree) -> Option<Move> {
    let mut path = Vec::new();
    let mut here = term;
    loop {
        if let Some(rule) = here.forward_rule.or(here.backward_rule) {
            return Some(Move {
                rule: rule.to_string(),
                backward: here.forward_rule.is_none(),
                path,
                after: here.remove_rewrites(),
            });
        }
        let index = here.children.iter().position(has_rewrite)?;
        path.push(index);
        here = &here.children[index];
    }
}

fn has_rewrite(term: &Tree) -> bool {
    term.forward_rule.is_some()
        || term.backward_rule.is_some()
        || term.children.iter().any(has_rewrite)
}

/// The moves applied in turn to `start`, each as a step with the whole
/// term after it; a stretch that comes back to a term seen before (egg's
/// proofs may go round through commutativity) is cut out.
fn replay(start: &Tree, moves: Vec<Move>) -> Vec<Rewrite> {
    let mut whole = start.clone();
    let mut seen = std::collections::HashMap::from([(whole.to_string(), 0usize)]);
    let mut steps: Vec<Rewrite> = Vec::new();
    for step in moves {
        let mut place = &mut whole;
        for &index in &step.path {
            place = &mut place.children[index];
        }
        let before = std::mem::replace(place, step.after.clone());
        let shown = whole.to_string();
        if let Some(&back) = seen.get(&shown) {
            for removed in steps.drain(back..) {
                seen.remove(&removed.expr.to_string());
            }
            continue;
        }
        steps.push(Rewrite {
            rule: step.rule,
            backward: step.backward,
            before: program(&before),
            after: program(&step.after),
            expr: program(&whole),
        });
        seen.insert(shown, steps.len());
    }
    steps
}

/// The reverse sweep's derivative of `root` with respect to `var`, with the
/// local rule at each node that depends on it.
fn derive(
    expr: &RecExpr<Math>,
    var: Symbol,
    functions: &Functions,
    list_rules: bool,
) -> Derivation {
    let mut builder = ExprBuilder::new();
    let root = builder.add_expr(expr, &[Id::from(expr.as_ref().len() - 1)])[0];
    let depends = dependence(builder.expr(), var);
    let mut rules = Vec::new();
    let mut seen = vec![false; usize::from(root) + 1];
    let mut stack = if list_rules { vec![root] } else { Vec::new() };
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[usize::from(id)], true) || !depends[usize::from(id)] {
            continue;
        }
        let node = builder.node(id).clone();
        if node.is_leaf() {
            continue;
        }
        let partials = local_partials(&node, id, &mut builder, functions);
        let mut shown = Vec::new();
        for (&child, partial) in node.children().iter().zip(partials) {
            if let (true, Some(partial)) = (depends[usize::from(child)], partial) {
                shown.push((
                    subterm(builder.expr(), child),
                    subterm(builder.expr(), partial),
                ));
            }
        }
        rules.push(DerivativeRule {
            rule: rule_name(&node),
            node: subterm(builder.expr(), id),
            partials: shown,
        });
        stack.extend(node.children().iter().rev().copied());
    }
    let derivative = gradient(&mut builder, root, &[var], functions)[0];
    Derivation {
        var,
        rules,
        raw: subterm(builder.expr(), derivative),
    }
}

/// Which nodes of `expr` depend on `var`.
fn dependence(expr: &RecExpr<Math>, var: Symbol) -> Vec<bool> {
    let mut depends = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let here = matches!(node, Math::Var(name) if *name == var)
            || node.children().iter().any(|&c| depends[usize::from(c)]);
        depends.push(here);
    }
    depends
}

fn rule_name(node: &Math) -> String {
    match node {
        Math::Add(_) => "sum rule".into(),
        Math::Sub(_) => "difference rule".into(),
        Math::Mul(_) => "product rule".into(),
        Math::Div(_) => "quotient rule".into(),
        Math::Neg(_) => "negation".into(),
        Math::Pow(_) => "power rule".into(),
        Math::Call(name, _) => format!("defderiv of {name}"),
        other => format!("chain rule ({other})"),
    }
}

impl std::fmt::Display for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(size) = self.too_large {
            let what = match &self.derivation {
                Some(derivation) => {
                    format!("the expression or its derivative by {}", derivation.var)
                }
                None => "the expression".to_string(),
            };
            return writeln!(
                f,
                "{what} is too large to explain step by step ({size} nodes written out as a tree, more than {MAX_EXPLAINED_SIZE}); simplify it instead"
            );
        }
        if let Some(derivation) = &self.derivation {
            writeln!(
                f,
                "d/d{} by the reverse sweep; the rule at each node:",
                derivation.var
            )?;
            for rule in &derivation.rules {
                write!(f, "  {}  [{}]:", rule.node, rule.rule)?;
                for (i, (child, partial)) in rule.partials.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}d/d{child} = {partial}")?;
                }
                writeln!(f)?;
            }
            writeln!(
                f,
                "derivative (sum over paths of the products of partials):"
            )?;
            writeln!(f, "  {}", self.start)?;
            writeln!(f, "simplified:")?;
        } else {
            writeln!(f, "{}", self.start)?;
        }
        if self.steps.is_empty() {
            writeln!(f, "  (no rule makes it smaller)")?;
        }
        for (n, step) in self.steps.iter().enumerate() {
            let direction = if step.backward { ", right to left" } else { "" };
            writeln!(
                f,
                "{}. {}{direction}: {} -> {}",
                n + 1,
                step.rule,
                step.before,
                step.after
            )?;
            writeln!(f, "   = {}", step.expr)?;
        }
        if matches!(self.stop, Stop::NodeLimit | Stop::TimeLimit) {
            write!(f, "(saturation stopped at the {})", self.stop.describe())?;
        }
        Ok(())
    }
}

//! Extraction's tests: tree costs against egg's extractor, and termination
//! and acyclic programs on e-graphs with cycles and ties.

use super::*;

/// The tree costs are egg's, class by class, on saturated
/// e-graphs of derivatives (where classes have many nodes and cycles).
#[test]
fn tree_choices_give_egg_extractor_costs() {
    for text in [
        "(* (+ a b) (* (+ b c) (* (+ c d) (+ d a))))",
        "(/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (* x x) (* y y)))",
        "(log (+ (exp (* a x)) (exp (* b y)) (sqrt (+ (* x x) 1))))",
    ] {
        let expr: RecExpr<Math> = text.parse().expect("parses");
        let runner = egg::Runner::default()
            .with_expr(&expr)
            .with_iter_limit(6)
            .with_node_limit(5_000)
            .run(crate::egraph::all_rules());
        let egraph = &runner.egraph;
        let best = tree_choices(egraph, &MathCost);
        let extractor = Extractor::new(
            egraph,
            TreeSum {
                egraph,
                cost: &MathCost,
            },
        );
        for class in egraph.classes() {
            let (cost, k) = best[&class.id];
            assert_eq!(cost, extractor.find_best_cost(class.id), "{text}");
            let node = &class.nodes[k];
            let summed = node
                .children()
                .iter()
                .fold(MathCost.cost(egraph, node), |sum, &child| {
                    sum.saturating_add(best[&egraph.find(child)].0)
                });
            assert_eq!(summed, cost, "{text}: the node chosen has the cost");
        }
    }
}

egg::define_language! {
    /// A language whose first variant, `pass`, costs nothing: classes
    /// joined through it tie, and its nodes sort first in their classes.
    enum Loop {
        "pass" = Pass(Id),
        "add" = Add([Id; 2]),
        "twice" = Twice(Id),
        Leaf(egg::Symbol),
    }
}

/// `pass` costs 0, a leaf 1, `add` and `twice` 2.
struct LoopCost;

impl NodeCost<Loop, ()> for LoopCost {
    fn cost(&self, _: &EGraph<Loop, ()>, node: &Loop) -> u64 {
        match node {
            Loop::Pass(_) => 0,
            Loop::Leaf(_) => 1,
            Loop::Add(_) | Loop::Twice(_) => 2,
        }
    }
}

/// A small deterministic generator (xorshift), so the e-graphs are the
/// same on every run.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// An e-graph of `pairs` pairs of classes `{a_i, (pass b_i)}` and
/// `{b_i, (pass a_i)}` — a cycle of zero-cost nodes between two classes of
/// equal cost, the `pass` node first in each — chained by `add` and
/// `twice` nodes, with random unions among the chain (more cycles, more
/// ties).
fn looping_egraph(pairs: usize, seed: u64) -> (EGraph<Loop, ()>, Vec<Id>) {
    let mut egraph: EGraph<Loop, ()> = EGraph::default();
    let mut random = Xorshift(seed);
    let mut classes = Vec::new();
    for i in 0..pairs {
        let a = egraph.add(Loop::Leaf(format!("a{i}").into()));
        let b = egraph.add(Loop::Leaf(format!("b{i}").into()));
        let to_b = egraph.add(Loop::Pass(b));
        let to_a = egraph.add(Loop::Pass(a));
        egraph.union(a, to_b);
        egraph.union(b, to_a);
        classes.extend([a, b]);
    }
    for i in 1..classes.len() {
        let previous = classes[random.below(i)];
        let node = if random.below(2) == 0 {
            Loop::Add([previous, classes[i]])
        } else {
            Loop::Twice(previous)
        };
        let made = egraph.add(node);
        classes.push(made);
        if random.below(4) == 0 {
            let other = classes[random.below(classes.len())];
            egraph.union(made, other);
        }
    }
    egraph.rebuild();
    let roots = classes.iter().map(|&id| egraph.find(id)).collect();
    (egraph, roots)
}

/// The least tree cost of every class by the plain fixpoint (costs only go
/// down, until nothing changes): the oracle for `tree_choices`.
fn fixpoint_tree_costs(egraph: &EGraph<Loop, ()>) -> FxHashMap<Id, u64> {
    let mut costs: FxHashMap<Id, u64> = FxHashMap::default();
    loop {
        let mut changed = false;
        for class in egraph.classes() {
            for node in &class.nodes {
                let total =
                    node.children()
                        .iter()
                        .try_fold(LoopCost.cost(egraph, node), |sum, &c| {
                            costs
                                .get(&egraph.find(c))
                                .map(|&cost| sum.saturating_add(cost))
                        });
                if let Some(total) = total
                    && costs.get(&class.id).is_none_or(|&old| total < old)
                {
                    costs.insert(class.id, total);
                    changed = true;
                }
            }
        }
        if !changed {
            return costs;
        }
    }
}

/// The tree cost of the program's node `id`, each use of a child paid.
fn program_tree_cost(expr: &RecExpr<Loop>, id: Id, memo: &mut FxHashMap<Id, u64>) -> u64 {
    if let Some(&cost) = memo.get(&id) {
        return cost;
    }
    let node = &expr[id];
    let cost = node
        .children()
        .iter()
        .fold(LoopCost.cost(&EGraph::default(), node), |sum, &child| {
            sum.saturating_add(program_tree_cost(expr, child, memo))
        });
    memo.insert(id, cost);
    cost
}

/// On e-graphs above the 1,000-class threshold whose classes are joined by
/// zero-cost cycles and tie, both extractions end, every root gets a
/// program (children before parents: no cycle), and the tree extraction's
/// program for each root costs that root's least tree cost.
#[test]
fn extraction_ends_on_cycles_and_ties_above_the_threshold() {
    for seed in [1, 7, 42, 2024] {
        let (egraph, roots) = looping_egraph(700, seed);
        assert!(
            egraph.number_of_classes() > STOCK_TREE_CLASSES,
            "{}",
            egraph.number_of_classes()
        );
        let least = fixpoint_tree_costs(&egraph);
        let best = tree_choices(&egraph, &LoopCost);
        for class in egraph.classes() {
            assert_eq!(
                best[&class.id].0, least[&class.id],
                "seed {seed}: class {}",
                class.id
            );
        }
        for extracted in [
            extract_tree_by(&egraph, &roots, &LoopCost),
            extract_by(&egraph, &roots, &LoopCost),
        ] {
            assert_eq!(extracted.roots.len(), roots.len());
            for (index, node) in extracted.expr.as_ref().iter().enumerate() {
                for &child in node.children() {
                    assert!(
                        usize::from(child) < index,
                        "seed {seed}: a child after its parent"
                    );
                }
            }
            if extracted.by == Extraction::Tree {
                let mut memo = FxHashMap::default();
                for (&root, &id) in roots.iter().zip(&extracted.roots) {
                    let cost = program_tree_cost(&extracted.expr, id, &mut memo);
                    assert_eq!(cost, least[&root], "seed {seed}: root {root}");
                }
            }
        }
    }
}

/// A cycle in the choices is refused by the program builder (no program)
/// rather than walked forever.
#[test]
fn a_cycle_of_choices_builds_no_program() {
    let (egraph, _) = looping_egraph(1, 3);
    let a = egraph
        .lookup(Loop::Leaf("a0".into()))
        .expect("a0 is in the e-graph");
    let b = egraph
        .lookup(Loop::Leaf("b0".into()))
        .expect("b0 is in the e-graph");
    let choices = FxHashMap::from_iter([(a, Loop::Pass(b)), (b, Loop::Pass(a))]);
    assert!(extract_with(&egraph, &[a], &choices, Extraction::Tree, &LoopCost).is_none());
    let leaf = FxHashMap::from_iter([(a, Loop::Leaf("a0".into()))]);
    let program = extract_with(&egraph, &[a], &leaf, Extraction::Tree, &LoopCost).expect("a leaf");
    assert_eq!(program.dag_cost, 1);
}

//! DAG-aware extraction: picks one node per e-class for a set of roots so
//! that the program they form — where a shared subterm is computed once —
//! is cheap.
//!
//! egg's stock `Extractor` minimises the cost of each root as a *tree* (on
//! e-graphs of more than 1,000 classes, `tree_choices`: the same fixpoint
//! by a worklist), so a
//! subterm used k times is paid k times and the choice can favour forms that
//! share nothing. Here each class's candidate cost is the sum over the *set*
//! of classes its choice reaches (greedy DAG extraction, as in the
//! extraction-gym project): a worklist recomputes a class when one of its
//! children improves. The tree extractor's choice is also built, and the
//! cheaper of the two programs (measured as DAGs) is returned, so the result
//! is never worse than the stock extractor's.

use super::analysis::MathGraph;
use super::cost::node_cost;
use crate::ir::math::language::Math;
use egg::{Analysis, CostFunction, EGraph, Extractor, Id, Language, RecExpr};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

/// Which extractor produced a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extraction {
    /// Greedy DAG extraction.
    Dag,
    /// egg's tree-cost extraction (it was as cheap or cheaper).
    Tree,
}

/// The cost of one node as a step of a program (its children not
/// included), for any e-graph language.
pub trait NodeCost<L: Language, N: Analysis<L>> {
    /// The cost of `node`, which belongs to `egraph`.
    fn cost(&self, egraph: &EGraph<L, N>, node: &L) -> u64;
}

/// The cost model of scalar `Math` programs (`cost::node_cost`).
pub struct MathCost;

impl NodeCost<Math, super::analysis::FactsAnalysis> for MathCost {
    fn cost(&self, egraph: &MathGraph, node: &Math) -> u64 {
        node_cost(node, |id| egraph[id].data.constant.is_some())
    }
}

/// A program extracted from an e-graph.
#[derive(Clone, Debug)]
pub struct Extracted<L = Math> {
    /// The program; `roots` index into it.
    pub expr: RecExpr<L>,
    /// One id per requested root.
    pub roots: Vec<Id>,
    /// The program's cost with each distinct node counted once.
    pub dag_cost: u64,
    /// Which extractor's choice this is.
    pub by: Extraction,
}

/// Extracts `roots` of `egraph` (which must be rebuilt) as one program.
pub fn extract(egraph: &MathGraph, roots: &[Id]) -> Extracted {
    extract_by(egraph, roots, &MathCost)
}

/// Extraction by tree cost (as egg's stock `Extractor`); the baseline the DAG
/// extractor is measured against.
pub fn extract_tree(egraph: &MathGraph, roots: &[Id]) -> Extracted {
    extract_tree_by(egraph, roots, &MathCost)
}

/// Extracts `roots` of any `egraph` (rebuilt) under the cost model `cost`.
pub fn extract_by<L, N, C>(egraph: &EGraph<L, N>, roots: &[Id], cost: &C) -> Extracted<L>
where
    L: Language + Send + Sync,
    L::Discriminant: Sync,
    N: Analysis<L> + Sync,
    N::Data: Sync,
    C: NodeCost<L, N> + Sync,
{
    // The two extractors are independent: run side by side.
    let (tree, greedy) = rayon::join(
        || extract_tree_by(egraph, roots, cost),
        || greedy_dag_choices(egraph, cost),
    );
    let Some(mut choices) = greedy else {
        return tree;
    };
    improve(egraph, roots, &mut choices, cost);
    // Reached sets can go stale as choices improve; a program with a cycle
    // is not a program, so the tree extractor's choice stands in.
    let canonical: Vec<Id> = roots.iter().map(|&root| egraph.find(root)).collect();
    if dag_cost(egraph, &canonical, &choices, cost).is_none() {
        return tree;
    }
    let Some(dag) = extract_with(egraph, roots, &choices, Extraction::Dag, cost) else {
        return tree;
    };
    if tree.dag_cost < dag.dag_cost {
        tree
    } else {
        dag
    }
}

/// Tree-cost extraction of any e-graph under `cost`.
pub fn extract_tree_by<L, N, C>(egraph: &EGraph<L, N>, roots: &[Id], cost: &C) -> Extracted<L>
where
    L: Language,
    N: Analysis<L>,
    C: NodeCost<L, N>,
{
    let stock = || {
        let extractor = Extractor::new(egraph, TreeSum { egraph, cost });
        let choices = roots_closure(egraph, roots, |id| extractor.find_best_node(id).clone());
        extract_with(egraph, roots, &choices, Extraction::Tree, cost).expect(
            "egg's extractor only moves to a strictly cheaper node: its choices are acyclic",
        )
    };
    if egraph.number_of_classes() <= STOCK_TREE_CLASSES {
        return stock();
    }
    let best = tree_choices(egraph, cost);
    let choices = roots_closure(egraph, roots, |id| {
        let class = egraph.find(id);
        let &(_, k) = best
            .get(&class)
            .unwrap_or_else(|| panic!("e-class {class} has no finite choice"));
        egraph[class].nodes[k].clone()
    });
    // `tree_choices` settles each class from classes settled before it, so
    // its choices form no cycle; were one ever built, egg's extractor
    // stands in rather than a program that never ends.
    extract_with(egraph, roots, &choices, Extraction::Tree, cost).unwrap_or_else(stock)
}

/// E-graphs up to this many classes use egg's `Extractor` for the tree
/// choice (its ties decide the formulas shown in the guides); larger ones
/// `tree_choices`, the same costs in time linear in the work.
const STOCK_TREE_CLASSES: usize = 1000;

/// A `NodeCost` summed over trees, for egg's stock `Extractor`.
struct TreeSum<'a, L: Language, N: Analysis<L>, C> {
    egraph: &'a EGraph<L, N>,
    cost: &'a C,
}

impl<L: Language, N: Analysis<L>, C: NodeCost<L, N>> CostFunction<L> for TreeSum<'_, L, N, C> {
    type Cost = u64;

    fn cost<F>(&mut self, node: &L, mut costs: F) -> u64
    where
        F: FnMut(Id) -> u64,
    {
        let own = self.cost.cost(self.egraph, node);
        node.children()
            .iter()
            .fold(own, |total, &child| total.saturating_add(costs(child)))
    }
}

/// For each class, its least tree cost (each node's own cost plus its
/// children's, a shared child paid per use) and a node reaching it: the
/// fixpoint egg's `Extractor` computes, by Knuth's generalization of
/// Dijkstra's algorithm to e-graphs. A node enters a priority queue once,
/// when the last of its children is settled; the cheapest queued node
/// settles its class, each class exactly once. So the work is bounded
/// (every node queued at most once: O(n log n) for n nodes, whatever
/// cycles and ties the e-graph holds), and the choices form no cycle: a
/// class's node only names classes settled before it. (A tree cost is
/// never below its children's, which is what the algorithm needs; sums
/// saturate, which keeps that.) Among equal costs the node queued first
/// wins, then the lower class and node index; ties may be broken
/// otherwise than egg's.
fn tree_choices<L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    cost: &C,
) -> FxHashMap<Id, (u64, usize)> {
    // Every node, by class and index: its own cost, its children (with
    // repeats: a tree pays a child per use) and the count of distinct
    // children not yet settled.
    let mut own: FxHashMap<(Id, usize), u64> = FxHashMap::default();
    let mut pending: FxHashMap<(Id, usize), usize> = FxHashMap::default();
    let mut users: FxHashMap<Id, Vec<(Id, usize)>> = FxHashMap::default();
    let mut queue: BinaryHeap<Reverse<(u64, u64, Id, usize)>> = BinaryHeap::new();
    let mut order = 0u64;
    for class in egraph.classes() {
        for (k, node) in class.nodes.iter().enumerate() {
            let node_cost = cost.cost(egraph, node);
            let mut distinct: Vec<Id> = node.children().iter().map(|&c| egraph.find(c)).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.is_empty() {
                queue.push(Reverse((node_cost, order, class.id, k)));
                order += 1;
            } else {
                own.insert((class.id, k), node_cost);
                pending.insert((class.id, k), distinct.len());
                for child in distinct {
                    users.entry(child).or_default().push((class.id, k));
                }
            }
        }
    }
    let mut best: FxHashMap<Id, (u64, usize)> = FxHashMap::default();
    while let Some(Reverse((total, _, class, k))) = queue.pop() {
        if best.contains_key(&class) {
            continue;
        }
        best.insert(class, (total, k));
        for &(user, j) in users.get(&class).map(Vec::as_slice).unwrap_or_default() {
            if best.contains_key(&user) {
                continue;
            }
            let Some(left) = pending.get_mut(&(user, j)) else {
                continue;
            };
            *left -= 1;
            if *left == 0 {
                let node = &egraph[user].nodes[j];
                let sum = node.children().iter().fold(own[&(user, j)], |sum, &child| {
                    sum.saturating_add(best[&egraph.find(child)].0)
                });
                queue.push(Reverse((sum, order, user, j)));
                order += 1;
            }
        }
    }
    prefer_first_ties(egraph, &own, &mut best);
    best
}

/// Ties go to the first node of a class at the final costs, as in egg's
/// passes, but only a node whose children all cost strictly less than the
/// class: a cycle of choices would need a class cheaper than itself, so
/// none can form (a child of equal cost, through a node of cost zero,
/// could close one).
fn prefer_first_ties<L: Language, N: Analysis<L>>(
    egraph: &EGraph<L, N>,
    own: &FxHashMap<(Id, usize), u64>,
    best: &mut FxHashMap<Id, (u64, usize)>,
) {
    let classes: Vec<Id> = best.keys().copied().collect();
    for class in classes {
        let (least, chosen) = best[&class];
        let first = (0..chosen).find(|&k| {
            let Some(&node_cost) = own.get(&(class, k)) else {
                return false; // a leaf would have settled first
            };
            let children = egraph[class].nodes[k].children();
            let mut sum = node_cost;
            for &child in children {
                match best.get(&egraph.find(child)) {
                    Some(&(c, _)) if c < least => sum = sum.saturating_add(c),
                    _ => return false,
                }
            }
            sum == least
        });
        if let Some(k) = first {
            best.insert(class, (least, k));
        }
    }
}

/// Follows `choose` from `roots`, collecting the chosen node of every
/// reachable class.
fn roots_closure<L: Language, N: Analysis<L>>(
    egraph: &EGraph<L, N>,
    roots: &[Id],
    choose: impl Fn(Id) -> L,
) -> FxHashMap<Id, L> {
    let mut choices = FxHashMap::default();
    let mut stack: Vec<Id> = roots.iter().map(|&id| egraph.find(id)).collect();
    while let Some(class) = stack.pop() {
        if choices.contains_key(&class) {
            continue;
        }
        let node = choose(class);
        stack.extend(node.children().iter().map(|&child| egraph.find(child)));
        choices.insert(class, node);
    }
    choices
}

/// Builds the program made of `choices` (a node per class) for `roots`;
/// `None` when the choices form a cycle (no program) or miss a class. Each
/// class is expanded once, so the walk's stack holds at most one entry per
/// class and child edge, and it ends on any choices.
fn extract_with<L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    roots: &[Id],
    choices: &FxHashMap<Id, L>,
    by: Extraction,
    cost: &C,
) -> Option<Extracted<L>> {
    let mut expr = RecExpr::default();
    let mut built: FxHashMap<Id, Id> = FxHashMap::default();
    // Classes expanded whose node is not built yet: the current path.
    let mut open: FxHashSet<Id> = FxHashSet::default();
    let mut dag_cost = 0u64;
    let mut root_ids = Vec::with_capacity(roots.len());
    for &root in roots {
        // Post-order with an explicit stack: expressions may be deep.
        let mut stack = vec![(egraph.find(root), false)];
        while let Some((class, children_done)) = stack.pop() {
            if built.contains_key(&class) {
                continue;
            }
            let node = choices.get(&class)?;
            if children_done {
                dag_cost += cost.cost(egraph, node);
                if !node.all(|child| built.contains_key(&egraph.find(child))) {
                    return None;
                }
                let new = node
                    .clone()
                    .map_children(|child| built[&egraph.find(child)]);
                open.remove(&class);
                built.insert(class, expr.add(new));
            } else {
                if !open.insert(class) {
                    return None; // reached again before it was built: a cycle
                }
                stack.push((class, true));
                for &child in node.children() {
                    let child = egraph.find(child);
                    if open.contains(&child) {
                        return None;
                    }
                    if !built.contains_key(&child) {
                        stack.push((child, false));
                    }
                }
            }
        }
        root_ids.push(built[&egraph.find(root)]);
    }
    Some(Extracted {
        expr,
        roots: root_ids,
        dag_cost,
        by,
    })
}

/// How many rounds of local search follow the greedy pass.
const IMPROVEMENT_ROUNDS: usize = 3;

/// Work bounds (set entries copied; nodes visited by the local search), so
/// extraction stays fast on large e-graphs; past them the greedy pass gives
/// way to the tree extractor and the local search stops early.
const GREEDY_BUDGET: usize = 20_000_000;
const IMPROVE_BUDGET: usize = 20_000_000;

/// Local search on the whole program: for each class the program uses, try
/// each of its other nodes and keep the change when the program gets
/// cheaper — lower DAG cost, or equal cost with fewer nodes. Greedy
/// extraction cannot see that a subterm it pays for in one root is free in
/// another; this pass finds such sharing.
fn improve<L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    roots: &[Id],
    choices: &mut FxHashMap<Id, L>,
    cost: &C,
) {
    let roots: Vec<Id> = roots.iter().map(|&root| egraph.find(root)).collect();
    // Each class's cost under its current choice, computed once (a node's
    // cost may infer shapes): a candidate changes one class's entry. The
    // walks read choices and costs from tables indexed by class.
    let mut dense = Dense::of(choices, cost, egraph);
    let mut walk = DagWalk::default();
    let Some(mut current) = walk.cost(egraph, &roots, &dense) else {
        return;
    };
    let mut work = 0usize;
    for _ in 0..IMPROVEMENT_ROUNDS {
        let start = current;
        let used: Vec<Id> = roots_closure(egraph, &roots, |id| choices[&id].clone())
            .into_keys()
            .collect();
        for class in used {
            for node in &egraph[class].nodes {
                let usable = node
                    .children()
                    .iter()
                    .all(|&child| choices.contains_key(&egraph.find(child)));
                if !usable || choices.get(&class) == Some(node) {
                    continue;
                }
                work += current.1;
                if work > IMPROVE_BUDGET {
                    return;
                }
                let previous = dense.set(class, node.clone(), cost.cost(egraph, node));
                match walk.cost(egraph, &roots, &dense) {
                    Some(candidate) if candidate < current => {
                        current = candidate;
                        choices.insert(class, node.clone());
                    }
                    _ => dense.restore(class, previous),
                }
            }
        }
        if current >= start {
            break;
        }
    }
}

/// The cost of the program `choices` make for `roots`, each class counted
/// once, and its number of nodes; `None` if the choices form a cycle.
fn dag_cost<L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    roots: &[Id],
    choices: &FxHashMap<Id, L>,
    cost: &C,
) -> Option<(u64, usize)> {
    DagWalk::default().cost(egraph, roots, &Dense::of(choices, cost, egraph))
}

/// Choices and their costs in tables indexed by class id, for walks that
/// read them many times.
struct Dense<L> {
    choices: Vec<Option<L>>,
    costs: Vec<u64>,
}

impl<L: Language> Dense<L> {
    /// The tables of `choices` under `cost` (a node's cost computed once:
    /// it may infer shapes).
    fn of<N: Analysis<L>, C: NodeCost<L, N>>(
        choices: &FxHashMap<Id, L>,
        cost: &C,
        egraph: &EGraph<L, N>,
    ) -> Self {
        let size = choices
            .keys()
            .map(|&id| usize::from(id) + 1)
            .max()
            .unwrap_or(0);
        let mut dense = Dense {
            choices: vec![None; size],
            costs: vec![0; size],
        };
        for (&class, node) in choices {
            dense.choices[usize::from(class)] = Some(node.clone());
            dense.costs[usize::from(class)] = cost.cost(egraph, node);
        }
        dense
    }

    fn choice(&self, class: Id) -> Option<&L> {
        self.choices.get(usize::from(class))?.as_ref()
    }

    /// Chooses `node` (of cost `cost`) for `class`; what it replaced.
    fn set(&mut self, class: Id, node: L, cost: u64) -> (Option<L>, u64) {
        let at = usize::from(class);
        if at >= self.choices.len() {
            self.choices.resize(at + 1, None);
            self.costs.resize(at + 1, 0);
        }
        let node = self.choices[at].replace(node);
        (node, std::mem::replace(&mut self.costs[at], cost))
    }

    /// Puts back what [`Dense::set`] replaced.
    fn restore(&mut self, class: Id, (node, cost): (Option<L>, u64)) {
        let at = usize::from(class);
        self.choices[at] = node;
        self.costs[at] = cost;
    }
}

/// `dag_cost` for the local search: the visit state kept between walks
/// (stamped with the walk's number, so it needs no clearing).
#[derive(Default)]
struct DagWalk {
    /// Per class: the walk that put it on the stack, and that finished it.
    entered: Vec<u32>,
    finished: Vec<u32>,
    walk: u32,
    stack: Vec<(Id, bool)>,
}

impl DagWalk {
    /// As [`dag_cost`], on the tables `dense`.
    fn cost<L: Language, N: Analysis<L>>(
        &mut self,
        egraph: &EGraph<L, N>,
        roots: &[Id],
        dense: &Dense<L>,
    ) -> Option<(u64, usize)> {
        let size = dense
            .choices
            .len()
            .max(roots.iter().map(|&r| usize::from(r) + 1).max().unwrap_or(0));
        if self.entered.len() < size || self.walk == u32::MAX {
            self.entered = vec![0; size];
            self.finished = vec![0; size];
            self.walk = 0;
        }
        self.walk += 1;
        let walk = self.walk;
        let (entered, finished) = (&mut self.entered, &mut self.finished);
        let (mut total, mut n_nodes) = (0u64, 0usize);
        for &root in roots {
            let stack = &mut self.stack;
            stack.clear();
            stack.push((root, false));
            while let Some((class, children_done)) = stack.pop() {
                let at = usize::from(class);
                if children_done {
                    finished[at] = walk;
                    total += dense.costs[at];
                    n_nodes += 1;
                    continue;
                }
                if finished[at] == walk {
                    continue;
                }
                if entered[at] == walk {
                    return None;
                }
                entered[at] = walk;
                stack.push((class, true));
                for &child in dense.choice(class)?.children() {
                    let child = egraph.find(child);
                    let c = usize::from(child);
                    if c >= entered.len() {
                        return None; // a class with no choice
                    }
                    if finished[c] != walk {
                        if entered[c] == walk {
                            return None;
                        }
                        stack.push((child, false));
                    }
                }
            }
        }
        Some((total, n_nodes))
    }
}

/// The best choice found so far for a class: its node, and the cost of
/// every class that choice reaches (itself included).
struct Best<L> {
    node: L,
    reached: Rc<Reached>,
    total: u64,
}

/// The classes a choice reaches, each with a cost, sorted by class.
type Reached = Vec<(Id, u64)>;

/// Whether `reached` holds `class`.
fn reaches(reached: &Reached, class: Id) -> bool {
    reached.binary_search_by_key(&class, |&(id, _)| id).is_ok()
}

/// Greedy DAG extraction: a node's cost is the summed cost of the union of
/// the classes reached by its children's choices, plus its own. `None` when
/// the work exceeds `GREEDY_BUDGET`.
fn greedy_dag_choices<L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    cost: &C,
) -> Option<FxHashMap<Id, L>> {
    let mut work = 0usize;
    let mut best: FxHashMap<Id, Best<L>> = FxHashMap::default();
    let mut queue: VecDeque<Id> = VecDeque::new();
    let mut queued: FxHashSet<Id> = FxHashSet::default();
    for class in egraph.classes() {
        if class.nodes.iter().any(|node| node.is_leaf()) {
            queue.push_back(class.id);
            queued.insert(class.id);
        }
    }
    while let Some(class_id) = queue.pop_front() {
        queued.remove(&class_id);
        let mut improved = false;
        for node in &egraph[class_id].nodes {
            let Some(found) = candidate(egraph, &best, class_id, node, cost) else {
                continue;
            };
            work += found.size;
            if work > GREEDY_BUDGET {
                return None;
            }
            if best
                .get(&class_id)
                .is_none_or(|current| found.total < current.total)
            {
                let reached = found.reached(class_id);
                best.insert(
                    class_id,
                    Best {
                        node: node.clone(),
                        reached,
                        total: found.total,
                    },
                );
                improved = true;
            }
        }
        if improved {
            for parent in egraph[class_id].parents() {
                let parent = egraph.find(parent);
                if queued.insert(parent) {
                    queue.push_back(parent);
                }
            }
        }
    }
    Some(best.into_iter().map(|(id, best)| (id, best.node)).collect())
}

/// A node's candidacy for its class: the children's choices it would
/// join, and what the union of their reached sets would cost. The union
/// itself is built only for a candidate that wins ([`Candidate::reached`]).
struct Candidate<'a> {
    own: u64,
    /// The children's reached sets, the largest first.
    children: Vec<&'a Reached>,
    /// The union's cost, the node's own included.
    total: u64,
    /// The union's size, the class included.
    size: usize,
}

/// The candidacy of `node` for `class_id`, if all its children have
/// choices and none of them reaches `class_id` (a cycle).
fn candidate<'a, L: Language, N: Analysis<L>, C: NodeCost<L, N>>(
    egraph: &EGraph<L, N>,
    best: &'a FxHashMap<Id, Best<L>>,
    class_id: Id,
    node: &L,
    cost: &C,
) -> Option<Candidate<'a>> {
    let own = cost.cost(egraph, node);
    let mut children: Vec<&Best<L>> = Vec::with_capacity(2);
    for &child in node.children() {
        let child = egraph.find(child);
        if child == class_id {
            return None;
        }
        children.push(best.get(&child)?);
    }
    children.sort_by_key(|child| std::cmp::Reverse(child.reached.len()));
    let Some((largest, others)) = children.split_first() else {
        return Some(Candidate {
            own,
            children: Vec::new(),
            total: own,
            size: 1,
        });
    };
    if reaches(&largest.reached, class_id) {
        return None;
    }
    // A class adds its cost once: the first child that reaches it (in
    // this order) pays.
    let (mut total, mut size) = (largest.total, largest.reached.len());
    for (k, other) in others.iter().enumerate() {
        if reaches(&other.reached, class_id) {
            return None;
        }
        for &(id, cost) in other.reached.iter() {
            let earlier = reaches(&largest.reached, id)
                || others[..k]
                    .iter()
                    .any(|before| reaches(&before.reached, id));
            if !earlier {
                total += cost;
                size += 1;
            }
        }
    }
    Some(Candidate {
        own,
        children: children.iter().map(|child| &*child.reached).collect(),
        total: total + own,
        size: size + 1,
    })
}

impl Candidate<'_> {
    /// The union of the children's reached sets with `class_id` added. A
    /// class reached by several children keeps the cost the last of them
    /// gives it (as inserting each child's set into a map in turn).
    fn reached(&self, class_id: Id) -> Rc<Reached> {
        let mut reached: Reached = match self.children.split_first() {
            None => Vec::with_capacity(1),
            Some((largest, others)) => {
                let mut reached = (*largest).clone();
                for other in others {
                    reached = union_later_wins(&reached, other);
                }
                reached
            }
        };
        let at = reached.partition_point(|&(id, _)| id < class_id);
        reached.insert(at, (class_id, self.own));
        Rc::new(reached)
    }
}

/// The union of two sorted sets; a class in both takes `later`'s cost.
fn union_later_wins(earlier: &Reached, later: &Reached) -> Reached {
    let mut merged = Vec::with_capacity(earlier.len() + later.len());
    let (mut a, mut b) = (0, 0);
    while a < earlier.len() && b < later.len() {
        let (x, y) = (earlier[a], later[b]);
        match x.0.cmp(&y.0) {
            std::cmp::Ordering::Less => {
                merged.push(x);
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                merged.push(y);
                b += 1;
            }
            std::cmp::Ordering::Equal => {
                merged.push(y);
                a += 1;
                b += 1;
            }
        }
    }
    merged.extend_from_slice(&earlier[a..]);
    merged.extend_from_slice(&later[b..]);
    merged
}

#[cfg(test)]
mod tests;

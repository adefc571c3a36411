//! Memory-budgeted rematerialization: when a tape's peak memory is over
//! the budget, values that are cheap to compute again — elementwise chains
//! from the inputs and constants, which fuse into one pass — are computed
//! again right before their late uses instead of being kept alive across
//! the gap. The value with the most bytes times gap goes first; a change
//! is kept unless it raises the peak, until the peak fits or nothing cheap
//! is left; the original tape is kept if the peak did not come down.

use super::{Tape, compile};
use crate::ir::shape::numel;
use crate::ir::{Shape, TNode, TOp};
use egg::{Id, RecExpr};

/// Rematerializations tried at most per tape.
const MAX_ROUNDS: usize = 64;

/// Nodes a recomputed chain may have at most.
const MAX_CHAIN: usize = 32;

/// `compile`, then recomputation of cheap values until the peak fits in
/// `budget` bytes (or nothing cheap is left). The tape's stats say what
/// was done.
pub fn compile_within(
    program: &RecExpr<TNode>,
    shapes: &[Shape],
    roots: &[Id],
    input_shapes: &[Shape],
    budget: usize,
) -> Tape {
    let original = compile(program, shapes, roots, input_shapes);
    let mut current = original.clone();
    let mut nodes: Vec<TNode> = program.as_ref().to_vec();
    let mut shapes = shapes.to_vec();
    let mut roots = roots.to_vec();
    let mut tried: Vec<Vec<TNode>> = Vec::new();
    let mut rematerialized = 0;
    for _ in 0..MAX_ROUNDS {
        if current.stats.peak_bytes <= budget {
            break;
        }
        let Some(candidate) = rematerialize_one(&nodes, &shapes, &roots, &tried) else {
            break;
        };
        tried.push(candidate.chain.clone());
        let tape = compile(
            &RecExpr::from(candidate.nodes.clone()),
            &candidate.shapes,
            &candidate.roots,
            input_shapes,
        );
        // A change that keeps the peak is kept too: freeing a value may
        // take several (a chain's links are all alive across the gap).
        if tape.stats.peak_bytes <= current.stats.peak_bytes {
            current = tape;
            nodes = candidate.nodes;
            shapes = candidate.shapes;
            roots = candidate.roots;
            rematerialized += 1;
        }
    }
    let mut best = if current.stats.peak_bytes < original.stats.peak_bytes {
        current
    } else {
        rematerialized = 0;
        original
    };
    best.stats.memory_budget = Some(budget);
    best.stats.rematerialized = rematerialized;
    best
}

/// A program with one value's late uses reading a fresh copy of it.
struct Candidate {
    nodes: Vec<TNode>,
    shapes: Vec<Shape>,
    roots: Vec<Id>,
    /// The copied chain (to not try the same one twice).
    chain: Vec<TNode>,
}

/// The chain of elementwise nodes (and broadcasts) computing `index` from
/// inputs, constants and values alive at `split` anyway (`last_use` at or
/// after it), in program order; `None` when it reads anything else or is
/// long.
fn cheap_chain(
    nodes: &[TNode],
    index: usize,
    split: usize,
    last_use: &[usize],
) -> Option<Vec<usize>> {
    let mut chain = Vec::new();
    let mut stack = vec![index];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        match &nodes[i].op {
            TOp::Input { .. } | TOp::Scalar(_) => continue,
            _ if i != index && last_use[i] >= split => continue,
            op if op.is_elementwise() || matches!(op, TOp::Broadcast(_)) => {
                chain.push(i);
                if chain.len() > MAX_CHAIN {
                    return None;
                }
                stack.extend(nodes[i].children.iter().map(|&c| usize::from(c)));
            }
            _ => return None,
        }
    }
    chain.sort_unstable();
    Some(chain)
}

/// The best value to recompute: the most bytes times the longest gap
/// between two of its uses.
fn rematerialize_one(
    nodes: &[TNode],
    shapes: &[Shape],
    roots: &[Id],
    tried: &[Vec<TNode>],
) -> Option<Candidate> {
    let n = nodes.len();
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, node) in nodes.iter().enumerate() {
        for &c in &node.children {
            uses[usize::from(c)].push(i);
        }
    }
    // Roots are used at the end.
    for &r in roots {
        uses[usize::from(r)].push(n);
    }
    let last_use: Vec<usize> = uses
        .iter()
        .enumerate()
        .map(|(i, u)| u.iter().copied().max().unwrap_or(i))
        .collect();
    let mut best: Option<(usize, usize, usize, Vec<usize>)> = None; // score, value, split
    for v in 0..n {
        if !nodes[v].op.is_elementwise() || shapes[v].is_empty() {
            continue;
        }
        let mut positions = uses[v].clone();
        positions.sort_unstable();
        positions.dedup();
        if positions.len() < 2 {
            continue;
        }
        // The largest gap between consecutive uses.
        let (gap, split) = positions
            .windows(2)
            .map(|w| (w[1] - w[0], w[1]))
            .max()
            .unwrap_or((0, 0));
        if gap < 2 {
            continue;
        }
        if split >= n {
            // The late use is a root: nothing to recompute before.
            continue;
        }
        let Some(chain) = cheap_chain(nodes, v, split, &last_use) else {
            continue;
        };
        let copied: Vec<TNode> = chain.iter().map(|&i| nodes[i].clone()).collect();
        if tried.contains(&copied) {
            continue;
        }
        let score = numel(&shapes[v]) * gap;
        if best.as_ref().is_none_or(|b| score > b.0) {
            best = Some((score, v, split, chain));
        }
    }
    let (_, value, split, chain) = best?;
    // Insert a copy of the chain right before `split`; uses of `value`
    // from `split` on read the copy.
    let mut new_nodes: Vec<TNode> = Vec::with_capacity(n + chain.len());
    let mut new_shapes: Vec<Shape> = Vec::with_capacity(n + chain.len());
    let mut map: Vec<Id> = Vec::with_capacity(n);
    let mut copy_of = std::collections::BTreeMap::new();
    for i in 0..n {
        if i == split {
            for &c in &chain {
                let node = relink(&nodes[c], |child| {
                    copy_of
                        .get(&usize::from(child))
                        .copied()
                        .unwrap_or(map[usize::from(child)])
                });
                copy_of.insert(c, Id::from(new_nodes.len()));
                new_nodes.push(node);
                new_shapes.push(shapes[c].clone());
            }
        }
        let late = i >= split;
        let node = relink(&nodes[i], |child| {
            let c = usize::from(child);
            if late && c == value {
                copy_of[&value]
            } else {
                map[c]
            }
        });
        map.push(Id::from(new_nodes.len()));
        new_nodes.push(node);
        new_shapes.push(shapes[i].clone());
    }
    let new_roots = roots.iter().map(|&r| map[usize::from(r)]).collect();
    Some(Candidate {
        nodes: new_nodes,
        shapes: new_shapes,
        roots: new_roots,
        chain: chain.iter().map(|&i| nodes[i].clone()).collect(),
    })
}

/// `node` with each child replaced by `f(child)`.
fn relink(node: &TNode, mut f: impl FnMut(Id) -> Id) -> TNode {
    let mut node = node.clone();
    for child in node.children.iter_mut() {
        *child = f(*child);
    }
    node
}

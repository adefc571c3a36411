//! Functions with their own derivative rules (`defvjp`, `defjvp`) in a
//! tensor program.
//!
//! A call is one `TOp::Custom` node. When the call is traced, the rule is
//! traced too, on stand-ins (`TOp::Placeholder`): a pullback on a
//! placeholder cotangent `c`, a pushforward on placeholder tangents `t_k`.
//! The rule's results stay operands of the node, so optimization keeps
//! them (a loop body is optimized before its reverse is made) while the
//! tape computes only the value (the node is an alias of its first
//! operand, like a stop-gradient). A sweep instantiates the rule: it
//! copies the nodes between the placeholders and the rule's results with
//! the placeholders replaced by the real cotangent or tangents.
//!
//! One rule serves both modes. A rule is linear in its cotangent (or
//! tangents), so the other mode is its transpose, built here by a reverse
//! sweep over the rule's own nodes: the pullback `c -> J^T c` differentiated
//! with respect to `c` in the direction `t` is `J t`, and the pushforward
//! `t -> J t` differentiated with respect to `t` in the direction `c` is
//! `J^T c`. Linearity is checked, not assumed: when the transposed rule
//! still depends on the placeholder it was built from, that mode is
//! missing and a request that needs it is refused (`reverse::refusal`).
//!
//! The value operand is the function's body run on the arguments with
//! their gradients stopped; derivatives with respect to anything else the
//! body reads (values it closes over, arguments that are lists) pass
//! through the body by the ordinary rules.

use super::graph::TensorGraph;
use egg::Id;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::sync::Arc;

/// The static part of a custom call: its name, its number of arguments,
/// and which of its two rules it carries.
///
/// Operands, in order: the value `v`; the arguments `x_1..x_n`; the
/// placeholder cotangent `c` and the placeholder value `y` (both of `v`'s
/// shape; `y` stands for the call's own result inside a rule); the
/// placeholder tangents `t_1..t_n` (of the arguments' shapes); with
/// `reverse`, the cotangents `r_1..r_n` of the arguments as functions of
/// `c`; with `forward`, the tangent `o` of the result as a function of the
/// `t_k`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomRule {
    /// The function's name, for messages.
    pub name: Arc<str>,
    /// Its number of (differentiable) arguments.
    pub args: usize,
    /// Whether the cotangents of the arguments are there.
    pub reverse: bool,
    /// Whether the tangent of the result is there.
    pub forward: bool,
}

impl CustomRule {
    /// The number of operands.
    pub fn operand_count(&self) -> usize {
        3 + 2 * self.args + if self.reverse { self.args } else { 0 } + usize::from(self.forward)
    }

    /// The position of argument `k`.
    pub fn arg(&self, k: usize) -> usize {
        1 + k
    }

    /// The position of the placeholder cotangent.
    pub fn cotangent(&self) -> usize {
        1 + self.args
    }

    /// The position of the placeholder for the call's value.
    pub fn output(&self) -> usize {
        2 + self.args
    }

    /// The position of placeholder tangent `k`.
    pub fn tangent(&self, k: usize) -> usize {
        3 + self.args + k
    }

    /// The position of the cotangent of argument `k`, if the rule has it.
    pub fn pulled(&self, k: usize) -> Option<usize> {
        self.reverse.then_some(3 + 2 * self.args + k)
    }

    /// The position of the result's tangent, if the rule has it.
    pub fn pushed(&self) -> Option<usize> {
        self.forward
            .then_some(3 + 2 * self.args + if self.reverse { self.args } else { 0 })
    }
}

/// Whether any of `roots` depends on any of `sources`.
pub fn depends_on(graph: &TensorGraph, roots: &[Id], sources: &[Id]) -> bool {
    let Some(lowest) = sources.iter().min().copied() else {
        return false;
    };
    let sources: FxHashSet<Id> = sources.iter().copied().collect();
    cone(graph, roots, lowest)
        .iter()
        .any(|id| sources.contains(id))
}

/// The nodes `roots` reach through nodes numbered `lowest` or above.
fn cone(graph: &TensorGraph, roots: &[Id], lowest: Id) -> Vec<Id> {
    let mut cone: Vec<Id> = Vec::new();
    let mut seen: FxHashSet<Id> = FxHashSet::default();
    let mut stack: Vec<Id> = roots.iter().copied().filter(|&r| r >= lowest).collect();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        cone.push(id);
        stack.extend(
            graph
                .node(id)
                .children
                .iter()
                .copied()
                .filter(|&c| c >= lowest),
        );
    }
    cone
}

/// `roots` with each placeholder of `map` replaced by its node: the nodes
/// between them copied over the replacements (nodes that do not depend on
/// a placeholder are shared).
pub fn instantiate(graph: &mut TensorGraph, roots: &[Id], map: &[(Id, Id)]) -> Vec<Id> {
    let Some(lowest) = map.iter().map(|&(p, _)| p).min() else {
        return roots.to_vec();
    };
    let mut cone = cone(graph, roots, lowest);
    cone.sort_unstable();
    let mut replaced: FxHashMap<Id, Id> = map.iter().copied().collect();
    for id in cone {
        if replaced.contains_key(&id) {
            continue;
        }
        let node = graph.node(id);
        if !node.children.iter().any(|c| replaced.contains_key(c)) {
            continue;
        }
        let op = node.op.clone();
        let children: SmallVec<[Id; 3]> = node
            .children
            .iter()
            .map(|c| replaced.get(c).copied().unwrap_or(*c))
            .collect();
        let copy = graph.add_valid(op, &children);
        replaced.insert(id, copy);
    }
    roots
        .iter()
        .map(|r| replaced.get(r).copied().unwrap_or(*r))
        .collect()
}

/// Why an active custom call cannot be differentiated in a mode, if it
/// cannot.
pub fn missing_mode(rule: &CustomRule, reverse: bool, forward: bool) -> Option<String> {
    if reverse && !rule.reverse {
        return Some(format!(
            "{}: its defjvp rule is not linear in the tangents, so reverse mode cannot transpose it; give it a defvjp rule",
            rule.name
        ));
    }
    if forward && !rule.forward {
        return Some(format!(
            "{}: its defvjp pullback is not linear in the cotangent, so forward mode cannot transpose it; give it a defjvp rule",
            rule.name
        ));
    }
    None
}

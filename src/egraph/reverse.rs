//! The reverse sweep: from one output node, the adjoints of all requested
//! variables in a single pass over the expression DAG, in O(size) — not
//! O(variables × size) as differentiating once per variable would be.
//!
//! Each node's adjoint is the sum of its parents' adjoints times the local
//! partials of `partials.rs`. Only nodes that depend on a requested variable
//! are visited.

use super::builder::ExprBuilder;
use crate::ir::math::functions::Functions;
use crate::ir::math::partials::local_partials;
use egg::{Id, Language, Symbol};

/// Appends to `builder` the partial derivatives of the node `output` with
/// respect to each of `wrt`, returning their ids (a variable the output does
/// not depend on gets the constant 0). Calls of user functions take their
/// partials from `functions`.
pub fn gradient(
    builder: &mut ExprBuilder,
    output: Id,
    wrt: &[Symbol],
    functions: &Functions,
) -> Vec<Id> {
    let n = usize::from(output) + 1;
    let targets: Vec<Option<Id>> = wrt.iter().map(|&name| builder.lookup_var(name)).collect();
    // Children precede their parents, so one forward pass marks every node
    // that depends on a requested variable.
    let mut active = vec![false; n];
    for id in targets.iter().flatten() {
        if let Some(flag) = active.get_mut(usize::from(*id)) {
            *flag = true;
        }
    }
    for index in 0..n {
        let depends = builder
            .node(Id::from(index))
            .children()
            .iter()
            .any(|&child| active[usize::from(child)]);
        active[index] |= depends;
    }
    let mut contributions: Vec<Vec<Id>> = vec![Vec::new(); n];
    let mut adjoints: Vec<Option<Id>> = vec![None; n];
    contributions[n - 1].push(builder.num(1.0));
    for index in (0..n).rev() {
        if !active[index] || contributions[index].is_empty() {
            continue;
        }
        let terms = std::mem::take(&mut contributions[index]);
        let adjoint = builder.sum(&terms);
        adjoints[index] = Some(adjoint);
        let id = Id::from(index);
        let node = builder.node(id).clone();
        let partials = local_partials(&node, id, builder, functions);
        for (&child, partial) in node.children().iter().zip(partials) {
            if let (true, Some(partial)) = (active[usize::from(child)], partial) {
                let contribution = builder.mul(adjoint, partial);
                contributions[usize::from(child)].push(contribution);
            }
        }
    }
    targets
        .iter()
        .map(|target| {
            match target.and_then(|id| adjoints.get(usize::from(id)).copied().flatten()) {
                Some(adjoint) => adjoint,
                None => builder.num(0.0),
            }
        })
        .collect()
}

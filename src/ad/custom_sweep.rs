//! The sweeps' side of functions with their own derivative rules
//! (`defvjp`, `defjvp`): adding a traced call to a program, transposing
//! its rule into the other mode by a reverse sweep over the rule's own
//! nodes, and instantiating the rule for a sweep's cotangent (`pull`) or
//! tangents (`push`). The call's node and the rule's layout are data of the
//! tensor language (`custom`).

use crate::ir::custom::{CustomRule, depends_on, instantiate};
use crate::ir::graph::TensorGraph;
use crate::ir::math::partials::PartialBuilder;
use crate::ir::op::TOp;
use crate::ir::shape::{ShapeError, show};
use egg::Id;
use smallvec::SmallVec;
use std::sync::Arc;

/// What the tracer hands over for one call: the nodes it traced.
pub struct Traced<'a> {
    /// The function's name.
    pub name: &'a str,
    /// The body's value on the stopped arguments.
    pub value: Id,
    /// The arguments.
    pub args: &'a [Id],
    /// The placeholder cotangent (the value's shape).
    pub cotangent: Id,
    /// The placeholder for the value inside the rule.
    pub output: Id,
    /// The placeholder tangents (the arguments' shapes).
    pub tangents: &'a [Id],
    /// A pullback's results: one cotangent per argument, of its shape.
    pub pulled: Option<&'a [Id]>,
    /// A pushforward's result, of the value's shape.
    pub pushed: Option<Id>,
    /// Whether a sweep may need the mode whose rule is missing (then it is
    /// built by transposing the other).
    pub transpose: bool,
}

/// Adds the custom call node, transposing the rule it was given into the
/// other mode where a sweep may need it and that rule is linear.
pub fn add_call(graph: &mut TensorGraph, call: Traced<'_>) -> Result<Id, ShapeError> {
    let value_shape = graph.shape(call.value).clone();
    for (k, (&x, &r)) in call.args.iter().zip(call.pulled.unwrap_or(&[])).enumerate() {
        if graph.shape(x) != graph.shape(r) {
            return Err(ShapeError(format!(
                "the cotangent for argument {} has shape {}, the argument has shape {}",
                k + 1,
                show(graph.shape(r)),
                show(graph.shape(x))
            )));
        }
    }
    if let Some(o) = call.pushed
        && graph.shape(o) != &value_shape
    {
        return Err(ShapeError(format!(
            "the tangent of the result has shape {}, the result has shape {}",
            show(graph.shape(o)),
            show(&value_shape)
        )));
    }
    let (pulled, pushed): (Option<Vec<Id>>, Option<Id>) = match (call.pulled, call.pushed) {
        (Some(pulled), Some(pushed)) => (Some(pulled.to_vec()), Some(pushed)),
        (pulled, pushed) if !call.transpose => (pulled.map(<[Id]>::to_vec), pushed),
        (Some(pulled), None) => {
            // J t = d/dc <J^T c, t>.
            let seeds: Vec<(Id, Id)> = pulled.iter().copied().zip(call.tangents.to_vec()).collect();
            let pushed = super::reverse::vjp(graph, &seeds, &[call.cotangent])[0];
            let linear = !depends_on(graph, &[pushed], &[call.cotangent]);
            (Some(pulled.to_vec()), linear.then_some(pushed))
        }
        (None, Some(pushed)) => {
            // J^T c = d/dt <J t, c>.
            let pulled = super::reverse::vjp(graph, &[(pushed, call.cotangent)], call.tangents);
            let linear = !depends_on(graph, &pulled, call.tangents);
            (linear.then_some(pulled), Some(pushed))
        }
        (None, None) => (None, None),
    };
    let rule = CustomRule {
        name: Arc::from(call.name),
        args: call.args.len(),
        reverse: pulled.is_some(),
        forward: pushed.is_some(),
    };
    let mut operands: Vec<Id> = vec![call.value];
    operands.extend_from_slice(call.args);
    operands.push(call.cotangent);
    operands.push(call.output);
    operands.extend_from_slice(call.tangents);
    operands.extend(pulled.into_iter().flatten());
    operands.extend(pushed);
    graph.add(TOp::Custom(rule), &operands)
}

/// The reverse rule of custom call `id` (operands `children`) for its
/// cotangent `g`: a contribution per operand. The value receives `g` (so
/// whatever else the body read is differentiated through the body); the
/// arguments marked in `wanted` receive the rule's cotangents; the
/// placeholders and the rule's nodes receive nothing.
pub fn pull(
    graph: &mut TensorGraph,
    rule: &CustomRule,
    id: Id,
    children: &[Id],
    g: Id,
    wanted: &[bool],
) -> SmallVec<[Option<Id>; 3]> {
    let mut pulled: SmallVec<[Option<Id>; 3]> = children.iter().map(|_| None).collect();
    pulled[0] = Some(g);
    let positions: Vec<usize> = (0..rule.args)
        .filter(|&k| wanted[rule.arg(k)])
        .filter_map(|k| rule.pulled(k))
        .collect();
    let roots: Vec<Id> = positions.iter().map(|&p| children[p]).collect();
    let map = [
        (children[rule.cotangent()], g),
        (children[rule.output()], id),
    ];
    let cotangents = instantiate(graph, &roots, &map);
    let mut cotangents = cotangents.into_iter();
    for k in 0..rule.args {
        if wanted[rule.arg(k)] && rule.reverse {
            pulled[rule.arg(k)] = cotangents.next();
        }
    }
    pulled
}

/// The forward rule of custom call `id` (operands `children`, unbatched
/// tangents `inputs`): the rule's tangent with the arguments' tangents
/// (zeros where none) in place of its placeholders, plus the value's own
/// tangent (through what else the body read), if any. `None` if the rule
/// has no forward mode.
pub fn push(
    graph: &mut TensorGraph,
    rule: &CustomRule,
    id: Id,
    children: &[Id],
    inputs: &[Option<Id>],
) -> Option<Id> {
    let pushed = children[rule.pushed()?];
    let mut map = vec![(children[rule.output()], id)];
    for k in 0..rule.args {
        let tangent = match inputs[rule.arg(k)] {
            Some(t) => t,
            None => {
                let shape = graph.shape(children[rule.arg(k)]).clone();
                graph.full(0.0, &shape)
            }
        };
        map.push((children[rule.tangent(k)], tangent));
    }
    let tangent = instantiate(graph, &[pushed], &map)[0];
    Some(match inputs[0] {
        Some(through_body) => graph.add2(tangent, through_body),
        None => tangent,
    })
}

//! Lifting a scalar `Math` program to a tensor program: each variable
//! becomes an input of a given shape and each operator applies elementwise
//! with broadcasting (`lambdify` compiles formulas this way).

use super::graph::TensorGraph;
use super::op::{Shape, map_op};
use super::shape::ShapeError;
use crate::egraph::language::Math;
use egg::{Id, Language, RecExpr, Symbol};

/// Why a program could not be lifted.
#[derive(Debug)]
pub enum LiftError {
    /// A variable that is not a parameter.
    Unbound(Symbol),
    /// Parameter shapes that do not broadcast together.
    Shape(ShapeError),
}

/// The tensor program computing `roots` of `expr` with parameter `k` an
/// input of shape `shapes[k]`; returns the graph and the roots' ids.
pub fn lift(
    expr: &RecExpr<Math>,
    roots: &[Id],
    params: &[Symbol],
    shapes: &[Shape],
) -> Result<(TensorGraph, Vec<Id>), LiftError> {
    let mut graph = TensorGraph::new();
    let inputs: Vec<Id> = shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| graph.input(k as u32, shape))
        .collect();
    let roots = lift_into(&mut graph, expr, roots, params, &inputs)?;
    Ok((graph, roots))
}

/// Appends the formula to `graph` with parameter `k` the node `inputs[k]`
/// (a formula used inside a traced function); returns the roots' ids.
pub fn lift_into(
    graph: &mut TensorGraph,
    expr: &RecExpr<Math>,
    roots: &[Id],
    params: &[Symbol],
    inputs: &[Id],
) -> Result<Vec<Id>, LiftError> {
    let mut ids: Vec<Id> = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let id = match node {
            Math::Var(name) => {
                let k = params
                    .iter()
                    .position(|p| p == name)
                    .ok_or(LiftError::Unbound(*name))?;
                inputs[k]
            }
            Math::Num(c) => graph.num(c.get()),
            op => {
                let children: Vec<Id> =
                    op.children().iter().map(|&c| ids[usize::from(c)]).collect();
                graph.add(map_op(op), &children).map_err(LiftError::Shape)?
            }
        };
        ids.push(id);
    }
    Ok(roots.iter().map(|&r| ids[usize::from(r)]).collect())
}

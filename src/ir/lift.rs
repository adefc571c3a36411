//! Lifting a scalar `Math` program to a tensor program: each variable
//! becomes an input of a given shape and each operator applies elementwise
//! with broadcasting (`lambdify` compiles formulas this way). A call of a
//! user function (`defderiv`) is its body, or inside a traced function a
//! `Linearized` node carrying its declared partials.

use super::graph::TensorGraph;
use super::op::{Shape, TOp, map_op};
use super::shape::ShapeError;
use crate::ir::math::functions::{Formula, Functions, MAX_BODY_DEPTH, MAX_RULE_DEPTH};
use crate::ir::math::language::Math;
use egg::{Id, Language, RecExpr, Symbol};

/// Why a program could not be lifted.
#[derive(Debug)]
pub enum LiftError {
    /// A variable that is not a parameter.
    Unbound(Symbol),
    /// Parameter shapes that do not broadcast together.
    Shape(ShapeError),
    /// A user function without a symbolic body or partials, or calls
    /// nested without end.
    Function(String),
}

/// The tensor program computing `roots` of `expr` with parameter `k` an
/// input of shape `shapes[k]`; returns the graph and the roots' ids. Calls
/// of user functions are their bodies (only values are computed).
pub fn lift(
    expr: &RecExpr<Math>,
    roots: &[Id],
    params: &[Symbol],
    shapes: &[Shape],
    functions: &Functions,
) -> Result<(TensorGraph, Vec<Id>), LiftError> {
    let mut graph = TensorGraph::new();
    let inputs: Vec<Id> = shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| graph.input(k as u32, shape, crate::dtype::DType::F64))
        .collect();
    let mut lifter = Lifter {
        graph: &mut graph,
        functions,
    };
    let ids = lifter.nodes(expr, &bind(params, &inputs), Calls::Inline, (0, 0))?;
    let roots = roots.iter().map(|&r| ids[usize::from(r)]).collect();
    Ok((graph, roots))
}

/// Appends the formula to `graph` with parameter `k` the node `inputs[k]`
/// (a formula used inside a traced function); returns the roots' ids. A
/// call of a user function is a `Linearized` node over its body and its
/// declared partials, so derivatives follow the declared rule.
pub fn lift_into(
    graph: &mut TensorGraph,
    expr: &RecExpr<Math>,
    roots: &[Id],
    params: &[Symbol],
    inputs: &[Id],
    functions: &Functions,
) -> Result<Vec<Id>, LiftError> {
    let mut lifter = Lifter { graph, functions };
    let ids = lifter.nodes(expr, &bind(params, inputs), Calls::Linearize, (0, 0))?;
    Ok(roots.iter().map(|&r| ids[usize::from(r)]).collect())
}

fn bind(params: &[Symbol], inputs: &[Id]) -> Vec<(Symbol, Id)> {
    params.iter().copied().zip(inputs.iter().copied()).collect()
}

/// What a user function's call becomes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Calls {
    /// Its body.
    Inline,
    /// A `Linearized` node (body and declared partials).
    Linearize,
}

struct Lifter<'a> {
    graph: &'a mut TensorGraph,
    functions: &'a Functions,
}

impl Lifter<'_> {
    /// The ids of every node of `expr`, variables bound by `vars`; `depth`
    /// counts the bodies and the partials being written out.
    fn nodes(
        &mut self,
        expr: &RecExpr<Math>,
        vars: &[(Symbol, Id)],
        calls: Calls,
        depth: (usize, usize),
    ) -> Result<Vec<Id>, LiftError> {
        let mut ids: Vec<Id> = Vec::with_capacity(expr.as_ref().len());
        for node in expr.as_ref() {
            let id = match node {
                Math::Var(name) => vars
                    .iter()
                    .find(|(p, _)| p == name)
                    .map(|&(_, id)| id)
                    .ok_or(LiftError::Unbound(*name))?,
                Math::Num(c) => self.graph.num(c.get()),
                Math::Call(name, args) => {
                    let args: Vec<Id> = args.iter().map(|&c| ids[usize::from(c)]).collect();
                    self.call(*name, &args, calls, depth)?
                }
                op => {
                    let children: Vec<Id> =
                        op.children().iter().map(|&c| ids[usize::from(c)]).collect();
                    self.graph
                        .add(map_op(op), &children)
                        .map_err(LiftError::Shape)?
                }
            };
            ids.push(id);
        }
        Ok(ids)
    }

    fn formula(
        &mut self,
        formula: &Formula,
        params: &[Symbol],
        args: &[Id],
        calls: Calls,
        depth: (usize, usize),
    ) -> Result<Id, LiftError> {
        let ids = self.nodes(&formula.expr, &bind(params, args), calls, depth)?;
        Ok(ids[usize::from(formula.root)])
    }

    fn call(
        &mut self,
        name: Symbol,
        args: &[Id],
        calls: Calls,
        (bodies, rules): (usize, usize),
    ) -> Result<Id, LiftError> {
        let function = self
            .functions
            .get(name)
            .ok_or_else(|| LiftError::Function(format!("{name} is not defined")))?
            .clone();
        if bodies >= MAX_BODY_DEPTH {
            return Err(LiftError::Function(format!(
                "calls of {name} nest more than {MAX_BODY_DEPTH} deep (does a body call itself?)"
            )));
        }
        let body = function.body.as_ref().map_err(|reason| {
            LiftError::Function(format!(
                "{name}'s body is not a symbolic expression ({reason})"
            ))
        })?;
        let params = &function.params;
        if calls == Calls::Inline || rules >= MAX_RULE_DEPTH {
            return self.formula(body, params, args, calls, (bodies + 1, rules));
        }
        let partials = function.partials.as_ref().map_err(|reason| {
            LiftError::Function(format!(
                "{name}'s partial derivatives are not symbolic expressions ({reason})"
            ))
        })?;
        // The value from the arguments with their gradients stopped, so
        // derivatives reach the arguments through the partials alone.
        let stopped: Vec<Id> = args
            .iter()
            .map(|&x| self.graph.add(TOp::StopGradient, &[x]))
            .collect::<Result<_, _>>()
            .map_err(LiftError::Shape)?;
        let value = self.formula(body, params, &stopped, Calls::Inline, (bodies + 1, rules))?;
        let mut operands = vec![value];
        operands.extend_from_slice(args);
        for partial in partials {
            operands.push(self.formula(
                partial,
                params,
                args,
                Calls::Linearize,
                (bodies + 1, rules + 1),
            )?);
        }
        self.graph
            .add(TOp::Linearized, &operands)
            .map_err(LiftError::Shape)
    }
}

//! The choice between a tape and a straight-line program: the gradient
//! (or one directional derivative) of a long program of scalar operations
//! — a Lisp loop over numbers, whose trace is mostly the flat arena — is
//! cheaper as `backends::cpu::straight` runs it (one forward and one
//! reverse pass over numbers, read from the trace in place) than through
//! the sweep, the optimizer and the tape compiler.

use crate::backends::cpu::straight::StraightLine;
use crate::egraph::tensor::optimize::MAX_TENSOR_SATURATION_NODES;
use crate::ir::TensorGraph;
use crate::ir::flat::FlatScalars;
use egg::Id;
use std::rc::Rc;

/// Whether a request whose one result is node `output` may skip the tape:
/// not when operations are checked one by one for non-finite numbers
/// (`checked`), nor under a memory budget, nor for a program short enough
/// to optimize.
pub fn may_apply(output: Id, checked: bool, budget: Option<usize>) -> bool {
    !checked && budget.is_none() && usize::from(output) >= MAX_TENSOR_SATURATION_NODES
}

/// The straight-line program of `output` differentiable with respect to
/// `targets`, when every step it reaches is a scalar operation and it is
/// longer than a program worth optimizing.
pub fn program(
    graph: &TensorGraph,
    flat: &FlatScalars,
    output: Id,
    targets: &[Id],
) -> Option<Rc<StraightLine>> {
    let program = StraightLine::build(graph, flat, output, targets)?;
    (program.len() > MAX_TENSOR_SATURATION_NODES).then(|| Rc::new(program))
}

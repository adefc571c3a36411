//! The cost of a node as a step of a compiled program: every operation pays
//! for the buffers it reads and writes (an operand that is a constant is an
//! immediate and reads nothing) plus extra for expensive arithmetic.
//! Variables and numbers cost 1 (negative numbers 2, so `(- a 1)` beats
//! `(+ a -1)`), so the count of nodes still matters.
//!
//! With this model `(* 2 x)` (one read) beats `(+ x x)` (two reads), `(* x x)`
//! beats `(pow x 2)`, and `(- a b)` beats `(+ a (neg b))`.

use crate::ir::math::language::Math;
use egg::{Id, Language};

/// Extra cost of an operator beyond its memory traffic.
fn arithmetic_cost(node: &Math) -> u64 {
    match node {
        Math::Num(_) | Math::Var(_) => 0,
        Math::Add(_) | Math::Sub(_) | Math::Mul(_) | Math::Neg(_) => 0,
        Math::Div(_) => 2,
        Math::Pow(_) => 4,
        // A function: its row's cost class.
        other => crate::ir::math::elementwise::row(other).map_or(6, |row| row.cost.egraph()),
    }
}

/// The cost of `node` alone; `is_constant` tells which children are numbers.
pub fn node_cost(node: &Math, is_constant: impl Fn(Id) -> bool) -> u64 {
    match node {
        // A negative number reads worse than a subtraction: `(- a 1)`
        // beats `(+ a -1)`, and `(+ a 1)` beats `(- a -1)`.
        Math::Num(value) if value.get() < 0.0 => return 2,
        Math::Num(_) | Math::Var(_) => return 1,
        _ => {}
    }
    let reads = node
        .children()
        .iter()
        .filter(|&&child| !is_constant(child))
        .count() as u64;
    2 * (1 + reads) + arithmetic_cost(node)
}

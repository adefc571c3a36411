//! A flat arena of scalar operations: where a traced program is a long
//! run of operations on single numbers (a Lisp loop stepping a state),
//! the tracer appends each one here — one scalar operator and its operand
//! ids, nothing hashed, no shape stored — instead of hash-consing it into
//! the `TensorGraph`.
//!
//! Arena ids live past [`FLAT_BASE`], so one `Id` names either a graph node
//! (below) or an arena step (above); an operand may be either. Steps enter
//! the graph only when something else does ([`FlatScalars::flush`]: a
//! tensor operation, a new constant or input, a symbolic sweep, a look at
//! a value), all of them, in order: an operand is always in the graph
//! before its user, no recursion is needed however long the chain, and
//! the graph ends up node for node what recording every step there would
//! have made. A scalar program that never needs the graph is read here in
//! place (`backends::cpu::straight`).

use super::graph::TensorGraph;
use super::op::map_op;
use super::shape::ShapeError;
use crate::dtype::DType;
use crate::ir::math::language::Math;
use egg::{Id, Language};
use smallvec::SmallVec;

/// The first arena id; graph ids stay below it.
pub const FLAT_BASE: usize = 1 << 31;

/// Whether `id` names an arena step rather than a graph node.
pub fn is_flat(id: Id) -> bool {
    usize::from(id) >= FLAT_BASE
}

/// Steps per chunk of the arena: chunks are allocated whole and never
/// moved, so the arena grows without copying or touching its memory
/// twice.
const CHUNK: usize = 1 << 14;

/// One recorded step: which scalar operator (an index into the arena's
/// table of operators met so far), its number type and its operand ids
/// (graph nodes or earlier steps; the second unused by a unary operator).
#[derive(Clone, Copy, Debug)]
struct Packed {
    operator: u8,
    arity: u8,
    dtype: DType,
    operands: [Id; 2],
}

/// The arena: steps in recording order, and the graph nodes of the prefix
/// materialized so far.
#[derive(Clone, Debug, Default)]
pub struct FlatScalars {
    chunks: Vec<Vec<Packed>>,
    len: usize,
    /// The operators met, their children placeholders (at most one entry
    /// per kind of `Math`).
    operators: Vec<Math>,
    in_graph: Vec<Id>,
}

impl FlatScalars {
    /// The number of steps.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn packed(&self, index: usize) -> Packed {
        self.chunks[index / CHUNK][index % CHUNK]
    }

    /// Step `index` (id `FLAT_BASE + index`): its operator over its operand
    /// ids.
    pub fn math(&self, index: usize) -> Math {
        let packed = self.packed(index);
        let mut math = self.operators[packed.operator as usize].clone();
        let arity = math.children().len();
        math.children_mut()
            .copy_from_slice(&packed.operands[..arity]);
        math
    }

    /// The operand ids of step `index`.
    pub fn operands(&self, index: usize) -> &[Id] {
        let packed = &self.chunks[index / CHUNK][index % CHUNK];
        &packed.operands[..packed.arity as usize]
    }

    /// The number type of step `id` (an arena id).
    pub fn dtype(&self, id: Id) -> DType {
        self.packed(usize::from(id) - FLAT_BASE).dtype
    }

    /// The operators met so far, their children placeholders; a step's
    /// operator is an index into them ([`FlatScalars::operator`]).
    pub fn operators(&self) -> &[Math] {
        &self.operators
    }

    /// The operator of step `index`, an index into `operators()`.
    pub fn operator(&self, index: usize) -> usize {
        self.packed(index).operator as usize
    }

    /// Appends the scalar operator `operator` (its own children ignored)
    /// over `operands` (graph nodes or earlier steps; at most two, so not
    /// a user function's call) of type `dtype`; `None` when it cannot be
    /// recorded here (a call, no memory, ids exhausted).
    pub fn push(&mut self, operator: &Math, operands: &[Id], dtype: DType) -> Option<Id> {
        if operands.len() > 2 || matches!(operator, Math::Call(..)) {
            return None;
        }
        if self.len >= u32::MAX as usize - FLAT_BASE {
            return None;
        }
        let kind = std::mem::discriminant(operator);
        let known = match self.operators.last() {
            // A loop repeats its operators: the last one is checked first.
            Some(last) if std::mem::discriminant(last) == kind => Some(self.operators.len() - 1),
            _ => self
                .operators
                .iter()
                .position(|known| std::mem::discriminant(known) == kind),
        };
        let index = match known {
            Some(k) => k,
            None => {
                let mut template = operator.clone();
                template.children_mut().fill(Id::from(0));
                self.operators.push(template);
                self.operators.len() - 1
            }
        };
        if self.len.is_multiple_of(CHUNK) {
            let mut chunk = Vec::new();
            chunk.try_reserve_exact(CHUNK).ok()?;
            self.chunks.try_reserve(1).ok()?;
            self.chunks.push(chunk);
        }
        let mut packed = [Id::from(0); 2];
        packed[..operands.len()].copy_from_slice(operands);
        self.chunks[self.len / CHUNK].push(Packed {
            operator: u8::try_from(index).ok()?,
            arity: operands.len() as u8,
            dtype,
            operands: packed,
        });
        self.len += 1;
        Some(Id::from(FLAT_BASE + self.len - 1))
    }

    /// Whether steps wait to enter the graph.
    pub fn pending(&self) -> bool {
        self.in_graph.len() < self.len
    }

    /// Adds every step not yet in `graph` to it, in order: called before
    /// anything else enters the graph, so the graph holds the same nodes
    /// in the same order as if each step had gone there when recorded
    /// (its simplifications and hash-consing apply, and a program mixing
    /// scalars and tensors is built exactly as without the arena).
    pub fn flush(&mut self, graph: &mut TensorGraph) -> Result<(), ShapeError> {
        match self.len.checked_sub(1) {
            Some(last) if self.pending() => self
                .materialize(graph, Id::from(FLAT_BASE + last))
                .map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The graph node of `id`: itself for a graph node; for a step, the
    /// node it became, adding to `graph` every step up to it not yet
    /// there (in order, so operands come first).
    pub fn materialize(&mut self, graph: &mut TensorGraph, id: Id) -> Result<Id, ShapeError> {
        if !is_flat(id) {
            return Ok(id);
        }
        let index = usize::from(id) - FLAT_BASE;
        while self.in_graph.len() <= index {
            let step = self.in_graph.len();
            let math = self.math(step);
            let operands: SmallVec<[Id; 2]> = math
                .children()
                .iter()
                .map(|&c| match is_flat(c) {
                    true => self.in_graph[usize::from(c) - FLAT_BASE],
                    false => c,
                })
                .collect();
            let node = graph.add(map_op(&math), &operands)?;
            self.in_graph.push(node);
        }
        Ok(self.in_graph[index])
    }
}

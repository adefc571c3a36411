//! Batching (`vmap`, issue 19 item 1): a tensor program traced for one
//! example rewritten into a program over a batch.
//!
//! The per-example program is copied node by node into a target graph.
//! Each value is either *batched* (it carries one more leading axis, of
//! the batch's size, than in the per-example program) or not (it is the
//! same for every example: a captured parameter, a constant, anything
//! computed from them alone). A node none of whose operands is batched is
//! copied as it is; otherwise its operation's batching rule builds the
//! batched result (`rules.rs` for the operations of the tensor language,
//! `ops::Definition::batch` for those of the operation table, which every
//! operation must give). A rule that cannot apply is an error naming the
//! operation: there is no silent loop over the examples.
//!
//! This folder knows the tensor language and its graph builder; it knows
//! nothing of Lisp, tapes or executors (`lisp/autodiff/vmap.rs` traces
//! the function and hands the program here).

mod loops;
mod rules;

use crate::ir::{Shape, TNode, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;
use std::fmt;

/// A value of the batched program: its node in the target graph and
/// whether it carries the batch axis first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batched {
    /// The node in the target graph.
    pub id: Id,
    /// Whether its first axis is the batch (absent otherwise).
    pub batched: bool,
}

impl Batched {
    /// A value the same for every example.
    pub fn shared(id: Id) -> Batched {
        Batched { id, batched: false }
    }

    /// A value with the batch axis first.
    pub fn mapped(id: Id) -> Batched {
        Batched { id, batched: true }
    }
}

/// Why a program could not be batched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// An operation that has no batching rule (its name).
    NoRule(String),
    /// Operands that do not combine (a message with the shapes).
    Shape(String),
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::NoRule(name) => write!(
                f,
                "vmap has no batching rule for the operation {name} yet: apply the function to each example, or write the batched computation directly"
            ),
            BatchError::Shape(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for BatchError {}

/// Rewrites the per-example program `nodes` (with `shapes`) into `target`
/// for a batch of `size` examples: `inputs[k]` is what input `k` of the
/// program stands for in `target`. Returns the batched values of `roots`.
pub fn batch_program(
    nodes: &[TNode],
    shapes: &[Shape],
    roots: &[Id],
    inputs: &[Batched],
    size: usize,
    target: &mut TensorGraph,
) -> Result<Vec<Batched>, BatchError> {
    let upto = roots.iter().map(|&r| usize::from(r) + 1).max().unwrap_or(0);
    let mut values: Vec<Option<Batched>> = vec![None; upto];
    // Only what the roots need is copied.
    let mut needed = vec![false; upto];
    for &root in roots {
        needed[usize::from(root)] = true;
    }
    for i in (0..upto).rev() {
        if needed[i] {
            for &c in &nodes[i].children {
                needed[usize::from(c)] = true;
            }
        }
    }
    let mut batcher = rules::Batcher {
        graph: target,
        size,
    };
    for (i, node) in nodes[..upto].iter().enumerate() {
        if !needed[i] {
            continue;
        }
        let value = match &node.op {
            // A custom rule's stand-ins (its cotangent, value, tangents)
            // are fresh ones here, batched: the rule's results over them
            // are then batched like any value, and a custom call with a
            // batched operand has batched rules.
            TOp::Placeholder { shape, dtype, .. } => {
                let full: Shape = std::iter::once(size).chain(shape.iter().copied()).collect();
                Batched::mapped(batcher.graph.placeholder(&full, *dtype))
            }
            TOp::Input { index, shape, .. } => {
                let bound = inputs.get(*index as usize).copied().ok_or_else(|| {
                    BatchError::Shape(format!("input {index} of the program is not bound"))
                })?;
                let expected: Shape = if bound.batched {
                    std::iter::once(size).chain(shape.iter().copied()).collect()
                } else {
                    shape.clone()
                };
                let got = batcher.graph.shape(bound.id);
                if *got != expected {
                    return Err(BatchError::Shape(format!(
                        "input {index} has shape {}, the program expects {}",
                        show(got),
                        show(&expected)
                    )));
                }
                bound
            }
            op => {
                let operands: SmallVec<[Batched; 4]> = node
                    .children
                    .iter()
                    .map(|&c| values[usize::from(c)].expect("operands come first"))
                    .collect();
                if operands.iter().all(|b| !b.batched) {
                    let children: SmallVec<[Id; 4]> = operands.iter().map(|b| b.id).collect();
                    let id = batcher
                        .graph
                        .add(op.clone(), &children)
                        .map_err(|e| BatchError::Shape(e.0))?;
                    Batched::shared(id)
                } else {
                    Batched::mapped(batcher.rule(op, &operands, &shapes[i])?)
                }
            }
        };
        values[i] = Some(value);
    }
    Ok(roots
        .iter()
        .map(|&r| values[usize::from(r)].expect("roots are copied"))
        .collect())
}

/// `value` with its batch axis first, made batched (broadcast over
/// `size` examples) where it was shared.
pub fn with_batch(graph: &mut TensorGraph, value: Batched, size: usize) -> Id {
    if value.batched {
        return value.id;
    }
    let shape: Shape = std::iter::once(size)
        .chain(graph.shape(value.id).iter().copied())
        .collect();
    let mut lifted: Shape = SmallVec::from_slice(&[1]);
    lifted.extend_from_slice(&shape[1..]);
    let lifted = graph.reshape(value.id, &lifted);
    graph.broadcast(lifted, &shape)
}

/// A batched value (batch axis first) with its batch axis moved to
/// `axis`.
pub fn move_batch_axis(graph: &mut TensorGraph, id: Id, axis: usize) -> Id {
    if axis == 0 {
        return id;
    }
    let rank = graph.shape(id).len();
    // Result axis i reads operand axis perm[i]: the batch (operand axis
    // 0) lands at `axis`.
    let mut perm: SmallVec<[u8; 4]> = (1..rank as u8).collect();
    perm.insert(axis, 0);
    graph.add_valid(TOp::Transpose(perm), &[id])
}

/// A value with axis `axis` moved to the front (the batch of a mapped
/// argument).
pub fn batch_axis_first(graph: &mut TensorGraph, id: Id, axis: usize) -> Id {
    if axis == 0 {
        return id;
    }
    let rank = graph.shape(id).len() as u8;
    let perm: SmallVec<[u8; 4]> = std::iter::once(axis as u8)
        .chain((0..rank).filter(|&a| a != axis as u8))
        .collect();
    graph.add_valid(TOp::Transpose(perm), &[id])
}

fn show(shape: &[usize]) -> String {
    crate::ir::shape::show(shape)
}

#[cfg(test)]
mod tests;

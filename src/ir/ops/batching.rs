//! What the operations' batching rules (`Definition::batch`, used by
//! `vmap`) share: a batched operand carries one more leading axis of the
//! batch's size; a shared one is the same for every example.

use super::Op;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;

/// `shape` with the batch axis in front.
pub fn batched_shape(size: usize, shape: &[usize]) -> Shape {
    std::iter::once(size).chain(shape.iter().copied()).collect()
}

/// The operand made batched: a shared one broadcast over the batch.
pub fn full(graph: &mut TensorGraph, id: Id, batched: bool, size: usize) -> Id {
    if batched {
        return id;
    }
    let shape = graph.shape(id).clone();
    let lifted = graph.reshape(id, &batched_shape(1, &shape));
    graph.broadcast(lifted, &batched_shape(size, &shape))
}

/// A batched operand given ones after its batch axis until its example
/// has rank `rank`, so that right-aligned broadcasting against examples of
/// that rank keeps the batch axis in front. Shared operands, and batched
/// ones of that rank already, are left as they are.
pub fn align(graph: &mut TensorGraph, id: Id, batched: bool, rank: usize) -> Id {
    if !batched {
        return id;
    }
    let shape = graph.shape(id).clone();
    let inner = &shape[1..];
    if inner.len() >= rank {
        return id;
    }
    let mut aligned: Shape = SmallVec::from_slice(&shape[..1]);
    aligned.extend(std::iter::repeat_n(1, rank - inner.len()));
    aligned.extend_from_slice(inner);
    graph.reshape(id, &aligned)
}

/// The rule of an operation batched over broadcasting leading axes (linear
/// algebra: each matrix of a stack on its own): the batch is one more
/// leading axis. Operand `k`'s last `cores[k]` axes are its core (2 for a
/// matrix, 1 for a vector); batched operands get ones after the batch
/// axis so every operand's leading axes line up from the right.
pub fn leading_axes(
    graph: &mut TensorGraph,
    op: Op,
    operands: &[Id],
    batched: &[bool],
    cores: &[usize],
    size: usize,
) -> Option<Id> {
    let _ = size;
    let lead = |graph: &TensorGraph, k: usize| {
        graph.shape(operands[k]).len() - usize::from(batched[k]) - cores[k]
    };
    let most = (0..operands.len()).map(|k| lead(graph, k)).max()?;
    let children: SmallVec<[Id; 3]> = (0..operands.len())
        .map(|k| align(graph, operands[k], batched[k], most + cores[k]))
        .collect();
    graph.add(TOp::Op(op), &children).ok()
}

/// The result of an operation that packs several results into one flat
/// vector (`parts` in order, each with the batch axis first), laid out
/// again as one packed vector per example: `[size, packed length]`, so the
/// example's slices of its packed result become slices along axis 1.
pub fn repacked(graph: &mut TensorGraph, node: Id, parts: &[Shape], size: usize) -> Id {
    let pieces: Vec<Id> = super::unpack(graph, node, parts)
        .into_iter()
        .zip(parts)
        .map(|(piece, shape)| {
            // Each part's shape leads with the batch axis; the rest is one
            // example's (so an empty batch keeps its examples' length).
            let per_example = shape.iter().skip(1).product::<usize>();
            graph.reshape(piece, &[size, per_example])
        })
        .collect();
    match &pieces[..] {
        [one] => *one,
        many => graph.add_valid(TOp::Concat(1), many),
    }
}

/// An operation over one axis (`axis` of the example) batched by shifting
/// its axis past the batch axis, its operands made batched.
pub fn shifted_axis(
    graph: &mut TensorGraph,
    op: Op,
    operands: &[Id],
    batched: &[bool],
    size: usize,
) -> Option<Id> {
    let children: SmallVec<[Id; 3]> = operands
        .iter()
        .zip(batched)
        .map(|(&id, &b)| full(graph, id, b, size))
        .collect();
    graph.add(TOp::Op(op), &children).ok()
}

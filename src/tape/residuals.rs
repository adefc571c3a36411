//! Residuals of a loop under store-all: the matrix products a reverse step
//! would recompute, kept from the forward step instead.
//!
//! A loop's reverse body reads the step's inputs and recomputes from them
//! what its derivative needs, products included. Where the forward body
//! computes the very same product (the same operation on the same inputs,
//! found by structure), the forward step returns it as an extra output,
//! the loop keeps it with the step's state, and the reverse step reads it
//! as an extra input instead of computing it again: the products of the
//! step are computed once a step, as JAX's `lax.scan` does with its
//! residuals, at the memory of the products kept. Only products and the
//! results of inner loops are kept (an inner loop's reverse reads its
//! final state, which would otherwise cost a second run of the whole inner
//! loop; elementwise work is cheap to redo and would cost memory for
//! little).
//!
//! The reverse step also reads its captured matrices transposed (a layer's
//! weights, in the products that carry cotangents back through it). A
//! transposed view makes the product pack the matrix again every step, so
//! the reverse step reads a transposed copy instead, made once a run.

use super::Tape;
use super::compile::compile;
use crate::ir::loops::Body;
use crate::ir::{Shape, TNode, TOp};
use egg::{Id, RecExpr};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// A loop's step and reverse step rewritten to keep products (and inner
/// loops' results).
#[derive(Debug)]
pub struct Residuals {
    /// The step's tape: the body's outputs, then the kept products.
    pub body: Tape,
    /// The reverse step's tape: the reverse body's inputs, then the kept
    /// products.
    pub adjoint: Tape,
    /// The kept products' shapes.
    pub shapes: Vec<Shape>,
    /// The captured matrices (by body input) the reverse step reads
    /// transposed: after the kept products, its inputs are a row-major
    /// transposed copy of each.
    pub transposed: Vec<usize>,
}

/// The residual tapes of a loop with `body` (over `inputs`) and reverse
/// body `adjoint` (over `adjoint_inputs`, the first `inputs.len()` of
/// them the body's, those from `captures_from` on captured values);
/// `None` when the reverse recomputes no product the step computes.
pub fn residuals(
    body: &Body,
    inputs: &[Shape],
    adjoint: &Body,
    adjoint_inputs: &[Shape],
    captures_from: usize,
) -> Option<Residuals> {
    // Structural classes shared by both programs: equal operations on
    // equal classes (inputs by their index) are one class. (A loop node's
    // lazily made reverse body is its only interior mutability, and its
    // hash and equality leave it out.)
    #[allow(clippy::mutable_key_type)]
    let mut classes: FxHashMap<(TOp, SmallVec<[u32; 3]>), u32> = FxHashMap::default();
    let mut class_of = |nodes: &[TNode]| -> Vec<u32> {
        let mut out: Vec<u32> = Vec::with_capacity(nodes.len());
        for node in nodes {
            let mut children: SmallVec<[u32; 3]> =
                node.children.iter().map(|&c| out[usize::from(c)]).collect();
            // Sums and products in either order are one class.
            if commutes(&node.op) {
                children.sort_unstable();
            }
            let next = classes.len() as u32;
            out.push(*classes.entry((node.op.clone(), children)).or_insert(next));
        }
        out
    };
    let body_classes = class_of(&body.nodes);
    let adjoint_classes = class_of(&adjoint.nodes);
    let in_body: FxHashMap<u32, usize> = body_classes
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i))
        .collect();
    // What the reverse body computes from the step's inputs alone.
    let step_inputs = inputs.len() as u32;
    let mut primal = vec![true; adjoint.nodes.len()];
    for (i, node) in adjoint.nodes.iter().enumerate() {
        primal[i] = match &node.op {
            TOp::Input { index, .. } => *index < step_inputs,
            _ => node.children.iter().all(|&c| primal[usize::from(c)]),
        };
    }
    let kept: Vec<(usize, usize)> = adjoint
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, node)| matches!(node.op, TOp::MatMul | TOp::Scan(_)) && primal[*i])
        .filter_map(|(i, _)| in_body.get(&adjoint_classes[i]).map(|&b| (i, b)))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let shapes: Vec<Shape> = kept
        .iter()
        .map(|&(a, _)| adjoint.shapes[a].clone())
        .collect();
    // The step, with the products as extra outputs.
    let mut roots = body.roots.clone();
    roots.extend(kept.iter().map(|&(_, b)| Id::from(b)));
    let step = compile(
        &RecExpr::from(body.nodes.clone()),
        &body.shapes,
        &roots,
        inputs,
    );
    // The reverse step, reading them as inputs.
    let mut nodes = adjoint.nodes.clone();
    let dtypes = crate::ir::dtypes::dtypes_of(&nodes);
    for (j, &(a, _)) in kept.iter().enumerate() {
        nodes[a] = TNode {
            op: TOp::Input {
                index: (adjoint_inputs.len() + j) as u32,
                shape: adjoint.shapes[a].clone(),
                dtype: dtypes[a],
            },
            children: SmallVec::new(),
        };
    }
    let mut reverse_inputs = adjoint_inputs.to_vec();
    reverse_inputs.extend(shapes.iter().cloned());
    let transposed = read_transposed(&mut nodes, captures_from..inputs.len(), &mut reverse_inputs);
    let reverse = compile(
        &RecExpr::from(nodes),
        &adjoint.shapes,
        &adjoint.roots,
        &reverse_inputs,
    );
    Some(Residuals {
        body: step,
        adjoint: reverse,
        shapes,
        transposed,
    })
}

/// Makes each transposed captured matrix of `nodes` (a capture is a body
/// input in `captures`) a new input, appended to `inputs`; gives the
/// captures in the order of the new inputs.
fn read_transposed(
    nodes: &mut [TNode],
    captures: std::ops::Range<usize>,
    inputs: &mut Vec<Shape>,
) -> Vec<usize> {
    let mut transposed: Vec<usize> = Vec::new();
    for i in 0..nodes.len() {
        let TOp::Transpose(perm) = &nodes[i].op else {
            continue;
        };
        let TOp::Input {
            index,
            shape,
            dtype,
        } = nodes[usize::from(nodes[i].children[0])].op.clone()
        else {
            continue;
        };
        let index = index as usize;
        if perm[..] != [1, 0] || shape.len() != 2 || !captures.contains(&index) {
            continue;
        }
        let swapped: Shape = [shape[1], shape[0]].into_iter().collect();
        let position = match transposed.iter().position(|&c| c == index) {
            Some(p) => p,
            None => {
                transposed.push(index);
                inputs.push(swapped.clone());
                transposed.len() - 1
            }
        };
        let first = inputs.len() - transposed.len();
        nodes[i] = TNode {
            op: TOp::Input {
                index: (first + position) as u32,
                shape: swapped,
                dtype,
            },
            children: SmallVec::new(),
        };
    }
    transposed
}

/// Whether the operation's two operands may be swapped.
fn commutes(op: &TOp) -> bool {
    use crate::ir::math::language::Math;
    matches!(
        op,
        TOp::Map(Math::Add(_) | Math::Mul(_) | Math::Min(_) | Math::Max(_))
    )
}

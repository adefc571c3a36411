//! Pads pushed into elementwise code. The adjoint of a slice is a pad, so
//! gradients of stencil-like code (`x[1:] - x[:-1]`) end as sums of padded
//! elementwise results: each would be computed, stored, then copied into a
//! larger array. Here `pad(f(a, b))` becomes
//! `where(pad(1), f(pad(a), pad(b)), 0)` when everything that reads the pad
//! is elementwise: the pads reach the leaves (slices and inputs, which the
//! backend reads in place with an offset) and the whole sum fuses into one
//! loop. Only pads along the first axis are pushed (a shift of contiguous
//! elements), and only small ones (a few rows onto many: a stencil's).

use super::fuse::cheap_op;
use crate::ir::math::language::Constant;
use crate::ir::{Shape, TNode, TOp};
use egg::{Id, RecExpr};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Elementwise operations nested deeper than this below a pushed pad keep
/// their own pad.
const MAX_DEPTH: usize = 64;

/// The pad parameters along the first axis.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Pad {
    before: usize,
    after: usize,
}

struct Pusher<'a> {
    nodes: &'a [TNode],
    shapes: &'a [Shape],
    users: Vec<u32>,
    out: RecExpr<TNode>,
    out_shapes: Vec<Shape>,
    map: Vec<Id>,
    memo: FxHashMap<(usize, Pad), Id>,
}

impl Pusher<'_> {
    fn emit(&mut self, op: TOp, children: &[Id], shape: Shape) -> Id {
        self.out_shapes.push(shape);
        self.out.add(TNode::new(op, children))
    }

    fn padded_shape(&self, index: usize, pad: Pad) -> Shape {
        let mut shape = self.shapes[index].clone();
        shape[0] += pad.before + pad.after;
        shape
    }

    /// Whether `index` is elementwise over operands that are numbers or of
    /// its own shape (so a pad can move to each of them).
    fn can_push(&self, index: usize) -> bool {
        let node = &self.nodes[index];
        !self.shapes[index].is_empty()
            && node.op.is_elementwise()
            && node.children.iter().all(|&c| {
                let shape = &self.shapes[usize::from(c)];
                shape.is_empty() || *shape == self.shapes[index]
            })
    }

    /// `index` padded, as a new node: the operation recomputed on padded
    /// operands where that is worthwhile, a pad of the stored value
    /// otherwise.
    fn push(&mut self, index: usize, pad: Pad, depth: usize) -> Id {
        if let Some(&id) = self.memo.get(&(index, pad)) {
            return id;
        }
        let node = self.nodes[index].clone();
        let shape = self.padded_shape(index, pad);
        let recompute = depth < MAX_DEPTH
            && self.can_push(index)
            && (depth == 0 || self.users[index] == 1 || cheap_op(&node.op));
        let id = if recompute {
            let children: SmallVec<[Id; 3]> = node
                .children
                .iter()
                .map(|&c| {
                    let c = usize::from(c);
                    if self.shapes[c].is_empty() {
                        self.map[c]
                    } else {
                        self.push(c, pad, depth + 1)
                    }
                })
                .collect();
            self.emit(node.op.clone(), &children, shape)
        } else {
            let op = TOp::Pad {
                axis: 0,
                before: pad.before,
                after: pad.after,
            };
            self.emit(op, &[self.map[index]], shape)
        };
        self.memo.insert((index, pad), id);
        id
    }
}

/// Whether a pad of `added` rows onto a value of `shape` is small enough
/// to push: the padded operations run over the padded rows too, so a pad
/// that places a value inside a much larger one (a part of a loop's
/// packed state, in its cotangent) stays a pad.
fn small_pad(shape: &[usize], added: usize) -> bool {
    shape.first().is_some_and(|&rows| added * 4 <= rows)
}

/// Whether `program` has a pad along its first axis, the only kind
/// [`push_pads`] moves.
pub(super) fn has_first_axis_pad(program: &RecExpr<TNode>) -> bool {
    program
        .as_ref()
        .iter()
        .any(|node| matches!(node.op, TOp::Pad { axis: 0, .. }))
}

/// `program` with pads pushed into elementwise code where every reader of
/// the pad is elementwise; returns the new program, its shapes and roots.
pub(super) fn push_pads(
    program: &RecExpr<TNode>,
    shapes: &[Shape],
    roots: &[Id],
) -> (RecExpr<TNode>, Vec<Shape>, Vec<Id>) {
    let nodes = program.as_ref();
    let mut users = vec![0u32; nodes.len()];
    let mut elementwise_readers = vec![true; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        for &c in &node.children {
            let c = usize::from(c);
            users[c] += 1;
            if !node.op.is_elementwise() || shapes[index] != shapes[c] {
                elementwise_readers[c] = false;
            }
        }
    }
    for &root in roots {
        elementwise_readers[usize::from(root)] = false;
    }
    let mut pusher = Pusher {
        nodes,
        shapes,
        users,
        out: RecExpr::default(),
        out_shapes: Vec::with_capacity(nodes.len()),
        map: Vec::with_capacity(nodes.len()),
        memo: FxHashMap::default(),
    };
    for (index, node) in nodes.iter().enumerate() {
        let new = match node.op {
            TOp::Pad {
                axis: 0,
                before,
                after,
            } if elementwise_readers[index]
                && pusher.can_push(usize::from(node.children[0]))
                && small_pad(&shapes[usize::from(node.children[0])], before + after) =>
            {
                let inner = usize::from(node.children[0]);
                let pad = Pad { before, after };
                let pushed = pusher.push(inner, pad, 0);
                // Outside the original rows the result is 0, whatever the
                // operation gives on padded zeros.
                let constant = |v: f64| TOp::Scalar(Constant::new(v).expect("finite"));
                let one = pusher.emit(constant(1.0), &[], Shape::new());
                let zero = pusher.emit(constant(0.0), &[], Shape::new());
                let ones = pusher.emit(
                    TOp::Broadcast(shapes[inner].clone()),
                    &[one],
                    shapes[inner].clone(),
                );
                let mask = pusher.emit(
                    TOp::Pad {
                        axis: 0,
                        before,
                        after,
                    },
                    &[ones],
                    shapes[index].clone(),
                );
                pusher.emit(TOp::Where, &[mask, pushed, zero], shapes[index].clone())
            }
            _ => {
                let children: SmallVec<[Id; 3]> = node
                    .children
                    .iter()
                    .map(|&c| pusher.map[usize::from(c)])
                    .collect();
                pusher.emit(node.op.clone(), &children, shapes[index].clone())
            }
        };
        pusher.map.push(new);
    }
    let roots = roots.iter().map(|&r| pusher.map[usize::from(r)]).collect();
    (pusher.out, pusher.out_shapes, roots)
}

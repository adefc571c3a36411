//! Single precision on f64 storage: every value of a tape is held as f64,
//! and an f32 value is an f64 holding an f32 number. Each operation whose
//! result is f32 and may not be an f32 number (arithmetic, sums, matrix
//! products, table operations) is followed here by a rounding
//! (`Cast(F32)`, elementwise, so it fuses into the loop that computes
//! it). The result is an f32 operation's: the operation in f64 on f32
//! operands, rounded once (`crate::dtype`). Loops round in their bodies,
//! which are compiled the same way.

use crate::dtype::DType;
use crate::ir::dtypes::dtypes_of;
use crate::ir::math::language::Math;
use crate::ir::{ReduceOp, Shape, TNode, TOp};
use egg::{Id, RecExpr};
use smallvec::SmallVec;

/// `program` with a rounding after each f32 operation that may leave f32
/// numbers; the roots follow their nodes. Unchanged (and not copied) when
/// nothing is f32.
pub(super) fn round_f32_results(
    program: &RecExpr<TNode>,
    shapes: &[Shape],
    roots: &[Id],
) -> Option<(RecExpr<TNode>, Vec<Shape>, Vec<Id>)> {
    let nodes = program.as_ref();
    let dtypes = dtypes_of(nodes);
    if !nodes
        .iter()
        .zip(&dtypes)
        .any(|(node, &d)| d == DType::F32 && inexact(&node.op))
    {
        return None;
    }
    let mut out: RecExpr<TNode> = RecExpr::default();
    let mut out_shapes: Vec<Shape> = Vec::with_capacity(nodes.len());
    let mut map: Vec<Id> = Vec::with_capacity(nodes.len());
    for (index, node) in nodes.iter().enumerate() {
        let children: SmallVec<[Id; 3]> =
            node.children.iter().map(|&c| map[usize::from(c)]).collect();
        let mut id = out.add(TNode::new(node.op.clone(), &children));
        out_shapes.push(shapes[index].clone());
        if dtypes[index] == DType::F32 && inexact(&node.op) {
            id = out.add(TNode::new(TOp::Cast(DType::F32), &[id]));
            out_shapes.push(shapes[index].clone());
        }
        map.push(id);
    }
    let roots = roots.iter().map(|&r| map[usize::from(r)]).collect();
    Some((out, out_shapes, roots))
}

/// Whether `op`, computed in f64 on f32 numbers, may give a number that is
/// not an f32 one (selections, movements, comparisons, roundings, minima
/// and maxima, negation and absolute values never do).
pub(super) fn inexact(op: &TOp) -> bool {
    match op {
        TOp::Map(math) => match crate::ir::math::elementwise::row(math) {
            // A function that picks an operand or a constant (`abs`, `min`,
            // `relu`, ...) is exact.
            Some(row) => row.cost != crate::ir::math::elementwise::Cost::Select,
            None => !matches!(math, Math::Neg(_) | Math::Num(_)),
        },
        TOp::Reduce { op, .. } => matches!(op, ReduceOp::Sum | ReduceOp::Prod),
        TOp::MatMul | TOp::Op(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::TensorGraph;
    use crate::ir::math::partials::PartialBuilder;

    #[test]
    fn f32_arithmetic_is_rounded_and_f64_is_not() {
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[3], DType::F32);
        let y = graph.input(1, &[3], DType::F64);
        let x2 = graph.mul(x, x);
        let neg = graph.neg(x2);
        let y2 = graph.mul(y, y);
        let roots = [neg, y2];
        let program = RecExpr::from(graph.nodes().to_vec());
        let (rounded, shapes, new_roots) =
            round_f32_results(&program, graph.shapes(), &roots).expect("x * x is f32");
        let casts = rounded
            .as_ref()
            .iter()
            .filter(|n| n.op == TOp::Cast(DType::F32))
            .count();
        // x * x only: the negation is exact and y * y is f64.
        assert_eq!(casts, 1);
        assert_eq!(shapes.len(), rounded.as_ref().len());
        assert_eq!(rounded[new_roots[0]].op, graph.node(neg).op);
        let mut g64 = TensorGraph::new();
        let a = g64.input(0, &[2], DType::F64);
        let b = g64.mul(a, a);
        assert!(
            round_f32_results(&RecExpr::from(g64.nodes().to_vec()), g64.shapes(), &[b]).is_none()
        );
    }

    #[test]
    fn an_expensive_f32_value_read_through_its_rounding_is_computed_once() {
        // t = tanh(x * y) read by two results: stored once, as in f64,
        // not recomputed inside each result's group.
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[64], DType::F32);
        let y = graph.input(1, &[64], DType::F32);
        let xy = graph.mul(x, y);
        let t = graph.map(Math::Tanh([xy]), &[xy]);
        let a = graph.add2(t, x);
        let b = graph.mul(t, y);
        let program = RecExpr::from(graph.nodes().to_vec());
        let shapes: Vec<Shape> = graph.shapes().to_vec();
        let tape = crate::tape::compile(
            &program,
            &shapes,
            &[a, b],
            &[shapes[0].clone(), shapes[1].clone()],
        );
        let tanh_steps: usize = tape
            .instructions
            .iter()
            .map(|i| match &i.op {
                crate::tape::Kernel::Fused(group) => group
                    .steps
                    .iter()
                    .filter(|(op, _)| matches!(op, TOp::Map(Math::Tanh(_))))
                    .count(),
                crate::tape::Kernel::Op(TOp::Map(Math::Tanh(_))) => 1,
                _ => 0,
            })
            .sum();
        assert_eq!(tanh_steps, 1, "{tape}");
    }
}

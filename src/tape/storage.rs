//! Which values a tape keeps in f32 storage. Values are held as f64 (an
//! f32 value as f64 numbers that are f32 ones: `rounding`), except an f32
//! value that every one of its users reads from f32 storage: it is kept
//! in half the bytes, so the kernel making it writes half and its users
//! read half, and an f32 matrix product reads it with no conversion.
//!
//! A value is kept in f32 storage when it is an f32 number (f32-typed,
//! not the unrounded result of an inexact operation), is not a result of
//! the tape, is made by a kernel that can write f32 storage (an f32
//! matrix product, an elementwise kernel or group) or is a view of such a
//! value (a transpose, a reshape), and each of its users is an f32 matrix
//! product, an elementwise kernel or group reading it at its own shape
//! (no broadcast), or a transpose or reshape whose users all are.

use super::Kernel;
use super::compile::Kernels;
use super::rounding::inexact;
use crate::dtype::DType;
use crate::ir::{Shape, TNode, TOp};
use smallvec::SmallVec;

/// Per node: whether its value is kept in f32 storage.
pub(super) fn f32_storage(
    kernels: &Kernels,
    needed: &[bool],
    nodes: &[TNode],
    dtypes: &[DType],
    shapes: &[Shape],
    roots: &[usize],
) -> Vec<bool> {
    let n = kernels.len();
    let scheduled = |i: usize| needed[i] && kernels[i].is_some();
    let mut users: Vec<SmallVec<[usize; 4]>> = vec![SmallVec::new(); n];
    for index in (0..n).filter(|&i| scheduled(i)) {
        let (_, args) = kernels[index].as_ref().expect("scheduled kernels exist");
        for &arg in args {
            // Users come in increasing order, so a repeat is the last one
            // (`contains` made a value read by many nodes quadratic).
            if users[arg].last() != Some(&index) {
                users[arg].push(index);
            }
        }
    }
    // Whether every user of a value reads f32 storage (later nodes first:
    // a view's answer needs its users').
    let mut root = vec![false; n];
    for &r in roots {
        root[r] = true;
    }
    let mut accepted = vec![false; n];
    for index in (0..n).rev().filter(|&i| scheduled(i)) {
        accepted[index] = !root[index]
            && !shapes[index].is_empty()
            && users[index].iter().all(|&user| {
                let (kernel, _) = kernels[user].as_ref().expect("users are scheduled");
                match kernel {
                    Kernel::Gemm { single: true, .. } => true,
                    Kernel::Fused(group) => {
                        let over = group.sum_over.as_ref().unwrap_or(&shapes[user]);
                        *over == shapes[index]
                    }
                    Kernel::Op(op) if op.is_elementwise() => shapes[user] == shapes[index],
                    Kernel::Op(TOp::Transpose(_) | TOp::Reshape(_)) => accepted[user],
                    _ => false,
                }
            });
    }
    let mut single = vec![false; n];
    for index in (0..n).filter(|&i| scheduled(i) && accepted[i]) {
        let (kernel, args) = kernels[index].as_ref().expect("scheduled kernels exist");
        single[index] = match kernel {
            Kernel::Gemm { single, .. } => *single,
            Kernel::Fused(group) => group.sum_over.is_none() && f32_number(nodes, dtypes, index),
            Kernel::Op(TOp::Transpose(_) | TOp::Reshape(_)) => single[args[0]],
            Kernel::Op(op) if op.is_elementwise() => f32_number(nodes, dtypes, index),
            _ => false,
        };
    }
    single
}

/// Whether node `index`'s value is f32 numbers: f32-typed and not an
/// inexact operation's (those are followed by a rounding).
fn f32_number(nodes: &[TNode], dtypes: &[DType], index: usize) -> bool {
    dtypes[index] == DType::F32 && !inexact(&nodes[index].op)
}

#[cfg(test)]
mod tests {
    use crate::dtype::DType;
    use crate::ir::math::language::Math;
    use crate::ir::math::partials::PartialBuilder;
    use crate::ir::{Shape, TOp, TensorGraph};
    use crate::tape::{Kernel, Tape};
    use egg::{Id, RecExpr};
    use smallvec::SmallVec;

    fn compiled(graph: &TensorGraph, roots: &[Id], inputs: usize) -> Tape {
        let program = RecExpr::from(graph.nodes().to_vec());
        let shapes: Vec<Shape> = graph.shapes().to_vec();
        let input_shapes: Vec<Shape> = (0..inputs).map(|k| shapes[k].clone()).collect();
        crate::tape::compile(&program, &shapes, roots, &input_shapes)
    }

    /// Whether the instruction computing kernels like `is` keeps f32.
    fn stored_f32(tape: &Tape, is: impl Fn(&Kernel) -> bool) -> Vec<bool> {
        tape.instructions
            .iter()
            .filter(|i| is(&i.op))
            .map(|i| i.single)
            .collect()
    }

    fn product(kernel: &Kernel) -> bool {
        matches!(kernel, Kernel::Gemm { .. })
    }

    #[test]
    fn f32_values_read_by_products_and_groups_are_kept_in_f32() {
        // h = tanh(x w) v: the product x w is read by the tanh group, the
        // group by the product with v; the result is the tape's.
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[8, 16], DType::F32);
        let w = graph.input(1, &[16, 4], DType::F32);
        let v = graph.input(2, &[4, 2], DType::F32);
        let p = graph.add_valid(TOp::MatMul, &[x, w]);
        let h = graph.map(Math::Tanh([p]), &[p]);
        let q = graph.add_valid(TOp::MatMul, &[h, v]);
        let tape = compiled(&graph, &[q], 3);
        assert_eq!(stored_f32(&tape, product), [true, false], "{tape}");
        let groups = stored_f32(&tape, |k| {
            !matches!(k, Kernel::Gemm { .. } | Kernel::Op(TOp::Input { .. }))
        });
        assert!(groups.iter().all(|&s| s) && !groups.is_empty(), "{tape}");
    }

    #[test]
    fn values_with_a_reduction_a_broadcast_or_no_f32_type_stay_f64() {
        // t = tanh(x w) is read by a sum, e = exp(sum) by a group that
        // broadcasts it; x w by the tanh group only.
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[8, 16], DType::F32);
        let w = graph.input(1, &[16, 4], DType::F32);
        let p = graph.add_valid(TOp::MatMul, &[x, w]);
        let t = graph.map(Math::Tanh([p]), &[p]);
        let s = graph.sum_axes(t, &[1], true);
        let e = graph.map(Math::Exp([s]), &[s]);
        let b = graph.mul(t, e);
        let tape = compiled(&graph, &[b], 2);
        assert_eq!(stored_f32(&tape, product), [true], "{tape}");
        let at = |k: usize| &tape.instructions[k];
        for k in 0..tape.instructions.len() {
            if let Kernel::Op(TOp::Reduce { .. }) = at(k).op {
                let summed = (0..k).rev().find(|&j| at(j).out == at(k).args[0]).unwrap();
                assert!(!at(summed).single, "{tape}");
            }
            if at(k).shape[..] == [8, 1] {
                assert!(!at(k).single, "{tape}");
            }
        }
        // The same program in f64.
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[8, 16], DType::F64);
        let w = graph.input(1, &[16, 4], DType::F64);
        let p = graph.add_valid(TOp::MatMul, &[x, w]);
        let v = graph.input(2, &[4, 2], DType::F64);
        let h = graph.map(Math::Tanh([p]), &[p]);
        let q = graph.add_valid(TOp::MatMul, &[h, v]);
        let tape = compiled(&graph, &[q], 3);
        assert!(tape.instructions.iter().all(|i| !i.single), "{tape}");
    }

    #[test]
    fn views_of_f32_storage_stay_f32_when_their_readers_do() {
        // Heads: (x w) reshaped and transposed, then multiplied by itself
        // transposed (views read by products) and by a group.
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[2, 6, 8], DType::F32);
        let w = graph.input(1, &[8, 8], DType::F32);
        let p = graph.add_valid(TOp::MatMul, &[x, w]);
        let split = graph.reshape(p, &[2, 6, 2, 4]);
        let heads = graph.add_valid(
            TOp::Transpose(SmallVec::from_slice(&[0, 2, 1, 3])),
            &[split],
        );
        let keys = graph.add_valid(
            TOp::Transpose(SmallVec::from_slice(&[0, 1, 3, 2])),
            &[heads],
        );
        let scores = graph.add_valid(TOp::MatMul, &[heads, keys]);
        let t = graph.map(Math::Tanh([scores]), &[scores]);
        let out = graph.add_valid(TOp::MatMul, &[t, heads]);
        let tape = compiled(&graph, &[out], 2);
        assert_eq!(stored_f32(&tape, product), [true, true, false], "{tape}");
        let views = stored_f32(&tape, |k| {
            matches!(k, Kernel::Op(TOp::Transpose(_) | TOp::Reshape(_)))
        });
        assert!(views.iter().all(|&s| s) && !views.is_empty(), "{tape}");
    }
}

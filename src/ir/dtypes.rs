//! Number types of tensor programs. Like shapes, they are derived: only
//! leaves (`Input`, `Placeholder`) and conversions (`Cast`) carry one, and
//! every other node's type follows from its operands by promotion
//! (`crate::dtype`).
//!
//! An operation computes in one type, its *compute* type; the operands it
//! promotes are converted to that type before it runs (the graph builder
//! inserts the `Cast`s, so kernels see one type), and the others (a
//! `where`'s condition, index operands) are read as they are.

use super::op::{TNode, TOp};
use crate::dtype::DType;
use egg::Language;

/// The compute type of `op` over operands of types `operands`, and the
/// type of its result.
pub fn infer_dtype(op: &TOp, operands: &[DType]) -> Typing {
    let all = || DType::promote_all(operands.iter().copied());
    let first = || operands.first().copied().unwrap_or(DType::Weak);
    let same = |d: DType| Typing {
        compute: d,
        result: d,
    };
    match op {
        TOp::Input { dtype, .. } | TOp::Placeholder { dtype, .. } => same(*dtype),
        TOp::Scalar(_) => same(DType::Weak),
        TOp::Cast(dtype) => same(*dtype),
        // A comparison's 0/1 mask has its operands' type, as the eager
        // comparison's tensor does (a mask of f32 values times f32 values
        // stays f32).
        TOp::Map(_) | TOp::MatMul | TOp::Concat(_) | TOp::Compare(_) => same(all()),
        TOp::Where => same(DType::promote_all(operands.iter().skip(1).copied())),
        TOp::ArgExtreme { .. } => Typing {
            compute: first(),
            result: DType::Weak,
        },
        TOp::Round(_)
        | TOp::Reduce { .. }
        | TOp::Broadcast(_)
        | TOp::Reshape(_)
        | TOp::Transpose(_)
        | TOp::Slice { .. }
        | TOp::Pad { .. }
        | TOp::Roll { .. }
        | TOp::StopGradient
        | TOp::Tag(_)
        | TOp::Linearized
        | TOp::Custom(_) => same(first()),
        TOp::Op(op) => same(DType::promote_all(
            operands
                .iter()
                .enumerate()
                .filter(|&(k, _)| op.differentiable(k))
                .map(|(_, &d)| d),
        )),
        TOp::Scan(scan) => {
            // The body's results: the next state and the step's outputs.
            let body = dtypes_of(&scan.body.nodes);

            same(DType::promote_all(
                scan.body.roots.iter().map(|&r| body[usize::from(r)]),
            ))
        }
        TOp::ScanVjp(_) => same(all()),
    }
}

/// What `infer_dtype` finds for one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Typing {
    /// The type the operation computes in.
    pub compute: DType,
    /// The type of its result.
    pub result: DType,
}

/// Whether `op` converts operand `k` to its compute type before it runs.
pub fn promotes_operand(op: &TOp, k: usize) -> bool {
    match op {
        TOp::Map(_) | TOp::MatMul | TOp::Concat(_) | TOp::Compare(_) => true,
        TOp::Where => k > 0,
        TOp::Op(op) => op.differentiable(k),
        _ => false,
    }
}

/// The type of every node of a program given in topological order.
pub fn dtypes_of(nodes: &[TNode]) -> Vec<crate::dtype::DType> {
    let mut dtypes: Vec<DType> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let operands: smallvec::SmallVec<[DType; 3]> = node
            .children()
            .iter()
            .map(|&c| dtypes[usize::from(c)])
            .collect();
        dtypes.push(infer_dtype(&node.op, &operands).result);
    }
    dtypes
}

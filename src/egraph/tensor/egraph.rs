//! Tensor programs in an e-graph: the `Shapes` analysis (every class has
//! one shape; scalar constants fold) and parsing of rule patterns, where
//! scalar operators name their elementwise form (`(* ?a 1)`).

use crate::ir::math::eval::apply_op;
use crate::ir::math::language::{Constant, Math};
use crate::ir::op::{Shape, TNode, TOp, map_op};
use crate::ir::shape::infer;
use egg::{Analysis, DidMerge, EGraph, FromOp, Id, Language};
use smallvec::SmallVec;

/// An e-graph of tensor programs.
pub type TensorEGraph = EGraph<TNode, Shapes>;

/// What the analysis knows of a class.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorFacts {
    /// The shape of every node of the class.
    pub shape: Shape,
    /// The value, when the class is a scalar constant.
    pub constant: Option<Constant>,
}

/// Shapes and scalar constant folding.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shapes;

/// The shapes of `node`'s operands in `egraph`.
pub fn operand_shapes<'a>(egraph: &'a TensorEGraph, node: &TNode) -> SmallVec<[&'a [usize]; 3]> {
    node.children
        .iter()
        .map(|&c| &egraph[c].data.shape[..])
        .collect()
}

/// The shape of `node`'s result. Rules are applied only where shapes fit
/// (`rules::ShapeSafe`), so inference succeeds on every node that reaches
/// the e-graph.
pub fn node_shape(egraph: &TensorEGraph, node: &TNode) -> Shape {
    infer(&node.op, &operand_shapes(egraph, node)).unwrap_or_default()
}

impl Analysis<TNode> for Shapes {
    type Data = TensorFacts;

    fn make(egraph: &mut TensorEGraph, node: &TNode, _id: Id) -> TensorFacts {
        let shape = node_shape(egraph, node);
        let constant = match &node.op {
            TOp::Scalar(c) => Some(*c),
            TOp::Map(_)
                if node
                    .children
                    .iter()
                    .all(|&c| egraph[c].data.constant.is_some()) =>
            {
                node.math()
                    .and_then(|math| {
                        apply_op(&math, |id| {
                            egraph[id].data.constant.map_or(f64::NAN, Constant::get)
                        })
                    })
                    .and_then(Constant::new)
            }
            _ => None,
        };
        TensorFacts { shape, constant }
    }

    fn merge(&mut self, a: &mut TensorFacts, b: TensorFacts) -> DidMerge {
        match (a.constant, b.constant) {
            (None, Some(c)) => {
                a.constant = Some(c);
                DidMerge(true, false)
            }
            (Some(_), None) => DidMerge(false, true),
            _ => DidMerge(false, false),
        }
    }

    fn modify(egraph: &mut TensorEGraph, id: Id) {
        if let Some(c) = egraph[id].data.constant {
            let constant = egraph.add(TNode::new(TOp::Scalar(c), &[]));
            egraph.union(id, constant);
        }
    }
}

impl FromOp for TNode {
    type Error = String;

    fn from_op(op: &str, children: Vec<Id>) -> Result<Self, String> {
        if children.is_empty()
            && let Ok(value) = op.parse::<f64>()
        {
            let c = Constant::new(value).ok_or_else(|| format!("{op} is not finite"))?;
            return Ok(TNode::new(TOp::Scalar(c), &[]));
        }
        if let Some(math) = Math::from_op_name(op, &children) {
            return Ok(TNode::new(map_op(&math), &children));
        }
        match (op, children.len()) {
            ("where", 3) => Ok(TNode::new(TOp::Where, &children)),
            ("matmul", 2) => Ok(TNode::new(TOp::MatMul, &children)),
            ("transpose", 1) => Ok(TNode::new(
                TOp::Transpose(SmallVec::from_slice(&[1, 0])),
                &children,
            )),
            _ => Err(format!(
                "no tensor operator {op} of {} operands",
                children.len()
            )),
        }
    }
}

/// The children of `node` (for callers without `egg::Language` in scope).
pub fn children(node: &TNode) -> &[Id] {
    node.children()
}

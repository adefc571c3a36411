//! What derivative rules build with: the graph the sweep appends to, the
//! forward sweep's batch of directions, and the small vocabulary of
//! matrix algebra the rules of the table share (products, transposes,
//! triangles, solves), each one node or a few.

use super::{Op, linalg, sequence};
use crate::ir::math::language::Math;
use crate::ir::math::partials::PartialBuilder;
use crate::ir::op::map_op;
use crate::ir::{CmpOp, Shape, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;

/// The cotangents a reverse rule gives its operands, in operand order.
pub type Pulled = SmallVec<[Option<Id>; 3]>;

/// A derivative rule's view of the sweep.
pub struct Rules<'a> {
    /// The graph the derivative nodes are appended to.
    pub graph: &'a mut TensorGraph,
    batch: Option<usize>,
}

impl<'a> Rules<'a> {
    /// Rules appending to `graph`; `batch` is the forward sweep's number of
    /// directions (`None` for one direction and for the reverse sweep).
    pub fn new(graph: &'a mut TensorGraph, batch: Option<usize>) -> Rules<'a> {
        Rules { graph, batch }
    }

    /// The number of directions of a batched forward sweep.
    pub fn batch(&self) -> Option<usize> {
        self.batch
    }

    /// How many leading axes a tangent has beyond its value's (0 or 1).
    pub fn lead(&self) -> usize {
        usize::from(self.batch.is_some())
    }

    /// Tangent `t` with ones inserted after its direction axis (where the
    /// sweep has one) until it has `rank` axes beyond it: a tangent of an
    /// operand that broadcasts against a higher-rank one, made ready for
    /// an operation that aligns stacks from the right (a batched matrix
    /// product would otherwise line the directions up with a stack axis).
    pub fn align_tangent(&mut self, t: Id, rank: usize) -> Id {
        let shape = self.shape(t);
        let lead = self.lead().min(shape.len());
        if shape.len() >= lead + rank || lead == 0 {
            return t;
        }
        let mut aligned: Shape = shape[..lead].into();
        aligned.extend(std::iter::repeat_n(1, lead + rank - shape.len()));
        aligned.extend_from_slice(&shape[lead..]);
        self.graph.reshape(t, &aligned)
    }

    /// The shape of node `id`.
    pub fn shape(&self, id: Id) -> Shape {
        self.graph.shape(id).clone()
    }

    /// The rank of node `id`.
    pub fn rank(&self, id: Id) -> usize {
        self.graph.shape(id).len()
    }

    /// Zeros shaped like the tangent of `value`.
    pub fn zero_tangent(&mut self, value: Id) -> Id {
        let mut shape: Shape = self.batch.into_iter().collect();
        shape.extend_from_slice(self.graph.shape(value));
        self.graph.full(0.0, &shape)
    }

    /// The tangent `t`, or zeros shaped like `value`'s tangent.
    pub fn tangent_or_zero(&mut self, value: Id, t: Option<Id>) -> Id {
        match t {
            Some(t) => t,
            None => self.zero_tangent(value),
        }
    }

    /// A node of the table.
    pub fn op(&mut self, op: Op, operands: &[Id]) -> Id {
        self.graph.add_valid(TOp::Op(op), operands)
    }

    /// `a + b` (broadcasting).
    pub fn add(&mut self, a: Id, b: Id) -> Id {
        self.graph.add2(a, b)
    }

    /// `a - b` (broadcasting).
    pub fn sub(&mut self, a: Id, b: Id) -> Id {
        self.graph.sub(a, b)
    }

    /// `a * b` (broadcasting).
    pub fn mul(&mut self, a: Id, b: Id) -> Id {
        self.graph.mul(a, b)
    }

    /// `a / b` (broadcasting).
    pub fn div(&mut self, a: Id, b: Id) -> Id {
        self.graph.div(a, b)
    }

    /// `-a`.
    pub fn neg(&mut self, a: Id) -> Id {
        self.graph.neg(a)
    }

    /// The number `x`.
    pub fn num(&mut self, x: f64) -> Id {
        self.graph.num(x)
    }

    /// `f(a)` for a unary scalar operator such as `Math::Exp`.
    pub fn map1(&mut self, math: Math, a: Id) -> Id {
        self.graph.add_valid(map_op(&math), &[a])
    }

    /// `(where cond a b)`.
    pub fn select(&mut self, cond: Id, a: Id, b: Id) -> Id {
        self.graph.add_valid(TOp::Where, &[cond, a, b])
    }

    /// `a == b` elementwise as 1.0 / 0.0.
    pub fn equal(&mut self, a: Id, b: Id) -> Id {
        self.graph.add_valid(TOp::Compare(CmpOp::Eq), &[a, b])
    }

    /// `a < b` elementwise as 1.0 / 0.0.
    pub fn less(&mut self, a: Id, b: Id) -> Id {
        self.graph.add_valid(TOp::Compare(CmpOp::Lt), &[a, b])
    }

    /// The matrix product, stacks broadcasting (both operands of rank 2
    /// or more).
    pub fn mm(&mut self, a: Id, b: Id) -> Id {
        self.graph.add_valid(TOp::MatMul, &[a, b])
    }

    /// The last two axes swapped.
    pub fn mt(&mut self, x: Id) -> Id {
        let rank = self.rank(x) as u8;
        let perm: SmallVec<[u8; 4]> = (0..rank - 2).chain([rank - 1, rank - 2]).collect();
        self.graph.add_valid(TOp::Transpose(perm), &[x])
    }

    /// `(x + xᵀ) / 2` over the last two axes.
    pub fn symmetrize(&mut self, x: Id) -> Id {
        let xt = self.mt(x);
        let sum = self.add(x, xt);
        let half = self.num(0.5);
        self.mul(half, sum)
    }

    /// `x` summed down to `shape` (the adjoint of broadcasting).
    pub fn sum_to(&mut self, x: Id, shape: &[usize]) -> Id {
        self.graph.sum_to(x, shape)
    }

    /// `x` summed down to the shape of `like`.
    pub fn sum_to_like(&mut self, x: Id, like: Id) -> Id {
        let shape = self.shape(like);
        self.graph.sum_to(x, &shape)
    }

    /// `x` reshaped.
    pub fn reshape(&mut self, x: Id, shape: &[usize]) -> Id {
        self.graph.reshape(x, shape)
    }

    /// The sum of `x` over `axes`.
    pub fn sum_axes(&mut self, x: Id, axes: &[usize], keepdims: bool) -> Id {
        let axes: SmallVec<[u8; 4]> = axes.iter().map(|&a| a as u8).collect();
        self.graph.sum_axes(x, &axes, keepdims)
    }

    /// `tril(x, k)` over the last two axes: entries with `j <= i + k`.
    pub fn tril(&mut self, x: Id, k: i64) -> Id {
        self.op(Op::Triangle(linalg::Triangle { lower: true, k }), &[x])
    }

    /// `triu(x, k)` over the last two axes: entries with `j >= i + k`.
    pub fn triu(&mut self, x: Id, k: i64) -> Id {
        self.op(Op::Triangle(linalg::Triangle { lower: false, k }), &[x])
    }

    /// The diagonals of the matrices of `x`.
    pub fn diagonal(&mut self, x: Id) -> Id {
        self.op(Op::Diagonal(linalg::Diagonal), &[x])
    }

    /// Matrices of `rows` x `cols` with `v`'s last axis on the diagonal.
    pub fn diag(&mut self, v: Id, rows: usize, cols: usize) -> Id {
        self.op(Op::Diag(linalg::Diag { rows, cols }), &[v])
    }

    /// The solution `x` of `op(a) x = b` for a triangular `a` (`b` a stack
    /// of matrices).
    pub fn triangular_solve(&mut self, a: Id, b: Id, lower: bool, transpose: bool) -> Id {
        self.op(
            Op::TriangularSolve(linalg::TriangularSolve {
                lower,
                transpose,
                vector: false,
                site: super::Site::default(),
            }),
            &[a, b],
        )
    }

    /// The solution of `op(a) x = b` for a general square `a` (`b` a stack
    /// of matrices).
    pub fn solve(&mut self, a: Id, b: Id, transpose: bool) -> Id {
        self.op(
            Op::Solve(linalg::Solve {
                transpose,
                vector: false,
                site: super::Site::default(),
            }),
            &[a, b],
        )
    }

    /// `x` reversed along `axis`.
    pub fn flip(&mut self, x: Id, axis: usize) -> Id {
        self.op(Op::Flip(sequence::Flip { axis: axis as u8 }), &[x])
    }

    /// The views of the packed result `node` (see [`super::unpack`]).
    pub fn unpack(&mut self, node: Id, parts: &[Shape]) -> Vec<Id> {
        super::unpack(self.graph, node, parts)
    }

    /// The views of a packed tangent: without a batch as [`Rules::unpack`];
    /// with one, `t` is `[batch, total]` and each view gets the batch axis
    /// in front.
    pub fn unpack_tangent(&mut self, t: Id, parts: &[Shape]) -> Vec<Id> {
        let Some(b) = self.batch else {
            return self.unpack(t, parts);
        };
        let mut offset = 0;
        parts
            .iter()
            .map(|shape| {
                let len: usize = shape.iter().product();
                let piece = self.graph.add_valid(
                    TOp::Slice {
                        axis: 1,
                        start: offset,
                        end: offset + len,
                    },
                    &[t],
                );
                offset += len;
                let mut full: Shape = SmallVec::from_slice(&[b]);
                full.extend_from_slice(shape);
                self.reshape(piece, &full)
            })
            .collect()
    }

    /// Tangents packed the way [`Rules::unpack_tangent`] reads them (each
    /// piece with the batch axis in front when the sweep has one).
    pub fn pack_tangent(&mut self, pieces: &[Id]) -> Id {
        let lead: Option<usize> = self.batch;
        let rows: Vec<Id> = pieces
            .iter()
            .map(|&p| {
                let n = self.graph.numel(p);
                match lead {
                    Some(b) => self.reshape(p, &[b, n / b.max(1)]),
                    None => self.reshape(p, &[n]),
                }
            })
            .collect();
        let axis = u8::from(lead.is_some());
        self.graph.add_valid(TOp::Concat(axis), &rows)
    }
}

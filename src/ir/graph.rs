//! `TensorGraph`: a growing DAG of tensor operations with the shape of every
//! node. Equal nodes are stored once (hash-consing, hence common
//! subexpressions are shared), scalar constants fold, and the identities
//! that hold for every value and keep the result's shape apply on the way
//! in (`a * 1`, `a + 0`, `-(-a)`, reshaping to the same shape, ...).
//!
//! The tracer records a Lisp function into one; the reverse and forward
//! sweeps append derivative nodes to the same graph.

use super::dtypes::{infer_dtype, promotes_operand};
use super::op::{Shape, TNode, TOp, map_op};
use super::shape::{ShapeError, infer, numel};
use crate::dtype::DType;
use crate::ir::math::eval::apply_op;
use crate::ir::math::language::{Constant, Math};
use crate::ir::math::partials::PartialBuilder;
use egg::{Id, RecExpr};
use hashbrown::HashTable;
use rustc_hash::FxHasher;
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

/// A tensor program under construction; children precede parents.
#[derive(Clone, Debug, Default)]
pub struct TensorGraph {
    expr: RecExpr<TNode>,
    shapes: Vec<Shape>,
    dtypes: Vec<DType>,
    /// Hash-consing: each node's hash and id (the node itself is only in
    /// `expr`, so a node costs no second copy).
    memo: HashTable<(u64, Id)>,
    /// Placeholders made so far (their numbers follow the order of
    /// tracing, so a function traced again makes the same program).
    placeholders: u32,
    /// While a sweep builds a node's derivative: that node, and whether
    /// the sweep is the reverse one.
    deriving: Option<(Id, bool)>,
    /// For each node a sweep made, the node it derives from and whether
    /// in reverse (so a failure can be told in the user's terms).
    derived: Vec<Option<(Id, bool)>>,
}

/// The hash a node is hash-consed by.
fn node_hash(node: &TNode) -> u64 {
    let mut hasher = FxHasher::default();
    node.hash(&mut hasher);
    hasher.finish()
}

impl TensorGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// The node at `id`.
    pub fn node(&self, id: Id) -> &TNode {
        &self.expr[id]
    }

    /// The shape of the value at `id`.
    pub fn shape(&self, id: Id) -> &Shape {
        &self.shapes[usize::from(id)]
    }

    /// The number type of the value at `id`.
    pub fn dtype(&self, id: Id) -> DType {
        self.dtypes[usize::from(id)]
    }

    /// The number type of every node, by id.
    pub fn dtypes(&self) -> &[DType] {
        &self.dtypes
    }

    /// Makes room for `additional` more nodes (a sweep roughly doubles a
    /// program), so the tables do not grow step by step.
    pub fn reserve(&mut self, additional: usize) {
        let mut nodes: Vec<TNode> = std::mem::take(&mut self.expr).into();
        nodes.reserve(additional);
        self.expr = nodes.into();
        self.derived.reserve(additional);
        self.memo.reserve(additional, |&(hash, _)| hash);
        self.shapes.reserve(additional);
        self.dtypes.reserve(additional);
    }

    /// The shape of every node, by id.
    pub fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// The program so far.
    pub fn expr(&self) -> &RecExpr<TNode> {
        &self.expr
    }

    /// The scalar constant at `id`, if it is one.
    pub fn constant(&self, id: Id) -> Option<f64> {
        self.expr[id].constant()
    }

    /// Run-time input `index` of `shape` and type `dtype`.
    pub fn input(&mut self, index: u32, shape: &[usize], dtype: DType) -> Id {
        self.insert(
            TNode::new(
                TOp::Input {
                    index,
                    shape: SmallVec::from_slice(shape),
                    dtype,
                },
                &[],
            ),
            SmallVec::from_slice(shape),
            dtype,
        )
    }

    /// `x` converted to `dtype` (itself when it has that type; a constant
    /// stays a weak constant, rounded).
    pub fn cast(&mut self, x: Id, dtype: DType) -> Id {
        self.add_valid(TOp::Cast(dtype), &[x])
    }

    /// Marks the nodes added from now on as part of the derivative of
    /// `from` (`Some((node, reverse))`), or as nobody's (`None`); returns
    /// the mark it replaces.
    pub fn set_deriving(&mut self, from: Option<(Id, bool)>) -> Option<(Id, bool)> {
        std::mem::replace(&mut self.deriving, from)
    }

    /// The node whose derivative node `id` is part of, and whether that
    /// derivative is the reverse one.
    pub fn derived_from(&self, id: Id) -> Option<(Id, bool)> {
        self.derived.get(usize::from(id)).copied().flatten()
    }

    /// A fresh placeholder of `shape` and `dtype` (a stand-in a custom
    /// rule is traced with).
    pub fn placeholder(&mut self, shape: &[usize], dtype: DType) -> Id {
        let serial = self.placeholders;
        self.placeholders += 1;
        self.insert(
            TNode::new(
                TOp::Placeholder {
                    serial,
                    shape: SmallVec::from_slice(shape),
                    dtype,
                },
                &[],
            ),
            SmallVec::from_slice(shape),
            dtype,
        )
    }

    /// The scalar `value`, or `None` if it is not finite (such numbers are
    /// passed as inputs instead).
    pub fn scalar(&mut self, value: f64) -> Option<Id> {
        let constant = Constant::new(value)?;
        Some(self.insert(
            TNode::new(TOp::Scalar(constant), &[]),
            Shape::new(),
            DType::Weak,
        ))
    }

    /// The node of the scalar `value` if the graph has it already.
    pub fn find_scalar(&self, value: f64) -> Option<Id> {
        let node = TNode::new(TOp::Scalar(Constant::new(value)?), &[]);
        let hash = node_hash(&node);
        let expr = &self.expr;
        self.memo
            .find(hash, |&(other, id)| other == hash && expr[id] == node)
            .map(|&(_, id)| id)
    }

    /// A finite scalar known to the caller (a number in a derivative rule).
    pub fn num(&mut self, value: f64) -> Id {
        self.scalar(value)
            .expect("derivative rules use finite numbers")
    }

    /// A tensor of `shape` filled with `value` (finite).
    pub fn full(&mut self, value: f64, shape: &[usize]) -> Id {
        let scalar = self.num(value);
        self.broadcast(scalar, shape)
    }

    /// Adds `op` over `children`, checking shapes, converting the operands
    /// it promotes to its compute type (`dtype::infer_dtype`) and applying
    /// identities.
    pub fn add(&mut self, op: TOp, children: &[Id]) -> Result<Id, ShapeError> {
        let operand_dtypes: SmallVec<[DType; 3]> =
            children.iter().map(|&c| self.dtype(c)).collect();
        let typing = infer_dtype(&op, &operand_dtypes);
        if let TOp::Cast(target) = op {
            if let Some(id) = self.cast_simplified(children[0], target) {
                return Ok(id);
            }
        } else if children
            .iter()
            .enumerate()
            .any(|(k, &c)| promotes_operand(&op, k) && self.dtype(c) != typing.compute)
        {
            let converted: SmallVec<[Id; 3]> = children
                .iter()
                .enumerate()
                .map(|(k, &c)| {
                    if promotes_operand(&op, k) {
                        self.converted(c, typing.compute)
                    } else {
                        c
                    }
                })
                .collect();
            if converted[..] != *children {
                return self.add(op, &converted);
            }
        }
        let shape = {
            let shapes: SmallVec<[&[usize]; 3]> = children
                .iter()
                .map(|&c| &self.shapes[usize::from(c)][..])
                .collect();
            infer(&op, &shapes)?
        };
        let node = TNode::new(op, children);
        if let Some(id) = self.simplified(&node, &shape) {
            debug_assert_eq!(
                self.dtype(id),
                typing.result,
                "an identity keeps the number type"
            );
            return Ok(id);
        }
        Ok(self.insert(node, shape, typing.result))
    }

    /// Operand `x` as an operation computing in `dtype` reads it: a
    /// constant rounded to the type (staying weak, so identities on
    /// constants still apply), a weak value widened to f64 as it is, any
    /// other value converted.
    fn converted(&mut self, x: Id, dtype: DType) -> Id {
        let from = self.dtype(x);
        if from == dtype || (from == DType::Weak && dtype != DType::F32) {
            return x;
        }
        if from == DType::Weak
            && let Some(rounded) = self.rounded_constant(x, dtype)
        {
            return rounded;
        }
        self.cast(x, dtype)
    }

    /// A weak constant (a number, or one broadcast or reshaped) rounded to
    /// `dtype`.
    fn rounded_constant(&mut self, x: Id, dtype: DType) -> Option<Id> {
        match (&self.expr[x].op, self.expr[x].children.as_slice()) {
            (TOp::Scalar(c), _) => {
                let value = dtype.round(c.get());
                // A number beyond f32's range becomes infinite: an input,
                // which `cast` converts instead.
                self.scalar(value)
            }
            (op @ (TOp::Broadcast(_) | TOp::Reshape(_)), &[inner]) => {
                let op = op.clone();
                let rounded = self.rounded_constant(inner, dtype)?;
                Some(self.add_valid(op, &[rounded]))
            }
            _ => None,
        }
    }

    /// `Cast(target)` of `x` when it needs no node of its own.
    fn cast_simplified(&mut self, x: Id, target: DType) -> Option<Id> {
        let from = self.dtype(x);
        if from == target {
            return Some(x);
        }
        if target == DType::F32 && from == DType::Weak {
            return None;
        }
        // A conversion of a widening conversion converts the original.
        match (&self.expr[x].op, self.expr[x].children.as_slice()) {
            (TOp::Cast(_), &[inner]) if self.dtype(inner) <= from => Some(self.cast(inner, target)),
            _ => None,
        }
    }

    /// Adds a node whose shapes are known to fit (built by a derivative
    /// rule from operands that already combined).
    pub fn add_valid(&mut self, op: TOp, children: &[Id]) -> Id {
        self.add(op, children)
            .expect("derivative rules combine operands of fitting shapes")
    }

    fn insert(&mut self, node: TNode, shape: Shape, dtype: DType) -> Id {
        // One hash per node, compared only with nodes of the same hash.
        let hash = node_hash(&node);
        let expr = &self.expr;
        if let Some(&(_, id)) = self
            .memo
            .find(hash, |&(other, id)| other == hash && expr[id] == node)
        {
            return id;
        }
        let id = self.expr.add(node);
        self.memo.insert_unique(hash, (hash, id), |&(hash, _)| hash);
        self.shapes.push(shape);
        self.dtypes.push(dtype);
        self.derived.push(self.deriving);
        id
    }

    fn simplified(&mut self, node: &TNode, shape: &Shape) -> Option<Id> {
        let children = &node.children;
        let same = |this: &Self, id: Id| this.shapes[usize::from(id)] == *shape;
        // A number, or a number broadcast to a shape (the seed of a sweep).
        let is = |this: &Self, id: Id, value: f64| match &this.expr[id].op {
            TOp::Broadcast(_) => this.constant(this.expr[id].children[0]) == Some(value),
            _ => this.constant(id) == Some(value),
        };
        match &node.op {
            TOp::Map(math) => {
                if children.iter().all(|&c| self.constant(c).is_some()) {
                    let scalar = node.math()?;
                    let value = apply_op(&scalar, |id| self.constant(id).unwrap_or(f64::NAN))?;
                    if let Some(id) = self.scalar(value) {
                        return Some(id);
                    }
                }
                let (a, b) = (children[0], *children.get(1).unwrap_or(&children[0]));
                match math {
                    Math::Add(_) if is(self, b, 0.0) && same(self, a) => Some(a),
                    Math::Add(_) if is(self, a, 0.0) && same(self, b) => Some(b),
                    Math::Sub(_) if is(self, b, 0.0) && same(self, a) => Some(a),
                    Math::Sub(_) if is(self, a, 0.0) => Some(self.neg(b)),
                    Math::Mul(_) if is(self, b, 1.0) && same(self, a) => Some(a),
                    Math::Mul(_) if is(self, a, 1.0) && same(self, b) => Some(b),
                    Math::Mul(_) if is(self, a, -1.0) && same(self, b) => Some(self.neg(b)),
                    Math::Mul(_) if is(self, b, -1.0) && same(self, a) => Some(self.neg(a)),
                    // Numbers lead products, so `2 * x` and `x * 2` share.
                    Math::Mul(_) if self.constant(b).is_some() && self.constant(a).is_none() => {
                        Some(self.mul(b, a))
                    }
                    Math::Div(_) if is(self, b, 1.0) && same(self, a) => Some(a),
                    Math::Pow(_) if is(self, b, 1.0) && same(self, a) => Some(a),
                    // A square is a product: exact, and far cheaper.
                    Math::Pow(_) if is(self, b, 2.0) && same(self, a) => Some(self.mul(a, a)),
                    Math::Neg(_) => match (&self.expr[a].op, self.expr[a].children.as_slice()) {
                        (TOp::Map(Math::Neg(_)), &[inner]) => Some(inner),
                        _ => None,
                    },
                    // log(sigmoid x) = -softplus(-x): finite where the
                    // sigmoid underflows to 0 (x = -1000), in value and
                    // derivative.
                    Math::Log(_) => match (&self.expr[a].op, self.expr[a].children.as_slice()) {
                        (TOp::Map(Math::Sigmoid(_)), &[inner]) => {
                            let flipped = self.neg(inner);
                            let softplus =
                                self.add_valid(TOp::Map(Math::Softplus([Id::from(0)])), &[flipped]);
                            Some(self.neg(softplus))
                        }
                        _ => None,
                    },
                    _ => None,
                }
            }
            TOp::Broadcast(_) | TOp::Reshape(_) if same(self, children[0]) => Some(children[0]),
            // Broadcasting a one-element value needs no reshape first.
            TOp::Broadcast(target) => match (
                &self.expr[children[0]].op,
                &self.expr[children[0]].children[..],
            ) {
                (TOp::Reshape(_) | TOp::Broadcast(_), &[inner])
                    if numel(&self.shapes[usize::from(inner)]) == 1
                        && self.shapes[usize::from(inner)].len() <= target.len() =>
                {
                    Some(self.add_valid(TOp::Broadcast(target.clone()), &[inner]))
                }
                _ => None,
            },
            TOp::Reshape(target) => match (
                &self.expr[children[0]].op,
                &self.expr[children[0]].children[..],
            ) {
                (TOp::Reshape(_), &[inner]) => {
                    Some(self.add_valid(TOp::Reshape(target.clone()), &[inner]))
                }
                _ => None,
            },
            TOp::Transpose(perm) if perm.iter().enumerate().all(|(i, &p)| usize::from(p) == i) => {
                Some(children[0])
            }
            TOp::Reduce { axes, .. } if axes.is_empty() => Some(children[0]),
            TOp::Reduce {
                op: super::op::ReduceOp::Sum,
                axes,
                keepdims,
            } if axes
                .iter()
                .all(|&a| self.shapes[usize::from(children[0])][usize::from(a)] == 1) =>
            {
                // Summing over axes of length 1 only drops them.
                if *keepdims {
                    Some(children[0])
                } else {
                    Some(self.add_valid(TOp::Reshape(shape.clone()), &[children[0]]))
                }
            }
            // The sum of a negation is the negation of the (smaller) sum:
            // the reverse of a subtraction reduced to a broadcast operand's
            // shape negates once per result, not once per element.
            TOp::Reduce {
                op: super::op::ReduceOp::Sum,
                ..
            } if matches!(self.expr[children[0]].op, TOp::Map(Math::Neg(_))) => {
                let inner = self.expr[children[0]].children[0];
                let total = self.add_valid(node.op.clone(), &[inner]);
                Some(self.neg(total))
            }
            // A sum of a matrix product over its rows (or columns) is the
            // product of the summed operand: sum_n (A B)[n, j] =
            // (sum_n A[n, :]) B[:, j]. The reverse of a product by a
            // broadcast matrix then never makes the full product.
            TOp::Reduce {
                op: super::op::ReduceOp::Sum,
                axes,
                keepdims,
            } if axes.len() == 1 && matches!(self.expr[children[0]].op, TOp::MatMul) => {
                let product = children[0];
                let (a, b) = (
                    self.expr[product].children[0],
                    self.expr[product].children[1],
                );
                let rank = self.shapes[usize::from(product)].len();
                let (rank_a, rank_b) = (
                    self.shapes[usize::from(a)].len(),
                    self.shapes[usize::from(b)].len(),
                );
                let axis = usize::from(axes[0]);
                let summed = |this: &mut Self, x: Id, axis: usize| {
                    this.add_valid(
                        TOp::Reduce {
                            op: super::op::ReduceOp::Sum,
                            axes: SmallVec::from_slice(&[axis as u8]),
                            keepdims: true,
                        },
                        &[x],
                    )
                };
                let moved = if rank_a >= 2 && rank_b >= 2 && rank_a == rank && axis == rank - 2 {
                    let rows = summed(self, a, axis);
                    self.add_valid(TOp::MatMul, &[rows, b])
                } else if rank_a >= 2 && rank_b >= 2 && rank_b == rank && axis == rank - 1 {
                    let columns = summed(self, b, axis);
                    self.add_valid(TOp::MatMul, &[a, columns])
                } else {
                    return None;
                };
                if *keepdims {
                    Some(moved)
                } else {
                    Some(self.add_valid(TOp::Reshape(shape.clone()), &[moved]))
                }
            }
            TOp::Slice { start, end, axis } => {
                let length = self.shapes[usize::from(children[0])][usize::from(*axis)];
                (*start == 0 && *end == length).then_some(children[0])
            }
            TOp::Pad {
                before: 0,
                after: 0,
                ..
            }
            | TOp::Roll { shift: 0, .. } => Some(children[0]),
            TOp::Concat(_) if children.len() == 1 => Some(children[0]),
            TOp::StopGradient if !self.expr[children[0]].is_differentiable() => Some(children[0]),
            _ => None,
        }
    }

    // Building blocks for derivative rules (operands known to fit).

    /// The scalar operator `math` applied elementwise to `operands`.
    pub fn map(&mut self, math: Math, operands: &[Id]) -> Id {
        self.add_valid(map_op(&math), operands)
    }

    /// `x` broadcast to `shape`.
    pub fn broadcast(&mut self, x: Id, shape: &[usize]) -> Id {
        self.add_valid(TOp::Broadcast(SmallVec::from_slice(shape)), &[x])
    }

    /// `x` reshaped to `shape`.
    pub fn reshape(&mut self, x: Id, shape: &[usize]) -> Id {
        self.add_valid(TOp::Reshape(SmallVec::from_slice(shape)), &[x])
    }

    /// The sum of `x` over `axes`.
    pub fn sum_axes(&mut self, x: Id, axes: &[u8], keepdims: bool) -> Id {
        self.add_valid(
            TOp::Reduce {
                op: super::op::ReduceOp::Sum,
                axes: SmallVec::from_slice(axes),
                keepdims,
            },
            &[x],
        )
    }

    /// For each element of `x`, the product over `axes` of the other
    /// elements of its lane (the partial derivative of a product), exact
    /// where elements are 0: with no zero in the lane it is product / x,
    /// with one zero it is the product of the rest at the zero and 0
    /// elsewhere, with more it is 0.
    pub fn product_of_others(&mut self, x: Id, axes: &[u8]) -> Id {
        let shape = self.shape(x).clone();
        let (zero, one) = (self.num(0.0), self.num(1.0));
        let is_zero = self.add_valid(TOp::Compare(super::op::CmpOp::Eq), &[x, zero]);
        let zeros = self.sum_axes(is_zero, axes, true);
        let zeros = self.broadcast(zeros, &shape);
        let nonzero = self.add_valid(TOp::Where, &[is_zero, one, x]);
        let product = self.add_valid(
            TOp::Reduce {
                op: super::op::ReduceOp::Prod,
                axes: SmallVec::from_slice(axes),
                keepdims: true,
            },
            &[nonzero],
        );
        let product = self.broadcast(product, &shape);
        // The zero elements summed: 0 in value, but it carries the
        // derivative with respect to the zeros, so second derivatives are
        // right with up to two zeros in a lane.
        let masked = self.mul(x, is_zero);
        let zero_sum = self.sum_axes(masked, axes, true);
        let zero_sum = self.broadcast(zero_sum, &shape);
        let quotient = self.div(product, nonzero);
        // No zero: product / x. One zero: the product of the rest at the
        // zero, (the zero) * product / x elsewhere. Two zeros: (the other
        // zero) * product at each zero, 0 elsewhere. More: 0.
        let other_zero = self.sub(zero_sum, x);
        let two_at_zero = self.mul(other_zero, product);
        let one_elsewhere = self.mul(zero_sum, quotient);
        let at_zero_one = self.add_valid(TOp::Where, &[is_zero, product, one_elsewhere]);
        let at_zero_two = self.add_valid(TOp::Where, &[is_zero, two_at_zero, zero]);
        let two = self.num(2.0);
        let none = self.add_valid(TOp::Compare(super::op::CmpOp::Eq), &[zeros, zero]);
        let single = self.add_valid(TOp::Compare(super::op::CmpOp::Eq), &[zeros, one]);
        let pair = self.add_valid(TOp::Compare(super::op::CmpOp::Eq), &[zeros, two]);
        let beyond = self.add_valid(TOp::Where, &[pair, at_zero_two, zero]);
        let with_zero = self.add_valid(TOp::Where, &[single, at_zero_one, beyond]);
        self.add_valid(TOp::Where, &[none, quotient, with_zero])
    }

    /// `x` (whose shape broadcasts to `shape`... the other way round: `x`
    /// has a shape that `target` broadcasts to) summed down to `target`:
    /// the adjoint of broadcasting.
    pub fn sum_to(&mut self, x: Id, target: &[usize]) -> Id {
        let shape = self.shape(x).clone();
        if shape[..] == *target {
            return x;
        }
        let lead = shape.len() - target.len();
        let axes: SmallVec<[u8; 4]> = (0..shape.len())
            .filter(|&i| i < lead || (target[i - lead] == 1 && shape[i] != 1))
            .map(|i| i as u8)
            .collect();
        let summed = self.sum_axes(x, &axes, true);
        self.reshape(summed, target)
    }

    /// Ensures `x` has `shape` (broadcasting a smaller operand).
    pub fn expand_to(&mut self, x: Id, shape: &[usize]) -> Id {
        if self.shape(x)[..] == *shape {
            x
        } else {
            self.broadcast(x, shape)
        }
    }

    /// The `rows` x `cols` entries (row-major, shapes broadcasting together
    /// to a batch shape) as one tensor of the batch shape followed by
    /// `[rows, cols]`; `None` when the shapes do not broadcast.
    pub fn stack_matrix(&mut self, entries: &[Id], rows: usize, cols: usize) -> Option<Id> {
        debug_assert_eq!(entries.len(), rows * cols);
        let mut batch = Shape::new();
        for &entry in entries {
            batch = crate::ir::shape::broadcast(&batch, self.shape(entry)).ok()?;
        }
        let axis = batch.len();
        let cell: Vec<usize> = batch.iter().copied().chain([1, 1]).collect();
        let mut row_ids = Vec::with_capacity(rows);
        for row in entries.chunks(cols) {
            let cells: Vec<Id> = row
                .iter()
                .map(|&entry| {
                    let full = self.expand_to(entry, &batch);
                    self.reshape(full, &cell)
                })
                .collect();
            row_ids.push(self.concat(&cells, axis + 1)?);
        }
        self.concat(&row_ids, axis)
    }

    /// `parts` joined along `axis` (one part is itself).
    fn concat(&mut self, parts: &[Id], axis: usize) -> Option<Id> {
        match parts {
            [one] => Some(*one),
            _ => self.add(TOp::Concat(u8::try_from(axis).ok()?), parts).ok(),
        }
    }

    /// The sum of `terms` (each of the same shape, or broadcasting to it),
    /// or `None` when there are none.
    pub fn sum_terms(&mut self, terms: &[Id]) -> Option<Id> {
        let (&first, rest) = terms.split_first()?;
        Some(rest.iter().fold(first, |acc, &t| self.add2(acc, t)))
    }

    /// The elements of the whole graph as a slice (children before parents).
    pub fn nodes(&self) -> &[TNode] {
        self.expr.as_ref()
    }

    /// The number of elements of the value at `id`.
    pub fn numel(&self, id: Id) -> usize {
        numel(self.shape(id))
    }
}

impl PartialBuilder for TensorGraph {
    fn num(&mut self, value: f64) -> Id {
        TensorGraph::num(self, value)
    }

    fn constant(&self, id: Id) -> Option<f64> {
        TensorGraph::constant(self, id)
    }

    fn add(&mut self, node: Math) -> Id {
        match node {
            Math::Num(c) => TensorGraph::num(self, c.get()),
            other => {
                let children: SmallVec<[Id; 3]> = egg::Language::children(&other).into();
                self.map(other, &children)
            }
        }
    }
}

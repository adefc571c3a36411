//! `TNode`, the tensor language: one node is an operation (`TOp`, carrying
//! its static parameters such as axes or shapes) over child ids. Elementwise
//! operations are the scalar `Math` operators lifted to tensors with NumPy
//! broadcasting, so the scalar table of local partials serves them too.

use crate::dtype::DType;
use crate::ir::math::language::{Constant, Math};
use egg::{Id, Language};
use smallvec::SmallVec;
use std::fmt;

/// A tensor shape (dimensions, outermost first); `[]` is a scalar.
pub type Shape = SmallVec<[usize; 4]>;

/// An elementwise comparison giving 1.0 where true and 0.0 elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=`
    Eq,
    /// `/=`
    Ne,
}

impl CmpOp {
    /// Applies the comparison to two numbers.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        let truth = match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        };
        if truth { 1.0 } else { 0.0 }
    }

    /// The Lisp name.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "=",
            CmpOp::Ne => "/=",
        }
    }
}

/// Piecewise-constant rounding (derivative zero almost everywhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoundOp {
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
    /// `round` (half away from zero)
    Round,
}

impl RoundOp {
    /// Applies the rounding.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            RoundOp::Floor => x.floor(),
            RoundOp::Ceil => x.ceil(),
            RoundOp::Round => x.round_ties_even(),
        }
    }

    /// The Lisp name.
    pub fn name(self) -> &'static str {
        match self {
            RoundOp::Floor => "floor",
            RoundOp::Ceil => "ceil",
            RoundOp::Round => "round",
        }
    }
}

/// What a reduction computes over its axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The maximum (NaN if any element is NaN).
    Max,
    /// The minimum (NaN if any element is NaN).
    Min,
}

impl ReduceOp {
    /// The Lisp name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// A tensor operation with its static parameters; the operands are the
/// children of the `TNode`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TOp {
    /// Run-time input `index` (an argument, or a tensor the traced function
    /// closed over), of a fixed shape. A leaf.
    Input {
        /// Position among the tape's inputs.
        index: u32,
        /// Its shape.
        shape: Shape,
        /// Its number type.
        dtype: DType,
    },
    /// A scalar constant (of the weak type). A leaf.
    Scalar(Constant),
    /// A scalar operator applied elementwise with broadcasting. The `Math`
    /// node's own children are placeholders (`Id(0)`); the operands are the
    /// `TNode`'s children.
    Map(Math),
    /// An elementwise comparison (two operands, broadcasting).
    Compare(CmpOp),
    /// Elementwise rounding.
    Round(RoundOp),
    /// `(where cond a b)`: three operands, broadcasting.
    Where,
    /// The operand converted to a number type (elementwise; to f32 it
    /// rounds, to f64 it is exact).
    Cast(DType),
    /// Reduction over `axes` (sorted, distinct).
    Reduce {
        /// What is computed.
        op: ReduceOp,
        /// The reduced axes.
        axes: SmallVec<[u8; 4]>,
        /// Whether reduced axes stay as length 1.
        keepdims: bool,
    },
    /// Index of the maximum (`max: true`) or minimum along an axis, or of
    /// the flattened tensor. Piecewise constant.
    ArgExtreme {
        /// Maximum rather than minimum.
        max: bool,
        /// The axis, or `None` for the flattened tensor.
        axis: Option<u8>,
    },
    /// NumPy `broadcast_to`.
    Broadcast(Shape),
    /// Same elements (row-major order), new shape.
    Reshape(Shape),
    /// Axis permutation: result axis `i` is operand axis `perm[i]`.
    Transpose(SmallVec<[u8; 4]>),
    /// NumPy `matmul` for ranks 1 and 2.
    MatMul,
    /// Elements `start..end` along `axis`.
    Slice {
        /// The axis.
        axis: u8,
        /// First index kept.
        start: usize,
        /// One past the last index kept.
        end: usize,
    },
    /// Zeros added before and after along `axis` (the adjoint of `Slice`).
    Pad {
        /// The axis.
        axis: u8,
        /// Zeros before.
        before: usize,
        /// Zeros after.
        after: usize,
    },
    /// Operands joined along an existing axis.
    Concat(u8),
    /// Elements moved `shift` places toward higher indices along `axis`,
    /// wrapping around (`shift` is reduced modulo the length).
    Roll {
        /// The axis.
        axis: u8,
        /// The shift, in `0..len`.
        shift: usize,
    },
    /// The operand's value, with derivative zero.
    StopGradient,
    /// The operand's value under a fresh identity, so a nested derivative
    /// can be taken with respect to this use of a value alone.
    Tag(u32),
    /// A function with declared partial derivatives (`defderiv`), applied
    /// elementwise: operands `[v, x_1..x_n, p_1..p_n]`, where `v` is the
    /// value (computed from the arguments with their gradients stopped),
    /// `x_k` the arguments and `p_k` = d f / d x_k, each broadcasting to
    /// `v`'s shape. The value is `v`; the reverse sweep gives `x_k` the
    /// cotangent times `p_k` and the forward sweep sums `p_k t_k`. The `p_k`
    /// depend on the `x_k`, so a second derivative differentiates them.
    Linearized,
    /// A function with its own derivative rules (`defvjp`, `defjvp`):
    /// operands laid out by `CustomRule` (the value, the arguments, the
    /// placeholders its rules were traced with and the rules' results).
    /// The value is its first operand; the sweeps instantiate the rules
    /// (`custom.rs`).
    Custom(super::custom::CustomRule),
    /// A stand-in a custom rule was traced with (a cotangent, a tangent,
    /// the function's value), replaced by the real node when a sweep
    /// instantiates the rule. A leaf that never runs.
    Placeholder {
        /// Its number in its graph.
        serial: u32,
        /// Its shape.
        shape: Shape,
        /// Its number type.
        dtype: DType,
    },
    /// An operation of the table (`crate::ir::ops`): indexing, sequences,
    /// linear algebra. Its definition there says everything about it.
    Op(crate::ir::ops::Op),
    /// A loop (`scan`): operands are the initial state's leaves, then the
    /// captured values; the result is the final state (see `scan`).
    Scan(super::loops::Scan),
    /// A loop's reverse: operands are the scan's operands, then the
    /// cotangent of its result; the result is the cotangents of the
    /// initial state's leaves and of the differentiable captures, flat.
    ScanVjp(super::loops::Scan),
}

impl TOp {
    /// For a `Linearized` node of `operands` operands, its number of
    /// arguments.
    pub fn linearized_arity(operands: usize) -> usize {
        operands.saturating_sub(1) / 2
    }

    /// Whether the operation works element by element (with broadcasting):
    /// the operations a fused loop can run.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            TOp::Map(_) | TOp::Compare(_) | TOp::Round(_) | TOp::Where | TOp::Cast(_)
        )
    }
}

/// A node of the tensor language: an operation over child ids.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TNode {
    /// The operation.
    pub op: TOp,
    /// The operands.
    pub children: SmallVec<[Id; 3]>,
}

impl TNode {
    /// A node of `op` over `children`.
    pub fn new(op: TOp, children: &[Id]) -> TNode {
        TNode {
            op,
            children: SmallVec::from_slice(children),
        }
    }

    /// The scalar constant of a `Scalar` node.
    pub fn constant(&self) -> Option<f64> {
        match self.op {
            TOp::Scalar(c) => Some(c.get()),
            _ => None,
        }
    }

    /// For a `Map` node, the scalar operator over this node's children.
    pub fn math(&self) -> Option<Math> {
        match &self.op {
            TOp::Map(math) => {
                let mut math = math.clone();
                math.children_mut().copy_from_slice(&self.children);
                Some(math)
            }
            _ => None,
        }
    }

    /// Whether derivatives pass through this node to its operands.
    pub fn is_differentiable(&self) -> bool {
        match &self.op {
            TOp::Compare(_)
            | TOp::Round(_)
            | TOp::ArgExtreme { .. }
            | TOp::StopGradient
            | TOp::Placeholder { .. } => false,
            TOp::Op(op) => (0..self.children.len()).any(|k| op.differentiable(k)),
            _ => true,
        }
    }
}

/// A `Map` operation for a scalar operator (its children become
/// placeholders).
pub fn map_op(math: &Math) -> TOp {
    let mut math = math.clone();
    for child in math.children_mut() {
        *child = Id::from(0);
    }
    TOp::Map(math)
}

impl Language for TNode {
    type Discriminant = TOp;

    fn discriminant(&self) -> TOp {
        self.op.clone()
    }

    fn matches(&self, other: &Self) -> bool {
        self.op == other.op && self.children.len() == other.children.len()
    }

    fn children(&self) -> &[Id] {
        &self.children
    }

    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.children
    }
}

/// How a leaf shows its number type: nothing for f64 (the default).
fn dtype_suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::Weak | DType::F64 => "",
    }
}

fn join<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|item| item.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

impl fmt::Display for TOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TOp::Input {
                index,
                shape,
                dtype,
            } => write!(f, "input{index}[{}]{}", join(shape), dtype_suffix(*dtype)),
            // Shortest round-trip form (`-1.7976931348623157e308`, not 309
            // digits).
            TOp::Scalar(c) => write!(f, "{:?}", c.get()),
            TOp::Map(math) => write!(f, "{math}"),
            TOp::Compare(op) => write!(f, "{}", op.name()),
            TOp::Round(op) => write!(f, "{}", op.name()),
            TOp::Where => write!(f, "where"),
            TOp::Cast(dtype) => write!(f, "cast-{}", dtype.name()),
            TOp::Reduce { op, axes, keepdims } => {
                write!(
                    f,
                    "{}[{}]{}",
                    op.name(),
                    join(axes),
                    if *keepdims { "k" } else { "" }
                )
            }
            TOp::ArgExtreme { max, axis } => {
                let name = if *max { "argmax" } else { "argmin" };
                match axis {
                    Some(axis) => write!(f, "{name}[{axis}]"),
                    None => write!(f, "{name}"),
                }
            }
            TOp::Broadcast(shape) => write!(f, "broadcast[{}]", join(shape)),
            TOp::Reshape(shape) => write!(f, "reshape[{}]", join(shape)),
            TOp::Transpose(perm) => write!(f, "transpose[{}]", join(perm)),
            TOp::MatMul => write!(f, "matmul"),
            TOp::Slice { axis, start, end } => write!(f, "slice[{axis} {start} {end}]"),
            TOp::Pad {
                axis,
                before,
                after,
            } => write!(f, "pad[{axis} {before} {after}]"),
            TOp::Concat(axis) => write!(f, "concat[{axis}]"),
            TOp::Roll { axis, shift } => write!(f, "roll[{axis} {shift}]"),
            TOp::StopGradient => write!(f, "stop-gradient"),
            TOp::Tag(tag) => write!(f, "tag{tag}"),
            TOp::Linearized => write!(f, "linearized"),
            TOp::Custom(rule) => write!(f, "custom[{}]", rule.name),
            TOp::Placeholder {
                serial,
                shape,
                dtype,
            } => {
                write!(
                    f,
                    "placeholder{serial}[{}]{}",
                    join(shape),
                    dtype_suffix(*dtype)
                )
            }
            TOp::Op(op) => write!(f, "{op}"),
            TOp::Scan(scan) => write!(f, "scan[{} {:?}]", scan.steps_label(), scan.strategy),
            TOp::ScanVjp(scan) => {
                write!(f, "scan-vjp[{} {:?}]", scan.steps_label(), scan.strategy)
            }
        }
    }
}

impl fmt::Display for TNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.op)
    }
}

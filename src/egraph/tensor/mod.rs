//! Tensor programs: the language traced Lisp functions are recorded in
//! (`TNode`), shape inference, the `TensorGraph` builder, and the reverse
//! and forward sweeps that append derivative nodes to it.
//!
//! Programs come in and leave as node lists over ids; this folder knows
//! nothing of Lisp values or of how programs are executed.

pub mod custom_sweep;
pub mod egraph;
pub mod forward;
pub mod loops;
pub mod optimize;
pub mod reverse;
pub mod rules;

/// The tensor language, re-exported from the IR layer under its old paths.
pub use crate::ir::dtypes as dtype;
pub use crate::ir::{custom, flat, graph, lift, movement, op, scan, shape};

pub use forward::jvp;
pub use graph::TensorGraph;
pub use op::{CmpOp, ReduceOp, RoundOp, Shape, TNode, TOp};
pub use reverse::vjp;
pub use shape::ShapeError;

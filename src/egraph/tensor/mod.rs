//! Tensor programs: the language traced Lisp functions are recorded in
//! (`TNode`), shape inference, the `TensorGraph` builder, and the reverse
//! and forward sweeps that append derivative nodes to it.
//!
//! Programs come in and leave as node lists over ids; this folder knows
//! nothing of Lisp values or of how programs are executed.

pub mod custom;
pub mod custom_sweep;
pub mod dtype;
pub mod egraph;
pub mod flat;
pub mod forward;
pub mod graph;
pub mod lift;
pub mod loops;
pub mod movement;
pub mod op;
pub mod optimize;
pub mod reverse;
pub mod rules;
pub mod scan;
pub mod shape;

pub use forward::jvp;
pub use graph::TensorGraph;
pub use op::{CmpOp, ReduceOp, RoundOp, Shape, TNode, TOp};
pub use reverse::vjp;
pub use shape::ShapeError;

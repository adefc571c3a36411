//! The intermediate representation: the languages programs are written in
//! once traced, and nothing else.
//!
//! - `math`: the scalar language (`Math`, the operators' values and their
//!   local partial derivatives, user functions with declared partials).
//! - `op`: the tensor language (`TNode`, `TOp`, shapes as data); `shape`
//!   and `dtypes`: shape and dtype inference; `graph`: the `TensorGraph`
//!   builder (hash-consing, constant folding); `flat`: the flat scalar
//!   arena traces record into; `movement`: operations that only move
//!   elements; `lift`: scalar formulas as tensor programs.
//! - `loops`: loop bodies and loops as data (`Body`, `ScanSpec`);
//!   `custom`: calls of functions with their own derivative rules, and the
//!   rules' layout.
//! - `ops`: the operation table, each operation in one place (shape, CPU
//!   kernel, derivative rules, batching rule).
//!
//! **Architecture invariant:** this folder imports nothing of the crate but
//! leaf modules (`scalar`, `simd`, `dtype`, `distributed`): rewriting,
//! differentiation, tapes, backends and the Lisp layer import it, never the
//! other way.

pub mod custom;
pub mod dtypes;
pub mod flat;
pub mod graph;
pub mod lift;
pub mod loops;
pub mod math;
pub mod movement;
pub mod op;
pub mod ops;
pub mod shape;

pub use graph::TensorGraph;
pub use op::{CmpOp, ReduceOp, RoundOp, Shape, TNode, TOp};
pub use shape::ShapeError;

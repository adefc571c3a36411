//! The tensor optimizer: tensor programs (the IR's `TNode` lists) in an
//! e-graph (`egraph`), the shape-safe rewrites (`rules`), and bounded
//! saturation with DAG-aware extraction (`optimize`), for whole programs
//! and loop bodies.
//!
//! Programs come in and leave as node lists over ids; this folder knows
//! nothing of Lisp values, derivatives or of how programs are executed.

pub mod egraph;
pub mod optimize;
pub mod rules;

//! The intermediate representation: the languages programs are written in
//! once traced, and nothing else. `math` is the scalar language (`Math`,
//! the operators' values and their local partial derivatives); the tensor
//! language, its operation table, shapes and loop bodies join it here.
//!
//! **Architecture invariant:** this folder imports nothing of the crate but
//! leaf modules (`scalar`, `simd`, `dtype`, `distributed`): rewriting,
//! differentiation, tapes, backends and the Lisp layer import it, never the
//! other way.

pub mod math;

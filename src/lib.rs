//! # Epsilon
//!
//! A differentiation engine inside a small Lisp. This crate holds the
//! language (reader, evaluator, built-ins, REPL) and its embedding API.
//!
//! ```
//! let mut eps = epsilon::Engine::new();
//! eps.eval("(define (f x y) (* x (sin y)))").unwrap();
//! let v = eps.eval("(f 2 0.5)").unwrap();
//! assert!((v.as_f64().unwrap() - 2.0 * 0.5f64.sin()).abs() < 1e-15);
//! let t = eps.eval("(sum (* [1 2 3] [4 5 6]))").unwrap();
//! assert_eq!(t.as_f64().unwrap(), 32.0);
//! ```
//!
//! The pipeline, folder by folder, is described in `ARCHITECTURE.md`.

#![warn(missing_docs)]

pub mod ad;
pub mod allocator;
pub mod backends;
mod compiled;
pub mod data;
pub mod display;
pub mod distributed;
pub mod driver;
pub mod dtype;
pub mod egraph;
mod engine;
mod error;
pub mod formula;
pub mod host_memory;
pub mod input;
pub mod ir;
#[cfg(feature = "jupyter")]
pub mod jupyter;
pub mod lisp;
#[cfg(feature = "lsp")]
pub mod lsp;
#[cfg(feature = "plot")]
mod plot;
pub mod reader;
#[cfg(feature = "repl")]
pub mod repl;
pub mod scalar;
mod simd;
pub mod symbolic;
pub mod tape;

#[cfg(test)]
mod tests;

pub use compiled::CompiledGrad;
pub use engine::Engine;
pub use error::{Error, Location, show_library_frames};
pub use lisp::builtins::formula::Notation;
pub use lisp::{EvalErrorKind, Value};

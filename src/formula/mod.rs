//! Formulas out: expressions shown the way people read them. `term` turns
//! e-graph expressions into shown terms under the printing rules every
//! output shares; `cse` names shared subterms; `infix` and `latex` render
//! terms as text. Nothing here knows the Lisp layer: the builtins of
//! `lisp::builtins::formula` call in.

pub mod codegen;
pub mod cse;
pub mod infix;
pub mod latex;
mod layout;
pub mod sparsity;
pub mod term;

pub use codegen::{Language, codegen};
pub use cse::{Shared, cse};
pub use infix::infix;
pub use latex::latex;
pub use sparsity::sparsity;
pub use term::{Term, terms};

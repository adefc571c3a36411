//! The Epsilon language: values, environments, special forms, macros,
//! built-in functions and printing.
//!
//! Code flows reader data → [`convert`] (values with spans) → [`analyze`]
//! (nodes with lexical addresses, macros expanded) → [`eval`] (values).
//! `trace` records tensor programs as traced functions run, and `autodiff`
//! turns Lisp requests (`grad`, `jvp`, ...) into calls of the AD layer and
//! the driver: how derivatives are built lives there, not here.

pub mod analyze;
pub mod autodiff;
pub mod builtins;
pub mod complex;
pub mod convert;
pub mod debug_nans;
pub mod env;
pub mod error;
pub mod eval;
pub mod interp;
pub mod memory;
pub mod node;
pub mod primitive;
pub mod printer;
pub mod procedure;
pub mod quasi;
pub mod sites;
pub mod source;
pub mod symbol;
pub mod symbolic;
pub mod tensor;
pub mod trace;
pub mod value;

pub use error::{EvalError, EvalErrorKind, EvalResult};
pub use interp::Interp;
pub use procedure::{Args, Builtin, Procedure};
pub use symbol::Symbol;
pub use value::Value;

//! The e-graph layer: the `Facts` analysis over the scalar language of
//! `crate::ir::math` (constant folding, signs, definedness, assumptions on
//! variables), the rule tables, the symbolic reverse sweep, DAG-aware
//! extraction, bounded saturation, and explanations of simplifications.
//!
//! Data comes in as `RecExpr<Math>` and leaves as `RecExpr<Math>`; this
//! layer knows nothing of Lisp values, the reader or the backends.

pub mod analysis;
pub mod assume;
pub mod builder;
pub mod cost;
pub mod derivatives;
pub mod explain;
pub mod extract;
pub mod reverse;
pub mod rules;
pub mod schedule;
pub mod simplify;
pub mod tensor;

pub use crate::ir::math::functions::{Functions, UserFunction};
pub use crate::ir::math::language::{Constant, Math};
pub use analysis::{Facts, FactsAnalysis, MathGraph};
pub use assume::Assumptions;
pub use builder::ExprBuilder;
pub use derivatives::{Derived, Options, hessian, jacobian, nth_derivative, simplify_all};
pub use rules::{MathRewrite, all_rules};
pub use simplify::{Level, Limits, Report, Stop};

//! The scalar language `Math`: its operators (`language`), their values in
//! `f64` (`eval`), the table of local partial derivatives every sweep
//! applies (`partials`), and user functions declared with their partials
//! (`functions`).

pub mod elementwise;
pub mod eval;
pub mod functions;
pub mod language;
pub mod partials;

//! The built-in functions, one table per family, installed into the global
//! environment at start-up. Each entry carries its usage line and docstring
//! (shown by `doc`), its arity and the keyword options it accepts; the
//! evaluator checks arity and splits options before calling it.

pub(crate) mod apply;
mod arrays;
mod autodiff;
#[cfg(feature = "plot")]
mod charts;
pub mod compare;
mod complex;
mod custom;
mod data;
mod distributed;
pub(crate) mod dtype;
mod einsum;
mod elementwise;
mod fft;
mod files;
pub mod formula;
pub(crate) mod indexing;
pub(crate) mod linalg;
mod lists;
mod norms;
mod numeric;
mod optim;
#[cfg(feature = "plot")]
mod plot;
/// Without charts, `plot` binds the chart built-ins to a clear refusal.
#[cfg(not(feature = "plot"))]
#[path = "no_plots.rs"]
mod plot;
#[cfg(not(feature = "plot"))]
mod charts {
    /// All five chart built-ins are in `plot` in this build.
    pub const BUILTINS: &[super::Builtin] = &[];
}
pub(crate) mod progress;
pub(crate) mod reduce;
mod rules;
mod sort;
mod sparse;
mod special;
mod symbolic;
pub(crate) mod system;
mod taylor;
pub(crate) mod tensor_make;
pub(crate) mod tensor_ops;
mod text;
mod vmap;

use super::interp::Interp;
use super::procedure::{Builtin, BuiltinFn, Procedure};
use super::symbol::Symbol;
use super::value::Value;
use std::rc::Rc;

/// Every table of built-ins.
pub const TABLES: &[&[Builtin]] = &[
    numeric::BUILTINS,
    elementwise::BUILTINS,
    compare::BUILTINS,
    lists::BUILTINS,
    text::BUILTINS,
    system::BUILTINS,
    tensor_make::BUILTINS,
    tensor_ops::BUILTINS,
    indexing::BUILTINS,
    arrays::BUILTINS,
    linalg::BUILTINS,
    reduce::BUILTINS,
    sort::BUILTINS,
    data::BUILTINS,
    files::BUILTINS,
    plot::BUILTINS,
    charts::BUILTINS,
    optim::BUILTINS,
    progress::BUILTINS,
    symbolic::BUILTINS,
    formula::BUILTINS,
    autodiff::BUILTINS,
    taylor::BUILTINS,
    custom::BUILTINS,
    rules::BUILTINS,
    norms::BUILTINS,
    einsum::BUILTINS,
    special::BUILTINS,
    sparse::BUILTINS,
    vmap::BUILTINS,
    dtype::BUILTINS,
    distributed::BUILTINS,
    complex::BUILTINS,
    fft::BUILTINS,
];

/// Whether `name` is a built-in that takes complex values itself (the
/// complex family), not through `lisp::complex`'s lowering.
pub(crate) fn complex_family(name: &str) -> bool {
    complex::BUILTINS
        .iter()
        .chain(fft::BUILTINS)
        .any(|b| b.name == name)
}

/// Binds every built-in and constant in `interp`'s global environment.
pub fn install(interp: &mut Interp) {
    for table in TABLES {
        for builtin in *table {
            let value = Value::Procedure(Rc::new(Procedure::Builtin(builtin)));
            interp.set_global(Symbol::intern(builtin.name), value);
        }
    }
    interp.set_global(Symbol::intern("pi"), Value::Float(std::f64::consts::PI));
}

/// A built-in taking between `min` and `max` arguments (`None`: any number).
const fn builtin(
    name: &'static str,
    usage: &'static str,
    doc: &'static str,
    min: usize,
    max: Option<usize>,
    func: BuiltinFn,
) -> Builtin {
    Builtin {
        name,
        usage,
        doc,
        min,
        max,
        options: &[],
        func,
    }
}

/// A built-in that also takes keyword options.
/// The value of the string option `:name`, if given.
fn string_option(
    args: &super::procedure::Args,
    name: &str,
) -> super::error::EvalResult<Option<String>> {
    match args.option(name) {
        None => Ok(None),
        Some(Value::Str(text)) => Ok(Some(text.to_string())),
        Some(other) => Err(super::error::EvalError::type_error(format!(
            ":{name} must be a string, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

const fn with_options(mut builtin: Builtin, options: &'static [&'static str]) -> Builtin {
    builtin.options = options;
    builtin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_has_usage_and_doc() {
        for builtin in TABLES.iter().flat_map(|t| t.iter()) {
            assert!(
                builtin.usage.starts_with(&format!("({}", builtin.name)),
                "{}",
                builtin.name
            );
            assert!(builtin.doc.len() > 10, "{} has no docstring", builtin.name);
        }
    }

    #[test]
    fn builtin_names_are_unique() {
        let mut names: Vec<&str> = TABLES
            .iter()
            .flat_map(|t| t.iter())
            .map(|b| b.name)
            .collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}

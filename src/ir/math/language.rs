//! The `Math` language: the scalar differentiable operations of Epsilon as
//! e-graph nodes, and `Constant`, a number usable as an exact hash key.
//! The language itself (`Math`, `OPERATORS`) is generated from the table
//! of elementwise functions (`elementwise.rs`); this file adds lookups by
//! name and the constants.
//!
//! This file knows nothing of Lisp values; the Lisp layer converts its data
//! to and from `RecExpr<Math>`.

use egg::{Id, Symbol};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

pub use super::elementwise::{Math, OPERATORS};

/// The arity of an operator name, if `Math` has it.
pub fn operator_arity(name: &str) -> Option<usize> {
    OPERATORS
        .iter()
        .find(|(op, _)| *op == name)
        .map(|(_, arity)| *arity)
}

impl Math {
    /// Builds the node for operator `name` over `children`, if the name and
    /// the number of children fit an operator.
    pub fn from_op_name(name: &str, children: &[Id]) -> Option<Math> {
        if operator_arity(name) != Some(children.len()) {
            return None;
        }
        egg::FromOp::from_op(name, children.to_vec()).ok()
    }

    /// The name of a user function's call.
    pub fn call_name(&self) -> Option<Symbol> {
        match self {
            Math::Call(name, _) => Some(*name),
            _ => None,
        }
    }

    /// The constant of a `Num` node.
    pub fn constant(&self) -> Option<f64> {
        match self {
            Math::Num(value) => Some(value.get()),
            _ => None,
        }
    }
}

/// A finite `f64` with total equality and hashing, so numbers can be
/// e-graph keys. `-0.0` is stored as `0.0`; non-finite values never become
/// constants (constant folding refuses them).
#[derive(Clone, Copy, Debug)]
pub struct Constant(f64);

impl Constant {
    /// The constant `value`, or `None` when it is not finite.
    pub fn new(value: f64) -> Option<Constant> {
        if value.is_finite() {
            Some(Constant(if value == 0.0 { 0.0 } else { value }))
        } else {
            None
        }
    }

    /// The number.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Whether the number is an integer.
    pub fn is_integer(self) -> bool {
        self.0.fract() == 0.0
    }
}

impl PartialEq for Constant {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Constant {}

impl Hash for Constant {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl PartialOrd for Constant {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Constant {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl FromStr for Constant {
    type Err = String;

    /// Parses decimal numbers only: `inf` and `nan` are names here.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let numeric = text
            .starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.')
            && text.chars().any(|c| c.is_ascii_digit())
            && !text.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E');
        if !numeric {
            return Err(format!("not a number: {text}"));
        }
        let value: f64 = text.parse().map_err(|_| format!("not a number: {text}"))?;
        Constant::new(value).ok_or_else(|| format!("not a finite number: {text}"))
    }
}

impl fmt::Display for Constant {
    /// Integers print without a decimal point, other numbers in Rust's
    /// shortest round-trip form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_integer() && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_parse_numbers_only() {
        assert_eq!("2".parse::<Constant>().map(Constant::get), Ok(2.0));
        assert_eq!("-0.5".parse::<Constant>().map(Constant::get), Ok(-0.5));
        assert_eq!("1e3".parse::<Constant>().map(Constant::get), Ok(1000.0));
        assert!("inf".parse::<Constant>().is_err());
        assert!("nan".parse::<Constant>().is_err());
        assert!("x".parse::<Constant>().is_err());
        assert!("-".parse::<Constant>().is_err());
    }

    #[test]
    fn negative_zero_is_zero() {
        assert_eq!(Constant::new(-0.0), Constant::new(0.0));
        assert_eq!(
            Constant::new(-0.0).map(|c| c.to_string()),
            Some("0".to_string())
        );
    }

    #[test]
    fn operators_table_matches_the_language() {
        for &(name, arity) in OPERATORS {
            let children = vec![Id::from(0usize); arity];
            assert!(Math::from_op_name(name, &children).is_some(), "{name}");
        }
        assert!(Math::from_op_name("sin", &[]).is_none());
        assert!(Math::from_op_name("frobnicate", &[Id::from(0usize)]).is_none());
    }
}

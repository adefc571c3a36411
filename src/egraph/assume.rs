//! Assumptions on variables (`simplify :assume`): what a variable's sign is
//! and whether it is a whole number. The `Facts` analysis reads them for
//! each variable node, so every rule guarded on signs or integrality fires
//! where the assumptions make it valid (`sqrt(x^2) -> x` for positive `x`,
//! `(x^a)^n -> x^(a n)` for whole `n`), and nowhere else.

use super::analysis::Signs;
use egg::Symbol;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What is assumed of one variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assumed {
    /// The signs its values may have.
    pub signs: Signs,
    /// Its values are whole numbers.
    pub integer: bool,
}

impl Default for Assumed {
    fn default() -> Self {
        Assumed {
            signs: Signs::ANY,
            integer: false,
        }
    }
}

/// The properties `simplify :assume` knows, with the signs each allows.
pub const PROPERTIES: &[(&str, Signs)] = &[
    ("positive", Signs::POS),
    ("negative", Signs::NEG),
    ("nonnegative", Signs::NON_NEG),
    ("nonpositive", Signs::NON_POS),
    ("nonzero", Signs::NON_ZERO),
    ("zero", Signs::ZERO),
    ("real", Signs::ANY),
    ("integer", Signs::ANY),
];

/// Assumptions on some variables; the others are any real number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assumptions(Arc<BTreeMap<Symbol, Assumed>>);

impl Assumptions {
    /// No assumptions.
    pub fn none() -> Assumptions {
        Assumptions::default()
    }

    /// Whether nothing is assumed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What is assumed of `name`.
    pub fn of(&self, name: Symbol) -> Assumed {
        self.0.get(&name).copied().unwrap_or_default()
    }

    /// Assumptions from `(variable, property)` pairs; a variable may have
    /// several. An unknown property, or properties of one variable that no
    /// number satisfies together, is an error naming them.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (Symbol, &'a str)>,
    ) -> Result<Assumptions, String> {
        let mut map: BTreeMap<Symbol, (Assumed, Vec<&'a str>)> = BTreeMap::new();
        for (name, property) in pairs {
            let normal = property.replace('-', "");
            let Some(&(_, signs)) = PROPERTIES.iter().find(|(known, _)| *known == normal) else {
                let known: Vec<&str> = PROPERTIES.iter().map(|(known, _)| *known).collect();
                return Err(format!(
                    "unknown assumption {property} on {name}; known: {}",
                    known.join(", ")
                ));
            };
            let (assumed, said) = map.entry(name).or_insert((Assumed::default(), Vec::new()));
            said.push(property);
            assumed.integer |= normal == "integer";
            match assumed.signs.intersect(signs) {
                Some(both) => assumed.signs = both,
                None => {
                    return Err(format!(
                        "the assumptions on {name} contradict each other: {}",
                        said.join(" and ")
                    ));
                }
            }
        }
        Ok(Assumptions(Arc::new(
            map.into_iter()
                .map(|(name, (assumed, _))| (name, assumed))
                .collect(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &'static str)]) -> Result<Assumptions, String> {
        Assumptions::from_pairs(list.iter().map(|&(n, p)| (Symbol::from(n), p)))
    }

    #[test]
    fn properties_combine_and_contradictions_are_errors() {
        let a = pairs(&[("x", "nonnegative"), ("x", "nonzero"), ("n", "integer")]).unwrap();
        assert_eq!(a.of(Symbol::from("x")).signs, Signs::POS);
        assert!(a.of(Symbol::from("n")).integer);
        assert_eq!(a.of(Symbol::from("y")), Assumed::default());
        let error = pairs(&[("x", "positive"), ("x", "nonpositive")]).unwrap_err();
        assert!(error.contains("contradict") && error.contains("positive and nonpositive"));
        let error = pairs(&[("x", "big")]).unwrap_err();
        assert!(error.contains("unknown assumption big on x"), "{error}");
    }
}

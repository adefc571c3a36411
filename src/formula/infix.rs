//! Terms in infix notation, `x^2 + sin(x*y)/2`: operators by precedence
//! (`+ -` below `* /` below unary minus below `^`, which groups to the
//! right), parentheses only where the reading would change, functions
//! applied with parentheses.

use super::layout::{self, ATOM, NEGATION, Notation, POWER};
use super::term::Term;

/// `term` in infix notation.
pub fn infix(term: &Term) -> String {
    Infix.shown(term).0
}

struct Infix;

impl Notation for Infix {
    fn shown(&self, term: &Term) -> (String, u8) {
        // Formulas nest as deep as the data a loop built: the stack grows
        // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match term {
            Term::Num(c) => {
                let x = c.get();
                (number(x), if x < 0.0 { NEGATION } else { ATOM })
            }
            Term::Var(name) => (name.to_string(), ATOM),
            Term::Apply(op, args) => {
                let arg = |k: usize| self.shown(&args[k]);
                match (op.as_str(), args.len()) {
                    ("+", _) => layout::sum(self, args),
                    ("-", 2) => layout::difference(self, &args[0], &args[1]),
                    ("*", _) => layout::product(self, args),
                    ("/", 2) => layout::quotient(self, &args[0], &args[1]),
                    ("neg", 1) => layout::negation(self, &args[0]),
                    ("pow", 2) => (
                        format!(
                            "{}^{}",
                            self.wrapped(arg(0), ATOM),
                            self.wrapped(arg(1), POWER)
                        ),
                        POWER,
                    ),
                    (name, _) => {
                        let inner: Vec<String> = (0..args.len()).map(|k| arg(k).0).collect();
                        (format!("{name}({})", inner.join(", ")), ATOM)
                    }
                }
            }
        })
    }

    fn paren(&self, text: &str) -> String {
        format!("({text})")
    }

    fn power(&self, base: &str, n: usize) -> String {
        format!("{base}^{n}")
    }

    fn between(&self, _next: &str) -> &'static str {
        "*"
    }
}

/// A number as its shortest text that reads back the same (integers
/// without a decimal point, exponents where they are shorter).
pub fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:?}")
    }
}

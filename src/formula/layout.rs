//! What infix text and LaTeX share: binding strengths, and how sums,
//! differences and products are laid out with the fewest parentheses.
//! Each notation says how it shows a term, a parenthesis, a power and the
//! mark between factors.

use super::term::{Term, powers};
use std::rc::Rc;

/// Binding strength: a subterm weaker than its place needs parentheses.
pub const SUM: u8 = 1;
pub const PRODUCT: u8 = 2;
pub const NEGATION: u8 = 3;
pub const POWER: u8 = 4;
pub const ATOM: u8 = 5;

/// A notation's own forms.
pub trait Notation {
    /// A term's text and binding strength.
    fn shown(&self, term: &Term) -> (String, u8);
    /// `text` in parentheses.
    fn paren(&self, text: &str) -> String;
    /// `base` (already wrapped) to the whole power `n`.
    fn power(&self, base: &str, n: usize) -> String;
    /// What goes between two factors, the second being `next`.
    fn between(&self, next: &str) -> &'static str;

    /// `shown` text in parentheses when it binds less than `needed`.
    fn wrapped(&self, (text, strength): (String, u8), needed: u8) -> String {
        if strength < needed {
            self.paren(&text)
        } else {
            text
        }
    }
}

/// `a + b + ...`; an operand that reads negated is subtracted (`a + -x*y`
/// shows `a - x*y`), and a sum inside a sum needs no parentheses.
pub fn sum(notation: &impl Notation, args: &[Rc<Term>]) -> (String, u8) {
    let mut text = notation.wrapped(notation.shown(&args[0]), SUM);
    for operand in &args[1..] {
        let needed = match operand.operator() == Some("+") {
            true => SUM,
            false => SUM + 1,
        };
        let operand = notation.wrapped(notation.shown(operand), needed);
        match operand.strip_prefix('-') {
            Some(rest) => {
                text.push_str(" - ");
                text.push_str(rest);
            }
            None => {
                text.push_str(" + ");
                text.push_str(&operand);
            }
        }
    }
    (text, SUM)
}

/// `a - b`, with `b` in parentheses when it is a sum or reads negated.
pub fn difference(notation: &impl Notation, a: &Term, b: &Term) -> (String, u8) {
    let right = notation.wrapped(notation.shown(b), SUM + 1);
    let right = match right.starts_with('-') {
        true => notation.paren(&right),
        false => right,
    };
    let left = notation.wrapped(notation.shown(a), SUM);
    (format!("{left} - {right}"), SUM)
}

/// Factors one after another, equal neighbours as a power; a product
/// inside a product needs no parentheses, a factor that reads negated
/// does (after the first).
pub fn product(notation: &impl Notation, args: &[Rc<Term>]) -> (String, u8) {
    let mut text = String::new();
    for (k, (base, count)) in powers(args).iter().enumerate() {
        let factor = match count {
            1 => notation.shown(base),
            n => {
                let base = notation.wrapped(notation.shown(base), ATOM);
                (notation.power(&base, *n), POWER)
            }
        };
        if k == 0 {
            text = notation.wrapped(factor, PRODUCT);
            continue;
        }
        let needed = match base.operator() == Some("*") && *count == 1 {
            true => PRODUCT,
            false => NEGATION + 1,
        };
        let factor = match notation.wrapped(factor, needed) {
            f if f.starts_with('-') => notation.paren(&f),
            f => f,
        };
        text.push_str(notation.between(&factor));
        text.push_str(&factor);
    }
    (text, PRODUCT)
}

/// `a/b`: the divisor in parentheses unless it is a power or an atom.
pub fn quotient(notation: &impl Notation, a: &Term, b: &Term) -> (String, u8) {
    let left = notation.wrapped(notation.shown(a), PRODUCT);
    let right = notation.wrapped(notation.shown(b), NEGATION + 1);
    (format!("{left}/{right}"), PRODUCT)
}

/// `-a`: `a` in parentheses unless it is a power or an atom.
pub fn negation(notation: &impl Notation, a: &Term) -> (String, u8) {
    let operand = notation.wrapped(notation.shown(a), NEGATION + 1);
    (format!("-{operand}"), NEGATION)
}

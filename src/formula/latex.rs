//! Terms as LaTeX: `\frac` for quotients, `\sqrt`, powers in braces,
//! `e^{x}` for `exp`, function names upright (`\sin`, `\log`,
//! `\operatorname{sigmoid}`), Greek variable names as letters and trailing
//! digits as subscripts (`F11` is `F_{11}`, `alpha` is `\alpha`).

use super::infix::number;
use super::layout::{self, ATOM, NEGATION, Notation, POWER};
use super::term::Term;
use crate::ir::math::language::Constant;
use std::rc::Rc;

/// `term` as LaTeX (math mode, without delimiters).
pub fn latex(term: &Term) -> String {
    Latex.shown(term).0
}

struct Latex;

impl Notation for Latex {
    fn shown(&self, term: &Term) -> (String, u8) {
        shown(term)
    }

    fn paren(&self, text: &str) -> String {
        paren(text)
    }

    fn power(&self, base: &str, n: usize) -> String {
        format!("{base}^{{{n}}}")
    }

    /// Juxtaposed, but a number after a factor is marked.
    fn between(&self, next: &str) -> &'static str {
        match next.starts_with(|c: char| c.is_ascii_digit()) {
            true => " \\cdot ",
            false => " ",
        }
    }
}

fn shown(term: &Term) -> (String, u8) {
    // Formulas nest as deep as the data a loop built: the stack grows
    // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        match term {
            Term::Num(c) => {
                let x = c.get();
                let text = number(x);
                // 1e-20 as 1 \cdot 10^{-20}.
                let text = match text.split_once('e') {
                    Some((mantissa, exponent)) => format!("{mantissa} \\cdot 10^{{{exponent}}}"),
                    None => text,
                };
                (text, if x < 0.0 { NEGATION } else { ATOM })
            }
            Term::Var(name) => (variable(name.as_str()), ATOM),
            Term::Apply(op, args) => {
                let arg = |k: usize| shown(&args[k]);
                match (op.as_str(), args.len()) {
                    ("+", _) => layout::sum(&Latex, args),
                    ("-", 2) => layout::difference(&Latex, &args[0], &args[1]),
                    ("*", _) => product(args),
                    ("/", 2) => (format!("\\frac{{{}}}{{{}}}", arg(0).0, arg(1).0), POWER),
                    ("neg", 1) => (format!("-{}", wrapped(arg(0), NEGATION + 1)), NEGATION),
                    ("pow", 2) => (format!("{}^{{{}}}", wrapped(arg(0), ATOM), arg(1).0), POWER),
                    ("exp", 1) => (format!("e^{{{}}}", arg(0).0), POWER),
                    ("sqrt", 1) => (format!("\\sqrt{{{}}}", arg(0).0), ATOM),
                    ("abs", 1) => (format!("\\left|{}\\right|", arg(0).0), ATOM),
                    (name, _) => {
                        let inner: Vec<String> = (0..args.len()).map(|k| arg(k).0).collect();
                        (
                            format!("{}{}", function(name), paren(&inner.join(", "))),
                            ATOM,
                        )
                    }
                }
            }
        }
    })
}

/// A product: factors juxtaposed, those with a negative number as
/// exponent below a fraction bar (`-2 x (1 + x^2)^{-2}` is
/// `-\frac{2 x}{(1 + x^2)^2}`).
fn product(args: &[Rc<Term>]) -> (String, u8) {
    let mut above = Vec::new();
    let mut below = Vec::new();
    for factor in args {
        match &**factor {
            Term::Apply(op, operands) if op.as_str() == "pow" && operands.len() == 2 => {
                match operands[1]
                    .number()
                    .filter(|e| *e < 0.0)
                    .and_then(|e| Constant::new(-e))
                {
                    Some(e) if e.get() == 1.0 => below.push(operands[0].clone()),
                    Some(e) => below.push(Rc::new(Term::Apply(
                        *op,
                        vec![operands[0].clone(), Rc::new(Term::Num(e))],
                    ))),
                    None => above.push(factor.clone()),
                }
            }
            _ => above.push(factor.clone()),
        }
    }
    if below.is_empty() {
        return layout::product(&Latex, &above);
    }
    // A leading negative number's sign goes before the fraction.
    let mut sign = "";
    if let Some(c) = above.first().and_then(|t| t.number())
        && c < 0.0
    {
        sign = "-";
        match Constant::new(-c) {
            Some(one) if one.get() == 1.0 => {
                above.remove(0);
            }
            Some(positive) => above[0] = Rc::new(Term::Num(positive)),
            None => {}
        }
    }
    let part = |factors: &[Rc<Term>]| match factors {
        [] => "1".to_string(),
        [one] => shown(one).0,
        many => layout::product(&Latex, many).0,
    };
    let text = format!("{sign}\\frac{{{}}}{{{}}}", part(&above), part(&below));
    (text, if sign.is_empty() { POWER } else { NEGATION })
}

fn paren(text: &str) -> String {
    format!("\\left({text}\\right)")
}

fn wrapped((text, strength): (String, u8), needed: u8) -> String {
    if strength < needed {
        paren(&text)
    } else {
        text
    }
}

/// A function's name, upright.
fn function(name: &str) -> String {
    match name {
        "sin" | "cos" | "tan" | "sinh" | "cosh" | "tanh" | "log" | "min" | "max" => {
            format!("\\{name}")
        }
        "asin" | "acos" | "atan" => format!("\\arc{}", &name[1..]),
        "lgamma" => "\\log\\Gamma".to_string(),
        "digamma" => "\\psi".to_string(),
        other => format!("\\operatorname{{{}}}", other.replace('_', "\\_")),
    }
}

const GREEK: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
    "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi",
    "Omega",
];

/// A variable: Greek names as letters, trailing digits (or what follows
/// an underscore) as a subscript, other names of several letters upright.
fn variable(name: &str) -> String {
    let (stem, index) = match name.split_once('_') {
        Some((stem, index)) if !stem.is_empty() && !index.is_empty() => (stem, index),
        _ => {
            let cut = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            match cut {
                0 => (name, ""),
                cut => (&name[..cut], &name[cut..]),
            }
        }
    };
    let stem = if GREEK.contains(&stem) {
        format!("\\{stem}")
    } else if stem.chars().count() == 1 {
        stem.to_string()
    } else {
        format!("\\mathrm{{{}}}", stem.replace('_', "\\_"))
    };
    match index {
        "" => stem,
        index => format!("{stem}_{{{}}}", index.replace('_', "\\_")),
    }
}

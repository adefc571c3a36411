//! Source code of a function computing expressions: C, Rust or Python
//! with NumPy. The body is `cse`'s: each shared subterm a temporary
//! (`t1`, `t2`, ...) computed once, then the results. One expression is
//! returned; several (a gradient, a Hessian's rows, flattened row by row)
//! are written to `out` (C), returned as an array (Rust) or a list
//! (Python). Operators keep the fewest parentheses (`layout`); functions
//! take each language's name for them, or an inline definition matching
//! Epsilon's (`sigmoid`, `softplus`, `relu`, ...), as their rows of the
//! elementwise table (`ir::math::elementwise`) spell them. A function a
//! language lacks is an error naming both.

use super::cse::cse;
use super::infix::number;
use super::layout::{self, ATOM, NEGATION, Notation, POWER};
use super::term::Term;
use crate::egraph::Math;
use crate::ir::math::elementwise::{self, Spelling};
use egg::{Id, RecExpr, Symbol};
use std::cell::RefCell;
use std::fmt::Write as _;

/// A target language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// C99 with `<math.h>`.
    C,
    /// Rust, `f64` methods of the standard library.
    Rust,
    /// Python with NumPy (elementwise on arrays), `scipy.special` where
    /// NumPy has no such function.
    Python,
}

impl Language {
    /// The language by its name (`c`, `rust`, `python`).
    pub fn named(name: &str) -> Option<Language> {
        match name {
            "c" | "C" => Some(Language::C),
            "rust" => Some(Language::Rust),
            "python" | "numpy" => Some(Language::Python),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::C => "C",
            Language::Rust => "Rust",
            Language::Python => "Python",
        }
    }
}

/// The source of function `name` of `params` computing `roots` of `expr`.
pub fn codegen(
    expr: &RecExpr<Math>,
    roots: &[Id],
    params: &[Symbol],
    language: Language,
    name: &str,
) -> Result<String, String> {
    if !is_identifier(name) {
        return Err(format!("codegen: {name:?} is not a function name"));
    }
    for node in expr.as_ref() {
        if let Math::Var(var) = node
            && !params.contains(var)
        {
            let names: Vec<&str> = params.iter().map(|p| p.as_str()).collect();
            return Err(format!(
                "codegen: the variable {var} is not a parameter (parameters: {})",
                names.join(" ")
            ));
        }
    }
    for param in params {
        if !is_identifier(param.as_str()) {
            return Err(format!(
                "codegen: the parameter {param} is not a name in {}",
                language.name()
            ));
        }
    }
    let shared = cse(expr, roots);
    let code = Code {
        language,
        missing: RefCell::new(None),
        scipy: RefCell::new(false),
    };
    let definitions: Vec<(Symbol, String)> = shared
        .definitions
        .iter()
        .map(|(t, term)| (*t, code.shown(term).0))
        .collect();
    let results: Vec<String> = shared
        .results
        .iter()
        .map(|term| code.shown(term).0)
        .collect();
    if let Some(function) = code.missing.borrow().clone() {
        return Err(format!(
            "codegen: {function} has no {} form",
            language.name()
        ));
    }
    let scipy = *code.scipy.borrow();
    Ok(match language {
        Language::C => c_function(name, params, &definitions, &results),
        Language::Rust => rust_function(name, params, &definitions, &results),
        Language::Python => python_function(name, params, &definitions, &results, scipy),
    })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn c_function(
    name: &str,
    params: &[Symbol],
    definitions: &[(Symbol, String)],
    results: &[String],
) -> String {
    let mut args: Vec<String> = params.iter().map(|p| format!("double {p}")).collect();
    let single = results.len() == 1;
    if !single {
        args.push("double *out".to_string());
    }
    let mut text = String::from("#include <math.h>\n\n");
    let kind = if single { "double" } else { "void" };
    let _ = writeln!(text, "{kind} {name}({}) {{", args.join(", "));
    for (t, value) in definitions {
        let _ = writeln!(text, "    const double {t} = {value};");
    }
    if single {
        let _ = writeln!(text, "    return {};", results[0]);
    } else {
        for (k, value) in results.iter().enumerate() {
            let _ = writeln!(text, "    out[{k}] = {value};");
        }
    }
    text.push_str("}\n");
    text
}

fn rust_function(
    name: &str,
    params: &[Symbol],
    definitions: &[(Symbol, String)],
    results: &[String],
) -> String {
    let args: Vec<String> = params.iter().map(|p| format!("{p}: f64")).collect();
    let single = results.len() == 1;
    let kind = if single {
        "f64".to_string()
    } else {
        format!("[f64; {}]", results.len())
    };
    // Parameters keep the expression's names and may be unused.
    let mut text =
        String::from("#[allow(non_snake_case, unused_variables, unused_parens, clippy::all)]\n");
    let _ = writeln!(text, "pub fn {name}({}) -> {kind} {{", args.join(", "));
    for (t, value) in definitions {
        let _ = writeln!(text, "    let {t} = {value};");
    }
    if single {
        let _ = writeln!(text, "    {}", results[0]);
    } else {
        let _ = writeln!(text, "    [{}]", results.join(", "));
    }
    text.push_str("}\n");
    text
}

fn python_function(
    name: &str,
    params: &[Symbol],
    definitions: &[(Symbol, String)],
    results: &[String],
    scipy: bool,
) -> String {
    let args: Vec<String> = params.iter().map(|p| p.to_string()).collect();
    let mut text = String::from("import numpy as np\n");
    if scipy {
        text.push_str("import scipy.special\n");
    }
    let _ = writeln!(text, "\n\ndef {name}({}):", args.join(", "));
    for (t, value) in definitions {
        let _ = writeln!(text, "    {t} = {value}");
    }
    if results.len() == 1 {
        let _ = writeln!(text, "    return {}", results[0]);
    } else {
        let _ = writeln!(text, "    return [{}]", results.join(", "));
    }
    text
}

/// A language's notation; remembers the first function it lacks.
struct Code {
    language: Language,
    missing: RefCell<Option<String>>,
    scipy: RefCell<bool>,
}

impl Code {
    fn lacks(&self, function: &str) -> (String, u8) {
        self.missing
            .borrow_mut()
            .get_or_insert_with(|| function.to_string());
        ("0".to_string(), ATOM)
    }

    /// `name(args)` in C or Python.
    fn call(&self, name: &str, args: &[String]) -> (String, u8) {
        (format!("{name}({})", args.join(", ")), ATOM)
    }

    /// `receiver.method(args)` in Rust.
    fn method(&self, receiver: (String, u8), method: &str, args: &[String]) -> (String, u8) {
        (
            format!(
                "{}.{method}({})",
                self.wrapped(receiver, ATOM),
                args.join(", ")
            ),
            ATOM,
        )
    }

    fn function(&self, op: &str, args: &[&Term]) -> (String, u8) {
        // Each operand is shown once: showing the receiver again for a
        // method call doubled the work at every level of a nested formula.
        let shown: Vec<(String, u8)> = args.iter().map(|a| self.shown(a)).collect();
        let text: Vec<String> = shown.iter().map(|(t, _)| t.clone()).collect();
        if op == "pow" {
            // Python's `**` is written by `shown`.
            return match self.language {
                Language::Rust => self.method(shown[0].clone(), "powf", &text[1..]),
                _ => self.call("pow", &text),
            };
        }
        let Some(row) = elementwise::row_named(op).filter(|row| row.arity == args.len()) else {
            return self.lacks(op);
        };
        let spelling = match self.language {
            Language::C => row.c,
            Language::Rust => row.rust,
            Language::Python => row.python,
        };
        if let Spelling::Call(name) = spelling
            && name.starts_with("scipy.")
        {
            *self.scipy.borrow_mut() = true;
        }
        if let Spelling::Method(name) = spelling {
            return self.method(shown[0].clone(), name, &text[1..]);
        }
        let wrapped: Vec<String> = shown
            .iter()
            .map(|operand| self.wrapped(operand.clone(), ATOM))
            .collect();
        match spelling.apply(&text, &wrapped) {
            Some(code) => (code, ATOM),
            None => self.lacks(op),
        }
    }
}

impl Notation for Code {
    fn shown(&self, term: &Term) -> (String, u8) {
        // Formulas nest as deep as the data a loop built: the stack grows
        // in segments instead of overflowing (found by tests/grammar_fuzz.rs).
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            match term {
                Term::Num(c) => {
                    let x = c.get();
                    // Always a floating-point literal (`1/2` is 0 in C).
                    let text = match number(x) {
                        t if t.contains(['.', 'e']) => t,
                        t => format!("{t}.0"),
                    };
                    (text, if x < 0.0 { NEGATION } else { ATOM })
                }
                Term::Var(name) => (name.to_string(), ATOM),
                Term::Apply(op, args) => match (op.as_str(), args.len()) {
                    ("+", _) => layout::sum(self, args),
                    ("-", 2) => layout::difference(self, &args[0], &args[1]),
                    ("*", _) => layout::product(self, args),
                    ("/", 2) => layout::quotient(self, &args[0], &args[1]),
                    ("neg", 1) => layout::negation(self, &args[0]),
                    ("pow", 2) if self.language == Language::Python => (
                        format!(
                            "{}**{}",
                            self.wrapped(self.shown(&args[0]), ATOM),
                            self.wrapped(self.shown(&args[1]), POWER)
                        ),
                        POWER,
                    ),
                    (name, _) => {
                        let operands: Vec<&Term> = args.iter().map(|a| &**a).collect();
                        self.function(name, &operands)
                    }
                },
            }
        })
    }

    fn paren(&self, text: &str) -> String {
        format!("({text})")
    }

    fn power(&self, base: &str, n: usize) -> String {
        match (self.language, n) {
            (Language::Python, n) => format!("{base}**{n}"),
            (_, 2 | 3) => format!("({})", vec![base; n].join("*")),
            (Language::C, n) => format!("pow({base}, {n}.0)"),
            (Language::Rust, n) => format!("{base}.powi({n})"),
        }
    }

    fn between(&self, _next: &str) -> &'static str {
        "*"
    }
}

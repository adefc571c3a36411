//! The reader's output: a datum with its source span.
//!
//! `Sexp` is plain data. Quote marks are already expanded (`'x` is the list
//! `(quote x)`), `nil` and `()` are both the empty list, and a bracket form
//! `[a b]` stays a [`SexpKind::Tensor`] for the evaluator to interpret.

use super::span::Span;

/// One datum read from source text.
#[derive(Clone, Debug, PartialEq)]
pub struct Sexp {
    /// What was read.
    pub kind: SexpKind,
    /// Where it was read (for a list, from its opening to its closing bracket).
    pub span: Span,
}

/// The kinds of datum the reader produces.
#[derive(Clone, Debug, PartialEq)]
pub enum SexpKind {
    /// An integer literal (`42`, `-7`).
    Int(i64),
    /// A float literal (`1.5`, `-2e-3`, `3.`, `inf`, `nan`).
    Float(f64),
    /// A complex literal `#c(1.0 2.0)` (real and imaginary parts).
    Complex(f64, f64),
    /// `#t`, `#f`, `true`, `false`.
    Bool(bool),
    /// A string literal with escapes resolved.
    Str(String),
    /// A symbol such as `foo` or `set!`.
    Symbol(String),
    /// A keyword such as `:wrt`, stored without its colon.
    Keyword(String),
    /// A list; the second field is the tail after a dot in `(a b . c)`.
    List(Vec<Sexp>, Option<Box<Sexp>>),
    /// A bracket form `[a b c]`.
    Tensor(Vec<Sexp>),
}

impl Sexp {
    /// A datum of `kind` at `span`.
    pub fn new(kind: SexpKind, span: Span) -> Self {
        Sexp { kind, span }
    }
}

/// Dropping nested data recursively could overflow the stack on deep input,
/// so children are moved onto an explicit work list first.
impl Drop for Sexp {
    fn drop(&mut self) {
        let mut pending: Vec<Sexp> = Vec::new();
        take_children(&mut self.kind, &mut pending);
        while let Some(mut child) = pending.pop() {
            take_children(&mut child.kind, &mut pending);
        }
    }
}

fn take_children(kind: &mut SexpKind, pending: &mut Vec<Sexp>) {
    match kind {
        SexpKind::List(items, tail) => {
            pending.append(items);
            if let Some(tail) = tail.take() {
                pending.push(*tail);
            }
        }
        SexpKind::Tensor(items) => pending.append(items),
        _ => {}
    }
}

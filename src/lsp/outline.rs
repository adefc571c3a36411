//! What the language server knows about one document, without evaluating
//! it: the reader's first error, the top-level definitions (name, where,
//! signature, docstring), and conversions between byte offsets and LSP
//! positions (lines and UTF-16 code units).

use crate::reader::{FileId, Lexer, Sexp, SexpKind, Span, read_next};

/// A top-level definition: `(define name ...)`, `(define (name args) ...)`,
/// `(defmacro (name args) ...)` and their kin.
#[derive(Clone, Debug, PartialEq)]
pub struct Definition {
    /// The defined name.
    pub name: String,
    /// Byte range of the name where it is defined.
    pub name_at: (usize, usize),
    /// Byte range of the whole form.
    pub form_at: (usize, usize),
    /// The head as written: `(f x y)` for a function, the name otherwise.
    pub signature: String,
    /// The docstring, when the body starts with one.
    pub doc: Option<String>,
    /// True for functions and macros.
    pub callable: bool,
}

/// A document read once.
pub struct Outline {
    /// The reader's error, with its byte range, if the text does not read.
    pub error: Option<(String, (usize, usize))>,
    /// Top-level definitions in order (from the forms before an error too).
    pub definitions: Vec<Definition>,
}

/// The forms that define a name at top level.
const DEFINING: &[&str] = &[
    "define",
    "defmacro",
    "define-macro",
    "defderiv",
    "defvjp",
    "defjvp",
];

impl Outline {
    /// Reads `text`. On a read error, the forms before the error still give
    /// their definitions.
    pub fn of(text: &str) -> Outline {
        // A real file id: spans of lists join their brackets only then.
        let mut lexer = Lexer::new(text, FileId(0));
        let mut forms = Vec::new();
        let error = loop {
            match read_next(&mut lexer) {
                Ok(Some(form)) => forms.push(form),
                Ok(None) => break None,
                Err(error) => break Some((error.kind.to_string(), byte_range(error.span, text))),
            }
        };
        Outline {
            error,
            definitions: definitions(text, &forms),
        }
    }

    /// The definition of `name`, the last one when it is defined twice.
    pub fn find(&self, name: &str) -> Option<&Definition> {
        self.definitions.iter().rev().find(|d| d.name == name)
    }
}

fn byte_range(span: Span, text: &str) -> (usize, usize) {
    let start = (span.start as usize).min(text.len());
    (start, (start + span.len.max(1) as usize).min(text.len()))
}

fn definitions(text: &str, forms: &[Sexp]) -> Vec<Definition> {
    forms
        .iter()
        .filter_map(|form| definition(text, form))
        .collect()
}

fn definition(text: &str, form: &Sexp) -> Option<Definition> {
    let SexpKind::List(items, _) = &form.kind else {
        return None;
    };
    let [head, target, rest @ ..] = items.as_slice() else {
        return None;
    };
    let SexpKind::Symbol(keyword) = &head.kind else {
        return None;
    };
    if !DEFINING.contains(&keyword.as_str()) {
        return None;
    }
    let (name_sexp, callable) = match &target.kind {
        SexpKind::Symbol(_) => (target, keyword != "define"),
        SexpKind::List(parts, _) => (parts.first()?, true),
        _ => return None,
    };
    let SexpKind::Symbol(name) = &name_sexp.kind else {
        return None;
    };
    let doc = match rest {
        [first, _, ..] => match &first.kind {
            SexpKind::Str(text) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    };
    let head_at = byte_range(target.span, text);
    Some(Definition {
        name: name.clone(),
        name_at: byte_range(name_sexp.span, text),
        form_at: byte_range(form.span, text),
        signature: text[head_at.0..head_at.1].to_string(),
        doc,
        callable,
    })
}

/// The LSP position (0-based line, UTF-16 column) of byte `offset`.
pub fn position(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char(text, offset)];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column: usize = before[line_start..].chars().map(char::len_utf16).sum();
    (line, column as u32)
}

/// The byte offset of an LSP position (clamped to the line and the text).
pub fn offset(text: &str, line: u32, column: u32) -> usize {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(at) => start += at + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    let mut units = 0;
    for (at, c) in text[start..end].char_indices() {
        if units >= column as usize {
            return start + at;
        }
        units += c.len_utf16();
    }
    end
}

fn floor_char(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Characters that end a name.
pub fn is_name_char(c: char) -> bool {
    !c.is_whitespace() && !"()[]{}\"';`,".contains(c)
}

/// The name around byte `at`: its byte range and text.
pub fn name_at(text: &str, at: usize) -> Option<(usize, usize, &str)> {
    let at = floor_char(text, at.min(text.len()));
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_name_char(*c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .char_indices()
        .find(|(_, c)| !is_name_char(*c))
        .map_or(text.len(), |(i, _)| at + i);
    (start < end).then(|| (start, end, &text[start..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "(define (energy w)\n  \"The energy.\"\n  (sum (* w w)))\n(define rate 0.1)\n(defmacro (twice e) `(begin ,e ,e))\n";

    #[test]
    fn top_level_definitions_are_found_with_their_docstrings() {
        let outline = Outline::of(SOURCE);
        assert!(outline.error.is_none());
        let names: Vec<_> = outline
            .definitions
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["energy", "rate", "twice"]);
        let energy = outline.find("energy").unwrap();
        assert_eq!(energy.signature, "(energy w)");
        assert_eq!(energy.doc.as_deref(), Some("The energy."));
        assert!(energy.callable && !outline.find("rate").unwrap().callable);
        assert_eq!(&SOURCE[energy.name_at.0..energy.name_at.1], "energy");
    }

    #[test]
    fn a_read_error_keeps_the_definitions_before_it() {
        let text = "(define a 1)\n(define (f x) (+ x 1)\n";
        let outline = Outline::of(text);
        let (message, (start, _)) = outline.error.unwrap();
        assert!(message.contains("unclosed"), "{message}");
        assert_eq!(position(text, start), (1, 0));
        assert_eq!(outline.definitions.len(), 1);
    }

    #[test]
    fn positions_count_utf16_units() {
        let text = "(λ 𝑥)\nab";
        assert_eq!(position(text, text.find('𝑥').unwrap()), (0, 3));
        assert_eq!(offset(text, 0, 3), text.find('𝑥').unwrap());
        assert_eq!(offset(text, 1, 1), text.len() - 1);
        assert_eq!(offset(text, 1, 99), text.len());
        assert_eq!(offset(text, 7, 0), text.len());
        assert_eq!(name_at("(grad f)", 3), Some((1, 5, "grad")));
        assert_eq!(name_at("(grad f)", 5), Some((1, 5, "grad")));
        assert_eq!(name_at("( )", 1), None);
    }
}

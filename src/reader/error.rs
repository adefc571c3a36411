//! Read errors: what went wrong and where.

use super::span::Span;
use thiserror::Error;

/// A read error with the span it points at.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("{kind}")]
pub struct ReadError {
    /// What went wrong.
    pub kind: ReadErrorKind,
    /// Where: for unclosed input, the opening bracket, quote or comment.
    pub span: Span,
}

/// The causes of a read error.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ReadErrorKind {
    /// An opening bracket without its closing one.
    #[error("unclosed '{0}': no matching '{1}' before the end of input")]
    Unclosed(char, char),
    /// A string literal without its closing quote.
    #[error("unterminated string literal")]
    UnterminatedString,
    /// A `#|` comment without its `|#`.
    #[error("unterminated block comment '#|'")]
    UnterminatedComment,
    /// A quote mark (or `#;`) followed by a closing bracket.
    #[error("'{0}' must be followed by a datum")]
    MissingDatum(String),
    /// The input ended right after a quote mark (or `#;`).
    #[error("input ended after '{0}', which must be followed by a datum")]
    EndAfterPrefix(String),
    /// A closing bracket with no opening one.
    #[error("unexpected '{0}' with no matching opening bracket")]
    UnexpectedClose(char),
    /// A closing bracket of the wrong kind.
    #[error("'{found}' does not match '{open}' opened at {open_at}")]
    MismatchedClose {
        /// The opening bracket.
        open: char,
        /// The closing bracket that was found.
        found: char,
        /// Line:col of the opening bracket.
        open_at: String,
    },
    /// A token that starts like a number but is not one.
    #[error("bad number literal '{0}'")]
    BadNumber(String),
    /// An integer literal outside the i64 range.
    #[error("integer literal '{0}' does not fit in 64 bits (write it as a float, e.g. {0}.0)")]
    IntegerOverflow(String),
    /// An unknown escape sequence in a string.
    #[error("unknown escape sequence '\\{0}' in string")]
    BadEscape(String),
    /// A dot outside the tail position of a list.
    #[error("misplaced '.': a dot may only appear before the last element of a list")]
    BadDot,
    /// Nesting deeper than the reader accepts.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// A character that starts no datum.
    #[error("unexpected character '{0}'")]
    UnexpectedChar(char),
    /// `#` followed by something the reader does not know.
    #[error("unknown syntax '#{0}' (expected #t, #f, #c(re im), #| comment |# or #;)")]
    BadHash(String),
    /// A malformed complex literal.
    #[error("bad complex literal: {0}")]
    BadComplex(String),
}

impl ReadError {
    /// True when more input could complete the text (the REPL then asks for
    /// another line instead of reporting an error).
    pub fn is_incomplete(&self) -> bool {
        matches!(
            self.kind,
            ReadErrorKind::Unclosed(..)
                | ReadErrorKind::UnterminatedString
                | ReadErrorKind::UnterminatedComment
                | ReadErrorKind::EndAfterPrefix(_)
        )
    }
}

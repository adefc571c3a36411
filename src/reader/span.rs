//! Source positions: which file, which byte range, which line and column.
//!
//! A [`Span`] is small and `Copy` so every datum and every evaluator node can
//! carry one. Spans know nothing of file names: a [`FileId`] is resolved to a
//! name and a text by whoever registered the source (the engine's source map).

use std::fmt;

/// Identifies one registered source text (a file, a REPL entry, an `eval` string).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl FileId {
    /// The id used for spans of data that came from no source text.
    pub const NONE: FileId = FileId(u32::MAX);
}

/// A range of source text: `len` bytes from byte offset `start`, which is at
/// 1-based `line` and `col` (col counts characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The source the span points into.
    pub file: FileId,
    /// Byte offset of the first character.
    pub start: u32,
    /// Length in bytes (at least 1 for real spans).
    pub len: u32,
    /// 1-based line of the first character.
    pub line: u32,
    /// 1-based column (in characters) of the first character.
    pub col: u32,
}

impl Span {
    /// A span that points nowhere, for values built at run time.
    pub const NONE: Span = Span {
        file: FileId::NONE,
        start: 0,
        len: 0,
        line: 0,
        col: 0,
    };

    /// True when the span points into a real source.
    pub fn is_known(&self) -> bool {
        self.file != FileId::NONE
    }

    /// Byte offset just past the last character.
    pub fn end(&self) -> u32 {
        self.start.saturating_add(self.len)
    }

    /// The span from the start of `self` to the end of `other` (same file).
    pub fn to(&self, other: Span) -> Span {
        if !self.is_known() || other.file != self.file || other.end() < self.start {
            return *self;
        }
        Span {
            len: other.end() - self.start,
            ..*self
        }
    }

    /// `self` if known, else `fallback`.
    pub fn or(self, fallback: Span) -> Span {
        if self.is_known() { self } else { fallback }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

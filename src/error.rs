//! The error type of the embedding API: a message with the place it points
//! at (file, line, column), the quoted source line, and the call sites the
//! error passed through. Its `Display` is the one-line
//! `FILE:LINE:COL: error: message`; [`Error::render`] adds the source line
//! with a caret under the offending text.

use crate::lisp::source::SourceMap;
use crate::lisp::{EvalError, EvalErrorKind};
use crate::reader::Span;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// A place in a source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// File name (or `<eval>`, `<repl 3>`, ...).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// An error from Epsilon: bad input, a failed evaluation, or `(exit n)`.
/// (Boxed, so results that carry it stay small.)
#[derive(Clone, Debug)]
pub struct Error {
    inner: Box<ErrorInner>,
}

#[derive(Clone, Debug)]
struct ErrorInner {
    kind: EvalErrorKind,
    message: String,
    location: Option<Location>,
    excerpt: Option<(String, String)>,
    /// Places inside the standard library the error passed through before
    /// reaching the user's code (innermost first).
    library: Vec<Location>,
    trace: Vec<Location>,
}

/// Whether a source name is one of the embedded standard-library files.
fn in_library(name: &str) -> bool {
    name.starts_with("<stdlib/")
}

impl Error {
    /// An error with a message and no location.
    pub fn msg(message: impl Into<String>) -> Self {
        Self::from_inner(ErrorInner {
            kind: EvalErrorKind::User,
            message: message.into(),
            location: None,
            excerpt: None,
            library: Vec::new(),
            trace: Vec::new(),
        })
    }

    fn from_inner(inner: ErrorInner) -> Self {
        Error {
            inner: Box::new(inner),
        }
    }

    /// Builds the error for `error`, resolving its spans in `sources`.
    pub(crate) fn from_eval(error: EvalError, sources: &SourceMap) -> Self {
        let locate = |span: Span| -> Option<Location> {
            span.is_known().then(|| Location {
                file: sources.name(span).unwrap_or("<unknown>").to_string(),
                line: span.line,
                col: span.col,
            })
        };
        // An error raised inside the standard library points at the user's
        // call that led there; the library's own places follow it.
        let mut spans: Vec<Span> = std::iter::once(error.span)
            .chain(error.trace.iter().copied())
            .filter(|span| span.is_known())
            .collect();
        let user = spans
            .iter()
            .position(|span| !sources.name(*span).is_some_and(in_library))
            .unwrap_or(0);
        let outer = spans.split_off(user);
        let primary = outer.first().copied().unwrap_or(error.span);
        Self::from_inner(ErrorInner {
            kind: error.kind,
            location: locate(primary),
            excerpt: primary
                .is_known()
                .then(|| sources.excerpt(primary))
                .flatten(),
            library: spans.iter().filter_map(|span| locate(*span)).collect(),
            trace: outer
                .iter()
                .skip(1)
                .filter_map(|span| locate(*span))
                .collect(),
            message: error.into_message(),
        })
    }

    /// The kind of failure.
    pub fn kind(&self) -> EvalErrorKind {
        self.inner.kind
    }

    /// The message, without location.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// Where the error points, if anywhere.
    pub fn location(&self) -> Option<&Location> {
        self.inner.location.as_ref()
    }

    /// The status `(exit n)` asked for, when this error is an exit request.
    pub fn exit_code(&self) -> Option<i32> {
        match self.inner.kind {
            EvalErrorKind::Exit(code) => Some(code),
            _ => None,
        }
    }

    /// True when more input could complete the text (an unclosed bracket or
    /// string): an interactive reader should ask for another line.
    pub fn is_incomplete_input(&self) -> bool {
        self.inner.kind == EvalErrorKind::Incomplete
    }

    /// The full report: the one-line error, the source line with a caret
    /// under the offending text, the innermost place inside the standard
    /// library it was raised at (every such place after
    /// [`show_library_frames`]`(true)`, the command line's `--backtrace`)
    /// and the user's call sites it passed through.
    pub fn render(&self) -> String {
        let mut out = match &self.inner.location {
            Some(location) => format!("{location}: error: {}", self.inner.message),
            None => format!("error: {}", self.inner.message),
        };
        if let (Some(location), Some((line, caret))) = (&self.inner.location, &self.inner.excerpt) {
            let gutter = location.line.to_string().len();
            out.push_str(&format!(
                "\n{:gutter$} |\n{} | {line}\n{:gutter$} | {caret}",
                "", location.line, ""
            ));
        }
        let library = &self.inner.library;
        let shown = if FULL_BACKTRACE.load(Ordering::Relaxed) {
            library.len()
        } else {
            library.len().min(1)
        };
        for place in &library[..shown] {
            out.push_str(&format!("\n  raised inside {place}"));
        }
        if shown < library.len() {
            let more = library.len() - shown;
            let frames = if more == 1 { "frame" } else { "frames" };
            out.push_str(&format!(
                "\n  ... and {more} {frames} inside the standard library (--backtrace shows them)"
            ));
        }
        for site in &self.inner.trace {
            out.push_str(&format!("\n  called from {site}"));
        }
        out
    }
}

/// Whether reports show every place inside the standard library an error
/// passed through, or only the innermost.
static FULL_BACKTRACE: AtomicBool = AtomicBool::new(false);

/// Makes [`Error::render`] show every frame inside the standard library
/// (`true`, the command line's `--backtrace`) or only the innermost (the
/// default: the user's own call sites are what they can act on).
pub fn show_library_frames(all: bool) {
    FULL_BACKTRACE.store(all, Ordering::Relaxed);
}

/// `FILE:LINE:COL: message`, or the message alone: no "error:" of its own,
/// so a host that writes `error: {e}` (or anyhow's `Error: {e}`) does not
/// say it twice. [`Error::render`] gives the full report.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.location {
            Some(location) => write!(f, "{location}: {}", self.inner.message),
            None => write!(f, "{}", self.inner.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<EvalError> for Error {
    /// Converts without a source map: the message and kind are kept, the
    /// location is not (functions registered from Rust use this with `?`).
    fn from(error: EvalError) -> Self {
        Error::from_eval(error, &SourceMap::default())
    }
}

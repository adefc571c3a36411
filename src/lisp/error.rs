//! Evaluation errors: a kind callers can match, a message, the span of the
//! form that failed, and the call sites the error passed through.

use crate::reader::{ReadError, Span};
use thiserror::Error;

/// What kind of failure an [`EvalError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// The source text could not be read.
    Read,
    /// The source text ended inside an unfinished form (an open bracket or
    /// string): more input could complete it.
    Incomplete,
    /// A symbol with no binding.
    Unbound,
    /// A call with the wrong number of arguments.
    Arity,
    /// An argument of the wrong type.
    Type,
    /// Tensor shapes that do not fit together.
    Shape,
    /// Integer division (or remainder) by zero.
    DivisionByZero,
    /// A value outside the accepted range (index, axis, overflow).
    Range,
    /// A malformed special form.
    Syntax,
    /// Recursion deeper than the evaluator's limit.
    Recursion,
    /// `(error ...)` raised by the program.
    User,
    /// Reading or writing a file failed.
    Io,
    /// Evaluation was interrupted (Ctrl-C); `try` cannot catch it.
    Interrupted,
    /// `(exit n)` was called; `try` cannot catch it.
    Exit(i32),
    /// Program output could not be written because its reader went away
    /// (standard output piped into `head`, which stopped reading): the
    /// program stops, as a Unix filter does; `try` cannot catch it.
    OutputClosed,
    /// A bug inside Epsilon (a caught panic).
    Internal,
}

/// An error raised while evaluating. Its parts ([`ErrorDetail`]) live
/// behind one pointer, so a result of evaluation (`EvalResult<Value>`) is
/// as small as a value: the evaluator returns one from every node.
#[derive(Clone, Debug, Error)]
#[error("{}", .0.message)]
pub struct EvalError(Box<ErrorDetail>);

/// What an [`EvalError`] says; its fields read through the error itself
/// (`error.message`, `error.kind`).
#[derive(Clone, Debug)]
pub struct ErrorDetail {
    /// The kind of failure.
    pub kind: EvalErrorKind,
    /// The message shown to the user.
    pub message: String,
    /// The innermost form the error is attributed to.
    pub span: Span,
    /// Call sites the error passed through, innermost first.
    pub trace: Vec<Span>,
}

impl std::ops::Deref for EvalError {
    type Target = ErrorDetail;
    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for EvalError {
    fn deref_mut(&mut self) -> &mut ErrorDetail {
        &mut self.0
    }
}

/// Shorthand for results of evaluation.
pub type EvalResult<T> = Result<T, EvalError>;

/// How many call sites an error remembers.
const MAX_TRACE: usize = 12;

impl EvalError {
    /// An error of `kind` with `message` and no span yet.
    pub fn new(kind: EvalErrorKind, message: impl Into<String>) -> Self {
        EvalError(Box::new(ErrorDetail {
            kind,
            message: message.into(),
            span: Span::NONE,
            trace: Vec::new(),
        }))
    }

    /// The message, taken out of the error.
    pub fn into_message(self) -> String {
        self.0.message
    }

    /// A type error.
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Type, message)
    }

    /// A malformed special form.
    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Syntax, message)
    }

    /// A value out of range.
    pub fn range(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Range, message)
    }

    /// A shape mismatch.
    pub fn shape(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Shape, message)
    }

    /// An I/O failure.
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Io, message)
    }

    /// Attributes the error to `span` unless it already points somewhere.
    pub fn at(mut self, span: Span) -> Self {
        if !self.span.is_known() {
            self.span = span;
        }
        self
    }

    /// Records that the error passed through the call at `span`.
    pub fn called_from(mut self, span: Span) -> Self {
        if !self.span.is_known() {
            self.span = span;
        } else if span.is_known()
            && self.trace.len() < MAX_TRACE
            && self.trace.last() != Some(&span)
        {
            self.trace.push(span);
        }
        self
    }

    /// True for errors that `try` must not catch.
    pub fn is_uncatchable(&self) -> bool {
        matches!(
            self.kind,
            EvalErrorKind::Interrupted | EvalErrorKind::Exit(_) | EvalErrorKind::OutputClosed
        )
    }
}

impl From<crate::ad::request::RequestError> for EvalError {
    fn from(error: crate::ad::request::RequestError) -> Self {
        use crate::ad::request::RequestError;
        match error {
            RequestError::Shape(message) => EvalError::shape(message),
            RequestError::Type(message) => EvalError::type_error(message),
            RequestError::Range(message) => EvalError::range(message),
        }
    }
}

impl From<ReadError> for EvalError {
    fn from(err: ReadError) -> Self {
        EvalError(Box::new(ErrorDetail {
            kind: if err.is_incomplete() {
                EvalErrorKind::Incomplete
            } else {
                EvalErrorKind::Read
            },
            message: err.kind.to_string(),
            span: err.span,
            trace: Vec::new(),
        }))
    }
}

/// Returns early with a type error built by `format!`.
#[macro_export]
#[doc(hidden)]
macro_rules! type_err {
    ($($arg:tt)*) => {
        return Err($crate::lisp::EvalError::type_error(format!($($arg)*)))
    };
}

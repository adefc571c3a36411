//! The parser: assembles tokens into [`Sexp`] data.
//!
//! It keeps its own stack of open forms instead of recursing, so input nested
//! arbitrarily deep cannot overflow the Rust stack; nesting beyond
//! [`MAX_NESTING`] is reported as an error at the bracket that goes too deep.

use super::error::{ReadError, ReadErrorKind};
use super::lexer::{Lexer, Token};
use super::sexp::{Sexp, SexpKind};
use super::span::{FileId, Span};

/// The deepest nesting of brackets and quote marks the reader accepts.
pub const MAX_NESTING: usize = 10_000;

/// A form that is open while the parser reads its contents.
enum Frame {
    /// A list or bracket form; `tail` holds what followed a dot.
    Seq {
        open: char,
        span: Span,
        items: Vec<Sexp>,
        dot: DotState,
    },
    /// A quote mark waiting for the datum it wraps.
    Prefix { symbol: &'static str, span: Span },
    /// `#;` waiting for the datum it discards.
    Discard { span: Span },
}

enum DotState {
    None,
    /// A dot was read; the tail datum comes next.
    AwaitingTail(Span),
    /// The tail was read; only the closing bracket may follow.
    HaveTail(Box<Sexp>),
}

fn closer(open: char) -> char {
    if open == '(' { ')' } else { ']' }
}

/// Reads every datum in `text`.
pub fn read_all(text: &str, file: FileId) -> Result<Vec<Sexp>, ReadError> {
    let mut lexer = Lexer::new(text, file);
    let mut data = Vec::new();
    while let Some(datum) = read_next(&mut lexer)? {
        data.push(datum);
    }
    Ok(data)
}

/// Reads the next complete datum from `lexer`, or `None` at the end of input.
pub fn read_next(lexer: &mut Lexer<'_>) -> Result<Option<Sexp>, ReadError> {
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        let Some((token, span)) = lexer.next_token()? else {
            return match stack.pop() {
                None => Ok(None),
                Some(frame) => Err(unfinished(frame)),
            };
        };
        let mut datum = match token {
            Token::Open(open) => {
                check_depth(&stack, span)?;
                stack.push(Frame::Seq {
                    open,
                    span,
                    items: Vec::new(),
                    dot: DotState::None,
                });
                continue;
            }
            Token::Prefix(symbol) => {
                check_depth(&stack, span)?;
                stack.push(Frame::Prefix { symbol, span });
                continue;
            }
            Token::DatumComment => {
                check_depth(&stack, span)?;
                stack.push(Frame::Discard { span });
                continue;
            }
            Token::Dot => {
                match stack.last_mut() {
                    Some(Frame::Seq {
                        open: '(',
                        items,
                        dot: dot @ DotState::None,
                        ..
                    }) if !items.is_empty() => *dot = DotState::AwaitingTail(span),
                    _ => return Err(error(ReadErrorKind::BadDot, span)),
                }
                continue;
            }
            Token::Close(close) => close_seq(&mut stack, close, span)?,
            Token::Atom(kind) => Sexp::new(kind, span),
        };
        // A datum is complete: hand it to the enclosing frames.
        loop {
            match stack.last_mut() {
                None => return Ok(Some(datum)),
                Some(Frame::Prefix { symbol, span }) => {
                    let whole = span.to(datum.span);
                    let quote = Sexp::new(SexpKind::Symbol(symbol.to_string()), *span);
                    datum = Sexp::new(SexpKind::List(vec![quote, datum], None), whole);
                    stack.pop();
                }
                Some(Frame::Discard { .. }) => {
                    stack.pop();
                    break;
                }
                Some(Frame::Seq { items, dot, .. }) => {
                    match std::mem::replace(dot, DotState::None) {
                        DotState::None => items.push(datum),
                        DotState::AwaitingTail(_) => *dot = DotState::HaveTail(Box::new(datum)),
                        DotState::HaveTail(_) => {
                            return Err(error(ReadErrorKind::BadDot, datum.span));
                        }
                    }
                    break;
                }
            }
        }
    }
}

fn check_depth(stack: &[Frame], span: Span) -> Result<(), ReadError> {
    if stack.len() >= MAX_NESTING {
        Err(error(ReadErrorKind::TooDeep(MAX_NESTING), span))
    } else {
        Ok(())
    }
}

/// Closes the innermost open form with the bracket `close` found at `span`.
fn close_seq(stack: &mut Vec<Frame>, close: char, span: Span) -> Result<Sexp, ReadError> {
    match stack.pop() {
        Some(Frame::Seq {
            open,
            span: open_span,
            items,
            dot,
        }) => {
            if closer(open) != close {
                let kind = ReadErrorKind::MismatchedClose {
                    open,
                    found: close,
                    open_at: open_span.to_string(),
                };
                return Err(error(kind, span));
            }
            let whole = open_span.to(span);
            let tail = match dot {
                DotState::None => None,
                DotState::AwaitingTail(dot_span) => {
                    return Err(error(ReadErrorKind::BadDot, dot_span));
                }
                DotState::HaveTail(tail) => Some(tail),
            };
            let kind = if open == '[' {
                SexpKind::Tensor(items)
            } else {
                SexpKind::List(items, tail)
            };
            Ok(Sexp::new(kind, whole))
        }
        Some(Frame::Prefix { symbol, span }) => Err(error(
            ReadErrorKind::MissingDatum(prefix_text(symbol).to_string()),
            span,
        )),
        Some(Frame::Discard { span }) => {
            Err(error(ReadErrorKind::MissingDatum("#;".to_string()), span))
        }
        None => Err(error(ReadErrorKind::UnexpectedClose(close), span)),
    }
}

/// The error for input that ended while `frame` was still open. The
/// innermost open frame is reported, since that is the one left unclosed
/// most recently; outer ones are unclosed as a consequence.
fn unfinished(frame: Frame) -> ReadError {
    match frame {
        Frame::Seq { open, span, .. } => error(ReadErrorKind::Unclosed(open, closer(open)), span),
        Frame::Prefix { symbol, span } => error(
            ReadErrorKind::EndAfterPrefix(prefix_text(symbol).to_string()),
            span,
        ),
        Frame::Discard { span } => error(ReadErrorKind::EndAfterPrefix("#;".to_string()), span),
    }
}

fn prefix_text(symbol: &str) -> &'static str {
    match symbol {
        "quote" => "'",
        "quasiquote" => "`",
        "unquote" => ",",
        _ => ",@",
    }
}

fn error(kind: ReadErrorKind, span: Span) -> ReadError {
    ReadError { kind, span }
}

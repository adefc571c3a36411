//! The reader: source text in, [`Sexp`] data with [`Span`]s out.
//!
//! It knows text, spans and data, and nothing about evaluation. Errors are
//! [`ReadError`]s; [`ReadError::is_incomplete`] tells input that more lines
//! could finish (an open bracket) from input that is wrong.
//!
//! ```
//! use epsilon::reader::{read_all, FileId, SexpKind};
//! let data = read_all("(+ 1 2.5) :wrt", FileId(0)).unwrap();
//! assert_eq!(data.len(), 2);
//! assert!(matches!(data[1].kind, SexpKind::Keyword(ref k) if k == "wrt"));
//! assert_eq!((data[0].span.line, data[0].span.col), (1, 1));
//! ```

mod error;
mod lexer;
mod parser;
mod sexp;
mod span;

pub use error::{ReadError, ReadErrorKind};
pub use lexer::{Lexer, Token};
pub use parser::{MAX_NESTING, read_all, read_next};
pub use sexp::{Sexp, SexpKind};
pub use span::{FileId, Span};

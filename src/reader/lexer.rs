//! The lexer: turns text into tokens (brackets, quote marks, atoms), skipping
//! white space and comments, and tracking line and column for every token.

use super::error::{ReadError, ReadErrorKind};
use super::sexp::SexpKind;
use super::span::{FileId, Span};

/// One token of source text.
#[derive(Debug)]
pub enum Token {
    /// `(` or `[`.
    Open(char),
    /// `)` or `]`.
    Close(char),
    /// A prefix that wraps the next datum: `'` `` ` `` `,` `,@`, as the symbol
    /// it expands to (`quote`, `quasiquote`, `unquote`, `unquote-splicing`).
    Prefix(&'static str),
    /// `#;`: the next datum is a comment.
    DatumComment,
    /// A lone `.` inside a list.
    Dot,
    /// A complete atom: number, string, symbol, keyword or boolean.
    Atom(SexpKind),
}

/// Walks the text one token at a time.
pub struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    col: u32,
    file: FileId,
}

fn is_delimiter(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || matches!(
            byte,
            b'(' | b')' | b'[' | b']' | b'"' | b';' | b'\'' | b'`' | b','
        )
}

impl<'a> Lexer<'a> {
    /// A lexer over `text`, whose spans name `file`.
    pub fn new(text: &'a str, file: FileId) -> Self {
        Lexer {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            line: 1,
            col: 1,
            file,
        }
    }

    fn span_from(&self, start: usize, line: u32, col: u32) -> Span {
        Span {
            file: self.file,
            start: start as u32,
            len: (self.pos - start).max(1) as u32,
            line,
            col,
        }
    }

    fn here(&self) -> (usize, u32, u32) {
        (self.pos, self.line, self.col)
    }

    fn error(&self, kind: ReadErrorKind, at: (usize, u32, u32)) -> ReadError {
        ReadError {
            kind,
            span: self.span_from(at.0, at.1, at.2),
        }
    }

    /// Advances over one character, keeping line and column right.
    fn bump(&mut self) -> Option<char> {
        let ch = self.text[self.pos..].chars().next()?;
        self.pos += ch.len_utf8();
        if ch == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(ch)
    }

    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    /// Skips white space, line comments and (nested) block comments.
    fn skip_trivia(&mut self) -> Result<(), ReadError> {
        loop {
            match self.peek_byte(0) {
                Some(b) if b.is_ascii_whitespace() => {
                    self.bump();
                }
                Some(b';') => {
                    while let Some(b) = self.peek_byte(0) {
                        if b == b'\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                Some(b'#') if self.peek_byte(1) == Some(b'|') => self.skip_block_comment()?,
                Some(_) if self.text[self.pos..].starts_with(char::is_whitespace) => {
                    self.bump();
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), ReadError> {
        let start = self.here();
        self.bump();
        self.bump();
        let mut depth = 1usize;
        while depth > 0 {
            match (self.peek_byte(0), self.peek_byte(1)) {
                (Some(b'|'), Some(b'#')) => {
                    self.bump();
                    self.bump();
                    depth -= 1;
                }
                (Some(b'#'), Some(b'|')) => {
                    self.bump();
                    self.bump();
                    depth += 1;
                }
                (Some(_), _) => {
                    self.bump();
                }
                (None, _) => {
                    let mut err = self.error(ReadErrorKind::UnterminatedComment, start);
                    err.span.len = 2;
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// The next token and its span, or `None` at the end of the text.
    pub fn next_token(&mut self) -> Result<Option<(Token, Span)>, ReadError> {
        self.skip_trivia()?;
        let start = self.here();
        let Some(byte) = self.peek_byte(0) else {
            return Ok(None);
        };
        let token = match byte {
            b'(' | b'[' => {
                self.bump();
                Token::Open(byte as char)
            }
            b')' | b']' => {
                self.bump();
                Token::Close(byte as char)
            }
            b'\'' => {
                self.bump();
                Token::Prefix("quote")
            }
            b'`' => {
                self.bump();
                Token::Prefix("quasiquote")
            }
            b',' => {
                self.bump();
                if self.peek_byte(0) == Some(b'@') {
                    self.bump();
                    Token::Prefix("unquote-splicing")
                } else {
                    Token::Prefix("unquote")
                }
            }
            b'"' => Token::Atom(SexpKind::Str(self.read_string()?)),
            b'#' => self.read_hash()?,
            b'{' | b'}' => {
                self.bump();
                return Err(self.error(ReadErrorKind::UnexpectedChar(byte as char), start));
            }
            _ => {
                let text = self.read_word();
                if text == "." {
                    Token::Dot
                } else {
                    let kind = classify_word(text).map_err(|kind| self.error(kind, start))?;
                    Token::Atom(kind)
                }
            }
        };
        Ok(Some((token, self.span_from(start.0, start.1, start.2))))
    }

    fn read_word(&mut self) -> &'a str {
        let begin = self.pos;
        while let Some(b) = self.peek_byte(0) {
            if is_delimiter(b) {
                break;
            }
            if b >= 0x80 && self.text[self.pos..].starts_with(char::is_whitespace) {
                break;
            }
            self.bump();
        }
        &self.text[begin..self.pos]
    }

    fn read_hash(&mut self) -> Result<Token, ReadError> {
        let start = self.here();
        if self.peek_byte(1) == Some(b';') {
            self.bump();
            self.bump();
            return Ok(Token::DatumComment);
        }
        self.bump();
        let word = self.read_word();
        match word {
            "c" | "C" if self.peek_byte(0) == Some(b'(') => self.read_complex(start),
            "t" | "true" => Ok(Token::Atom(SexpKind::Bool(true))),
            "f" | "false" => Ok(Token::Atom(SexpKind::Bool(false))),
            other => Err(self.error(ReadErrorKind::BadHash(other.to_string()), start)),
        }
    }

    /// The rest of a complex literal `#c(re im)` after `#c`: two real
    /// numbers in parentheses (Common Lisp's syntax).
    fn read_complex(&mut self, start: (usize, u32, u32)) -> Result<Token, ReadError> {
        let bad = |lexer: &Self, text: String| lexer.error(ReadErrorKind::BadComplex(text), start);
        self.bump();
        let mut parts = [0.0f64; 2];
        for part in &mut parts {
            self.skip_trivia()?;
            let word = self.read_word();
            *part = match classify_word(word) {
                Ok(SexpKind::Int(n)) => n as f64,
                Ok(SexpKind::Float(x)) => x,
                _ => {
                    let text = format!(
                        "'{word}' in #c(...): the literal is #c(real imaginary), two numbers"
                    );
                    return Err(bad(self, text));
                }
            };
        }
        self.skip_trivia()?;
        if self.peek_byte(0) != Some(b')') {
            let text = "#c(...) takes two numbers and a closing parenthesis: #c(real imaginary)"
                .to_string();
            return Err(bad(self, text));
        }
        self.bump();
        Ok(Token::Atom(SexpKind::Complex(parts[0], parts[1])))
    }

    fn read_string(&mut self) -> Result<String, ReadError> {
        let start = self.here();
        self.bump();
        let mut out = String::new();
        loop {
            let Some(ch) = self.bump() else {
                let mut err = self.error(ReadErrorKind::UnterminatedString, start);
                err.span.len = 1;
                return Err(err);
            };
            match ch {
                '"' => return Ok(out),
                '\\' => {
                    let escape_at = (self.pos - 1, self.line, self.col - 1);
                    let Some(next) = self.bump() else {
                        let mut err = self.error(ReadErrorKind::UnterminatedString, start);
                        err.span.len = 1;
                        return Err(err);
                    };
                    match next {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        'u' => out.push(self.read_unicode_escape(escape_at)?),
                        other => {
                            return Err(
                                self.error(ReadErrorKind::BadEscape(other.to_string()), escape_at)
                            );
                        }
                    }
                }
                other => out.push(other),
            }
        }
    }

    /// Reads the `{hex}` part of a `\u{hex}` escape.
    fn read_unicode_escape(&mut self, escape_at: (usize, u32, u32)) -> Result<char, ReadError> {
        let bad = |lexer: &Self| {
            let seen = &lexer.text[escape_at.0 + 1..lexer.pos];
            lexer.error(ReadErrorKind::BadEscape(seen.to_string()), escape_at)
        };
        if self.peek_byte(0) != Some(b'{') {
            return Err(bad(self));
        }
        self.bump();
        let digits_start = self.pos;
        while matches!(self.peek_byte(0), Some(b) if b.is_ascii_hexdigit()) {
            self.bump();
        }
        let digits = &self.text[digits_start..self.pos];
        if self.peek_byte(0) != Some(b'}') || digits.is_empty() || digits.len() > 6 {
            return Err(bad(self));
        }
        self.bump();
        u32::from_str_radix(digits, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| bad(self))
    }
}

/// Decides what a bare word is: number, boolean, keyword, `nil` or symbol.
fn classify_word(word: &str) -> Result<SexpKind, ReadErrorKind> {
    match word {
        "true" => return Ok(SexpKind::Bool(true)),
        "false" => return Ok(SexpKind::Bool(false)),
        "nil" => return Ok(SexpKind::List(Vec::new(), None)),
        "inf" | "+inf" => return Ok(SexpKind::Float(f64::INFINITY)),
        "-inf" => return Ok(SexpKind::Float(f64::NEG_INFINITY)),
        "nan" | "+nan" | "-nan" => return Ok(SexpKind::Float(f64::NAN)),
        _ => {}
    }
    if let Some(name) = word.strip_prefix(':') {
        if name.is_empty() || name.starts_with(':') {
            return Err(ReadErrorKind::UnexpectedChar(':'));
        }
        return Ok(SexpKind::Keyword(name.to_string()));
    }
    if !looks_numeric(word) {
        return Ok(SexpKind::Symbol(word.to_string()));
    }
    parse_number(word)
}

/// True when a word must be a number: a digit first, or a sign or point
/// followed by a digit (`-7`, `.5`, `+.5`).
fn looks_numeric(word: &str) -> bool {
    let bytes = word.as_bytes();
    let digits_from = match bytes.first() {
        Some(b'+' | b'-') => 1,
        _ => 0,
    };
    match (bytes.get(digits_from), bytes.get(digits_from + 1)) {
        (Some(b), _) if b.is_ascii_digit() => true,
        (Some(b'.'), Some(b)) => b.is_ascii_digit(),
        _ => false,
    }
}

fn parse_number(word: &str) -> Result<SexpKind, ReadErrorKind> {
    let bad = || ReadErrorKind::BadNumber(word.to_string());
    let unsigned = word.strip_prefix(['+', '-']).unwrap_or(word);
    if unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return word
            .parse::<i64>()
            .map(SexpKind::Int)
            .map_err(|_| ReadErrorKind::IntegerOverflow(word.to_string()));
    }
    // Floats: digits, an optional fraction, an optional exponent, and nothing
    // else. Rust's parser accepts words such as "infinity", so check first.
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits_ok(whole) || !digits_ok(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return Err(bad());
    }
    if let Some(exponent) = exponent {
        let exponent_digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if exponent_digits.is_empty() || !digits_ok(exponent_digits) {
            return Err(bad());
        }
    }
    word.parse::<f64>().map(SexpKind::Float).map_err(|_| bad())
}

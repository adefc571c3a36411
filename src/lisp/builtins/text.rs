//! Strings, printed output, and lines of input (`read-line`).
//!
//! `display`, `print` and `println` write strings raw; `write` writes the
//! readable form the REPL echoes. `format` fills `{}` holes (and `{:.N}` for
//! N decimals) with the display forms of its arguments.

use super::builtin;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::printer::{display_string, format_float, write_string};
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::symbol::Symbol;
use crate::lisp::value::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// The display forms of `args` joined by `separator`; a string too long
/// for the memory the system grants is an error (`try_reserve`), never
/// an abort. Strings among `args` are read where they are, not copied.
fn joined(args: &[Value], separator: &str) -> EvalResult<String> {
    let shown: Vec<std::borrow::Cow<'_, str>> = args
        .iter()
        .map(|value| match value {
            Value::Str(text) => std::borrow::Cow::Borrowed(text.as_str()),
            other => std::borrow::Cow::Owned(display_string(other)),
        })
        .collect();
    let total = shown
        .iter()
        .map(|part| part.len())
        .chain(std::iter::repeat_n(
            separator.len(),
            shown.len().saturating_sub(1),
        ))
        .try_fold(0usize, usize::checked_add);
    let mut out = String::new();
    total
        .and_then(|total| out.try_reserve_exact(total).ok())
        .ok_or_else(|| {
            EvalError::range(format!(
                "a string of {} bytes is too large to allocate",
                total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string())
            ))
        })?;
    for (k, part) in shown.iter().enumerate() {
        if k > 0 {
            out.push_str(separator);
        }
        out.push_str(part);
    }
    Ok(out)
}

fn str_fn(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::string(joined(args, "")?))
}

/// Fills the `{}` and `{:.N}` holes of `template` with `args`.
pub fn format_template(template: &str, args: &[Value]) -> EvalResult<String> {
    let mut out = String::with_capacity(template.len());
    let mut remaining = args.iter();
    let mut chars = template.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut spec = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => spec.push(c),
                        None => return Err(EvalError::syntax("unclosed '{' in template")),
                    }
                }
                let value = remaining.next().ok_or_else(|| {
                    EvalError::syntax(format!(
                        "the template has more holes than the {} argument(s) given",
                        args.len()
                    ))
                })?;
                match (spec.as_str(), value) {
                    // A string in a plain hole is read where it is.
                    ("", Value::Str(text)) => push_checked(&mut out, text)?,
                    _ => push_checked(&mut out, &fill_hole(&spec, value)?)?,
                }
            }
            '}' => {
                return Err(EvalError::syntax(
                    "unmatched '}' in template (write }} for a brace)",
                ));
            }
            c => out.push(c),
        }
    }
    if remaining.next().is_some() {
        return Err(EvalError::syntax(format!(
            "{} argument(s) given but the template has fewer holes",
            args.len()
        )));
    }
    Ok(out)
}

/// Appends `piece`, with an error (not an abort) where the system does
/// not grant the memory.
fn push_checked(out: &mut String, piece: &str) -> EvalResult<()> {
    out.try_reserve(piece.len()).map_err(|_| {
        EvalError::range(format!(
            "a string of {} bytes is too large to allocate",
            out.len().saturating_add(piece.len())
        ))
    })?;
    out.push_str(piece);
    Ok(())
}

/// A parsed hole `{:[<>^][width][.digits][e]}`.
struct Hole {
    align: Option<char>,
    width: usize,
    digits: Option<usize>,
    exponent: bool,
}

impl Hole {
    fn parse(spec: &str) -> Option<Hole> {
        let mut rest = spec.strip_prefix(':')?;
        let align = rest.chars().next().filter(|c| matches!(c, '<' | '>' | '^'));
        if align.is_some() {
            rest = &rest[1..];
        }
        let exponent = rest.ends_with('e');
        if exponent {
            rest = &rest[..rest.len() - 1];
        }
        let (width, digits) = match rest.split_once('.') {
            Some((width, digits)) => (width, Some(digits.parse::<usize>().ok()?)),
            None => (rest, None),
        };
        let width = if width.is_empty() {
            0
        } else {
            width.parse::<usize>().ok()?
        };
        (width <= 200 && digits.is_none_or(|d| d <= 30)).then_some(Hole {
            align,
            width,
            digits,
            exponent,
        })
    }

    fn number(&self, x: f64) -> String {
        match (self.exponent, self.digits) {
            (true, Some(d)) => format!("{x:.d$e}"),
            (true, None) => format!("{x:e}"),
            (false, Some(d)) => format!("{x:.d$}"),
            (false, None) => display_string(&Value::Float(x)),
        }
    }

    fn pad(&self, text: String, numeric: bool) -> String {
        let len = text.chars().count();
        if len >= self.width {
            return text;
        }
        let fill = self.width - len;
        match self.align.unwrap_or(if numeric { '>' } else { '<' }) {
            '>' => format!("{}{text}", " ".repeat(fill)),
            '^' => format!(
                "{}{text}{}",
                " ".repeat(fill / 2),
                " ".repeat(fill - fill / 2)
            ),
            _ => format!("{text}{}", " ".repeat(fill)),
        }
    }
}

/// A tensor in brackets, one level a row as the printer writes it, each
/// number formatted by `number`.
fn nested(t: ndarray::ArrayViewD<'_, f64>, number: &dyn Fn(f64) -> String) -> String {
    match t.ndim() {
        0 => number(t.iter().next().copied().unwrap_or(f64::NAN)),
        _ => {
            let parts: Vec<String> = t
                .outer_iter()
                .map(|row| match row.ndim() {
                    0 => number(row.iter().next().copied().unwrap_or(f64::NAN)),
                    _ => nested(row, number),
                })
                .collect();
            format!("[{}]", parts.join(" "))
        }
    }
}

fn fill_hole(spec: &str, value: &Value) -> EvalResult<String> {
    if spec.is_empty() {
        return Ok(display_string(value));
    }
    let hole = Hole::parse(spec).ok_or_else(|| {
        EvalError::syntax(format!(
            "unknown hole {{{spec}}} (use {{}}, {{:.N}} for N decimals, {{:.Ne}} for scientific notation, {{:W}} or {{:>W.N}} for a width)"
        ))
    })?;
    let (text, numeric) = match value {
        Value::Int(n) if hole.digits.is_none() && !hole.exponent => (n.to_string(), true),
        Value::Int(_) | Value::Float(_) => (hole.number(value.as_f64()?), true),
        Value::Tensor(t) => (nested(t.view(), &|x| hole.number(x)), false),
        other => (display_string(other), false),
    };
    Ok(hole.pad(text, numeric))
}

fn format(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let template = args[0].as_str()?;
    format_template(template, &args[1..]).map(Value::string)
}

fn emit(interp: &mut Interp, text: &str) -> EvalResult<Value> {
    interp.write_output(text)?;
    Ok(Value::Void)
}

fn display(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    emit(interp, &display_string(&args[0]))
}

fn write(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    emit(interp, &write_string(&args[0]))
}

fn print(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    emit(interp, &joined(args, " ")?)
}

fn println(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut line = joined(args, " ")?;
    line.push('\n');
    emit(interp, &line)
}

fn read_line(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let prompt = match args.first() {
        Some(prompt) => display_string(prompt),
        None => String::new(),
    };
    Ok(match interp.read_line(&prompt)? {
        Some(line) => Value::string(line),
        None => Value::Bool(false),
    })
}

fn eprintln(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let line = joined(args, " ")?;
    interp.write_error_line(&line);
    Ok(Value::Void)
}

fn newline(interp: &mut Interp, _: &Args) -> EvalResult<Value> {
    emit(interp, "\n")
}

fn string_to_number(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let text = args[0].as_str()?.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Ok(Value::Int(n));
    }
    match crate::reader::read_all(text, crate::reader::FileId::NONE) {
        Ok(data) if data.len() == 1 => match &data[0].kind {
            crate::reader::SexpKind::Float(x) => Ok(Value::Float(*x)),
            crate::reader::SexpKind::Int(n) => Ok(Value::Int(*n)),
            crate::reader::SexpKind::Complex(re, im) => {
                Ok(Value::complex(Value::Float(*re), Value::Float(*im)))
            }
            _ => Ok(Value::Bool(false)),
        },
        _ => Ok(Value::Bool(false)),
    }
}

fn number_to_string(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Int(n) => Ok(Value::string(n.to_string())),
        Value::Float(x) => Ok(Value::string(format_float(*x))),
        other => Err(EvalError::type_error(format!(
            "expected a number, got {}",
            other.type_name()
        ))),
    }
}

fn symbol_to_string(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Symbol(s) | Value::Keyword(s) => Ok(Value::string(s.name())),
        other => Err(EvalError::type_error(format!(
            "expected a symbol, got {}",
            other.type_name()
        ))),
    }
}

fn string_to_symbol(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Symbol(Symbol::intern(args[0].as_str()?)))
}

fn string_length(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::Int(args[0].as_str()?.chars().count() as i64))
}

fn substring(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let chars: Vec<char> = args[0].as_str()?.chars().collect();
    let start = args[1].as_i64()?;
    let end = match args.get(2) {
        Some(end) => end.as_i64()?,
        None => chars.len() as i64,
    };
    if start < 0 || end < start || end as usize > chars.len() {
        return Err(EvalError::range(format!(
            "substring {start}..{end} is out of range for a string of {} characters",
            chars.len()
        )));
    }
    Ok(Value::string(
        chars[start as usize..end as usize]
            .iter()
            .collect::<String>(),
    ))
}

fn string_split(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let text = args[0].as_str()?;
    let parts: Vec<Value> = match args.get(1) {
        Some(separator) => text.split(separator.as_str()?).map(Value::string).collect(),
        None => text.split_whitespace().map(Value::string).collect(),
    };
    Ok(Value::list(parts))
}

fn string_join(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let separator = match args.get(1) {
        Some(s) => s.as_str()?.to_string(),
        None => String::new(),
    };
    let parts = args[0].list_to_vec()?;
    Ok(Value::string(joined(&parts, &separator)?))
}

static GENSYM_COUNTER: AtomicU64 = AtomicU64::new(0);

fn gensym(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let prefix = match args.first() {
        Some(p) => display_string(p),
        None => "g".to_string(),
    };
    let n = GENSYM_COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(Value::Symbol(Symbol::intern(&format!("{prefix}__{n}"))))
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("str", "(str x...)", "The display forms of the arguments concatenated into one string.", 0, None, str_fn),
    builtin("format", "(format template x...)", "The template with each {} replaced by the next argument: {:.3} gives three decimals, {:.3e} scientific notation, {:8} or {:>8.3} a width of 8 (numbers align right, other values left; < > ^ choose), {{ and }} braces.", 1, None, format),
    builtin("display", "(display x)", "Writes x to standard output, strings raw, without a newline.", 1, Some(1), display),
    builtin("write", "(write x)", "Writes the readable form of x (strings quoted), without a newline.", 1, Some(1), write),
    builtin("print", "(print x...)", "Writes the arguments separated by spaces, strings raw, without a newline.", 0, None, print),
    builtin("println", "(println x...)", "Writes the arguments separated by spaces, strings raw, then a newline.", 0, None, println),
    builtin("eprintln", "(eprintln x...)", "Like println, to standard error.", 0, None, eprintln),
    builtin("read-line", "(read-line [prompt])", "Reads one line of input after showing prompt: the line without its line end, or #f at the end of input. Reads standard input; in a notebook, the front end asks for the line.", 0, Some(1), read_line),
    builtin("newline", "(newline)", "Writes a newline.", 0, Some(0), newline),
    builtin("string->number", "(string->number s)", "The number written in s, or #f when s is not a number.", 1, Some(1), string_to_number),
    builtin("number->string", "(number->string x)", "The printed form of a number.", 1, Some(1), number_to_string),
    builtin("symbol->string", "(symbol->string s)", "The name of a symbol or keyword.", 1, Some(1), symbol_to_string),
    builtin("string->symbol", "(string->symbol s)", "The symbol named s.", 1, Some(1), string_to_symbol),
    builtin("string-length", "(string-length s)", "Number of characters in s.", 1, Some(1), string_length),
    builtin("substring", "(substring s start [end])", "Characters start (inclusive) to end (exclusive) of s.", 2, Some(3), substring),
    builtin("string-split", "(string-split s [separator])", "The pieces of s between separators (white space by default).", 1, Some(2), string_split),
    builtin("string-join", "(string-join lst [separator])", "The display forms of the elements joined with separator.", 1, Some(2), string_join),
    builtin("gensym", "(gensym [prefix])", "A fresh symbol, for macros that need a private name.", 0, Some(1), gensym),
];

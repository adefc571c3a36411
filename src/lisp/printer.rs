//! Printing values: the readable form (REPL echo, `write`) and the display
//! form (`display`, `println`: strings raw).
//!
//! Floats print as Rust's `{:?}` does (shortest round-trip digits, always a
//! point or an exponent), except that NaN prints `nan`. Tensors of up to
//! [`MAX_TENSOR_ELEMENTS`] elements print as re-readable nested brackets;
//! larger ones as a summary with a few values.

use super::procedure::Procedure;
use super::symbol::sym;
use super::value::Value;
use ndarray::ArrayD;
use std::fmt::Write;

/// Tensors with more elements than this print as a summary.
pub const MAX_TENSOR_ELEMENTS: usize = 100;

/// The readable form of a value (strings quoted and escaped).
pub fn write_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, true);
    out
}

/// The display form of a value (strings as their raw text).
pub fn display_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, false);
    out
}

/// A float as Epsilon prints it.
pub fn format_float(x: f64) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else {
        format!("{x:?}")
    }
}

fn write_value(out: &mut String, value: &Value, readable: bool) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match value {
        Value::Nil => out.push_str("()"),
        Value::Void => out.push_str("#<void>"),
        Value::Undefined => out.push_str("#<undefined>"),
        Value::FrameClosure(def) => {
            let name = def.name.map(|s| s.name()).unwrap_or("lambda");
            let _ = write!(out, "#<procedure {name}>");
        }
        Value::Bool(b) => out.push_str(if *b { "#t" } else { "#f" }),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(x) => out.push_str(&format_float(*x)),
        Value::Str(s) if readable => write_escaped(out, s),
        Value::Str(s) => out.push_str(s),
        Value::Symbol(s) => out.push_str(s.name()),
        Value::Keyword(k) => {
            out.push(':');
            out.push_str(k.name());
        }
        Value::Pair(pair) => {
            if matches!(pair.car, Value::Symbol(s) if s == sym::TENSOR_LITERAL)
                && pair.cdr.is_list()
            {
                write_sequence(out, &pair.cdr, '[', ']', readable);
            } else {
                write_sequence(out, value, '(', ')', readable);
            }
        }
        Value::Tensor(t) => write_tensor(out, t),
        Value::TensorF32(t) => write_tensor32(out, t),
        Value::Complex(z) => write_complex(out, &z.re, &z.im),
        Value::Traced(t) => match t.concrete_value() {
            Ok(Value::Tensor(t)) => write_tensor(out, &t),
            Ok(Value::TensorF32(t)) => write_tensor32(out, &t),
            Ok(other) => out.push_str(&other.to_string()),
            Err(e) => out.push_str(&format!("#<traced value: {}>", e.message)),
        },
        Value::Procedure(p) => {
            let kind = match &**p {
                Procedure::Builtin(_) => "builtin",
                _ => "procedure",
            };
            let _ = write!(out, "#<{kind} {}>", p.name());
        }
        Value::Macro(m) => {
            let name = m.def.name.map(|s| s.name()).unwrap_or("anonymous");
            let _ = write!(out, "#<macro {name}>");
        }
    })
}

/// A part of a complex value as its numbers (f64 or widened f32), its
/// shape, and whether it is f32; `None` when it cannot be computed.
fn complex_part(value: &Value) -> Option<(Vec<f64>, Vec<usize>, bool)> {
    let value = match value {
        Value::Traced(t) => t.concrete_value().ok()?,
        other => other.clone(),
    };
    match value {
        Value::Int(n) => Some((vec![n as f64], Vec::new(), false)),
        Value::Float(x) => Some((vec![x], Vec::new(), false)),
        Value::Tensor(t) => Some((t.iter().copied().collect(), t.shape().to_vec(), false)),
        Value::TensorF32(t) => Some((
            t.iter().map(|&x| f64::from(x)).collect(),
            t.shape().to_vec(),
            true,
        )),
        _ => None,
    }
}

/// `#c(1.0 2.0)`, a complex tensor as nested brackets of those (inside
/// `#<tensor c64 ...>` for f32 parts), or a summary when large.
fn write_complex(out: &mut String, re: &Value, im: &Value) {
    let (Some((re, shape, single)), Some((im, _, _))) = (complex_part(re), complex_part(im)) else {
        out.push_str("#<complex value that cannot be computed>");
        return;
    };
    let number = |r: f64, i: f64| match single {
        true => format!("#c({:?} {:?})", r as f32, i as f32).replace("NaN", "nan"),
        false => format!("#c({} {})", format_float(r), format_float(i)),
    };
    let numbers: Vec<String> = re.iter().zip(&im).map(|(&r, &i)| number(r, i)).collect();
    if shape.is_empty() && !single {
        out.push_str(numbers.first().map_or("#c(nan nan)", String::as_str));
        return;
    }
    let type_name = if single { "c64" } else { "c128" };
    if numbers.len() > MAX_TENSOR_ELEMENTS || shape.is_empty() {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let head: Vec<&str> = numbers.iter().take(3).map(String::as_str).collect();
        let tail: Vec<&str> = numbers
            .iter()
            .skip(numbers.len().saturating_sub(3).max(3))
            .map(String::as_str)
            .collect();
        let _ = write!(
            out,
            "#<tensor {type_name} [{}] {}",
            dims.join(" "),
            head.join(" ")
        );
        if !tail.is_empty() {
            let _ = write!(out, " ... {}", tail.join(" "));
        }
        out.push('>');
        return;
    }
    if single {
        out.push_str("#<tensor c64 ");
        write_nested_with(out, &shape, &numbers);
        out.push('>');
    } else {
        write_nested_with(out, &shape, &numbers);
    }
}

fn write_sequence(out: &mut String, list: &Value, open: char, close: char, readable: bool) {
    out.push(open);
    let mut iter = list.iter();
    let mut first = true;
    for (item, _) in iter.by_ref() {
        if !first {
            out.push(' ');
        }
        first = false;
        write_value(out, item, readable);
    }
    if !iter.rest().is_nil() {
        out.push_str(" . ");
        write_value(out, iter.rest(), readable);
    }
    out.push(close);
}

fn write_escaped(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_tensor(out: &mut String, tensor: &ArrayD<f64>) {
    if tensor.ndim() == 0 {
        let value = tensor.iter().next().copied().unwrap_or(f64::NAN);
        let _ = write!(out, "#<tensor f64 [] {}>", format_float(value));
        return;
    }
    if tensor.len() > MAX_TENSOR_ELEMENTS {
        write_summary(out, tensor);
        return;
    }
    let shape = tensor.shape();
    let values: Vec<f64> = tensor.iter().copied().collect();
    write_nested(out, shape, &values);
}

/// An f32 tensor: `#<tensor f32 [1.1 2.0]>`, each number in the shortest
/// form that reads back as the same f32.
fn write_tensor32(out: &mut String, tensor: &ArrayD<f32>) {
    let shape: Vec<String> = tensor.shape().iter().map(usize::to_string).collect();
    let text = |x: f32| match x.is_nan() {
        true => "nan".to_string(),
        false => format!("{x:?}"),
    };
    if tensor.len() > MAX_TENSOR_ELEMENTS || tensor.ndim() == 0 {
        let count = tensor.len();
        let head: Vec<String> = tensor.iter().take(3).map(|&x| text(x)).collect();
        let tail: Vec<String> = tensor
            .iter()
            .skip(count.saturating_sub(3).max(3))
            .map(|&x| text(x))
            .collect();
        let _ = write!(out, "#<tensor f32 [{}] {}", shape.join(" "), head.join(" "));
        if !tail.is_empty() {
            let _ = write!(out, " ... {}", tail.join(" "));
        }
        out.push('>');
        return;
    }
    out.push_str("#<tensor f32 ");
    let values: Vec<String> = tensor.iter().map(|&x| text(x)).collect();
    write_nested_with(out, tensor.shape(), &values);
    out.push('>');
}

/// Writes `values` (row-major, of `shape`) as nested brackets.
fn write_nested(out: &mut String, shape: &[usize], values: &[f64]) {
    let values: Vec<String> = values.iter().map(|&x| format_float(x)).collect();
    write_nested_with(out, shape, &values);
}

/// Writes formatted `values` (row-major, of `shape`) as nested brackets.
fn write_nested_with(out: &mut String, shape: &[usize], values: &[String]) {
    out.push('[');
    match shape {
        [] => {}
        [_] => {
            for (position, value) in values.iter().enumerate() {
                if position > 0 {
                    out.push(' ');
                }
                out.push_str(value);
            }
        }
        [rows, inner @ ..] => {
            let stride: usize = inner.iter().product();
            for row in 0..*rows {
                if row > 0 {
                    out.push(' ');
                }
                let chunk = values.get(row * stride..(row + 1) * stride).unwrap_or(&[]);
                write_nested_with(out, inner, chunk);
            }
        }
    }
    out.push(']');
}

fn write_summary(out: &mut String, tensor: &ArrayD<f64>) {
    let shape: Vec<String> = tensor.shape().iter().map(usize::to_string).collect();
    let _ = write!(out, "#<tensor f64 [{}]", shape.join(" "));
    let count = tensor.len();
    let head: Vec<String> = tensor.iter().take(3).map(|x| format_float(*x)).collect();
    let tail: Vec<String> = tensor
        .iter()
        .skip(count.saturating_sub(3))
        .map(|x| format_float(*x))
        .collect();
    let _ = write!(out, " {} ... {}>", head.join(" "), tail.join(" "));
}

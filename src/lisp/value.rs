//! Run-time values: numbers, strings, symbols, lists, tensors, procedures.
//!
//! Lists are immutable cons cells shared through `Rc`; each cell remembers the
//! source span of its element so the evaluator can point at code it reads.
//! Tensors are `ndarray::ArrayD<f64>` behind an `Rc`; operations make new
//! arrays rather than mutating shared ones.

use super::error::{EvalError, EvalResult};
use super::procedure::{Closure, Procedure};
use super::symbol::Symbol;
use crate::reader::Span;
use ndarray::ArrayD;
use std::rc::Rc;

/// A value of the Epsilon language.
///
/// Values convert from and to Rust types:
///
/// ```
/// use epsilon::Value;
/// use ndarray::{arr1, ArrayD};
/// let x: Value = 2.5.into();
/// assert_eq!(f64::try_from(x).unwrap(), 2.5);
/// let list: Value = vec![1i64, 2, 3].into();
/// assert_eq!(list.to_string(), "(1 2 3)");
/// let items: Vec<Value> = list.try_into().unwrap();
/// assert_eq!(items.len(), 3);
/// let t: Value = arr1(&[1.0, 2.0]).into_dyn().into();
/// assert_eq!(t.to_string(), "[1.0 2.0]");
/// let back: ArrayD<f64> = t.try_into().unwrap();
/// assert_eq!(back.shape(), &[2]);
/// assert!(i64::try_from(Value::string("no")).is_err());
/// ```
#[derive(Clone, Default)]
pub enum Value {
    /// The empty list `()`, also written `nil`. False in conditions.
    #[default]
    Nil,
    /// The value of forms evaluated for effect (`define`, `println`); the REPL
    /// does not echo it.
    Void,
    /// `#t` or `#f`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// An immutable string.
    Str(Rc<String>),
    /// A symbol.
    Symbol(Symbol),
    /// A keyword such as `:axis` (stored without the colon).
    Keyword(Symbol),
    /// A cons cell; lists are chains of these ending in `Nil`.
    Pair(Rc<Pair>),
    /// An n-dimensional array of f64.
    Tensor(Rc<ArrayD<f64>>),
    /// An n-dimensional array of f32 (`astype`, `:dtype 'f32`). Built-ins
    /// without an f32 kernel read it widened (`as_tensor`) and their
    /// results are rounded back (`builtins::dtype`).
    TensorF32(Rc<ArrayD<f32>>),
    /// A number or tensor inside a function being differentiated or
    /// compiled: a node of the active trace (see `lisp::trace`).
    Traced(Rc<super::trace::Traced>),
    /// A complex number or tensor, held as its real and imaginary parts
    /// (see `lisp::complex`).
    Complex(Rc<Complex>),
    /// Something that can be called.
    Procedure(Rc<Procedure>),
    /// A macro: a closure called on unevaluated forms at analysis time.
    Macro(Rc<Closure>),
    /// Marks a variable that is declared but not yet given a value.
    #[doc(hidden)]
    Undefined,
    /// Inside a frame slot only: a closure over that very frame, kept as its
    /// code so that frame and closure do not own each other (a reference
    /// cycle `Rc` could never free). Reading the slot rebuilds the closure.
    #[doc(hidden)]
    FrameClosure(Rc<super::node::LambdaDef>),
}

/// A complex number or tensor: two real values of one shape (numbers,
/// tensors of one type, or traced values). Its type is `'c128` when the
/// parts are f64 (or numbers), `'c64` when they are f32.
#[derive(Clone)]
pub struct Complex {
    /// The real part.
    pub re: Value,
    /// The imaginary part.
    pub im: Value,
}

/// A cons cell.
pub struct Pair {
    /// The element.
    pub car: Value,
    /// The rest of the list.
    pub cdr: Value,
    /// Where the element (`car`) was read, or `Span::NONE`.
    pub span: Span,
}

/// Long or deeply nested lists would otherwise be dropped recursively, one
/// Rust frame per cell; this unlinks uniquely owned cells iteratively.
impl Drop for Pair {
    fn drop(&mut self) {
        super::memory::note_dropped();
        let mut pending: Vec<Rc<Pair>> = Vec::new();
        let push = |value: Value, pending: &mut Vec<Rc<Pair>>| {
            if let Value::Pair(cell) = value
                && Rc::strong_count(&cell) == 1
            {
                pending.push(cell);
            }
        };
        push(std::mem::take(&mut self.car), &mut pending);
        push(std::mem::take(&mut self.cdr), &mut pending);
        while let Some(cell) = pending.pop() {
            if let Ok(mut pair) = Rc::try_unwrap(cell) {
                push(std::mem::take(&mut pair.car), &mut pending);
                push(std::mem::take(&mut pair.cdr), &mut pending);
            }
        }
    }
}

impl Value {
    /// A new cons cell.
    pub fn cons(car: Value, cdr: Value) -> Value {
        super::memory::note_made();
        Value::Pair(Rc::new(Pair {
            car,
            cdr,
            span: Span::NONE,
        }))
    }

    /// A new cons cell whose element was read at `span`.
    pub fn cons_at(car: Value, cdr: Value, span: Span) -> Value {
        super::memory::note_made();
        Value::Pair(Rc::new(Pair { car, cdr, span }))
    }

    /// A proper list of `items`.
    pub fn list(items: impl IntoIterator<Item = Value, IntoIter: DoubleEndedIterator>) -> Value {
        Self::list_with_tail(items, Value::Nil)
    }

    /// A list of `items` ending in `tail` instead of `()`.
    pub fn list_with_tail(
        items: impl IntoIterator<Item = Value, IntoIter: DoubleEndedIterator>,
        tail: Value,
    ) -> Value {
        items
            .into_iter()
            .rev()
            .fold(tail, |rest, item| Value::cons(item, rest))
    }

    /// A string value.
    pub fn string(text: impl Into<String>) -> Value {
        Value::Str(Rc::new(text.into()))
    }

    /// A symbol value named `name`.
    pub fn symbol(name: &str) -> Value {
        Value::Symbol(Symbol::intern(name))
    }

    /// The complex value `re + i im` (parts of one shape, not checked).
    pub fn complex(re: Value, im: Value) -> Value {
        Value::Complex(Rc::new(Complex { re, im }))
    }

    /// A tensor value.
    pub fn tensor(array: ArrayD<f64>) -> Value {
        Value::Tensor(Rc::new(array))
    }

    /// False only for `#f` and `()`.
    pub fn is_truthy(&self) -> bool {
        !matches!(self, Value::Bool(false) | Value::Nil)
    }

    /// True for `()`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// True for `()` and for chains of pairs ending in `()`.
    pub fn is_list(&self) -> bool {
        let mut current = self;
        loop {
            match current {
                Value::Nil => return true,
                Value::Pair(pair) => current = &pair.cdr,
                _ => return false,
            }
        }
    }

    /// The name of the value's type, for error messages and `type-of`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "list",
            Value::Void => "void",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Symbol(_) => "symbol",
            Value::Keyword(_) => "keyword",
            Value::Pair(_) => "list",
            Value::Tensor(_) | Value::TensorF32(_) => "tensor",
            // Code inside a differentiated function sees the types it
            // would see outside.
            Value::Traced(t) if t.is_scalar() => "float",
            Value::Traced(_) => "tensor",
            Value::Complex(z) => match z.re.type_name() {
                "float" | "integer" => "complex",
                _ => "tensor",
            },
            Value::Procedure(_) | Value::FrameClosure(_) => "procedure",
            Value::Macro(_) => "macro",
            Value::Undefined => "undefined",
        }
    }

    /// Iterates over the elements of a list, with the span each was read at.
    /// Stops at the first non-pair; use [`Value::list_to_vec`] to reject
    /// improper lists.
    pub fn iter(&self) -> ListIter<'_> {
        ListIter { current: self }
    }

    /// The elements of a proper list.
    pub fn list_to_vec(&self) -> EvalResult<Vec<Value>> {
        let mut items = Vec::new();
        let mut current = self;
        loop {
            match current {
                Value::Nil => return Ok(items),
                Value::Pair(pair) => {
                    items.push(pair.car.clone());
                    current = &pair.cdr;
                }
                other => {
                    return Err(EvalError::type_error(format!(
                        "expected a proper list, found one ending in {}",
                        other.type_name()
                    )));
                }
            }
        }
    }

    /// The value as a float (integers convert).
    pub fn as_f64(&self) -> EvalResult<f64> {
        match self {
            Value::Int(n) => Ok(*n as f64),
            Value::Float(x) => Ok(*x),
            Value::Tensor(t) if t.len() == 1 => Ok(t.iter().next().copied().unwrap_or(0.0)),
            Value::TensorF32(t) if t.len() == 1 => {
                Ok(t.iter().next().copied().map_or(0.0, f64::from))
            }
            other => Err(EvalError::type_error(format!(
                "expected a number, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The value as an integer (floats with an integral value convert).
    pub fn as_i64(&self) -> EvalResult<i64> {
        match self {
            Value::Int(n) => Ok(*n),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 => {
                Ok(*x as i64)
            }
            Value::Traced(_) => Err(EvalError::type_error(
                "expected an integer, got a traced number (a value being differentiated, or the index of a scan step, cannot be used as an integer)",
            )),
            other => Err(EvalError::type_error(format!(
                "expected an integer, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The value as a string slice.
    pub fn as_str(&self) -> EvalResult<&str> {
        match self {
            Value::Str(s) => Ok(s.as_str()),
            other => Err(EvalError::type_error(format!(
                "expected a string, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The value as a symbol.
    pub fn as_symbol(&self) -> EvalResult<Symbol> {
        match self {
            Value::Symbol(s) => Ok(*s),
            other => Err(EvalError::type_error(format!(
                "expected a symbol, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The value as a tensor; numbers become 0-dimensional tensors and f32
    /// tensors are widened (exactly).
    pub fn as_tensor(&self) -> EvalResult<Rc<ArrayD<f64>>> {
        match self {
            Value::Tensor(t) => Ok(Rc::clone(t)),
            Value::TensorF32(t) => Ok(Rc::new(crate::dtype::widen(t))),
            Value::Int(_) | Value::Float(_) => Ok(Rc::new(ArrayD::from_elem(
                ndarray::IxDyn(&[]),
                self.as_f64()?,
            ))),
            Value::Traced(_) => Err(EvalError::type_error(format!(
                "expected a concrete tensor, got the traced {} {} (a value being differentiated or compiled)",
                self.type_name(),
                self.short()
            ))),
            other => Err(EvalError::type_error(format!(
                "expected a tensor, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The printed form, cut to about 60 characters, for error messages.
    pub fn short(&self) -> String {
        let text = super::printer::write_string(self);
        match text.char_indices().nth(60) {
            Some((at, _)) => format!("{}...", &text[..at]),
            None => text,
        }
    }
}

/// Iterator over list elements with their spans.
pub struct ListIter<'a> {
    current: &'a Value,
}

impl<'a> Iterator for ListIter<'a> {
    type Item = (&'a Value, Span);

    fn next(&mut self) -> Option<Self::Item> {
        match self.current {
            Value::Pair(pair) => {
                self.current = &pair.cdr;
                Some((&pair.car, pair.span))
            }
            _ => None,
        }
    }
}

impl<'a> ListIter<'a> {
    /// What is left: `()` after a proper list, the tail of an improper one.
    pub fn rest(&self) -> &'a Value {
        self.current
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::Float(x)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<i32> for Value {
    fn from(n: i32) -> Self {
        Value::Int(n.into())
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Self {
        Value::Int(n as i64)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::string(s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::string(s)
    }
}

impl From<ArrayD<f64>> for Value {
    fn from(array: ArrayD<f64>) -> Self {
        Value::tensor(array)
    }
}

impl From<ArrayD<f32>> for Value {
    fn from(array: ArrayD<f32>) -> Self {
        Value::TensorF32(Rc::new(array))
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Self {
        Value::list(items.into_iter().map(Into::into))
    }
}

impl TryFrom<Value> for f64 {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<f64> {
        value.as_f64()
    }
}

impl TryFrom<Value> for i64 {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<i64> {
        value.as_i64()
    }
}

impl TryFrom<Value> for bool {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<bool> {
        match value {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::type_error(format!(
                "expected a boolean, got {}",
                other.type_name()
            ))),
        }
    }
}

impl TryFrom<Value> for String {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<String> {
        value.as_str().map(str::to_string)
    }
}

impl TryFrom<Value> for ArrayD<f64> {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<ArrayD<f64>> {
        let tensor = value.as_tensor()?;
        Ok(Rc::try_unwrap(tensor).unwrap_or_else(|shared| (*shared).clone()))
    }
}

impl TryFrom<Value> for Vec<Value> {
    type Error = EvalError;
    fn try_from(value: Value) -> EvalResult<Vec<Value>> {
        value.list_to_vec()
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::printer::write_string(self))
    }
}

impl std::fmt::Display for Value {
    /// The readable form, as the REPL echoes it (strings quoted).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::printer::write_string(self))
    }
}

//! Number types at the Lisp level: `dtype`, `astype`,
//! `set-default-dtype!`, the `:dtype` option of the constructors, and the
//! rule that lets every numeric built-in take f32 tensors.
//!
//! That rule (`Conversion`): a numeric built-in without an f32 kernel of
//! its own reads its f32 arguments widened to f64 (exactly), computes in
//! f64, and its tensor results are rounded to f32 when its arguments
//! promote to f32 (NumPy's promotion: f32 with numbers stays f32, f32 with
//! f64 gives f64). An f32 operation so gives the f64 result rounded once:
//! exactly IEEE single precision for `+ - * /` and `sqrt`
//! (`crate::dtype`), and within half an f32 unit of the exact result for
//! the other functions. Built-ins over lists, text and procedures pass
//! f32 tensors through as they are.

use super::{builtin, with_options};
use crate::dtype::DType;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::trace::value_dtype;
use crate::lisp::value::Value;
use rustc_hash::FxHashSet;
use std::rc::Rc;
use std::sync::OnceLock;

/// Elements of list arguments looked at for f32 tensors, at most (a call
/// on a long list of numbers is not slowed down by the look).
const MAX_LOOKED_AT: usize = 4096;

/// The number type a Lisp name denotes (`'f32`, `'f64`, `"float32"`).
pub fn dtype_named(value: &Value) -> EvalResult<DType> {
    let name = match value {
        Value::Symbol(s) => s.name().to_string(),
        Value::Str(s) => s.to_string(),
        other => {
            return Err(EvalError::type_error(format!(
                "a number type is 'f32 or 'f64, not {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    DType::from_name(&name).ok_or_else(|| {
        EvalError::type_error(format!(
            "unknown number type {name} (the types are 'f32 and 'f64, and 'c64 and 'c128 for astype)"
        ))
    })
}

/// `value` with its tensors converted to `dtype` (lists followed; numbers,
/// which are weak, unchanged).
pub fn converted(value: &Value, dtype: DType) -> Value {
    match (value, dtype) {
        (Value::Tensor(t), DType::F32) => Value::TensorF32(Rc::new(crate::dtype::narrow(t))),
        (Value::TensorF32(t), DType::F64 | DType::Weak) => {
            Value::Tensor(Rc::new(crate::dtype::widen(t)))
        }
        (Value::Pair(_), _) => match value.list_to_vec() {
            Ok(items) => crate::lisp::autodiff::tree::with_stack(|| {
                Value::list(items.iter().map(|item| converted(item, dtype)))
            }),
            Err(_) => value.clone(),
        },
        _ => value.clone(),
    }
}

/// `converted`, each tensor's copy probed just before it is made (while
/// the copies made before it are held): an error where its allocation
/// would fail.
pub fn converted_checked(value: &Value, dtype: DType) -> EvalResult<Value> {
    converted_within(value, dtype, 0)
}

fn converted_within(value: &Value, dtype: DType, depth: usize) -> EvalResult<Value> {
    use crate::lisp::tensor::check_allocation_of;
    match (value, dtype) {
        (Value::Tensor(t), DType::F32) => {
            check_allocation_of(t.shape(), 4)?;
            Ok(converted(value, dtype))
        }
        (Value::TensorF32(t), DType::F64 | DType::Weak) => {
            check_allocation_of(t.shape(), 8)?;
            Ok(converted(value, dtype))
        }
        (Value::Pair(_), _) => {
            use crate::lisp::autodiff::tree::{MAX_TREE_DEPTH, too_deep, with_stack};
            if depth >= MAX_TREE_DEPTH {
                return Err(too_deep("the values converted"));
            }
            let Ok(items) = value.list_to_vec() else {
                return Ok(value.clone());
            };
            let items = with_stack(|| {
                items
                    .iter()
                    .map(|item| converted_within(item, dtype, depth + 1))
                    .collect::<EvalResult<Vec<_>>>()
            })?;
            Ok(Value::list(items))
        }
        _ => Ok(value.clone()),
    }
}

/// A number as a value of `dtype`: rounded for f32 (numbers carry no type
/// of their own; a 0-dimensional f32 value is a number). Other values as
/// `converted` makes them.
pub fn converted_number(value: &Value, dtype: DType) -> Value {
    match value {
        Value::Float(x) => Value::Float(dtype.round(*x)),
        Value::Int(n) => Value::Float(dtype.round(*n as f64)),
        other => converted(other, dtype),
    }
}

/// The type `values` promote to, looking into lists (up to
/// `MAX_LOOKED_AT` elements): weak when they hold no tensor.
fn promoted(values: &[Value]) -> DType {
    let mut budget = MAX_LOOKED_AT;
    let mut dtype = DType::Weak;
    let mut pending: Vec<&Value> = values.iter().rev().collect();
    while let Some(value) = pending.pop() {
        if budget == 0 || dtype == DType::F64 {
            break;
        }
        budget -= 1;
        match value {
            Value::Pair(pair) => {
                pending.push(&pair.cdr);
                pending.push(&pair.car);
            }
            other => dtype = dtype.promote(value_dtype(other)),
        }
    }
    dtype
}

/// Whether `values` hold an f32 tensor (looking into lists).
fn holds_f32(values: &[Value]) -> bool {
    let mut budget = MAX_LOOKED_AT;
    let mut pending: Vec<&Value> = values.iter().collect();
    while let Some(value) = pending.pop() {
        if budget == 0 {
            return false;
        }
        budget -= 1;
        match value {
            Value::TensorF32(_) => return true,
            Value::Pair(pair) => {
                pending.push(&pair.cdr);
                pending.push(&pair.car);
            }
            _ => {}
        }
    }
    false
}

/// Whether `name` is a built-in that computes on numbers (f32 tensors are
/// read widened; complex values go through `lisp::complex`).
pub(crate) fn is_numeric(name: &str) -> bool {
    numeric(name) || handles_f32(name)
}

/// The built-ins that compute on numbers: they read f32 tensors widened.
fn numeric(name: &str) -> bool {
    static NAMES: OnceLock<FxHashSet<&'static str>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let tables: &[&[Builtin]] = &[
                super::numeric::BUILTINS,
                super::elementwise::BUILTINS,
                super::tensor_make::BUILTINS,
                super::tensor_ops::BUILTINS,
                super::indexing::BUILTINS,
                super::arrays::BUILTINS,
                super::linalg::BUILTINS,
                super::reduce::BUILTINS,
                super::sort::BUILTINS,
                super::norms::BUILTINS,
                super::einsum::BUILTINS,
                super::special::BUILTINS,
                super::data::BUILTINS,
                super::plot::BUILTINS,
                super::optim::BUILTINS,
            ];
            let comparisons = [
                "=",
                "/=",
                "<",
                ">",
                "<=",
                ">=",
                "not",
                "zero?",
                "positive?",
                "negative?",
            ];
            tables
                .iter()
                .flat_map(|t| t.iter().map(|b| b.name))
                .chain(comparisons)
                .collect()
        })
        .contains(name)
        && !handles_f32(name)
}

/// Numeric built-ins that take f32 tensors themselves (`save-npy` writes
/// them as float32).
fn handles_f32(name: &str) -> bool {
    matches!(name, "adam-update" | "save-npy")
}

/// Built-ins whose tensor results are positions, not values: never
/// rounded to f32.
fn gives_positions(name: &str) -> bool {
    matches!(name, "argmax" | "argmin" | "permutation")
}

/// The arguments of a built-in that are positions (indices), which do not
/// take part in promotion (an f64 index tensor does not make an f32
/// gather f64).
fn positions_at(name: &str, k: usize) -> bool {
    matches!(
        (name, k),
        ("gather" | "scatter-add" | "index-set" | "take-along", 1) | ("where", 0)
    )
}

/// The constructors, which make tensors of the default type (and take
/// `:dtype`).
fn constructs(name: &str) -> bool {
    matches!(
        name,
        "tensor" | "zeros" | "ones" | "full" | "eye" | "linspace" | "arange" | "rand" | "randn"
    )
}

/// How a built-in call treats number types: what its arguments become
/// and what its result is converted to.
pub struct Conversion {
    /// The arguments, widened (`None`: as given).
    pub widened: Option<Vec<Value>>,
    /// The type tensor results are converted to (`None`: as computed).
    pub result: Option<DType>,
}

impl Conversion {
    /// What a call of `builtin` on `args` (with `explicit`, the value of
    /// its `:dtype` option, if given) does with number types.
    pub fn of(
        interp: &Interp,
        builtin: &Builtin,
        args: &Args,
        explicit: Option<DType>,
    ) -> EvalResult<Conversion> {
        let default = interp.numeric.default_dtype;
        // Only numeric built-ins look for f32 tensors (a list built-in on
        // a long list is not slowed down).
        let numeric = numeric(builtin.name);
        let has_f32 = numeric && holds_f32(args.values);
        let widening = has_f32 && !args.values.iter().any(|a| matches!(a, Value::Procedure(_)));
        let promotes_to = match widening {
            true => {
                let values: Vec<Value> = args
                    .values
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| !positions_at(builtin.name, k))
                    .map(|(_, v)| v.clone())
                    .collect();
                promoted(&values)
            }
            false => DType::Weak,
        };
        // Numbers meeting f32 tensors are f32 numbers (NumPy's weak
        // scalars): `(* x 0.1)` multiplies by 0.1 rounded to f32.
        let widened = match widening {
            true => Some(
                args.values
                    .iter()
                    .map(|v| match v {
                        Value::Float(x) if promotes_to == DType::F32 => {
                            Ok(Value::Float(crate::dtype::round32(*x)))
                        }
                        other => converted_checked(other, DType::F64),
                    })
                    .collect::<EvalResult<Vec<_>>>()?,
            ),
            false => None,
        };
        let result = match explicit {
            Some(dtype) => Some(dtype),
            None if widening && !gives_positions(builtin.name) => {
                (promotes_to == DType::F32).then_some(DType::F32)
            }
            None if constructs(builtin.name) && default == DType::F32 && !has_f32 => {
                Some(DType::F32)
            }
            None => None,
        };
        Ok(Conversion { widened, result })
    }

    /// Whether the call goes on as if number types did not exist.
    pub fn is_plain(&self) -> bool {
        self.widened.is_none() && self.result.is_none()
    }
}

/// The `:dtype` option's type, for the built-ins that take it.
pub fn explicit_dtype(builtin: &Builtin, args: &Args) -> EvalResult<Option<DType>> {
    match args.option("dtype") {
        Some(value) if builtin.options.contains(&"dtype") => dtype_named(value).map(Some),
        _ => Ok(None),
    }
}

fn dtype_of(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    match &args[0] {
        Value::Tensor(_) | Value::TensorF32(_) | Value::Traced(_) => {
            Ok(Value::symbol(value_dtype(&args[0]).strong().name()))
        }
        Value::Int(_) | Value::Float(_) => Ok(Value::symbol("f64")),
        other => Err(EvalError::type_error(format!(
            "dtype: expected a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn astype(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    // A complex type: the value as the real part, of the parts' type.
    let complex_parts = match &args[1] {
        Value::Symbol(s) => complex_part_type(s.name()),
        Value::Str(s) => complex_part_type(s),
        _ => None,
    };
    if let Some(parts) = complex_parts {
        let re = astype_value(&args[0], parts, 0)?;
        let span = interp.call_span;
        let mut lower = crate::lisp::complex::Lower { interp, span };
        return lower.value(re, None);
    }
    astype_value(&args[0], dtype_named(&args[1])?, 0)
}

/// The type of the parts of the complex type `name` (`c64`: f32 parts).
fn complex_part_type(name: &str) -> Option<DType> {
    match name {
        "c64" | "complex64" => Some(DType::F32),
        "c128" | "complex128" => Some(DType::F64),
        _ => None,
    }
}

/// `value` (a number, tensor, traced value or list of them, `depth` lists
/// down) as `dtype`.
fn astype_value(value: &Value, dtype: DType, depth: usize) -> EvalResult<Value> {
    use crate::lisp::autodiff::tree::{MAX_TREE_DEPTH, too_deep, with_stack};
    match value {
        Value::Traced(t) => {
            let trace = Rc::clone(&t.trace);
            let id = crate::lisp::trace::node_of(&trace, value)?;
            let id = trace.borrow_mut().graph.cast(id, dtype);
            Ok(crate::lisp::trace::traced(&trace, id))
        }
        Value::Tensor(_) | Value::TensorF32(_) => converted_checked(value, dtype),
        Value::Int(_) | Value::Float(_) => Ok(Value::Float(dtype.round(value.as_f64()?))),
        // A tree of parameters: each leaf converted.
        Value::Pair(_) | Value::Nil => {
            if depth >= MAX_TREE_DEPTH {
                return Err(too_deep("astype's argument"));
            }
            let converted = with_stack(|| {
                value
                    .list_to_vec()?
                    .iter()
                    .map(|item| astype_value(item, dtype, depth + 1))
                    .collect::<EvalResult<Vec<_>>>()
            })?;
            Ok(Value::list(converted))
        }
        other => Err(EvalError::type_error(format!(
            "astype: expected a number, tensor or list of them, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn set_default_dtype(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    interp.numeric.default_dtype = dtype_named(&args[0])?;
    Ok(Value::Void)
}

fn default_dtype(interp: &mut Interp, _: &Args) -> EvalResult<Value> {
    Ok(Value::symbol(interp.numeric.default_dtype.name()))
}

/// The built-ins of this module.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("dtype", "(dtype t)", "The number type of a tensor: 'f32 or 'f64 (a number is 'f64; inside a traced function, the type the value will have). An f32 result with no axes is returned as a number, like an f64 one.", 1, Some(1), dtype_of),
    builtin("astype", "(astype t type)", "t converted to the number type 'f32 or 'f64 (a list of tensors leaf by leaf; a number rounded to the type). Differentiable: the gradient is converted back. Operations mixing types follow NumPy: f32 with numbers stays f32, f32 with f64 gives f64.", 2, Some(2), astype),
    builtin("set-default-dtype!", "(set-default-dtype! type)", "Makes 'f32 or 'f64 the type of the tensors the constructors make (tensor, zeros, ones, full, eye, linspace, arange, rand, randn); f64 at start. Bracket literals [1 2] stay f64, as np.array([1.0, 2.0]) does; a literal of f32 tensors is f32. Derivatives checked with check-grad stay in f64.", 1, Some(1), set_default_dtype),
    builtin("default-dtype", "(default-dtype)", "The type the constructors make: 'f64 unless set-default-dtype! changed it.", 0, Some(0), default_dtype),
];

/// Marks the constructors as taking `:dtype` (with their other options).
pub const fn with_dtype(builtin: Builtin) -> Builtin {
    with_options(builtin, &["dtype"])
}

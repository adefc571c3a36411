//! What each numeric built-in does with complex operands: one rule per
//! built-in (`RULES`), the elementwise table's complex formulas for the
//! functions of that table, and a refusal for the rest.

use super::{Lower, Parts, shape_of};
use super::{formula, linalg};
use crate::ir::math::elementwise::row_named;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::procedure::Builtin;
use crate::lisp::value::Value;

/// A built-in call split into its positional arguments and its keyword
/// options (kept as written: keyword, value, ...).
pub(crate) struct Call<'a> {
    pub name: &'static str,
    pub positional: &'a [Value],
    pub options: &'a [Value],
}

/// How a built-in treats complex operands.
enum Rule {
    /// Linear in the positional arguments at these positions (the others,
    /// indices or masks, given to both parts as they are): applied to the
    /// real parts and to the imaginary parts.
    Linear(&'static [usize]),
    /// Linear in every positional argument.
    LinearAll,
    /// Linear in the elements of the list that is its first argument
    /// (`concat`, `stack`).
    LinearList,
    /// A question about the shape: asked of the real part.
    Shape,
    /// Linear in each positional argument from this one on (a product):
    /// expanded into products of parts.
    Product(usize),
    /// Written out in `arithmetic`.
    Special(fn(&mut Lower, &Call) -> EvalResult<Value>),
}

/// The rules by built-in name (the elementwise table's functions come
/// from the table's `complex` column).
const RULES: &[(&str, Rule)] = &[
    ("+", Rule::Special(add)),
    ("-", Rule::Special(sub)),
    ("*", Rule::Special(mul)),
    ("/", Rule::Special(div)),
    ("pow", Rule::Special(pow)),
    ("neg", Rule::LinearAll),
    ("abs", Rule::Special(abs)),
    ("sign", Rule::Special(sign)),
    ("log2", Rule::Special(log2)),
    ("log10", Rule::Special(log10)),
    ("=", Rule::Special(equal)),
    ("/=", Rule::Special(not_equal)),
    ("zero?", Rule::Special(is_zero)),
    ("reshape", Rule::Linear(&[0])),
    ("flatten", Rule::Linear(&[0])),
    ("transpose", Rule::Linear(&[0])),
    ("broadcast-to", Rule::Linear(&[0])),
    ("slice", Rule::Linear(&[0])),
    ("index", Rule::Linear(&[0])),
    ("item", Rule::Linear(&[0])),
    ("roll", Rule::Linear(&[0])),
    ("flip", Rule::Linear(&[0])),
    ("tril", Rule::Linear(&[0])),
    ("triu", Rule::Linear(&[0])),
    ("diag", Rule::Linear(&[0])),
    ("diagonal", Rule::Linear(&[0])),
    ("trace", Rule::Linear(&[0])),
    ("cumsum", Rule::Linear(&[0])),
    ("sum", Rule::LinearAll),
    ("mean", Rule::LinearAll),
    ("gather", Rule::Linear(&[0])),
    ("take-along", Rule::Linear(&[0])),
    ("scatter-add", Rule::Linear(&[0, 2])),
    ("index-set", Rule::Linear(&[0, 2])),
    ("where", Rule::Linear(&[1, 2])),
    ("concat", Rule::LinearList),
    ("stack", Rule::LinearList),
    ("tensor", Rule::Special(tensor)),
    ("shape", Rule::Shape),
    ("rank", Rule::Shape),
    ("size", Rule::Shape),
    ("matmul", Rule::Product(0)),
    ("dot", Rule::Product(0)),
    ("outer", Rule::Product(0)),
    ("einsum", Rule::Product(1)),
    ("prod", Rule::Special(prod)),
    ("var", Rule::Special(var)),
    ("std", Rule::Special(std)),
    ("norm", Rule::Special(norm)),
    ("to-list", Rule::Special(to_list)),
    ("dtype", Rule::Special(dtype)),
    ("solve", Rule::Special(linalg::solve)),
    ("lstsq", Rule::Special(linalg::lstsq)),
    ("triangular-solve", Rule::Special(linalg::triangular_solve)),
    ("inv", Rule::Special(linalg::of_embedding)),
    ("matrix-exp", Rule::Special(linalg::of_embedding)),
    ("eigh", Rule::Special(linalg::eigh)),
    ("det", Rule::Special(linalg::det)),
    ("slogdet", Rule::Special(linalg::slogdet)),
    ("cholesky", Rule::Special(linalg::cholesky)),
    ("qr", Rule::Special(linalg::qr)),
    ("svd", Rule::Special(linalg::svd)),
    ("astype", Rule::Special(astype)),
];

fn rule_of(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|(n, _)| *n == name).map(|(_, rule)| rule)
}

/// Whether `name` is a built-in that takes complex values itself: the
/// complex family, `save-npy` (which writes them) and `not` (a complex
/// value is true, as every value but `#f` and `()`).
pub(crate) fn handles(name: &str) -> bool {
    crate::lisp::builtins::complex_family(name) || matches!(name, "save-npy" | "not")
}

/// Calls `builtin` with complex operands in `args`; `None` when it takes
/// any value (a list built-in) and is called as usual.
pub(super) fn call(
    lower: &mut Lower,
    builtin: &Builtin,
    args: &[Value],
) -> Option<EvalResult<Value>> {
    let name = builtin.name;
    let first_option = match builtin.options.is_empty() {
        true => args.len(),
        false => args
            .iter()
            .position(|a| matches!(a, Value::Keyword(_)))
            .unwrap_or(args.len()),
    };
    let call = Call {
        name,
        positional: &args[..first_option],
        options: &args[first_option..],
    };
    if let Some(rule) = rule_of(name) {
        return Some(apply(lower, rule, &call));
    }
    // A sort with a comparison of the caller's compares by it.
    if name == "sort"
        && call
            .positional
            .iter()
            .any(|a| matches!(a, Value::Procedure(_)))
    {
        return None;
    }
    if let Some(row) = row_named(name).filter(|row| row.builtin.is_some()) {
        return Some(match (row.complex, &call.positional) {
            (Some(rule), [z]) => formula::apply(lower, rule, &Parts::of(z)),
            _ => Err(refusal(name)),
        });
    }
    crate::lisp::builtins::dtype::is_numeric(name).then(|| Err(refusal(name)))
}

/// The error for a numeric built-in without a complex rule.
fn refusal(name: &str) -> EvalError {
    let why = match name {
        "<" | ">" | "<=" | ">=" | "max" | "min" | "argmax" | "argmin" | "sort" | "clamp"
        | "relu" | "positive?" | "negative?" | "floor" | "ceil" | "round" => {
            ": complex numbers have no order (compare (real z) or (abs z))"
        }
        _ => " (it is defined on real numbers only)",
    };
    EvalError::type_error(format!("{name} does not take complex numbers{why}"))
}

fn apply(lower: &mut Lower, rule: &Rule, call: &Call) -> EvalResult<Value> {
    match rule {
        Rule::Linear(positions) => linear(lower, call, |k| positions.contains(&k)),
        Rule::LinearAll => linear(lower, call, |_| true),
        Rule::LinearList => linear_list(lower, call),
        Rule::Shape => {
            let args = parts_args(call, |_| true, |p| p.re.clone());
            lower.call(call.name, &args)
        }
        Rule::Product(first) => product(lower, call, *first),
        Rule::Special(f) => f(lower, call),
    }
}

/// The call's arguments with each complex one at a position `data` says
/// replaced by `pick` of its parts, the options after them.
fn parts_args(
    call: &Call,
    data: impl Fn(usize) -> bool,
    pick: impl Fn(&Parts) -> Value,
) -> Vec<Value> {
    call.positional
        .iter()
        .enumerate()
        .map(|(k, arg)| match data(k) {
            true => pick(&Parts::of(arg)),
            false => arg.clone(),
        })
        .chain(call.options.iter().cloned())
        .collect()
}

fn linear(
    lower: &mut Lower,
    call: &Call,
    data: impl Fn(usize) -> bool + Copy,
) -> EvalResult<Value> {
    for (k, arg) in call.positional.iter().enumerate() {
        if super::is_complex(arg) && !data(k) {
            return Err(EvalError::type_error(format!(
                "{}: argument {k} cannot be complex (it holds positions or a mask)",
                call.name
            )));
        }
    }
    let re = lower.call(call.name, &parts_args(call, data, |p| p.re.clone()))?;
    // A zero imaginary part is made only where the call needs it: a
    // real operand of a complex sum or `where`.
    let mut im_args = Vec::with_capacity(call.positional.len());
    for (k, arg) in call.positional.iter().enumerate() {
        im_args.push(match (data(k), Parts::of(arg)) {
            (true, Parts { im: Some(im), .. }) => im,
            (true, Parts { re, im: None }) => lower.zeros_like(&re)?,
            (false, _) => arg.clone(),
        });
    }
    im_args.extend(call.options.iter().cloned());
    let im = lower.call(call.name, &im_args)?;
    Ok(Value::complex(re, im))
}

fn linear_list(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [list] = call.positional else {
        return Err(EvalError::type_error(format!(
            "{} takes one list",
            call.name
        )));
    };
    let items = list.list_to_vec()?;
    let mut re = Vec::with_capacity(items.len());
    let mut im = Vec::with_capacity(items.len());
    for item in &items {
        let parts = Parts::of(item);
        im.push(match parts.im {
            Some(im) => im,
            None => lower.zeros_like(&parts.re)?,
        });
        re.push(parts.re);
    }
    let with = |parts: Vec<Value>| {
        std::iter::once(Value::list(parts))
            .chain(call.options.iter().cloned())
            .collect::<Vec<_>>()
    };
    let re = lower.call(call.name, &with(re))?;
    let im = lower.call(call.name, &with(im))?;
    Ok(Value::complex(re, im))
}

/// The most complex operands a product expands (2^k real products).
const MAX_PRODUCT_OPERANDS: usize = 6;

/// A product linear in each operand from `first` on: the sum over the
/// choices of a part per operand of the real product of the parts, with
/// the power of `i` the imaginary parts chosen make.
fn product(lower: &mut Lower, call: &Call, first: usize) -> EvalResult<Value> {
    let operands: Vec<Parts> = call.positional[first.min(call.positional.len())..]
        .iter()
        .map(Parts::of)
        .collect();
    let complex = operands.iter().filter(|p| p.im.is_some()).count();
    if complex > MAX_PRODUCT_OPERANDS {
        return Err(EvalError::type_error(format!(
            "{}: at most {MAX_PRODUCT_OPERANDS} complex operands in one product",
            call.name
        )));
    }
    let (mut re, mut im): (Option<Value>, Option<Value>) = (None, None);
    for choice in 0u32..(1 << operands.len()) {
        let mut args: Vec<Value> = call.positional[..first].to_vec();
        let mut power = 0;
        let mut possible = true;
        for (k, parts) in operands.iter().enumerate() {
            match (choice >> k & 1 == 1, &parts.im) {
                (false, _) => args.push(parts.re.clone()),
                (true, Some(im)) => {
                    args.push(im.clone());
                    power += 1;
                }
                (true, None) => possible = false,
            }
        }
        if !possible {
            continue;
        }
        args.extend(call.options.iter().cloned());
        let term = lower.call(call.name, &args)?;
        match power % 4 {
            0 => re = lower.add(re, Some(term))?,
            1 => im = lower.add(im, Some(term))?,
            2 => re = lower.sub(re, Some(term))?,
            _ => im = lower.sub(im, Some(term))?,
        }
    }
    let re = match re {
        Some(re) => re,
        None => {
            let im = im.clone().unwrap_or(Value::Float(0.0));
            lower.zeros_like(&im)?
        }
    };
    lower.value(re, im)
}

/// The single positional argument of a unary call.
fn only<'a>(call: &'a Call) -> EvalResult<&'a Value> {
    match call.positional {
        [z] => Ok(z),
        _ => Err(EvalError::type_error(format!(
            "{} takes one argument",
            call.name
        ))),
    }
}

fn add(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let mut terms = call.positional.iter().map(Parts::of);
    let Some(first) = terms.next() else {
        return Ok(Value::Int(0));
    };
    let (mut re, mut im) = (first.re, first.im);
    for term in terms {
        re = lower.call("+", &[re, term.re])?;
        im = lower.add(im, term.im)?;
    }
    lower.value(re, im)
}

fn sub(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let mut terms = call.positional.iter().map(Parts::of);
    let Some(first) = terms.next() else {
        return Ok(Value::Int(0));
    };
    if call.positional.len() == 1 {
        let re = lower.call("-", &[first.re])?;
        let im = lower.sub(None, first.im)?;
        return lower.value(re, im);
    }
    let (mut re, mut im) = (first.re, first.im);
    for term in terms {
        re = lower.call("-", &[re, term.re])?;
        im = lower.sub(im, term.im)?;
    }
    lower.value(re, im)
}

/// `a * b` of complex parts.
pub(super) fn times(lower: &mut Lower, a: &Parts, b: &Parts) -> EvalResult<Parts> {
    let rr = lower.call("*", &[a.re.clone(), b.re.clone()])?;
    let ii = lower.mul(a.im.as_ref(), b.im.as_ref())?;
    let ri = lower.mul(Some(&a.re), b.im.as_ref())?;
    let ir = lower.mul(a.im.as_ref(), Some(&b.re))?;
    let re = lower.sub(Some(rr), ii)?.unwrap_or(Value::Float(0.0));
    let im = lower.add(ri, ir)?;
    Ok(Parts { re, im })
}

fn mul(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let mut factors = call.positional.iter().map(Parts::of);
    let Some(mut acc) = factors.next() else {
        return Ok(Value::Int(1));
    };
    for factor in factors {
        acc = times(lower, &acc, &factor)?;
    }
    lower.value(acc.re, acc.im)
}

/// `a / b` of complex parts: by a real `b`, part by part; by a complex
/// one, both scaled by the larger of `b`'s parts first (no overflow of
/// `|b|^2` where the quotient itself is finite).
pub(super) fn quotient(lower: &mut Lower, a: &Parts, b: &Parts) -> EvalResult<Parts> {
    let Some(b_im) = &b.im else {
        let re = lower.call("/", &[a.re.clone(), b.re.clone()])?;
        let im = match &a.im {
            Some(im) => Some(lower.call("/", &[im.clone(), b.re.clone()])?),
            None => None,
        };
        return Ok(Parts { re, im });
    };
    let abs_re = lower.call("abs", std::slice::from_ref(&b.re))?;
    let abs_im = lower.call("abs", std::slice::from_ref(b_im))?;
    let scale = lower.call("max", &[abs_re, abs_im])?;
    let c = lower.call("/", &[b.re.clone(), scale.clone()])?;
    let d = lower.call("/", &[b_im.clone(), scale.clone()])?;
    let cc = lower.call("*", &[c.clone(), c.clone()])?;
    let dd = lower.call("*", &[d.clone(), d.clone()])?;
    let norm = lower.call("+", &[cc, dd])?;
    let denominator = lower.call("*", &[norm, scale])?;
    // a * conj(b / scale) / (|b / scale|^2 scale)
    let d_neg = lower.call("-", &[d])?;
    let numerator = times(
        lower,
        a,
        &Parts {
            re: c,
            im: Some(d_neg),
        },
    )?;
    let re = lower.call("/", &[numerator.re, denominator.clone()])?;
    let im = match numerator.im {
        Some(im) => Some(lower.call("/", &[im, denominator])?),
        None => None,
    };
    Ok(Parts { re, im })
}

fn div(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let parts: Vec<Parts> = call.positional.iter().map(Parts::of).collect();
    let result = match parts.as_slice() {
        [] => return Err(EvalError::type_error("/ needs an argument")),
        [only] => quotient(
            lower,
            &Parts {
                re: Value::Float(1.0),
                im: None,
            },
            only,
        )?,
        [first, rest @ ..] => {
            let mut acc = first.clone();
            for divisor in rest {
                acc = quotient(lower, &acc, divisor)?;
            }
            acc
        }
    };
    lower.value(result.re, result.im)
}

/// The largest whole exponent computed by repeated products.
const MAX_PRODUCT_EXPONENT: f64 = 64.0;

fn pow(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [base, exponent] = call.positional else {
        return Err(EvalError::type_error("pow takes a base and an exponent"));
    };
    let base = Parts::of(base);
    // A whole real exponent: repeated squaring, exact at 0 and with
    // derivatives everywhere (exp (* n (log z))) has none at 0).
    let whole = match exponent {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) if x.fract() == 0.0 && x.abs() <= MAX_PRODUCT_EXPONENT => Some(*x),
        _ => None,
    };
    if let Some(n) = whole.filter(|n| n.abs() <= MAX_PRODUCT_EXPONENT) {
        let mut result = Parts {
            re: Value::Float(1.0),
            im: None,
        };
        let mut square = base.clone();
        let mut k = n.abs() as u64;
        let mut first = true;
        while k > 0 {
            if k & 1 == 1 {
                result = match first {
                    true => square.clone(),
                    false => times(lower, &result, &square)?,
                };
                first = false;
            }
            k >>= 1;
            if k > 0 {
                square = times(lower, &square, &square)?;
            }
        }
        if first {
            // z^0 = 1 with z's shape.
            let zeros = lower.zeros_like(&base.re)?;
            let one = lower.call("+", &[zeros, Value::Float(1.0)])?;
            result = Parts { re: one, im: None };
        }
        if n < 0.0 {
            let one = Parts {
                re: Value::Float(1.0),
                im: None,
            };
            result = quotient(lower, &one, &result)?;
        }
        return lower.value(result.re, result.im);
    }
    // z^w = exp(w log z).
    let log = formula::apply_row(lower, "log", &base)?;
    let scaled = lower.call("*", &[exponent.clone(), log])?;
    formula::apply_row(lower, "exp", &Parts::of(&scaled))
}

fn abs(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = Parts::of(only(call)?);
    match z.im {
        Some(im) => lower.call("hypot", &[z.re, im]),
        None => lower.call("abs", &[z.re]),
    }
}

/// `z / |z|`, and 0 at 0 (NumPy's `sign` of complex numbers).
fn sign(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = Parts::of(only(call)?);
    let im = match z.im.clone() {
        Some(im) => im,
        None => lower.zeros_like(&z.re)?,
    };
    let modulus = lower.call("hypot", &[z.re.clone(), im.clone()])?;
    // Where |z| = 0 the quotient is taken by 1 (giving 0): heaviside of
    // -|z| is 1 there and 0 elsewhere.
    let negated = lower.call("-", std::slice::from_ref(&modulus))?;
    let is_zero = lower.call("heaviside", &[negated, Value::Float(1.0)])?;
    let safe = lower.call("+", &[modulus, is_zero])?;
    let re = lower.call("/", &[z.re, safe.clone()])?;
    let im = lower.call("/", &[im, safe])?;
    Ok(Value::complex(re, im))
}

fn log_scaled(lower: &mut Lower, call: &Call, factor: f64) -> EvalResult<Value> {
    let log = formula::apply_row(lower, "log", &Parts::of(only(call)?))?;
    lower.call("*", &[log, Value::Float(factor)])
}

fn log2(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    log_scaled(lower, call, std::f64::consts::LOG2_E)
}

fn log10(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    log_scaled(lower, call, std::f64::consts::LOG10_E)
}

/// Both parts equal: `#t`/`#f` for numbers, a mask of 1 and 0 for tensors.
fn equal(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [a, b] = call.positional else {
        return Err(EvalError::type_error(
            "= compares two complex values at a time",
        ));
    };
    let (a, b) = (Parts::of(a), Parts::of(b));
    let re = lower.call("=", &[a.re, b.re])?;
    let zero = Value::Float(0.0);
    let a_im = a.im.unwrap_or_else(|| zero.clone());
    let b_im = b.im.unwrap_or(zero);
    let im = lower.call("=", &[a_im, b_im])?;
    match (re, im) {
        (Value::Bool(x), Value::Bool(y)) => Ok(Value::Bool(x && y)),
        (re, im) => lower.call("*", &[re, im]),
    }
}

fn not_equal(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    match equal(lower, call)? {
        Value::Bool(b) => Ok(Value::Bool(!b)),
        mask => lower.call("-", &[Value::Float(1.0), mask]),
    }
}

fn is_zero(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let zero = Value::Float(0.0);
    let call = Call {
        name: "=",
        positional: &[only(call)?.clone(), zero],
        options: &[],
    };
    equal(lower, &call)
}

/// The product over axes: pairs of halves multiplied until one element is
/// left along each reduced axis (a complex product has no real
/// reduction), so that it is recorded and differentiated as products.
fn prod(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = only(call)?;
    let shape = shape_of(z)?;
    let (axes, keepdims) = reduction_options(call, shape.len())?;
    // The reduced axes moved last and flattened into one.
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let order: Vec<usize> = kept.iter().chain(axes.iter()).copied().collect();
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let kept_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let ints = |dims: &[usize]| Value::list(dims.iter().map(|&d| Value::Int(d as i64)));
    let permuted = match order.iter().copied().eq(0..shape.len()) {
        true => z.clone(),
        false => lower.call("transpose", &[z.clone(), ints(&order)])?,
    };
    let mut flat_shape = kept_shape.clone();
    flat_shape.push(count);
    let mut current = Parts::of(&lower.call("reshape", &[permuted, ints(&flat_shape)])?);
    let axis = Value::Int(kept_shape.len() as i64);
    let mut length = count;
    let slice = |lower: &mut Lower, part: &Value, start: usize, end: usize| {
        lower.call(
            "slice",
            &[
                part.clone(),
                Value::Int(start as i64),
                Value::Int(end as i64),
                Value::Keyword(crate::lisp::symbol::Symbol::intern("axis")),
                axis.clone(),
            ],
        )
    };
    let mut leftover: Option<Parts> = None;
    while length > 1 {
        let half = length / 2;
        let pick = |lower: &mut Lower, start: usize, end: usize| -> EvalResult<Parts> {
            Ok(Parts {
                re: slice(lower, &current.re, start, end)?,
                im: match &current.im {
                    Some(im) => Some(slice(lower, im, start, end)?),
                    None => None,
                },
            })
        };
        let low = pick(lower, 0, half)?;
        let high = pick(lower, half, 2 * half)?;
        if length % 2 == 1 {
            let last = pick(lower, 2 * half, length)?;
            leftover = Some(match leftover {
                None => last,
                Some(before) => times(lower, &before, &last)?,
            });
        }
        current = times(lower, &low, &high)?;
        length = half;
    }
    if let Some(last) = leftover {
        current = match length {
            0 => last,
            _ => times(lower, &current, &last)?,
        };
    }
    if length == 0 && count == 0 {
        // The empty product is 1.
        let mut shape = kept_shape.clone();
        shape.push(1);
        let zeros = lower.call("zeros", &[ints(&shape)])?;
        let one = lower.call("+", &[zeros, Value::Float(1.0)])?;
        current = Parts { re: one, im: None };
    }
    let mut result_shape = kept_shape;
    if keepdims {
        result_shape = shape
            .iter()
            .enumerate()
            .map(|(a, &d)| if axes.contains(&a) { 1 } else { d })
            .collect();
    }
    let finish = |lower: &mut Lower, part: Value| -> EvalResult<Value> {
        let reshaped = lower.call("reshape", &[part, ints(&result_shape)])?;
        match result_shape.is_empty() {
            true => lower.call("item", &[reshaped]),
            false => Ok(reshaped),
        }
    };
    let re = finish(lower, current.re)?;
    let im = match current.im {
        Some(im) => Some(finish(lower, im)?),
        None => None,
    };
    lower.value(re, im)
}

/// The reduced axes (sorted, non-negative) and `:keepdims` of a reduction.
fn reduction_options(call: &Call, rank: usize) -> EvalResult<(Vec<usize>, bool)> {
    let mut axes: Vec<usize> = (0..rank).collect();
    let mut keepdims = false;
    for pair in call.options.chunks(2) {
        match pair {
            [Value::Keyword(k), value] if k.name() == "axis" => {
                let listed = match value {
                    Value::Nil | Value::Pair(_) => value.list_to_vec()?,
                    single => vec![single.clone()],
                };
                axes = listed
                    .iter()
                    .map(|a| crate::lisp::tensor::normalize_axis(a.as_i64()?, rank))
                    .collect::<EvalResult<_>>()?;
                axes.sort_unstable();
                axes.dedup();
            }
            [Value::Keyword(k), value] if k.name() == "keepdims" => keepdims = value.is_truthy(),
            _ => {}
        }
    }
    Ok((axes, keepdims))
}

/// NumPy's variance of complex values: the mean of `|z - mean z|^2`, the
/// real parts' variance plus the imaginary parts'.
fn var(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = Parts::of(only(call)?);
    let with = |part: Value| {
        std::iter::once(part)
            .chain(call.options.iter().cloned())
            .collect::<Vec<_>>()
    };
    let re = lower.call("var", &with(z.re))?;
    match z.im {
        Some(im) => {
            let im = lower.call("var", &with(im))?;
            lower.call("+", &[re, im])
        }
        None => Ok(re),
    }
}

fn std(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let variance = var(lower, call)?;
    lower.call("sqrt", &[variance])
}

/// Vector norms and the Frobenius, 1 and infinity matrix norms are the
/// norms of the moduli; the nuclear and spectral norms need a complex SVD.
fn norm(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = only(call)?;
    let modulus = abs(
        lower,
        &Call {
            name: "abs",
            positional: std::slice::from_ref(z),
            options: &[],
        },
    )?;
    for pair in call.options.chunks(2) {
        if let [Value::Keyword(k), Value::Symbol(s)] = pair
            && k.name() == "ord"
            && s.name() == "nuc"
        {
            return Err(EvalError::type_error(
                "norm: the nuclear norm of a complex matrix is not supported",
            ));
        }
    }
    let args: Vec<Value> = std::iter::once(modulus)
        .chain(call.options.iter().cloned())
        .collect();
    lower.call("norm", &args)
}

/// A list (nested for a matrix) of complex numbers.
fn to_list(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = Parts::of(only(call)?);
    let re = lower.call("to-list", std::slice::from_ref(&z.re))?;
    let im = match z.im {
        Some(im) => lower.call("to-list", &[im])?,
        None => {
            let zeros = lower.zeros_like(&z.re)?;
            lower.call("to-list", &[zeros])?
        }
    };
    fn zip(re: &Value, im: &Value) -> EvalResult<Value> {
        match (re, im) {
            (Value::Pair(_) | Value::Nil, _) => {
                let (re, im) = (re.list_to_vec()?, im.list_to_vec()?);
                let items = re
                    .iter()
                    .zip(&im)
                    .map(|(r, i)| zip(r, i))
                    .collect::<EvalResult<Vec<_>>>()?;
                Ok(Value::list(items))
            }
            _ => Ok(Value::complex(re.clone(), im.clone())),
        }
    }
    zip(&re, &im)
}

/// `'c128` for f64 (or number) parts, `'c64` for f32 parts.
fn dtype(_: &mut Lower, call: &Call) -> EvalResult<Value> {
    let z = Parts::of(only(call)?);
    Ok(Value::symbol(complex_dtype_name(&z.re)))
}

/// The complex type name of a value whose real part is `re`.
pub(crate) fn complex_dtype_name(re: &Value) -> &'static str {
    match crate::lisp::trace::value_dtype(re) {
        crate::dtype::DType::F32 => "c64",
        _ => "c128",
    }
}

/// `astype` of a complex value: to `'c64` or `'c128` part by part; a real
/// type would drop the imaginary part, which `real` says explicitly.
fn astype(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [z, target] = call.positional else {
        return Err(EvalError::type_error("astype takes a value and a type"));
    };
    let name = match target {
        Value::Symbol(s) => s.name().to_string(),
        Value::Str(s) => s.to_string(),
        other => other.short(),
    };
    let part_type = match name.as_str() {
        "c64" | "complex64" => "f32",
        "c128" | "complex128" => "f64",
        other => {
            return Err(EvalError::type_error(format!(
                "astype: converting a complex value to {other} would drop its imaginary part; take (real z) or (abs z) first"
            )));
        }
    };
    let z = Parts::of(z);
    let re = lower.call("astype", &[z.re, Value::symbol(part_type)])?;
    let im = match z.im {
        Some(im) => Some(lower.call("astype", &[im, Value::symbol(part_type)])?),
        None => None,
    };
    lower.value(re, im)
}

/// `(tensor data)` with complex numbers in `data` (nested lists of
/// numbers, tensors and complex values): the real parts and the
/// imaginary parts made into tensors alike.
fn tensor(lower: &mut Lower, call: &Call) -> EvalResult<Value> {
    let [data] = call.positional else {
        return Err(EvalError::type_error("tensor takes one list of elements"));
    };
    let (re, im) = split(lower, data, crate::reader::MAX_NESTING)?;
    let with = |part: Value| {
        std::iter::once(part)
            .chain(call.options.iter().cloned())
            .collect::<Vec<_>>()
    };
    let re = lower.call("tensor", &with(re))?;
    let im = lower.call("tensor", &with(im))?;
    lower.value(re, Some(im))
}

/// `value` (nested lists of numbers, tensors and complex values) as two
/// values of the same nesting: the real parts, the imaginary parts.
fn split(lower: &mut Lower, value: &Value, depth: usize) -> EvalResult<(Value, Value)> {
    match value {
        Value::Complex(z) => Ok((z.re.clone(), z.im.clone())),
        Value::Nil | Value::Pair(_) if depth > 0 => {
            let mut re = Vec::new();
            let mut im = Vec::new();
            for item in value.list_to_vec()? {
                let (r, i) = split(lower, &item, depth - 1)?;
                re.push(r);
                im.push(i);
            }
            Ok((Value::list(re), Value::list(im)))
        }
        Value::Nil | Value::Pair(_) => Err(EvalError::range(
            "a tensor's elements are nested too deeply",
        )),
        real => {
            let zero = lower.zeros_like(real)?;
            Ok((real.clone(), zero))
        }
    }
}

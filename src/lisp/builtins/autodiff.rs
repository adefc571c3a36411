//! Numeric differentiation forms on functions (SPEC section 4, "Numeric"):
//! `grad` (via `symbolic.rs` when given a function), `value-and-grad`,
//! `vjp`, `jvp`, `jacobian`, `hessian`, `hvp`, `stop-gradient`, `jit`,
//! `check-grad`, `tape-stats`, `show-tape`, `save-dot`.

use super::{builtin, with_options};
use crate::backends::cpu::Buf;
use crate::egraph::Stop;
use crate::ir::loops::Strategy;
use crate::lisp::autodiff::loops::Steps;
use crate::lisp::autodiff::tree::{flatten, rebuild_in_order};
use crate::lisp::autodiff::{self, Outcome, Request};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, NativeFn, Procedure};
use crate::lisp::trace::value_to_buf;
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

fn native(
    name: String,
    func: impl Fn(&mut Interp, &[Value]) -> EvalResult<Value> + 'static,
) -> Value {
    Value::Procedure(Rc::new(Procedure::Native(NativeFn {
        name,
        doc: None,
        func: Box::new(func),
    })))
}

fn function_name(f: &Value) -> String {
    match f {
        Value::Procedure(p) => p.name(),
        other => other.short(),
    }
}

pub(super) fn expect_function(f: &Value) -> EvalResult<()> {
    match f {
        Value::Procedure(_) => Ok(()),
        other => Err(EvalError::type_error(format!(
            "expected a function, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// Which argument positions `:wrt` names.
#[derive(Clone)]
enum Wrt {
    One(usize),
    Many(Vec<usize>),
    All,
}

fn parse_wrt(option: Option<&Value>) -> EvalResult<Wrt> {
    let position = |v: &Value| -> EvalResult<usize> {
        let k = v.as_i64()?;
        usize::try_from(k)
            .map_err(|_| EvalError::range(format!("a :wrt position cannot be negative, got {k}")))
    };
    match option {
        None => Ok(Wrt::One(0)),
        Some(Value::Symbol(s)) if s.name() == "all" => Ok(Wrt::All),
        Some(Value::Int(_)) => Ok(Wrt::One(position(option.unwrap_or(&Value::Nil))?)),
        Some(list) if list.is_list() => Ok(Wrt::Many(
            list.list_to_vec()?
                .iter()
                .map(position)
                .collect::<EvalResult<_>>()?,
        )),
        Some(other) => Err(EvalError::type_error(format!(
            ":wrt takes a position, a list of positions or 'all, got {}",
            other.short()
        ))),
    }
}

fn positions(wrt: &Wrt, arity: usize) -> EvalResult<Vec<usize>> {
    let list = match wrt {
        Wrt::One(k) => vec![*k],
        Wrt::Many(ks) => ks.clone(),
        Wrt::All => (0..arity).collect(),
    };
    for &k in &list {
        if k >= arity {
            return Err(EvalError::range(format!(
                "unknown :wrt position {k}: the function was called with {arity} argument{}",
                if arity == 1 { "" } else { "s" }
            )));
        }
    }
    Ok(list)
}

fn gradients(outcome: Outcome, wrt: &Wrt) -> Value {
    match wrt {
        Wrt::One(_) => outcome.derivatives.into_iter().next().unwrap_or(Value::Nil),
        _ => Value::list(outcome.derivatives),
    }
}

fn only_function(args: &Args, form: &str) -> EvalResult<()> {
    if args.len() > 1 {
        return Err(EvalError::type_error(format!(
            "({form} f) takes the function only{}",
            if form == "grad" {
                "; choose arguments with :wrt"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// `(grad f :wrt ...)`: called from `grad` when its argument is a function.
pub(crate) fn grad_of_function(args: &Args, with_value: bool) -> EvalResult<Value> {
    let f = args[0].clone();
    only_function(args, "grad")?;
    let wrt = parse_wrt(args.option("wrt"))?;
    let prefix = if with_value { "value-and-grad" } else { "grad" };
    let name = format!("{prefix} of {}", function_name(&f));
    let holomorphic = args.option("holomorphic").is_some_and(Value::is_truthy);
    let original = f.clone();
    let f = match holomorphic {
        true => real_part_of(f),
        false => f,
    };
    let replays = autodiff::replay::Replays::default();
    Ok(native(name, move |interp, call_args| {
        let positions = positions(&wrt, call_args.len())?;
        if holomorphic
            && let Some(&k) = positions
                .iter()
                .find(|&&k| !crate::lisp::complex::holds_complex(&call_args[k]))
        {
            return Err(EvalError::type_error(format!(
                "grad with :holomorphic #t needs complex arguments (JAX's rule), argument {k} is {} {}",
                call_args[k].type_name(),
                call_args[k].short()
            )));
        }
        let outcome = replays.run(
            interp,
            &f,
            call_args,
            &Request::Grad {
                wrt: positions,
                value: with_value,
            },
        )?;
        let value = outcome.value.clone();
        // The gradient came from the real part; the value is the
        // function's own (one more evaluation).
        let value = match holomorphic && with_value {
            true => interp.apply(&original, call_args.to_vec())?,
            false => value,
        };
        let grads = gradients(outcome, &wrt);
        let grads = match crate::lisp::complex::holds_complex(&grads) {
            true => crate::lisp::complex::conjugated(interp, &grads)?,
            false => grads,
        };
        Ok(if with_value {
            Value::list([value, grads])
        } else {
            grads
        })
    }))
}

/// `f` followed by the real part of its result: `:holomorphic`'s
/// derivative is the conjugate of the gradient of the real part (by the
/// Cauchy-Riemann equations, `f' = du/dx - i du/dy`).
fn real_part_of(f: Value) -> Value {
    let name = format!("the real part of {}", function_name(&f));
    native(name, move |interp, call_args| {
        match interp.apply(&f, call_args.to_vec())? {
            Value::Complex(z) => Ok(z.re.clone()),
            real => Ok(real),
        }
    })
}

fn value_and_grad(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    grad_of_function(args, true)
}

fn list_arg(value: &Value, what: &str) -> EvalResult<Vec<Value>> {
    if !value.is_list() {
        return Err(EvalError::type_error(format!(
            "{what} must be a list of arguments, such as (list x), got {}",
            value.short()
        )));
    }
    value.list_to_vec()
}

fn vjp(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let call_args = list_arg(&args[1], "vjp's second argument")?;
    // Complex cotangents enter and leave conjugated (JAX's convention:
    // the product is linear in the cotangent).
    let cotangent = match crate::lisp::complex::holds_complex(&args[2]) {
        true => crate::lisp::complex::conjugated(interp, &args[2])?,
        false => args[2].clone(),
    };
    let outcome = autodiff::run(interp, &args[0], &call_args, &Request::Vjp, &[cotangent])?;
    let derivatives = Value::list(outcome.derivatives);
    let derivatives = match crate::lisp::complex::holds_complex(&derivatives) {
        true => crate::lisp::complex::conjugated(interp, &derivatives)?,
        false => derivatives,
    };
    Ok(Value::list([outcome.value, derivatives]))
}

fn jvp(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let call_args = list_arg(&args[1], "jvp's second argument")?;
    let tangents = list_arg(&args[2], "jvp's tangents")?;
    if tangents.len() != call_args.len() {
        return Err(EvalError::shape(format!(
            "jvp: {} tangents for {} arguments",
            tangents.len(),
            call_args.len()
        )));
    }
    let outcome = autodiff::run(interp, &args[0], &call_args, &Request::Jvp, &tangents)?;
    let tangent = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    Ok(Value::list([outcome.value, tangent]))
}

fn hvp(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let call_args = list_arg(&args[1], "hvp's second argument")?;
    if call_args.is_empty() {
        return Err(EvalError::type_error("hvp needs at least one argument"));
    }
    let outcome = autodiff::run(
        interp,
        &args[0],
        &call_args,
        &Request::Hvp,
        &[args[2].clone()],
    )?;
    let product = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    // The tangent of `grad` along v: with complex arguments, of JAX's
    // (conjugated) gradient.
    match crate::lisp::complex::holds_complex(&product) {
        true => crate::lisp::complex::conjugated(interp, &product),
        false => Ok(product),
    }
}

pub(super) fn shape_of(value: &Value) -> Vec<usize> {
    match value {
        Value::Tensor(t) => t.shape().to_vec(),
        Value::TensorF32(t) => t.shape().to_vec(),
        Value::Traced(t) => t.shape.to_vec(),
        _ => Vec::new(),
    }
}

/// The unit tensor with a 1 at flat position `k` (a number for `[]`).
fn basis(shape: &[usize], k: usize) -> Value {
    if shape.is_empty() {
        return Value::Float(1.0);
    }
    let mut e = ArrayD::zeros(IxDyn(shape));
    if let Some(slot) = e.as_slice_mut().and_then(|s| s.get_mut(k)) {
        *slot = 1.0;
    }
    Value::tensor(e)
}

/// Stacks equal-shape results (numbers or tensors) into a tensor of shape
/// `lead ++ inner`.
fn assemble(rows: &[Value], lead: &[usize], inner: &[usize]) -> EvalResult<Value> {
    let mut data = Vec::new();
    for row in rows {
        match value_to_buf(row)? {
            Buf::Scalar(x) => data.push(x),
            Buf::Array(a) => data.extend(a.iter().copied()),
        }
    }
    let shape: Vec<usize> = lead.iter().chain(inner).copied().collect();
    if shape.is_empty() {
        return Ok(Value::Float(data.first().copied().unwrap_or(f64::NAN)));
    }
    ArrayD::from_shape_vec(IxDyn(&shape), data)
        .map(Value::tensor)
        .map_err(|e| EvalError::shape(e.to_string()))
}

/// `(jacobian f)`: the dense Jacobian of f's result with respect to its
/// first argument (result axes first). Forward mode with all input
/// directions in one batch when the input has no more elements than the
/// result; otherwise one vector-Jacobian product per result element (the
/// tape is compiled once and rerun).
pub(crate) fn jacobian_of_function(args: &Args) -> EvalResult<Value> {
    only_function(args, "jacobian")?;
    let f = args[0].clone();
    let name = format!("jacobian of {}", function_name(&f));
    let holomorphic = args.option("holomorphic").is_some_and(Value::is_truthy);
    Ok(native(name, move |interp, call_args| {
        if call_args.is_empty() {
            return Err(EvalError::type_error(
                "a Jacobian needs at least one argument",
            ));
        }
        let value = autodiff::run(interp, &f, call_args, &Request::Value, &[])?.value;
        if matches!(value, Value::Complex(_)) || matches!(call_args[0], Value::Complex(_)) {
            return complex_jacobian(interp, &f, call_args, &value, holomorphic);
        }
        real_jacobian(interp, &f, call_args, &value)
    }))
}

/// The Jacobian of `f` (whose value at `call_args` is `value`, a real
/// number or tensor) with respect to its first argument, real.
fn real_jacobian(
    interp: &mut Interp,
    f: &Value,
    call_args: &[Value],
    value: &Value,
) -> EvalResult<Value> {
    if !matches!(
        value,
        Value::Float(_) | Value::Int(_) | Value::Tensor(_) | Value::TensorF32(_) | Value::Traced(_)
    ) {
        return Err(EvalError::type_error(format!(
            "jacobian needs a function returning one number or tensor, this one returned {}",
            value.short()
        )));
    }
    let out_shape = shape_of(value);
    let in_shape = shape_of(&call_args[0]);
    let count: usize = out_shape.iter().product();
    // Inside a traced function the Jacobian must stay a traced value:
    // forward mode builds it as one.
    let nested = interp.numeric.trace.is_some();
    if nested || in_shape.iter().product::<usize>() <= count {
        match autodiff::run(interp, f, call_args, &Request::JacobianForward, &[]) {
            Ok(outcome) => {
                return Ok(outcome.derivatives.into_iter().next().unwrap_or(Value::Nil));
            }
            // A loop has no batched forward sweep: go row by row in
            // reverse mode (at top level).
            Err(error) if !nested && error.message.contains("through scan") => {}
            Err(error) => return Err(error),
        }
    }
    let mut rows = Vec::with_capacity(count);
    for k in 0..count {
        let outcome = autodiff::run(interp, f, call_args, &Request::Vjp, &[basis(&out_shape, k)])?;
        rows.push(outcome.derivatives.into_iter().next().unwrap_or(Value::Nil));
    }
    assemble(&rows, &out_shape, &in_shape)
}

/// The Jacobian when the first argument or the result is complex, from
/// the real Jacobians of the result's parts with respect to the
/// argument's parts, as JAX gives it: with `:holomorphic`, `df/dz =
/// du/dx + i dv/dx`; for a real result of a complex argument, the
/// conjugate of the gradients, `du/dx - i du/dy` (`jacrev`); for a
/// complex result of a real argument, `du/dx + i dv/dx` (`jacfwd`). A
/// complex result of a complex argument needs `:holomorphic`.
fn complex_jacobian(
    interp: &mut Interp,
    f: &Value,
    call_args: &[Value],
    value: &Value,
    holomorphic: bool,
) -> EvalResult<Value> {
    let complex_in = matches!(call_args[0], Value::Complex(_));
    let complex_out = matches!(value, Value::Complex(_));
    if complex_in && complex_out && !holomorphic {
        return Err(EvalError::type_error(
            "jacobian of a complex function of a complex argument needs :holomorphic #t (JAX's rule: otherwise the derivative is not one complex matrix)",
        ));
    }
    let (x0, y0) = match &call_args[0] {
        Value::Complex(z) => (z.re.clone(), Some(z.im.clone())),
        real => (real.clone(), None),
    };
    // The part `part` of f's result as a function of one part of its
    // first argument (the other held at its value).
    let along = |part: fn(&Value) -> Value, imaginary_direction: bool| -> Value {
        let (f, x0, y0) = (f.clone(), x0.clone(), y0.clone());
        let rest: Vec<Value> = call_args[1..].to_vec();
        native(
            "a part of a complex function".into(),
            move |interp, args| {
                let first = match (&y0, imaginary_direction) {
                    (None, _) => args[0].clone(),
                    (Some(y0), false) => Value::complex(args[0].clone(), y0.clone()),
                    (Some(_), true) => Value::complex(x0.clone(), args[0].clone()),
                };
                let all: Vec<Value> = std::iter::once(first).chain(rest.iter().cloned()).collect();
                Ok(part(&interp.apply(&f, all)?))
            },
        )
    };
    fn re(v: &Value) -> Value {
        match v {
            Value::Complex(z) => z.re.clone(),
            other => other.clone(),
        }
    }
    fn im(v: &Value) -> Value {
        match v {
            Value::Complex(z) => z.im.clone(),
            other => other.clone(),
        }
    }
    let jacobian_of = |interp: &mut Interp, g: Value, at: &Value| -> EvalResult<Value> {
        let mut args = vec![at.clone()];
        args.extend(call_args[1..].iter().cloned());
        let value = autodiff::run(interp, &g, &args, &Request::Value, &[])?.value;
        real_jacobian(interp, &g, &args, &value)
    };
    let du_dx = jacobian_of(interp, along(re, false), &x0)?;
    let span = interp.call_span;
    let mut lower = crate::lisp::complex::Lower { interp, span };
    if complex_out {
        let dv_dx = jacobian_of(lower.interp, along(im, false), &x0)?;
        return Ok(Value::complex(du_dx, dv_dx));
    }
    let Some(y0) = &y0 else {
        return Ok(du_dx);
    };
    let du_dy = jacobian_of(lower.interp, along(re, true), y0)?;
    let minus = lower.call("-", &[du_dy])?;
    Ok(Value::complex(du_dx, minus))
}

/// `(hessian f)`: the dense Hessian with respect to the first argument:
/// forward over reverse, all unit directions in one batch (one tape whose
/// matrix-vector products are matrix-matrix products), symmetrized.
pub(crate) fn hessian_of_function(args: &Args) -> EvalResult<Value> {
    only_function(args, "hessian")?;
    let f = args[0].clone();
    let name = format!("hessian of {}", function_name(&f));
    Ok(native(name, move |interp, call_args| {
        if call_args.is_empty() {
            return Err(EvalError::type_error(
                "a Hessian needs at least one argument",
            ));
        }
        if call_args.iter().any(crate::lisp::complex::holds_complex) {
            return Err(EvalError::type_error(
                "hessian takes real arguments; for a function of complex arguments, take the jacobian of its gradient",
            ));
        }
        let outcome = autodiff::run(interp, &f, call_args, &Request::Hessian, &[])?;
        let dense = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
        symmetrized(dense)
    }))
}

/// (H + Hᵀ) / 2 for a Hessian of shape S ++ S (rounding may differ between
/// the two triangles).
fn symmetrized(dense: Value) -> EvalResult<Value> {
    let Value::Tensor(h) = dense else {
        return Ok(dense);
    };
    let half = h.ndim() / 2;
    let n: usize = h.shape()[..half].iter().product();
    let matrix = h
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order(IxDyn(&[n, n]))
        .map_err(|e| EvalError::shape(e.to_string()))?;
    let symmetric = (&matrix + &matrix.t()) * 0.5;
    Ok(Value::tensor(
        symmetric
            .as_standard_layout()
            .into_owned()
            .into_shape_with_order(IxDyn(h.shape()))
            .map_err(|e| EvalError::shape(e.to_string()))?,
    ))
}

fn stop_gradient(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    // Traced values are handled by the tracer; anything else is a constant.
    Ok(args[0].clone())
}

fn checkpoint(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let f = args[0].clone();
    let name = format!("checkpoint of {}", function_name(&f));
    Ok(native(name, move |interp, call_args| {
        autodiff::loops::checkpoint_call(interp, &f, call_args)
    }))
}

fn jit(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let f = args[0].clone();
    let name = format!("jit of {}", function_name(&f));
    let replays = autodiff::replay::Replays::default();
    Ok(native(name, move |interp, call_args| {
        Ok(replays.run(interp, &f, call_args, &Request::Value)?.value)
    }))
}

/// Elements of one argument checked by `check-grad` at most (evenly spread).
const CHECKED_ELEMENTS: usize = 200;

fn check_grad(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    // The check runs in f64 (f32 finite differences would measure
    // rounding, not the derivative): arguments widened, constructors f64.
    let saved = std::mem::replace(&mut interp.numeric.default_dtype, crate::dtype::DType::F64);
    let checked = check_grad_f64(interp, args);
    interp.numeric.default_dtype = saved;
    checked
}

fn check_grad_f64(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let f = args[0].clone();
    let call_args: Vec<Value> = list_arg(&args[1], "check-grad's second argument")?
        .iter()
        .map(|a| super::dtype::converted(a, crate::dtype::DType::F64))
        .collect();
    let all: Vec<usize> = (0..call_args.len()).collect();
    let outcome = autodiff::run(
        interp,
        &f,
        &call_args,
        &Request::Grad {
            wrt: all,
            value: false,
        },
        &[],
    )?;
    let mut worst: f64 = 0.0;
    for (position, gradient) in outcome.derivatives.iter().enumerate() {
        // Arguments may be nested lists of numbers and tensors: each leaf
        // is checked, the others held fixed.
        let mut leaves = Vec::new();
        let tree = flatten(&call_args[position], &mut leaves, "check-grad's arguments")?;
        let mut gradient_leaves = Vec::new();
        flatten(gradient, &mut gradient_leaves, "gradients")?;
        for (j, (leaf, g_leaf)) in leaves.iter().zip(&gradient_leaves).enumerate() {
            let x_arr = x_buf_array(&value_to_buf(leaf)?);
            let g_arr = x_buf_array(&value_to_buf(g_leaf)?);
            let n = x_arr.len();
            let stride = n.div_ceil(CHECKED_ELEMENTS).max(1);
            for k in (0..n).step_by(stride) {
                let x0 = x_arr.as_slice().map(|s| s[k]).unwrap_or(f64::NAN);
                let h = 1e-6 * x0.abs().max(1.0);
                let mut eval_at = |value: f64| -> EvalResult<f64> {
                    let mut moved = x_arr.clone();
                    if let Some(s) = moved.as_slice_mut() {
                        s[k] = value;
                    }
                    let mut moved_leaves = leaves.clone();
                    moved_leaves[j] = if moved.ndim() == 0 {
                        Value::Float(value)
                    } else {
                        Value::tensor(moved)
                    };
                    let mut shifted = call_args.clone();
                    shifted[position] = rebuild_in_order(&tree, &mut moved_leaves.into_iter());
                    interp.apply(&f, shifted)?.as_f64()
                };
                let fd = (eval_at(x0 + h)? - eval_at(x0 - h)?) / (2.0 * h);
                let g = g_arr.as_slice().map(|s| s[k]).unwrap_or(f64::NAN);
                let error = (g - fd).abs() / g.abs().max(fd.abs()).max(1.0);
                worst = if error.is_nan() {
                    f64::NAN
                } else {
                    worst.max(error)
                };
            }
        }
    }
    Ok(Value::Float(worst))
}

fn x_buf_array(buf: &Buf) -> ArrayD<f64> {
    match buf {
        Buf::Scalar(x) => ArrayD::from_elem(IxDyn(&[]), *x),
        Buf::Array(a) => a.as_standard_layout().into_owned(),
    }
}

/// The tape `tape-stats` and `show-tape` look at: the gradient of a scalar
/// function with respect to its first argument, or the function's own tape.
fn tape_of(interp: &mut Interp, args: &Args) -> EvalResult<Outcome> {
    gradient_or_value(interp, args, false, |interp, f, call_args, request| {
        autodiff::run_on_tape(interp, f, call_args, request)
    })
}

/// Runs `attempt` with the request `(grad f)` makes at the list `args[1]`
/// (with f's value too when `with_value`); a function that does not return
/// a number (refused before anything is compiled), or has no arguments,
/// gets the request for its own results instead.
fn gradient_or_value<T>(
    interp: &mut Interp,
    args: &Args,
    with_value: bool,
    mut attempt: impl FnMut(&mut Interp, &Value, &[Value], &Request) -> EvalResult<T>,
) -> EvalResult<T> {
    expect_function(&args[0])?;
    let call_args = list_arg(&args[1], "the second argument")?;
    let gradient = Request::Grad {
        wrt: vec![0],
        value: with_value,
    };
    if call_args.is_empty() {
        return attempt(interp, &args[0], &call_args, &Request::Value);
    }
    match attempt(interp, &args[0], &call_args, &gradient) {
        Err(error)
            if error
                .message
                .starts_with("grad needs a function returning a number") =>
        {
            attempt(interp, &args[0], &call_args, &Request::Value)
        }
        other => other,
    }
}

fn tape_stats(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (outcome, measured) = crate::backends::cpu::measure::measure(|| tape_of(interp, args));
    let outcome = outcome?;
    let compiled = outcome
        .compiled
        .ok_or_else(|| EvalError::type_error("tape-stats inside a traced function has no tape"))?;
    let stats = &compiled.tape.stats;
    let (device_kernels, device_graph, device_host_ops) = device_program(&compiled.tape);
    let entry = |name: &str, value: Value| Value::list([Value::symbol(name), value]);
    let int = |n: usize| Value::Int(n as i64);
    Ok(Value::list([
        entry("instructions", int(stats.instructions)),
        entry("stored-values", int(stats.values)),
        entry(
            "recomputed-values",
            Value::Int(measured.recomputed_values as i64),
        ),
        entry(
            "recomputation-flops",
            Value::Int(measured.recomputed_flops as i64),
        ),
        entry("peak-bytes", int(stats.peak_bytes)),
        entry("measured-peak-bytes", int(measured.peak_bytes)),
        entry(
            "planned-bytes",
            int(crate::tape::plan::plan(&compiled.tape).total()),
        ),
        entry(
            "memory-budget",
            stats.memory_budget.map_or(Value::Bool(false), int),
        ),
        entry(
            "within-budget",
            Value::Bool(stats.memory_budget.is_none_or(|b| stats.peak_bytes <= b)),
        ),
        entry("rematerialized-values", int(stats.rematerialized)),
        entry("snapshot-bytes", int(measured.peak_snapshot_bytes)),
        entry("flops", Value::Int(stats.flops as i64)),
        entry("fused-groups", int(stats.fused_groups)),
        entry("program-nodes", int(compiled.program_nodes)),
        entry("optimized-nodes", int(compiled.report.nodes_after)),
        entry("saturation", Value::symbol(stop_name(compiled.report.stop))),
        entry(
            "cost-before",
            Value::Int(compiled.report.cost_before as i64),
        ),
        entry("cost-after", Value::Int(compiled.report.cost_after as i64)),
        entry("cached", Value::Bool(outcome.cached == Some(true))),
        entry(
            "cache-hits",
            Value::Int(interp.numeric.driver.tapes.hits as i64),
        ),
        entry(
            "cache-misses",
            Value::Int(interp.numeric.driver.tapes.misses as i64),
        ),
        entry("device-kernels", device_kernels),
        entry("device-graph", device_graph),
        entry("device-host-ops", device_host_ops),
    ]))
}

/// The tape's device program as `tape-stats` shows it: its kernel
/// launches and library calls per run (a loop's steps counted once),
/// whether it runs as one CUDA graph from its second run, and how many of
/// its operations run on the host (operands copied there and back);
/// planned here, for numbers where the tape takes numbers and arrays
/// elsewhere. All #f in a build without CUDA or for a tape the CUDA
/// backend cannot run.
fn device_program(tape: &crate::tape::Tape) -> (Value, Value, Value) {
    #[cfg(feature = "cuda")]
    {
        use crate::backends::cuda::program::{Kind, plan};
        let kinds: Vec<Kind> = tape
            .input_shapes
            .iter()
            .map(|shape| {
                if shape.is_empty() {
                    Kind::Host
                } else {
                    Kind::Device
                }
            })
            .collect();
        if let Ok(program) = plan(tape, &kinds) {
            return (
                Value::Int(program.kernels() as i64),
                Value::Bool(program.graphable),
                Value::Int(program.on_host() as i64),
            );
        }
    }
    let _ = tape;
    (Value::Bool(false), Value::Bool(false), Value::Bool(false))
}

fn stop_name(stop: Stop) -> &'static str {
    match stop {
        Stop::NotRun => "not-run",
        Stop::TooLarge => "skipped-large",
        Stop::Saturated => "saturated",
        Stop::IterationLimit => "iteration-limit",
        Stop::NodeLimit => "node-limit",
        Stop::TimeLimit => "time-limit",
    }
}

fn show_tape(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let outcome = tape_of(interp, args)?;
    let compiled = outcome
        .compiled
        .ok_or_else(|| EvalError::type_error("show-tape inside a traced function has no tape"))?;
    Ok(Value::string(compiled.tape.to_string()))
}

/// `(save-dot f args path :graph what :value flag)`: the graph of the tape
/// `show-tape` shows (or, with `:graph 'program`, of the optimized tensor
/// program it is compiled from) as Graphviz DOT, and drawn as SVG.
fn save_dot(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = match &args[2] {
        Value::Str(path) => path.to_string(),
        other => {
            return Err(EvalError::type_error(format!(
                "the path must be a string, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    if path.is_empty() {
        return Err(EvalError::type_error("the path is empty"));
    }
    let program = match args.option("graph") {
        None => false,
        Some(Value::Symbol(s)) if s.name() == "tape" => false,
        Some(Value::Symbol(s)) if s.name() == "program" => true,
        Some(other) => {
            return Err(EvalError::type_error(format!(
                ":graph takes 'tape or 'program, got {}",
                other.short()
            )));
        }
    };
    let with_value = match args.option("value") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other) => {
            return Err(EvalError::type_error(format!(
                ":value takes #t or #f, got {}",
                other.short()
            )));
        }
    };
    let name = function_name(&args[0]);
    let graph = if program {
        let call = gradient_or_value(interp, args, with_value, autodiff::optimized_call)?;
        let optimized = &call.program;
        crate::tape::dot::program_graph(
            optimized.expr.as_ref(),
            &optimized.shapes,
            &optimized.roots,
            &call.names,
            &format!("optimized program of {name}"),
        )
    } else {
        let call = gradient_or_value(interp, args, with_value, autodiff::compile_call)?;
        crate::tape::dot::tape_graph(&call.compiled.tape, &call.names, &format!("tape of {name}"))
    };
    let write = |target: &str, text: &str| {
        std::fs::write(target, text)
            .map_err(|err| EvalError::io(format!("cannot write {target}: {err}")))
    };
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".svg") {
        let svg = graph
            .svg()
            .map_err(|why| EvalError::io(format!("cannot draw {path}: {why}")))?;
        write(&path, &svg)?;
    } else {
        write(&path, graph.dot())?;
        if lower.ends_with(".dot") {
            let beside = format!("{}.svg", &path[..path.len() - ".dot".len()]);
            match graph.svg() {
                Ok(svg) => write(&beside, &svg)?,
                Err(why) => interp.warn(&format!("save-dot wrote {path} but not {beside}: {why}")),
            }
        }
    }
    Ok(Value::string(path))
}

/// `(set-memory-budget! bytes)`, or `#f` for none.
fn set_memory_budget(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    interp.numeric.memory_budget = match &args[0] {
        Value::Bool(false) => None,
        Value::Int(n) if *n > 0 => Some(*n as usize),
        other => {
            return Err(EvalError::type_error(format!(
                "the budget is a positive number of bytes, or #f for none; got {}",
                other.short()
            )));
        }
    };
    Ok(Value::Void)
}

/// `(scan step init n :checkpoint strategy :snapshots k :memory-budget
/// bytes)`.
fn scan(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (step, init) = (&args[0], &args[1]);
    let (n, steps) = match &args[2] {
        Value::Int(n) if *n >= 0 => (*n as usize, Steps::Count(*n as usize)),
        xs @ (Value::Tensor(_) | Value::TensorF32(_) | Value::Traced(_) | Value::Pair(_)) => {
            (sequence_rows(xs), Steps::Over(xs.clone()))
        }
        other => {
            return Err(EvalError::type_error(format!(
                "scan's third argument is a number of steps (a non-negative integer) or the tensors to run over, got {}",
                other.short()
            )));
        }
    };
    let strategy = scan_strategy(args, init, n)?;
    autodiff::loops::scan(interp, step, init, steps, strategy)
}

/// The snapshots a `while-loop` keeps when `:snapshots` is not given.
const WHILE_LOOP_SNAPSHOTS: usize = 64;

/// The positive integer option `name`, if given.
fn positive_option(args: &Args, name: &str) -> EvalResult<Option<usize>> {
    match args.option(name) {
        None => Ok(None),
        Some(Value::Int(k)) if *k >= 1 => Ok(Some(*k as usize)),
        Some(other) => Err(EvalError::type_error(format!(
            ":{name} must be a positive integer, got {}",
            other.short()
        ))),
    }
}

fn while_loop(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let snapshots = positive_option(args, "snapshots")?.unwrap_or(WHILE_LOOP_SNAPSHOTS);
    let max_steps = positive_option(args, "max-steps")?.unwrap_or(usize::MAX);
    let message = match args.option("on-max-steps") {
        None | Some(Value::Nil) => None,
        Some(Value::Str(text)) => Some(std::sync::Arc::from(text.to_string().as_str())),
        Some(other) => {
            return Err(EvalError::type_error(format!(
                ":on-max-steps must be a string (the error's message), got {}",
                other.short()
            )));
        }
    };
    // The message given is the program's own: no "while-loop:" in front.
    let expected = message
        .as_ref()
        .map(|m: &std::sync::Arc<str>| m.replace("{n}", &max_steps.to_string()));
    autodiff::loops::while_loop(
        interp,
        &args[0],
        &args[1],
        &args[2],
        max_steps,
        Strategy::Revolve(snapshots),
        message,
    )
    .map_err(|mut error| {
        if expected.as_deref() == Some(error.message.as_str()) {
            error.kind = crate::lisp::error::EvalErrorKind::User;
        }
        error
    })
}

/// The leading length of the first tensor of a scan's sequences (for the
/// default number of snapshots; `scan` checks them all).
fn sequence_rows(xs: &Value) -> usize {
    match xs {
        Value::Tensor(t) => t.shape().first().copied().unwrap_or(0),
        Value::TensorF32(t) => t.shape().first().copied().unwrap_or(0),
        Value::Traced(t) => t.shape.first().copied().unwrap_or(0),
        Value::Pair(_) => xs
            .list_to_vec()
            .ok()
            .and_then(|items| items.first().map(sequence_rows))
            .unwrap_or(0),
        _ => 0,
    }
}

/// The checkpoint strategy `scan`'s options name (default: revolve with
/// ceil(sqrt n) snapshots).
fn scan_strategy(args: &Args, init: &Value, n: usize) -> EvalResult<Strategy> {
    let count = |name: &str| positive_option(args, name);
    let snapshots = count("snapshots")?;
    let budget = count("memory-budget")?;
    let name = match args.option("checkpoint") {
        None => "revolve".to_string(),
        Some(value) => value.as_symbol().map(|s| s.to_string()).map_err(|_| {
            EvalError::type_error(format!(
                ":checkpoint takes 'store-all, 'recompute, 'revolve or 'auto, got {}",
                value.short()
            ))
        })?,
    };
    let default_snapshots = (n as f64).sqrt().ceil().max(1.0) as usize;
    Ok(match name.as_str() {
        "store-all" => Strategy::StoreAll,
        "recompute" => Strategy::Recompute,
        "revolve" => Strategy::Revolve(snapshots.unwrap_or(default_snapshots)),
        "auto" => {
            // At most half of what the process can get now: the tape's
            // other values come on top of the snapshots.
            let room = crate::host_memory::available().map(|bytes| bytes / 2);
            let budget = match (budget, room) {
                (Some(budget), Some(room)) => budget.min(room),
                (Some(budget), None) => budget,
                (None, Some(room)) => room,
                (None, None) => {
                    return Err(EvalError::type_error(
                        ":checkpoint 'auto needs :memory-budget bytes where the memory available cannot be read",
                    ));
                }
            };
            let state_bytes = state_bytes(init)?.max(1);
            let k = budget / state_bytes;
            if k >= n {
                Strategy::StoreAll
            } else {
                Strategy::Revolve(k.max(1))
            }
        }
        other => {
            return Err(EvalError::type_error(format!(
                "unknown :checkpoint '{other}: use 'store-all, 'recompute, 'revolve or 'auto"
            )));
        }
    })
}

/// The bytes of one state (8 per number).
fn state_bytes(init: &Value) -> EvalResult<usize> {
    let mut leaves = Vec::new();
    autodiff::tree::flatten(init, &mut leaves, "the state of scan")?;
    Ok(leaves
        .iter()
        .map(|leaf| match leaf {
            Value::Tensor(t) => t.len() * 8,
            Value::TensorF32(t) => t.len() * 8,
            Value::Traced(t) => t.shape.iter().product::<usize>() * 8,
            _ => 8,
        })
        .sum())
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
fn debug_nans(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let on = match &args[0] {
        Value::Bool(b) => *b,
        other => {
            return Err(EvalError::type_error(format!(
                "debug-nans takes #t or #f, got {}",
                other.short()
            )));
        }
    };
    let before = std::mem::replace(&mut interp.numeric.debug_nans, on);
    Ok(Value::Bool(before))
}

pub const BUILTINS: &[Builtin] = &[
    with_options(
        builtin(
            "value-and-grad",
            "(value-and-grad f :wrt k)",
            "A function returning (value gradient) of f at its arguments; :wrt and :holomorphic as for grad.",
            1,
            Some(1),
            value_and_grad,
        ),
        &["wrt", "holomorphic"],
    ),
    builtin(
        "vjp",
        "(vjp f args cotangent)",
        "Vector-Jacobian product: (value (cotangent-of-each-argument ...)) of f at the list args.",
        3,
        Some(3),
        vjp,
    ),
    builtin(
        "jvp",
        "(jvp f args tangents)",
        "Jacobian-vector product (forward mode): (value tangent-of-result) of f at the list args, for a list of tangents.",
        3,
        Some(3),
        jvp,
    ),
    builtin(
        "hvp",
        "(hvp f args v)",
        "Hessian-vector product of the scalar function f with respect to its first argument, at the list args.",
        3,
        Some(3),
        hvp,
    ),
    builtin(
        "stop-gradient",
        "(stop-gradient x)",
        "x, treated as a constant by differentiation.",
        1,
        Some(1),
        stop_gradient,
    ),
    builtin(
        "set-memory-budget!",
        "(set-memory-budget! bytes)",
        "Compile later tapes to keep their peak memory under bytes where recomputing cheap elementwise values can (#f: no budget); tape-stats says whether a tape fits.",
        1,
        Some(1),
        set_memory_budget,
    ),
    builtin(
        "checkpoint",
        "(checkpoint f)",
        "f, whose intermediates a gradient recomputes in the backward pass instead of storing (only f's results are kept).",
        1,
        Some(1),
        checkpoint,
    ),
    builtin(
        "jit",
        "(jit f)",
        "f compiled to a tape: traced and compiled once per argument-shape signature (and branch path), then run on the backend.",
        1,
        Some(1),
        jit,
    ),
    builtin(
        "check-grad",
        "(check-grad f args)",
        "The largest relative error of f's gradient (all arguments) against central finite differences, at the list args.",
        2,
        Some(2),
        check_grad,
    ),
    builtin(
        "tape-stats",
        "(tape-stats f args)",
        "An association list describing the compiled gradient tape of f at args: instructions, stored and recomputed values, peak bytes (planned-bytes: what a run needs with its loops' snapshots, checked against the memory the process can get before a tape runs), flops, cache use, and its device program on a GPU (device-kernels: kernel launches and library calls per run; device-graph: whether it runs as one CUDA graph from its second run; device-host-ops: operations whose operands go to the host and back, 0 when all of it runs on the device).",
        2,
        Some(2),
        tape_stats,
    ),
    with_options(
        builtin(
            "scan",
            "(scan step init n-or-xs :checkpoint strategy :snapshots k :memory-budget bytes)",
            "Runs state <- (step state i) for i from 0 to n - 1 and returns the final state (a number, tensor or list of them); i may index tensors (index, gather, (slice t i (+ i k))). Given tensors xs (or a list of them, one leading length) instead of n, runs (step carry x) over their rows x, each returning (list carry y), and returns (list final-carry ys) with the y stacked along a new first axis (JAX lax.scan). The step is compiled once. Differentiated, its reverse keeps states by :checkpoint: 'store-all, 'recompute, 'revolve (binomial, with :snapshots k states held, default ceil(sqrt n)), or 'auto (as many snapshots as :memory-budget bytes hold, and at most half the memory the process can get now). A reverse whose states cannot fit in the memory the process can get is an error before it runs.",
            3,
            Some(3),
            scan,
        ),
        &["checkpoint", "snapshots", "memory-budget"],
    ),
    with_options(
        builtin(
            "while-loop",
            "(while-loop cond body init :snapshots k :max-steps m :on-max-steps message)",
            "Runs state <- (body state) while (cond state) and returns the final state (a number, tensor or list of them); the number of steps depends on the data. cond returns a comparison (combine several with * for and, max for or). Both are compiled once. Differentiable in reverse mode (keeping at most :snapshots k states, default 64, by an online checkpointing schedule: the number of steps is not known in advance) and forward mode. Reaching :max-steps m steps with cond still true is an error, whose message :on-max-steps gives ({n} in it stands for m).",
            3,
            Some(3),
            while_loop,
        ),
        &["snapshots", "max-steps", "on-max-steps"],
    ),
    builtin(
        "debug-nans",
        "(debug-nans on)",
        "With #t, the first operation that makes a NaN or an infinity from finite operands is an error naming the operation, the pass (the function's own, or the reverse or forward-mode derivative of which call) and the call's source location; traced functions are then evaluated operation by operation instead of compiled (slower). With #f, back to normal. Returns the previous setting.",
        1,
        Some(1),
        debug_nans,
    ),
    builtin(
        "show-tape",
        "(show-tape f args)",
        "The compiled gradient tape of f at args, as text.",
        2,
        Some(2),
        show_tape,
    ),
    with_options(
        builtin(
            "save-dot",
            "(save-dot f args path :graph 'tape :value #f)",
            "Writes the graph of the tape show-tape shows (:graph 'program: the optimized tensor program before compilation; :value #t: the tape of value-and-grad) as Graphviz DOT to path and returns path. Nodes: inputs (arg0, arg1.2 for part 2 of a list argument, captured0 for a closed-over tensor) with shapes, constants, operations with result shapes, fused elementwise groups and loops as one node each, outputs (value, gradient arg0); edges run from operands to users. A path ending in .dot also gets an SVG drawing beside it (same name, .svg) when the graph is small enough to lay out here (else a warning); a path ending in .svg gets the drawing only; any other path, DOT only.",
            3,
            Some(3),
            save_dot,
        ),
        &["graph", "value"],
    ),
];

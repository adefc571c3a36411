//! Batching transformations (SPEC section 7, "Transformations and number
//! types"): `vmap`, and `jacfwd` / `jacrev` built on it (a batch of
//! tangents pushed forward, or of cotangents pulled back, as one program).

use super::{builtin, with_options};
use crate::lisp::autodiff::vmap::{Axes, Axis, vmap_in_trace};
use crate::lisp::autodiff::{self, Request};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin, NativeFn, Procedure};
use crate::lisp::trace::{node_of, traced};
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

fn function_of(f: &Value, form: &str) -> EvalResult<Value> {
    match f {
        Value::Procedure(_) => Ok(f.clone()),
        other => Err(EvalError::type_error(format!(
            "{form}: expected a function, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// One axis: an integer (negative counts from the end) or `#f`.
fn axis_of(value: &Value, option: &str) -> EvalResult<Axis> {
    match value {
        Value::Bool(false) | Value::Nil => Ok(None),
        Value::Int(k) => Ok(Some(*k)),
        other => Err(EvalError::type_error(format!(
            "vmap: {option} takes an integer axis or #f for each argument, got {}",
            other.short()
        ))),
    }
}

/// `:in-axes` / `:out-axes`: one axis for all, or a list of them.
fn axes_of(value: Option<&Value>, option: &str) -> EvalResult<Axes> {
    match value {
        None => Ok(Axes::All(Some(0))),
        Some(list @ Value::Pair(_)) => Ok(Axes::Each(
            list.list_to_vec()?
                .iter()
                .map(|v| axis_of(v, option))
                .collect::<EvalResult<_>>()?,
        )),
        Some(one) => Ok(Axes::All(axis_of(one, option)?)),
    }
}

/// Runs `body` on `args` inside a trace: the active one, or a traced and
/// replayed top-level call (one compiled program per argument signature).
fn traced_call(
    interp: &mut Interp,
    replays: &autodiff::replay::Replays,
    inner: &Value,
    args: &[Value],
    what: &str,
) -> EvalResult<Value> {
    if interp.numeric.trace.is_some() {
        return interp.apply(inner, args.to_vec());
    }
    // Arguments that are not numbers, tensors or lists of them are refused
    // here, in this form's words, rather than by the trace.
    let mut leaves = Vec::new();
    for arg in args {
        crate::lisp::autodiff::tree::flatten(arg, &mut leaves, &format!("arguments of {what}"))?;
    }
    Ok(replays.run(interp, inner, args, &Request::Value)?.value)
}

/// `(vmap f :in-axes axes :out-axes axes)`.
fn vmap(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let f = function_of(&args[0], "vmap")?;
    let in_axes = axes_of(args.option("in-axes"), ":in-axes")?;
    let out_axes = axes_of(args.option("out-axes"), ":out-axes")?;
    let name = format!("vmap of {}", f.short());
    let inner = {
        let f = f.clone();
        native(name.clone(), move |interp, call_args| {
            vmap_in_trace(interp, &f, call_args, &in_axes, &out_axes)
        })
    };
    let replays = autodiff::replay::Replays::default();
    Ok(native(name, move |interp, call_args| {
        traced_call(interp, &replays, &inner, call_args, "a vmapped function")
    }))
}

/// The shape of a traced or known number or tensor.
fn shape_of(value: &Value, what: &str) -> EvalResult<Vec<usize>> {
    match value {
        Value::Tensor(t) => Ok(t.shape().to_vec()),
        Value::TensorF32(t) => Ok(t.shape().to_vec()),
        Value::Traced(t) => Ok(t.shape.to_vec()),
        Value::Float(_) | Value::Int(_) => Ok(Vec::new()),
        other => Err(EvalError::type_error(format!(
            "{what} must be a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// The identity as `n` unit directions of `shape`: `[n] ++ shape`.
fn unit_directions(shape: &[usize]) -> EvalResult<Value> {
    let n: usize = shape.iter().product();
    let full: Vec<usize> = std::iter::once(n).chain(shape.iter().copied()).collect();
    crate::lisp::tensor::check_allocation(&full)?;
    let mut data = vec![0.0; n * n];
    for k in 0..n {
        data[k * n + k] = 1.0;
    }
    Ok(Value::tensor(
        ArrayD::from_shape_vec(IxDyn(&full), data).expect("n unit directions"),
    ))
}

/// A traced value reshaped to `shape` in the active trace.
fn reshaped(interp: &Interp, value: &Value, shape: &[usize]) -> EvalResult<Value> {
    let trace = interp
        .numeric
        .trace
        .clone()
        .ok_or_else(|| EvalError::type_error("internal: reshaped outside a trace"))?;
    let id = node_of(&trace, value)?;
    let id = trace.borrow_mut().graph.reshape(id, shape);
    Ok(traced(&trace, id))
}

/// Which mode a Jacobian is built in.
#[derive(Clone, Copy)]
enum Mode {
    Forward,
    Reverse,
}

/// `(jacfwd f)` / `(jacrev f)`: a function returning the Jacobian of `f`'s
/// one result with respect to its first argument, shaped `shape(result)
/// ++ shape(x)`: the unit directions of x pushed forward (or those of the
/// result pulled back) as one batch by `vmap`.
fn jacobian_function(args: &Args, mode: Mode) -> EvalResult<Value> {
    let form = match mode {
        Mode::Forward => "jacfwd",
        Mode::Reverse => "jacrev",
    };
    let f = function_of(&args[0], form)?;
    let name = format!("{form} of {}", f.short());
    let inner = {
        let f = f.clone();
        native(name.clone(), move |interp, call_args| {
            jacobian_in_trace(interp, &f, call_args, mode, form)
        })
    };
    let replays = autodiff::replay::Replays::default();
    Ok(native(name, move |interp, call_args| {
        traced_call(interp, &replays, &inner, call_args, form)
    }))
}

fn jacobian_in_trace(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    mode: Mode,
    form: &'static str,
) -> EvalResult<Value> {
    let Some(x) = args.first() else {
        return Err(EvalError::type_error(format!(
            "{form}: the function takes its point as first argument; none was given"
        )));
    };
    let x_shape = shape_of(x, &format!("{form}: the first argument"))?;
    let y = interp.apply(f, args.to_vec())?;
    let y_shape = shape_of(&y, &format!("{form}: the function's result"))?;
    autodiff::check_derivative_rank(form, &y_shape, &x_shape)?;
    let rest: Vec<Value> = args[1..].to_vec();
    let (directions, product) = match mode {
        Mode::Forward => {
            let (f, rest) = (f.clone(), rest.clone());
            let x = x.clone();
            let push = native(format!("{form} tangent"), move |interp, t| {
                let at_x = {
                    let (f, rest) = (f.clone(), rest.clone());
                    native("at x".into(), move |interp, a| {
                        let mut all = vec![a[0].clone()];
                        all.extend(rest.iter().cloned());
                        interp.apply(&f, all)
                    })
                };
                let outcome = autodiff::run(
                    interp,
                    &at_x,
                    std::slice::from_ref(&x),
                    &Request::Jvp,
                    &[t[0].clone()],
                )?;
                Ok(outcome.derivatives.into_iter().next().unwrap_or(Value::Nil))
            });
            (unit_directions(&x_shape)?, push)
        }
        Mode::Reverse => {
            let (f, all) = (f.clone(), args.to_vec());
            let pull = native(format!("{form} cotangent"), move |interp, ct| {
                let outcome = autodiff::run(interp, &f, &all, &Request::Vjp, &[ct[0].clone()])?;
                // One cotangent per argument: the first's.
                Ok(outcome.derivatives.into_iter().next().unwrap_or(Value::Nil))
            });
            (unit_directions(&y_shape)?, pull)
        }
    };
    let out_axes = match mode {
        Mode::Forward => Axes::All(Some(-1)),
        Mode::Reverse => Axes::All(Some(0)),
    };
    let columns = vmap_in_trace(
        interp,
        &product,
        &[directions],
        &Axes::All(Some(0)),
        &out_axes,
    )?;
    let full: Vec<usize> = y_shape.iter().chain(&x_shape).copied().collect();
    reshaped(interp, &columns, &full)
}

fn jacfwd(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    jacobian_function(args, Mode::Forward)
}

fn jacrev(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    jacobian_function(args, Mode::Reverse)
}

pub const BUILTINS: &[Builtin] = &[
    with_options(
        builtin(
            "vmap",
            "(vmap f :in-axes axes :out-axes axes)",
            "A function mapping f over an axis of its arguments: :in-axes gives the mapped axis of each argument (a list with an integer or #f per argument, #f for an argument shared by every example; one integer for all; default 0), :out-axes where the batch goes in each result (default 0). f is traced once on one example's shapes and its program rewritten over the batch, each operation by its batching rule (an operation without one is an error naming it), so the batch runs as one compiled program; vmap nests and composes with grad, jit and jacobian.",
            1,
            Some(1),
            vmap,
        ),
        &["in-axes", "out-axes"],
    ),
    builtin(
        "jacfwd",
        "(jacfwd f)",
        "A function returning the Jacobian of f's result with respect to its first argument, shaped shape(result) ++ shape(x), by forward mode: the unit directions of x pushed forward as one batch (vmap of jvp). Best when x has fewer elements than the result.",
        1,
        Some(1),
        jacfwd,
    ),
    builtin(
        "jacrev",
        "(jacrev f)",
        "A function returning the Jacobian of f's result with respect to its first argument, shaped shape(result) ++ shape(x), by reverse mode: the unit directions of the result pulled back as one batch (vmap of vjp). Best when the result has fewer elements than x.",
        1,
        Some(1),
        jacrev,
    ),
];

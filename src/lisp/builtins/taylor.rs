//! Higher-order derivatives by Taylor mode (SPEC section 8): `jet`
//! (JAX's `jax.experimental.jet`), `taylor` (the derivatives of `f` along
//! a line) and `derivatives` (of a function of one number). Each traces
//! the function once and appends its Taylor coefficients (`ad::taylor`):
//! the k-th derivative costs about k times the function, not the 2^k of
//! nested `grad`s.

use super::autodiff::{expect_function, shape_of};
use super::builtin;
use crate::lisp::autodiff::{self, Request};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The highest order asked of Taylor mode: `k!` (which turns the k-th
/// coefficient into the k-th derivative) stays a finite double to 170.
const MOST_ORDER: i64 = 170;

/// A list argument.
fn list_of(value: &Value, form: &str, what: &str) -> EvalResult<Vec<Value>> {
    if !value.is_list() {
        return Err(EvalError::type_error(format!(
            "{form}: {what} must be a list, got {}",
            value.short()
        )));
    }
    value.list_to_vec()
}

/// The order argument: a whole number from 0 to [`MOST_ORDER`].
fn order(value: &Value, form: &str) -> EvalResult<usize> {
    match value {
        Value::Int(k) if (0..=MOST_ORDER).contains(k) => Ok(*k as usize),
        Value::Int(k) => Err(EvalError::range(format!(
            "{form}: the order must be from 0 to {MOST_ORDER}, got {k}"
        ))),
        other => Err(EvalError::type_error(format!(
            "{form}: the order must be a whole number, got {}",
            other.short()
        ))),
    }
}

/// `(jet f primals series)`: the value and the series of `f` at `primals`
/// along the curve whose derivatives are `series` (one list of terms per
/// primal).
fn jet(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let primals = list_of(&args[1], "jet", "the primals")?;
    let series = list_of(&args[2], "jet", "the series")?;
    if series.len() != primals.len() {
        return Err(EvalError::shape(format!(
            "jet: {} series for {} primals",
            series.len(),
            primals.len()
        )));
    }
    let mut order = None;
    for (k, terms) in series.iter().enumerate() {
        let len = list_of(terms, "jet", "each series")?.len();
        match order {
            None => order = Some(len),
            Some(first) if first != len => {
                return Err(EvalError::shape(format!(
                    "jet: series 0 has {first} terms, series {k} has {len}"
                )));
            }
            Some(_) => {}
        }
    }
    let order = order.unwrap_or(0);
    if order == 0 {
        let value = interp.apply(&args[0], primals)?;
        return Ok(Value::list([value, Value::Nil]));
    }
    let outcome = autodiff::run(interp, &args[0], &primals, &Request::Jet { order }, &series)?;
    let series_out = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    Ok(Value::list([outcome.value, series_out]))
}

/// Checks that `x` is a number or a tensor.
fn point(x: &Value, form: &str) -> EvalResult<()> {
    match x {
        Value::Int(_)
        | Value::Float(_)
        | Value::Tensor(_)
        | Value::TensorF32(_)
        | Value::Traced(_) => Ok(()),
        other => Err(EvalError::type_error(format!(
            "{form}: the point must be a number or a tensor, got {}",
            other.short()
        ))),
    }
}

/// The derivatives `d^j/dt^j f(x + t v)` at `t = 0`, `j = 0..=k`.
fn along(
    interp: &mut Interp,
    f: &Value,
    x: &Value,
    v: &Value,
    k: usize,
    form: &str,
) -> EvalResult<Value> {
    point(x, form)?;
    if k == 0 {
        let value = interp.apply(f, vec![x.clone()])?;
        return Ok(Value::list([value]));
    }
    // The line's series is v alone: its higher terms are zero, and left
    // out of the sweep.
    let outcome = autodiff::run(
        interp,
        f,
        std::slice::from_ref(x),
        &Request::Jet { order: k },
        &[Value::list([v.clone()])],
    )?;
    let series = outcome.derivatives.into_iter().next().unwrap_or(Value::Nil);
    if outcome.value.is_list() {
        return Err(EvalError::type_error(format!(
            "{form}: the function must return a number or a tensor, not a list"
        )));
    }
    let mut all = vec![outcome.value];
    all.extend(series.list_to_vec()?);
    Ok(Value::list(all))
}

/// `(taylor f x v k)`.
fn taylor(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    let k = order(&args[3], "taylor")?;
    along(interp, &args[0], &args[1], &args[2], k, "taylor")
}

/// `(derivatives f x k)`.
fn derivatives(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    expect_function(&args[0])?;
    if !matches!(args[1], Value::Int(_) | Value::Float(_) | Value::Traced(_)) {
        return Err(EvalError::type_error(format!(
            "derivatives: x must be a number, got {}",
            args[1].short()
        )));
    }
    let k = order(&args[2], "derivatives")?;
    along(
        interp,
        &args[0],
        &args[1],
        &Value::Float(1.0),
        k,
        "derivatives",
    )
}

/// `(random-signs shape seed)`: Rademacher directions for stochastic
/// trace estimates, from a generator of their own.
fn random_signs(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let shape = crate::lisp::tensor::shape_from_list(&args[0])?;
    crate::lisp::tensor::check_allocation(&shape)?;
    let seed = args[1].as_i64()?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed as u64);
    let n: usize = shape.iter().product();
    let signs: Vec<f64> = (0..n)
        .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
        .collect();
    let array = ArrayD::from_shape_vec(IxDyn(&shape), signs).expect("n entries");
    Ok(Value::tensor(array))
}

/// `(collapsed-sum values directions [weights])`: the (weighted) sum
/// over the first axis of `values`, computed for the batch `directions`;
/// inside a traced function the sum is pushed up through the program
/// (`ad::collapse`), else it is taken as it is.
fn collapsed_sum(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let weights = args
        .values
        .get(2)
        .filter(|w| !matches!(w, Value::Bool(false)));
    if let Value::Traced(values) = &args[0] {
        let trace = values.trace.clone();
        let values_id = crate::lisp::trace::node_of(&trace, &args[0])?;
        let source = crate::lisp::trace::node_of(&trace, &args[1])?;
        let weights_id = match weights {
            Some(w) => Some(crate::lisp::trace::node_of(&trace, w)?),
            None => None,
        };
        let shape = trace.borrow().graph.shape(values_id).clone();
        check_batch(&shape, weights.map(shape_of).as_deref())?;
        let sum = {
            let mut t = trace.borrow_mut();
            crate::ad::collapse::collapsed_sum(&mut t.graph, values_id, source, weights_id)
        };
        return Ok(crate::lisp::trace::traced(&trace, sum));
    }
    let values = args[0].as_tensor()?;
    check_batch(values.shape(), weights.map(shape_of).as_deref())?;
    let summed = match weights {
        Some(w) => {
            let w = w.as_tensor()?;
            let mut shape = vec![w.len()];
            shape.extend(std::iter::repeat_n(1, values.ndim() - 1));
            let column = w
                .to_shape(IxDyn(&shape))
                .map_err(|e| EvalError::shape(e.to_string()))?;
            (&*values * &column).sum_axis(ndarray::Axis(0))
        }
        None => values.sum_axis(ndarray::Axis(0)),
    };
    let _ = interp;
    Ok(match summed.ndim() {
        0 => Value::Float(summed.iter().copied().next().unwrap_or(0.0)),
        _ => Value::tensor(summed),
    })
}

/// A batch of values (at least one axis) and weights of its length.
fn check_batch(values: &[usize], weights: Option<&[usize]>) -> EvalResult<()> {
    let Some(&batch) = values.first() else {
        return Err(EvalError::shape(
            "collapsed-sum: the values must have a first axis to sum over, got a number",
        ));
    };
    match weights {
        Some(w) if w != [batch] => Err(EvalError::shape(format!(
            "collapsed-sum: the weights must be a vector of {batch} numbers, got shape {w:?}"
        ))),
        _ => Ok(()),
    }
}

pub const BUILTINS: &[Builtin] = &[
    builtin(
        "jet",
        "(jet f primals series)",
        "Taylor mode (JAX's jet): (list value series-out) of f at the list primals along the curve whose derivatives at t = 0 are series (for each primal a list of k terms shaped as it: x'(0), x''(0), ...); series-out holds the derivatives of f's result along the curve, k of them (a list of such lists for a list of results).",
        3,
        Some(3),
        jet,
    ),
    builtin(
        "taylor",
        "(taylor f x v k)",
        "The k + 1 derivatives d^j/dt^j f(x + t v) at t = 0, j = 0..k (the value first), by one Taylor-mode sweep; x and v have one shape, f returns a number or a tensor.",
        4,
        Some(4),
        taylor,
    ),
    builtin(
        "derivatives",
        "(derivatives f x k)",
        "(f(x) f'(x) ... f^(k)(x)) for a number x, by one Taylor-mode sweep (orders up to 170).",
        3,
        Some(3),
        derivatives,
    ),
    builtin(
        "random-signs",
        "(random-signs shape seed)",
        "A tensor of shape whose entries are 1 or -1 with equal probability (Rademacher), drawn from a generator seeded by seed alone (the one behind rand is untouched): the directions of stochastic trace estimates.",
        2,
        Some(2),
        random_signs,
    ),
    builtin(
        "collapsed-sum",
        "(collapsed-sum values directions [weights])",
        "The sum over the first axis of values (weighted by the vector weights when given), where values were computed for the batch directions along that axis (a vmap over them). Inside a traced function (jit, grad) the sum is pushed up through every operation linear in the batched values, so that it is taken where batched values meet (Dangel et al.'s collapsed Taylor mode): laplacian's 'collapsed method.",
        2,
        Some(3),
        collapsed_sum,
    ),
];

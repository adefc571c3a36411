//! Numeric differentiation of Lisp functions (SPEC section 4 "Numeric",
//! issue 4), checked against oracles as STYLE.md section 8 asks:
//!
//! 1. every differentiable built-in's reverse rule (`grad`, `vjp`) and
//!    forward rule (`jvp`) against central finite differences of the eager
//!    (untraced) built-ins, on random shapes with broadcasting (proptest);
//! 2. Hessians: symmetric, equal to the Jacobian of the gradient and to
//!    finite differences of the gradient, and `hvp` equal to `H v`;
//! 3. `jvp` against `vjp` (the dot-product test) and against `jacobian`;
//! 4. `check-grad` on composite functions (MLP, Rosenbrock, control flow,
//!    closures, nested differentiation, ...);
//! 5. the tape cache (`tape-stats`, `jit`);
//! 6. errors: a message, a kind, a location, and no panic;
//! 7. the Rust API `Engine::compile_grad`.
//!
//! One module per part, in `tests/numeric/` (`ops.rs`, `hessians.rs`,
//! `linearization.rs`, `composites.rs`, `cache.rs`, `errors.rs`,
//! `compiled.rs`); `regressions.rs` holds one test per bug these tests
//! found, each now fixed.
//!
//! The finite-difference oracle always runs the function eagerly, outside
//! any trace, so it shares no code with the tape being checked.

use epsilon::{Engine, EvalErrorKind, Value};
use ndarray::{ArrayD, Dimension, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use std::cell::RefCell;
use std::fmt::Write as _;

#[path = "numeric/cache.rs"]
mod cache;
#[path = "numeric/compiled.rs"]
mod compiled;
#[path = "numeric/composites.rs"]
mod composites;
#[path = "numeric/constant_leaves.rs"]
mod constant_leaves;
#[path = "numeric/custom_rules.rs"]
mod custom_rules;
#[path = "numeric/debug_nans.rs"]
mod debug_nans;
#[path = "numeric/dtype.rs"]
mod dtype;
#[path = "numeric/errors.rs"]
mod errors;
#[path = "numeric/hessians.rs"]
mod hessians;
#[path = "numeric/implicit.rs"]
mod implicit;
#[path = "numeric/linalg_second_order.rs"]
mod linalg_second_order;
#[path = "numeric/linearization.rs"]
mod linearization;
#[path = "numeric/loop_hessians.rs"]
mod loop_hessians;
#[path = "numeric/native.rs"]
mod native_kernels;
#[path = "numeric/odeint.rs"]
mod odeint;
#[path = "numeric/ops.rs"]
mod ops;
#[path = "numeric/regressions.rs"]
mod regressions;
#[path = "numeric/replay.rs"]
mod replay;
#[path = "numeric/review.rs"]
mod review;
#[path = "numeric/scan.rs"]
mod scan;
#[path = "numeric/scan_over.rs"]
mod scan_over;
#[path = "numeric/scan_review.rs"]
mod scan_review;
#[path = "numeric/sparse_hessian.rs"]
mod sparse_hessian;
#[path = "numeric/sparse_jacobian.rs"]
mod sparse_jacobian;
#[path = "numeric/straight_line.rs"]
mod straight_line;
#[path = "numeric/table.rs"]
mod table;
#[path = "numeric/table_arrays.rs"]
mod table_arrays;
#[path = "numeric/table_einsum.rs"]
mod table_einsum;
#[path = "numeric/table_linalg.rs"]
mod table_linalg;
#[path = "numeric/table_linalg_values.rs"]
mod table_linalg_values;
#[path = "numeric/table_reduce.rs"]
mod table_reduce;
#[path = "numeric/table_special.rs"]
mod table_special;
#[path = "numeric/untaken_branches.rs"]
mod untaken_branches;
#[path = "numeric/vmap.rs"]
mod vmap;
#[path = "numeric/while_loop.rs"]
mod while_loop;

// ---------------------------------------------------------------- helpers

/// Relative tolerance of a derivative against a central finite difference.
const FD_TOL: f64 = 1e-5;

/// Relative tolerance of two derivatives that are exact up to rounding.
const EXACT_TOL: f64 = 1e-9;

/// |got - want| <= tol * max(1, |want|); false on NaN.
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

/// Helpers that the op sources below may call, loaded into every engine.
const PRELUDE: &str = r"
(define (tree-sum t)
  (if (list? t) (apply + (map tree-sum t)) (* t (sin t))))
(define (second-of l) (car (cdr l)))
";

fn engine() -> Engine {
    let mut engine = Engine::new();
    eval(&mut engine, PRELUDE);
    engine
}

/// Evaluates `source`, failing the test with the rendered error.
fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|error| panic!("{source}\n{}", error.render()))
}

/// Evaluates `form` to a number, failing the test otherwise.
fn number(engine: &mut Engine, form: &str) -> f64 {
    eval(engine, form)
        .as_f64()
        .unwrap_or_else(|e| panic!("{form}: {e}"))
}

/// Evaluates `source`; the error rendered as text.
fn try_eval(engine: &mut Engine, source: &str) -> Result<Value, String> {
    engine
        .eval(source)
        .map_err(|error| format!("{source}: {}", error.render()))
}

/// Calls `f` on `args`; the error rendered as text.
fn call(engine: &mut Engine, f: &Value, args: &[Value]) -> Result<Value, String> {
    engine.call(f, args).map_err(|error| error.render())
}

/// Calls the global `name` on `args`; the error rendered as text.
fn call_named(engine: &mut Engine, name: &str, args: &[Value]) -> Result<Value, String> {
    engine
        .call_named(name, args)
        .map_err(|error| format!("({name} ...): {}", error.render()))
}

/// A number or tensor as an array (a number is 0-dimensional).
fn array(value: &Value) -> Result<ArrayD<f64>, String> {
    match value {
        Value::Int(n) => Ok(ArrayD::from_elem(IxDyn(&[]), *n as f64)),
        Value::Float(x) => Ok(ArrayD::from_elem(IxDyn(&[]), *x)),
        Value::Tensor(t) => Ok(t.as_standard_layout().into_owned()),
        Value::TensorF32(t) => Ok(t.mapv(f64::from)),
        other => Err(format!("expected a number or tensor, got {other}")),
    }
}

/// The elements of a list value.
fn items(value: &Value) -> Result<Vec<Value>, String> {
    value
        .list_to_vec()
        .map_err(|_| format!("expected a list, got {value}"))
}

/// A number or tensor, or a (nested) list of them, flattened to arrays.
fn parts(value: &Value) -> Result<Vec<ArrayD<f64>>, String> {
    if value.is_list() {
        let mut all = Vec::new();
        for item in items(value)? {
            all.extend(parts(&item)?);
        }
        Ok(all)
    } else {
        Ok(vec![array(value)?])
    }
}

/// An array as a value: a number when 0-dimensional.
fn value_of(array: &ArrayD<f64>) -> Value {
    if array.ndim() == 0 {
        Value::Float(array.iter().next().copied().unwrap_or(f64::NAN))
    } else {
        Value::from(array.clone())
    }
}

fn list_of(values: Vec<Value>) -> Value {
    Value::list(values)
}

/// Checks that `got` has `want`'s shape and agrees elementwise.
fn compare(what: &str, got: &ArrayD<f64>, want: &ArrayD<f64>, tol: f64) -> Result<(), String> {
    if got.shape() != want.shape() {
        return Err(format!(
            "{what}: shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
    }
    for ((index, &g), &w) in got.indexed_iter().zip(want.iter()) {
        if !close(g, w, tol) {
            return Err(format!(
                "{what}: element {:?} is {g}, expected {w}\n    got      {got}\n    expected {want}",
                index.slice()
            ));
        }
    }
    Ok(())
}

fn dot(a: &ArrayD<f64>, b: &ArrayD<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
}

fn max_abs(a: &ArrayD<f64>) -> f64 {
    a.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// SplitMix64: the values of a case, reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    fn array(&mut self, shape: &[usize], domain: Domain) -> ArrayD<f64> {
        ArrayD::from_shape_simple_fn(IxDyn(shape), || domain.sample(self))
    }
}

/// Where the values of an argument are drawn from.
#[derive(Clone, Copy, Debug)]
enum Domain {
    /// Uniform in [lo, hi].
    Range(f64, f64),
    /// |x| uniform in [lo, hi], either sign (away from a kink at 0).
    Away(f64, f64),
    /// 0.0 or 1.0: a mask for `where`.
    Mask,
    /// A whole number in [lo, hi]: an index.
    Whole(i64, i64),
}

impl Domain {
    fn sample(self, rng: &mut Rng) -> f64 {
        match self {
            Domain::Range(lo, hi) => rng.uniform(lo, hi),
            Domain::Away(lo, hi) => {
                let magnitude = rng.uniform(lo, hi);
                if rng.unit() < 0.5 {
                    -magnitude
                } else {
                    magnitude
                }
            }
            Domain::Whole(lo, hi) => (lo + (rng.next_u64() % (hi - lo + 1) as u64) as i64) as f64,
            Domain::Mask => {
                if rng.unit() < 0.5 {
                    0.0
                } else {
                    1.0
                }
            }
        }
    }
}

const R1: Domain = Domain::Range(-1.0, 1.0);
const R2: Domain = Domain::Range(-2.0, 2.0);
const R3: Domain = Domain::Range(-3.0, 3.0);
const POS: Domain = Domain::Range(0.1, 3.0);
const AWAY: Domain = Domain::Away(0.1, 2.0);

/// Central finite difference of the eager `f` at `xs` in argument `k`,
/// element by element, h = 1e-6 * max(1, |x|).
fn fd_gradient(
    engine: &mut Engine,
    f: &Value,
    xs: &[ArrayD<f64>],
    k: usize,
) -> Result<ArrayD<f64>, String> {
    let mut gradient = ArrayD::zeros(xs[k].raw_dim());
    let n = xs[k].len();
    for flat in 0..n {
        let x0 = xs[k].iter().nth(flat).copied().unwrap_or(f64::NAN);
        let h = 1e-6 * x0.abs().max(1.0);
        let mut at = |x: f64| -> Result<f64, String> {
            let mut moved = xs.to_vec();
            if let Some(slot) = moved[k].iter_mut().nth(flat) {
                *slot = x;
            }
            let args: Vec<Value> = moved.iter().map(value_of).collect();
            call(engine, f, &args)?.as_f64().map_err(|e| e.to_string())
        };
        let slope = (at(x0 + h)? - at(x0 - h)?) / (2.0 * h);
        if let Some(slot) = gradient.iter_mut().nth(flat) {
            *slot = slope;
        }
    }
    Ok(gradient)
}

/// Central finite difference of the eager `f` at `xs` along `tangents`
/// (all arguments moved at once), elementwise over the result's parts.
fn fd_directional(
    engine: &mut Engine,
    f: &Value,
    xs: &[ArrayD<f64>],
    tangents: &[ArrayD<f64>],
) -> Result<Vec<ArrayD<f64>>, String> {
    let scale = xs.iter().map(max_abs).fold(1.0f64, f64::max);
    let h = 1e-6 * scale;
    let mut at = |step: f64| -> Result<Vec<ArrayD<f64>>, String> {
        let args: Vec<Value> = xs
            .iter()
            .zip(tangents)
            .map(|(x, t)| value_of(&(x + &(t * step))))
            .collect();
        parts(&call(engine, f, &args)?)
    };
    let (above, below) = (at(h)?, at(-h)?);
    Ok(above
        .iter()
        .zip(&below)
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect())
}

fn op_config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_global_rejects: 4096,
        ..ProptestConfig::default()
    }
}

fn show_list(items: &[impl std::fmt::Display]) -> String {
    let parts: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("'({})", parts.join(" "))
}

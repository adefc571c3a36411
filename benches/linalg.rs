//! The linear-algebra workloads of issue 16, defined in `bench/linalg/*.lisp`
//! with the same closed-form data as the JAX reference
//! `bench/reference/linalg_workloads.py`:
//!
//! - GMM: the objective (`jit`) and its gradient (`grad`, `value-and-grad`)
//!   with respect to all four parameter arrays;
//! - BA: the residuals (`jit`), the per-observation Jacobian blocks (forward
//!   mode, 14 directions) and the gradient of half the squared residuals
//!   with respect to cameras and points (through `gather`'s reverse);
//! - GP: the negative log marginal likelihood (`jit`) and its value and
//!   gradient with respect to the three hyperparameters.
//!
//! Each workload file is evaluated once; before timing, its results are
//! checked against the values the JAX script prints (`check ... ok` or
//! `MISMATCH` on stderr). What is timed is one call through
//! `Engine::call`: tracing, the tape cache, running the tape.
//!
//! Run: `cargo bench --bench linalg` (one workload: `cargo bench --bench linalg -- gp`).

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::{Engine, Value};
use std::hint::black_box;
use std::time::Duration;

const GMM: &str = include_str!("../bench/linalg/gmm.lisp");
const BA: &str = include_str!("../bench/linalg/ba.lisp");
const GP: &str = include_str!("../bench/linalg/gp.lisp");

/// Values printed by `JAX_PLATFORMS=cpu python3 bench/reference/linalg_workloads.py`.
const JAX_GMM_F: f64 = -138464.50562826978;
const JAX_GMM_GRAD_SUMS: [f64; 4] = [
    6.110667527536862e-13,
    144.9125835932935,
    7717.595441087005,
    -39283.211658229266,
];
const JAX_BA_RESIDUAL_SUM: f64 = -44374.95708809917;
const JAX_BA_JACOBIAN_SUM: f64 = 947669.4669066718;
const JAX_BA_GRAD_SUMS: [f64; 2] = [830367927.1543006, -158491342.6141765];
const JAX_GP_F: f64 = -168.95349354586074;
const JAX_GP_GRAD: [f64; 3] = [387.2573099722872, -62.46248188562404, 893.0995966149374];

fn engine_with(source: &str) -> Engine {
    let mut eps = Engine::new();
    eps.eval(source).expect("the workload file runs");
    eps
}

fn global(eps: &Engine, name: &str) -> Value {
    eps.get(name)
        .unwrap_or_else(|| panic!("the workload defines {name}"))
}

/// Evaluates `expr` to a number.
fn number(eps: &mut Engine, expr: &str) -> f64 {
    eps.eval(expr)
        .and_then(|v| v.as_f64().map_err(Into::into))
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn check(what: &str, got: f64, want: f64, tolerance: f64) {
    let scale = want.abs().max(1.0);
    let error = (got - want).abs() / scale;
    let verdict = if error <= tolerance { "ok" } else { "MISMATCH" };
    eprintln!("check {what}: {got:?} vs JAX {want:?} (error {error:.2e}) {verdict}");
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group
}

fn gmm(c: &mut Criterion) {
    let mut eps = engine_with(GMM);
    check(
        "GMM f",
        number(&mut eps, "(gmm-f params)"),
        JAX_GMM_F,
        1e-10,
    );
    for (k, want) in JAX_GMM_GRAD_SUMS.iter().enumerate() {
        let got = number(&mut eps, &format!("(sum (nth (gmm-grad params) {k}))"));
        // The alphas' gradient sums to zero up to rounding.
        check(&format!("GMM grad sum {k}"), got, *want, 1e-8);
    }
    let params = global(&eps, "params");
    let mut group = group(c, "gmm_d10_k50_n1e4");
    for (label, name) in [("f", "gmm-f"), ("grad", "gmm-grad"), ("vgrad", "gmm-vgrad")] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, std::slice::from_ref(&params)).expect("runs")))
        });
    }
    group.finish();
}

fn ba(c: &mut Criterion) {
    let mut eps = engine_with(BA);
    check(
        "BA residual sum",
        number(&mut eps, "(sum (ba-f cams points))"),
        JAX_BA_RESIDUAL_SUM,
        1e-10,
    );
    check(
        "BA jacobian sum",
        number(&mut eps, "(sum (ba-jacobian cams points))"),
        JAX_BA_JACOBIAN_SUM,
        1e-10,
    );
    for (k, want) in JAX_BA_GRAD_SUMS.iter().enumerate() {
        let got = number(&mut eps, &format!("(sum (nth (ba-grad cams points) {k}))"));
        check(&format!("BA grad sum {k}"), got, *want, 1e-10);
    }
    let args = [global(&eps, "cams"), global(&eps, "points")];
    let mut group = group(c, "ba_50cams_1e4points_5e4obs");
    for (label, name) in [
        ("f", "ba-f"),
        ("jacobian", "ba-jacobian"),
        ("grad", "ba-grad"),
    ] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, &args).expect("runs")))
        });
    }
    group.finish();
}

fn gp(c: &mut Criterion) {
    let mut eps = engine_with(GP);
    check("GP f", number(&mut eps, "(gp-f theta)"), JAX_GP_F, 1e-10);
    for (k, want) in JAX_GP_GRAD.iter().enumerate() {
        let got = number(&mut eps, &format!("(index (second (gp-vgrad theta)) {k})"));
        check(&format!("GP grad {k}"), got, *want, 1e-8);
    }
    let theta = global(&eps, "theta");
    let mut group = group(c, "gp_n1000");
    for (label, name) in [("f", "gp-f"), ("vgrad", "gp-vgrad")] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, std::slice::from_ref(&theta)).expect("runs")))
        });
    }
    group.finish();
}

criterion_group!(benches, gmm, ba, gp);
criterion_main!(benches);

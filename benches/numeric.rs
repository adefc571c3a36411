//! Numeric reverse mode: the workloads W1, W2, W5 and W6 of
//! docs/design.md, defined in `bench/numeric/*.lisp` with the same data as the JAX
//! reference `bench/reference/numeric_workloads.py` where the data are given
//! by a formula (W1, W6, x of W5); W2's data and W5's `A` are Epsilon's own
//! seeded `randn`, with the same shapes.
//!
//! Each workload file is evaluated once; the functions it defines (`jit`,
//! `grad`, `value-and-grad`, `hessian` of a Lisp function) are fetched as
//! values and called through `Engine::call`, so what is timed is one call:
//! tracing the Lisp function, looking the tape up in the cache, and running it.
//!
//! Before timing, each workload computes its results once and prints them
//! with the reference values (`check ... ok` or `MISMATCH`) to stderr.
//!
//! Run: `cargo bench --bench numeric` (a subset: `cargo bench --bench numeric -- w1`;
//! a workload whose group name the filter does not match is not even set up,
//! so its checks do not run either).
//!
//! Profile one measurement (the filter keeps the other workloads out):
//! `perf record -g target/release/deps/numeric-<hash> --bench --profile-time 10 'w1_rosenbrock_1e6/grad$'`.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::{Engine, Value};
use std::hint::black_box;
use std::time::Duration;

const W1: &str = include_str!("../bench/numeric/w1-rosenbrock.lisp");
const W2: &str = include_str!("../bench/numeric/w2-mlp.lisp");
const W5: &str = include_str!("../bench/numeric/w5-hessian.lisp");
const W6: &str = include_str!("../bench/numeric/w6-logistic.lisp");

/// Values printed by `JAX_PLATFORMS=cpu python3 bench/reference/numeric_workloads.py`.
const JAX_W1_F: f64 = 54666680.66686734;
const JAX_W1_GRAD_SUM: f64 = -201999999.99960002;
const JAX_W6_DERIVATIVE: f64 = 0.11890606420927814;

/// Whether the command line's filter (criterion's positional argument, a
/// regular expression; here matched loosely by substring) may select a
/// benchmark of `group`. Without a filter every group is wanted.
fn wanted(group: &str) -> bool {
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg.starts_with("--") {
            // Options that take a value: skip the value too.
            if [
                "--profile-time",
                "--save-baseline",
                "--baseline",
                "--baseline-lenient",
                "--load-baseline",
                "--sample-size",
                "--warm-up-time",
                "--measurement-time",
                "--nresamples",
                "--noise-threshold",
                "--confidence-level",
                "--significance-level",
                "--plotting-backend",
                "--output-format",
                "--color",
                "--format",
            ]
            .contains(&arg.as_str())
            {
                args.next();
            }
        } else {
            filters.push(arg);
        }
    }
    let matches = |f: &str, g: &str| {
        let head = f.trim_start_matches('^').split('/').next().unwrap_or(f);
        g.contains(head) || head.contains(g)
    };
    filters.is_empty()
        || filters.iter().any(|f| {
            // A filter naming none of the groups (say `grad`) may match
            // benchmark names inside any of them.
            matches(f, group) || !GROUPS.iter().any(|g| matches(f, g))
        })
}

const GROUPS: &[&str] = &[
    "w1_rosenbrock_1e6",
    "w2_mlp_step",
    "w5_hessian_200",
    "w6_logistic_1e5",
];

fn engine_with(script: &str, name: &str) -> Engine {
    let mut eps = Engine::new();
    eps.eval_named(script, name)
        .unwrap_or_else(|e| panic!("{name} evaluates: {e}"));
    eps
}

fn global(eps: &Engine, name: &str) -> Value {
    eps.get(name)
        .unwrap_or_else(|| panic!("the workload defines {name}"))
}

/// The numbers of a list value returned by a `wN-check` function.
fn numbers(eps: &mut Engine, call: &str) -> Vec<f64> {
    let value = eps
        .eval(call)
        .unwrap_or_else(|e| panic!("{call} runs: {e}"));
    let text = epsilon::lisp::printer::write_string(&value);
    text.trim_matches(|c| c == '(' || c == ')')
        .split_whitespace()
        .map(|s| {
            s.parse::<f64>()
                .unwrap_or_else(|_| panic!("{call}: {text}"))
        })
        .collect()
}

fn check(what: &str, got: f64, want: f64, rtol: f64) {
    let err = (got - want).abs() / want.abs().max(1e-300);
    let verdict = if err <= rtol { "ok" } else { "MISMATCH" };
    eprintln!(
        "check {what}: {got:?} vs {want:?} (rel. error {err:.2e}, tolerance {rtol:.0e}) {verdict}"
    );
}

/// A group for calls of a few milliseconds to a few seconds.
fn slow_group<'a>(
    c: &'a mut Criterion,
    name: &str,
    measure_s: u64,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(measure_s));
    group
}

fn w1(c: &mut Criterion) {
    if !wanted("w1_rosenbrock_1e6") {
        return;
    }
    let mut eps = engine_with(W1, "bench/numeric/w1-rosenbrock.lisp");
    let v = numbers(&mut eps, "(w1-check)");
    eprintln!(
        "W1 values: f (interpreted) {:?}, f (jit) {:?}, value-and-grad value {:?} grad_sum {:?}, grad grad_sum {:?}",
        v[0], v[1], v[2], v[3], v[4]
    );
    check("W1 f (interpreted)", v[0], JAX_W1_F, 1e-12);
    check("W1 f (jit)", v[1], JAX_W1_F, 1e-12);
    check("W1 value-and-grad value", v[2], JAX_W1_F, 1e-12);
    check("W1 value-and-grad grad_sum", v[3], JAX_W1_GRAD_SUM, 1e-9);
    check("W1 grad grad_sum", v[4], JAX_W1_GRAD_SUM, 1e-9);
    check("W1 f (jit, squares by *)", v[5], JAX_W1_F, 1e-12);
    check(
        "W1 grad grad_sum (squares by *)",
        v[6],
        JAX_W1_GRAD_SUM,
        1e-9,
    );

    let x = global(&eps, "x");
    let mut group = slow_group(c, "w1_rosenbrock_1e6", 4);
    for (label, name) in [
        ("f_interpreted", "rosenbrock"),
        ("f_jit", "rosenbrock-jit"),
        ("grad", "rosenbrock-grad"),
        ("value_and_grad", "rosenbrock-vgrad"),
        // The same function with each square written (* d d), not (pow d 2):
        // what strength reduction of `pow` by a constant 2 would give.
        ("f_jit_mul", "rosenbrock-mul-jit"),
        ("grad_mul", "rosenbrock-mul-grad"),
        ("value_and_grad_mul", "rosenbrock-mul-vgrad"),
    ] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, std::slice::from_ref(&x)).expect("runs")))
        });
    }
    // The Rust API's compiled gradient: the tape alone, no interpreter and
    // no tracing in the loop (value and gradient).
    let compiled = eps
        .compile_grad("rosenbrock", &[&[1_000_000]])
        .expect("compiles the gradient");
    let x_array = ndarray::Array1::linspace(-1.0, 1.0, 1_000_000).into_dyn();
    let (value, grads) = compiled
        .run_with_value(std::slice::from_ref(&x_array))
        .expect("runs");
    check("W1 compile_grad value", value, JAX_W1_F, 1e-12);
    check(
        "W1 compile_grad grad_sum",
        grads[0].sum(),
        JAX_W1_GRAD_SUM,
        1e-9,
    );
    group.bench_function("compiled_value_and_grad", |b| {
        b.iter(|| {
            black_box(
                compiled
                    .run_with_value(std::slice::from_ref(&x_array))
                    .expect("runs"),
            )
        })
    });
    group.finish();
}

fn w2(c: &mut Criterion) {
    if !wanted("w2_mlp_step") {
        return;
    }
    let mut eps = engine_with(W2, "bench/numeric/w2-mlp.lisp");
    let v = numbers(&mut eps, "(w2-check)");
    eprintln!(
        "W2 values: loss (interpreted) {:?}, loss (jit) {:?}, step loss {:?}, jit(step) loss {:?}, loss after step {:?}, grad_sum {:?}",
        v[0], v[1], v[2], v[3], v[4], v[5]
    );
    check("W2 loss jit vs interpreted", v[1], v[0], 1e-12);
    check("W2 step loss vs interpreted", v[2], v[0], 1e-12);
    check("W2 jit(step) loss vs interpreted", v[3], v[0], 1e-12);
    eprintln!(
        "check W2 loss decreases after one step: {:?} -> {:?} {}",
        v[0],
        v[4],
        if v[4] < v[0] { "ok" } else { "MISMATCH" }
    );

    let args = [global(&eps, "params"), global(&eps, "x"), global(&eps, "y")];
    let mut group = slow_group(c, "w2_mlp_step", 4);
    for (label, name) in [
        ("loss_interpreted", "loss"),
        ("loss_jit", "loss-jit"),
        ("step_value_and_grad", "step"),
        ("step_jit", "step-jit"),
    ] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, &args).expect("runs")))
        });
    }
    group.finish();
}

fn w5(c: &mut Criterion) {
    if !wanted("w5_hessian_200") {
        return;
    }
    let mut eps = engine_with(W5, "bench/numeric/w5-hessian.lisp");
    let v = numbers(&mut eps, "(w5-check)");
    eprintln!(
        "W5 values: f {:?}, trace(H) {:?}, trace(closed form) {:?}, max |H - closed form| {:?}, sum(H) {:?}",
        v[0], v[1], v[2], v[3], v[4]
    );
    check("W5 Hessian trace vs closed form", v[1], v[2], 1e-12);
    eprintln!(
        "check W5 max |H - closed form| = {:?} {}",
        v[3],
        if v[3] <= 1e-10 { "ok" } else { "MISMATCH" }
    );

    let args = [global(&eps, "x"), global(&eps, "A")];
    let hessian = global(&eps, "f-hessian");
    let mut group = slow_group(c, "w5_hessian_200", 10);
    group.bench_function("hessian", |b| {
        b.iter(|| black_box(eps.call(&hessian, &args).expect("runs")))
    });
    group.finish();
}

fn w6(c: &mut Criterion) {
    if !wanted("w6_logistic_1e5") {
        return;
    }
    let mut eps = engine_with(W6, "bench/numeric/w6-logistic.lisp");
    let v = numbers(&mut eps, "(w6-check)");
    eprintln!(
        "W6 values: x_K (interpreted) {:?}, x_K (jit) {:?}, dx_K/dr grad {:?}, dx_K/dr jvp {:?}",
        v[0], v[1], v[2], v[3]
    );
    check("W6 x_K jit vs interpreted", v[1], v[0], 1e-15);
    check("W6 dx_K/dr (grad)", v[2], JAX_W6_DERIVATIVE, 1e-9);
    check("W6 dx_K/dr (jvp)", v[3], JAX_W6_DERIVATIVE, 1e-9);
    check("W6 x_K scan vs interpreted", v[4], v[0], 1e-15);
    check(
        "W6 dx_K/dr (scan, store-all)",
        v[5],
        JAX_W6_DERIVATIVE,
        1e-9,
    );
    check("W6 dx_K/dr (scan, revolve)", v[6], JAX_W6_DERIVATIVE, 1e-9);
    check("W6 dx_K/dr (scan, jvp)", v[7], JAX_W6_DERIVATIVE, 1e-9);

    let r = [Value::from(2.9)];
    let mut group = slow_group(c, "w6_logistic_1e5", 6);
    for (label, name) in [
        ("f_interpreted", "logistic"),
        ("f_jit", "logistic-jit"),
        ("grad_reverse", "logistic-grad"),
        ("grad_reverse_traced", "logistic-grad-traced"),
        ("jvp_forward", "logistic-jvp"),
        ("f_scan", "logistic-scan"),
        ("grad_scan_store_all", "logistic-scan-grad"),
        ("grad_scan_revolve", "logistic-revolve-grad"),
        ("jvp_scan", "logistic-scan-jvp"),
    ] {
        let f = global(&eps, name);
        group.bench_function(label, |b| {
            b.iter(|| black_box(eps.call(&f, &r).expect("runs")))
        });
    }
    // The compiled gradient (traced once at r = 2.9), no tracing per call.
    let r_array = ndarray::arr0(2.9).into_dyn();
    let compiled = eps
        .compile_grad_at("logistic", std::slice::from_ref(&r_array))
        .expect("compiles the gradient");
    let grads = compiled.run(std::slice::from_ref(&r_array)).expect("runs");
    check(
        "W6 compile_grad dx_K/dr",
        grads[0].sum(),
        JAX_W6_DERIVATIVE,
        1e-9,
    );
    group.bench_function("compiled_grad", |b| {
        b.iter(|| black_box(compiled.run(std::slice::from_ref(&r_array)).expect("runs")))
    });
    group.finish();
}

criterion_group!(benches, w1, w2, w5, w6);
criterion_main!(benches);

//! The benchmark scripts that BENCHMARKS.md cites, each run in its smoke
//! mode (bench/README.md): a small size, the same code paths, and the
//! script's own checks. A run passes when it exits with 0, reports no
//! panic and prints exactly the expected number of
//! `check LABEL: ERROR (tolerance TOLERANCE)` lines, each with a finite
//! ERROR within its TOLERANCE; several runs also compare printed numbers
//! (closed forms, two strategies, two number types). A last test fails
//! when BENCHMARKS.md cites a script under bench/ that no run here covers.

mod common;

use common::{EPSILON, Outcome, head, run_command};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// One smoke run: `epsilon run SCRIPT ARGS...` with `env` set, and how
/// many check lines it prints.
struct Smoke {
    script: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    checks: usize,
}

const fn smoke(script: &'static str, args: &'static [&'static str], checks: usize) -> Smoke {
    Smoke {
        script,
        args,
        env: &[],
        checks,
    }
}

/// Every smoke run below, by script. The test of each script runs its
/// entries; `every_cited_script_has_a_smoke_run` checks the list against
/// BENCHMARKS.md.
const SMOKE_RUNS: &[Smoke] = &[
    smoke("bench/fib.lisp", &["10"], 0),
    smoke("bench/deep-diff.lisp", &["smoke"], 1),
    smoke("bench/interpreter/fib.lisp", &["15"], 0),
    smoke("bench/interpreter/loop.lisp", &["1000"], 0),
    smoke("bench/interpreter/logistic.lisp", &["smoke"], 3),
    smoke("bench/interpreter/logistic.lisp", &["first", "smoke"], 1),
    smoke("bench/w3/neo-hookean.lisp", &["smoke"], 1),
    smoke("bench/codegen/neo-hookean.lisp", &["smoke"], 1),
    smoke("bench/implicit/fixed-point.lisp", &["20", "1", "smoke"], 3),
    smoke("bench/implicit/odeint.lisp", &["lv", "1", "smoke"], 3),
    smoke(
        "bench/implicit/odeint.lisp",
        &["diffusion", "1", "smoke"],
        3,
    ),
    smoke("bench/linalg/time.lisp", &["--backend", "cpu", "smoke"], 8),
    smoke("bench/gpu/arrays.lisp", &["--backend", "cpu", "smoke"], 3),
    smoke("bench/loops/long-body.lisp", &["smoke"], 2),
    Smoke {
        script: "bench/loops/long-body.lisp",
        args: &["smoke"],
        env: &[("EPSILON_NATIVE", "0")],
        checks: 2,
    },
    smoke(
        "bench/loops/lstm.lisp",
        &["--smoke", "--model", "adbench", "--checkpoint", "store-all"],
        1,
    ),
    smoke(
        "bench/loops/lstm.lisp",
        &["--smoke", "--model", "adbench", "--checkpoint", "revolve"],
        1,
    ),
    smoke(
        "bench/loops/lstm.lisp",
        &["--smoke", "--model", "char", "--checkpoint", "store-all"],
        1,
    ),
    smoke(
        "bench/loops/lstm.lisp",
        &["--smoke", "--model", "char", "--checkpoint", "revolve"],
        1,
    ),
    smoke("bench/loops/overhead.lisp", &["smoke"], 5),
    smoke("bench/loops/plan-sizes.lisp", &["smoke"], 2),
    Smoke {
        script: "bench/loops/plan-sizes.lisp",
        args: &["smoke"],
        env: &[("EPSILON_PLANS", "0")],
        checks: 2,
    },
    smoke("bench/loops/w6-revolve.lisp", &["smoke"], 3),
    smoke("bench/numeric/masked-relu.lisp", &["smoke"], 2),
    smoke(
        "bench/numeric/w4-heat.lisp",
        &["store-all", "50", "40", "smoke"],
        1,
    ),
    smoke(
        "bench/numeric/w4-heat.lisp",
        &["revolve", "50", "40", "smoke"],
        1,
    ),
    smoke(
        "bench/numeric/w4-heat.lisp",
        &["auto", "50", "40", "smoke"],
        1,
    ),
    smoke(
        "bench/numeric/w4-heat.lisp",
        &["forward", "50", "40", "smoke"],
        0,
    ),
    smoke("bench/numeric/w5-time.lisp", &["smoke"], 1),
    smoke("bench/numeric/w6-logistic.lisp", &["smoke"], 7),
    smoke("bench/sparse/stencil.lisp", &["200", "1", "smoke"], 4),
    smoke("bench/stdlib/workloads.lisp", &["smoke"], 4),
    smoke(
        "bench/transformer/train-step.lisp",
        &["2", "f64", "smoke"],
        3,
    ),
    smoke(
        "bench/transformer/train-step.lisp",
        &["2", "f32", "smoke"],
        2,
    ),
    smoke("bench/vmap/per-example.lisp", &["4", "1", "smoke"], 5),
    smoke("bench/taylor/laplacian.lisp", &["4", "1", "smoke"], 2),
    smoke("bench/taylor/derivatives.lisp", &["10", "3", "smoke"], 2),
    smoke("bench/complex/workloads.lisp", &["1", "smoke"], 4),
];

/// Scripts run only by a build with the feature `mpi`
/// (`mpi_heat_equation_one_process` below, and under `mpirun` in
/// tests/distributed.rs).
const MPI_SCRIPTS: &[&str] = &["bench/distributed/heat.lisp"];

/// The shell drivers BENCHMARKS.md cites, and the scripts they run: the
/// drivers themselves time other systems or start `mpirun` at full size,
/// so the smoke runs cover the scripts they run instead.
const DRIVERS: &[(&str, &[&str])] = &[
    (
        "bench/interpreter/compare.sh",
        &["bench/interpreter/fib.lisp", "bench/interpreter/loop.lisp"],
    ),
    (
        "bench/distributed/scaling.sh",
        &["bench/distributed/heat.lisp"],
    ),
    (
        "bench/gpu/run.sh",
        &[
            "bench/linalg/time.lisp",
            "bench/gpu/arrays.lisp",
            "bench/transformer/train-step.lisp",
        ],
    ),
];

/// The runs of `script` in [`SMOKE_RUNS`], each checked; their outcomes in
/// the list's order.
fn run_smoke(script: &str) -> Vec<Outcome> {
    let runs: Vec<&Smoke> = SMOKE_RUNS.iter().filter(|r| r.script == script).collect();
    assert!(!runs.is_empty(), "{script} has no smoke run");
    runs.into_iter().map(run_one).collect()
}

fn run_one(run: &Smoke) -> Outcome {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(run.script);
    assert!(path.is_file(), "{} is missing", run.script);
    let mut command = Command::new(EPSILON);
    command.arg("run").arg(&path).args(run.args);
    // The checks' tolerances are those of the CPU (BENCHMARKS.md's
    // figures are too); the environment's choice of loop executor must not
    // change what runs (except where a run sets it).
    command.env("EPSILON_BACKEND", "cpu");
    for variable in ["EPSILON_NATIVE", "EPSILON_PLANS"] {
        command.env_remove(variable);
    }
    command.envs(run.env.iter().copied());
    let what = format!("{} {} {:?}", run.script, run.args.join(" "), run.env);
    let outcome = run_command(command, None);
    assert_eq!(
        outcome.code(),
        0,
        "{what} failed\n--- stdout:\n{}\n--- stderr:\n{}",
        head(&outcome.stdout),
        head(&outcome.stderr)
    );
    outcome.assert_no_panic();
    assert!(
        !outcome.stderr.contains("error"),
        "{what} reported an error:\n{}",
        head(&outcome.stderr)
    );
    let checks = check_lines(&outcome.stdout);
    assert_eq!(
        checks.len(),
        run.checks,
        "{what}: the number of check lines\n--- stdout:\n{}",
        head(&outcome.stdout)
    );
    for (label, error, tolerance) in &checks {
        assert!(
            error.is_finite() && error <= tolerance,
            "{what}: check {label}: {error} is not within {tolerance}"
        );
    }
    outcome
}

/// The `check LABEL: ERROR (tolerance TOLERANCE)` lines of bench/smoke.lisp.
fn check_lines(stdout: &str) -> Vec<(String, f64, f64)> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("check "))
        .map(|rest| {
            let (label, numbers) = rest
                .rsplit_once(": ")
                .unwrap_or_else(|| panic!("a check line without a value: {rest:?}"));
            let (error, tolerance) = numbers
                .strip_suffix(')')
                .and_then(|n| n.split_once(" (tolerance "))
                .unwrap_or_else(|| panic!("a check line without a tolerance: {rest:?}"));
            let parse = |text: &str| -> f64 {
                match text {
                    "NaN" => f64::NAN,
                    _ => text
                        .parse()
                        .unwrap_or_else(|_| panic!("not a number in {rest:?}: {text:?}")),
                }
            };
            (label.to_string(), parse(error), parse(tolerance))
        })
        .collect()
}

/// The numbers on the first line of `text` that starts with `prefix`.
fn numbers_on(text: &str, prefix: &str) -> Vec<f64> {
    let line = text
        .lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{}", head(text)));
    line[prefix.len()..]
        .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '(' || c == ')')
        .filter_map(|word| word.parse::<f64>().ok())
        .collect()
}

/// The one number on the first line starting with `prefix`.
fn number_on(text: &str, prefix: &str) -> f64 {
    let numbers = numbers_on(text, prefix);
    assert_eq!(numbers.len(), 1, "one number after {prefix:?}: {numbers:?}");
    numbers[0]
}

fn assert_close(what: &str, a: f64, b: f64, tolerance: f64) {
    let scale = a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
    assert!(
        a.is_finite() && b.is_finite() && (a - b).abs() <= tolerance * scale,
        "{what}: {a} against {b} (relative tolerance {tolerance})"
    );
}

fn assert_all_close(what: &str, a: &[f64], b: &[f64], tolerance: f64) {
    assert_eq!(a.len(), b.len(), "{what}: {a:?} against {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert_close(what, *x, *y, tolerance);
    }
}

fn fib(n: u64) -> u64 {
    (0..n).fold((0, 1), |(a, b), _| (b, a + b)).0
}

#[test]
fn fib_prints_the_fibonacci_number() {
    let out = &run_smoke("bench/fib.lisp")[0];
    assert_eq!(out.stdout.trim(), fib(10).to_string());
}

#[test]
fn deep_diff_matches_the_chain_rule() {
    let out = &run_smoke("bench/deep-diff.lisp")[0];
    // d/dx of 6,000 nested sines, shared: two nodes a level and x.
    assert_eq!(out.stdout.lines().next(), Some("12001"));
}

#[test]
fn interpreter_fib_prints_the_fibonacci_number() {
    let out = &run_smoke("bench/interpreter/fib.lisp")[0];
    assert_eq!(out.stdout.trim(), fib(15).to_string());
}

#[test]
fn interpreter_loop_matches_its_closed_form() {
    let out = &run_smoke("bench/interpreter/loop.lisp")[0];
    // x <- 0.999 x + 1 from 0, n times: (1 - 0.999^n) / 0.001.
    let expected = (1.0 - 0.999f64.powi(1000)) / 0.001;
    let printed: f64 = out.stdout.trim().parse().expect("a number");
    assert_close("loop of 1000 steps", printed, expected, 1e-12);
}

#[test]
fn interpreter_logistic_gradients_reach_the_fixed_point_slope() {
    let outs = run_smoke("bench/interpreter/logistic.lisp");
    let slope = 1.0 / (2.9f64 * 2.9);
    let first: f64 = outs[1].stdout.lines().next().unwrap().parse().unwrap();
    assert_close("first call's d x_K / d r", first, slope, 1e-9);
}

#[test]
fn w3_neo_hookean_gradient_matches_reverse_mode() {
    let out = &run_smoke("bench/w3/neo-hookean.lisp")[0];
    assert_eq!(out.stdout.lines().next(), Some("73"), "{}", out.stdout);
}

/// The C of `neo_hookean_grad` and a driver calling it at the printed
/// point, compiled with `cc` where one is installed: its results must be
/// the gradient the script evaluated there.
#[test]
fn codegen_neo_hookean_c_computes_the_gradient() {
    let out = &run_smoke("bench/codegen/neo-hookean.lisp")[0];
    let start = out.stdout.find("#include").expect("the C source");
    let end = out.stdout[start..]
        .find("\n}\n")
        .expect("the function's end")
        + start
        + 3;
    let source = &out.stdout[start..end];
    assert!(
        source.contains("void neo_hookean_grad(") && source.contains("out[8] ="),
        "{source}"
    );
    let point = numbers_on(&out.stdout, "point:");
    let expected = numbers_on(&out.stdout, "gradient:");
    assert_eq!((point.len(), expected.len()), (11, 9));
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped compiling the C: no cc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = point.iter().map(|x| format!("{x:e}")).collect();
    let driver = format!(
        "{source}\n#include <stdio.h>\nint main(void) {{\n    double out[9];\n    \
         neo_hookean_grad({}, out);\n    for (int i = 0; i < 9; i++) printf(\"%.17g\\n\", out[i]);\n    \
         return 0;\n}}\n",
        args.join(", ")
    );
    let c_file = dir.path().join("grad.c");
    let binary = dir.path().join("grad");
    std::fs::write(&c_file, driver).unwrap();
    let compiled = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&binary)
        .arg(&c_file)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let ran = Command::new(&binary).output().unwrap();
    assert!(ran.status.success());
    let got: Vec<f64> = String::from_utf8_lossy(&ran.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_all_close("the C gradient", &got, &expected, 1e-12);
}

#[test]
fn implicit_fixed_point_gradient_matches_finite_differences() {
    let out = &run_smoke("bench/implicit/fixed-point.lisp")[0];
    let numbers = numbers_on(&out.stdout, "loss ");
    assert!(numbers.iter().all(|x| x.is_finite()), "{numbers:?}");
}

#[test]
fn implicit_odeint_adjoints_agree() {
    for out in run_smoke("bench/implicit/odeint.lisp") {
        let direct = numbers_on(&out.stdout, "direct gradient in the parameters");
        let backsolve = numbers_on(&out.stdout, "backsolve gradient in the parameters");
        assert!(!direct.is_empty());
        let scale = direct.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (d, b) in direct.iter().zip(&backsolve) {
            assert!(
                (d - b).abs() <= 1e-5 * scale,
                "{direct:?} against {backsolve:?}"
            );
        }
    }
}

#[test]
fn linalg_workloads_gradients_check() {
    let out = &run_smoke("bench/linalg/time.lisp")[0];
    for workload in [
        "GMM f",
        "GMM grad",
        "BA f",
        "BA jacobian",
        "BA grad",
        "GP f",
        "GP vgrad",
    ] {
        let times = numbers_on(&out.stdout, workload);
        assert!(times.iter().all(|x| x.is_finite()), "{workload}: {times:?}");
    }
}

#[test]
fn loops_long_body_scans_match_plain_calls() {
    run_smoke("bench/loops/long-body.lisp");
}

#[test]
fn loops_lstm_gradients_agree_across_checkpoints() {
    let outs = run_smoke("bench/loops/lstm.lisp");
    for (model, pair) in ["adbench", "char"].iter().zip(outs.chunks(2)) {
        let loss = format!("{model} loss");
        let checksum = format!("{model}  gradient checksum");
        assert_close(
            &loss,
            number_on(&pair[0].stdout, &loss),
            number_on(&pair[1].stdout, &loss),
            1e-14,
        );
        assert_close(
            &format!("{checksum}, store-all against revolve"),
            number_on(&pair[0].stdout, &checksum),
            number_on(&pair[1].stdout, &checksum),
            1e-12,
        );
    }
}

#[test]
fn loops_overhead_results_match_closed_forms() {
    run_smoke("bench/loops/overhead.lisp");
}

#[test]
fn loops_plan_sizes_match_a_lisp_loop() {
    run_smoke("bench/loops/plan-sizes.lisp");
}

#[test]
fn loops_w6_revolve_derivatives_agree() {
    let out = &run_smoke("bench/loops/w6-revolve.lisp")[0];
    let numbers = numbers_on(&out.stdout, "revolve grad ms");
    let slope = 1.0 / (2.9f64 * 2.9);
    assert_eq!(numbers.len(), 5, "{numbers:?}");
    assert_close("revolve grad", numbers[3], slope, 1e-9);
    assert_close("store-all grad", numbers[4], slope, 1e-9);
}

#[test]
fn numeric_masked_relu_gradient_matches_finite_differences() {
    let out = &run_smoke("bench/numeric/masked-relu.lisp")[0];
    assert!(out.stdout.contains("(instructions "), "{}", out.stdout);
}

#[test]
fn numeric_w4_heat_strategies_agree() {
    let outs = run_smoke("bench/numeric/w4-heat.lisp");
    let report = |out: &Outcome| numbers_on(&out.stdout, "(strategy ");
    let store_all = report(&outs[0]);
    // N, T, the loss, the sum of u_0's gradient, alpha's gradient.
    assert_eq!(store_all.len(), 5, "{store_all:?}");
    for out in &outs[1..3] {
        assert_all_close(
            "revolve and auto against store-all",
            &report(out),
            &store_all,
            1e-12,
        );
    }
    let forward = report(&outs[3]);
    assert_close("forward's loss", forward[2], store_all[2], 1e-12);
}

#[test]
fn numeric_w5_timed_hessian_matches_its_closed_form() {
    run_smoke("bench/numeric/w5-time.lisp");
}

#[test]
fn numeric_w6_logistic_values_agree() {
    run_smoke("bench/numeric/w6-logistic.lisp");
}

#[test]
fn sparse_stencil_matches_the_dense_derivatives() {
    let out = &run_smoke("bench/sparse/stencil.lisp")[0];
    for name in ["sparse-jacobian", "sparse-hessian"] {
        // n, the non-zeros (three a row), the checksum, two times.
        let numbers = numbers_on(&out.stdout, name);
        assert_eq!(numbers[..2], [200.0, 600.0], "{name}: {numbers:?}");
    }
}

#[test]
fn stdlib_workloads_converge() {
    run_smoke("bench/stdlib/workloads.lisp");
}

#[test]
fn transformer_train_step_gradient_checks_in_both_number_types() {
    let outs = run_smoke("bench/transformer/train-step.lisp");
    let f64_loss = number_on(&outs[0].stdout, "first loss");
    let f32_loss = number_on(&outs[1].stdout, "first loss");
    assert_close("first loss, f32 against f64", f32_loss, f64_loss, 1e-5);
    for out in &outs {
        let after = numbers_on(&out.stdout, "loss after");
        assert!(after.iter().all(|x| x.is_finite()), "{after:?}");
    }
}

#[test]
fn laplacian_methods_agree_on_the_mlp() {
    let out = &run_smoke("bench/taylor/laplacian.lisp")[0];
    let collapsed = numbers_on(&out.stdout, "collapsed ");
    let hessian = numbers_on(&out.stdout, "hessian ");
    assert!((collapsed[0] - hessian[0]).abs() <= 1e-10 * hessian[0].abs().max(1.0));
}

#[test]
fn derivatives_of_order_ten_run_compiled() {
    let out = &run_smoke("bench/taylor/derivatives.lisp")[0];
    let ratio = numbers_on(&out.stdout, "order ");
    assert!(ratio.iter().all(|x| x.is_finite()), "{ratio:?}");
}

#[test]
fn vmap_per_example_gradients_match_each_example() {
    let out = &run_smoke("bench/vmap/per-example.lisp")[0];
    let checksum = numbers_on(&out.stdout, "batch ");
    assert!(checksum.iter().all(|x| x.is_finite()), "{checksum:?}");
}

/// W4's decomposed heat equation as a job of one rank (no `mpirun`): the
/// gradient through halo exchanges equals the one-process gradient.
#[cfg(feature = "mpi")]
#[test]
fn mpi_heat_equation_one_process() {
    let mut command = Command::new(EPSILON);
    command
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/distributed/heat.lisp"))
        .args(["check", "16", "40"]);
    let out = run_command(command, None);
    out.assert_code(0).assert_no_panic();
    let differences = numbers_on(&out.stdout, "relative difference");
    assert_eq!(differences.len(), 2, "{}", out.stdout);
    assert!(differences.iter().all(|d| *d <= 1e-12), "{differences:?}");
}

/// The scripts BENCHMARKS.md cites (`bench/...lisp` and `bench/...sh`).
fn cited_scripts() -> BTreeSet<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md"))
        .expect("BENCHMARKS.md");
    let mut cited = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("bench/") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_/.-".contains(c)))
            .unwrap_or(tail.len());
        let path = tail[..end].trim_end_matches('.');
        if path.ends_with(".lisp") || path.ends_with(".sh") {
            cited.insert(path.to_string());
        }
        rest = &tail[end.max(1)..];
    }
    cited
}

#[test]
fn every_cited_script_has_a_smoke_run() {
    let cited = cited_scripts();
    assert!(cited.len() >= 20, "found only {cited:?}");
    let covered: BTreeSet<&str> = SMOKE_RUNS
        .iter()
        .map(|r| r.script)
        .chain(MPI_SCRIPTS.iter().copied())
        .collect();
    for (driver, scripts) in DRIVERS {
        for script in *scripts {
            assert!(
                covered.contains(script),
                "{driver} runs {script}, which has no smoke run"
            );
        }
    }
    let drivers: BTreeSet<&str> = DRIVERS.iter().map(|(d, _)| *d).collect();
    let missing: Vec<&String> = cited
        .iter()
        .filter(|s| !covered.contains(s.as_str()) && !drivers.contains(s.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "BENCHMARKS.md cites scripts without a smoke run in tests/bench_scripts.rs: {missing:?}"
    );
    // And the list names no script that is gone.
    for script in covered.iter().chain(drivers.iter()) {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(script).is_file(),
            "{script} is listed but missing"
        );
    }
}

#[test]
fn complex_workloads_check_the_transforms_product_and_gradient() {
    let out = &run_smoke("bench/complex/workloads.lisp")[0];
    let checksum = numbers_on(&out.stdout, "energy-grad ");
    assert!(checksum.iter().all(|x| x.is_finite()), "{checksum:?}");
}

#[test]
fn gpu_arrays_check_on_the_cpu() {
    let out = &run_smoke("bench/gpu/arrays.lisp")[0];
    let times = numbers_on(&out.stdout, "FFT complex median_ms");
    assert!(!times.is_empty(), "{}", out.stdout);
}

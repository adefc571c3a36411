//! Every example in examples/ runs (at a reduced size where it has one) and
//! prints what it promises: the Rosenbrock minimum, the digits accuracy, the
//! recovered diffusion coefficient, the hyperelastic checks, a falling
//! attention loss, the Gaussian process's fitted noise, the adaptive
//! integrator's gradient and aim, the Lotka-Volterra parameters, per-example
//! gradients that average to the batch gradient; the picture and graph files
//! are written and readable, by default in the temporary folder (never the
//! working directory), where the output says.

mod common;

use common::{Outcome, epsilon};
use std::path::Path;

/// Runs `epsilon run examples/NAME ARGS...` and checks it succeeded.
fn run_example(name: &str, args: &[&str]) -> Outcome {
    let script = format!("examples/{name}");
    let mut argv = vec!["run", script.as_str()];
    argv.extend_from_slice(args);
    let out = epsilon(&argv);
    out.assert_code(0).assert_no_panic();
    out
}

/// Runs `epsilon run examples/NAME ARGS...` from an empty working
/// directory with `$TMPDIR` set to `temporary`, and checks it succeeded and
/// left nothing in the working directory.
fn run_example_aside(name: &str, args: &[&str], temporary: &Path) -> Outcome {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let cwd = tempfile::tempdir().expect("a temporary directory");
    let mut command = std::process::Command::new(common::EPSILON);
    command
        .arg("run")
        .arg(&script)
        .args(args)
        .env("TMPDIR", temporary)
        .current_dir(cwd.path());
    let out = common::run_command(command, None);
    out.assert_code(0).assert_no_panic();
    let left: Vec<_> = std::fs::read_dir(cwd.path())
        .expect("listable")
        .map(|entry| entry.expect("an entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "{name} wrote {left:?} into the working directory"
    );
    out
}

/// Checks that `out` says it wrote each of `names` in `temporary`, and
/// gives their paths.
fn written_aside(out: &Outcome, temporary: &Path, names: &[&str]) -> Vec<std::path::PathBuf> {
    names
        .iter()
        .map(|name| {
            let path = temporary.join(name);
            let line = format!("wrote {}", path.display());
            assert!(
                out.stdout.lines().any(|l| l == line),
                "no line {line:?} in:\n{}",
                out.stdout
            );
            path
        })
        .collect()
}

/// The number that follows `label` on the first line containing it.
fn number_after(text: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|line| line.contains(label))
        .unwrap_or_else(|| panic!("no line with {label:?} in:\n{text}"));
    let rest = &line[line.find(label).expect("found above") + label.len()..];
    let token: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e'))
        .collect();
    token
        .parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in {line:?}"))
}

#[test]
fn rosenbrock_reaches_the_minimum() {
    let out = run_example("rosenbrock.lisp", &["--adam-steps", "3000"]);
    let text = &out.stdout;
    assert!(
        (number_after(text, "L-BFGS minimum: x =") - 1.0).abs() < 1e-6,
        "{text}"
    );
    let lbfgs_line = text
        .lines()
        .find(|l| l.starts_with("L-BFGS minimum"))
        .expect("printed");
    assert!(
        (number_after(lbfgs_line, " y =") - 1.0).abs() < 1e-6,
        "{text}"
    );
    assert!(
        number_after(lbfgs_line, "distance to (1, 1) =") < 1e-6,
        "{text}"
    );
    assert!(text.contains("gradient norm below gtol"), "{text}");
    // Every L-BFGS iteration is printed: the table holds the count reported.
    let iterations = number_after(text, "gradient norm below gtol after") as usize;
    assert!((10..200).contains(&iterations), "{text}");
    // Adam, cut to 3,000 steps, is on its way: within 0.1 of (1, 1).
    let adam_line = text
        .lines()
        .find(|l| l.starts_with("Adam minimum"))
        .expect("printed");
    assert!(
        number_after(adam_line, "distance to (1, 1) =") < 0.1,
        "{text}"
    );
}

#[test]
fn mlp_classifies_digits_and_writes_its_pictures() {
    // By default the pictures go to the temporary folder, named in the output.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = run_example_aside("mlp.lisp", &["--epochs", "12"], dir.path());
    let written = written_aside(&out, dir.path(), &["loss.png", "mlp.dot", "mlp.svg"]);
    let (png, dot, svg) = (&written[0], &written[1], &written[2]);
    let svg = std::fs::read_to_string(svg).expect("the SVG is written");
    assert!(svg.contains("<svg"), "{}", &svg[..svg.len().min(200)]);
    // The first epoch already reports its held-out accuracy.
    assert!(
        number_after(&out.stdout, "held-out accuracy") > 0.5,
        "{}",
        out.stdout
    );
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with("train accuracy"))
        .expect("the accuracies are printed");
    let held_out = number_after(summary, "held-out accuracy");
    assert!(
        held_out > 0.9,
        "held-out accuracy {held_out}\n{}",
        out.stdout
    );
    check_png(png);
    let graph = std::fs::read_to_string(dot).expect("the DOT file is written");
    assert!(
        graph.starts_with("digraph") && graph.contains("->"),
        "{graph}"
    );
}

/// The PNG decodes to a picture of the default size that is not blank.
fn check_png(path: &Path) {
    let bytes = std::fs::read(path).expect("the PNG is written");
    assert!(!bytes.is_empty());
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a valid PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a known size")];
    let info = reader.next_frame(&mut pixels).expect("the PNG decodes");
    assert!(info.width >= 200 && info.height >= 150, "{info:?}");
    let first = &pixels[..3];
    assert!(
        pixels.chunks(3).any(|pixel| pixel != first),
        "the picture is one colour"
    );
}

#[test]
fn heat_recovers_the_diffusion_coefficient() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = run_example_aside("heat.lisp", &["--points", "48"], dir.path());
    check_png(&written_aside(&out, dir.path(), &["heat.png"])[0]);
    let kappa = number_after(&out.stdout, "recovered kappa =");
    assert!((kappa - 0.7).abs() / 0.7 < 0.01, "{}", out.stdout);
    let revolve = number_after(&out.stdout, "the gradient: revolve");
    let store_all = number_after(&out.stdout, "bytes, store-all");
    assert!(
        revolve > 0.0 && revolve * 10.0 < store_all,
        "{}",
        out.stdout
    );
}

/// The adaptive integrator's gradient (through a while-loop whose number
/// of steps and rejections depend on the parameters) agrees with central
/// differences, and Newton's method on it hits the target distance.
#[test]
fn adaptive_integrator_gradient_matches_differences_and_aims() {
    let out = run_example("adaptive.lisp", &["--target", "5.5"]);
    let difference = number_after(&out.stdout, "largest relative difference:");
    assert!(difference < 1e-5, "{}", out.stdout);
    let landed = number_after(&out.stdout, ", lands at");
    assert!((landed - 5.5).abs() < 1e-8, "{}", out.stdout);
}

#[test]
fn lotka_volterra_recovers_its_parameters_and_plots() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let png = dir.path().join("lotka-volterra.png");
    let out = run_example(
        "lotka-volterra.lisp",
        &["--points", "25", "--plot", png.to_str().expect("UTF-8")],
    );
    check_png(&png);
    let text = &out.stdout;
    assert!(
        number_after(text, "largest relative difference") < 1e-5,
        "{text}"
    );
    assert!(
        number_after(text, "largest relative error of the parameters:") < 0.05,
        "{text}"
    );
    assert!(text.contains("gradient norm below gtol"), "{text}");
}

#[test]
fn gp_fits_the_noise_level_and_covers_the_truth() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let png = dir.path().join("gp.png");
    let out = run_example(
        "gp.lisp",
        &[
            "--points",
            "30",
            "--grid",
            "80",
            "--plot",
            png.to_str().expect("UTF-8"),
        ],
    );
    check_png(&png);
    let text = &out.stdout;
    assert!(number_after(text, "max relative error") < 1e-6, "{text}");
    assert!(text.contains("gradient norm below gtol"), "{text}");
    // The data's noise is 0.1: the fitted noise level recovers it.
    let fitted = text
        .lines()
        .find(|l| l.starts_with("fitted:"))
        .expect("printed");
    let fitted_noise = number_after(fitted, "noise");
    assert!((fitted_noise - 0.1).abs() < 0.05, "{text}");
    assert!(number_after(text, "rmse") < 0.3, "{text}");
    assert!(
        number_after(text, "two standard deviations at") >= 80.0,
        "{text}"
    );
}

#[test]
fn hyperelastic_stress_and_tangent_match_finite_differences() {
    let out = run_example("hyperelastic.lisp", &[]);
    let text = &out.stdout;
    assert_eq!(
        text.matches("stress vs finite differences").count(),
        3,
        "{text}"
    );
    assert!(
        number_after(text, "largest relative error:") < 1e-6,
        "{text}"
    );
    for line in text
        .lines()
        .filter(|l| l.contains("stress vs finite differences"))
    {
        assert!(
            number_after(line, "stress vs finite differences") < 1e-6,
            "{line}"
        );
        assert!(number_after(line, "vs reverse mode") < 1e-12, "{line}");
        assert!(
            number_after(line, "tangent vs finite differences") < 1e-6,
            "{line}"
        );
    }
    assert!(number_after(text, "largest |P| =") < 1e-12, "{text}");
    assert!(
        number_after(text, "tangent minus linear elasticity:") < 1e-12,
        "{text}"
    );
}

#[test]
fn attention_loss_falls() {
    let out = run_example("attention.lisp", &["--steps", "150"]);
    let text = &out.stdout;
    let first = number_after(text, "train loss fell from");
    let last = number_after(text, " to ");
    assert!(last < 0.2 * first, "{text}");
    assert!(number_after(text, "; held-out loss") < 0.5, "{text}");
    assert!(number_after(text, "attention check-grad:") < 1e-6, "{text}");
}

#[test]
fn the_embedding_example_builds_and_runs() {
    // `cargo test` builds the examples beside the test binaries.
    let exe = std::env::current_exe().expect("the test binary's path");
    let examples = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join("examples")
        .join(format!("embed{}", std::env::consts::EXE_SUFFIX));
    assert!(
        examples.exists(),
        "{} is built by cargo test",
        examples.display()
    );
    let out = common::run_command(std::process::Command::new(&examples), None);
    out.assert_code(0).assert_no_panic();
    let text = &out.stdout;
    assert!(text.contains("(+ 1 2) = 3"), "{text}");
    assert!(text.contains("(square 1.5) = 2.25"), "{text}");
    let slope = number_after(text, "d f / d x at (2, 0.5) =");
    assert!((slope - 0.5f64.sin()).abs() < 1e-15, "{text}");
    assert!(
        text.contains("gradient of sum(w^2) at [1 2 3] = [2, 4, 6]"),
        "{text}"
    );
    assert!(
        (number_after(text, "fitted a =") - 2.0).abs() < 1e-6,
        "{text}"
    );
    assert!((number_after(text, "b =") - 1.0).abs() < 1e-6, "{text}");
    assert!(text.contains("error as expected"), "{text}");
}

#[test]
fn per_example_gradients_average_to_the_batch_gradient_and_train() {
    let out = run_example("per-example-gradients.lisp", &["--epochs", "3"]);
    let text = &out.stdout;
    assert!(
        number_after(text, "mean differs from the batch gradient by") < 1e-12,
        "{text}"
    );
    let last = text
        .lines()
        .rfind(|l| l.contains("held-out accuracy"))
        .expect("an epoch line");
    assert!(number_after(last, "held-out accuracy") > 0.5, "{text}");
}

/// The physics-informed network fits the Poisson equation's solution
/// (trained on the collapsed Laplacian's residual) and draws both
/// pictures.
#[test]
fn pinn_fits_the_poisson_solution_and_plots() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = run_example_aside("pinn.lisp", &["--steps", "600", "--side", "10"], dir.path());
    for png in written_aside(&out, dir.path(), &["pinn.png", "pinn-error.png"]) {
        check_png(&png);
    }
    let first = number_after(&out.stdout, "    1  ");
    let relative = number_after(&out.stdout, "relative L2 =");
    let residual = number_after(&out.stdout, "at the collocation points:");
    assert!(relative < 2e-2, "{}", out.stdout);
    assert!(residual < first * 1e-2, "{}", out.stdout);
}

/// The complex variational state of the spin chain reaches the lowest
/// eigenvalue of the Hamiltonian (from eigh) within 1e-3 and overlaps the
/// ground state.
#[test]
fn spin_chain_fits_the_ground_state_energy() {
    let out = run_example("spin-chain.lisp", &["--steps", "200"]);
    let exact = number_after(&out.stdout, "lowest eigenvalue of H (eigh):");
    assert!((exact + 12.784_906_443).abs() < 1e-8, "{}", out.stdout);
    let relative = number_after(&out.stdout, ", relative error");
    assert!(relative < 1e-3, "{}", out.stdout);
    let overlap = number_after(&out.stdout, "|<psi|ground>| =");
    assert!(overlap > 0.999, "{}", out.stdout);
}

//! The `epsilon` command line (SPEC section 5): usage and exit statuses,
//! `eval`, `run` with `*args*`, `(exit n)`, the `FILE:LINE:COL: error:`
//! report with its quoted line and caret, relative `load`, a piped
//! standard input run as a script, and `read-line` reading it.

mod common;

use common::{check_report, epsilon, epsilon_with_stdin, head, run_script};
use tempfile::TempDir;

fn temp_dir() -> TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

// --- usage: 0 for --version/--help, 2 for bad usage -------------------------

#[test]
fn version_prints_the_version_and_exits_0() {
    let out = epsilon(&["--version"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains(env!("CARGO_PKG_VERSION")),
        "--version should print {}; got {:?}",
        env!("CARGO_PKG_VERSION"),
        out.stdout
    );
}

#[test]
fn help_describes_the_subcommands_and_exits_0() {
    let out = epsilon(&["--help"]);
    out.assert_code(0);
    for word in ["run", "eval", "--backend"] {
        assert!(
            out.stdout.contains(word),
            "--help should mention {word}; got:\n{}",
            out.stdout
        );
    }
}

#[test]
fn bad_usage_exits_2_with_a_message() {
    let cases: &[&[&str]] = &[
        &["--no-such-flag"],
        &["frobnicate"],
        &["eval"],
        &["--backend", "bogus", "eval", "1"],
        &["run"],
    ];
    for args in cases {
        let out = epsilon(args);
        assert_eq!(
            out.code(),
            2,
            "epsilon {args:?} should exit 2; stderr:\n{}",
            out.stderr
        );
        assert!(
            !out.stderr.trim().is_empty(),
            "epsilon {args:?} should say what is wrong"
        );
        out.assert_no_panic();
    }
}

#[test]
fn backend_cuda_fails_at_start_up_with_status_1_and_a_message() {
    if let Ok(cuda) = epsilon::backends::cuda::Cuda::open() {
        // A machine with a usable GPU: the CUDA backend runs the program.
        eprintln!("a GPU is present ({}): cuda must work", cuda.info().name);
        let out = epsilon(&[
            "--backend",
            "cuda",
            "eval",
            "((grad (lambda (x) (sum (* x x)))) [1 2])",
        ]);
        out.assert_code(0);
        assert_eq!(out.stdout, "[2.0 4.0]\n");
        return;
    }
    for args in [
        &["--backend", "cuda", "eval", "(+ 1 2)"][..],
        &["--backend", "cuda", "run", "does-not-matter.lisp"][..],
    ] {
        let out = epsilon(args);
        out.assert_code(1).assert_no_panic();
        assert!(
            out.stderr.to_lowercase().contains("cuda"),
            "the message should say CUDA is what is missing; got {:?}",
            out.stderr
        );
        assert_eq!(out.stdout, "", "nothing is evaluated");
    }
}

#[test]
fn the_backend_can_come_from_the_environment() {
    let run = |value: &str, args: &[&str]| {
        let mut command = std::process::Command::new(common::EPSILON);
        command.args(args).env("EPSILON_BACKEND", value);
        common::run_command(command, None)
    };
    let out = run("cuda", &["eval", "(+ 1 2)"]);
    out.assert_no_panic();
    if out.code() == 1 {
        assert!(
            out.stderr.contains("EPSILON_BACKEND cuda"),
            "{}",
            out.stderr
        );
    }
    let out = run("gpu", &["eval", "(+ 1 2)"]);
    out.assert_code(2).assert_no_panic();
    assert!(out.stderr.contains("unknown backend gpu"), "{}", out.stderr);
    // The command line wins over the environment.
    let out = run("gpu", &["--backend", "cpu", "eval", "(+ 1 2)"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "3\n");
    let out = run("CPU", &["eval", "(+ 1 2)"]);
    out.assert_code(0);
}

#[test]
fn backend_cpu_and_auto_work() {
    for backend in ["cpu", "auto"] {
        let out = epsilon(&["--backend", backend, "eval", "(+ 1 2)"]);
        out.assert_code(0);
        assert_eq!(out.stdout, "3\n", "--backend {backend}");
    }
    // Gradients run under every backend this machine has.
    for backend in ["cpu", "auto"] {
        let out = epsilon(&[
            "--backend",
            backend,
            "eval",
            "((grad (lambda (x) (sum (* x (tanh x))))) [0.5 -1.0])",
        ]);
        out.assert_code(0);
        assert!(
            out.stdout.starts_with("[0.8"),
            "--backend {backend}: {}",
            out.stdout
        );
    }
}

#[test]
fn set_backend_cuda_without_a_device_is_an_error_at_its_call() {
    if epsilon::backends::cuda::Cuda::open().is_ok() {
        eprintln!("skipped: this machine has a usable GPU");
        return;
    }
    let out = epsilon(&["eval", "(println 1)\n(set-backend! 'cuda)"]);
    out.assert_code(1).assert_no_panic();
    assert!(out.stderr.contains("<eval>:2:1"), "{}", out.stderr);
    assert!(out.stderr.contains("libcuda"), "{}", out.stderr);
}

// --- eval ---------------------------------------------------------------------

#[test]
fn eval_prints_the_value_of_the_last_form() {
    let cases = [
        ("(+ 1 2)", "3\n"),
        ("(define x 4) (* x 2.5)", "10.0\n"),
        ("(/ 1 2)", "0.5\n"),
        ("\"hi\"", "\"hi\"\n"),
        ("'(1 2.5 x)", "(1 2.5 x)\n"),
        ("(list)", "()\n"),
        ("[[1 2] [3 4]]", "[[1.0 2.0] [3.0 4.0]]\n"),
    ];
    for (source, expected) in cases {
        let out = epsilon(&["eval", source]);
        out.assert_code(0);
        assert_eq!(out.stdout, expected, "epsilon eval {source:?}");
    }
}

#[test]
fn eval_joins_several_arguments() {
    let out = epsilon(&["eval", "(define y 5)", "(+ y 1)"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "6\n");
}

#[test]
fn eval_does_not_print_void_values() {
    for source in ["(define x 3)", "(define (f x) x)", "(println \"a\")"] {
        let out = epsilon(&["eval", source]);
        out.assert_code(0);
        let expected = if source.starts_with("(println") {
            "a\n"
        } else {
            ""
        };
        assert_eq!(out.stdout, expected, "epsilon eval {source:?}");
    }
}

#[test]
fn eval_error_exits_1_with_a_located_report() {
    let out = epsilon(&["eval", "(car 5)"]);
    out.assert_code(1).assert_no_panic();
    assert!(
        out.stderr.contains(":1:1: error:"),
        "stderr: {}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
}

// --- run, *args*, exit ----------------------------------------------------------

#[test]
fn run_passes_the_arguments_in_args() {
    let dir = temp_dir();
    let path = dir.path().join("args.lisp");
    std::fs::write(
        &path,
        "(println (length *args*))\n(println (car *args*))\n(println (nth *args* 2))\n",
    )
    .unwrap();
    let out = epsilon(&["run", path.to_str().unwrap(), "first", "--flag", "3"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "3\nfirst\n3\n");
    // The arguments are strings.
    std::fs::write(&path, "(println (string? (nth *args* 0)))\n").unwrap();
    let out = epsilon(&["run", path.to_str().unwrap(), "42"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "#t\n");
}

#[test]
fn run_with_no_arguments_has_empty_args() {
    let dir = temp_dir();
    let (out, _) = run_script(dir.path(), "noargs.lisp", "(println (null? *args*))\n");
    out.assert_code(0);
    assert_eq!(out.stdout, "#t\n");
}

#[test]
fn run_does_not_echo_values() {
    let dir = temp_dir();
    let (out, _) = run_script(dir.path(), "quiet.lisp", "(+ 1 2)\n\"x\"\n");
    out.assert_code(0);
    assert_eq!(out.stdout, "");
}

#[test]
fn exit_gives_its_status() {
    let dir = temp_dir();
    let (out, _) = run_script(
        dir.path(),
        "exit.lisp",
        "(println \"before\")\n(exit 3)\n(println \"after\")\n",
    );
    out.assert_code(3);
    assert_eq!(out.stdout, "before\n", "output before exit is flushed");
    assert_eq!(out.stderr, "", "exit is not an error");

    let (out, _) = run_script(dir.path(), "exit0.lisp", "(exit 0)\n(car 5)\n");
    out.assert_code(0);

    let out = epsilon(&["eval", "(exit 7)"]);
    out.assert_code(7);
}

#[test]
fn exit_with_a_negative_status_is_not_success() {
    // A status outside 0..=255 cannot be passed on as is, but a script that
    // asks for a failure status must not be reported as a success.
    for n in ["-1", "-5"] {
        let out = epsilon(&["eval", &format!("(exit {n})")]);
        assert_ne!(out.code(), 0, "(exit {n}) ended with status 0 (success)");
    }
}

#[test]
fn exit_inside_try_is_not_caught() {
    let dir = temp_dir();
    let (out, _) = run_script(
        dir.path(),
        "tryexit.lisp",
        "(try (exit 4) (catch (e) (println \"caught\")))\n",
    );
    out.assert_code(4);
    assert_eq!(out.stdout, "");
}

#[test]
fn missing_script_is_an_error_with_status_1() {
    let dir = temp_dir();
    let path = dir.path().join("nope.lisp");
    let out = epsilon(&["run", path.to_str().unwrap()]);
    out.assert_code(1).assert_no_panic();
    assert!(out.stderr.contains("error"), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("nope.lisp"),
        "the message names the file: {}",
        out.stderr
    );
}

// --- error reports: FILE:LINE:COL, quoted line, caret ----------------------------

/// Runs `source` as a script and checks the report points at `line:col`.
fn expect_error_at(source: &str, line: u32, col: u32) -> (String, String) {
    let dir = temp_dir();
    let (out, path) = run_script(dir.path(), "script.lisp", source);
    out.assert_code(1).assert_no_panic();
    let source_line = source.lines().nth(line as usize - 1).unwrap();
    let message = check_report(&out.stderr, &path, line, col, source_line);
    (message, out.stderr)
}

#[test]
fn unbound_symbol_is_reported_where_it_is_used() {
    let (message, _) = expect_error_at("(define x 1)\n(+ x\n   undefined-thing)\n", 3, 4);
    assert!(message.contains("undefined-thing"), "message: {message}");
}

#[test]
fn an_error_inside_the_standard_library_points_at_the_user_call() {
    let (message, stderr) = expect_error_at("(define opt\n  (adam :learning-rate 0.1))\n", 2, 3);
    assert!(
        message.contains("adam: unknown option :learning-rate"),
        "{message}"
    );
    assert!(
        message.contains(":lr"),
        "the message lists the options: {message}"
    );
    assert!(
        stderr.contains("raised inside <stdlib/prelude.lisp>:"),
        "{stderr}"
    );
    // A stdlib function called from a user function: the innermost user
    // call is the place, the outer one a "called from" line.
    let (_, stderr) = expect_error_at(
        "(define (train)\n  (list (lbfgs (lambda (x) x) 0.0 :iterations 3)))\n(train)\n",
        2,
        9,
    );
    assert!(stderr.contains("called from"), "{stderr}");
}

#[test]
fn wrong_arity_is_reported_at_the_call() {
    let (message, _) = expect_error_at("(define (f a b) a)\n\n  (f 1)\n", 3, 3);
    assert!(
        message.contains('2') && message.contains('1'),
        "the message says how many arguments were expected and given: {message}"
    );
    let (message, _) = expect_error_at("(define z 0)\n(car '(1) '(2))\n", 2, 1);
    assert!(message.contains('1'), "message: {message}");
}

#[test]
fn wrong_type_is_reported_at_the_call() {
    let (message, _) = expect_error_at("(define y 2)\n(+ 1 \"a\")\n", 2, 1);
    assert!(message.contains('+'), "the message names `+`: {message}");
}

#[test]
fn runtime_error_in_a_function_points_into_its_body_and_names_the_caller() {
    let source = "(define (g x) (car x))\n(define (h) (+ 1 (g 5)))\n(h)\n";
    let (message, stderr) = expect_error_at(source, 1, 15);
    assert!(message.contains("car"), "message: {message}");
    assert!(
        stderr.contains("script.lisp:2:18"),
        "the report mentions the call site (g 5) on line 2:\n{stderr}"
    );
}

#[test]
fn unclosed_parenthesis_is_reported_at_the_opening_one() {
    let (message, _) = expect_error_at("(define z 1)\n  (+ 1\n   (* 2 3)\n", 2, 3);
    assert!(
        message.contains("unclosed") || message.contains("'('"),
        "message: {message}"
    );
    // The outermost unclosed bracket, even when inner ones close.
    expect_error_at("(define (f x)\n  (let ((y 1))\n    (* x y))\n", 1, 1);
}

#[test]
fn unexpected_close_parenthesis_is_reported_where_it_is() {
    let (message, _) = expect_error_at("(define z 1)\n(+ 1 2))\n", 2, 8);
    assert!(message.contains(')'), "message: {message}");
    expect_error_at(")\n", 1, 1);
    expect_error_at("(list 1\n  2]\n", 2, 4);
}

#[test]
fn unterminated_string_is_reported_at_its_start() {
    expect_error_at("(define a 1)\n(display \"abc)\n", 2, 10);
}

#[test]
fn division_by_integer_zero_is_reported() {
    let (message, _) = expect_error_at("(define d 0)\n(println (/ 1 d))\n", 2, 10);
    assert!(
        message.contains("zero") || message.contains('0'),
        "{message}"
    );
    expect_error_at("(quotient 7 0)\n", 1, 1);
}

#[test]
fn shape_mismatch_is_reported() {
    let (message, _) = expect_error_at("(define a [1 2 3])\n(+ a [1 2])\n", 2, 1);
    assert!(
        message.contains("[3]") && message.contains("[2]"),
        "{message}"
    );
}

#[test]
fn user_error_is_reported_with_its_message() {
    let (message, _) = expect_error_at("(define q 1)\n  (error \"boom\" 42)\n", 2, 3);
    assert!(message.contains("boom"), "{message}");
    assert!(message.contains("42"), "irritants are shown: {message}");
}

#[test]
fn columns_count_characters_not_bytes() {
    expect_error_at("(define s \"εεε\") (car 5)\n", 1, 18);
}

#[test]
fn output_before_an_error_is_kept() {
    let dir = temp_dir();
    let (out, path) = run_script(
        dir.path(),
        "partial.lisp",
        "(println \"one\")\n(car 5)\n(println \"two\")\n",
    );
    out.assert_code(1);
    assert_eq!(
        out.stdout, "one\n",
        "forms before the error ran, none after"
    );
    check_report(&out.stderr, &path, 2, 1, "(car 5)");
}

#[test]
fn errors_caught_by_try_do_not_fail_the_script() {
    let dir = temp_dir();
    let (out, _) = run_script(
        dir.path(),
        "try.lisp",
        "(println (try (car 5) (catch (e) \"caught\")))\n",
    );
    out.assert_code(0);
    assert_eq!(out.stdout, "caught\n");
}

// --- load resolves against the calling file ------------------------------------

#[test]
fn load_resolves_relative_paths_against_the_calling_file() {
    let dir = temp_dir();
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::write(
        dir.path().join("main.lisp"),
        "(load \"lib/a.lisp\")\n(println (+ a-value b-value))\n",
    )
    .unwrap();
    // a.lisp loads b.lisp from its own directory, lib/.
    std::fs::write(
        lib.join("a.lisp"),
        "(load \"b.lisp\")\n(define a-value 40)\n",
    )
    .unwrap();
    std::fs::write(lib.join("b.lisp"), "(define b-value 2)\n").unwrap();
    // Run from an unrelated working directory.
    let elsewhere = temp_dir();
    let mut command = std::process::Command::new(common::EPSILON);
    command
        .current_dir(elsewhere.path())
        .arg("run")
        .arg(dir.path().join("main.lisp"));
    let out = common::run_command(command, None);
    out.assert_code(0);
    assert_eq!(out.stdout, "42\n");
}

#[test]
fn error_in_a_loaded_file_names_that_file() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("bad.lisp"), "(define ok 1)\n  (car 5)\n").unwrap();
    let (out, _) = run_script(dir.path(), "main.lisp", "(load \"bad.lisp\")\n");
    out.assert_code(1).assert_no_panic();
    let bad = dir.path().join("bad.lisp");
    check_report(&out.stderr, bad.to_str().unwrap(), 2, 3, "  (car 5)");
}

// --- a piped standard input is run as a script ----------------------------------

#[test]
fn piped_stdin_without_subcommand_runs_as_a_script() {
    let out = epsilon_with_stdin(
        &[],
        "(println \"hello\")\n(define x 2)\n(println (* x 21))\n(+ 1 2)\n",
    );
    out.assert_code(0);
    assert_eq!(
        out.stdout, "hello\n42\n",
        "println output appears, values are not echoed, no banner or prompt"
    );
    assert!(!out.stdout.contains("ε>"), "no prompt");
}

#[test]
fn piped_stdin_error_exits_1_with_a_report() {
    let out = epsilon_with_stdin(&[], "(println \"hello\")\n  (car 5)\n(println \"after\")\n");
    out.assert_code(1).assert_no_panic();
    assert_eq!(out.stdout, "hello\n");
    check_report(&out.stderr, "<stdin>", 2, 3, "  (car 5)");
}

#[test]
fn piped_stdin_exit_gives_its_status() {
    let out = epsilon_with_stdin(&[], "(exit 5)\n");
    out.assert_code(5);
}

#[test]
fn run_dash_reads_standard_input() {
    let out = epsilon_with_stdin(&["run", "-", "x"], "(println (car *args*))\n");
    out.assert_code(0);
    assert_eq!(out.stdout, "x\n");
}

#[test]
fn empty_stdin_is_a_successful_empty_script() {
    let out = epsilon_with_stdin(&[], "");
    out.assert_code(0);
    assert_eq!(out.stdout, "", "{}", head(&out.stderr));
}

#[test]
fn the_quickstart_runs_and_its_numbers_are_right() {
    let out = epsilon(&["run", "examples/quickstart.lisp"]);
    out.assert_code(0);
    // Rosenbrock at the classic start: d/dx = -2(1-x) - 400x(y-x^2) = -215.6,
    // d/dy = 200(y-x^2) = -88; its Hessian at (1, 1) is [[802 -400] [-400 200]].
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("grad rosenbrock"))
        .expect("the gradient line is printed");
    let numbers: Vec<f64> = line
        .split(['[', ']', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!((numbers[numbers.len() - 2] + 215.6).abs() < 1e-9, "{line}");
    assert!((numbers[numbers.len() - 1] + 88.0).abs() < 1e-9, "{line}");
    assert!(
        out.stdout
            .contains("hessian at the minimum      = [[802.0 -400.0] [-400.0 200.0]]")
    );
    assert!(
        out.stdout
            .contains("branches follow the values  = (6.0 -1.0)")
    );
    assert!(out.stdout.contains("w = 3.005, b = 0.483"));
    assert!(
        out.stdout
            .contains("minimize (L-BFGS): w = 3.005, b = 0.483")
    );
}

// --- loop bodies run from plans or through the general executor --------------------

/// An LSTM-like loop's gradient (views, concatenations, gates, a
/// logsumexp, store-all and revolve) prints the same digits with plans
/// (the default for small bodies) and with `EPSILON_PLANS=0`.
#[test]
fn planned_loop_bodies_give_the_general_executors_gradients() {
    let dir = temp_dir();
    let script = r"
(define (cell w h x)
  (let* ((gates (reshape (+ (* (concat (list x h x h)) (index w 0)) (index w 1)) (list 4 3)))
         (c (* (sigmoid (index gates 0)) (tanh (index gates 3)))))
    (* (sigmoid (index gates 2)) (tanh (+ c (index gates 1))))))
(define xs (reshape (sin (arange 24.0)) (list 8 3)))
(define (loss w strategy)
  (let ((r (scan (lambda (h x) (let ((h2 (cell w h x))) (list h2 (logsumexp h2))))
                 (zeros 3) xs :checkpoint strategy :snapshots 3)))
    (+ (sum (second r)) (sum (first r)))))
(define w (* 0.3 (cos (reshape (arange 24.0) (list 2 12)))))
(println ((grad (lambda (w) (loss w 'store-all))) w))
(println ((grad (lambda (w) (loss w 'revolve))) w))
;; A number and a vector as the state, per-step outputs, and the
;; gradient with respect to the scanned sequence itself.
(define (run-mixed xs strategy)
  (scan (lambda (s x)
          (list (list (* (first s) (+ 1 (* 0.1 (sum x)))) (+ (* 0.9 (second s)) (* (first s) x)))
                (* x (second s))))
        (list 1.0 (zeros 3)) xs :checkpoint strategy :snapshots 2))
(define (mixed xs strategy)
  (let ((r (run-mixed xs strategy)))
    (+ (first (first r)) (sum (second (first r))) (sum (second r)))))
(println (second (run-mixed xs 'store-all)))
(println ((grad (lambda (xs) (mixed xs 'store-all))) xs))
(println ((grad (lambda (xs) (mixed xs 'revolve))) xs))
";
    std::fs::write(dir.path().join("lstm.lisp"), script).unwrap();
    let run = |plans: &str| {
        let mut command = std::process::Command::new(common::EPSILON);
        command
            .env("EPSILON_PLANS", plans)
            .arg("run")
            .arg(dir.path().join("lstm.lisp"));
        let out = common::run_command(command, None);
        out.assert_code(0);
        out.stdout
    };
    let (planned, general) = (run("1"), run("0"));
    let numbers = |text: &str| -> Vec<f64> {
        text.split(|c: char| !(c.is_ascii_digit() || "-.e".contains(c)))
            .filter_map(|t| t.parse().ok())
            .collect()
    };
    let (a, b) = (numbers(&planned), numbers(&general));
    assert_eq!(a.len(), 48 + 3 * 24, "{planned}");
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
            "{planned}\n{general}"
        );
    }
}

/// Starts `epsilon run FILE` on an endless loop, sends it SIGINT after
/// it started, and gives its exit status and standard error.
fn interrupted_run(source: &str) -> (Option<i32>, String) {
    let dir = temp_dir();
    let path = dir.path().join("endless.lisp");
    std::fs::write(&path, source).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_epsilon"))
        .arg("run")
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: sends a signal to the child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_stops_a_script_with_status_130_where_it_was() {
    let (code, stderr) = interrupted_run("(define (f n) (f (+ n 1)))\n(f 0)\n");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("endless.lisp:1:15: error: interrupted"),
        "{stderr}"
    );
    // A named let of numbers is interrupted too.
    let (code, stderr) = interrupted_run("(let loop ((i 0) (x 0.0)) (loop (+ i 1) (+ x 1.5)))\n");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("error: interrupted"), "{stderr}");
}

/// An error raised deep inside the standard library shows the user's call,
/// the innermost library place and a count of the others; `--backtrace`
/// lists them all.
#[test]
fn library_frames_are_folded_unless_backtrace_is_asked() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let source = "(define (f y t) (neg y))\n(odeint f 1.0 (tensor 0.0 1.0) :method 'rk4)\n";
    let path = dir.path().join("ode.lisp");
    std::fs::write(&path, source).expect("the script is written");
    let path = path.to_str().expect("UTF-8");
    let short = epsilon(&["run", path]);
    short.assert_code(1).assert_no_panic();
    check_report(
        &short.stderr,
        path,
        2,
        1,
        "(odeint f 1.0 (tensor 0.0 1.0) :method 'rk4)",
    );
    assert_eq!(
        short.stderr.matches("raised inside <stdlib/").count(),
        1,
        "{}",
        short.stderr
    );
    let more: usize = short
        .stderr
        .split("... and ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of the other frames: {}", short.stderr));
    assert!(more >= 1, "{}", short.stderr);
    assert!(
        short
            .stderr
            .contains("inside the standard library (--backtrace shows them)"),
        "{}",
        short.stderr
    );
    let full = epsilon(&["--backtrace", "run", path]);
    full.assert_code(1).assert_no_panic();
    assert_eq!(
        full.stderr.matches("raised inside <stdlib/").count(),
        more + 1,
        "{}",
        full.stderr
    );
    assert!(!full.stderr.contains("... and"), "{}", full.stderr);
}

// --- a closed standard output ends the command quietly ----------------------

/// Runs `pipeline` in bash with `pipefail`, `$0` naming the binary: the
/// status is the first failing command's, so a failure of `epsilon` piped
/// into `head` shows.
fn piped(pipeline: &str) -> common::Outcome {
    let mut command = std::process::Command::new("bash");
    command.args([
        "-c",
        &format!("set -o pipefail; {pipeline}"),
        common::EPSILON,
    ]);
    common::run_command(command, None)
}

#[test]
fn eval_piped_into_head_stops_quietly_with_status_0() {
    let out = piped(r#""$0" eval '(range 100000)' | head -c 5"#);
    assert_eq!(out.stdout, "(0 1 ");
    assert_eq!(out.stderr, "", "no panic, no report");
    out.assert_code(0);
}

#[test]
fn run_piped_into_head_stops_quietly_with_status_0() {
    let dir = temp_dir();
    let path = dir.path().join("count.lisp");
    // A long loop (endless were the closed output missed), inside a `try`
    // that must not catch the end of the output.
    std::fs::write(
        &path,
        "(try (dotimes (i 10000000) (println i)) (catch (e) (eprintln \"caught\" e)))\n\
         (eprintln \"after\")\n",
    )
    .expect("written");
    let out = piped(&format!(r#""$0" run '{}' | head -n 2"#, path.display()));
    assert_eq!(out.stdout, "0\n1\n");
    assert_eq!(out.stderr, "", "no report, and the script stops");
    out.assert_code(0);
    // Standard input run as a script, and display without newlines.
    let out = piped(r#"echo '(dotimes (i 10000000) (display i))' | "$0" | head -c 3"#);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("012", ""));
    out.assert_code(0);
}

#[test]
fn read_line_reads_standard_input_after_its_prompt() {
    let out = epsilon_with_stdin(
        &[
            "eval",
            r#"(println (read-line "name? ") (read-line) (read-line))"#,
        ],
        "Ada\r\nLovelace\n",
    );
    out.assert_code(0);
    assert_eq!(out.stdout, "name? Ada Lovelace #f\n");
}

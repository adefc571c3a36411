//! Review of the standard library and its companions (stdlib/*.lisp, gather,
//! format widths, plot, progress, defderiv, error locations). Each test shows
//! one bug found in review; its comment names the expected behaviour. They
//! fail until the bug is fixed.

mod common;

use epsilon::{Engine, Value};

fn eval(eps: &mut Engine, source: &str) -> Value {
    eps.eval(source)
        .unwrap_or_else(|e| panic!("{source}: {}", e.render()))
}

fn echo(source: &str) -> String {
    let mut eps = Engine::new();
    format!("{}", eval(&mut eps, source))
}

fn number(source: &str) -> f64 {
    let mut eps = Engine::new();
    f64::try_from(eval(&mut eps, source)).expect("a number")
}

// ---------------------------------------------------------------------------
// Error locations: an error raised inside the stdlib must point at the user's
// call. A stdlib function that reaches the failing code through a tail call
// (mlp's named-let loop, minimize -> lbfgs, tree-unflatten -> tree-map) loses
// the user's call site: `run_closure` replaces `span` by the tail call's span.
// ---------------------------------------------------------------------------

/// Expected: the report's first line is the user's `(mlp net x)` (line 3),
/// with the stdlib places listed as "raised inside". Today it is
/// `<stdlib/nn.lisp>:44:6` and the user's file is not mentioned at all.
#[test]
fn review_mlp_shape_error_points_at_the_users_call() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(define net (mlp-init '(3 4 1)))\n(define x [[1.0 2.0]])\n(mlp net x)\n";
    let (outcome, path) = common::run_script(dir.path(), "net.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    common::check_report(&outcome.stderr, &path, 3, 1, "(mlp net x)");
}

/// The same through a user's loss function under grad: the report should
/// point at `(mlp p x)` on line 3 (or at least mention the user's file).
#[test]
fn review_mlp_shape_error_inside_a_loss_mentions_the_users_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(define net (mlp-init '(3 4 1)))\n(define x [[1.0 2.0]])\n(define (loss p) (mse (mlp p x) 0.0))\n((grad loss) net)\n";
    let (outcome, path) = common::run_script(dir.path(), "loss.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    let first = outcome.stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&path),
        "the report should start at the user's file, got:\n{}",
        outcome.stderr
    );
}

/// Expected: `(minimize f [3 4])` with f returning a vector reports the
/// user's call on line 2. Today: `<stdlib/optim.lisp>:147:16`, with only
/// stdlib lines in the trace (minimize tail-calls lbfgs).
#[test]
fn review_minimize_error_points_at_the_users_call() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(define (f x) (* x x))\n(minimize f [3.0 4.0])\n";
    let (outcome, path) = common::run_script(dir.path(), "min.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    common::check_report(&outcome.stderr, &path, 2, 1, "(minimize f [3.0 4.0])");
}

/// Same with an optimizer as :method (the loop is a named let in tail position).
#[test]
fn review_minimize_with_an_optimizer_error_points_at_the_users_call() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(define (f x) (* x x))\n(minimize f [3.0 4.0] :method (adam))\n";
    let (outcome, path) = common::run_script(dir.path(), "min2.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    common::check_report(
        &outcome.stderr,
        &path,
        2,
        1,
        "(minimize f [3.0 4.0] :method (adam))",
    );
}

/// Expected: `(tree-unflatten like v)` with too short a vector reports the
/// user's call; today `<stdlib/prelude.lisp>:106:51` only.
#[test]
fn review_tree_unflatten_error_points_at_the_users_call() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(define like (list 1.0 [1.0 2.0]))\n(tree-unflatten like [9.0 8.0])\n";
    let (outcome, path) = common::run_script(dir.path(), "tree.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    common::check_report(
        &outcome.stderr,
        &path,
        2,
        1,
        "(tree-unflatten like [9.0 8.0])",
    );
}

/// Expected: an error in a defderiv body points at the failing expression
/// `(* 2 x)` (line 2; at its head `*`, col 4, since the macro moved the form
/// into new list cells) and lists the call `(w "a")` (line 6), as for a
/// function made with define. It pointed at the whole defderiv form (1:1)
/// without the call site.
#[test]
fn review_defderiv_body_error_points_at_the_body_and_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let source = "(defderiv w (x)\n  (* 2 x)\n  (2.0))\n\n(define y 1)\n(w \"a\")\n";
    let (outcome, path) = common::run_script(dir.path(), "dd.lisp", source);
    outcome.assert_code(1).assert_no_panic();
    common::check_report(&outcome.stderr, &path, 2, 4, "  (* 2 x)");
    assert!(
        outcome.stderr.contains(&format!("{path}:6:1")),
        "the call site (line 6) should be in the trace:\n{}",
        outcome.stderr
    );
}

// ---------------------------------------------------------------------------
// fit
// ---------------------------------------------------------------------------

const LINEAR: &str = "(define (loss w x y) (mse (matmul x w) y)) (seed! 0) (define x (randn '(10 3))) (define y (matmul x [1.0 -2.0 0.5]))";

/// Expected: `:epochs 0` trains nothing and gives (params ()). Today:
/// "first: car of the empty list" from `(first history)` in progress-finish!.
#[test]
fn review_fit_with_zero_epochs_returns_the_params_and_an_empty_history() {
    let mut eps = Engine::new();
    eval(&mut eps, LINEAR);
    let result = eps.eval("(fit loss (zeros 3) (list x y) :epochs 0)");
    match result {
        Ok(value) => assert_eq!(format!("{value}"), "([0.0 0.0 0.0] ())"),
        Err(e) => panic!("fit :epochs 0 failed: {}", e.render()),
    }
}

/// Expected: an empty dataset is a clear error naming fit / the empty data,
/// not "/: division by the integer 0".
#[test]
fn review_fit_on_an_empty_dataset_gives_a_clear_error() {
    let mut eps = Engine::new();
    eval(&mut eps, LINEAR);
    let err = eps
        .eval("(fit loss (zeros 3) (list (zeros '(0 3)) (zeros 0)) :epochs 1)")
        .expect_err("no data");
    assert!(
        !err.message().contains("division by the integer 0"),
        "{}",
        err.message()
    );
}

/// Expected: when the loss raises an error inside fit, fit's progress bar is
/// finished (released) so it does not stay alive. Today the bar leaks: it is
/// redrawn on the terminal after every later println, and stacks above the
/// next fit's bar (see the pty test below). Here: the leaked handle 1 is
/// still active after the error.
#[test]
fn review_fit_releases_its_progress_bar_when_the_loss_fails() {
    let mut eps = Engine::new();
    eval(
        &mut eps,
        "(define (bad w x y) (error \"boom\")) (define x (ones '(10 3))) (define y (ones 10))",
    );
    eps.eval("(fit bad (zeros 3) (list x y) :epochs 3 :batch-size 2)")
        .expect_err("the loss fails");
    let err = eps
        .eval("(progress-finish! 1)")
        .expect_err("fit's bar (handle 1) should already be released");
    assert!(
        err.message().contains("no active progress bar"),
        "{}",
        err.message()
    );
}

/// On a terminal: after a fit whose loss failed (caught with try), the stale
/// `fit [...] 0/15` bar must not be redrawn around later output.
#[test]
fn review_a_failed_fit_leaves_no_stale_bar_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fiterr.lisp");
    std::fs::write(
        &script,
        r#"(define (loss w x y) (error "boom"))
(define x (ones '(10 3)))
(define y (ones 10))
(try (fit loss (zeros 3) (list x y) :epochs 3 :batch-size 2) (catch (e) (println "caught")))
(println "marker-one")
(println "marker-two")
(println "marker-end")
"#,
    )
    .unwrap();
    let mut session = common::run_script_in_pty(&script);
    session.exp_string("marker-one").expect("first marker");
    let between = session.exp_string("marker-end").expect("last marker");
    assert!(
        !between.contains("0/15"),
        "the failed fit's bar is still drawn after the error: {between:?}"
    );
    session.exp_eof().expect("epsilon exits");
}

// ---------------------------------------------------------------------------
// Losses and one-hot
// ---------------------------------------------------------------------------

/// Expected: a label outside 0..k-1 is an error (one-hot's doc: "class
/// numbers 0 to k-1"). Today it silently gives an all-zero row, and
/// softmax-cross-entropy counts that example as loss 0.
#[test]
fn review_one_hot_rejects_out_of_range_labels() {
    let mut eps = Engine::new();
    for source in [
        "(one-hot [0 5] 3)",
        "(one-hot [0 -1] 3)",
        "(one-hot [0.5 1] 3)",
        "(softmax-cross-entropy [[1.0 2.0] [3.0 4.0]] [0 5])",
    ] {
        if let Ok(value) = eps.eval(source) {
            panic!("{source} should be an error, gave {value}");
        }
    }
}

/// A bad label inside `fit` (where labels are traced) is reported by
/// one-hot, not as a failed conversion of a traced value; data that is not
/// a dataset list is refused by `fit` with what to do.
#[test]
fn errors_inside_fit_say_what_is_wrong() {
    let mut eps = Engine::new();
    eps.eval("(define X (randn '(8 3))) (define (loss p x y) (softmax-cross-entropy (matmul x p) (one-hot y 3)))")
        .expect("defines");
    let error = eps
        .eval("(fit loss (randn '(3 3)) (list X (tensor '(0 1 2 3 0 1 2 0))) :epochs 1 :batch-size 4)")
        .expect_err("label 3 of 3 classes")
        .to_string();
    assert!(
        error.contains("one-hot: the labels must be whole numbers from 0 to 2")
            && !error.contains("int:"),
        "{error}"
    );
    let error = eps
        .eval("(fit (lambda (p x) (sum (matmul x p))) (randn '(3 3)) X :epochs 1)")
        .expect_err("a bare tensor")
        .to_string();
    assert!(
        error.contains("fit: data is a dataset, a list (x y ...)") && error.contains("(list x)"),
        "{error}"
    );
}

/// Expected: class labels as an n x 1 column (as sliced from read-csv) are
/// read as class numbers, or refused; today they are taken as probability
/// rows and broadcast, giving 6.03 instead of 0.175 (and accuracy 0.5
/// instead of 1.0), silently.
#[test]
fn review_classification_losses_with_column_labels_are_not_silently_wrong() {
    let logits = "[[2.0 0.5 -1.0] [0.1 0.2 3.0]]";
    let mut eps = Engine::new();
    let expected = number(&format!("(softmax-cross-entropy {logits} [0 2])"));
    if let Ok(value) = eps.eval(&format!("(softmax-cross-entropy {logits} [[0] [2]])")) {
        let got = f64::try_from(value).unwrap();
        assert!(
            (got - expected).abs() < 1e-12,
            "column labels gave {got}, vector labels {expected}"
        );
    }
    if let Ok(value) = eps.eval(&format!("(accuracy {logits} [[0] [2]])")) {
        let got = f64::try_from(value).unwrap();
        assert_eq!(got, 1.0, "accuracy with column labels");
    }
}

/// Expected: mse of an n x 1 prediction (an mlp with one output, as
/// `(mlp-init '(2 8 1))` in docs/stdlib.md) against an n-vector of targets
/// is the mean of the n squared residuals (0 here) or an error; today the
/// shapes broadcast to n x n and the loss is 1.333, silently.
#[test]
fn review_mse_does_not_broadcast_column_predictions_against_vector_targets() {
    let mut eps = Engine::new();
    for source in [
        "(mse [[1.0] [2.0] [3.0]] [1.0 2.0 3.0])",
        "(huber [[1.0] [2.0] [3.0]] [1.0 2.0 3.0])",
    ] {
        if let Ok(value) = eps.eval(source) {
            let got = f64::try_from(value).unwrap();
            assert!(
                got.abs() < 1e-12,
                "{source} gave {got}, expected 0 or an error"
            );
        }
    }
}

/// Expected: a single example (1-D logits, a scalar class) works, or the
/// error says what is wrong; today "first: car of the empty list" and
/// "mean: expected a tensor, got boolean #t".
#[test]
fn review_one_example_classification_errors_are_clear() {
    let mut eps = Engine::new();
    for source in [
        "(softmax-cross-entropy [1.0 2.0 3.0] 2)",
        "(accuracy [1.0 3.0 2.0] 1)",
        "(one-hot 2 3)",
    ] {
        if let Err(err) = eps.eval(source) {
            let message = err.message();
            assert!(
                !message.contains("car of the empty list") && !message.contains("got boolean"),
                "{source}: {message}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Trees
// ---------------------------------------------------------------------------

/// Expected: tree-map over trees of different structure is an error (its
/// doc: "over trees of one structure"); today the extra leaf is dropped:
/// (tree-map + (list 1 2) (list 1 2 3)) gives (2 4).
#[test]
fn review_tree_map_rejects_trees_of_different_structure() {
    let mut eps = Engine::new();
    if let Ok(value) = eps.eval("(tree-map + (list 1 2) (list 1 2 3))") {
        panic!("mismatched trees should be an error, gave {value}");
    }
}

// ---------------------------------------------------------------------------
// L-BFGS
// ---------------------------------------------------------------------------

/// Expected: a convex quadratic whose minimum is far from x0 is minimized.
/// Today the bracketing phase of wolfe-search doubles the step 30 times,
/// every probe lowering f, then gives up (#f), throwing the decrease away:
/// x stays 0, "the line search found no decrease".
#[test]
fn review_lbfgs_reaches_a_far_minimum() {
    let mut eps = Engine::new();
    eval(
        &mut eps,
        "(define r (minimize (lambda (x) (/ (pow (- x 1e10) 2) 1e10)) 0.0))",
    );
    let x = f64::try_from(eval(&mut eps, "(lookup r 'x)")).unwrap();
    let message = format!("{}", eval(&mut eps, "(lookup r 'message)"));
    assert!((x - 1e10).abs() < 1e-3 * 1e10, "x = {x}, message {message}");
}

/// Expected: on a function unbounded below, lbfgs moves downhill (and may
/// say it is unbounded); today it returns x0 unchanged with "the line
/// search found no decrease", though every probe decreased f.
#[test]
fn review_lbfgs_on_an_unbounded_function_does_not_claim_no_decrease() {
    let mut eps = Engine::new();
    eval(&mut eps, "(define r (minimize (lambda (x) (- x)) 1.0))");
    let value = f64::try_from(eval(&mut eps, "(lookup r 'value)")).unwrap();
    let message = format!("{}", eval(&mut eps, "(lookup r 'message)"));
    assert!(
        value < -1.0 && !message.contains("no decrease"),
        "value {value}, message {message}"
    );
}

/// Expected: a NaN gradient at x0 is reported as such (like a non-finite
/// value: "... not finite ..."), without 30 wasted evaluations. Today:
/// "the line search found no decrease" after 31 evaluations.
#[test]
fn review_lbfgs_reports_a_non_finite_gradient() {
    let mut eps = Engine::new();
    eval(
        &mut eps,
        "(define r (minimize (lambda (x) (sqrt (abs x))) 0.0))",
    );
    let message = format!("{}", eval(&mut eps, "(lookup r 'message)"));
    assert!(message.contains("finite"), "message {message}");
}

// ---------------------------------------------------------------------------
// gather
// ---------------------------------------------------------------------------

/// Expected: gather under grad either works (a scatter-add backward, for
/// embedding lookups) or says it cannot be differentiated without the
/// self-contradictory "expected a tensor, got tensor [...]".
#[test]
fn review_gather_under_grad_has_a_sensible_error() {
    let mut eps = Engine::new();
    match eps.eval("((grad (lambda (x) (sum (gather x [2 0 2])))) [1.0 5.0 2.0])") {
        Ok(value) => assert_eq!(format!("{value}"), "[1.0 0.0 2.0]"),
        Err(err) => assert!(
            !err.message().contains("expected a tensor, got tensor"),
            "{}",
            err.message()
        ),
    }
}

/// Expected: the message names gather once; today "gather: gather: index 3 ...".
#[test]
fn review_gather_error_names_gather_once() {
    let mut eps = Engine::new();
    let err = eps
        .eval("(gather [10 20 30] [3])")
        .expect_err("out of range");
    assert!(
        !err.message().contains("gather: gather:"),
        "{}",
        err.message()
    );
}

// ---------------------------------------------------------------------------
// format
// ---------------------------------------------------------------------------

/// Expected: a hole with digits or a width keeps a matrix's rows, as `{}`
/// does; today `{:.2}` and `{:10}` flatten it to "[1.00 2.00 3.00 4.00]".
#[test]
fn review_format_holes_keep_the_shape_of_a_matrix() {
    assert_eq!(
        echo("(format \"{:.2}\" [[1 2] [3 4]])"),
        "\"[[1.00 2.00] [3.00 4.00]]\""
    );
    assert_eq!(
        echo("(format \"{:10}\" [[1 2] [3 4]])"),
        "\"[[1.0 2.0] [3.0 4.0]]\""
    );
}

// ---------------------------------------------------------------------------
// plot
// ---------------------------------------------------------------------------

/// Expected: data of magnitude 1e-20 gets a y axis with several ticks (as
/// 1e-10 does: 1e-10, 1.5e-10, ...). Today, below about 1e-15, the axis has
/// a single tick ("9e-21") and no grid: plotters' tick search fails on the
/// tiny span, which `padded` only guards relative to the magnitude.
#[test]
fn review_plot_axis_of_tiny_values_has_ticks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.svg");
    let mut eps = Engine::new();
    eval(
        &mut eps,
        &format!("(plot (* 1e-20 [1 2 3]) \"{}\")", path.display()),
    );
    let svg = std::fs::read_to_string(&path).unwrap();
    // y tick labels are the texts anchored at their end (left of the axis).
    let y_ticks = svg.matches("text-anchor=\"end\"").count();
    assert!(y_ticks >= 3, "only {y_ticks} y tick label(s)");
}

// ---------------------------------------------------------------------------
// defderiv
// ---------------------------------------------------------------------------

/// Expected (docs/differentiation.md, the prelude docstring: "to any order:
/// derivatives come from the partials, never from differentiating body"):
/// the 5th numeric derivative of (defderiv me (x) (exp x) ((* 2 (me x))))
/// would be 32 e^x, as symbolic `diff` gives. A partial calling its own
/// function is followed to order 4 numerically (each traced call expands
/// the rule again, so the depth is bounded); the docs now say so. This test
/// checks orders 1 to 4 agree with symbolic `diff` and that order 5 is the
/// documented fallback (the body's derivative), not some third value.
#[test]
fn review_defderiv_high_order_numeric_agrees_with_symbolic() {
    let mut eps = Engine::new();
    eval(&mut eps, "(defderiv me (x) (exp x) ((* 2 (me x))))");
    let mut numeric_fn = String::from("me");
    for order in 1..=5 {
        numeric_fn = format!("(grad {numeric_fn})");
        let symbolic = f64::try_from(eval(
            &mut eps,
            &format!("(evaluate (diff '(me x) 'x {order}) '((x 0.0)))"),
        ))
        .unwrap();
        let numeric = f64::try_from(eval(&mut eps, &format!("({numeric_fn} 0.0)"))).unwrap();
        assert_eq!(symbolic, 2f64.powi(order));
        if order <= 4 {
            assert!(
                (numeric - symbolic).abs() < 1e-9,
                "order {order}: numeric {numeric}, symbolic {symbolic}"
            );
        } else {
            assert_eq!(
                numeric, 16.0,
                "order 5 differentiates the body once more: 2^4 * 1"
            );
        }
    }
}

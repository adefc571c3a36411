//! Progress bars: handles, positions and errors through the embedding API;
//! silence when standard error is not a terminal; and, under a
//! pseudo-terminal, a bar that shows its label and messages.

mod common;

use epsilon::{Engine, EvalErrorKind, Value};

fn int(value: Value) -> i64 {
    value.as_i64().expect("an integer")
}

#[test]
fn bars_have_handles_and_count_their_steps() {
    let mut eps = Engine::new();
    let a = int(eps
        .eval("(define a (progress 10 :label \"epoch\")) a")
        .unwrap());
    let b = int(eps.eval("(define b (progress 5)) b").unwrap());
    assert_ne!(a, b);
    assert_eq!(int(eps.eval("(progress-inc! a)").unwrap()), 1);
    assert_eq!(
        int(eps
            .eval("(progress-inc! a 3 :message \"loss 0.312\")")
            .unwrap()),
        4
    );
    assert_eq!(
        int(eps.eval("(progress-inc! a 0 :message \"m\")").unwrap()),
        4
    );
    // Going past the total is allowed.
    assert_eq!(int(eps.eval("(progress-inc! b 7)").unwrap()), 7);
    let done = eps.eval("(progress-finish! a :message \"done\")").unwrap();
    assert!(matches!(done, Value::Void));
    eps.eval("(progress-finish! b :clear #t)").unwrap();
    // A new bar gets a new handle, never a finished one's.
    let c = int(eps.eval("(progress 0)").unwrap());
    assert!(c != a && c != b);
}

#[test]
fn a_training_loop_with_a_bar_runs_and_prints_normally() {
    let mut eps = Engine::new();
    let output = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    eps.set_output(Box::new(Shared(output.clone())));
    let last = eps
        .eval(
            r#"(define bar (progress 20 :label "epoch"))
               (define loss 1.0)
               (dotimes (i 20)
                 (set! loss (* loss 0.9))
                 (when (= (remainder i 10) 0) (println "epoch" i))
                 (progress-inc! bar :message (format "loss {}" loss)))
               (progress-finish! bar :message "done")
               loss"#,
        )
        .unwrap();
    assert!((f64::try_from(last).unwrap() - 0.9f64.powi(20)).abs() < 1e-12);
    assert_eq!(
        String::from_utf8(output.borrow().clone()).unwrap(),
        "epoch 0\nepoch 10\n"
    );
}

#[test]
fn bad_calls_give_clear_errors() {
    let mut eps = Engine::new();
    eps.eval("(define bar (progress 3)) (define gone (progress 3)) (progress-finish! gone)")
        .unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "(progress -1)",
            "the total must be a non-negative integer, got -1",
        ),
        (
            "(progress \"ten\")",
            "the total must be a non-negative integer, got string",
        ),
        ("(progress 1.5)", "the total must be a non-negative integer"),
        ("(progress 3 :label 'epoch)", ":label must be a string"),
        ("(progress 3 :title \"x\")", "unknown option :title"),
        (
            "(progress-inc! bar -2)",
            "the step must be a non-negative integer, got -2",
        ),
        (
            "(progress-inc! bar 0.5)",
            "the step must be a non-negative integer",
        ),
        (
            "(progress-inc! bar :message 0.3)",
            ":message must be a string",
        ),
        ("(progress-inc! \"bar\")", "expected a progress bar"),
        ("(progress-inc! 12345)", "no active progress bar 12345"),
        ("(progress-inc! gone)", "it was finished"),
        ("(progress-finish! gone)", "it was finished"),
        (
            "(progress-finish! bar :message 'done)",
            ":message must be a string",
        ),
        ("(progress-inc!)", "expects 1 to 2 arguments"),
    ];
    for (source, expected) in cases {
        let err = eps.eval(source).expect_err(source);
        assert_ne!(err.kind(), EvalErrorKind::Internal);
        assert!(
            err.message().contains(expected),
            "{source}: expected {expected:?} in {:?}",
            err.message()
        );
    }
    // The failed calls left the live bar usable.
    assert_eq!(int(eps.eval("(progress-inc! bar)").unwrap()), 1);
}

#[test]
fn progress_has_documentation() {
    let eps = Engine::new();
    for name in ["progress", "progress-inc!", "progress-finish!"] {
        let doc = eps.doc(name).expect("documented");
        assert!(doc.starts_with(&format!("({name} ")), "{doc}");
    }
}

const SCRIPT: &str = r#"(define bar (progress 3 :label "epoch"))
(dotimes (i 3) (progress-inc! bar :message "loss 0.5"))
(println "halfway")
(progress-finish! bar :message "all done")
(println "after")
"#;

#[test]
fn nothing_is_drawn_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, _) = common::run_script(dir.path(), "bar.lisp", SCRIPT);
    outcome.assert_code(0);
    assert_eq!(outcome.stdout, "halfway\nafter\n");
    assert_eq!(outcome.stderr, "", "a bar was drawn to a pipe");
}

#[test]
fn a_terminal_shows_the_bar_label_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bar.lisp");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut session = common::run_script_in_pty(&script);
    let mut seen = String::new();
    for text in ["epoch", "halfway", "all done", "after"] {
        match session.exp_string(text) {
            Ok(before) => seen.push_str(&before),
            Err(err) => panic!("waiting for {text:?} after {seen:?}: {err}"),
        }
        seen.push_str(text);
    }
    assert!(seen.contains("3/3"), "the count: {seen:?}");
    session.exp_eof().expect("epsilon exits");
}

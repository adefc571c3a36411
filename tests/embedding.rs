//! The Rust embedding API of SPEC section 6: evaluation, calls, registered
//! functions, value conversions, errors that never end the host program,
//! and the host's input for `read-line`.

use epsilon::{Engine, EvalErrorKind, Value};
use ndarray::{ArrayD, IxDyn, arr2};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[test]
fn numbers_strings_booleans_and_lists_convert_both_ways() {
    let mut eps = Engine::new();
    eps.set("a", 2.5.into());
    eps.set("n", 7i64.into());
    eps.set("flag", true.into());
    eps.set("name", "ε".into());
    eps.set("items", vec![1i64, 2, 3].into());
    let back = eps
        .eval("(list (* a 2) (+ n 1) (not flag) (str name \"!\") (length items))")
        .unwrap();
    let parts: Vec<Value> = back.try_into().unwrap();
    assert_eq!(f64::try_from(parts[0].clone()).unwrap(), 5.0);
    assert_eq!(i64::try_from(parts[1].clone()).unwrap(), 8);
    assert!(!bool::try_from(parts[2].clone()).unwrap());
    assert_eq!(String::try_from(parts[3].clone()).unwrap(), "ε!");
    assert_eq!(parts[4].as_i64().unwrap(), 3);
}

#[test]
fn tensors_convert_to_and_from_ndarray() {
    let mut eps = Engine::new();
    let m = arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let product = eps
        .call_named("matmul", &[m.clone().into(), m.into()])
        .unwrap();
    let product: ArrayD<f64> = product.try_into().unwrap();
    assert_eq!(product, arr2(&[[7.0, 10.0], [15.0, 22.0]]).into_dyn());
    let scalar: ArrayD<f64> = Value::Float(2.0).try_into().unwrap();
    assert_eq!(scalar, ArrayD::from_elem(IxDyn(&[]), 2.0));
}

#[test]
fn wrong_conversions_are_errors() {
    assert!(f64::try_from(Value::string("x")).is_err());
    assert!(i64::try_from(Value::Float(1.5)).is_err());
    assert!(String::try_from(Value::Int(1)).is_err());
    assert!(Vec::<Value>::try_from(Value::Int(1)).is_err());
    assert!(bool::try_from(Value::Nil).is_err());
}

#[test]
fn call_and_call_named_pass_rust_values() {
    let mut eps = Engine::new();
    let f = eps.eval("(lambda (x y) (* x (sin y)))").unwrap();
    let v = eps.call(&f, &[2.0.into(), 0.5.into()]).unwrap();
    assert!((v.as_f64().unwrap() - 2.0 * 0.5f64.sin()).abs() < 1e-15);
    let err = eps.call(&f, &[1.0.into()]).unwrap_err();
    assert_eq!(err.kind(), EvalErrorKind::Arity);
    let err = eps.call_named("no-such-function", &[]).unwrap_err();
    assert!(err.message().contains("unbound symbol: no-such-function"));
    let err = eps.call(&Value::Int(3), &[]).unwrap_err();
    assert!(err.message().contains("not a procedure"));
}

#[test]
fn registered_functions_are_called_from_lisp_and_report_their_errors() {
    let mut eps = Engine::new();
    eps.register_fn("square", |args: &[Value]| {
        let x = args[0].as_f64()?;
        Ok((x * x).into())
    })
    .unwrap();
    assert_eq!(
        eps.eval("(map square '(1 2 3))").unwrap().to_string(),
        "(1.0 4.0 9.0)"
    );
    let err = eps.eval("(square \"a\")").unwrap_err();
    assert!(
        err.message().contains("expected a number"),
        "{}",
        err.message()
    );
    assert_eq!(err.location().map(|l| (l.line, l.col)), Some((1, 1)));
    // Inside grad it says why it cannot be differentiated, not a type
    // error about the traced value.
    for source in [
        "((grad (lambda (x) (square x))) 3.0)",
        "((jit (lambda (x) (square x))) 3.0)",
    ] {
        let err = eps.eval(source).unwrap_err();
        assert!(
            err.message().contains(
                "square is a Rust function (register_fn), which grad, jit and vmap cannot see into"
            ) && err.message().contains("custom-vjp"),
            "{source}: {}",
            err.message()
        );
    }
    assert!(eps.register_fn("has space", |_| Ok(Value::Nil)).is_err());
    assert!(eps.register_fn("(", |_| Ok(Value::Nil)).is_err());
    assert!(eps.register_fn("12", |_| Ok(Value::Nil)).is_err());
}

#[test]
fn a_panic_inside_a_function_is_reported_and_the_engine_keeps_working() {
    let mut eps = Engine::new();
    eps.register_fn("buggy", |args: &[Value]| Ok(args[5].clone()))
        .unwrap();
    let err = eps.eval("(+ 1 (buggy))").unwrap_err();
    assert_eq!(err.kind(), EvalErrorKind::Internal);
    assert!(
        err.message().contains("internal error"),
        "{}",
        err.message()
    );
    assert_eq!(eps.eval("(+ 1 2)").unwrap().as_i64().unwrap(), 3);
    eps.eval("(define (deep n) (if (= n 0) 0 (+ 1 (deep (- n 1)))))")
        .unwrap();
    assert_eq!(eps.eval("(deep 1000)").unwrap().as_i64().unwrap(), 1000);
}

#[test]
fn errors_format_as_file_line_col_with_a_caret() {
    let mut eps = Engine::new();
    let err = eps
        .eval_named("(define x 1)\n(+ x\n   (car 5))", "model.lisp")
        .unwrap_err();
    // Display has no "error:" of its own, so a host's "error: {err}" says
    // it once; the report the command line prints has it.
    assert_eq!(
        err.to_string(),
        "model.lisp:3:4: car: expected a list, got integer 5"
    );
    assert_eq!(
        format!("error: {err}"),
        "error: model.lisp:3:4: car: expected a list, got integer 5"
    );
    assert_eq!(
        epsilon::Error::msg("no location").to_string(),
        "no location"
    );
    let report = err.render();
    assert!(
        report.starts_with("model.lisp:3:4: error: car: expected a list, got integer 5\n"),
        "{report}"
    );
    assert!(report.contains("3 |    (car 5))"), "{report}");
    assert!(report.contains("  |    ^^^^^^^"), "{report}");
}

#[test]
fn exit_is_an_error_carrying_its_status() {
    let mut eps = Engine::new();
    let err = eps.eval("(try (exit 3) (catch (e) 0))").unwrap_err();
    assert_eq!(err.exit_code(), Some(3));
    assert_eq!(eps.eval("(+ 1 1)").unwrap().as_i64().unwrap(), 2);
}

#[test]
fn output_can_be_captured() {
    #[derive(Clone, Default)]
    struct Capture(Rc<RefCell<Vec<u8>>>);
    impl std::io::Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut eps = Engine::new();
    let capture = Capture::default();
    eps.set_output(Box::new(capture.clone()));
    eps.eval("(println \"x =\" 1.5) (display \"raw\") (write \"quoted\")")
        .unwrap();
    assert_eq!(
        String::from_utf8(capture.0.borrow().clone()).unwrap(),
        "x = 1.5\nraw\"quoted\""
    );
    // Diagnostic output (eprintln, time, warnings) has its own sink.
    let errors = Capture::default();
    eps.set_error_output(Box::new(errors.clone()));
    eps.eval("(eprintln \"careful\" 2) (time (+ 1 2))").unwrap();
    let text = String::from_utf8(errors.0.borrow().clone()).unwrap();
    assert!(text.starts_with("careful 2\ntime: "), "{text:?}");
    assert!(text.ends_with("(1:24)\n"), "{text:?}");
    assert!(
        !String::from_utf8(capture.0.borrow().clone())
            .unwrap()
            .contains("careful")
    );
}

#[test]
fn the_interrupt_flag_stops_a_running_loop() {
    let mut eps = Engine::new();
    let flag = eps.interrupt_handle();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let err = eps.eval("(define (spin) (spin)) (spin)").unwrap_err();
    setter.join().unwrap();
    assert_eq!(err.kind(), EvalErrorKind::Interrupted);
    let after = eps.eval("(let loop ((i 0)) (if (< i 100000) (loop (+ i 1)) i))");
    assert_eq!(
        after.unwrap().as_i64().unwrap(),
        100000,
        "the flag is cleared after the interrupt"
    );
}

/// The same flag stops a long `scan` (compiled loops check it every few
/// thousand steps): over numbers (a native loop), over a tensor, and in a
/// gradient's reverse. Without the check these would run for minutes.
#[test]
fn the_interrupt_flag_stops_a_running_scan() {
    let mut eps = Engine::new();
    for form in [
        "(scan (lambda (x i) (* 3.9 x (- 1.0 x))) 0.3 100000000000)",
        "(scan (lambda (u i) (* 0.5 u)) [1.0 2.0] 100000000000)",
        "((grad (lambda (a) (sum (scan (lambda (u i) (* a u)) [1.0 2.0] 1000000 :checkpoint 'revolve :snapshots 2)))) 0.5)",
        // A while-loop that never stops, run and differentiated.
        "(while-loop (lambda (u) (> (sum u) 0.0)) (lambda (u) (+ u 1.0)) [1.0 2.0])",
        "((grad (lambda (a) (sum (while-loop (lambda (u) (> (sum u) 0.0)) (lambda (u) (+ u a)) [1.0 2.0])))) 0.5)",
        // An endless loop under `jit` that runs only when an error message
        // shows its traced result (found by tests/grammar_fuzz.rs: it ran
        // outside any interruptible call).
        "((jit (lambda (x) (second (while-loop (lambda (s) (< (sum s) 10)) (lambda (s) 2) 2)))) 1.0)",
    ] {
        let flag = eps.interrupt_handle();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::Relaxed);
        });
        let err = eps.eval(form).unwrap_err();
        setter.join().unwrap();
        assert_eq!(err.kind(), EvalErrorKind::Interrupted, "{form}");
    }
    let after = eps.eval("(scan (lambda (x i) (+ x 1)) 0 10)");
    assert_eq!(
        after.unwrap().as_f64().unwrap(),
        10.0,
        "the engine carries on"
    );
}

#[test]
fn script_arguments_and_documentation() {
    let mut eps = Engine::new();
    eps.set_args(&["a".to_string(), "2".to_string()]);
    assert_eq!(eps.eval("*args*").unwrap().to_string(), "(\"a\" \"2\")");
    assert!(eps.doc("map").unwrap().starts_with("(map f lst...)"));
    assert!(eps.doc("if").unwrap().contains("special form"));
    assert!(eps.doc("dotimes").unwrap().contains("macro"));
    assert!(eps.global_names().contains(&"linspace"));
}

/// Lines for `read-line` from a list, keeping the prompts shown.
struct ScriptedInput {
    lines: Vec<Result<String, String>>,
    prompts: Rc<RefCell<Vec<String>>>,
}

impl epsilon::input::LineInput for ScriptedInput {
    fn read_line(&mut self, prompt: &str) -> Result<Option<String>, String> {
        self.prompts.borrow_mut().push(prompt.to_string());
        self.lines.pop().transpose()
    }
}

#[test]
fn read_line_reads_from_the_input_the_host_installs() {
    let mut eps = Engine::new();
    let prompts = Rc::new(RefCell::new(Vec::new()));
    eps.set_input(Box::new(ScriptedInput {
        lines: vec![
            Err("the front end does not take input".to_string()),
            Ok("Lovelace".to_string()),
            Ok("Ada".to_string()),
        ],
        prompts: Rc::clone(&prompts),
    }));
    let got = eps
        .eval(r#"(list (read-line "name? ") (read-line))"#)
        .unwrap();
    assert_eq!(got.to_string(), r#"("Ada" "Lovelace")"#);
    assert_eq!(*prompts.borrow(), ["name? ", ""]);
    let err = eps.eval("(read-line 42)").unwrap_err();
    assert!(
        err.message().contains("the front end does not take input"),
        "{}",
        err.message()
    );
    assert_eq!(prompts.borrow().last().map(String::as_str), Some("42"));
    let end = eps.eval("(read-line)").unwrap();
    assert_eq!(end.to_string(), "#f", "the end of input");
}

//! Property: every built-in, called with any arguments (wrong types, extreme
//! integers, NaN, empty and oddly shaped tensors, procedures, keywords), gives
//! a value or an ordinary error. A panic inside a built-in would surface as an
//! `Internal` error (the engine catches it); none may occur.

use epsilon::lisp::builtins::TABLES;
use epsilon::{Engine, Error, EvalErrorKind, Value};
use proptest::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long one case may run before it is interrupted, as Ctrl-C would:
/// arguments such as `(scan + 0 9223372036854775807)` or a `while-loop`
/// whose condition never fails are legitimate endless work.
const DEADLINE: Duration = Duration::from_secs(2);

/// Runs `work` on `engine`, interrupting it past `DEADLINE` (an
/// interrupted case ends in an ordinary `Interrupted` error).
fn bounded<T>(
    engine: &mut Engine,
    work: impl FnOnce(&mut Engine) -> Result<T, Error>,
) -> Result<T, Error> {
    let flag = engine.interrupt_handle();
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if start.elapsed() > DEADLINE {
                    flag.store(true, Ordering::Relaxed);
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let result = work(engine);
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    // An interrupt that arrived after the work ended is not left pending.
    engine.interrupt_handle().store(false, Ordering::Relaxed);
    result
}

/// Built-ins left out: they write files named by their arguments, or
/// wait for a line of standard input.
const SKIPPED: &[&str] = &[
    "write-csv",
    "save-npy",
    "save-dot",
    "write-file",
    "append-file",
    "read-line",
];

/// Source text of the argument pool; each evaluates to one value.
const POOL: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "3",
    "9223372036854775807",
    "-9223372036854775808",
    "0.5",
    "-0.0",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "#t",
    "#f",
    "()",
    "\"x\"",
    "\"\"",
    "\"{} {:.2}\"",
    "'a",
    ":axis",
    ":keepdims",
    ":step",
    "'(1 2 3)",
    "'((1 2) (3 4))",
    "'(1 . 2)",
    "'((a 1) (b 2))",
    "(tensor 5)",
    "(zeros 0)",
    "[1 2 3]",
    "[[1 2 3] [4 5 6]]",
    "[[1] [2] [3]]",
    "[[1 2 3]]",
    "(zeros 2 0)",
    "(reshape (arange 8) '(2 2 2))",
    "[nan 1 -inf]",
    "+",
    "car",
    "(lambda (x) x)",
    "(lambda (a b) (< a b))",
    "(lambda () (error \"boom\"))",
];

fn builtin_names() -> Vec<&'static str> {
    TABLES
        .iter()
        .flat_map(|table| table.iter())
        .map(|builtin| builtin.name)
        .filter(|name| !SKIPPED.contains(name))
        .collect()
}

struct Sink;

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn pool_values(engine: &mut Engine) -> Vec<Value> {
    POOL.iter()
        .map(|text| {
            engine
                .eval(text)
                .unwrap_or_else(|e| panic!("pool entry {text}: {e}"))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn no_builtin_panics_on_any_arguments(
        name_index in any::<prop::sample::Index>(),
        arg_indices in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
    ) {
        let names = builtin_names();
        let name = names[name_index.index(names.len())];
        let mut engine = Engine::new();
        engine.set_output(Box::new(Sink));
        let pool = pool_values(&mut engine);
        let args: Vec<Value> = arg_indices.iter().map(|i| pool[i.index(pool.len())].clone()).collect();
        let shown: Vec<String> = arg_indices.iter().map(|i| POOL[i.index(POOL.len())].to_string()).collect();
        if let Err(error) = bounded(&mut engine, |engine| engine.call_named(name, &args)) {
            prop_assert!(
                error.kind() != EvalErrorKind::Internal,
                "({} {}) panicked: {}", name, shown.join(" "), error.message()
            );
        }
    }
}

#[test]
fn every_builtin_is_exercised_with_every_arity_up_to_three_on_numbers() {
    let mut engine = Engine::new();
    engine.set_output(Box::new(Sink));
    for name in builtin_names() {
        for args in [
            vec![],
            vec![Value::Int(2)],
            vec![Value::Int(2), Value::Float(0.5)],
            vec![Value::Int(3); 3],
        ] {
            if let Err(error) = bounded(&mut engine, |engine| engine.call_named(name, &args)) {
                assert_ne!(
                    error.kind(),
                    EvalErrorKind::Internal,
                    "{name} {args:?}: {}",
                    error.message()
                );
            }
        }
    }
}

/// Values a traced argument takes in the traced fuzz (numbers and tensors
/// of awkward shapes).
const TRACED_POOL: &[&str] = &[
    "0.5",
    "-0.0",
    "2",
    "[1.0 2.0 3.0]",
    "[[1.0 2.0 3.0] [4.0 5.0 6.0]]",
    "[[1.0] [2.0] [3.0]]",
    "(zeros 2 0)",
    "(reshape (arange 8.0) '(2 2 2))",
    "[nan 1.0 -inf]",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// The same property inside `jit` and `grad`: any built-in called with
    /// traced arguments (mixed with anything from the pool) records an
    /// operation, refuses with an ordinary error, or runs on values; it
    /// never panics, and compiling and running the tape never panics.
    #[test]
    fn no_builtin_panics_on_traced_arguments(
        name_index in any::<prop::sample::Index>(),
        arg_choices in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>()), 0..4),
        traced_index in any::<prop::sample::Index>(),
        differentiate in any::<bool>(),
    ) {
        let names = builtin_names();
        let name = names[name_index.index(names.len())];
        let args: Vec<String> = arg_choices
            .iter()
            .map(|(traced, i)| if *traced { "x".to_string() } else { POOL[i.index(POOL.len())].to_string() })
            .collect();
        let call = format!("({name} {})", args.join(" "));
        let point = TRACED_POOL[traced_index.index(TRACED_POOL.len())];
        let source = if differentiate {
            format!("((grad (lambda (x) (sum {call}))) {point})")
        } else {
            format!("((jit (lambda (x) {call})) {point})")
        };
        let mut engine = Engine::new();
        engine.set_output(Box::new(Sink));
        if let Err(error) = bounded(&mut engine, |engine| engine.eval(&source)) {
            prop_assert!(
                error.kind() != EvalErrorKind::Internal,
                "{} panicked: {}", source, error.message()
            );
        }
    }
}

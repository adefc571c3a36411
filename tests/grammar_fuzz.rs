//! Grammar fuzz (issue 23, item 5): whole programs generated from the
//! builtin tables and the grammar, well-formed and malformed, run through
//! `Engine::eval`; none may crash. A crash is a panic (the engine turns it
//! into an `Internal` error, reported here with the panic's location), or
//! an abort or stack overflow, which kills this test process; before each
//! case its program is appended to `target/tmp/grammar_fuzz_seed<S>.lisp`
//! (the programs the current engine has run), so a killed run leaves its
//! reproducer behind. A case still running after `HANG_LIMIT` (it ignored
//! the interrupt sent at `DEADLINE`) stops the run as a hang.
//!
//! A few thousand cases run by default; for the long run (docs/fuzzing.md):
//!
//! ```text
//! EPSILON_FUZZ_CASES=1000000 EPSILON_FUZZ_SEED=1 cargo test --release \
//!     --test grammar_fuzz -- --nocapture
//! ```
//!
//! `EPSILON_FUZZ_FIRST=i` starts at case i (to rerun one batch of a long
//! run, or to split one over several processes; its programs are then
//! logged in `grammar_fuzz_seed<S>_from<i>.lisp`) and
//! `EPSILON_FUZZ_VERBOSE=1` prints each program before running it.
//!
//! What is generated lives in `grammar_fuzz/`: `generator` (well-formed
//! programs), `malformed` (mutations, truncations, wrong shapes, deep
//! nesting), `pools` (the built-ins used and skipped, literal pools).

#[path = "grammar_fuzz/generator/mod.rs"]
mod generator;
#[path = "grammar_fuzz/malformed.rs"]
mod malformed;
#[path = "grammar_fuzz/pools.rs"]
mod pools;
#[path = "grammar_fuzz/rng.rs"]
mod rng;

use epsilon::{Engine, EvalErrorKind};
use generator::Gen;
use pools::Catalog;
use rng::Rng;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cases of the default (CI) run.
const DEFAULT_CASES: u64 = 5_000;

/// The seed of the default run: fixed, so CI runs the same programs.
const DEFAULT_SEED: u64 = 23_05;

/// Cases run on one engine before a fresh one replaces it, so that what a
/// case leaves (globals, a changed setting or rule) reaches few others.
const BATCH: u64 = 20;

/// How long one case may run before it is interrupted, as Ctrl-C would.
const DEADLINE: Duration = Duration::from_secs(2);

/// How long an interrupted case may go on before the run stops as a hang.
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// A long run reports its progress every this many cases.
const PROGRESS: u64 = 10_000;

/// Where the programs of the current batch are written before they run
/// (one file per seed, so a long run and the default run do not mix, and
/// per first case, so parts of one long run can run side by side).
fn batch_log(seed: u64, first: u64) -> String {
    let part = match first {
        0 => String::new(),
        first => format!("_from{first}"),
    };
    format!(
        "{}/grammar_fuzz_seed{seed}{part}.lisp",
        env!("CARGO_TARGET_TMPDIR")
    )
}

/// Output that is thrown away.
struct Sink;

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The run's settings, from the environment.
#[derive(Clone, Copy)]
struct Config {
    seed: u64,
    first: u64,
    cases: u64,
    verbose: bool,
}

impl Config {
    fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name).ok().map(|text| {
                text.trim()
                    .parse::<u64>()
                    .unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}"))
            })
        };
        Config {
            seed: number("EPSILON_FUZZ_SEED").unwrap_or(DEFAULT_SEED),
            first: number("EPSILON_FUZZ_FIRST").unwrap_or(0),
            cases: number("EPSILON_FUZZ_CASES").unwrap_or(DEFAULT_CASES),
            verbose: std::env::var_os("EPSILON_FUZZ_VERBOSE").is_some(),
        }
    }
}

/// How a case's program is made.
#[derive(Clone, Copy, Debug)]
enum Kind {
    WellFormed,
    Mutated,
    Truncated,
    Unbalanced,
    WrongShape,
    DeepSource,
    DeepData,
}

/// The program of the case seeded with `seed`.
fn generate(catalog: &Catalog, seed: u64) -> (Kind, String) {
    let mut maker = Gen::new(seed, catalog);
    let kind = match maker.rng.below(100) {
        0..=69 => Kind::WellFormed,
        70..=79 => Kind::Mutated,
        80..=83 => Kind::Truncated,
        84..=87 => Kind::Unbalanced,
        88..=95 => Kind::WrongShape,
        96..=97 => Kind::DeepSource,
        _ => Kind::DeepData,
    };
    let program = match kind {
        Kind::WellFormed => maker.program(),
        Kind::Mutated => {
            let text = maker.program();
            malformed::mutate(&mut maker.rng, &text)
        }
        Kind::Truncated => {
            let text = maker.program();
            malformed::truncate(&mut maker.rng, &text)
        }
        Kind::Unbalanced => {
            let text = maker.program();
            malformed::unbalance(&mut maker.rng, &text)
        }
        Kind::WrongShape => malformed::wrong_shape(&mut maker),
        Kind::DeepSource => {
            let depth = *maker.rng.pick(&[500, 2_000, 5_000, 9_999, 12_000]);
            malformed::deep_source(&mut maker.rng, depth)
        }
        Kind::DeepData => malformed::deep_data(&mut maker.rng),
    };
    (kind, program)
}

/// The case running now, as the watchdog sees it.
struct Running {
    interrupt: Arc<AtomicBool>,
    started: Instant,
    interrupted: bool,
    index: u64,
    program: String,
}

/// A thread that interrupts a case past `DEADLINE` and stops the process
/// when one runs past `HANG_LIMIT`.
struct Watchdog {
    running: Arc<Mutex<Option<Running>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// The watchdog of a run whose programs are logged in `log`.
    fn start(log: String) -> Self {
        let running: Arc<Mutex<Option<Running>>> = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (running, stop) = (Arc::clone(&running), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                    if let Some(case) = running.lock().unwrap().as_mut() {
                        Self::check(case, &log);
                    }
                }
            })
        };
        Watchdog {
            running,
            stop,
            thread: Some(thread),
        }
    }

    fn check(case: &mut Running, log: &str) {
        let elapsed = case.started.elapsed();
        if elapsed > DEADLINE && !case.interrupted {
            case.interrupt.store(true, Ordering::Relaxed);
            case.interrupted = true;
        }
        if elapsed > HANG_LIMIT {
            eprintln!(
                "grammar fuzz: case {} still running {} s after the interrupt (a hang); its program (also in {}):\n{}",
                case.index,
                (HANG_LIMIT - DEADLINE).as_secs(),
                log,
                case.program
            );
            std::process::exit(101);
        }
    }

    /// Evaluates `program` on `engine` under the watchdog.
    fn eval(
        &self,
        engine: &mut Engine,
        index: u64,
        program: &str,
    ) -> Result<epsilon::Value, epsilon::Error> {
        let interrupt = engine.interrupt_handle();
        *self.running.lock().unwrap() = Some(Running {
            interrupt: Arc::clone(&interrupt),
            started: Instant::now(),
            interrupted: false,
            index,
            program: program.to_string(),
        });
        // A panic the engine turned into another error (the stack refused
        // to grow) must not be blamed on a later case.
        LAST_PANIC.take();
        IN_CASE.set(true);
        let result = engine.eval(program);
        IN_CASE.set(false);
        *self.running.lock().unwrap() = None;
        // An interrupt that arrived after the work ended is not left pending.
        interrupt.store(false, Ordering::Relaxed);
        result
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

thread_local! {
    /// The location and message of the last panic of a generated program
    /// on this thread, recorded by the panic hook. Per thread: the tests
    /// run side by side, and one must not take or clear another's panic.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Whether this thread is running a generated program.
    static IN_CASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Records the panics of generated programs instead of printing them (the
/// report shows them); other panics (a failed assertion) print as usual.
fn record_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CASE.get() {
                return default(info);
            }
            let location = info
                .location()
                .map_or_else(|| "unknown place".to_string(), |l| l.to_string());
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            LAST_PANIC.set(Some(format!("{location}: {message}")));
        }));
    });
}

fn take_last_panic() -> String {
    LAST_PANIC
        .take()
        .unwrap_or_else(|| "no panic recorded (an Internal error raised without one)".to_string())
}

/// The programs the current engine has run, in `batch_log`'s file.
struct BatchLog {
    path: String,
    file: Option<File>,
}

impl BatchLog {
    /// Starts the log afresh (for a new engine).
    fn restart(&mut self) {
        self.file = File::create(&self.path).ok();
    }

    fn record(&mut self, text: &str) {
        if let Some(file) = self.file.as_mut() {
            let _ = file.write_all(text.as_bytes());
        }
    }
}

/// A crash: the case, its program, where it panicked.
struct Crash {
    index: u64,
    seed: u64,
    kind: Kind,
    program: String,
    panic: String,
    /// Whether it crashes again on a fresh engine.
    alone: bool,
    /// The programs run on the engine before it, when not alone.
    before: Vec<String>,
}

/// What a run found.
#[derive(Default)]
struct Report {
    cases: u64,
    ok: u64,
    errors: BTreeMap<String, u64>,
    crashes: Vec<Crash>,
    seconds: f64,
}

fn fresh_engine() -> Engine {
    let mut engine = Engine::new();
    engine.set_output(Box::new(Sink));
    engine.set_error_output(Box::new(Sink));
    engine
}

/// The engine of the current batch, and what its cases ran.
struct Batch {
    engine: Option<Engine>,
    /// The programs it has run.
    history: Vec<String>,
    log: BatchLog,
}

impl Batch {
    /// Makes ready the engine for case `index`: a fresh one at each
    /// batch's start, or after a crash.
    fn prepare(&mut self, index: u64) {
        if index.is_multiple_of(BATCH) || self.engine.is_none() {
            self.retire();
            self.log.restart();
            self.history.clear();
            self.engine = Some(fresh_engine());
        }
    }

    /// Drops the engine (logged: a drop that aborts is the batch's crash).
    fn retire(&mut self) {
        if let Some(engine) = self.engine.take() {
            self.log.record(";; the engine is dropped\n");
            drop(engine);
        }
    }
}

/// Runs the cases of `config`, each on its batch's engine.
fn fuzz(config: Config) -> Report {
    record_panics();
    let catalog = Catalog::new();
    let watchdog = Watchdog::start(batch_log(config.seed, config.first));
    let mut batch = Batch {
        engine: None,
        history: Vec::new(),
        log: BatchLog {
            path: batch_log(config.seed, config.first),
            file: None,
        },
    };
    let mut report = Report::default();
    let start = Instant::now();
    for index in config.first..config.first + config.cases {
        run_case(&config, &catalog, &watchdog, &mut batch, &mut report, index);
        if report.cases % PROGRESS == 0 {
            eprintln!(
                "grammar fuzz: {} cases in {:.0} s, {} crashes",
                report.cases,
                start.elapsed().as_secs_f64(),
                report.crashes.len()
            );
        }
    }
    batch.retire();
    report.seconds = start.elapsed().as_secs_f64();
    report
}

/// Generates case `index`, runs it and records what it gave.
fn run_case(
    config: &Config,
    catalog: &Catalog,
    watchdog: &Watchdog,
    batch: &mut Batch,
    report: &mut Report,
    index: u64,
) {
    let seed = Rng::case_seed(config.seed, index);
    let (kind, program) = generate(catalog, seed);
    batch.prepare(index);
    batch.log.record(&format!(
        ";; case {index} ({kind:?}, seed {seed:#x})\n{program}\n"
    ));
    let engine = batch.engine.as_mut().expect("prepared for the case");
    if config.verbose {
        eprintln!(";; case {index} ({kind:?})\n{program}");
    }
    let result = watchdog.eval(engine, index, &program);
    report.cases += 1;
    match result {
        Ok(_) => report.ok += 1,
        Err(error) if error.kind() == EvalErrorKind::Internal => {
            let panic = take_last_panic();
            let alone = crashes_alone(watchdog, index, &program);
            report.crashes.push(Crash {
                index,
                seed,
                kind,
                program: program.clone(),
                panic: format!("{panic}\n  reported as: {}", error.message()),
                alone,
                before: if alone {
                    Vec::new()
                } else {
                    batch.history.clone()
                },
            });
            // Shown now too: a long run may end (an abort) before its report.
            let crash = report.crashes.last().expect("just pushed");
            eprintln!("grammar fuzz: crash\n{}", describe(config, crash));
            // The engine that panicked is not trusted further.
            batch.retire();
        }
        Err(error) => {
            *report
                .errors
                .entry(format!("{:?}", error.kind()))
                .or_default() += 1;
        }
    }
    batch.history.push(program);
}

/// Whether `program` crashes on a fresh engine too.
fn crashes_alone(watchdog: &Watchdog, index: u64, program: &str) -> bool {
    let mut engine = fresh_engine();
    let again = watchdog.eval(&mut engine, index, program);
    take_last_panic();
    matches!(again, Err(e) if e.kind() == EvalErrorKind::Internal)
}

fn summary(config: &Config, report: &Report) -> String {
    let errors: Vec<String> = report
        .errors
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    format!(
        "grammar fuzz: seed {} cases {}..{}: {} in {:.1} s ({:.0} cases/s): {} values, errors: {}; {} crashes",
        config.seed,
        config.first,
        config.first + config.cases,
        report.cases,
        report.seconds,
        report.cases as f64 / report.seconds.max(1e-9),
        report.ok,
        errors.join(", "),
        report.crashes.len()
    )
}

fn describe(config: &Config, crash: &Crash) -> String {
    let batch = crash.index - crash.index % BATCH;
    let mut text = format!(
        "case {} ({:?}, case seed {:#x}) panicked at {}\n  rerun its batch: EPSILON_FUZZ_SEED={} EPSILON_FUZZ_FIRST={batch} EPSILON_FUZZ_CASES={}\n  program:\n{}\n",
        crash.index,
        crash.kind,
        crash.seed,
        crash.panic,
        config.seed,
        crash.index - batch + 1,
        crash.program
    );
    if !crash.alone {
        text += "  (it does not crash on a fresh engine; the batch's earlier programs were:)\n";
        for earlier in &crash.before {
            text += &format!("{earlier}\n");
        }
    }
    text
}

#[test]
fn generated_programs_never_crash() {
    let config = Config::from_env();
    // On a worker of the compute pool, as `epsilon run` evaluates: its
    // stack is a main thread's, and kernels start where they are called.
    let report = epsilon::backends::cpu::on_pool(move || fuzz(config));
    eprintln!("{}", summary(&config, &report));
    let crashes: Vec<String> = report
        .crashes
        .iter()
        .map(|c| describe(&config, c))
        .collect();
    assert!(
        crashes.is_empty(),
        "{} of {} generated programs crashed:\n\n{}",
        crashes.len(),
        report.cases,
        crashes.join("\n")
    );
}

/// The harness sees a panic as a crash, with the place it happened.
#[test]
fn a_panic_is_caught_as_a_crash_with_its_location() {
    record_panics();
    let watchdog = Watchdog::start(String::new());
    let mut engine = fresh_engine();
    engine
        .register_fn("explode", |_| panic!("on purpose"))
        .expect("a valid name");
    let result = watchdog.eval(&mut engine, 0, "(+ 1 (explode))");
    let error = result.expect_err("a panic is an error");
    assert_eq!(error.kind(), EvalErrorKind::Internal);
    let panic = take_last_panic();
    assert!(
        panic.contains("grammar_fuzz.rs") && panic.contains("on purpose"),
        "{panic}"
    );
}

//! The interpreter: global environment, source map, limits, random state,
//! and the entry points that read, analyse and evaluate source text.

use super::analyze::Analyzer;
use super::builtins;
use super::convert::sexp_to_value;
use super::error::{EvalError, EvalErrorKind, EvalResult};
use super::source::SourceMap;
use super::symbol::{Symbol, sym};
use super::symbolic::SymbolicState;
use super::value::Value;
use crate::display::{Rich, RichDisplay};
use crate::reader::{self, Span};
use rand::rngs::Xoshiro256PlusPlus;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The default limit on nested (non-tail) evaluation depth.
pub const DEFAULT_MAX_DEPTH: usize = 100_000;

/// The standard library, written in Epsilon and loaded in this order: the
/// prelude (macros, options, trees), then numerics (linear algebra helpers,
/// neural-network layers, losses, optimizers, data helpers, the training loop).
pub const STDLIB: &[(&str, &str)] = &[
    (
        "stdlib/prelude.lisp",
        include_str!("../../stdlib/prelude.lisp"),
    ),
    (
        "stdlib/arrays.lisp",
        include_str!("../../stdlib/arrays.lisp"),
    ),
    ("stdlib/nn.lisp", include_str!("../../stdlib/nn.lisp")),
    (
        "stdlib/losses.lisp",
        include_str!("../../stdlib/losses.lisp"),
    ),
    ("stdlib/optim.lisp", include_str!("../../stdlib/optim.lisp")),
    ("stdlib/data.lisp", include_str!("../../stdlib/data.lisp")),
    ("stdlib/train.lisp", include_str!("../../stdlib/train.lisp")),
    (
        "stdlib/solvers.lisp",
        include_str!("../../stdlib/solvers.lisp"),
    ),
    ("stdlib/ode.lisp", include_str!("../../stdlib/ode.lisp")),
    (
        "stdlib/taylor.lisp",
        include_str!("../../stdlib/taylor.lisp"),
    ),
];

/// An Epsilon interpreter: one global environment and its state.
pub struct Interp {
    /// Global bindings, indexed by symbol; `Undefined` marks unbound.
    pub(super) globals: Vec<Value>,
    /// Every text read so far.
    pub sources: SourceMap,
    /// Current nesting of non-tail evaluation.
    pub(crate) depth: usize,
    /// Primitive calls now running inline inside one another (see
    /// `eval::INLINE_NESTING`).
    pub(crate) inline_nesting: u32,
    /// Call frames kept for reuse by closure calls.
    pub(crate) frame_pool: crate::lisp::env::FramePool,
    /// The limit on `depth`.
    pub max_depth: usize,
    /// Set (e.g. by a Ctrl-C handler) to stop the running evaluation.
    interrupt: Arc<AtomicBool>,
    /// The random generator behind `rand`, `randn` and `seed!`.
    pub(crate) rng: Xoshiro256PlusPlus,
    /// When the interpreter started (the origin of `clock`).
    pub(crate) started: Instant,
    /// The span of the built-in call being run (for `load` and errors).
    pub(crate) call_span: Span,
    /// Where the innermost closure call being entered was written: where
    /// a recursion that could not grow the stack is reported.
    pub(crate) closure_span: Span,
    /// Where `display`, `print` and `println` write.
    output: Box<dyn Write>,
    /// Settings and user rules of the symbolic simplifier.
    pub symbolic: SymbolicState,
    /// The active trace and the cache of compiled tapes.
    pub numeric: crate::lisp::autodiff::NumericState,
    /// Live progress bars (`progress`), by handle.
    pub(crate) progress: builtins::progress::ProgressBars,
    /// Where rich items (charts, progress) go, when a front end shows them.
    display: Option<Box<dyn RichDisplay>>,
    /// Where warnings, `eprintln` and `time` write; standard error if unset.
    error_output: Option<Box<dyn Write>>,
    /// Where `read-line` reads; standard input if unset.
    input: Option<Box<dyn crate::input::LineInput>>,
}

impl Interp {
    /// A fresh interpreter with the built-ins and the prelude loaded.
    pub fn new() -> EvalResult<Self> {
        let mut interp = Interp {
            globals: Vec::new(),
            sources: SourceMap::default(),
            depth: 0,
            inline_nesting: 0,
            frame_pool: Default::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            interrupt: Arc::new(AtomicBool::new(false)),
            rng: rand::make_rng(),
            started: Instant::now(),
            call_span: Span::NONE,
            closure_span: Span::NONE,
            output: Box::new(std::io::stdout()),
            symbolic: SymbolicState::default(),
            numeric: Default::default(),
            progress: Default::default(),
            display: None,
            error_output: None,
            input: None,
        };
        builtins::install(&mut interp);
        interp.set_global(sym::ARGS, Value::Nil);
        for (name, source) in STDLIB {
            interp.eval_source(source, &format!("<{name}>"), None)?;
        }
        Ok(interp)
    }

    /// The value bound to a global, if any.
    pub fn global(&self, name: Symbol) -> Option<Value> {
        match self.globals.get(name.index()) {
            None | Some(Value::Undefined) => None,
            Some(value) => Some(value.clone()),
        }
    }

    /// The value bound to a global, borrowed.
    pub(crate) fn global_ref(&self, name: Symbol) -> Option<&Value> {
        match self.globals.get(name.index()) {
            None | Some(Value::Undefined) => None,
            Some(value) => Some(value),
        }
    }

    /// Binds a global.
    pub fn set_global(&mut self, name: Symbol, value: Value) {
        self.numeric.world += 1;
        let index = name.index();
        if index >= self.globals.len() {
            self.globals.resize(index + 1, Value::Undefined);
        }
        self.globals[index] = value;
    }

    /// The names of all bound globals (for completion and listings).
    pub fn global_names(&self) -> Vec<&'static str> {
        self.globals
            .iter()
            .enumerate()
            .filter(|(_, value)| !matches!(value, Value::Undefined))
            .map(|(index, _)| Symbol(index as u32).name())
            .collect()
    }

    /// The flag that interrupts evaluation when set.
    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.interrupt)
    }

    /// An error when the user interrupted, or when the program's lists
    /// are over the memory limit (see [`super::memory`]). Every closure
    /// call and loop pass checks.
    pub(crate) fn check_interrupt(&self) -> EvalResult<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            self.interrupt.store(false, Ordering::Relaxed);
            return Err(EvalError::new(EvalErrorKind::Interrupted, "interrupted"));
        }
        super::memory::check()
    }

    /// Reads `text` (registered under `name`) and evaluates each form in
    /// turn, returning the last value (`Void` for empty text).
    pub fn eval_source(
        &mut self,
        text: &str,
        name: &str,
        path: Option<PathBuf>,
    ) -> EvalResult<Value> {
        let file = self.sources.add(name, path, text);
        let data = reader::read_all(text, file)?;
        let mut last = Value::Void;
        // Each datum is converted, analysed and dropped before it runs, so a
        // huge input is held in one form at a time, not three.
        for datum in data {
            let span = datum.span;
            let form = sexp_to_value(&datum);
            drop(datum);
            last = self.eval_top(form, span)?;
        }
        Ok(last)
    }

    /// Evaluates one top-level form. The forms of a top-level `begin` are
    /// analysed one at a time, so a macro defined early in it can be used later.
    pub fn eval_top(&mut self, form: Value, span: Span) -> EvalResult<Value> {
        if let Value::Pair(pair) = &form
            && matches!(pair.car, Value::Symbol(s) if s == sym::BEGIN)
            && pair.cdr.is_list()
        {
            let mut last = Value::Nil;
            for (inner, inner_span) in pair.cdr.iter() {
                last = self.eval_top(inner.clone(), inner_span.or(span))?;
            }
            return Ok(last);
        }
        let node = Analyzer::new(self).analyze_top(&form, span)?;
        drop(form);
        // Loops run anywhere under the form (also those a printout or a
        // comparison of a traced value runs) stop when interrupted; what
        // they computed then is meaningless, so the form's result is the
        // interruption.
        let result = crate::backends::cpu::cancel::with_cancel(self.interrupt_flag(), || {
            self.eval(&node, &None)
        });
        self.check_interrupt().map_err(|e| e.at(span))?;
        result
    }

    /// Loads and evaluates a file. A relative path is resolved against the
    /// directory of the file containing the current call, if there is one.
    pub fn load_file(&mut self, path: &Path) -> EvalResult<Value> {
        let resolved = self.resolve_path(path);
        let text = std::fs::read_to_string(&resolved)
            .map_err(|err| EvalError::io(format!("cannot read {}: {err}", resolved.display())))?;
        let name = resolved.display().to_string();
        self.eval_source(&text, &name, Some(resolved))
    }

    fn resolve_path(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return path.to_path_buf();
        }
        match self.sources.directory_of(self.call_span) {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        }
    }

    /// Sends the output of `display`, `print` and `println` to `output`.
    pub fn set_output(&mut self, output: Box<dyn Write>) {
        self.output = output;
    }

    /// Sends warnings and `eprintln` output to `output` instead of
    /// standard error.
    pub fn set_error_output(&mut self, output: Box<dyn Write>) {
        self.error_output = Some(output);
    }

    /// Writes one line of diagnostic output (a warning, `eprintln`, `time`),
    /// with progress bars on the terminal lifted out of the way.
    pub fn write_error_line(&mut self, line: &str) {
        self.flush_output();
        match &mut self.error_output {
            Some(output) => {
                let _ = writeln!(output, "{line}").and_then(|()| output.flush());
            }
            None => self.progress.suspend(|| eprintln!("{line}")),
        }
    }

    /// Makes `read-line` read from `input` instead of standard input.
    pub fn set_input(&mut self, input: Box<dyn crate::input::LineInput>) {
        self.input = Some(input);
    }

    /// One line for `read-line`, after `prompt`: from the front end's
    /// input when one is set (it shows the prompt), else from standard
    /// input with the prompt written as output. `None` at the end of
    /// input; an interrupt while waiting is an `Interrupted` error.
    pub fn read_line(&mut self, prompt: &str) -> EvalResult<Option<String>> {
        let line = match &mut self.input {
            Some(input) => {
                let _ = self.output.flush();
                input.read_line(prompt)
            }
            None => {
                self.write_output(prompt)?;
                crate::input::read_stdin_line()
            }
        };
        self.check_interrupt()?;
        line.map_err(EvalError::io)
    }

    /// Sends rich items (charts, progress bars) to `display`.
    pub fn set_display(&mut self, display: Box<dyn RichDisplay>) {
        self.display = Some(display);
    }

    /// True when a front end shows rich items.
    pub fn shows_rich(&self) -> bool {
        self.display.is_some()
    }

    /// Offers `item` to the front end; false when there is none. Program
    /// output written so far is flushed first, so the two stay in order.
    pub fn show(&mut self, item: Rich) -> bool {
        let _ = self.output.flush();
        match &mut self.display {
            Some(display) => {
                display.show(item);
                true
            }
            None => false,
        }
    }

    /// Writes program output; text without a final newline is flushed at
    /// once so prompts appear. Progress bars on the terminal are lifted out
    /// of the way while it writes. An output whose reader went away (a
    /// closed pipe) is an [`EvalErrorKind::OutputClosed`] error, which ends
    /// the program rather than being reported.
    pub fn write_output(&mut self, text: &str) -> EvalResult<()> {
        let output = &mut self.output;
        let written = self.progress.suspend(|| {
            output.write_all(text.as_bytes()).and_then(|()| {
                if text.ends_with('\n') {
                    Ok(())
                } else {
                    output.flush()
                }
            })
        });
        written.map_err(|err| match err.kind() {
            std::io::ErrorKind::BrokenPipe => EvalError::new(
                EvalErrorKind::OutputClosed,
                "the program's output was closed by its reader",
            ),
            _ => EvalError::io(format!("cannot write output: {err}")),
        })
    }

    /// Prints a warning on standard error, located at the current call
    /// when it comes from source: `FILE:LINE:COL: warning: message`.
    pub fn warn(&mut self, message: &str) {
        let span = self.call_span;
        let line = match self.sources.name(span) {
            Some(file) if span.is_known() => {
                format!("{file}:{}:{}: warning: {message}", span.line, span.col)
            }
            _ => format!("warning: {message}"),
        };
        self.write_error_line(&line);
    }

    /// Flushes program output.
    pub fn flush_output(&mut self) {
        let _ = self.output.flush();
    }

    /// Resets per-evaluation state after an aborted evaluation (a caught panic).
    pub fn reset_after_abort(&mut self) {
        self.depth = 0;
        self.inline_nesting = 0;
        self.call_span = Span::NONE;
        self.closure_span = Span::NONE;
        self.interrupt.store(false, Ordering::Relaxed);
    }
}

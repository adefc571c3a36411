//! The interactive front end: a rustyline editor over an [`Engine`].
//!
//! Input continues over several lines until Epsilon's reader says the text
//! is complete; lines starting with `:` are commands; every error is shown
//! with its source line and a caret, and the session carries on. Standard
//! output closed by its reader ends the session quietly (status 0). History
//! persists in the user's state directory (or `$EPSILON_HISTORY`). This
//! module uses only the public API of the crate.

mod brackets;
mod commands;
mod helper;

pub use brackets::{BracketMatch, match_at_cursor};
pub use helper::{EpsilonHelper, needs_more_input};

use crate::{Engine, Error, EvalErrorKind, Notation, Value};
use commands::{Outcome, run_command};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// How many entries the history file keeps.
pub const HISTORY_SIZE: usize = 50_000;

/// The prompt.
const PROMPT: &str = "ε> ";

/// Where history is kept: `$EPSILON_HISTORY`, else the user's state
/// directory (`~/.local/state/epsilon/history`), else `~/.epsilon_history`.
pub fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EPSILON_HISTORY") {
        return Some(PathBuf::from(path));
    }
    if let Some(state) = dirs::state_dir() {
        return Some(state.join("epsilon").join("history"));
    }
    dirs::home_dir().map(|home| home.join(".epsilon_history"))
}

/// Writes a line of the session's output. Standard output closed by its
/// reader (`epsilon | head`) ends the session quietly with status 0, as
/// for a Unix filter: `Quit(0)`.
fn print_line(text: &str) -> Outcome {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Quit(0),
        // Another failure (a full disk behind a redirection) is reported
        // and the session goes on.
        Err(err) => {
            eprintln!("error: cannot write output: {err}");
            Outcome::Continue
        }
        Ok(()) => Outcome::Continue,
    }
}

/// Prints a value (unless it is `Void`; a symbolic result in the session's
/// notation) or an error report.
fn show_result(engine: &Engine, notation: Notation, result: Result<Value, Error>) -> Outcome {
    match result {
        Ok(Value::Void) => Outcome::Continue,
        Ok(value) => match engine.show_formula(&value, notation) {
            Some(text) => print_line(&text),
            None => print_line(&value.to_string()),
        },
        Err(error) if error.kind() == EvalErrorKind::OutputClosed => Outcome::Quit(0),
        Err(error) => match error.exit_code() {
            Some(code) => Outcome::Quit(code),
            None => {
                eprintln!("{}", error.render());
                Outcome::Continue
            }
        },
    }
}

fn completion_names(engine: &Engine) -> Vec<String> {
    engine
        .global_names()
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Runs the REPL until `:quit`, Ctrl-D or `(exit n)`; returns the exit status.
pub fn run(engine: &mut Engine) -> i32 {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)
        .map(|builder| {
            // Tab completes the common prefix, a second Tab lists the
            // candidates.
            builder
                .auto_add_history(false)
                .completion_type(CompletionType::List)
                .build()
        });
    let editor = config.and_then(Editor::<EpsilonHelper, FileHistory>::with_config);
    let mut editor = match editor {
        Ok(editor) => editor,
        Err(err) => {
            eprintln!("error: cannot start the line editor: {err}");
            return 1;
        }
    };
    editor.set_helper(Some(EpsilonHelper::new(completion_names(engine))));
    let history = history_path();
    if let Some(path) = &history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.load_history(path);
    }
    let interrupt = engine.interrupt_handle();
    let handler_flag = interrupt.clone();
    // Ctrl-C while evaluating raises SIGINT (the editor handles it at the prompt).
    let _ = ctrlc::set_handler(move || handler_flag.store(true, Ordering::Relaxed));

    let banner = format!(
        "Epsilon {} - differentiation in a small Lisp. :help for help, Ctrl-D to leave.",
        env!("CARGO_PKG_VERSION")
    );
    if let Outcome::Quit(code) = print_line(&banner) {
        return code;
    }
    let mut notation = Notation::Sexp;
    // Entries are numbered, so an error names the entry it points into
    // (`<repl 3>:1:5`), also when a function defined there fails later.
    let mut entry = 0usize;
    loop {
        match editor.readline(PROMPT) {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => {
                if editor.add_history_entry(line.as_str()).unwrap_or(false)
                    && let Some(path) = &history
                {
                    let _ = editor.append_history(path);
                }
                interrupt.store(false, Ordering::Relaxed);
                entry += 1;
                let name = format!("<repl {entry}>");
                let outcome = if line.trim_start().starts_with(':') {
                    run_command(engine, &mut notation, &line, &name)
                } else {
                    let result = engine.eval_named(&line, &name);
                    show_result(engine, notation, result)
                };
                if let Outcome::Quit(code) = outcome {
                    return code;
                }
                if let Some(helper) = editor.helper_mut() {
                    helper.set_names(completion_names(engine));
                }
            }
            Err(ReadlineError::Interrupted) => {
                if let Outcome::Quit(code) =
                    print_line("(Ctrl-C: input cleared; Ctrl-D or :quit leaves)")
                {
                    return code;
                }
            }
            Err(ReadlineError::Eof) => return 0,
            // The prompt could not be written: standard output was closed.
            Err(ReadlineError::Io(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                return 0;
            }
            #[cfg(unix)]
            Err(ReadlineError::Errno(errno)) if errno as i32 == libc::EPIPE => return 0,
            Err(err) => {
                eprintln!("error: {err}");
                return 1;
            }
        }
    }
}

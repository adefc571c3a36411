//! The interactive REPL (SPEC section 5), driven through a pseudo-terminal
//! with rexpect: banner and prompt, evaluation, multi-line input, error
//! reports with a caret, the `:` commands, Ctrl-C, Ctrl-D, the history
//! file, Tab completion, and bad input that must leave the session alive.
//!
//! Every session gets its own history file through `EPSILON_HISTORY`.
//! rexpect hands back each output byte as one `char` (Latin-1), so text
//! with non-ASCII characters, like the prompt `ε> `, is matched through
//! [`pty_text`].

use rexpect::process::WaitStatus;
use rexpect::session::{Options, PtySession, spawn_with_options};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// How long to wait for any one expected output.
const TIMEOUT_MS: u64 = 20_000;

/// The prompt, as the user sees it.
const PROMPT: &str = "ε> ";

/// `text` as rexpect reports it: one char per byte.
fn pty_text(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// Escapes regex metacharacters.
fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The lines of `output` with the carriage returns the terminal adds removed.
fn output_lines(output: &str) -> Vec<String> {
    output
        .split('\n')
        .map(|line| line.trim_matches('\r').to_string())
        .filter(|line| !line.is_empty())
        .collect()
}

/// A REPL session in a pseudo-terminal, with a private history file.
struct Repl {
    session: PtySession,
    history: PathBuf,
    dir: TempDir,
    /// TERM=dumb: rustyline reads plain lines, without echo or editing.
    dumb: bool,
}

impl Repl {
    /// Starts `epsilon` with TERM=xterm (full line editing) and waits for the
    /// banner and the first prompt.
    fn start() -> Repl {
        Self::start_with(|_| {})
    }

    fn start_with(configure: impl FnOnce(&mut Command)) -> Repl {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let history = dir.path().join("history");
        let mut command = Command::new(env!("CARGO_BIN_EXE_epsilon"));
        command
            .env("EPSILON_HISTORY", &history)
            .env("TERM", "xterm")
            .env_remove("RUST_BACKTRACE")
            .current_dir(dir.path());
        configure(&mut command);
        let dumb = command
            .get_envs()
            .any(|(key, value)| key == "TERM" && value == Some("dumb".as_ref()));
        let history = command
            .get_envs()
            .find(|(key, _)| *key == "EPSILON_HISTORY")
            .and_then(|(_, value)| value.map(PathBuf::from))
            .unwrap_or(history);
        let options = Options::new()
            .timeout_ms(Some(TIMEOUT_MS))
            .strip_ansi_escape_codes(true);
        let session = spawn_with_options(command, options).expect("epsilon starts in a pty");
        let mut repl = Repl {
            session,
            history,
            dir,
            dumb,
        };
        let banner = repl.expect(PROMPT);
        assert!(banner.contains("Epsilon"), "the banner: {banner:?}");
        repl
    }

    /// Waits for `text`; returns what came before it. Fails the test with
    /// the context when it does not come within the timeout.
    fn expect(&mut self, text: &str) -> String {
        match self.session.exp_string(&pty_text(text)) {
            Ok(before) => before,
            Err(err) => panic!("waiting for {text:?}: {err}"),
        }
    }

    /// Waits for a regex (written against the Latin-1 view of the output).
    fn expect_regex(&mut self, regex: &str) -> (String, String) {
        match self.session.exp_regex(regex) {
            Ok(found) => {
                if std::env::var_os("REPL_TRACE").is_some() {
                    eprintln!("/{regex:?}/ after {:?}", found.0);
                }
                found
            }
            Err(err) => panic!("waiting for /{regex}/: {err}"),
        }
    }

    /// Sends `text` as typed, without waiting for anything.
    fn send(&mut self, text: &str) {
        self.session.send(text).expect("writing to the pty");
        self.session.flush().expect("flushing the pty");
    }

    /// Types `line` and Enter without waiting: for lines that continue a
    /// multi-line input, or that end the session.
    fn partial(&mut self, line: &str) {
        self.send(&format!("{line}\r"));
    }

    /// Waits until the editor has accepted the input ending in `last_line`
    /// (it redraws the line and moves to the next one).
    fn wait_accepted(&mut self, last_line: &str) {
        if !self.dumb {
            self.expect_regex(&format!("{}\r*\n", escape(&pty_text(last_line))));
        }
    }

    /// Waits for the prompt that follows an accepted input (the first one
    /// after it); returns the output printed in between.
    fn wait_next_prompt(&mut self) -> String {
        self.expect(PROMPT)
    }

    /// Waits for a fresh prompt; returns the output printed before it. A
    /// fresh prompt starts a line; the editor's redraws of the line being
    /// typed start with a carriage return only.
    fn wait_prompt(&mut self) -> String {
        let (before, _) = self.expect_regex(&format!("\n\r*{}", pty_text(PROMPT)));
        before
    }

    /// Types `line` and Enter, waits until it has been evaluated and the
    /// next prompt is shown, and returns the output in between. Input typed
    /// before the prompt is back would test type-ahead, which
    /// [`typed_ahead_lines_are_not_lost`] does on purpose.
    fn submit(&mut self, line: &str) -> String {
        self.partial(line);
        let last = line.rsplit('\n').next().unwrap_or(line);
        self.wait_accepted(last);
        self.wait_next_prompt()
    }

    /// Submits `line` and checks that `result` is a line of its output.
    fn eval(&mut self, line: &str, result: &str) {
        let output = self.submit(line);
        let lines = output_lines(&output);
        assert!(
            lines.iter().any(|l| l == &pty_text(result)),
            "{line:?} should print {result:?}; the output was {output:?}"
        );
    }

    /// Submits `line` and checks that its output contains `text`.
    fn eval_contains(&mut self, line: &str, text: &str) -> String {
        let output = self.submit(line);
        assert!(
            output.contains(&pty_text(text)),
            "{line:?} should print {text:?}; the output was {output:?}"
        );
        output
    }

    /// A round trip that proves the session is alive and ready.
    fn alive(&mut self) {
        self.eval("(* 6 7)", "42");
    }

    fn control(&mut self, c: char) {
        self.session.send_control(c).expect("writing to the pty");
    }

    /// Waits for the process to end and returns its exit code.
    fn exit_code(&mut self) -> i32 {
        // Drain the output so the child never blocks on a full pty.
        let _ = self.session.exp_eof();
        let deadline = Instant::now() + Duration::from_millis(TIMEOUT_MS);
        loop {
            match self.session.process().status() {
                Some(WaitStatus::Exited(_, code)) => return code,
                Some(WaitStatus::StillAlive) | None if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                other => panic!("epsilon did not exit normally: {other:?}"),
            }
        }
    }

    fn history_text(&self) -> String {
        std::fs::read_to_string(&self.history).unwrap_or_default()
    }
}

#[test]
fn banner_prompt_and_evaluation() {
    let mut repl = Repl::start();
    repl.eval("(+ 1 2)", "3");
    repl.eval("(/ 1 2)", "0.5");
    repl.eval("\"hi\"", "\"hi\"");
    repl.eval("[[1 2] [3 4]]", "[[1.0 2.0] [3.0 4.0]]");
    repl.eval("'(1 2.5 x)", "(1 2.5 x)");
    let output = repl.submit("(define x 10)");
    assert!(
        output_lines(&output).is_empty(),
        "define prints nothing: {output:?}"
    );
    repl.eval("(* x 2)", "20");
    repl.eval("(println \"raw\")", "raw");
    repl.partial(":quit");
    assert_eq!(repl.exit_code(), 0);
}

#[test]
fn multi_line_input_continues_until_brackets_balance() {
    let mut repl = Repl::start();
    repl.partial("(define (f x)");
    let output = repl.submit("  (* x x))");
    assert!(output_lines(&output).is_empty(), "{output:?}");
    repl.eval("(f 4)", "16");
    // Brackets inside strings and comments do not count.
    repl.eval("(str \"(\" 1)", "\"(1\"");
    repl.partial("(+ 1");
    repl.partial("   2 ; a ( in a comment");
    repl.eval("   3)", "6");
    // An unclosed string continues too.
    repl.partial("(str \"a");
    repl.eval("b\")", "\"a\\nb\"");
}

#[test]
fn an_error_shows_the_line_and_a_caret_and_the_session_continues() {
    let mut repl = Repl::start();
    let output = repl.submit("(+ 1 undefined-thing)");
    let lines = output_lines(&output);
    let at = lines
        .iter()
        .position(|l| l.starts_with("<repl 1>:1:6: error: "))
        .unwrap_or_else(|| panic!("a `<repl 1>:1:6: error:` line in {output:?}"));
    assert!(lines[at].contains("undefined-thing"), "{output:?}");
    let quoted = lines
        .iter()
        .position(|l| l.ends_with("1 | (+ 1 undefined-thing)"))
        .unwrap_or_else(|| panic!("the source line is quoted in {output:?}"));
    let caret = &lines[quoted + 1];
    let bar = lines[quoted].find("| ").unwrap() + 2;
    assert_eq!(
        caret.get(bar..),
        Some("     ^^^^^^^^^^^^^^^"),
        "the caret underlines the symbol: {output:?}"
    );
    repl.alive();
    repl.eval_contains("(car 5)", "<repl 3>:1:1: error:");
    repl.alive();
    // An extra `)` is an error, not a request for more input.
    repl.eval_contains("(+ 1 2))", "<repl 5>:1:8: error:");
    repl.alive();
    repl.eval_contains("(error \"my message\")", "my message");
    repl.alive();
    // Definitions made before errors are still there.
    repl.submit("(define kept 5)");
    repl.eval_contains("(car kept)", "error:");
    repl.eval("kept", "5");
}

#[test]
fn symbolic_results_show_in_the_chosen_notation() {
    let mut repl = Repl::start();
    repl.eval("(grad '(* x (sin y)) '(x y))", "((sin y) (* x (cos y)))");
    repl.submit(":infix");
    repl.eval("(grad '(* x (sin y)) '(x y))", "[sin(y), x*cos(y)]");
    // Numbers and plain data show as themselves.
    repl.eval("(+ 1 2)", "3");
    repl.eval("(list 1 2)", "(1 2)");
    repl.submit(":latex");
    repl.eval(
        "(diff '(/ 1 (+ 1 (* x x))) 'x)",
        r"-\frac{2 x}{\left(x^{2} + 1\right)^{2}}",
    );
    repl.submit(":sexp");
    repl.eval("(diff '(* x x) 'x)", "(* 2 x)");
    repl.alive();
}

#[test]
fn help_command_lists_the_commands() {
    let mut repl = Repl::start();
    let output = repl.submit(":help");
    for command in [
        ":help", ":doc", ":time", ":load", ":infix", ":latex", ":quit",
    ] {
        assert!(
            output.contains(command),
            ":help should mention {command}: {output:?}"
        );
    }
    repl.alive();
    repl.eval_contains(":nonsense", "error:");
    repl.alive();
}

#[test]
fn doc_command_shows_documentation() {
    let mut repl = Repl::start();
    let output = repl.submit(":doc map");
    assert!(
        output_lines(&output).len() >= 2 && output.contains("(map f"),
        ":doc map shows the usage and a description: {output:?}"
    );
    assert!(!output.contains("error"), ":doc map: {output:?}");
    // Long docstrings are wrapped between words.
    let output = repl.submit(":doc read-csv");
    let lines = output_lines(&output);
    assert!(lines.len() >= 3, "{output:?}");
    assert!(
        lines.iter().all(|l| l.len() <= 80) && output.contains("column-names"),
        ":doc read-csv: {output:?}"
    );
    repl.eval_contains(":doc no-such-name-here", "error:");
    repl.alive();
    // Docstrings of user functions and special forms.
    repl.submit("(define (sq x) \"Squares x.\" (* x x))");
    repl.eval_contains(":doc sq", "Squares x.");
    let output = repl.submit(":doc if");
    assert!(!output.contains("error"), ":doc if: {output:?}");
    repl.alive();
}

#[test]
fn time_command_prints_the_value_and_the_time() {
    let mut repl = Repl::start();
    let output = repl.submit(":time (+ 1 2)");
    let lines = output_lines(&output);
    assert!(
        lines.iter().any(|l| l == "3"),
        ":time prints the value: {output:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("time: ")
            && l.chars().any(|c| c.is_ascii_digit())
            && l.ends_with('s')),
        ":time prints the elapsed time: {output:?}"
    );
    let output = repl.submit(":time (car 5)");
    assert!(output.contains("error:"), "{output:?}");
    repl.alive();
    // Multi-line :time.
    repl.partial(":time (+ 1");
    repl.eval("2)", "3");
}

#[test]
fn load_command_evaluates_a_file() {
    let mut repl = Repl::start();
    let file = repl.dir.path().join("lib.lisp");
    std::fs::write(
        &file,
        "(define loaded-value 41)\n(define (inc x) (+ x 1))\n",
    )
    .unwrap();
    repl.submit(&format!(":load {}", file.display()));
    repl.eval("(inc loaded-value)", "42");
    // Relative to the working directory, and quoted.
    std::fs::write(repl.dir.path().join("lib2.lisp"), "(define other 8)\n").unwrap();
    repl.submit(":load \"lib2.lisp\"");
    repl.eval("other", "8");
    // A file with an error reports it at its own place.
    let bad = repl.dir.path().join("bad.lisp");
    std::fs::write(&bad, "(define ok 1)\n  (car 5)\n").unwrap();
    repl.eval_contains(&format!(":load {}", bad.display()), "bad.lisp:2:3: error:");
    repl.alive();
    repl.eval_contains(":load /no/such/file.lisp", "error:");
    repl.alive();
}

#[test]
fn quit_command_exits_0() {
    let mut repl = Repl::start();
    repl.alive();
    repl.partial(":quit");
    assert_eq!(repl.exit_code(), 0);
}

#[test]
fn a_closed_standard_output_ends_the_session_with_status_0() {
    // The REPL on the terminal, its output piped into `head`, which stops
    // reading after the banner's first word.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut command = Command::new("bash");
    command
        .args([
            "-c",
            "set -o pipefail; \"$0\" | head -c 7; echo; echo \"status $?\"",
            env!("CARGO_BIN_EXE_epsilon"),
        ])
        .env("EPSILON_HISTORY", dir.path().join("history"))
        .env("TERM", "xterm")
        .env_remove("RUST_BACKTRACE")
        .current_dir(dir.path());
    let options = Options::new()
        .timeout_ms(Some(TIMEOUT_MS))
        .strip_ansi_escape_codes(true);
    let mut session = spawn_with_options(command, options).expect("bash starts in a pty");
    session
        .exp_string("Epsilon")
        .expect("head shows the banner's start");
    // A long value, written after `head` has gone.
    std::thread::sleep(Duration::from_millis(300));
    session.send_line("(range 100000)").expect("typed");
    let (before, status) = session
        .exp_regex("status [0-9]+")
        .expect("the pipeline ends");
    assert_eq!(status, "status 0", "output: {before:?}");
    assert!(
        !before.contains("panicked") && !before.contains("error"),
        "{before:?}"
    );
}

#[test]
fn exit_call_gives_its_status() {
    let mut repl = Repl::start();
    repl.partial("(exit 3)");
    assert_eq!(repl.exit_code(), 3);
}

#[test]
fn ctrl_d_exits_0() {
    let mut repl = Repl::start();
    repl.alive();
    repl.control('d');
    assert_eq!(repl.exit_code(), 0);
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_input_and_the_session_continues() {
    let mut repl = Repl::start();
    repl.send("(+ 1 2");
    std::thread::sleep(Duration::from_millis(200));
    repl.control('c');
    repl.wait_prompt();
    repl.alive();
}

#[test]
fn ctrl_c_interrupts_a_running_evaluation() {
    let mut repl = Repl::start();
    repl.submit("(define (spin) (spin))");
    repl.alive();
    repl.partial("(spin)");
    // Wait until the line was accepted and the evaluation runs, then
    // interrupt. Resend if the first Ctrl-C raced the start of evaluation.
    repl.wait_accepted("(spin)");
    let mut interrupted = false;
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(300));
        repl.control('c');
        if repl.session.exp_string("interrupted").is_ok() {
            interrupted = true;
            break;
        }
    }
    assert!(
        interrupted,
        "Ctrl-C should stop (spin) with an `interrupted` error"
    );
    repl.wait_prompt();
    repl.alive();
    // Again, in a `while` loop (not a procedure call), and keeping the
    // state it built up to the interrupt.
    repl.submit("(define i 0)");
    repl.partial("(while #t (set! i (+ i 1)))");
    repl.wait_accepted("(while #t (set! i (+ i 1)))");
    std::thread::sleep(Duration::from_millis(300));
    repl.control('c');
    repl.expect("interrupted");
    repl.wait_prompt();
    repl.eval("(> i 0)", "#t");
    repl.control('d');
    assert_eq!(repl.exit_code(), 0);
}

#[test]
fn history_is_saved_to_the_history_file() {
    let mut repl = Repl::start();
    repl.eval("(+ 100 1)", "101");
    repl.partial("(+ 1");
    repl.eval("   1)", "2");
    repl.submit("(define hist-marker 7)");
    repl.eval("(* hist-marker 3)", "21");
    repl.control('d');
    assert_eq!(repl.exit_code(), 0);
    let history = repl.history_text();
    for line in [
        "(+ 100 1)",
        "(+ 1",
        "   1)",
        "(define hist-marker 7)",
        "(* hist-marker 3)",
    ] {
        assert!(
            history.contains(line),
            "the history file should contain {line:?}:\n{history}"
        );
    }

    // A new session sees it: Up recalls the last entry, which runs there
    // (where hist-marker is not defined).
    let history_path = repl.history.clone();
    let mut again = Repl::start_with(|command| {
        command.env("EPSILON_HISTORY", &history_path);
    });
    again.send("\x1b[A");
    again.expect("(* hist-marker 3)");
    again.partial("");
    again.wait_accepted("(* hist-marker 3)");
    let output = again.wait_next_prompt();
    assert!(
        output.contains("<repl 1>:1:4: error:") && output.contains("hist-marker"),
        "the recalled line runs: {output:?}"
    );
    again.control('d');
    assert_eq!(again.exit_code(), 0);
    let history = std::fs::read_to_string(&history_path).unwrap();
    assert_eq!(
        history.matches("(* hist-marker 3)").count(),
        1,
        "a repeated last entry is stored once: {history}"
    );
}

#[test]
fn history_keeps_at_least_10000_entries() {
    let dir = tempfile::tempdir().unwrap();
    let history_path = dir.path().join("history");
    // A history file in rustyline's format with 12,000 distinct entries.
    let mut text = String::from("#V2\n");
    for i in 0..12_000 {
        text.push_str(&format!("(+ {i} 0)\n"));
    }
    std::fs::write(&history_path, text).unwrap();
    let mut repl = Repl::start_with(|command| {
        command.env("EPSILON_HISTORY", &history_path);
    });
    repl.eval("(+ 123456 1)", "123457");
    repl.control('d');
    assert_eq!(repl.exit_code(), 0);
    let saved = std::fs::read_to_string(&history_path).unwrap();
    let entries = saved.lines().filter(|l| l.starts_with("(+ ")).count();
    assert!(
        entries >= 10_000,
        "the history file keeps at least 10,000 entries, it has {entries}"
    );
    assert!(saved.contains("(+ 123456 1)"), "the new entry is saved");
    assert!(saved.contains("(+ 11999 0)"), "recent old entries are kept");
}

#[test]
fn tab_completes_a_unique_prefix() {
    let mut repl = Repl::start();
    repl.send("(linsp");
    std::thread::sleep(Duration::from_millis(300));
    repl.send("\t");
    repl.expect("(linspace");
    repl.partial(" 0 1 3)");
    repl.wait_accepted("(linspace 0 1 3)");
    let output = repl.wait_next_prompt();
    assert!(
        output_lines(&output).iter().any(|l| l == "[0.0 0.5 1.0]"),
        "{output:?}"
    );
    // Names defined in the session are completed too.
    repl.submit("(define my-unique-function-name 5)");
    repl.send("(+ 1 my-uniq");
    std::thread::sleep(Duration::from_millis(300));
    repl.send("\t");
    repl.expect("my-unique-function-name");
    repl.partial(")");
    repl.wait_accepted("(+ 1 my-unique-function-name)");
    let output = repl.wait_next_prompt();
    assert!(output_lines(&output).iter().any(|l| l == "6"), "{output:?}");
}

#[test]
fn a_second_tab_lists_the_candidates() {
    let mut repl = Repl::start();
    repl.send("(log");
    std::thread::sleep(Duration::from_millis(300));
    repl.send("\t");
    std::thread::sleep(Duration::from_millis(300));
    repl.send("\t");
    // Listed in order.
    repl.expect("log1p");
    repl.expect("logsumexp");
    repl.partial(" 1)");
    repl.wait_next_prompt();
    repl.alive();
}

#[test]
fn errors_name_the_entry_they_point_into() {
    let mut repl = Repl::start();
    repl.submit("(define (half x)\n  (/ x (car x)))");
    repl.alive();
    let output = repl.submit("(half 4)");
    // The failing call is in entry 1, line 2; it was called from entry 3.
    assert!(
        output.contains("<repl 1>:2:8: error: car: expected a list")
            && output.contains("called from <repl 3>:1:1"),
        "{output:?}"
    );
    repl.alive();
}

#[test]
fn runaway_recursion_leaves_the_repl_alive() {
    let mut repl = Repl::start();
    repl.submit("(define (f n) (+ 1 (f n)))");
    let output = repl.submit("(f 0)");
    assert!(
        output.contains("<repl 2>:1:") && output.contains("error:"),
        "{output:?}"
    );
    assert!(!output.contains("panicked"), "{output:?}");
    repl.alive();
}

#[test]
fn a_100000_level_nested_expression_leaves_the_repl_alive() {
    let mut repl = Repl::start();
    // Pasted, as a terminal with bracketed paste sends it: typing 600,000
    // characters one by one would redraw the line each time.
    let deep = format!("{}1{}", "(+ 1 ".repeat(100_000), ")".repeat(100_000));
    repl.send(&format!("\x1b[200~{deep}\x1b[201~\r"));
    let (_, error) = repl.expect_regex(r"<repl 1>:1:[0-9]+: error: [^\r\n]*");
    assert!(!error.contains("panicked"), "{error:?}");
    let rest = repl.wait_prompt();
    assert!(
        rest.len() < 10_000,
        "the report quotes only part of the 600,000-character line: {} bytes",
        rest.len()
    );
    repl.alive();
    // Unclosed: 100,000 open brackets is an error too, not a request for
    // more input that never ends.
    repl.send(&format!("\x1b[200~{}\x1b[201~\r", "(".repeat(100_000)));
    repl.expect_regex(r"<repl 3>:1:[0-9]+: error: [^\r\n]*");
    repl.wait_prompt();
    repl.alive();
}

#[test]
fn integer_division_by_zero_is_an_error_and_float_division_is_ieee() {
    let mut repl = Repl::start();
    repl.eval_contains("(/ 1 0)", "<repl 1>:1:1: error:");
    repl.alive();
    repl.eval("(/ 1.0 0.0)", "inf");
    repl.eval("(/ 0.0 0.0)", "nan");
    repl.eval_contains("(+ [1 2 3] [1 2])", "<repl 5>:1:1: error:");
    repl.alive();
}

#[test]
fn typed_ahead_lines_are_not_lost() {
    // Lines typed (or pasted without bracketed paste) while an earlier one
    // is still being evaluated must all be evaluated, in order.
    let mut repl = Repl::start();
    repl.send("(+ 1 2)\r(+ 3 4)\r(+ 5 6)\r");
    repl.expect("\n3\r\n");
    repl.expect("\n7\r\n");
    repl.expect("\n11\r\n");
}

#[test]
fn matching_brackets_are_highlighted() {
    // Without stripping escape codes: with the cursor after a closing
    // bracket, it and its partner are drawn in the same style.
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_epsilon"));
    command
        .env("EPSILON_HISTORY", dir.path().join("history"))
        .env("TERM", "xterm");
    let options = Options::new()
        .timeout_ms(Some(TIMEOUT_MS))
        .strip_ansi_escape_codes(false);
    let mut session = spawn_with_options(command, options).expect("epsilon starts in a pty");
    session.exp_string(&pty_text(PROMPT)).unwrap();
    session.send("(+ 1 (* 2 3))").unwrap();
    session.flush().unwrap();
    // The inner pair while it is being closed, then the outer pair.
    let style = r"\x1b\[[0-9;]*m";
    let reset = r"\x1b\[0?m";
    session
        .exp_regex(&format!(r"{style}\({reset}\* 2 3{style}\){reset}"))
        .expect("the inner brackets are highlighted");
    session
        .exp_regex(&format!(r"{style}\({reset}\+ 1 \(\* 2 3\){style}\){reset}"))
        .expect("the outer brackets are highlighted");
    // An unmatched bracket is marked too, in another style.
    session.send(")").unwrap();
    session.flush().unwrap();
    let (_, unmatched) = session
        .exp_regex(&format!(r"\(\+ 1 \(\* 2 3\)\){style}\){reset}"))
        .expect("the extra bracket is marked");
    assert!(unmatched.contains("\x1b["), "{unmatched:?}");
    session.send("\r").unwrap();
    session.flush().unwrap();
    session.exp_string("error:").unwrap();
    session.send_control('d').unwrap();
    session.exp_eof().unwrap();
}

#[test]
fn dumb_terminal_still_works() {
    // TERM=dumb makes rustyline fall back to plain line reading.
    let mut repl = Repl::start_with(|command| {
        command.env("TERM", "dumb");
    });
    repl.eval("(+ 1 2)", "3");
    repl.eval_contains("(car 5)", "<repl 2>:1:1: error:");
    repl.alive();
    repl.control('d');
    assert_eq!(repl.exit_code(), 0);
}

//! Helpers shared by the command-line test files: running the `epsilon`
//! binary with a time limit, and checking the `FILE:LINE:COL: error:` report.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub const EPSILON: &str = env!("CARGO_BIN_EXE_epsilon");

/// How long any one run may take before the test fails as a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

/// What a finished run of the binary gave.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The exit code; fails the test when the process died from a signal
    /// (an abort, a stack overflow).
    pub fn code(&self) -> i32 {
        match self.status.code() {
            Some(code) => code,
            None => panic!(
                "epsilon was killed by a signal ({:?}); stderr:\n{}",
                self.status,
                head(&self.stderr)
            ),
        }
    }

    /// Asserts the exit code, showing both streams on failure.
    pub fn assert_code(&self, expected: i32) -> &Self {
        let code = self.code();
        assert_eq!(
            code,
            expected,
            "unexpected exit status {code} (wanted {expected})\n--- stdout:\n{}\n--- stderr:\n{}",
            head(&self.stdout),
            head(&self.stderr)
        );
        self
    }

    /// Asserts that nothing in stderr says a Rust panic happened.
    pub fn assert_no_panic(&self) -> &Self {
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"),
            "stderr reports a panic:\n{}",
            head(&self.stderr)
        );
        self
    }
}

/// The first few KB of `text`, for failure messages.
pub fn head(text: &str) -> String {
    const LIMIT: usize = 4000;
    if text.len() <= LIMIT {
        return text.to_string();
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... [{} bytes in all]", &text[..end], text.len())
}

/// Runs `command` with `stdin` piped in, killing it after [`TIME_LIMIT`].
pub fn run_command(mut command: Command, stdin: Option<&[u8]>) -> Outcome {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the epsilon binary starts");
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let bytes = bytes.to_vec();
        // A broken pipe is fine: the program may stop reading early.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for epsilon") {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("epsilon did not finish within {TIME_LIMIT:?} (a hang?)");
        }
        thread::sleep(Duration::from_millis(10));
    };
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    Outcome {
        status,
        stdout,
        stderr,
    }
}

/// Runs `epsilon ARGS...` with no input.
pub fn epsilon(args: &[&str]) -> Outcome {
    let mut command = Command::new(EPSILON);
    command.args(args);
    run_command(command, None)
}

/// Runs `epsilon` with no arguments and `input` piped into standard input.
pub fn epsilon_with_stdin(args: &[&str], input: &str) -> Outcome {
    let mut command = Command::new(EPSILON);
    command.args(args);
    run_command(command, Some(input.as_bytes()))
}

/// Writes `source` to `name` in `dir` and runs `epsilon run` on it; returns
/// the outcome and the path as passed on the command line.
pub fn run_script(dir: &Path, name: &str, source: &str) -> (Outcome, String) {
    let path = dir.join(name);
    std::fs::write(&path, source).expect("writing the script");
    let path = path.to_str().expect("temp paths are UTF-8").to_string();
    (epsilon(&["run", &path]), path)
}

/// Checks an error report: the first line is `FILE:LINE:COL: error: ...`,
/// and somewhere below it the source line is quoted with a `^` under
/// column COL. `source_line` is the text of line LINE (no tabs).
/// Returns the message after `error: `.
pub fn check_report(stderr: &str, file: &str, line: u32, col: u32, source_line: &str) -> String {
    let first = stderr.lines().next().unwrap_or("");
    let prefix = format!("{file}:{line}:{col}: error: ");
    assert!(
        first.starts_with(&prefix),
        "the report should start with {prefix:?}; stderr was:\n{}",
        head(stderr)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    let gutter = format!("{line} | ");
    let quoted = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&gutter))
        .unwrap_or_else(|| {
            panic!(
                "the report should quote line {line} as `{gutter}...`; stderr was:\n{}",
                head(stderr)
            )
        });
    let quoted_line = lines[quoted];
    let text_start = quoted_line.find(&gutter).unwrap() + gutter.len();
    assert_eq!(
        &quoted_line[text_start..],
        source_line,
        "the quoted source line; stderr was:\n{}",
        head(stderr)
    );
    let caret_line = lines.get(quoted + 1).unwrap_or_else(|| {
        panic!(
            "a caret line should follow the source line; stderr was:\n{}",
            head(stderr)
        )
    });
    let bar = caret_line.find('|').unwrap_or_else(|| {
        panic!(
            "the caret line should have a `|` gutter; stderr was:\n{}",
            head(stderr)
        )
    });
    assert_eq!(
        bar + 1,
        text_start - 1,
        "the gutters of the source and caret lines line up; stderr was:\n{}",
        head(stderr)
    );
    let caret_offset = caret_line[bar + 2..].find('^').unwrap_or_else(|| {
        panic!(
            "the caret line should contain `^`; stderr was:\n{}",
            head(stderr)
        )
    });
    // Columns count characters.
    let caret_col = caret_line[bar + 2..][..caret_offset].chars().count() as u32 + 1;
    assert_eq!(
        caret_col,
        col,
        "the caret should sit under column {col}; stderr was:\n{}",
        head(stderr)
    );
    first[prefix.len()..].to_string()
}

/// `epsilon run script` in a pseudo-terminal (TERM=xterm, so progress bars
/// draw), with ANSI escapes stripped from what the session reads.
pub fn run_script_in_pty(script: &Path) -> rexpect::session::PtySession {
    let mut command = Command::new(EPSILON);
    command
        .arg("run")
        .arg(script)
        .env("TERM", "xterm")
        .env_remove("NO_COLOR");
    let options = rexpect::session::Options::new()
        .timeout_ms(Some(20_000))
        .strip_ansi_escape_codes(true);
    rexpect::session::spawn_with_options(command, options).expect("epsilon starts in a pty")
}

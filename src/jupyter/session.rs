//! The engine thread: runs shell requests one at a time on the [`Engine`].
//!
//! Each request is bracketed by `busy` and `idle` status messages on
//! IOPub. While a cell runs, its printed output becomes `stream` messages
//! (through [`super::capture`] where standard output can be captured, so
//! that registered Rust functions' output arrives too), its charts and
//! progress bars `display_data` (progress bars then update in place with
//! `update_display_data`), and `read-line` asks the front end for input
//! ([`super::stdin`]), all children of the request being run. Cells kept
//! in the history ([`super::history`]) are numbered by execution count.

use super::capture::Capture;
use super::complete::{completeness, word_at};
use super::history::{History, Query};
use super::incoming::HISTORY_REQUEST;
use super::publisher::Publisher;
use super::rich::{image_bundle, progress_bundle, value_bundle};
use super::stdin::NotebookInput;
use super::wire::{Outgoing, ToEngine};
use crate::display::{Rich, RichDisplay};
use crate::lisp::eval::format_duration;
use crate::{Engine, Error, EvalErrorKind, Value};
use chrono::{DateTime, Utc};
use jupyter_protocol::{
    CommInfoReply, CompleteReply, DisplayData, ErrorOutput, ExecuteInput, ExecuteReply,
    ExecuteRequest, ExecuteResult, ExecutionCount, HistoryReply, InspectReply, IsCompleteReply,
    IsCompleteReplyStatus, JupyterMessage, JupyterMessageContent, Media, MediaType, Payload,
    ReplyError, ReplyStatus, Status, StreamContent, Transient, UpdateDisplayData,
};
use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long after a failed cell execute requests sent before the failure
/// are still aborted on arrival.
const ABORT_WINDOW: Duration = Duration::from_millis(500);

/// What a cell gives besides its output: a value to show, or a page of
/// documentation (`:doc NAME`, `?NAME`) for the front end's pager.
enum Shown {
    Nothing,
    Value(Media),
    Page(String),
}

/// The engine and what it needs to answer requests.
pub struct Session {
    engine: Engine,
    publisher: Publisher,
    interrupt: Arc<AtomicBool>,
    /// Cells kept in the history so far: the last one's execution count.
    count: usize,
    /// When the last failed cell stopped, before its reply went out:
    /// requests dated before it were sent while it ran.
    failed_at: DateTime<Utc>,
    history: History,
    /// Whether the cell being run may ask for input.
    allow_stdin: Rc<Cell<bool>>,
}

impl Session {
    /// A session sending output and rich items of `engine` to `outgoing`;
    /// `read-line` waits for `input_replies`.
    pub fn new(
        mut engine: Engine,
        outgoing: Outgoing,
        interrupt: Arc<AtomicBool>,
        input_replies: Receiver<String>,
    ) -> Self {
        let mut publisher = Publisher::new(outgoing);
        match Capture::start(publisher.clone()) {
            // The interpreter's output stays standard output, now captured.
            Ok(capture) => publisher = publisher.with_capture(Arc::new(capture)),
            Err(err) => {
                eprintln!(
                    "epsilon kernel: {err}; output of registered Rust functions goes to the log"
                );
                engine.set_output(Box::new(StreamWriter {
                    publisher: publisher.clone(),
                    pending: Vec::new(),
                    stderr: false,
                }));
            }
        }
        engine.set_error_output(Box::new(StreamWriter {
            publisher: publisher.clone(),
            pending: Vec::new(),
            stderr: true,
        }));
        engine.set_display(Box::new(NotebookDisplay {
            publisher: publisher.clone(),
            progress_shown: HashSet::new(),
            tag: format!("{:08x}", rand::random::<u32>()),
        }));
        let allow_stdin = Rc::new(Cell::new(false));
        engine.set_input(Box::new(NotebookInput {
            publisher: publisher.clone(),
            replies: input_replies,
            allowed: Rc::clone(&allow_stdin),
            interrupt: Arc::clone(&interrupt),
        }));
        Session {
            engine,
            publisher,
            interrupt,
            count: 0,
            failed_at: DateTime::<Utc>::MIN_UTC,
            history: History::default(),
            allow_stdin,
        }
    }

    /// Handles requests until a shutdown (or until the wire thread stops).
    ///
    /// After a failed cell that asked to stop on error, the cells queued
    /// behind it (a "run all") are answered `aborted` without running, as
    /// ipykernel does. "Queued behind it" means sent before the failure:
    /// an execute request whose header is dated before the failure is
    /// aborted when it arrives within [`ABORT_WINDOW`] of the failure (the
    /// wire thread may still be forwarding it); the first one sent after
    /// the failure runs and ends the aborting. Other requests are handled
    /// as usual meanwhile.
    pub fn run(mut self, requests: Receiver<ToEngine>) {
        let mut aborting: Option<(DateTime<Utc>, Instant)> = None;
        loop {
            let next = match aborting {
                Some((_, until)) => {
                    match requests.recv_timeout(until.saturating_duration_since(Instant::now())) {
                        Ok(next) => next,
                        Err(RecvTimeoutError::Timeout) => {
                            aborting = None;
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match requests.recv() {
                    Ok(next) => next,
                    Err(_) => return,
                },
            };
            let ToEngine::Shell(message) = next else {
                return;
            };
            if let JupyterMessageContent::ExecuteRequest(_) = &message.content
                && let Some((failed_at, _)) = aborting
            {
                if message.header.date <= failed_at {
                    self.abort(&message);
                    continue;
                }
                aborting = None;
            }
            if self.handle(*message) {
                aborting = Some((self.failed_at, Instant::now() + ABORT_WINDOW));
            }
        }
    }

    /// Answers an execute request `aborted` without running it.
    fn abort(&mut self, message: &JupyterMessage) {
        self.publisher.set_parent(message);
        self.publish(Status::busy());
        self.reply(
            message,
            ExecuteReply {
                status: ReplyStatus::Aborted,
                execution_count: ExecutionCount::new(self.count),
                payload: Vec::new(),
                user_expressions: None,
                error: None,
            },
        );
        self.publish(Status::idle());
    }

    fn publish(&self, content: impl Into<JupyterMessageContent>) {
        self.publisher.publish(content);
    }

    fn reply(&self, request: &JupyterMessage, content: impl Into<JupyterMessageContent>) {
        self.publisher.reply(request, content);
    }

    /// Handles one request; true when it was a cell that failed and asked
    /// to stop on error.
    fn handle(&mut self, request: JupyterMessage) -> bool {
        self.publisher.set_parent(&request);
        self.publish(Status::busy());
        let mut stop = false;
        match &request.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                self.reply(&request, super::kernel_info());
            }
            JupyterMessageContent::ExecuteRequest(execute) => {
                stop = !self.execute(&request, execute) && execute.stop_on_error;
            }
            JupyterMessageContent::CompleteRequest(complete) => {
                let (start, end, matches) =
                    super::complete::complete(&self.engine, &complete.code, complete.cursor_pos);
                self.reply(
                    &request,
                    CompleteReply {
                        matches,
                        cursor_start: start,
                        cursor_end: end,
                        ..Default::default()
                    },
                );
            }
            JupyterMessageContent::InspectRequest(inspect) => {
                let doc = word_at(&inspect.code, inspect.cursor_pos)
                    .and_then(|(_, _, word)| self.engine.doc(&word));
                self.reply(
                    &request,
                    InspectReply {
                        found: doc.is_some(),
                        data: doc.map_or_else(Media::default, |text| {
                            Media::new(vec![MediaType::Plain(text)])
                        }),
                        ..Default::default()
                    },
                );
            }
            JupyterMessageContent::IsCompleteRequest(check) => {
                let status = completeness(&check.code);
                let indent = match status {
                    IsCompleteReplyStatus::Incomplete => "  ".into(),
                    _ => String::new(),
                };
                self.reply(&request, IsCompleteReply { status, indent });
            }
            JupyterMessageContent::HistoryRequest(query) => {
                let query = serde_json::to_value(query).map_err(|err| err.to_string());
                self.answer_history(&request, query);
            }
            JupyterMessageContent::UnknownMessage(unknown)
                if unknown.msg_type == HISTORY_REQUEST =>
            {
                self.answer_history(&request, Ok(unknown.content.clone()));
            }
            JupyterMessageContent::CommInfoRequest(_) => self.reply(
                &request,
                CommInfoReply {
                    status: ReplyStatus::Ok,
                    comms: Default::default(),
                    error: None,
                },
            ),
            // Comms, debugging and stdin replies are not spoken here.
            _ => {}
        }
        self.publish(Status::idle());
        stop
    }

    /// Answers a history request whose content is `query`.
    fn answer_history(&self, request: &JupyterMessage, query: Result<serde_json::Value, String>) {
        let answer = query
            .and_then(Query::parse)
            .and_then(|query| self.history.answer(&query));
        let reply = match answer {
            Ok(history) => HistoryReply {
                history,
                status: ReplyStatus::Ok,
                error: None,
            },
            Err(message) => HistoryReply {
                history: Vec::new(),
                status: ReplyStatus::Error,
                error: Some(Box::new(ReplyError {
                    ename: "HistoryError".to_string(),
                    evalue: message.clone(),
                    traceback: vec![format!("error: {message}")],
                })),
            },
        };
        self.reply(request, reply);
    }

    /// Runs a cell and answers it; false when it failed. A cell that is
    /// not silent and asks to be stored gets the next execution count and
    /// a place in the history.
    fn execute(&mut self, request: &JupyterMessage, execute: &ExecuteRequest) -> bool {
        let stored = execute.store_history && !execute.silent;
        if stored {
            self.count += 1;
        }
        let count = ExecutionCount::new(self.count);
        if !execute.silent {
            self.publish(ExecuteInput {
                code: execute.code.clone(),
                execution_count: count,
            });
        }
        // An interrupt that came while no cell ran is not for this one.
        self.interrupt.store(false, Ordering::Relaxed);
        self.allow_stdin.set(execute.allow_stdin);
        let outcome = self.run_cell(&execute.code, count.0);
        self.allow_stdin.set(false);
        let mut payload = Vec::new();
        let mut shown_text = None;
        let error = match outcome {
            Ok(Shown::Value(data)) if !execute.silent => {
                shown_text = data.content.iter().find_map(|item| match item {
                    MediaType::Plain(text) => Some(text.clone()),
                    _ => None,
                });
                // Transient parts must be an object when present.
                self.publish(ExecuteResult {
                    transient: Some(Transient::default()),
                    ..ExecuteResult::new(count, data)
                });
                None
            }
            Ok(Shown::Page(text)) => {
                payload.push(Payload::Page {
                    data: Media::new(vec![MediaType::Plain(text)]),
                    start: 0,
                });
                None
            }
            Ok(_) => None,
            Err(error) => {
                self.failed_at = Utc::now();
                self.publish(ErrorOutput {
                    ename: error.ename.clone(),
                    evalue: error.evalue.clone(),
                    traceback: error.traceback.clone(),
                });
                Some(Box::new(error))
            }
        };
        if stored {
            self.history.record(count.0, &execute.code, shown_text);
        }
        let succeeded = error.is_none();
        self.reply(
            request,
            ExecuteReply {
                status: if succeeded {
                    ReplyStatus::Ok
                } else {
                    ReplyStatus::Error
                },
                execution_count: count,
                payload,
                user_expressions: Some(Default::default()),
                error,
            },
        );
        succeeded
    }

    /// Runs one cell: Lisp forms, a command line (`:doc NAME`, `:time
    /// FORMS`) or `?NAME`. Gives the value's bundle, if it has one to
    /// show, or the page of documentation asked for.
    fn run_cell(&mut self, code: &str, count: usize) -> Result<Shown, ReplyError> {
        let name = format!("<cell {count}>");
        let trimmed = code.trim();
        if let Some(asked) = trimmed.strip_prefix('?')
            && !asked.is_empty()
            && !asked.contains(char::is_whitespace)
        {
            return self.page(asked);
        }
        let Some(command) = trimmed.strip_prefix(':') else {
            let value = self.engine.eval_named(code, &name).map_err(cell_error)?;
            return Ok(self.bundle(&value));
        };
        let (command, argument) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        let argument = argument.trim();
        match command {
            "doc" if !argument.is_empty() => self.page(argument),
            "time" if !argument.is_empty() => {
                let started = Instant::now();
                let result = self.engine.eval_named(argument, &name);
                let elapsed = format_duration(started.elapsed().as_secs_f64());
                // Where `(time ...)` writes too: the error stream.
                self.publish(StreamContent::stderr(&format!("time: {elapsed}\n")));
                Ok(self.bundle(&result.map_err(cell_error)?))
            }
            _ => Err(command_error(format!(
                "unknown command :{command}; a notebook cell may start with :doc NAME or :time FORMS, or be ?NAME"
            ))),
        }
    }

    /// The documentation of `name` for the pager.
    fn page(&self, name: &str) -> Result<Shown, ReplyError> {
        match self.engine.doc(name) {
            Some(text) => Ok(Shown::Page(text)),
            None => Err(command_error(format!("{name} is not defined"))),
        }
    }

    fn bundle(&self, value: &Value) -> Shown {
        match value {
            Value::Void => Shown::Nothing,
            value => Shown::Value(value_bundle(&self.engine, value)),
        }
    }
}

/// The error of a cell as Jupyter shows it: the kind, the message, and the
/// full report (location, source line and caret) as the traceback.
fn cell_error(error: Error) -> ReplyError {
    let ename = match error.kind() {
        EvalErrorKind::Interrupted => "Interrupted".to_string(),
        EvalErrorKind::Exit(code) => {
            return command_error(format!(
                "(exit {code}) does not end a notebook session; restart the kernel instead"
            ));
        }
        kind => format!("{kind:?}Error"),
    };
    ReplyError {
        ename,
        evalue: error.message().to_string(),
        traceback: error.render().lines().map(str::to_string).collect(),
    }
}

fn command_error(message: String) -> ReplyError {
    ReplyError {
        ename: "Error".to_string(),
        evalue: message.clone(),
        traceback: vec![format!("error: {message}")],
    }
}

/// Program output (or, with `stderr`, warnings and `eprintln`) as
/// `stream` messages: whole lines as they are written, the rest when
/// flushed.
struct StreamWriter {
    publisher: Publisher,
    pending: Vec<u8>,
    stderr: bool,
}

impl StreamWriter {
    fn send(&mut self, upto: usize) {
        let text = String::from_utf8_lossy(&self.pending[..upto]).into_owned();
        self.pending.drain(..upto);
        if !text.is_empty() {
            let content = if self.stderr {
                StreamContent::stderr(&text)
            } else {
                StreamContent::stdout(&text)
            };
            self.publisher.publish(content);
        }
    }
}

impl std::io::Write for StreamWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        if let Some(last) = self.pending.iter().rposition(|&b| b == b'\n') {
            self.send(last + 1);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Keep a UTF-8 sequence cut by the end of a write for the next one.
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(err) if err.error_len().is_none() => err.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        self.send(whole);
        Ok(())
    }
}

/// Charts and progress bars as `display_data`; a progress bar's later
/// states update its first display (`update_display_data`).
struct NotebookDisplay {
    publisher: Publisher,
    /// Progress bars displayed so far, by handle.
    progress_shown: HashSet<i64>,
    /// Makes display ids unique to this kernel process.
    tag: String,
}

impl RichDisplay for NotebookDisplay {
    fn show(&mut self, item: Rich) {
        let content: JupyterMessageContent = match item {
            Rich::Image {
                png,
                svg,
                width,
                height,
            } => DisplayData::new(image_bundle(&png, &svg, (width, height))).into(),
            Rich::Progress(state) => {
                let display_id = format!("epsilon-progress-{}-{}", self.tag, state.id);
                let data = progress_bundle(&state);
                let first = !self.progress_shown.contains(&state.id);
                if state.finished {
                    self.progress_shown.remove(&state.id);
                } else {
                    self.progress_shown.insert(state.id);
                }
                if first {
                    DisplayData {
                        data,
                        metadata: Default::default(),
                        transient: Some(Transient {
                            display_id: Some(display_id),
                        }),
                    }
                    .into()
                } else {
                    UpdateDisplayData::new(data, &display_id).into()
                }
            }
        };
        self.publisher.publish(content);
    }
}

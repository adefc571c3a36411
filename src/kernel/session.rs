//! The engine thread: runs shell requests one at a time on the [`Engine`].
//!
//! Each request is bracketed by `busy` and `idle` status messages on
//! IOPub. While a cell runs, its printed output becomes `stream` messages
//! and its charts and progress bars `display_data` (progress bars then
//! update in place with `update_display_data`), all children of the
//! request being run.

use super::rich::{image_bundle, progress_bundle, value_bundle};
use super::wire::{Outgoing, ToEngine, ToWire};
use crate::display::{Rich, RichDisplay};
use crate::lisp::eval::format_duration;
use crate::{Engine, Error, EvalErrorKind, Value};
use chrono::{DateTime, Utc};
use jupyter_protocol::{
    CommInfoReply, CompleteReply, DisplayData, ErrorOutput, ExecuteInput, ExecuteReply,
    ExecuteRequest, ExecuteResult, ExecutionCount, HistoryReply, InspectReply, IsCompleteReply,
    IsCompleteReplyStatus, JupyterMessage, JupyterMessageContent, Media, MediaType, ReplyError,
    ReplyStatus, Status, StreamContent, Transient, UpdateDisplayData,
};
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long after a failed cell execute requests sent before the failure
/// are still aborted on arrival.
const ABORT_WINDOW: Duration = Duration::from_millis(500);

/// The request being handled, which output messages name as their parent.
type Parent = Rc<RefCell<Option<JupyterMessage>>>;

/// Sends `content` on IOPub as a child of the current request.
fn publish(outgoing: &Outgoing, parent: &Parent, content: JupyterMessageContent) {
    let parent = parent.borrow();
    let message = JupyterMessage::new(content, parent.as_ref());
    let _ = outgoing.send(ToWire::IoPub(message));
}

/// The engine and what it needs to answer requests.
pub struct Session {
    engine: Engine,
    outgoing: Outgoing,
    interrupt: Arc<AtomicBool>,
    parent: Parent,
    /// Cells run so far (silent ones not counted).
    count: usize,
    /// When the last failed cell stopped, before its reply went out:
    /// requests dated before it were sent while it ran.
    failed_at: DateTime<Utc>,
}

impl Session {
    /// A session sending output and rich items of `engine` to `outgoing`.
    pub fn new(mut engine: Engine, outgoing: Outgoing, interrupt: Arc<AtomicBool>) -> Self {
        let parent: Parent = Rc::new(RefCell::new(None));
        engine.set_output(Box::new(StreamWriter {
            outgoing: outgoing.clone(),
            parent: Rc::clone(&parent),
            pending: Vec::new(),
            stderr: false,
        }));
        engine.set_error_output(Box::new(StreamWriter {
            outgoing: outgoing.clone(),
            parent: Rc::clone(&parent),
            pending: Vec::new(),
            stderr: true,
        }));
        engine.set_display(Box::new(NotebookDisplay {
            outgoing: outgoing.clone(),
            parent: Rc::clone(&parent),
            progress_shown: HashSet::new(),
            tag: format!("{:08x}", rand::random::<u32>()),
        }));
        Session {
            engine,
            outgoing,
            interrupt,
            parent,
            count: 0,
            failed_at: DateTime::<Utc>::MIN_UTC,
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
        *self.parent.borrow_mut() = Some(message.clone());
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
        publish(&self.outgoing, &self.parent, content.into());
    }

    fn reply(&self, request: &JupyterMessage, content: impl Into<JupyterMessageContent>) {
        let message = JupyterMessage::new(content.into(), Some(request));
        let _ = self.outgoing.send(ToWire::Shell(message));
    }

    /// Handles one request; true when it was a cell that failed and asked
    /// to stop on error.
    fn handle(&mut self, request: JupyterMessage) -> bool {
        *self.parent.borrow_mut() = Some(request.clone());
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
                let (start, end, matches) = self.complete(&complete.code, complete.cursor_pos);
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
                let incomplete = crate::repl::needs_more_input(&check.code);
                self.reply(
                    &request,
                    IsCompleteReply {
                        status: if incomplete {
                            IsCompleteReplyStatus::Incomplete
                        } else {
                            IsCompleteReplyStatus::Complete
                        },
                        indent: if incomplete {
                            "  ".into()
                        } else {
                            String::new()
                        },
                    },
                );
            }
            JupyterMessageContent::HistoryRequest(_) => self.reply(
                &request,
                HistoryReply {
                    history: Vec::new(),
                    status: ReplyStatus::Ok,
                    error: None,
                },
            ),
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

    /// Runs a cell and answers it; false when it failed.
    fn execute(&mut self, request: &JupyterMessage, execute: &ExecuteRequest) -> bool {
        if !execute.silent {
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
        let outcome = self.run_cell(&execute.code, count.0);
        let error = match outcome {
            Ok(Some(data)) if !execute.silent => {
                self.publish(ExecuteResult::new(count, data));
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
                payload: Vec::new(),
                user_expressions: Some(Default::default()),
                error,
            },
        );
        succeeded
    }

    /// Runs one cell: Lisp forms, or a command line (`:doc NAME`,
    /// `:time FORMS`). Gives the value's bundle, if it has one to show.
    fn run_cell(&mut self, code: &str, count: usize) -> Result<Option<Media>, ReplyError> {
        let name = format!("<cell {count}>");
        let trimmed = code.trim_start();
        let Some(command) = trimmed.strip_prefix(':') else {
            let value = self.engine.eval_named(code, &name).map_err(cell_error)?;
            return Ok(self.bundle(&value));
        };
        let (command, argument) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        let argument = argument.trim();
        match command {
            "doc" if !argument.is_empty() => match self.engine.doc(argument) {
                Some(text) => Ok(Some(Media::new(vec![MediaType::Plain(text)]))),
                None => Err(command_error(format!("{argument} is not defined"))),
            },
            "time" if !argument.is_empty() => {
                let started = Instant::now();
                let result = self.engine.eval_named(argument, &name);
                let elapsed = format_duration(started.elapsed().as_secs_f64());
                // Where `(time ...)` writes too: the error stream.
                self.publish(StreamContent::stderr(&format!("time: {elapsed}\n")));
                Ok(self.bundle(&result.map_err(cell_error)?))
            }
            _ => Err(command_error(format!(
                "unknown command :{command}; a notebook cell may start with :doc NAME or :time FORMS"
            ))),
        }
    }

    fn bundle(&self, value: &Value) -> Option<Media> {
        (!matches!(value, Value::Void)).then(|| value_bundle(&self.engine, value))
    }

    /// Completion of the name before `cursor` (in characters): its start,
    /// its end and the bound names and special forms it begins.
    fn complete(&self, code: &str, cursor: usize) -> (usize, usize, Vec<String>) {
        let chars: Vec<char> = code.chars().collect();
        let end = cursor.min(chars.len());
        let start = (0..end)
            .rev()
            .take_while(|&i| is_word_char(chars[i]))
            .last()
            .unwrap_or(end);
        let prefix: String = chars[start..end].iter().collect();
        let mut names: Vec<String> = self
            .engine
            .global_names()
            .into_iter()
            .map(str::to_string)
            .chain(
                crate::lisp::analyze::SPECIAL_FORMS
                    .iter()
                    .map(|(name, _, _)| name.to_string()),
            )
            .filter(|name| name.starts_with(&prefix))
            .collect();
        names.sort_unstable();
        names.dedup();
        (start, end, names)
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

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !"()[]{}\"';`,".contains(c)
}

/// The word around `cursor` (in characters): start, end and text.
fn word_at(code: &str, cursor: usize) -> Option<(usize, usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let cursor = cursor.min(chars.len());
    let mut start = cursor;
    while start > 0 && is_word_char(chars[start - 1]) {
        start -= 1;
    }
    let mut end = cursor;
    while end < chars.len() && is_word_char(chars[end]) {
        end += 1;
    }
    (start < end).then(|| (start, end, chars[start..end].iter().collect()))
}

/// Program output (or, with `stderr`, warnings and `eprintln`) as
/// `stream` messages: whole lines as they are written, the rest when
/// flushed.
struct StreamWriter {
    outgoing: Outgoing,
    parent: Parent,
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
            publish(&self.outgoing, &self.parent, content.into());
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
    outgoing: Outgoing,
    parent: Parent,
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
        publish(&self.outgoing, &self.parent, content);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_the_cursor_is_found_inside_and_at_the_end() {
        assert_eq!(word_at("(grad f)", 3), Some((1, 5, "grad".into())));
        assert_eq!(word_at("(grad f)", 5), Some((1, 5, "grad".into())));
        assert_eq!(word_at("(λx 1)", 2), Some((1, 3, "λx".into())));
        assert_eq!(word_at("( )", 1), None);
    }
}

//! `read-line` in a notebook: an `input_request` on the stdin channel to
//! the client of the running cell, answered by its `input_reply`.
//!
//! A cell whose request says `allow_stdin: false` (nbclient, or a front
//! end without an input box) gets an error saying so instead of a wait
//! that cannot end. An interrupt ends the wait.

use super::publisher::Publisher;
use crate::input::LineInput;
use jupyter_protocol::InputRequest;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How often a wait for input looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(50);

/// The engine's [`LineInput`] in the kernel.
pub struct NotebookInput {
    pub publisher: Publisher,
    /// The text of each input reply, from the wire thread.
    pub replies: Receiver<String>,
    /// Whether the request being run accepts input requests.
    pub allowed: Rc<Cell<bool>>,
    pub interrupt: Arc<AtomicBool>,
}

impl LineInput for NotebookInput {
    fn read_line(&mut self, prompt: &str) -> Result<Option<String>, String> {
        if !self.allowed.get() {
            return Err(
                "read-line: this front end does not take input (the cell was run with allow_stdin false)"
                    .to_string(),
            );
        }
        // A reply that came after its request was given up on is stale.
        while self.replies.try_recv().is_ok() {}
        let request = InputRequest {
            prompt: prompt.to_string(),
            password: false,
        };
        if !self.publisher.ask(request) {
            return Err("read-line: the kernel has no client to ask for input".to_string());
        }
        loop {
            match self.replies.recv_timeout(POLL) {
                Ok(line) => return Ok(Some(line)),
                Err(RecvTimeoutError::Timeout) if self.interrupt.load(Ordering::Relaxed) => {
                    return Err("interrupted while waiting for input".to_string());
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("read-line: the kernel's stdin channel closed".to_string());
                }
            }
        }
    }
}

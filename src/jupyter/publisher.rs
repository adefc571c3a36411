//! How the engine side sends messages: replies on the shell channel,
//! input requests on stdin, and everything else on IOPub as a child of
//! the request being handled.
//!
//! Where standard output is captured ([`super::capture`]), each message
//! but a `stdout` stream waits for the output printed before it to go out
//! first ([`super::capture::Capture::fence`]), so a cell's printed lines
//! come before its result, its charts and its reply.

use super::capture::Capture;
use super::wire::{Outgoing, ToWire};
use jupyter_protocol::{JupyterMessage, JupyterMessageContent, StreamContent};
use std::sync::{Arc, Mutex};

/// A cloneable handle for sending messages of the current request.
#[derive(Clone)]
pub struct Publisher {
    outgoing: Outgoing,
    parent: Arc<Mutex<Option<JupyterMessage>>>,
    capture: Option<Arc<Capture>>,
}

impl Publisher {
    /// Sends to `outgoing`, with no request yet and no capture.
    pub fn new(outgoing: Outgoing) -> Publisher {
        Publisher {
            outgoing,
            parent: Arc::new(Mutex::new(None)),
            capture: None,
        }
    }

    /// The same publisher, fencing `capture` before each message.
    pub fn with_capture(&self, capture: Arc<Capture>) -> Publisher {
        Publisher {
            capture: Some(capture),
            ..self.clone()
        }
    }

    /// Makes `request` the parent of the messages sent from now on.
    pub fn set_parent(&self, request: &JupyterMessage) {
        if let Ok(mut parent) = self.parent.lock() {
            *parent = Some(request.clone());
        }
    }

    /// The request being handled.
    pub fn parent(&self) -> Option<JupyterMessage> {
        self.parent.lock().ok().and_then(|parent| parent.clone())
    }

    fn fence(&self) {
        if let Some(capture) = &self.capture {
            capture.fence();
        }
    }

    /// Publishes `content` on IOPub.
    pub fn publish(&self, content: impl Into<JupyterMessageContent>) {
        self.fence();
        self.send_iopub(content.into());
    }

    /// Publishes program output as a `stdout` stream, without a fence.
    pub fn stdout(&self, text: &str) {
        self.send_iopub(StreamContent::stdout(text).into());
    }

    fn send_iopub(&self, content: JupyterMessageContent) {
        let message = JupyterMessage::new(content, self.parent().as_ref());
        let _ = self.outgoing.send(ToWire::IoPub(message));
    }

    /// Answers `request` on the shell channel.
    pub fn reply(&self, request: &JupyterMessage, content: impl Into<JupyterMessageContent>) {
        self.fence();
        let message = JupyterMessage::new(content.into(), Some(request));
        let _ = self.outgoing.send(ToWire::Shell(message));
    }

    /// Sends `content` on the stdin channel to the client of the current
    /// request; false when there is none.
    pub fn ask(&self, content: impl Into<JupyterMessageContent>) -> bool {
        self.fence();
        let Some(parent) = self.parent() else {
            return false;
        };
        let message = JupyterMessage::new(content.into(), Some(&parent));
        self.outgoing.send(ToWire::Stdin(message)).is_ok()
    }
}

//! The Jupyter kernel: `epsilon kernel install` registers it with Jupyter
//! (a kernelspec, [`install`]), and Jupyter starts `epsilon kernel
//! --connection-file F` for each notebook ([`serve`]).
//!
//! Two threads share the work. The wire thread ([`wire`], on tokio) owns
//! the five ZeroMQ sockets through `jupyter-zmq-client`, which frames and
//! signs every message and checks every incoming signature (HMAC-SHA256
//! with the connection file's key: a message with a bad signature is
//! dropped and logged, and the kernel carries on). It answers heartbeats
//! and the control channel itself, so an interrupt or a shutdown arrives
//! while a cell runs. The engine thread ([`session`]) owns the [`Engine`]
//! and handles shell requests one at a time: it runs cells, completes
//! names and keywords ([`complete`]), inspects names, answers history
//! requests ([`history`]), asks for input lines ([`stdin`]), and sends
//! replies, printed output (the process's standard output, captured:
//! [`capture`]), values and rich items ([`rich`]: LaTeX formulas, HTML
//! tables of tensors, charts, progress bars) back to the wire thread
//! through a [`publisher`], and the wire thread writes them in order.
//!
//! This module is a front end, like the REPL: it uses the engine's public
//! API and [`crate::display`], and nothing under it reaches back into it.

mod capture;
mod complete;
mod connection;
mod history;
mod incoming;
mod install;
mod publisher;
mod rich;
mod session;
mod stdin;
mod wire;

pub use connection::read_connection_file;
pub use install::{InstallOptions, install};

use crate::Engine;
use std::path::Path;

/// Serves one notebook: binds the sockets named in `connection_file`, then
/// runs requests until a shutdown request arrives. An error (an unreadable
/// or malformed connection file, a port that cannot be bound) is returned
/// as a sentence for the command line.
pub fn serve(engine: Engine, connection_file: &Path) -> Result<(), String> {
    let info = read_connection_file(connection_file)?;
    let interrupt = engine.interrupt_handle();
    // Front ends whose kernelspec says interrupt_mode "signal" send SIGINT.
    let on_signal = interrupt.clone();
    ctrlc::set_handler(move || on_signal.store(true, std::sync::atomic::Ordering::Relaxed))
        .map_err(|err| format!("cannot handle interrupt signals: {err}"))?;
    let (to_engine, requests) = std::sync::mpsc::channel();
    let (input_replies, replies) = std::sync::mpsc::channel();
    let outgoing = wire::start(info, interrupt.clone(), to_engine, input_replies)?;
    session::Session::new(engine, outgoing, interrupt, replies).run(requests);
    Ok(())
}

/// What the kernel says about itself in `kernel_info_reply`.
fn kernel_info() -> jupyter_protocol::KernelInfoReply {
    use jupyter_protocol::{CodeMirrorMode, KernelInfoReply, LanguageInfo, ReplyStatus};
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "epsilon".to_string(),
        implementation_version: env!("CARGO_PKG_VERSION").to_string(),
        language_info: LanguageInfo {
            name: "epsilon".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            mimetype: Some("text/x-scheme".to_string()),
            file_extension: Some(".lisp".to_string()),
            pygments_lexer: Some("scheme".to_string()),
            codemirror_mode: Some(CodeMirrorMode::Simple("scheme".to_string())),
            nbconvert_exporter: None,
        },
        banner: format!(
            "Epsilon {}: a differentiation engine inside a small Lisp. (doc 'NAME) or Shift-Tab documents a name.",
            env!("CARGO_PKG_VERSION")
        ),
        help_links: Vec::new(),
        debugger: false,
        error: None,
    }
}

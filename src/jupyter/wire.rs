//! The wire thread: the kernel's ZeroMQ sockets, on a small tokio runtime.
//!
//! Shell requests go to the engine thread in arrival order
//! ([`ToEngine`]), read by [`super::incoming`]; everything the engine
//! sends back ([`ToWire`]) is written by one task, so replies and output
//! keep their order. Input replies on the stdin channel go to the engine
//! on a channel of their own, for the `read-line` waiting for them.
//! Heartbeats and the control channel (kernel info, interrupt, shutdown)
//! are answered here without the engine, which may be busy with a cell.
//!
//! IOPub is an XPUB socket: the writer task also reads its subscriptions
//! and greets each with an `iopub_welcome` message, so a client knows when
//! it is subscribed and no output is lost to it from then on.

use jupyter_protocol::{
    ConnectionInfo, InterruptReply, IoPubWelcome, JupyterMessage, JupyterMessageContent,
    ReplyStatus, ShutdownReply,
};
use jupyter_zmq_client::{
    KernelControlConnection, KernelHeartbeatConnection, KernelIoPubXPubConnection,
    KernelShellConnection, KernelStdinConnection, RuntimeError, SubscriptionEvent,
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_xpub_connection, create_kernel_shell_connection,
    create_kernel_stdin_connection,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What the wire thread hands the engine thread.
pub enum ToEngine {
    /// A shell request, signature already checked.
    Shell(Box<JupyterMessage>),
    /// A shutdown request arrived (already answered): stop.
    Shutdown,
}

/// What the engine thread sends out.
pub enum ToWire {
    /// A reply on the shell channel.
    Shell(JupyterMessage),
    /// A broadcast on the IOPub channel (status, output, results).
    IoPub(JupyterMessage),
    /// An input request on the stdin channel.
    Stdin(JupyterMessage),
}

/// The sending end the engine thread writes to.
pub type Outgoing = UnboundedSender<ToWire>;

/// How long a shut-down kernel waits for its engine to stop before it
/// leaves anyway (a cell may be in a long call that does not check for
/// interrupts).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Binds the sockets of `info` on a new thread and starts serving them;
/// the text of each input reply goes to `input_replies`. Returns once
/// they are bound (or failed to bind).
pub fn start(
    info: ConnectionInfo,
    interrupt: Arc<AtomicBool>,
    to_engine: Sender<ToEngine>,
    input_replies: Sender<String>,
) -> Result<Outgoing, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("epsilon-kernel-wire")
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the kernel's network thread: {err}"))?;
    let (outgoing, to_wire) = unbounded_channel();
    let (bound, bound_result) = std::sync::mpsc::channel();
    let session_id = session_id();
    std::thread::Builder::new()
        .name("epsilon-kernel-wire".to_string())
        .spawn(move || {
            runtime.block_on(async move {
                match Sockets::bind(&info, &session_id).await {
                    Ok(sockets) => {
                        let _ = bound.send(Ok(()));
                        sockets
                            .serve(to_wire, interrupt, to_engine, input_replies)
                            .await;
                    }
                    Err(err) => {
                        let _ = bound.send(Err(err));
                    }
                }
            })
        })
        .map_err(|err| format!("cannot start the kernel's network thread: {err}"))?;
    match bound_result.recv() {
        Ok(Ok(())) => Ok(outgoing),
        Ok(Err(err)) => Err(err),
        Err(_) => Err("the kernel's network thread stopped while binding".to_string()),
    }
}

/// A random session id for the messages this kernel signs.
fn session_id() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}

/// The five sockets of one kernel.
struct Sockets {
    shell: KernelShellConnection,
    iopub: KernelIoPubXPubConnection,
    control: KernelControlConnection,
    /// Input requests of `read-line` and their replies.
    stdin: KernelStdinConnection,
    heartbeat: KernelHeartbeatConnection,
}

impl Sockets {
    async fn bind(info: &ConnectionInfo, session_id: &str) -> Result<Self, String> {
        let failed = |channel: &str, port: u16, err: RuntimeError| {
            format!(
                "cannot bind the {channel} channel to {}:{port}: {err}",
                info.ip
            )
        };
        Ok(Sockets {
            shell: create_kernel_shell_connection(info, session_id)
                .await
                .map_err(|err| failed("shell", info.shell_port, err))?,
            iopub: create_kernel_iopub_xpub_connection(info, session_id)
                .await
                .map_err(|err| failed("iopub", info.iopub_port, err))?,
            control: create_kernel_control_connection(info, session_id)
                .await
                .map_err(|err| failed("control", info.control_port, err))?,
            stdin: create_kernel_stdin_connection(info, session_id)
                .await
                .map_err(|err| failed("stdin", info.stdin_port, err))?,
            heartbeat: create_kernel_heartbeat_connection(info)
                .await
                .map_err(|err| failed("heartbeat", info.hb_port, err))?,
        })
    }

    /// Serves until the engine thread goes away.
    async fn serve(
        self,
        mut to_wire: UnboundedReceiver<ToWire>,
        interrupt: Arc<AtomicBool>,
        to_engine: Sender<ToEngine>,
        input_replies: Sender<String>,
    ) {
        let Sockets {
            shell,
            mut iopub,
            control,
            stdin,
            mut heartbeat,
        } = self;
        let (mut shell_writer, mut shell_reader) = shell.split();
        let (mut stdin_writer, mut stdin_reader) = stdin.split();
        tokio::spawn(async move {
            loop {
                // Reading a subscription is cancel-safe: one that arrives
                // while a message is being sent waits in the socket.
                let sent = tokio::select! {
                    item = to_wire.recv() => match item {
                        Some(ToWire::Shell(message)) => shell_writer.send(message).await,
                        Some(ToWire::IoPub(message)) => iopub.send(message).await,
                        Some(ToWire::Stdin(message)) => stdin_writer.send(message).await,
                        None => return,
                    },
                    event = iopub.recv_subscription() => match event {
                        Ok(SubscriptionEvent::Subscribe(topic)) => {
                            let welcome = JupyterMessage::new(IoPubWelcome::new(topic), None);
                            iopub.send(welcome).await
                        }
                        Ok(SubscriptionEvent::Unsubscribe(_)) => Ok(()),
                        Err(err) => {
                            log(&format!("iopub subscription: {err}"));
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(())
                        }
                    },
                };
                if let Err(err) = sent {
                    log(&format!("cannot send a message: {err}"));
                }
            }
        });
        tokio::spawn(async move {
            loop {
                if let Err(err) = heartbeat.single_heartbeat().await {
                    log(&format!("heartbeat: {err}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        tokio::spawn(async move {
            loop {
                match super::incoming::read(&mut stdin_reader).await {
                    Ok(message) => {
                        if let JupyterMessageContent::InputReply(reply) = message.content {
                            let _ = input_replies.send(reply.value);
                        }
                    }
                    Err(err) => rejected("stdin", &err).await,
                }
            }
        });
        tokio::spawn(control_loop(control, interrupt, to_engine.clone()));
        loop {
            match super::incoming::read(&mut shell_reader).await {
                Ok(message) => {
                    if to_engine.send(ToEngine::Shell(Box::new(message))).is_err() {
                        return;
                    }
                }
                Err(err) => rejected("shell", &err).await,
            }
        }
    }
}

/// Answers the control channel: kernel info, interrupts and shutdown.
async fn control_loop(
    mut control: KernelControlConnection,
    interrupt: Arc<AtomicBool>,
    to_engine: Sender<ToEngine>,
) {
    loop {
        let message = match control.read().await {
            Ok(message) => message,
            Err(err) => {
                rejected("control", &err).await;
                continue;
            }
        };
        let reply = match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                super::kernel_info().as_child_of(&message)
            }
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt.store(true, Ordering::Relaxed);
                InterruptReply::new().as_child_of(&message)
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                interrupt.store(true, Ordering::Relaxed);
                let reply = ShutdownReply {
                    restart: request.restart,
                    status: ReplyStatus::Ok,
                    error: None,
                }
                .as_child_of(&message);
                if let Err(err) = control.send(reply).await {
                    log(&format!("cannot answer the shutdown request: {err}"));
                }
                let _ = to_engine.send(ToEngine::Shutdown);
                tokio::time::sleep(SHUTDOWN_GRACE).await;
                log("the running cell did not stop after the shutdown request; exiting");
                std::process::exit(0);
            }
            _ => continue,
        };
        if let Err(err) = control.send(reply).await {
            log(&format!("cannot answer on the control channel: {err}"));
        }
    }
}

/// Logs a message that could not be read (a bad signature, a malformed
/// frame) and goes on. A socket error gets a short pause so a broken
/// socket cannot spin.
async fn rejected(channel: &str, err: &RuntimeError) {
    match err {
        RuntimeError::VerifyError(_) => log(&format!(
            "rejected a message on the {channel} channel: its signature does not match the connection file's key"
        )),
        RuntimeError::ZmqError(_) => {
            log(&format!("{channel} channel: {err}"));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        _ => log(&format!(
            "rejected a malformed message on the {channel} channel: {err}"
        )),
    }
}

/// The kernel's log: standard error, which Jupyter shows in its own log.
fn log(text: &str) {
    eprintln!("epsilon kernel: {text}");
}

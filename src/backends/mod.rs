//! Backends execute tapes. The [`Backend`] trait is the one interface a
//! device offers: run a whole tape on host values, with transfers at the
//! tape's boundaries only. `cpu` implements it with ndarray, rayon and
//! native kernels (`cpu::strategy` chooses how each program runs); `cuda`
//! implements it over device memory (its `Machine` is the device layer
//! underneath, which a simulated device also implements for tests).
//! `select` and `run` pick the backend for the process; `device_stats`
//! counts what a device did.
//!
//! **Architecture invariant:** backends know tapes (`crate::tape`) and the
//! IR's operations, never e-graphs, differentiation requests or Lisp.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device_stats;
pub mod preflight;

use crate::ir::shape::show;
use crate::tape::Tape;
use cpu::{Buf, Cpu};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Tapes run on the CPU.
const CPU: u8 = 0;
/// Tapes run on CUDA.
const CUDA_ONLY: u8 = 1;
/// Tapes run on CUDA where a device opens at the first run, else on the
/// CPU (the default: nothing is probed until a tape runs).
const AUTO: u8 = 2;

/// Where tapes run, for the whole process (each thread opens its own
/// device handle when it first runs a tape there). The library starts on
/// the CPU; the `epsilon` binary starts in `auto` ([`prefer_auto`]).
static MODE: AtomicU8 = AtomicU8::new(CPU);

/// A device opened for this thread, or why it could not be.
type Opened = Result<Rc<dyn Backend>, Rc<str>>;

thread_local! {
    /// This thread's CUDA device, or why it cannot be opened, once tried.
    static CUDA: RefCell<Option<Opened>> = const { RefCell::new(None) };
    /// A runner that replaces the chosen backend on this thread (tests run
    /// tapes on a simulated device with it).
    static OVERRIDE: RefCell<Option<Rc<dyn Backend>>> = RefCell::new(None);
}

/// A device that runs tapes: whole tapes on host values, inputs copied to
/// the device and results back, so transfers happen only at tape
/// boundaries.
pub trait Backend {
    /// The backend's name, as `set-backend!` spells it.
    fn name(&self) -> &'static str;
    /// Runs `tape` on `inputs` (one per tape input, of the tape's input
    /// shapes) and returns its outputs.
    fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError>;
}

/// This thread's CUDA device, opening it the first time (a failure is
/// remembered too: libraries do not appear while a process runs).
fn cuda_device() -> Result<Rc<dyn Backend>, Rc<str>> {
    CUDA.with(|slot| {
        slot.borrow_mut()
            .get_or_insert_with(|| {
                open_cuda().map_err(|reason| {
                    Rc::from(format!("the CUDA backend cannot be used: {reason}"))
                })
            })
            .clone()
    })
}

/// Opens CUDA device 0, or says what is missing.
#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Rc<dyn Backend>, String> {
    match cuda::Cuda::open() {
        Ok(device) => Ok(Rc::new(device)),
        Err(reason) => Err(reason.to_string()),
    }
}

/// A build without the `cuda` feature has no CUDA backend.
#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Rc<dyn Backend>, String> {
    Err(
        "this build of Epsilon has no CUDA support (it was built without the `cuda` feature)"
            .into(),
    )
}

/// Makes tapes run under `auto` decided lazily: on CUDA where a device
/// opens when the first tape runs, else on the CPU. Nothing is probed
/// now (the `epsilon` binary's default, so start-up stays fast).
pub fn prefer_auto() {
    MODE.store(AUTO, Ordering::Relaxed);
}

/// Chooses where tapes run from now on: `cpu`, `cuda` or `auto` (as
/// `--backend`, `EPSILON_BACKEND` and `set-backend!` spell it); gives the
/// backend chosen, or why it cannot be used here. `auto` is CUDA where a
/// device can be opened (driver, device, NVRTC and cuBLAS all present),
/// else the CPU; `cuda` says what is missing.
///
/// Without any choice a library user's tapes run on the CPU; the
/// `epsilon` binary calls [`prefer_auto`].
pub fn select(name: &str) -> Result<&'static str, String> {
    let mode = match name {
        "cpu" => CPU,
        "cuda" => {
            cuda_device().map_err(|e| e.to_string())?;
            CUDA_ONLY
        }
        // Decided now, so the answer can be given; a thread whose device
        // does not open falls back to the CPU.
        "auto" => AUTO,
        other => {
            return Err(format!(
                "unknown backend {other}: the backends are cpu, cuda and auto"
            ));
        }
    };
    MODE.store(mode, Ordering::Relaxed);
    Ok(active())
}

/// The name of the backend tapes run on.
pub fn active() -> &'static str {
    if let Some(name) = OVERRIDE.with(|o| o.borrow().as_ref().map(|r| r.name())) {
        return name;
    }
    match MODE.load(Ordering::Relaxed) {
        CUDA_ONLY => "cuda",
        AUTO if cuda_device().is_ok() => "cuda",
        _ => "cpu",
    }
}

/// Runs `tape` on `inputs` on the chosen backend.
pub fn run(tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
    if let Some(runner) = OVERRIDE.with(|o| o.borrow().clone()) {
        return runner.run(tape, inputs);
    }
    match MODE.load(Ordering::Relaxed) {
        CUDA_ONLY => cuda_device()
            .map_err(|e| BackendError::new(e.to_string()))?
            .run(tape, inputs),
        AUTO => match cuda_device() {
            Ok(device) => device.run(tape, inputs),
            Err(_) => run_on_host(tape, inputs),
        },
        _ => run_on_host(tape, inputs),
    }
}

/// Runs `tape` on the CPU once its memory plan fits (`preflight`).
fn run_on_host(tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
    preflight::check(tape)?;
    Cpu.run(tape, inputs)
}

/// Makes this thread run tapes with `runner` (or, with `None`, on the
/// chosen backend again).
pub fn override_backend(runner: Option<Rc<dyn Backend>>) {
    OVERRIDE.with(|o| *o.borrow_mut() = runner);
}

/// Checks that inputs of these shapes fit `tape`.
pub fn check_inputs<'a>(
    tape: &Tape,
    shapes: impl ExactSizeIterator<Item = &'a [usize]>,
) -> Result<(), BackendError> {
    if shapes.len() != tape.input_shapes.len() {
        return Err(BackendError::new(format!(
            "the tape takes {} inputs, got {}",
            tape.input_shapes.len(),
            shapes.len()
        )));
    }
    for (k, (shape, expected)) in shapes.zip(&tape.input_shapes).enumerate() {
        if shape != &expected[..] {
            return Err(BackendError::new(format!(
                "input {k} has shape {}, the tape was compiled for {}",
                show(shape),
                show(expected)
            )));
        }
    }
    Ok(())
}

/// A failure while running a tape (a device error, a wrong input shape,
/// an operation of the table refusing its values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// What went wrong.
    pub message: String,
    /// For a failing operation of the table, where it was called
    /// (`crate::ir::ops::Site`; 0 when unknown).
    pub site: u32,
    /// Whether the message is the program's own (a `while-loop`'s
    /// `:on-max-steps`), shown as it is.
    pub program: bool,
}

impl BackendError {
    /// An error with `message` and no call site.
    pub fn new(message: impl Into<String>) -> BackendError {
        BackendError {
            message: message.into(),
            site: 0,
            program: false,
        }
    }

    /// A loop running past its step limit: the program's message where it
    /// gave one (`ScanSpec::limit_error`).
    pub fn step_limit(spec: &crate::ir::loops::ScanSpec) -> BackendError {
        BackendError {
            message: spec.limit_error(),
            site: 0,
            program: spec.limit_message.is_some(),
        }
    }

    /// The failure of operation `op` of the table: its name, the kernel's
    /// message and where it was called.
    pub fn from_op(op: &crate::ir::ops::Op, error: crate::ir::ops::OpError) -> BackendError {
        BackendError {
            message: format!("{}: {}", op.name(), error.message),
            site: op.site().0,
            program: false,
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BackendError {}

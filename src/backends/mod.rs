//! Backends execute tapes. The `Backend` trait is what a device must offer:
//! buffers, transfers between host and device, and running a tape's
//! instructions on buffers. `cpu` implements it with ndarray and rayon; a
//! CUDA backend implements the same trait over device memory.
//!
//! Backends know tapes (`crate::tape`) and tensor operations, not Lisp or
//! e-graphs.

pub mod cpu;
pub mod cuda;

use crate::tape::Tape;
use ndarray::ArrayD;
use std::fmt;

/// The backend that `name` asks for (`cpu`, `cuda` or `auto`, as
/// `--backend`, `EPSILON_BACKEND` and `set-backend!` spell it), or why it
/// cannot be used here. `auto` is the CPU until tapes run on CUDA; `cuda`
/// says what is missing (no driver library, no device), or that a device
/// was found but running tapes on it is not built yet.
pub fn choose(name: &str) -> Result<&'static str, String> {
    match name {
        "cpu" | "auto" => Ok("cpu"),
        "cuda" => Err(match cuda::probe() {
            Err(reason) => format!("the CUDA backend cannot be used: {reason}"),
            Ok(device) => format!(
                "a CUDA device was found ({}), but this version of Epsilon cannot run tapes on it yet; use the cpu backend",
                device.name
            ),
        }),
        other => Err(format!(
            "unknown backend {other}: the backends are cpu, cuda and auto"
        )),
    }
}

/// A failure while running a tape (a device error, a wrong input shape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError(pub String);

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BackendError {}

/// Runs tapes on one kind of device.
pub trait Backend {
    /// Device memory holding one tensor.
    type Buffer;

    /// The backend's name, as `set-backend!` spells it.
    fn name(&self) -> &'static str;

    /// Copies a host array to the device.
    fn upload(&self, array: &ArrayD<f64>) -> Result<Self::Buffer, BackendError>;

    /// Copies a device buffer back to the host.
    fn download(&self, buffer: &Self::Buffer) -> Result<ArrayD<f64>, BackendError>;

    /// Runs `tape` on `inputs` (one per tape input, of the tape's input
    /// shapes) and returns its outputs, on the device.
    fn execute(
        &self,
        tape: &Tape,
        inputs: &[Self::Buffer],
    ) -> Result<Vec<Self::Buffer>, BackendError>;

    /// Waits until queued work is done (a no-op where execution is
    /// synchronous).
    fn synchronize(&self) -> Result<(), BackendError> {
        Ok(())
    }
}

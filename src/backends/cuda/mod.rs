//! The CUDA backend: tapes run on an NVIDIA GPU through cudarc.
//!
//! - `probe`: whether CUDA can be used here, and NVRTC compilation, with
//!   every failure a value ([`CudaUnavailable`]).
//! - `kernels`, `reduce`, `structural`: CUDA C source of fused elementwise
//!   groups, reductions and arg-extremes, and operations that move
//!   elements.
//! - `special`: device code of the special functions (`lgamma`, `erf`,
//!   ...), after `crate::scalar`'s.
//! - `launch`: the plan of one instruction (kernel, grid, cuBLAS call).
//! - `machine`: what the executor needs from a device, and device values.
//! - `program`: a tape planned once into a device program (commands over
//!   registers and buffers) and replayed; `execute`, `loops`: running
//!   tapes and loops on any machine through their programs;
//!   `f32_storage`: values kept in f32 storage on the device.
//! - `device`: the machine over cudarc (context, stream, kernel cache by
//!   source hash, caching allocator, cuBLAS).
//! - `runner`: whole tapes on host values (transfers at tape boundaries).
//!
//! CUDA's libraries are loaded at run time (cudarc's `dynamic-loading`):
//! the crate builds, and the binary runs, on machines without a CUDA
//! toolkit, driver or GPU. cudarc panics when a function of a missing
//! library is called, so every entry here checks that the library is
//! present first and turns each failure into a [`CudaUnavailable`].

mod device;
mod execute;
mod f32_storage;
pub mod kernels;
pub mod launch;
mod loops;
pub mod machine;
#[cfg(feature = "nccl")]
mod nccl;
mod probe;
pub mod program;
pub mod reduce;
mod runner;
pub mod special;
pub mod structural;

#[cfg(test)]
mod host_run;
#[cfg(test)]
mod host_sim;
#[cfg(test)]
pub(crate) mod sim;
#[cfg(test)]
mod sim_solver;
#[cfg(test)]
mod tests;

pub use probe::{
    CudaUnavailable, Device, compile, compile_binary, driver_version, needs_binaries, nvrtc_arch,
    nvrtc_available, nvrtc_version, oldest_arch, probe,
};

use super::cpu::Buf;
use super::{Backend, BackendError};
use crate::tape::Tape;
use cudarc::driver::CudaSlice;
use device::CudaDevice;
use machine::{Datum, from_host, to_host};
use ndarray::{ArrayD, IxDyn};

/// A value of a tape run on the GPU: a number on the host or an array in
/// device memory.
pub type DeviceValue = Datum<CudaSlice<f64>>;

/// The CUDA backend on device 0.
pub struct Cuda {
    device: CudaDevice,
}

impl Cuda {
    /// Opens device 0, or says what is missing (driver library, driver,
    /// device, NVRTC, cuBLAS).
    pub fn open() -> Result<Cuda, CudaUnavailable> {
        Ok(Cuda {
            device: CudaDevice::open()?,
        })
    }

    /// The device's name and the number of devices.
    pub fn info(&self) -> &Device {
        &self.device.info
    }

    /// How many distinct kernels have been compiled so far.
    pub fn compiled_kernels(&self) -> usize {
        self.device.compiled_kernels()
    }

    /// Runs `tape` on host `inputs`: copies them to the device, runs every
    /// instruction there, and copies the results back.
    pub fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        runner::run_on(&self.device, tape, inputs)
    }
}

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        Cuda::run(self, tape, inputs)
    }
}

/// Device values, for programs that keep their data on the GPU between
/// tapes.
impl Cuda {
    /// Copies a host array to the device.
    pub fn upload(&self, array: &ArrayD<f64>) -> Result<DeviceValue, BackendError> {
        let data: Vec<f64> = array.iter().copied().collect();
        from_host(&self.device, &data, array.shape())
    }

    /// Copies a device value back to the host.
    pub fn download(&self, buffer: &DeviceValue) -> Result<ArrayD<f64>, BackendError> {
        let data = to_host(&self.device, buffer)?;
        ArrayD::from_shape_vec(IxDyn(buffer.shape()), data)
            .map_err(|e| BackendError::new(format!("a buffer of the wrong size: {e}")))
    }

    /// Runs `tape` on values already on the device; its outputs stay
    /// there.
    pub fn execute(
        &self,
        tape: &Tape,
        inputs: &[DeviceValue],
    ) -> Result<Vec<DeviceValue>, BackendError> {
        execute::run(&self.device, tape, inputs)
    }

    /// Waits until queued work is done.
    pub fn synchronize(&self) -> Result<(), BackendError> {
        self.device.synchronize()
    }
}

/// Runs `tape` on any [`Machine`](machine::Machine) with host values in
/// and out: the CUDA backend's executor, with the device left to the
/// caller (benchmarks measure the executor's host-side cost with a machine
/// that does nothing).
pub fn run_on_machine<M: machine::Machine>(
    machine: &M,
    tape: &Tape,
    inputs: &[Buf],
) -> Result<Vec<Buf>, BackendError> {
    runner::run_on(machine, tape, inputs)
}

/// Compiles generated `source` when NVRTC can be loaded, failing the test
/// with NVRTC's log when it does not compile; says it skipped otherwise.
#[cfg(test)]
pub(crate) fn compiles_if_nvrtc_is_present(source: &str, what: &str) {
    if !nvrtc_available() {
        eprintln!(
            "skipped NVRTC compilation of {what}: {}",
            CudaUnavailable::NoNvrtc
        );
        return;
    }
    match oldest_arch().and_then(|arch| compile(source, arch)) {
        Ok(ptx) => assert!(
            ptx.contains(".visible .entry"),
            "{what}: no entry in the PTX"
        ),
        Err(error) => panic!("{what} does not compile: {error}\n{source}"),
    }
}

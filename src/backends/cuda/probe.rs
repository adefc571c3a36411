//! Whether CUDA can be used on this machine, and NVRTC compilation, with
//! every failure (a missing library, no device, a driver error, a compile
//! error) as a value rather than a panic.

use cudarc::driver::result as driver;
use cudarc::nvrtc::{self, CompileOptions};

/// A CUDA device found by [`probe`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// The device's name, as the driver reports it.
    pub name: String,
    /// How many devices the driver sees.
    pub count: usize,
}

/// Why CUDA cannot be used; `Display` says what is missing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CudaUnavailable {
    /// `libcuda` cannot be loaded.
    #[error(
        "the CUDA driver library (libcuda) was not found: install an NVIDIA driver, or use --backend cpu"
    )]
    NoDriverLibrary,
    /// A driver call failed (its message).
    #[error("the CUDA driver did not start ({0}): check the NVIDIA driver, or use --backend cpu")]
    DriverFailed(String),
    /// The driver sees no device.
    #[error("the CUDA driver found no GPU on this machine: use --backend cpu")]
    NoDevice,
    /// `libnvrtc` cannot be loaded.
    #[error(
        "the NVRTC library (libnvrtc) was not found: install the CUDA toolkit or the `nvidia-cuda-nvrtc-cu12` Python package and put its lib directory on LD_LIBRARY_PATH"
    )]
    NoNvrtc,
    /// `libcublas` cannot be loaded.
    #[error(
        "the cuBLAS library (libcublas) was not found: install the CUDA toolkit or the `nvidia-cublas-cu12` Python package and put its lib directory on LD_LIBRARY_PATH"
    )]
    NoCublas,
    /// NVRTC refused a kernel (its log).
    #[error("NVRTC could not compile a kernel: {0}")]
    CompileFailed(String),
}

/// The first CUDA device, or why there is none. Never panics: the driver
/// library's presence is checked before any call into it.
pub fn probe() -> Result<Device, CudaUnavailable> {
    // SAFETY: `is_culib_present` only tries to open the shared library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(CudaUnavailable::NoDriverLibrary);
    }
    driver::init().map_err(|e| CudaUnavailable::DriverFailed(e.to_string()))?;
    let count =
        driver::device::get_count().map_err(|e| CudaUnavailable::DriverFailed(e.to_string()))?;
    if count < 1 {
        return Err(CudaUnavailable::NoDevice);
    }
    let device =
        driver::device::get(0).map_err(|e| CudaUnavailable::DriverFailed(e.to_string()))?;
    let name = driver::device::get_name(device)
        .map_err(|e| CudaUnavailable::DriverFailed(e.to_string()))?;
    Ok(Device {
        name,
        count: count as usize,
    })
}

/// Whether the NVRTC library can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: `is_culib_present` only tries to open the shared library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles CUDA C `source` to PTX for `arch` (such as `compute_70`), or
/// says why it could not.
pub fn compile(source: &str, arch: &'static str) -> Result<String, CudaUnavailable> {
    if !nvrtc_available() {
        return Err(CudaUnavailable::NoNvrtc);
    }
    let options = CompileOptions {
        arch: Some(arch),
        // IEEE division and square root, no fused multiply-add: the same
        // rounding as the CPU backend's instructions.
        prec_div: Some(true),
        prec_sqrt: Some(true),
        fmad: Some(false),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(source, options)
        .map(|ptx| ptx.to_src())
        .map_err(|error| CudaUnavailable::CompileFailed(compile_message(&error)))
}

/// NVRTC's log when it has one, else the error itself.
fn compile_message(error: &nvrtc::CompileError) -> String {
    match error {
        nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    }
}

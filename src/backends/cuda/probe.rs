//! Whether CUDA can be used on this machine, and NVRTC compilation, with
//! every failure (a missing library, no device, a driver error, a compile
//! error) as a value rather than a panic.

use cudarc::driver::result as driver;
use cudarc::nvrtc::{self, CompileOptions};
use std::sync::OnceLock;

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
    /// NVRTC is of a newer major version than the driver: neither its PTX
    /// nor its cubins would load.
    #[error(
        "NVRTC {nvrtc} is newer than the CUDA {driver} the driver supports, so the kernels it compiles would not load: install an NVRTC of CUDA {driver} or older (for example `pip install nvidia-cuda-nvrtc-cu12=={driver}.*`), or update the NVIDIA driver"
    )]
    NvrtcTooNew {
        /// NVRTC's CUDA version, as `major.minor`.
        nvrtc: String,
        /// The newest CUDA version the driver supports.
        driver: String,
    },
    /// The device is older than the kernels need.
    #[error(
        "{name} has compute capability {major}.{minor}; Epsilon's kernels need 6.0 or newer (double-precision atomicAdd): use --backend cpu"
    )]
    OldDevice {
        /// The device's name.
        name: String,
        /// Compute capability, major.
        major: i32,
        /// Compute capability, minor.
        minor: i32,
    },
    /// A test kernel did not run on the device.
    #[error("a test kernel did not run on the GPU ({0}): use --backend cpu")]
    TestKernelFailed(String),
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

/// The CUDA version of the NVRTC library, as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32), CudaUnavailable> {
    if !nvrtc_available() {
        return Err(CudaUnavailable::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; the call writes two integers.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| CudaUnavailable::CompileFailed(format!("nvrtcVersion: {e:?}")))?;
    Ok((major, minor))
}

/// The newest CUDA version the driver supports, as (major, minor).
pub fn driver_version() -> Result<(i32, i32), CudaUnavailable> {
    // SAFETY: `is_culib_present` only tries to open the shared library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(CudaUnavailable::NoDriverLibrary);
    }
    let mut version = 0;
    // SAFETY: the library is present; the call writes one integer.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| CudaUnavailable::DriverFailed(e.to_string()))?;
    Ok((version / 1000, (version % 1000) / 10))
}

/// What kernels are compiled to for this driver: PTX when NVRTC is not
/// newer than the driver (`Ok(false)`), cubins when it is newer within the
/// same major version (`Ok(true)`: the driver would refuse the PTX), and
/// an error naming the NVRTC to install when it is a newer major version.
pub fn needs_binaries() -> Result<bool, CudaUnavailable> {
    let (nvrtc, driver) = (nvrtc_version()?, driver_version()?);
    if nvrtc.0 > driver.0 {
        return Err(CudaUnavailable::NvrtcTooNew {
            nvrtc: format!("{}.{}", nvrtc.0, nvrtc.1),
            driver: format!("{}.{}", driver.0, driver.1),
        });
    }
    Ok(nvrtc > driver)
}

/// The architectures (as `major * 10 + minor`) the loaded NVRTC compiles
/// for: NVRTC 12 starts at 50, NVRTC 13 at 75.
fn supported_archs() -> Result<Vec<i32>, CudaUnavailable> {
    if !nvrtc_available() {
        return Err(CudaUnavailable::NoNvrtc);
    }
    let failed = |e: cudarc::nvrtc::sys::nvrtcResult| {
        CudaUnavailable::CompileFailed(format!("listing NVRTC's architectures: {e:?}"))
    };
    let mut count = 0;
    // SAFETY: the library is present; the call writes one integer.
    unsafe { cudarc::nvrtc::sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .map_err(|e| failed(e.0))?;
    let mut archs = vec![0; usize::try_from(count).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `count` integers written.
        unsafe { cudarc::nvrtc::sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
            .result()
            .map_err(|e| failed(e.0))?;
    }
    Ok(archs)
}

/// The architecture to compile for on a device of compute capability
/// `major.minor`: the newest NVRTC supports that is not newer than the
/// device (the driver compiles that PTX on for newer devices), such as
/// `compute_86`.
pub fn nvrtc_arch(major: i32, minor: i32) -> Result<String, CudaUnavailable> {
    let device = major * 10 + minor;
    supported_archs()?
        .into_iter()
        .filter(|&a| a <= device)
        .max()
        .map(|a| format!("compute_{a}"))
        .ok_or_else(|| {
            CudaUnavailable::CompileFailed(format!(
                "this NVRTC cannot compile for compute capability {major}.{minor}"
            ))
        })
}

/// The oldest architecture the kernels can be compiled for with the
/// loaded NVRTC: `compute_70`, or NVRTC's oldest where that is newer
/// (NVRTC 13 starts at `compute_75`). What compilation checks without a
/// device (tests, the simulated device) compile for.
pub fn oldest_arch() -> Result<&'static str, CudaUnavailable> {
    static OLDEST: OnceLock<Result<&'static str, CudaUnavailable>> = OnceLock::new();
    OLDEST
        .get_or_init(|| {
            let oldest = supported_archs()?.into_iter().filter(|&a| a >= 70).min();
            let oldest = oldest.ok_or_else(|| {
                CudaUnavailable::CompileFailed(
                    "this NVRTC compiles for no architecture from compute_70 on".to_string(),
                )
            })?;
            Ok(&*Box::leak(format!("compute_{oldest}").into_boxed_str()))
        })
        .clone()
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

/// Compiles CUDA C `source` to a cubin (machine code) for `sm_{arch}`:
/// what a driver older than NVRTC loads (CUDA's minor-version
/// compatibility covers cubins, not PTX).
pub fn compile_binary(source: &str, arch: i32) -> Result<Vec<u8>, CudaUnavailable> {
    use cudarc::nvrtc::{result, sys};
    if !nvrtc_available() {
        return Err(CudaUnavailable::NoNvrtc);
    }
    let failed = |what: &str, e: result::NvrtcError| {
        CudaUnavailable::CompileFailed(format!("{what}: {e:?}"))
    };
    let text = std::ffi::CString::new(source)
        .map_err(|_| CudaUnavailable::CompileFailed("a NUL byte in kernel source".into()))?;
    let program =
        result::create_program(&text, None).map_err(|e| failed("nvrtcCreateProgram", e))?;
    let options = [
        format!("--gpu-architecture=sm_{arch}"),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
        "--fmad=false".to_string(),
    ];
    // SAFETY: `program` was just created and is destroyed once, below.
    let outcome = unsafe {
        match result::compile_program(program, &options) {
            Err(_) => {
                let log = result::get_program_log(program).unwrap_or_default();
                let log: Vec<u8> = log
                    .iter()
                    .map(|&c| c as u8)
                    .take_while(|&c| c != 0)
                    .collect();
                Err(CudaUnavailable::CompileFailed(
                    String::from_utf8_lossy(&log).into_owned(),
                ))
            }
            Ok(()) => {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(program, &mut size)
                    .result()
                    .map_err(|e| failed("nvrtcGetCUBINSize", e))
                    .and_then(|()| {
                        let mut binary = vec![0u8; size];
                        sys::nvrtcGetCUBIN(program, binary.as_mut_ptr().cast())
                            .result()
                            .map(|()| binary)
                            .map_err(|e| failed("nvrtcGetCUBIN", e))
                    })
            }
        }
    };
    // SAFETY: created above, not destroyed before.
    let _ = unsafe { result::destroy_program(program) };
    outcome
}

/// NVRTC's log when it has one, else the error itself.
fn compile_message(error: &nvrtc::CompileError) -> String {
    match error {
        nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    }
}

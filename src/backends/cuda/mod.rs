//! The CUDA backend (issue 7), in progress: what exists so far is finding
//! out whether CUDA can be used here (`probe`), the CUDA C source of fused
//! elementwise groups (`kernels`), reductions (`reduce`) and operations
//! that move elements (`structural`), and their compilation to PTX by
//! NVRTC (`compile`). Running tapes on a device is not built yet; asking
//! for the CUDA backend says so, or says what is missing.
//!
//! CUDA's libraries are loaded at run time (cudarc's `dynamic-loading`):
//! the crate builds, and the binary runs, on machines without a CUDA
//! toolkit, driver or GPU. cudarc panics when a function of a missing
//! library is called, so every entry here checks that the library is
//! present first and turns each failure into a [`CudaUnavailable`].

pub mod kernels;
mod probe;
pub mod reduce;
pub mod structural;

#[cfg(test)]
mod host_run;
#[cfg(test)]
mod host_tests;

pub use probe::{CudaUnavailable, Device, compile, nvrtc_available, probe};

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
    match compile(source, "compute_70") {
        Ok(ptx) => assert!(
            ptx.contains(".visible .entry"),
            "{what}: no entry in the PTX"
        ),
        Err(error) => panic!("{what} does not compile: {error}\n{source}"),
    }
}

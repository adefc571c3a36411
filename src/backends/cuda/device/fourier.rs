//! The FFT library's transform on the CUDA device: cuFFT's double complex
//! `Z2Z`, in place on the device's stream, for [`Routine::Fft`]'s layout
//! (`outer` blocks of `inner` lines of `len` numbers, `inner` apart).
//!
//! Lines next to each other (`inner = 1`) are one batched plan and one
//! call; strided lines are one plan of `inner` lines, called once per
//! block. Plans are made at the first transform of a layout and kept,
//! never destroyed (cudarc's destructor unwraps `cufftDestroy`, as its
//! cuBLAS one does: see `CudaDevice::blas`). Where the cuFFT library
//! cannot be loaded the transform is an error naming it. This code has
//! not yet run on a GPU: the simulated device checks the layout.
//!
//! [`Routine::Fft`]: crate::ir::ops::solver::Routine::Fft

use super::{CudaDevice, int};
use crate::backends::BackendError;
use cudarc::cufft::sys::{self as fft, cufftDoubleComplex, cufftType};
use cudarc::cufft::{CudaFft, FftDirection, result};
use rustc_hash::FxHashMap;
use std::mem::ManuallyDrop;

/// Plans by `(len, inner, lines per call)`, or why one could not be made.
pub type Plans = FxHashMap<(usize, usize, usize), Result<ManuallyDrop<CudaFft>, String>>;

impl CudaDevice {
    /// The transform of the lines of the buffer at `base` (`(outer, len,
    /// inner)`), in place.
    pub(super) fn fft(
        &self,
        base: u64,
        (outer, len, inner): (usize, usize, usize),
        backward: bool,
    ) -> Result<(), BackendError> {
        if len == 0 || outer * inner == 0 {
            return Ok(());
        }
        // SAFETY: `is_culib_present` only tries to open the library.
        if !unsafe { fft::is_culib_present() } {
            return Err(BackendError::new(
                "the cuFFT library (libcufft) cannot be loaded: install the CUDA toolkit's cuFFT",
            ));
        }
        let (lines, calls) = if inner == 1 {
            (outer, 1)
        } else {
            (inner, outer)
        };
        let mut plans = self.plans.borrow_mut();
        let plan = plans
            .entry((len, inner, lines))
            .or_insert_with(|| self.plan(len, inner, lines).map(ManuallyDrop::new))
            .as_ref()
            .map_err(|e| BackendError::new(e.clone()))?;
        let direction = if backward {
            FftDirection::Inverse
        } else {
            FftDirection::Forward
        };
        for block in 0..calls {
            let at = super::solver::at::<cufftDoubleComplex>(base, block * len * inner);
            // SAFETY: the buffer holds `outer * len * inner` numbers (the
            // plan sized it from the same shape) and the plan's lines stay
            // inside the block at `at`; the work is queued on the plan's
            // stream, the device's.
            unsafe { result::exec_z2z(plan.handle(), at, at, direction as i32) }
                .map_err(|e| BackendError::new(format!("cuFFT Z2Z of length {len}: {e:?}")))?;
        }
        Ok(())
    }

    /// A plan of `lines` transforms of length `len` whose elements are
    /// `inner` apart (consecutive lines `len` apart when `inner` is 1,
    /// else next to each other).
    fn plan(&self, len: usize, inner: usize, lines: usize) -> Result<CudaFft, String> {
        let too_large = |e: BackendError| e.message;
        let n = [int(len).map_err(too_large)?];
        let stride = int(inner).map_err(too_large)?;
        let distance = if inner == 1 { n[0] } else { 1 };
        CudaFft::plan_many(
            &n,
            Some(&n),
            stride,
            distance,
            Some(&n),
            stride,
            distance,
            cufftType::CUFFT_Z2Z,
            int(lines).map_err(too_large)?,
            self.stream.clone(),
        )
        .map_err(|e| format!("cuFFT plan of {lines} transforms of length {len}: {e:?}"))
    }
}

//! The solver library's routines on the CUDA device: cuSOLVER's dense
//! LAPACK functions (`potrf`, `getrf`, `getrs`, `geqrf`, `orgqr`,
//! `syevd`, `gesvd`) and cuBLAS's `trsm`, on the device's one stream.
//!
//! A stack of small matrices runs as one call of the batched variant
//! (`batched`); otherwise a batch runs as one call per matrix at its
//! offset, workspace from the device's cache (stream order keeps its
//! reuse safe). The handle is
//! made at the first routine; where the cuSOLVER library cannot be loaded
//! the routine is an error naming it. This code has not yet run on a GPU:
//! the simulated device (`sim_solver`) checks the layouts it assumes.

use super::{CudaDevice, driver_error, int};
use crate::backends::BackendError;
use crate::ir::ops::solver::Routine;
use cudarc::cusolver::DnHandle;
use cudarc::cusolver::sys::{
    self as solver, cublasFillMode_t, cublasOperation_t, cusolverEigMode_t, cusolverStatus_t,
};
use cudarc::driver::{CudaSlice, DevicePtr};
use std::ffi::c_int;
use std::mem::ManuallyDrop;

/// cuSOLVER's handle on the device's stream, or why there is none.
pub type SolverHandle = Result<ManuallyDrop<DnHandle>, String>;

/// A device address as a typed pointer.
pub(super) fn at<T>(base: u64, offset: usize) -> *mut T {
    (base as usize + offset * std::mem::size_of::<T>()) as *mut T
}

pub(super) fn check(status: cusolverStatus_t, what: &str) -> Result<(), BackendError> {
    match status {
        cusolverStatus_t::CUSOLVER_STATUS_SUCCESS => Ok(()),
        other => Err(BackendError::new(format!("cuSOLVER {what}: {other:?}"))),
    }
}

fn fill(upper: bool) -> cublasFillMode_t {
    if upper {
        cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
    } else {
        cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
    }
}

impl CudaDevice {
    /// The cuSOLVER handle, made at first use.
    pub(super) fn solver(&self) -> Result<&DnHandle, BackendError> {
        let handle = self.solver.get_or_init(|| {
            // SAFETY: `is_culib_present` only tries to open the library.
            if !unsafe { solver::is_culib_present() } {
                return Err(
                    "the cuSOLVER library (libcusolver) cannot be loaded: install the CUDA toolkit's cuSOLVER"
                        .to_string(),
                );
            }
            DnHandle::new(self.stream.clone())
                .map(ManuallyDrop::new)
                .map_err(|e| format!("cuSOLVER: {e}"))
        });
        handle
            .as_ref()
            .map(|h| &**h)
            .map_err(|e| BackendError::new(e.clone()))
    }

    /// The device address of `mem`.
    pub(super) fn address(&self, mem: &CudaSlice<f64>) -> u64 {
        let (ptr, _sync) = mem.device_ptr(&self.stream);
        ptr
    }

    /// Workspace of `lwork` numbers.
    pub(super) fn workspace(&self, lwork: c_int) -> Result<CudaSlice<f64>, BackendError> {
        use crate::backends::cuda::machine::Machine;
        self.alloc(usize::try_from(lwork).unwrap_or(0).max(1))
    }

    /// `call(b, workspace)` for each of `batch` matrices, sharing one
    /// workspace of `lwork` numbers, each status checked (`what` names
    /// the routine); the workspace goes back to the cache in any case.
    fn each_matrix(
        &self,
        lwork: c_int,
        batch: usize,
        what: &str,
        mut call: impl FnMut(usize, *mut f64) -> cusolverStatus_t,
    ) -> Result<(), BackendError> {
        use crate::backends::cuda::machine::Machine;
        let work = self.workspace(lwork)?;
        let wp = at::<f64>(self.address(&work), 0);
        let result = (0..batch).try_for_each(|b| check(call(b, wp), what));
        self.release(work);
        result
    }

    /// Runs `routine` (see `Machine::routine`).
    pub(super) fn run_routine(
        &self,
        routine: &Routine,
        reads: &[&CudaSlice<f64>],
        writes: &mut [&mut CudaSlice<f64>],
    ) -> Result<(), BackendError> {
        use crate::backends::cuda::machine::Machine;
        let r: Vec<u64> = reads.iter().map(|m| self.address(m)).collect();
        let w: Vec<u64> = writes.iter().map(|m| self.address(m)).collect();
        let needed = routine.writes();
        if w.len() != needed {
            return Err(BackendError::new(format!(
                "{routine:?} writes {needed} buffers, got {}",
                w.len()
            )));
        }
        if self.run_batched(routine, &r, &w)? {
            return Ok(());
        }
        if let Routine::TriangularSolve {
            m,
            n,
            batch,
            upper,
            transpose,
            shared,
        } = *routine
        {
            return self.triangular_solve(r[0], w[0], (m, n, batch), upper, transpose, shared);
        }
        if let Routine::Fft {
            len,
            inner,
            outer,
            backward,
        } = *routine
        {
            return self.fft(w[0], (outer, len, inner), backward);
        }
        let handle = self.solver()?.cu();
        // SAFETY (every call below): the buffers hold the batch of
        // matrices the routine names (the plan sized them from the same
        // shapes), offsets stay inside them, and all work is queued on the
        // handle's stream in order.
        unsafe {
            match *routine {
                Routine::Cholesky { n, batch, upper } => {
                    let ni = int(n)?;
                    let mut lwork = 0;
                    let a = at::<f64>(w[0], 0);
                    check(
                        solver::cusolverDnDpotrf_bufferSize(
                            handle,
                            fill(upper),
                            ni,
                            a,
                            ni,
                            &mut lwork,
                        ),
                        "potrf_bufferSize",
                    )?;
                    self.each_matrix(lwork, batch, "potrf", |b, wp| {
                        solver::cusolverDnDpotrf(
                            handle,
                            fill(upper),
                            ni,
                            at(w[0], b * n * n),
                            ni,
                            wp,
                            lwork,
                            at(w[1], b),
                        )
                    })?;
                }
                Routine::Lu { n, batch } => {
                    let ni = int(n)?;
                    let mut lwork = 0;
                    check(
                        solver::cusolverDnDgetrf_bufferSize(
                            handle,
                            ni,
                            ni,
                            at(w[0], 0),
                            ni,
                            &mut lwork,
                        ),
                        "getrf_bufferSize",
                    )?;
                    self.each_matrix(lwork, batch, "getrf", |b, wp| {
                        solver::cusolverDnDgetrf(
                            handle,
                            ni,
                            ni,
                            at(w[0], b * n * n),
                            ni,
                            wp,
                            at(w[1], b * n),
                            at(w[2], b),
                        )
                    })?;
                }
                Routine::LuSolve {
                    n,
                    nrhs,
                    batch,
                    transpose,
                    shared,
                } => {
                    let trans = if transpose {
                        cublasOperation_t::CUBLAS_OP_T
                    } else {
                        cublasOperation_t::CUBLAS_OP_N
                    };
                    for b in 0..batch {
                        let f = if shared { 0 } else { b };
                        check(
                            solver::cusolverDnDgetrs(
                                handle,
                                trans,
                                int(n)?,
                                int(nrhs)?,
                                at(r[0], f * n * n),
                                int(n)?,
                                at(r[1], f * n),
                                at(w[0], b * n * nrhs),
                                int(n)?,
                                at(w[1], b),
                            ),
                            "getrs",
                        )?;
                    }
                }
                Routine::Qr { m, n, batch } => {
                    let (mi, ni, k) = (int(m)?, int(n)?, m.min(n));
                    let mut lwork = 0;
                    check(
                        solver::cusolverDnDgeqrf_bufferSize(
                            handle,
                            mi,
                            ni,
                            at(w[0], 0),
                            mi,
                            &mut lwork,
                        ),
                        "geqrf_bufferSize",
                    )?;
                    self.each_matrix(lwork, batch, "geqrf", |b, wp| {
                        solver::cusolverDnDgeqrf(
                            handle,
                            mi,
                            ni,
                            at(w[0], b * m * n),
                            mi,
                            at(w[1], b * k),
                            wp,
                            lwork,
                            at(w[2], b),
                        )
                    })?;
                }
                Routine::QrBasis { m, n, batch } => {
                    let k = m.min(n);
                    let (mi, ki) = (int(m)?, int(k)?);
                    let mut lwork = 0;
                    check(
                        solver::cusolverDnDorgqr_bufferSize(
                            handle,
                            mi,
                            ki,
                            ki,
                            at(w[0], 0),
                            mi,
                            at(r[0], 0),
                            &mut lwork,
                        ),
                        "orgqr_bufferSize",
                    )?;
                    self.each_matrix(lwork, batch, "orgqr", |b, wp| {
                        solver::cusolverDnDorgqr(
                            handle,
                            mi,
                            ki,
                            ki,
                            at(w[0], b * m * n),
                            mi,
                            at(r[0], b * k),
                            wp,
                            lwork,
                            at(w[1], b),
                        )
                    })?;
                }
                Routine::Eigh { n, batch } => {
                    let ni = int(n)?;
                    let vectors = cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;
                    let lower = fill(false);
                    let mut lwork = 0;
                    check(
                        solver::cusolverDnDsyevd_bufferSize(
                            handle,
                            vectors,
                            lower,
                            ni,
                            at(w[0], 0),
                            ni,
                            at(w[1], 0),
                            &mut lwork,
                        ),
                        "syevd_bufferSize",
                    )?;
                    self.each_matrix(lwork, batch, "syevd", |b, wp| {
                        solver::cusolverDnDsyevd(
                            handle,
                            vectors,
                            lower,
                            ni,
                            at(w[0], b * n * n),
                            ni,
                            at(w[1], b * n),
                            wp,
                            lwork,
                            at(w[2], b),
                        )
                    })?;
                }
                Routine::Svd { m, n, batch } => {
                    let (mi, ni) = (int(m)?, int(n)?);
                    let mut lwork = 0;
                    check(
                        solver::cusolverDnDgesvd_bufferSize(handle, mi, ni, &mut lwork),
                        "gesvd_bufferSize",
                    )?;
                    let rwork = self.alloc(n.max(1))?;
                    let rp = at::<f64>(self.address(&rwork), 0);
                    let thin = b'S' as std::ffi::c_schar;
                    let done = self.each_matrix(lwork, batch, "gesvd", |b, wp| {
                        solver::cusolverDnDgesvd(
                            handle,
                            thin,
                            thin,
                            mi,
                            ni,
                            at(w[0], b * m * n),
                            mi,
                            at(w[1], b * n),
                            at(w[2], b * m * n),
                            mi,
                            at(w[3], b * n * n),
                            ni,
                            wp,
                            lwork,
                            rp,
                            at(w[4], b),
                        )
                    });
                    self.release(rwork);
                    done?;
                }
                Routine::TriangularSolve { .. } | Routine::Fft { .. } => {
                    unreachable!("handled above")
                }
            }
        }
        Ok(())
    }

    /// cuBLAS `trsm` from the right, one call per right-hand side.
    fn triangular_solve(
        &self,
        a: u64,
        x: u64,
        (m, n, batch): (usize, usize, usize),
        upper: bool,
        transpose: bool,
        shared: bool,
    ) -> Result<(), BackendError> {
        use cudarc::cublas::sys as blas;
        let uplo = if upper {
            blas::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
        } else {
            blas::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
        };
        let trans = if transpose {
            blas::cublasOperation_t::CUBLAS_OP_T
        } else {
            blas::cublasOperation_t::CUBLAS_OP_N
        };
        let (mi, ni) = (int(m)?, int(n)?);
        let one = 1.0f64;
        let handle = *self.blas.handle();
        for b in 0..batch {
            let f = if shared { 0 } else { b };
            // SAFETY: `a` holds the triangles and `x` the right-hand
            // sides the plan sized; the call is queued on the stream.
            let status = unsafe {
                blas::cublasDtrsm_v2(
                    handle,
                    blas::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                    uplo,
                    trans,
                    blas::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                    mi,
                    ni,
                    &one,
                    at(a, f * n * n),
                    ni,
                    at(x, b * m * n),
                    mi,
                )
            };
            if status != blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                return Err(driver_error(format!("cuBLAS trsm: {status:?}")));
            }
        }
        Ok(())
    }
}

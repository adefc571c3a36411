//! The batched variants of the solver routines, for stacks of small
//! matrices (sides of at most [`SMALL`]), where one call per matrix would
//! cost more in launches than in work: cuSOLVER's `potrfBatched` and its
//! Jacobi methods `syevjBatched` and `gesvdjBatched`, and cuBLAS's
//! `getrfBatched`, `getrsBatched` and `trsmBatched`. Each gives what the
//! per-matrix routine gives (the [`Routine`]'s definition), so the kernels
//! around it do not know which ran.
//!
//! The calls that take arrays of matrix addresses read one uploaded per
//! call; `gesvdjBatched` writes the full `u` and `v`, from which two
//! strided batched products take the thin `u` and `vᵀ` (exactly: the
//! other factor is the identity). QR has no batched variant in cuSOLVER,
//! nor a solve with one factorization shared by the batch (cuBLAS reads
//! one pivot list per matrix): those run one call per matrix. This code
//! has not yet run on a GPU.

use super::solver::{at, check};
use super::{CudaDevice, driver_error, int};
use crate::backends::BackendError;
use crate::backends::cuda::machine::Machine;
use crate::ir::ops::solver::Routine;
use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys::{self as solver, cusolverEigMode_t};
use cudarc::driver::CudaSlice;
use std::ffi::c_int;

/// The largest side run by the batched variants (the Jacobi methods'
/// limit in cuSOLVER); larger matrices are worth a call each.
pub const SMALL: usize = 32;

fn blas_check(status: blas::cublasStatus_t, what: &str) -> Result<(), BackendError> {
    match status {
        blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        other => Err(driver_error(format!("cuBLAS {what}: {other:?}"))),
    }
}

fn blas_op(transpose: bool) -> blas::cublasOperation_t {
    if transpose {
        blas::cublasOperation_t::CUBLAS_OP_T
    } else {
        blas::cublasOperation_t::CUBLAS_OP_N
    }
}

fn blas_fill(upper: bool) -> blas::cublasFillMode_t {
    if upper {
        blas::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
    } else {
        blas::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
    }
}

/// Whether a batch of `batch` matrices of side `side` runs batched.
fn small(side: usize, batch: usize) -> bool {
    batch > 1 && side <= SMALL
}

impl CudaDevice {
    /// Device memory holding the addresses of `batch` matrices, `stride`
    /// numbers apart from `base` (0: one matrix for all).
    fn addresses(
        &self,
        base: u64,
        stride: usize,
        batch: usize,
    ) -> Result<CudaSlice<f64>, BackendError> {
        let list: Vec<f64> = (0..batch)
            .map(|b| f64::from_bits(base + (b * stride * 8) as u64))
            .collect();
        self.upload(&list)
    }

    /// Runs `routine` (reading `r`, writing `w`) as one batched call where
    /// it has one and the matrices are small; `Ok(false)` where the
    /// per-matrix calls should run instead.
    pub(super) fn run_batched(
        &self,
        routine: &Routine,
        r: &[u64],
        w: &[u64],
    ) -> Result<bool, BackendError> {
        match *routine {
            Routine::Cholesky { n, batch, upper } if small(n, batch) => {
                self.potrf_batched(w, n, batch, upper)?
            }
            Routine::Lu { n, batch } if small(n, batch) => self.getrf_batched(w, n, batch)?,
            Routine::LuSolve {
                n,
                nrhs,
                batch,
                transpose,
                shared: false,
            } if small(n, batch) => self.getrs_batched(r, w, (n, nrhs, batch), transpose)?,
            Routine::TriangularSolve {
                m,
                n,
                batch,
                upper,
                transpose,
                shared,
            } if small(n, batch) => {
                self.trsm_batched(r[0], w[0], (m, n, batch), upper, transpose, shared)?
            }
            Routine::Eigh { n, batch } if small(n, batch) => self.syevj_batched(w, n, batch)?,
            Routine::Svd { m, n, batch } if small(m.max(n), batch) => {
                self.gesvdj_batched(w, m, n, batch)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn potrf_batched(
        &self,
        w: &[u64],
        n: usize,
        batch: usize,
        upper: bool,
    ) -> Result<(), BackendError> {
        let handle = self.solver()?.cu();
        let matrices = self.addresses(w[0], n * n, batch)?;
        let fill = if upper {
            solver::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
        } else {
            solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
        };
        // SAFETY: `matrices` holds `batch` addresses of `n x n` matrices
        // inside `w[0]`, `w[1]` has room for `batch` codes; queued in
        // stream order before the addresses go back to the cache.
        let status = unsafe {
            solver::cusolverDnDpotrfBatched(
                handle,
                fill,
                int(n)?,
                at(self.address(&matrices), 0),
                int(n)?,
                at(w[1], 0),
                int(batch)?,
            )
        };
        self.release(matrices);
        check(status, "potrfBatched")
    }

    fn getrf_batched(&self, w: &[u64], n: usize, batch: usize) -> Result<(), BackendError> {
        let matrices = self.addresses(w[0], n * n, batch)?;
        // SAFETY: as in `potrf_batched`; `w[1]` holds `n` pivots per
        // matrix and `w[2]` one code each.
        let status = unsafe {
            blas::cublasDgetrfBatched(
                *self.blas.handle(),
                int(n)?,
                at(self.address(&matrices), 0),
                int(n)?,
                at(w[1], 0),
                at(w[2], 0),
                int(batch)?,
            )
        };
        self.release(matrices);
        blas_check(status, "getrfBatched")
    }

    fn getrs_batched(
        &self,
        r: &[u64],
        w: &[u64],
        (n, nrhs, batch): (usize, usize, usize),
        transpose: bool,
    ) -> Result<(), BackendError> {
        let factors = self.addresses(r[0], n * n, batch)?;
        let sides = self.addresses(w[0], n * nrhs, batch)?;
        let mut invalid: c_int = 0;
        // SAFETY: the factors and pivots of `batch` matrices (from
        // `getrf_batched`'s layout) and `batch` right-hand sides of
        // `n x nrhs`; `invalid` is a host integer cuBLAS sets at once.
        let status = unsafe {
            let status = blas::cublasDgetrsBatched(
                *self.blas.handle(),
                blas_op(transpose),
                int(n)?,
                int(nrhs)?,
                at::<*const f64>(self.address(&factors), 0),
                int(n)?,
                at(r[1], 0),
                at(self.address(&sides), 0),
                int(n)?,
                &mut invalid,
                int(batch)?,
            );
            // The per-matrix routine writes a code per solve: all 0.
            let zeroed =
                cudarc::driver::sys::cuMemsetD32Async(w[1], 0, batch, self.stream.cu_stream());
            if zeroed != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                return Err(driver_error(format!("cuMemsetD32Async: {zeroed:?}")));
            }
            status
        };
        self.release(factors);
        self.release(sides);
        blas_check(status, "getrsBatched")?;
        if invalid != 0 {
            return Err(driver_error(format!(
                "cuBLAS getrsBatched: argument {} is invalid",
                -invalid
            )));
        }
        Ok(())
    }

    fn trsm_batched(
        &self,
        a: u64,
        x: u64,
        (m, n, batch): (usize, usize, usize),
        upper: bool,
        transpose: bool,
        shared: bool,
    ) -> Result<(), BackendError> {
        let triangles = self.addresses(a, if shared { 0 } else { n * n }, batch)?;
        let sides = self.addresses(x, m * n, batch)?;
        let one = 1.0f64;
        // SAFETY: `batch` triangles (or one for all) and right-hand sides
        // of `m x n`, as the per-matrix `trsm` reads them.
        let status = unsafe {
            blas::cublasDtrsmBatched(
                *self.blas.handle(),
                blas::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                blas_fill(upper),
                blas_op(transpose),
                blas::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                int(m)?,
                int(n)?,
                &one,
                at::<*const f64>(self.address(&triangles), 0),
                int(n)?,
                at(self.address(&sides), 0),
                int(m)?,
                int(batch)?,
            )
        };
        self.release(triangles);
        self.release(sides);
        blas_check(status, "trsmBatched")
    }

    fn syevj_batched(&self, w: &[u64], n: usize, batch: usize) -> Result<(), BackendError> {
        let handle = self.solver()?.cu();
        let vectors = cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;
        let lower = solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let (ni, bi) = (int(n)?, int(batch)?);
        let mut params: solver::syevjInfo_t = std::ptr::null_mut();
        // SAFETY: the defaults (tolerance of the machine's precision, 100
        // sweeps, eigenvalues sorted ascending, as `syevd` gives them);
        // `w[0]` holds `batch` matrices, `w[1]` `n` eigenvalues each and
        // `w[2]` a code each; `params` is destroyed after the call is queued.
        unsafe {
            check(solver::cusolverDnCreateSyevjInfo(&mut params), "syevjInfo")?;
            let mut lwork = 0;
            let sized = check(
                solver::cusolverDnDsyevjBatched_bufferSize(
                    handle,
                    vectors,
                    lower,
                    ni,
                    at(w[0], 0),
                    ni,
                    at(w[1], 0),
                    &mut lwork,
                    params,
                    bi,
                ),
                "syevjBatched_bufferSize",
            );
            let done = sized.and_then(|()| {
                let work = self.workspace(lwork)?;
                let status = solver::cusolverDnDsyevjBatched(
                    handle,
                    vectors,
                    lower,
                    ni,
                    at(w[0], 0),
                    ni,
                    at(w[1], 0),
                    at(self.address(&work), 0),
                    lwork,
                    at(w[2], 0),
                    params,
                    bi,
                );
                self.release(work);
                check(status, "syevjBatched")
            });
            solver::cusolverDnDestroySyevjInfo(params);
            done
        }
    }

    /// Each of `batch` matrices `op(a)` (`op` the transpose when
    /// `transpose`; `a` at `(address, rows, stride)`) times the identity
    /// `e` (at `(address, leading dimension)`), into `out` (`(address,
    /// rows, columns)`, packed): a strided batched product that copies
    /// exactly (every term but one is a product by zero).
    fn times_identity(
        &self,
        (a, a_rows, a_stride): (u64, usize, usize),
        transpose: bool,
        (e, e_rows): (u64, usize),
        (out, rows, columns): (u64, usize, usize),
        batch: usize,
    ) -> Result<(), BackendError> {
        let (one, zero) = (1.0f64, 0.0f64);
        let inner = if transpose { rows } else { a_rows };
        // SAFETY: the caller's buffers hold `batch` matrices of these
        // sizes; the call is queued on the handle's stream.
        let status = unsafe {
            blas::cublasDgemmStridedBatched(
                *self.blas.handle(),
                blas_op(transpose),
                blas_op(false),
                int(rows)?,
                int(columns)?,
                int(inner)?,
                &one,
                at(a, 0),
                int(a_rows)?,
                a_stride as i64,
                at(e, 0),
                int(e_rows)?,
                0,
                &zero,
                at(out, 0),
                int(rows)?,
                (rows * columns) as i64,
                int(batch)?,
            )
        };
        blas_check(status, "gemmStridedBatched")
    }

    /// `gesvdjBatched` into full `u` (`m x m`) and `v` (`n x n`), then the
    /// thin `u` (its first `n` columns: `u e`) and `vᵀ` (`vᵀ e`), `e` the
    /// `m x n` identity, by two strided batched products.
    fn gesvdj_batched(
        &self,
        w: &[u64],
        m: usize,
        n: usize,
        batch: usize,
    ) -> Result<(), BackendError> {
        let handle = self.solver()?.cu();
        let vectors = cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;
        let (mi, ni, bi) = (int(m)?, int(n)?, int(batch)?);
        let full_u = self.alloc(batch * m * m)?;
        let full_v = self.alloc(batch * n * n)?;
        let mut identity = vec![0.0; m * n];
        for j in 0..n {
            identity[j + j * m] = 1.0;
        }
        let identity = self.upload(&identity)?;
        let (u, v, e) = (
            self.address(&full_u),
            self.address(&full_v),
            self.address(&identity),
        );
        let mut params: solver::gesvdjInfo_t = std::ptr::null_mut();
        // SAFETY: `w[0]` holds `batch` `m x n` matrices, `w[1]` `n`
        // singular values each, `w[2]` the thin `u`s, `w[3]` the `vᵀ`s,
        // `w[4]` a code each; the temporaries go back to the cache after
        // the calls are queued (stream order keeps that safe).
        let done = unsafe {
            check(
                solver::cusolverDnCreateGesvdjInfo(&mut params),
                "gesvdjInfo",
            )
            .and_then(|()| {
                let mut lwork = 0;
                check(
                    solver::cusolverDnDgesvdjBatched_bufferSize(
                        handle,
                        vectors,
                        mi,
                        ni,
                        at(w[0], 0),
                        mi,
                        at(w[1], 0),
                        at(u, 0),
                        mi,
                        at(v, 0),
                        ni,
                        &mut lwork,
                        params,
                        bi,
                    ),
                    "gesvdjBatched_bufferSize",
                )?;
                let work = self.workspace(lwork)?;
                let status = solver::cusolverDnDgesvdjBatched(
                    handle,
                    vectors,
                    mi,
                    ni,
                    at(w[0], 0),
                    mi,
                    at(w[1], 0),
                    at(u, 0),
                    mi,
                    at(v, 0),
                    ni,
                    at(self.address(&work), 0),
                    lwork,
                    at(w[4], 0),
                    params,
                    bi,
                );
                self.release(work);
                check(status, "gesvdjBatched")?;
                // Thin u: u e (m x n); vᵀ: vᵀ times the top n x n block of
                // e (the identity).
                self.times_identity((u, m, m * m), false, (e, m), (w[2], m, n), batch)?;
                self.times_identity((v, n, n * n), true, (e, m), (w[3], n, n), batch)
            })
        };
        if !params.is_null() {
            // SAFETY: made above, used only by the queued call.
            unsafe { solver::cusolverDnDestroyGesvdjInfo(params) };
        }
        self.release(full_u);
        self.release(full_v);
        self.release(identity);
        done
    }
}

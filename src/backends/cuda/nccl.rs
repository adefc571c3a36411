//! Allreduce of device memory across the ranks of an MPI job through
//! NCCL (cudarc's bindings, the library loaded at run time). The ranks
//! first agree that every one of them can use it (the library loads, and
//! its machine has a device per local rank); otherwise the allreduce
//! falls back to the host kernel on every rank alike. The communicator is
//! made at the first use: rank 0's NCCL id reaches the others by an MPI
//! broadcast. NCCL's work goes on the device's one stream, in order with
//! the kernels around it.

use crate::backends::BackendError;
use crate::distributed::{self, Reduction};
use cudarc::driver::{CudaSlice, CudaStream};
use cudarc::nccl::{Comm, Id, ReduceOp};
use std::cell::OnceCell;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// The NCCL communicator of a device, made on first use. Never dropped
/// (its destructor would call into NCCL at thread exit).
#[derive(Default)]
pub struct Communicator {
    comm: OnceCell<ManuallyDrop<Comm>>,
    usable: OnceCell<bool>,
}

fn nccl_error(error: impl std::fmt::Debug) -> BackendError {
    BackendError::new(format!("NCCL: {error:?}"))
}

fn distributed_error(message: String) -> BackendError {
    BackendError::new(message)
}

impl Communicator {
    /// Whether NCCL can serve this rank: the library loads and the
    /// machine has at least one device per rank on it.
    fn usable_here(&self, devices: usize) -> bool {
        *self.usable.get_or_init(|| {
            // SAFETY: `is_culib_present` only tries to open the library.
            let present = unsafe { cudarc::nccl::sys::is_culib_present() };
            present && distributed::local_size().unwrap_or(1) <= devices
        })
    }

    fn comm(&self, stream: &Arc<CudaStream>) -> Result<&Comm, BackendError> {
        if let Some(comm) = self.comm.get() {
            return Ok(comm);
        }
        let rank = distributed::rank().map_err(distributed_error)?;
        let size = distributed::size().map_err(distributed_error)?;
        let mut bytes = [0u8; 128];
        if rank == 0 {
            let id = Id::new().map_err(nccl_error)?;
            for (byte, &c) in bytes.iter_mut().zip(id.internal()) {
                *byte = c as u8;
            }
        }
        distributed::broadcast_bytes(&mut bytes).map_err(distributed_error)?;
        let mut internal = [0 as std::ffi::c_char; 128];
        for (c, &byte) in internal.iter_mut().zip(&bytes) {
            *c = byte as std::ffi::c_char;
        }
        let comm = Comm::from_rank(stream.clone(), rank, size, Id::uninit(internal))
            .map_err(nccl_error)?;
        let _ = self.comm.set(ManuallyDrop::new(comm));
        self.comm
            .get()
            .map(|c| &**c)
            .ok_or_else(|| BackendError::new("NCCL: the communicator was not kept"))
    }

    /// `src` (a tensor of `shape`) reduced over the ranks into `out`, or
    /// `None` (with `out` dropped) when not every rank can use NCCL.
    pub fn allreduce(
        &self,
        stream: &Arc<CudaStream>,
        devices: usize,
        src: &CudaSlice<f64>,
        mut out: CudaSlice<f64>,
        shape: &[usize],
        reduction: Reduction,
    ) -> Result<Option<CudaSlice<f64>>, BackendError> {
        if !distributed::is_distributed() {
            return Ok(None);
        }
        let here = self.usable_here(devices);
        if !distributed::on_every_rank(here).map_err(distributed_error)? {
            return Ok(None);
        }
        distributed::check_allreduce(shape, reduction).map_err(distributed_error)?;
        let comm = self.comm(stream)?;
        let n: usize = shape.iter().product();
        let op = match reduction {
            Reduction::Sum => ReduceOp::Sum,
            Reduction::Mean => ReduceOp::Avg,
            Reduction::Max => ReduceOp::Max,
            Reduction::Min => ReduceOp::Min,
        };
        comm.all_reduce(&src.slice(0..n), &mut out.slice_mut(0..n), &op)
            .map_err(nccl_error)?;
        distributed::device_collective(n);
        Ok(Some(out))
    }
}

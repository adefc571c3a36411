//! What this rank handed to MPI to send: payload bytes and messages of
//! the collectives and halo exchanges, counted as they go (the shape
//! checks before them are not counted). `mpi-traffic` reads them; the
//! cost model in docs/distributed.md predicts them.

use std::sync::atomic::{AtomicU64, Ordering};

static BYTES: AtomicU64 = AtomicU64::new(0);
static MESSAGES: AtomicU64 = AtomicU64::new(0);
static COLLECTIVES: AtomicU64 = AtomicU64::new(0);
static DEVICE_COLLECTIVES: AtomicU64 = AtomicU64::new(0);

/// Counts of what this rank sent since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Payload bytes: a halo exchange's slabs sent to other ranks, and
    /// each collective's own contribution (an allreduce's tensor, an
    /// allgather's block, a reduce-scatter's blocks).
    pub bytes: u64,
    /// Point-to-point messages of halo exchanges sent to other ranks.
    pub messages: u64,
    /// Collective calls (allreduce, allgather, reduce-scatter).
    pub collectives: u64,
    /// Of those, allreduces run on GPU memory through NCCL.
    pub device_collectives: u64,
}

/// The counts so far.
pub fn traffic() -> Traffic {
    Traffic {
        bytes: BYTES.load(Ordering::Relaxed),
        messages: MESSAGES.load(Ordering::Relaxed),
        collectives: COLLECTIVES.load(Ordering::Relaxed),
        device_collectives: DEVICE_COLLECTIVES.load(Ordering::Relaxed),
    }
}

/// Counts one message of `numbers` f64 values.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn message(numbers: usize) {
    BYTES.fetch_add(8 * numbers as u64, Ordering::Relaxed);
    MESSAGES.fetch_add(1, Ordering::Relaxed);
}

/// Counts one collective contributing `numbers` f64 values.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn collective(numbers: usize) {
    BYTES.fetch_add(8 * numbers as u64, Ordering::Relaxed);
    COLLECTIVES.fetch_add(1, Ordering::Relaxed);
}

/// Counts one collective on device memory (NCCL) of `numbers` values.
#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
pub(crate) fn device_collective(numbers: usize) {
    collective(numbers);
    DEVICE_COLLECTIVES.fetch_add(1, Ordering::Relaxed);
}

//! One program on the ranks of an MPI job (`mpirun -np N epsilon run
//! FILE`): which rank this process is, the collectives that the operation
//! table's `allreduce`, `allgather` and `halo-exchange` entries call, the
//! bytes they sent, and how a job ends (finalized, or aborted on an error).
//!
//! Built with the cargo feature `mpi`, the calls go to the MPI library
//! through rsmpi (`comm.rs`). A process started without a launcher is a
//! job of one rank and makes no MPI call at all: collectives are then the
//! identity (an `allgather` stacks one block, a periodic halo exchange
//! wraps the block around). Built without the feature, every entry is an
//! error saying how to build with it ([`NOT_BUILT`]).
//!
//! Buffers are f64 numbers in row-major order. Before any data moves,
//! the ranks check that they all called the same collective with the same
//! shape (neighbours of a halo exchange compare the shapes of the slabs
//! they send), so a mismatch is an error naming both shapes instead of a
//! hang or a truncated message.
//!
//! This folder knows neither Lisp, tapes nor the operation table; the
//! table's collectives (`ops/collective.rs`) call it.

#[cfg(feature = "mpi")]
mod comm;
mod traffic;

#[cfg(feature = "nccl")]
pub(crate) use traffic::device_collective;
pub use traffic::{Traffic, traffic};

/// What distributed built-ins say in a build without the feature.
pub const NOT_BUILT: &str = "this Epsilon was built without MPI: build it with `cargo build --release --features mpi` (which needs an MPI library such as Open MPI, and libclang) and start it with `mpirun -np N epsilon run FILE`";

/// How `allreduce` combines the ranks' tensors, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// The sum.
    Sum,
    /// The sum divided by the number of ranks.
    Mean,
    /// The largest.
    Max,
    /// The smallest.
    Min,
}

impl Reduction {
    /// The name `:op` takes (`'sum`).
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Mean => "mean",
            Reduction::Max => "max",
            Reduction::Min => "min",
        }
    }

    /// The reduction `:op` names, if any.
    pub fn from_name(name: &str) -> Option<Reduction> {
        [
            Reduction::Sum,
            Reduction::Mean,
            Reduction::Max,
            Reduction::Min,
        ]
        .into_iter()
        .find(|r| r.name() == name)
    }
}

/// What a halo exchange sends: the first and the last cells of the block
/// along the exchanged axis, each a slab of the same shape.
pub struct Boundaries<'a> {
    /// The slab that travels to the left neighbour (rank - 1).
    pub to_left: &'a [f64],
    /// The slab that travels to the right neighbour (rank + 1).
    pub to_right: &'a [f64],
    /// The shape of each slab.
    pub slab: &'a [usize],
    /// Whether the last rank's right neighbour is rank 0 (and rank 0's
    /// left neighbour the last rank); otherwise the two ends have none.
    pub periodic: bool,
}

/// What a halo exchange received: the slab from each neighbour, `None`
/// at an end of a domain that is not periodic.
#[derive(Debug, Default)]
pub struct Received {
    /// From the left neighbour (its `to_right`).
    pub from_left: Option<Vec<f64>>,
    /// From the right neighbour (its `to_left`).
    pub from_right: Option<Vec<f64>>,
}

/// Starts MPI now when this process was started by an MPI launcher
/// (`mpirun`, `mpiexec`, `srun` with PMI), so the thread that calls this
/// (the main thread) is the one that initialized it; otherwise the
/// process is a job of one rank. Later calls do nothing. Without the
/// feature, nothing happens.
pub fn init() -> Result<(), String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|_| Ok(()))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Ok(())
    }
}

/// Ends MPI (`MPI_Finalize`) if it was started; collectives called after
/// it are errors. Call once, before the process exits.
pub fn finalize() {
    #[cfg(feature = "mpi")]
    comm::finalize();
}

/// This process's rank (0 for a job of one rank).
pub fn rank() -> Result<usize, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| Ok(job.rank()))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Err(NOT_BUILT.to_string())
    }
}

/// The number of ranks (1 without a launcher).
pub fn size() -> Result<usize, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| Ok(job.size()))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Err(NOT_BUILT.to_string())
    }
}

/// Whether this process is one of several ranks (false without the
/// feature or without a launcher).
pub fn is_distributed() -> bool {
    size().map(|n| n > 1).unwrap_or(false)
}

/// Ends every rank of the job with `code` (`MPI_Abort`), or this process
/// alone when it is the only one.
pub fn abort(code: i32) -> ! {
    #[cfg(feature = "mpi")]
    comm::abort(code);
    #[cfg(not(feature = "mpi"))]
    std::process::exit(code)
}

/// Replaces `data` (a tensor of `shape`, the same on every rank) by its
/// reduction over the ranks.
pub fn allreduce(data: &mut [f64], shape: &[usize], reduction: Reduction) -> Result<(), String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.allreduce(data, shape, reduction))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (data, shape, reduction);
        Err(NOT_BUILT.to_string())
    }
}

/// Every rank's `local` (a tensor of `shape`, the same on every rank),
/// one after the other in rank order.
pub fn allgather(local: &[f64], shape: &[usize]) -> Result<Vec<f64>, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.allgather(local, shape))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (local, shape);
        Err(NOT_BUILT.to_string())
    }
}

/// The sum over ranks of block `rank` of `blocks` (one block of `shape`
/// per rank, one after the other): the adjoint of [`allgather`].
pub fn reduce_scatter(blocks: &[f64], shape: &[usize]) -> Result<Vec<f64>, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.reduce_scatter(blocks, shape))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (blocks, shape);
        Err(NOT_BUILT.to_string())
    }
}

/// Sends the boundaries to the neighbours along a line of ranks and
/// receives theirs.
pub fn exchange(boundaries: &Boundaries<'_>) -> Result<Received, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.exchange(boundaries))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = boundaries;
        Err(NOT_BUILT.to_string())
    }
}

/// Checks that every rank is in an allreduce of `reduction` on a tensor
/// of `shape` (the check each collective starts with), for a caller that
/// then moves the data itself (NCCL on devices).
pub fn check_allreduce(shape: &[usize], reduction: Reduction) -> Result<(), String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.check_allreduce(shape, reduction))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (shape, reduction);
        Err(NOT_BUILT.to_string())
    }
}

/// Whether `flag` holds on every rank (one allreduce of one word), so
/// that all ranks take the same path.
pub fn on_every_rank(flag: bool) -> Result<bool, String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.on_every_rank(flag))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = flag;
        Err(NOT_BUILT.to_string())
    }
}

/// Rank 0's `bytes` on every rank (`MPI_Bcast`).
pub fn broadcast_bytes(bytes: &mut [u8]) -> Result<(), String> {
    #[cfg(feature = "mpi")]
    {
        comm::with_job(|job| job.broadcast_bytes(bytes))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = bytes;
        Err(NOT_BUILT.to_string())
    }
}

/// This process's rank among the ranks on its machine, as the launcher
/// says (Open MPI, MPICH's Hydra, Slurm), when one started it: which of a
/// machine's GPUs a rank takes.
pub fn local_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "SLURM_LOCALID",
        "PMIX_LOCAL_RANK",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.parse().ok())
}

/// How many ranks run on this process's machine, as the launcher says.
pub fn local_size() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_NTASKS_PER_NODE",
        "PMIX_LOCAL_SIZE",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.parse().ok())
}

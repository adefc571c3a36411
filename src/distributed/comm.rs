//! The MPI side of [`crate::distributed`], through rsmpi: the job's state
//! (one rank without a launcher, MPI started on the main thread under
//! one, finalized), the shape agreement every collective starts with, and
//! the collectives themselves. Calls are serialized by the state's lock
//! (MPI is initialized with `MPI_THREAD_SERIALIZED`), so a kernel running
//! on any worker thread may call them.

use super::{Boundaries, Received, Reduction, traffic};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use std::sync::{Mutex, MutexGuard};

/// Where the process is in MPI's life.
enum State {
    /// Nothing asked yet.
    Unstarted,
    /// Started without a launcher: one rank, no MPI calls.
    Single,
    /// MPI is running. `universe` finalizes it when dropped (`None` when
    /// a host program initialized MPI itself).
    Running {
        universe: Option<Universe>,
        rank: usize,
        size: usize,
    },
    /// MPI was finalized.
    Finalized,
}

static STATE: Mutex<State> = Mutex::new(State::Unstarted);

fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Environment variables one of the common launchers sets in each rank
/// (Open MPI, MPICH's Hydra and Slurm with PMI, PMIx); `EPSILON_MPI=1`
/// asks for MPI without one (a singleton job).
const LAUNCHER_VARIABLES: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMI_RANK",
    "PMIX_RANK",
    "MPI_LOCALNRANKS",
];

fn launched() -> bool {
    LAUNCHER_VARIABLES
        .iter()
        .any(|name| std::env::var_os(name).is_some())
        || std::env::var("EPSILON_MPI").is_ok_and(|v| v == "1")
}

/// The job as the collectives see it while the state is locked.
pub(super) struct Job {
    rank: usize,
    size: usize,
}

/// Runs `f` on the job, starting MPI first if this is the first call.
pub(super) fn with_job<R>(f: impl FnOnce(&Job) -> Result<R, String>) -> Result<R, String> {
    let mut guard = state();
    if let State::Unstarted = *guard {
        *guard = start();
    }
    let job = match &*guard {
        State::Single => Job { rank: 0, size: 1 },
        State::Running { rank, size, .. } => Job {
            rank: *rank,
            size: *size,
        },
        State::Finalized => return Err("MPI has been finalized".to_string()),
        State::Unstarted => unreachable!("started above"),
    };
    f(&job)
}

fn start() -> State {
    if !launched() {
        return State::Single;
    }
    let universe = match mpi::initialize_with_threading(mpi::Threading::Serialized) {
        Some((universe, _provided)) => Some(universe),
        // A host program initialized MPI already.
        None if mpi::environment::is_initialized() && !mpi::environment::is_finalized() => None,
        None => return State::Finalized,
    };
    let world = SimpleCommunicator::world();
    State::Running {
        universe,
        rank: world.rank() as usize,
        size: world.size() as usize,
    }
}

/// Finalizes MPI if it is running.
pub(super) fn finalize() {
    let mut guard = state();
    if let State::Running { universe, .. } = std::mem::replace(&mut *guard, State::Finalized) {
        drop(universe);
    }
}

/// Aborts every rank when several run, else exits.
pub(super) fn abort(code: i32) -> ! {
    let several = match STATE.try_lock() {
        Ok(guard) => matches!(*guard, State::Running { size, .. } if size > 1),
        Err(_) => false,
    };
    if several {
        use mpi::topology::Communicator as _;
        SimpleCommunicator::world().abort(code)
    }
    std::process::exit(code)
}

/// The tag of slabs travelling to the left neighbour.
const TRAVEL_LEFT: i32 = 11;
/// The tag of slabs travelling to the right neighbour.
const TRAVEL_RIGHT: i32 = 12;
/// The most axes a shape description carries in a mismatch report.
const DESCRIBED_AXES: usize = 16;

/// Which collective a rank is in, for the agreement check.
#[derive(Clone, Copy)]
enum Kind {
    Allreduce(Reduction),
    Allgather,
    ReduceScatter,
}

impl Kind {
    fn code(self) -> u64 {
        match self {
            Kind::Allreduce(r) => r as u64,
            Kind::Allgather => 10,
            Kind::ReduceScatter => 11,
        }
    }

    fn describe(code: u64) -> &'static str {
        match code {
            0 => "allreduce 'sum",
            1 => "allreduce 'mean",
            2 => "allreduce 'max",
            3 => "allreduce 'min",
            10 => "allgather",
            11 => "the reverse of allgather",
            _ => "another collective",
        }
    }
}

/// A 64-bit FNV-1a hash of the collective and shape.
fn signature(kind: Kind, shape: &[usize]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for word in std::iter::once(kind.code())
        .chain(std::iter::once(shape.len() as u64))
        .chain(shape.iter().map(|&d| d as u64))
    {
        for byte in word.to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

impl Job {
    pub(super) fn rank(&self) -> usize {
        self.rank
    }

    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Checks that every rank is in the same collective with the same
    /// shape: one allreduce of two words (the largest signature and the
    /// largest complement agree with one's own only when all signatures
    /// are equal); on a mismatch, every rank gathers the descriptions and
    /// gives the same error.
    fn agree(&self, world: &SimpleCommunicator, kind: Kind, shape: &[usize]) -> Result<(), String> {
        let own = signature(kind, shape);
        let mine = [own, !own];
        let mut largest = [0u64; 2];
        world.all_reduce_into(&mine[..], &mut largest[..], SystemOperation::max());
        if largest == mine {
            return Ok(());
        }
        let width = DESCRIBED_AXES + 2;
        let mut description = vec![0u64; width];
        description[0] = kind.code();
        description[1] = shape.len() as u64;
        for (slot, &d) in description[2..].iter_mut().zip(shape) {
            *slot = d as u64;
        }
        let mut all = vec![0u64; width * self.size];
        world.all_gather_into(&description[..], &mut all[..]);
        let described: Vec<String> = all
            .chunks(width)
            .enumerate()
            .map(|(rank, d)| {
                let rank_count = d[1] as usize;
                let dims: Vec<usize> = d[2..2 + rank_count.min(DESCRIBED_AXES)]
                    .iter()
                    .map(|&x| x as usize)
                    .collect();
                let more = if rank_count > DESCRIBED_AXES {
                    " ..."
                } else {
                    ""
                };
                format!(
                    "rank {rank} is in {} with shape {}{more}",
                    Kind::describe(d[0]),
                    show(&dims)
                )
            })
            .collect();
        Err(format!(
            "the ranks disagree: {} (every rank must call the same collective on a tensor of the same shape)",
            described.join(", ")
        ))
    }

    pub(super) fn check_allreduce(
        &self,
        shape: &[usize],
        reduction: Reduction,
    ) -> Result<(), String> {
        if self.size == 1 {
            return Ok(());
        }
        self.agree(
            &SimpleCommunicator::world(),
            Kind::Allreduce(reduction),
            shape,
        )
    }

    pub(super) fn on_every_rank(&self, flag: bool) -> Result<bool, String> {
        if self.size == 1 {
            return Ok(flag);
        }
        let mine = [u64::from(flag)];
        let mut least = [0u64];
        SimpleCommunicator::world().all_reduce_into(
            &mine[..],
            &mut least[..],
            SystemOperation::min(),
        );
        Ok(least[0] == 1)
    }

    pub(super) fn broadcast_bytes(&self, bytes: &mut [u8]) -> Result<(), String> {
        if self.size > 1 {
            use mpi::traits::Root;
            SimpleCommunicator::world()
                .process_at_rank(0)
                .broadcast_into(bytes);
        }
        Ok(())
    }

    pub(super) fn allreduce(
        &self,
        data: &mut [f64],
        shape: &[usize],
        reduction: Reduction,
    ) -> Result<(), String> {
        if self.size == 1 {
            return Ok(());
        }
        let world = SimpleCommunicator::world();
        self.agree(&world, Kind::Allreduce(reduction), shape)?;
        let send = data.to_vec();
        traffic::collective(send.len());
        match reduction {
            Reduction::Sum | Reduction::Mean => {
                world.all_reduce_into(&send[..], data, SystemOperation::sum())
            }
            Reduction::Max => world.all_reduce_into(&send[..], data, SystemOperation::max()),
            Reduction::Min => world.all_reduce_into(&send[..], data, SystemOperation::min()),
        }
        if reduction == Reduction::Mean {
            let n = self.size as f64;
            data.iter_mut().for_each(|x| *x /= n);
        }
        Ok(())
    }

    pub(super) fn allgather(&self, local: &[f64], shape: &[usize]) -> Result<Vec<f64>, String> {
        if self.size == 1 {
            return Ok(local.to_vec());
        }
        let world = SimpleCommunicator::world();
        self.agree(&world, Kind::Allgather, shape)?;
        let mut all = vec![0.0; local.len() * self.size];
        traffic::collective(local.len());
        world.all_gather_into(local, &mut all[..]);
        Ok(all)
    }

    pub(super) fn reduce_scatter(
        &self,
        blocks: &[f64],
        shape: &[usize],
    ) -> Result<Vec<f64>, String> {
        if self.size == 1 {
            return Ok(blocks.to_vec());
        }
        let world = SimpleCommunicator::world();
        self.agree(&world, Kind::ReduceScatter, shape)?;
        let mut mine = vec![0.0; blocks.len() / self.size];
        traffic::collective(blocks.len());
        world.reduce_scatter_block_into(blocks, &mut mine[..], SystemOperation::sum());
        Ok(mine)
    }

    /// The left and right neighbours along the line (or ring) of ranks.
    fn neighbours(&self, periodic: bool) -> (Option<usize>, Option<usize>) {
        let (rank, size) = (self.rank, self.size);
        let left = if rank > 0 {
            Some(rank - 1)
        } else {
            periodic.then_some(size - 1)
        };
        let right = if rank + 1 < size {
            Some(rank + 1)
        } else {
            periodic.then_some(0)
        };
        (left, right)
    }

    pub(super) fn exchange(&self, b: &Boundaries<'_>) -> Result<Received, String> {
        if self.size == 1 {
            return Ok(if b.periodic {
                Received {
                    from_left: Some(b.to_right.to_vec()),
                    from_right: Some(b.to_left.to_vec()),
                }
            } else {
                Received::default()
            });
        }
        let (left, right) = self.neighbours(b.periodic);
        // Each message starts with the slab's shape, so a neighbour whose
        // block has another shape is reported, not misread.
        let message = |payload: &[f64]| -> Vec<f64> {
            let mut m = Vec::with_capacity(1 + b.slab.len() + payload.len());
            m.push(b.slab.len() as f64);
            m.extend(b.slab.iter().map(|&d| d as f64));
            m.extend_from_slice(payload);
            m
        };
        let to_left = message(b.to_left);
        let to_right = message(b.to_right);
        let world = SimpleCommunicator::world();
        let (from_left, from_right) = mpi::request::scope(|scope| {
            let mut sends = Vec::with_capacity(2);
            if let Some(l) = left {
                let peer = world.process_at_rank(l as i32);
                sends.push(peer.immediate_send_with_tag(scope, &to_left[..], TRAVEL_LEFT));
                traffic::message(b.to_left.len());
            }
            if let Some(r) = right {
                let peer = world.process_at_rank(r as i32);
                sends.push(peer.immediate_send_with_tag(scope, &to_right[..], TRAVEL_RIGHT));
                traffic::message(b.to_right.len());
            }
            let from_left = left.map(|l| (l, receive(&world, l, TRAVEL_RIGHT)));
            let from_right = right.map(|r| (r, receive(&world, r, TRAVEL_LEFT)));
            for send in sends {
                send.wait();
            }
            (from_left, from_right)
        });
        let open = |received: Option<(usize, Vec<f64>)>| -> Result<Option<Vec<f64>>, String> {
            let Some((peer, mut m)) = received else {
                return Ok(None);
            };
            let axes = m.first().map_or(0, |&x| x as usize);
            let theirs: Vec<usize> = m
                .get(1..1 + axes)
                .unwrap_or(&[])
                .iter()
                .map(|&x| x as usize)
                .collect();
            if theirs != b.slab || m.len() != 1 + axes + b.to_left.len() {
                return Err(format!(
                    "rank {peer} sent a boundary slab of shape {} where rank {} expects {} (the blocks must have the same shape on every rank except along the exchanged axis, and the same width)",
                    show(&theirs),
                    self.rank,
                    show(b.slab)
                ));
            }
            m.drain(..1 + axes);
            Ok(Some(m))
        };
        Ok(Received {
            from_left: open(from_left)?,
            from_right: open(from_right)?,
        })
    }
}

/// The message with `tag` from `peer`, whatever its length.
fn receive(world: &SimpleCommunicator, peer: usize, tag: i32) -> Vec<f64> {
    let process = world.process_at_rank(peer as i32);
    let status = process.probe_with_tag(tag);
    let count = status.count(f64::equivalent_datatype()).max(0) as usize;
    let mut buffer = vec![0.0; count];
    process.receive_into_with_tag(&mut buffer[..], tag);
    buffer
}

/// A shape as `[2 3]`.
fn show(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(" "))
}

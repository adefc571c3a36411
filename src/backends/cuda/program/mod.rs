//! Device programs: a tape planned once for the kinds of its inputs, then
//! replayed.
//!
//! Planning (`plan`) decides everything that depends only on the tape and
//! on whether each input is a host number, an f64 array or f32 storage:
//! every kernel's source, name, grid and parameters, every cuBLAS call,
//! which values alias which memory, when memory is taken and given back,
//! and the host arithmetic on numbers. The result is a [`Program`]: a list
//! of [`Command`]s over numbered host registers and device buffers.
//! Replaying it (`replay`) binds the inputs, then runs the commands: no
//! kernel source is written, nothing is hashed and no shape is looked at
//! again. A machine keeps its programs ([`Programs`], by tape and input
//! kinds), so a tape's second run on a device, and every step of a loop
//! after the first, is a replay.
//!
//! Loops and operations without a device kernel stay commands of their
//! own: a loop runs its steps through the loop driver (each step a replay
//! of the body's program), an operation without a kernel copies its
//! operands to the host and its result back.

mod graphs;
mod plan;
mod replay;
mod steps;
pub mod views;

pub use graphs::graphs_enabled;
pub use plan::{elementwise, plan};
pub use replay::{on_host, replay};
pub use steps::{Rows, run_steps};

use super::launch::{GemmCall, Launch};
use super::machine::{Datum, Machine};
use crate::backends::BackendError;
use crate::ir::Shape;
use crate::tape::loops::LoopTapes;
use crate::tape::{FusedGroup, Tape};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A device buffer of a program, by number.
pub type Buffer = u32;

/// A host register of a program (a number), by number.
pub type Register = u32;

/// Where a value is while a program runs, as planned: a number in a
/// register, or a buffer holding `shape`'s elements in f64 or f32
/// storage. Values that alias (`reshape`) name the same buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A number on the host.
    Host(Register),
    /// f64 numbers on the device.
    Device {
        /// Where.
        buffer: Buffer,
        /// The shape.
        shape: Shape,
    },
    /// f32 numbers on the device, two per slot.
    F32 {
        /// Where.
        buffer: Buffer,
        /// The shape.
        shape: Shape,
    },
    /// An index map of a buffer, not materialized (planning only: fused
    /// groups read through it, anything else gets it materialized).
    View {
        /// The memory read.
        buffer: Buffer,
        /// Whether it holds f32 storage.
        single: bool,
        /// The map.
        view: Rc<views::View>,
    },
}

impl Place {
    /// The value's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Place::Host(_) => &[],
            Place::Device { shape, .. } | Place::F32 { shape, .. } => shape,
            Place::View { view, .. } => &view.shape,
        }
    }

    /// Whether it is held in f32 storage.
    pub fn is_f32(&self) -> bool {
        matches!(self, Place::F32 { .. } | Place::View { single: true, .. })
    }

    /// Its buffer, for a device value (for a view, the memory it reads).
    pub fn buffer(&self) -> Option<Buffer> {
        match self {
            Place::Host(_) => None,
            Place::Device { buffer, .. }
            | Place::F32 { buffer, .. }
            | Place::View { buffer, .. } => Some(*buffer),
        }
    }
}

/// A kernel parameter as planned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// A `long long` fixed when planning.
    Int(i64),
    /// A `double` read from a register when the kernel is launched.
    Register(Register),
    /// A buffer's device memory.
    Buffer(Buffer),
}

/// One step of a program.
#[derive(Debug)]
pub enum Command {
    /// Memory for a buffer (zeros when `zeroed`).
    Alloc {
        /// The buffer.
        buffer: Buffer,
        /// Its length in 8-byte slots.
        len: usize,
        /// Whether it must start at zero.
        zeroed: bool,
    },
    /// The buffer's memory goes back to the machine.
    Release(Buffer),
    /// A kernel launch: the operands, then `out`.
    Launch {
        /// The kernel and its grid.
        launch: Launch,
        /// Its parameters before the output.
        operands: SmallVec<[Operand; 6]>,
        /// The buffer it writes.
        out: Buffer,
    },
    /// A matrix product through cuBLAS (`operands` are cuBLAS's `a`, `b`).
    Gemm {
        /// The call.
        call: GemmCall,
        /// cuBLAS's first and second operand.
        operands: (Buffer, Buffer),
        /// The product.
        out: Buffer,
        /// sgemm on f32 storage rather than dgemm.
        single: bool,
    },
    /// Copies `len` slots of `src` from `from` into `dst` at `to`.
    Copy {
        /// The source.
        src: Buffer,
        /// Where in it.
        from: usize,
        /// The destination.
        dst: Buffer,
        /// Where in it.
        to: usize,
        /// How many slots.
        len: usize,
    },
    /// A routine of the machine's solver library (cuSOLVER, cuBLAS),
    /// in place on `writes`.
    Routine {
        /// The routine.
        routine: crate::ir::ops::solver::Routine,
        /// What it reads.
        reads: SmallVec<[Buffer; 2]>,
        /// What it writes.
        writes: SmallVec<[Buffer; 5]>,
    },
    /// Failure codes an operation's device work wrote into `codes`, read
    /// once the program's work is queued: the first non-zero one is the
    /// run's error.
    Check {
        /// The operation (its name and where it was called).
        op: crate::ir::ops::Op,
        /// The buffer of codes (kept to the end of the run).
        codes: Buffer,
        /// How many records.
        count: usize,
        /// What a code means.
        failure: crate::ir::ops::solver::Failure,
    },
    /// Host arithmetic: a group on numbers.
    Host {
        /// The group.
        group: FusedGroup,
        /// Its operands.
        operands: SmallVec<[Register; 4]>,
        /// Its result.
        out: Register,
    },
    /// A loop (or a loop's reverse) run by the loop driver.
    Loop {
        /// The loop's tapes.
        tapes: Arc<LoopTapes>,
        /// Its operands.
        operands: Vec<Place>,
        /// Its result: a register for a number, else a buffer the loop
        /// fills.
        out: Place,
    },
    /// An operation of the table without a device kernel: operands to the
    /// host, its CPU kernel, the result back.
    OnHost {
        /// The operation.
        op: crate::ir::ops::Op,
        /// Its operands.
        operands: Vec<Place>,
        /// Its result (a register for a number).
        out: Place,
    },
    /// An allreduce by the machine's collective library, or on the host
    /// where it has none.
    Allreduce {
        /// The operation (for the host's kernel).
        op: crate::ir::ops::Op,
        /// What is reduced.
        reduction: crate::distributed::Reduction,
        /// The operand.
        operand: Place,
        /// The result.
        out: Place,
    },
    /// Bytes of values became alive and died (`tape-stats`' measure).
    Measure {
        /// Bytes that became alive.
        alive: usize,
        /// Bytes that died.
        dead: usize,
    },
}

/// A tape planned for the kinds of its inputs.
#[derive(Debug)]
pub struct Program {
    /// The steps.
    pub commands: Vec<Command>,
    /// The registers' values before the first step (constants; NaN for
    /// registers the steps write).
    pub registers: Vec<f64>,
    /// How many buffers the steps use.
    pub buffers: usize,
    /// Where each input is bound.
    pub inputs: Vec<Place>,
    /// Where each result is found.
    pub outputs: Vec<Place>,
    /// Whether its device work can be captured as one graph: no loops or
    /// host operations among its commands, no kernel parameter read from
    /// a register that changes from run to run, and enough kernels for a
    /// graph to pay.
    pub graphable: bool,
}

impl Program {
    /// Kernel launches and library calls (cuBLAS, cuSOLVER) per replay
    /// (loops' steps not counted).
    pub fn kernels(&self) -> usize {
        self.commands
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Command::Launch { .. } | Command::Gemm { .. } | Command::Routine { .. }
                )
            })
            .count()
    }

    /// Operations run on the host (operands copied there and back) per
    /// replay.
    pub fn on_host(&self) -> usize {
        self.commands
            .iter()
            .filter(|c| matches!(c, Command::OnHost { .. }))
            .count()
    }
}

/// How an input arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A number on the host.
    Host,
    /// f64 numbers on the device.
    Device,
    /// f32 numbers on the device.
    F32,
}

impl Kind {
    /// The kind of a device value.
    pub fn of<M>(value: &Datum<M>) -> Kind {
        match value {
            Datum::Host(_) => Kind::Host,
            Datum::Device { .. } => Kind::Device,
            Datum::F32 { .. } => Kind::F32,
        }
    }
}

/// The kinds of a tape's inputs, which a program is planned for.
pub type Signature = SmallVec<[Kind; 8]>;

/// The most programs a machine keeps; past it, the cache starts again.
const MOST_PROGRAMS: usize = 4096;

/// A program's key: its tape's id and its inputs' kinds.
type ProgramKey = (u64, Signature);

/// A machine's programs, by tape and input kinds, each with its graph
/// once captured.
pub struct Programs<M: Machine> {
    planned: RefCell<FxHashMap<ProgramKey, Rc<Entry<M>>>>,
    /// Device memory the captured graphs hold, in bytes.
    held: std::cell::Cell<usize>,
}

impl<M: Machine> Default for Programs<M> {
    fn default() -> Self {
        Programs {
            planned: RefCell::default(),
            held: std::cell::Cell::new(0),
        }
    }
}

/// A program and what a machine made of it.
pub struct Entry<M: Machine> {
    /// The program.
    pub program: Program,
    /// Runs so far.
    runs: std::cell::Cell<u64>,
    /// Its graph, once captured.
    graph: RefCell<graphs::GraphState<M>>,
    /// As a loop's step: many steps in one graph, once captured.
    steps: RefCell<graphs::GraphState<M>>,
}

impl<M: Machine> Programs<M> {
    /// The program of `tape` for inputs of `signature`, planned now if it
    /// was not before.
    pub fn get(&self, tape: &Tape, signature: &Signature) -> Result<Rc<Entry<M>>, BackendError> {
        let key = (tape.id, signature.clone());
        if let Some(entry) = self.planned.borrow().get(&key) {
            return Ok(Rc::clone(entry));
        }
        let entry = Rc::new(Entry {
            program: plan(tape, signature)?,
            runs: std::cell::Cell::new(0),
            graph: RefCell::new(graphs::GraphState::NotYet),
            steps: RefCell::new(graphs::GraphState::NotYet),
        });
        let mut planned = self.planned.borrow_mut();
        if planned.len() >= MOST_PROGRAMS {
            planned.clear();
            self.held.set(0);
        }
        planned.insert(key, Rc::clone(&entry));
        Ok(entry)
    }

    /// How many programs are kept.
    pub fn len(&self) -> usize {
        self.planned.borrow().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Runs `tape` on `inputs` (one per tape input, of its input shapes): the
/// machine's program for them, planned at the first run, captured as a
/// graph at the second where it can be, replayed after.
pub fn run<M: Machine>(
    machine: &M,
    tape: &Tape,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    crate::backends::check_inputs(tape, inputs.iter().map(Datum::shape))?;
    let signature: Signature = inputs.iter().map(Kind::of).collect();
    match machine.programs() {
        Some(programs) => {
            let entry = programs.get(tape, &signature)?;
            graphs::run(machine, programs, &entry, inputs)
        }
        None => replay(machine, &plan(tape, &signature)?, inputs),
    }
}

#[cfg(test)]
mod tests;

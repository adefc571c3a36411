//! Tapes: a tensor program compiled for execution — instructions in a
//! topological order over numbered slots, with slots reused once their
//! value is dead (liveness), and the memory this needs.
//!
//! A tape is backend-neutral: the CPU and CUDA backends run the same
//! instructions. This folder knows the IR (the optimized program) and
//! loops' adjoints (`ad::loops`), not e-graphs, Lisp values or how kernels
//! run.

pub mod checkpoint;
pub(crate) mod compile;
pub mod dot;
mod fuse;
pub mod loops;
pub mod plan;
mod push_pads;
mod remat;
pub mod residuals;
mod rounding;
mod show;
mod storage;

pub use compile::compile;
pub use remat::compile_within;

use crate::ir::{Shape, TOp};
use smallvec::SmallVec;

/// A storage location of a tape; several values may use one slot in turn.
pub type Slot = u32;

/// One step of a tape: `out <- op(args...)`.
#[derive(Clone, Debug)]
pub struct Instruction {
    /// The operation. `Input` loads a run-time input; `Scalar` a constant.
    pub op: Kernel,
    /// Operand slots.
    pub args: SmallVec<[Slot; 3]>,
    /// Result slot.
    pub out: Slot,
    /// Result shape.
    pub shape: Shape,
    /// Slots whose values die after this instruction (their storage may be
    /// reused from the next instruction on).
    pub frees: SmallVec<[Slot; 2]>,
    /// Whether the result is kept in f32 storage: an f32 value every user
    /// of which reads f32 storage (`storage`). Backends without f32
    /// storage ignore it (the numbers are f32 ones either way).
    pub single: bool,
}

/// What an instruction computes.
#[derive(Clone, Debug)]
pub enum Kernel {
    /// A tensor operation (see `TOp`).
    Op(TOp),
    /// A matrix product with operands optionally transposed (a `Transpose`
    /// feeding `MatMul` becomes a flag, not a copy).
    Gemm {
        /// Transpose the first operand.
        ta: bool,
        /// Transpose the second operand.
        tb: bool,
        /// A product of f32 numbers computed in f32 arithmetic (single
        /// precision's multiply-adds, as BLAS's sgemm): its result is f32
        /// numbers with no rounding after it.
        single: bool,
    },
    /// A group of elementwise operations on one shape, run together over
    /// chunks of elements so intermediates never leave the cache.
    Fused(std::sync::Arc<FusedGroup>),
    /// A loop (`scan`) or its reverse, with its compiled bodies.
    Loop(std::sync::Arc<loops::LoopTapes>),
}

/// A fused elementwise group: a little register program evaluated per
/// element chunk. Registers `0..inputs` are the group's operands (scalars
/// or tensors broadcasting to `shape`), then one register per step.
#[derive(Clone, Debug)]
pub struct FusedGroup {
    /// Number of operand registers.
    pub inputs: usize,
    /// The steps: an elementwise operation over earlier registers.
    pub steps: Vec<(TOp, SmallVec<[u16; 3]>)>,
    /// The register holding the result.
    pub results: SmallVec<[u16; 2]>,
    /// When set, the group runs over elements of this shape and its result
    /// is the sum of all of them (a full `sum` fused into the loop, so the
    /// summed values are never stored).
    pub sum_over: Option<Shape>,
}

/// A compiled program.
#[derive(Debug)]
pub struct Tape {
    /// Instructions in execution order.
    pub instructions: Vec<Instruction>,
    /// Number of slots.
    pub slots: usize,
    /// Number of run-time inputs, and each one's expected shape.
    pub input_shapes: Vec<Shape>,
    /// The slots holding the results after the last instruction.
    pub outputs: Vec<Slot>,
    /// The shapes of the results.
    pub output_shapes: Vec<Shape>,
    /// The number types of the results (an f32 result is held as f64
    /// numbers that are f32 ones: `rounding`).
    pub output_dtypes: Vec<crate::dtype::DType>,
    /// Statistics computed when compiling.
    pub stats: TapeStats,
    /// A number no other tape of this process has, a clone included
    /// (backends key what they prepare for a tape by it: a clone may be
    /// changed, so it is a new tape).
    pub id: u64,
}

/// The next `Tape::id`.
static NEXT_TAPE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A fresh `Tape::id`.
pub fn fresh_id() -> u64 {
    NEXT_TAPE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Clone for Tape {
    fn clone(&self) -> Tape {
        Tape {
            instructions: self.instructions.clone(),
            slots: self.slots,
            input_shapes: self.input_shapes.clone(),
            outputs: self.outputs.clone(),
            output_shapes: self.output_shapes.clone(),
            output_dtypes: self.output_dtypes.clone(),
            stats: self.stats.clone(),
            id: fresh_id(),
        }
    }
}

/// What compiling found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TapeStats {
    /// Instructions, inputs and constants included.
    pub instructions: usize,
    /// Values computed (one per non-input instruction).
    pub values: usize,
    /// The largest total size of values alive at once, in bytes.
    pub peak_bytes: usize,
    /// Bytes of all values if none were freed.
    pub total_bytes: usize,
    /// Floating-point operations of one run (a multiply-add counts 2).
    pub flops: u64,
    /// Elementwise groups fused.
    pub fused_groups: usize,
    /// The memory budget the tape was compiled for, if any.
    pub memory_budget: Option<usize>,
    /// Values computed again to fit the budget (`remat`).
    pub rematerialized: usize,
}

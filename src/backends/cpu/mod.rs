//! The CPU backend: ndarray arrays, rayon for large elementwise work and
//! reductions, and faer's gemm for matrix products (one thread per product
//! across a stack, faer's threads inside a large one).
//! Scalars live in registers (`Buf::Scalar`), so scalar-heavy tapes run
//! without an allocation per instruction.

mod broadcast;
pub mod cancel;
mod elementwise;
mod execute;
mod layout;
mod loops;
mod matmul;
pub mod measure;
pub mod native;
mod native_task;
mod numbers;
mod planned;
mod pool;
mod reduce;
#[cfg(feature = "cuda")]
pub(crate) use loops::snapshots_of;

pub use loops::unpack;
mod sources;
pub(crate) mod storage;
pub mod straight;
pub mod strategy;
mod structural;

pub use broadcast::{broadcast, row_major};
pub use elementwise::apply_chunk;
pub use execute::{Buf, eval_op};
pub use matmul::matmul;
pub use pool::on_pool;
pub use reduce::reduce;

use super::{Backend, BackendError};
use crate::tape::Tape;

/// Runs a loop (`scan`) or its reverse on buffers: the operands are the
/// initial state's leaves and the captured values (and, for the reverse,
/// the result's cotangent).
pub fn run_loop(
    tapes: &crate::tape::loops::LoopTapes,
    args: &[Buf],
) -> Result<Buf, crate::backends::BackendError> {
    if tapes.reverse {
        loops::reverse(tapes, args)
    } else {
        loops::forward(tapes, args)
    }
}

/// The CPU backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        if let Some(result) = numbers::run_tape(tape, inputs) {
            return result;
        }
        execute::run(tape, inputs)
    }
}

//! How the CPU backend runs a program: its execution strategies, when each
//! is chosen, and every threshold and switch that decides, in one place.
//!
//! A tape runs in the general executor (`execute`): one instruction after
//! another, each value in its own buffer (a tape over numbers alone runs
//! as a register program instead: 7). A value squared only to be summed
//! over some of its axes by the next instruction is summed as the squares
//! are read, never stored (`reduce::sum_of_squares`). Inside it:
//!
//! 1. **Interpreted groups** (`elementwise`): a fused elementwise group is
//!    interpreted chunk by chunk, in parallel over large outputs, with
//!    vectorized `exp`/`tanh`/`sigmoid`. Used for groups over fewer than
//!    [`NATIVE_MIN_ELEMENTS`] elements and whenever native kernels are off.
//! 2. **Native kernels** (`native`, run by `native_task`): a group over at
//!    least [`NATIVE_MIN_ELEMENTS`] elements is compiled by Cranelift into
//!    one SIMD loop (cached per thread by structure) where
//!    [`native_kernels`] is on.
//! 3. **Plans** (`planned`): a loop body, or a tape holding a loop, whose
//!    values are all small ([`plan_limit`]) runs from a plan made once: a
//!    buffer per slot reused by every step, copies as runs, groups,
//!    reductions and small products compiled into one native program.
//!    Where [`plans_enabled`].
//!
//! A loop (`scan`, `while-loop`) takes the first of these that applies
//! (`loops`):
//!
//! 4. **Scalar loops** (`loops::scalar`): state, index and captures all
//!    numbers, no sequences ([`scalar_loop_applies`]): one register
//!    program per body, native where native kernels are on, no allocation
//!    per step.
//! 5. **Flat loops** (`loops::flat`): the body (and, in reverse, its
//!    adjoint) has a plan ([`flat_loop_applies`]): the state one row
//!    written in place, snapshots on one stack.
//! 6. **General loops** (`loops`): any body, each step a tape run (from its
//!    plan where it has one), under the checkpoint schedule.
//!
//! 7. **Numbers** (`numbers`): a tape every value of which is one number,
//!    called from outside a loop, runs as a register program,
//!    interpreted (arithmetic inline, the rest through the table's rows),
//!    made at its first run: no compilation to repay.
//! 8. **Straight line** (`straight`): the gradient of a scalar program read
//!    from its trace and run as two passes over numbers, no tape. The
//!    differentiation driver above the backend chooses it.
//!
//! Switches (environment variables, read once): `EPSILON_NATIVE=0` turns
//! native kernels off (everything interpreted; tests also turn them off
//! per thread with [`set_native_kernels`]); `EPSILON_PLANS=0` turns plans,
//! and with them flat loops, off; `EPSILON_NATIVE_DUMP=1` prints the
//! machine code of each native kernel compiled ([`native_dump`]).

use crate::ir::loops::ScanSpec;
use std::cell::Cell;

/// Groups over fewer elements are interpreted: compiling costs about as
/// much as interpreting this many elements a few hundred times.
pub const NATIVE_MIN_ELEMENTS: usize = 4096;

/// The most numbers a value of a planned tape holds (larger values run
/// better on the general executor: its threads, its vectorized `exp` and
/// `tanh`; `bench/loops/plan-sizes.lisp`).
pub const PLAN_LARGEST: usize = 1024;

/// The most numbers a value of a planned tape holds where no `exp`,
/// `tanh` or `sigmoid` makes it (copies and arithmetic: a stencil's
/// shifts, an ODE's augmented state).
pub const PLAN_CHEAP: usize = 4096;

/// The most numbers a value of a planned tape holding a loop holds.
pub const PLAN_AROUND_LOOPS: usize = 16384;

/// Steps of a scalar loop's native kernel few enough to run without
/// checking for an interrupt.
pub const SCALAR_LOOP_SHORT: usize = 64;

thread_local! {
    static NATIVE: Cell<bool> = Cell::new(switch("EPSILON_NATIVE"));
}

/// Whether the environment variable `name` leaves its strategy on (it is
/// on unless set to `0`).
fn switch(name: &str) -> bool {
    std::env::var(name).map_or(true, |v| v != "0")
}

/// Whether native kernels are on for this thread.
pub fn native_kernels() -> bool {
    NATIVE.with(Cell::get)
}

/// Turns native kernels on or off for this thread (they are on unless
/// `EPSILON_NATIVE=0`); tests use it to compare with the interpreter.
pub fn set_native_kernels(enabled: bool) {
    NATIVE.with(|e| e.set(enabled));
}

/// Whether loop bodies and small tapes run from plans (`EPSILON_PLANS=0`
/// turns them off, to compare with the general executor).
pub fn plans_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| switch("EPSILON_PLANS"))
}

/// Whether native kernels' machine code is printed as they compile.
pub fn native_dump() -> bool {
    std::env::var("EPSILON_NATIVE_DUMP").is_ok_and(|v| v != "0")
}

/// The most numbers a value may hold for its tape to be planned: more
/// around loops, fewer where a transcendental function makes it.
pub fn plan_limit(holds_loop: bool, transcendental: bool) -> usize {
    if holds_loop {
        PLAN_AROUND_LOOPS
    } else if transcendental {
        PLAN_LARGEST
    } else {
        PLAN_CHEAP
    }
}

/// Whether a loop may run as a scalar loop: no sequences, no condition,
/// and every operand a number (`operands_are_numbers`).
pub fn scalar_loop_applies(
    spec: &ScanSpec,
    has_condition: bool,
    operands_are_numbers: bool,
) -> bool {
    spec.xs.is_empty() && spec.ys.is_empty() && !has_condition && operands_are_numbers
}

/// Whether a loop may run on flat buffers (its tapes must also have
/// plans): plans on, at least one step, and in reverse no condition.
pub fn flat_loop_applies(spec: &ScanSpec, has_condition: bool, reverse: bool) -> bool {
    plans_enabled() && !(reverse && has_condition) && spec.n != 0
}

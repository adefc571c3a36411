//! The memory pre-flight: before a tape runs on the host, its memory plan
//! (`tape::plan`, what `tape-stats` reports as `planned-bytes`) is
//! compared with the memory this process can get now
//! (`host_memory::available`: free memory, the control group's room, the
//! address space `ulimit -v` leaves). A plan that cannot fit is an error
//! naming the operation, the bytes needed and available, and the remedy,
//! given before anything is allocated, instead of a run that fills the
//! machine's memory and is killed or aborts.

use super::BackendError;
use crate::host_memory::show;
use crate::ir::loops::Strategy;
use crate::ir::shape::numel;
use crate::tape::Tape;
use crate::tape::loops::LoopTapes;
use crate::tape::plan::{LoopPlan, MemoryPlan, loop_plan, plan};

/// Plans below this are run without a look at the system's figures.
const UNCHECKED_BYTES: usize = 256 << 20;

/// An error when `tape`'s plan needs more memory than the process can get.
pub fn check(tape: &Tape) -> Result<(), BackendError> {
    fits(plan(tape))
}

/// An error when a loop run on its own (outside a tape) needs more memory
/// than the process can get: its result, and what it holds as it runs.
pub fn check_loop(tapes: &LoopTapes) -> Result<(), BackendError> {
    let result = tapes.spec.output_parts().iter().fold(0usize, |sum, shape| {
        sum.saturating_add(numel(shape).max(1).saturating_mul(8))
    });
    fits(MemoryPlan {
        values: result,
        largest_loop: Some(loop_plan(tapes)),
    })
}

fn fits(plan: MemoryPlan) -> Result<(), BackendError> {
    let needed = plan.total();
    if needed < UNCHECKED_BYTES {
        return Ok(());
    }
    // Buffers kept for reuse by this thread's pool are the process's own,
    // taken again by the run: they count as available.
    let available = crate::host_memory::available()
        .map(|bytes| bytes.saturating_add(super::cpu::storage::pooled_bytes()));
    match available {
        Some(available) if needed > available => Err(BackendError::new(refusal(&plan, available))),
        _ => Ok(()),
    }
}

/// The message for a plan that does not fit in `available` bytes.
pub fn refusal(plan: &MemoryPlan, available: usize) -> String {
    let needed = show(plan.total());
    let available = show(available);
    match &plan.largest_loop {
        Some(l) if l.bytes >= plan.values => {
            let what = loop_name(l);
            let held = held(l);
            let remedy = if l.stacked_bytes > l.bytes / 2 {
                "stack fewer or smaller outputs, or run the loop in pieces"
            } else if l.while_loop {
                "give fewer :snapshots"
            } else {
                "use :checkpoint 'revolve (fewer :snapshots), or 'auto, which picks the \
                 snapshots that fit (within :memory-budget bytes where given)"
            };
            format!(
                "not enough memory: {what} needs {needed}{held}, and this process can get \
                 {available}; {remedy}"
            )
        }
        _ => format!(
            "not enough memory: the computation needs {needed} for its values at their peak, \
             and this process can get {available}; use smaller inputs, or \
             (set-memory-budget! bytes) to recompute values instead of keeping them"
        ),
    }
}

/// "the reverse of a scan of 100000 steps under :checkpoint 'store-all".
fn loop_name(l: &LoopPlan) -> String {
    let kind = if l.while_loop {
        format!("a while-loop of at most {} steps", l.steps)
    } else {
        format!("a scan of {} steps", l.steps)
    };
    if !l.reverse {
        return kind;
    }
    let strategy = match l.strategy {
        Strategy::StoreAll => ":checkpoint 'store-all".to_string(),
        Strategy::Recompute => ":checkpoint 'recompute".to_string(),
        Strategy::Revolve(k) => format!(":checkpoint 'revolve with {k} snapshots"),
    };
    format!("the reverse of {kind} under {strategy}")
}

/// " (100000 states of 800.0 kB kept at once)", or nothing.
fn held(l: &LoopPlan) -> String {
    let mut parts = Vec::new();
    if l.snapshots > 0 {
        parts.push(format!(
            "{} states of {} kept at once",
            l.snapshots,
            show(l.state_bytes)
        ));
    }
    if l.kept_bytes > 0 {
        parts.push(format!("{} of step products kept", show(l.kept_bytes)));
    }
    if l.stacked_bytes > 0 {
        parts.push(format!("{} stacked over its steps", show(l.stacked_bytes)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_all(steps: usize, state_bytes: usize) -> MemoryPlan {
        MemoryPlan {
            values: 1600,
            largest_loop: Some(LoopPlan {
                bytes: steps * state_bytes,
                while_loop: false,
                reverse: true,
                steps,
                strategy: Strategy::StoreAll,
                snapshots: steps,
                state_bytes,
                kept_bytes: 0,
                stacked_bytes: 0,
            }),
        }
    }

    #[test]
    fn a_loop_that_cannot_fit_is_named_with_its_bytes_and_the_remedy() {
        let message = refusal(&store_all(100_000, 800_000), 15_000_000_000);
        assert!(
            message.starts_with(
                "not enough memory: the reverse of a scan of 100000 steps under \
                 :checkpoint 'store-all needs 80.00 GB (100000 states of 800.0 kB kept at once), \
                 and this process can get 15.00 GB; use :checkpoint 'revolve"
            ),
            "{message}"
        );
        assert!(message.contains(":memory-budget"), "{message}");
    }

    #[test]
    fn values_too_large_name_the_budget() {
        let plan = MemoryPlan {
            values: 5_000_000_000,
            largest_loop: None,
        };
        let message = refusal(&plan, 1_000_000_000);
        assert!(message.contains("needs 5.00 GB"), "{message}");
        assert!(message.contains("set-memory-budget!"), "{message}");
    }
}

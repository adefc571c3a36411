//! A tape's memory plan: the bytes a run holds at its peak, known from
//! the compiled tape alone, before it runs. The tape's own values at their
//! peak (`TapeStats::peak_bytes`), and on top of them the most any one of
//! its loops holds while it runs: the states its reverse keeps under its
//! checkpoint schedule, the step products kept under store-all
//! (`residuals`), its stacked outputs or sequence cotangents while they
//! are gathered, and its bodies' own plans (loops inside loops included).
//!
//! Loops run one at a time, so the plan is the tape's peak plus the
//! largest loop's. `tape-stats` reports it as `planned-bytes`; backends
//! compare it with the memory the process can get before a tape runs.

use super::loops::LoopTapes;
use super::{Kernel, Tape};
use crate::ir::loops::Strategy;
use crate::ir::shape::numel;

/// What a tape will hold at its peak.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryPlan {
    /// The tape's values at their peak.
    pub values: usize,
    /// The loop holding the most besides its operands and result, if any.
    pub largest_loop: Option<LoopPlan>,
}

impl MemoryPlan {
    /// The bytes a run needs: the values and the largest loop's.
    pub fn total(&self) -> usize {
        self.values
            .saturating_add(self.largest_loop.as_ref().map_or(0, |l| l.bytes))
    }
}

/// What one loop holds while it runs, besides its operands and result.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopPlan {
    /// All of it.
    pub bytes: usize,
    /// Whether it is a `while-loop` (its `steps` an upper bound).
    pub while_loop: bool,
    /// Whether it is a loop's reverse (which keeps states).
    pub reverse: bool,
    /// Its steps.
    pub steps: usize,
    /// Its checkpoint strategy.
    pub strategy: Strategy,
    /// The most states its reverse holds at once.
    pub snapshots: usize,
    /// The bytes of one state.
    pub state_bytes: usize,
    /// The bytes of the step products kept for the reverse (store-all).
    pub kept_bytes: usize,
    /// The bytes of the outputs (or, for a reverse, the sequences'
    /// cotangents) stacked over the steps.
    pub stacked_bytes: usize,
}

/// The plan of `tape`.
pub fn plan(tape: &Tape) -> MemoryPlan {
    let largest_loop = tape
        .instructions
        .iter()
        .filter_map(|instruction| match &instruction.op {
            Kernel::Loop(tapes) => Some(loop_plan(tapes)),
            _ => None,
        })
        .max_by_key(|plan| plan.bytes);
    MemoryPlan {
        values: tape.stats.peak_bytes,
        largest_loop,
    }
}

/// Bytes of `count` numbers of f64 storage.
fn f64_bytes(count: usize) -> usize {
    count.saturating_mul(8)
}

/// Bytes of one value of each of `shapes`, at least one number each.
fn shapes_bytes<'a>(shapes: impl IntoIterator<Item = &'a crate::ir::Shape>) -> usize {
    shapes.into_iter().fold(0usize, |sum, s| {
        sum.saturating_add(f64_bytes(numel(s).max(1)))
    })
}

/// What the loop `tapes` holds while it runs.
pub fn loop_plan(tapes: &LoopTapes) -> LoopPlan {
    let spec = &tapes.spec;
    let while_loop = tapes.condition.is_some();
    let steps = spec.n;
    let state_bytes = shapes_bytes(&spec.leaves);
    // The bodies run one at a time, each with its own plan.
    let bodies = [
        Some(&tapes.body),
        tapes.adjoint.as_ref(),
        tapes.condition.as_ref(),
        tapes.residuals.as_ref().map(|r| &r.body),
        tapes.residuals.as_ref().map(|r| &r.adjoint),
    ]
    .into_iter()
    .flatten()
    .map(|body| plan(body).total())
    .max()
    .unwrap_or(0);
    let snapshots = if !tapes.reverse || steps == 0 {
        0
    } else if while_loop {
        match spec.strategy {
            Strategy::StoreAll => steps,
            Strategy::Recompute => 1,
            Strategy::Revolve(k) => k.clamp(1, steps),
        }
    } else {
        tapes.schedule().max_snapshots
    };
    let kept_bytes = match (&tapes.residuals, tapes.reverse) {
        (Some(residuals), true) => shapes_bytes(&residuals.shapes).saturating_mul(steps),
        _ => 0,
    };
    // Outputs (forward) or sequence cotangents (reverse) gathered in
    // stacked storage before they are packed into the result.
    let stacked = if tapes.reverse { &spec.xs } else { &spec.ys };
    let gathered = if while_loop {
        0
    } else {
        shapes_bytes(stacked).saturating_mul(steps)
    };
    let bytes = state_bytes
        .saturating_mul(snapshots)
        .saturating_add(kept_bytes)
        .saturating_add(gathered)
        .saturating_add(bodies);
    LoopPlan {
        bytes,
        while_loop,
        reverse: tapes.reverse,
        steps,
        strategy: spec.strategy,
        snapshots,
        state_bytes,
        kept_bytes,
        stacked_bytes: gathered,
    }
}

//! Loops over numbers (`scan` whose state, index and captured values are
//! all numbers, such as the logistic map): each body tape is flattened
//! into one register program with a result per output, compiled to a
//! native kernel where native kernels are on (else interpreted register by
//! register), and the loop runs with no allocation per step. Snapshots
//! live on a stack of numbers (the schedules store and free in LIFO order).

use crate::backends::BackendError;
use crate::backends::cpu::numbers::NumberProgram;
use crate::backends::cpu::storage::reserve;
use crate::backends::cpu::{cancel, measure, native};
use crate::tape::checkpoint::{Action, Steps, Strategy};
use crate::tape::loops::LoopTapes;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;

use crate::backends::cpu::strategy::SCALAR_LOOP_SHORT as SHORT;

/// Prepared loops kept per thread (emptied when it grows past this).
const MAX_PREPARED: usize = 256;

thread_local! {
    static PREPARED: RefCell<FxHashMap<u64, Option<Rc<ScalarLoop>>>> = RefCell::default();
}

/// A loop's bodies as register programs: the step compiled as a whole
/// loop, the reverse step as one call (when native kernels are on).
pub struct ScalarLoop {
    body: NumberProgram,
    advance: Option<native::LoopKernel>,
    adjoint: Option<NumberProgram>,
    /// The whole reverse over a trail of every state (for store-all).
    trail: Option<native::TrailKernel>,
}

/// The loop prepared for running over numbers, if it is one.
pub fn prepare(tapes: &LoopTapes) -> Option<Rc<ScalarLoop>> {
    if let Some(found) = PREPARED.with(|p| p.borrow().get(&tapes.id).cloned()) {
        return found;
    }
    let prepared = (|| {
        let body = NumberProgram::from_tape(&tapes.body, true)?;
        let adjoint = match &tapes.adjoint {
            Some(tape) => Some(NumberProgram::from_tape(tape, true)?),
            None => None,
        };
        let leaves = tapes.spec.leaves.len();
        let native = native::native_kernels();
        let advance = native
            .then(|| native::compile_loop(&body.group, leaves).ok())
            .flatten();
        let trail = match &adjoint {
            Some(adjoint) if native => native::compile_trail(&adjoint.group, leaves).ok(),
            _ => None,
        };
        Some(Rc::new(ScalarLoop {
            body,
            advance,
            adjoint,
            trail,
        }))
    })();
    PREPARED.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() >= MAX_PREPARED {
            p.clear();
        }
        p.insert(tapes.id, prepared.clone());
    });
    prepared
}

impl ScalarLoop {
    /// The final state from the initial state and the captured values.
    pub fn forward(&self, tapes: &LoopTapes, state: &[f64], captures: &[f64]) -> Vec<f64> {
        let leaves = state.len();
        let mut inputs = body_inputs(state, captures);
        let mut next = vec![0.0; leaves];
        self.advance(&mut inputs, &mut next, 0, tapes.spec.n);
        inputs.truncate(leaves);
        inputs
    }

    /// The cotangents of the initial state and of the differentiable
    /// captures, given the result's cotangent.
    pub fn reverse(
        &self,
        tapes: &LoopTapes,
        state: &[f64],
        captures: &[f64],
        cotangent: &[f64],
    ) -> Result<Vec<f64>, BackendError> {
        let leaves = state.len();
        let n = tapes.spec.n;
        let differentiable = tapes.spec.differentiable.iter().filter(|d| **d).count();
        let (values, flops) = (tapes.body.stats.values, tapes.body.stats.flops);
        let keeps_all = match tapes.spec.strategy {
            Strategy::StoreAll => true,
            Strategy::Revolve(k) => k >= n,
            Strategy::Recompute => n <= 1,
        };
        let (held, recomputed) = if keeps_all {
            (n, 0)
        } else {
            let schedule = tapes.schedule();
            (schedule.max_snapshots, schedule.recomputed_steps)
        };
        // One slot more than the schedule holds: a sweep's trail keeps its
        // last state too (`Steps::sweep`).
        let snapshots = reserve((held + 1).saturating_mul(leaves), || {
            format!("the {held} stored states of a loop's reverse")
        })?;
        let working = body_inputs(state, captures);
        let body = working.len();
        let mut reverse_inputs = vec![0.0; body + leaves];
        reverse_inputs[body..].copy_from_slice(cotangent);
        let mut run = Reversing {
            scalar: self,
            leaves,
            working,
            next: vec![0.0; leaves],
            snapshots,
            reverse_inputs,
            reverse_outputs: vec![0.0; leaves + differentiable],
            captured: vec![0.0; differentiable],
            steps_unchecked: 0,
            stopped: false,
        };
        // At most `held` states at once; each reverse step recomputes a
        // step's intermediates.
        measure::stored(held * leaves * 8);
        measure::recomputed(recomputed + n, values, flops);
        if keeps_all {
            // Every state kept: one pass forward, one back, no schedule.
            run.store();
            run.sweep(0, n);
        } else {
            let mut blocks = tapes.schedule().blocks();
            while let Some(block) = blocks.next() {
                if run.stopped || cancel::requested() {
                    break;
                }
                blocks.run(block, &mut run);
            }
        }
        measure::released(held * leaves * 8);
        let mut all = run.reverse_inputs[body..].to_vec();
        all.extend(run.captured);
        Ok(all)
    }

    /// Steps `from..to` on the state at the start of `inputs`.
    fn advance(&self, inputs: &mut [f64], next: &mut [f64], from: usize, to: usize) {
        let leaves = next.len();
        if let Some(kernel) = &self.advance {
            let (state, rest) = inputs.split_at_mut(leaves);
            if to - from <= SHORT {
                // A few steps: one call, no interrupt check (the caller
                // checks between them).
                kernel.advance(state, &rest[1..], from, to);
                return;
            }
            // In blocks, so an interrupt stops a long loop.
            let mut at = from;
            while at < to && !cancel::requested() {
                let end = to.min(at + (1 << 16));
                kernel.advance(state, &rest[1..], at, end);
                at = end;
            }
            return;
        }
        for i in from..to {
            if i % 1024 == 0 && cancel::requested() {
                return;
            }
            inputs[leaves] = i as f64;
            self.body.run(inputs, next);
            copy(&mut inputs[..leaves], next);
        }
    }
}

/// A loop's reverse over numbers under way: the working state (with the
/// index and the captures after it), the snapshots as a stack, the
/// cotangent of the working state and the captured cotangents so far.
struct Reversing<'a> {
    scalar: &'a ScalarLoop,
    leaves: usize,
    /// The body's inputs: state, index, captures.
    working: Vec<f64>,
    next: Vec<f64>,
    /// The stored states, newest last.
    snapshots: Vec<f64>,
    /// The reverse body's inputs: the body's, then the cotangent.
    reverse_inputs: Vec<f64>,
    reverse_outputs: Vec<f64>,
    captured: Vec<f64>,
    /// Steps run since the last look at the interrupt flag.
    steps_unchecked: usize,
    /// Interrupted: the remaining actions are skipped (the caller drops
    /// the results).
    stopped: bool,
}

impl Steps for Reversing<'_> {
    fn action(&mut self, action: Action) {
        if self.interrupted() {
            return;
        }
        let leaves = self.leaves;
        match action {
            Action::Advance { from, to } => {
                self.steps_unchecked += to - from;
                self.scalar
                    .advance(&mut self.working, &mut self.next, from, to)
            }
            Action::Store(_) => self.store(),
            Action::Restore(_) => {
                let top = self.snapshots.len() - leaves;
                copy(&mut self.working[..leaves], &self.snapshots[top..]);
            }
            Action::Free(_) => self.snapshots.truncate(self.snapshots.len() - leaves),
            Action::Reverse(i) => self.reverse_step(i),
        }
    }

    /// Stores states `from + 1..to` after state `from` (the newest
    /// snapshot, in the working state): one slot more than the schedule
    /// counts, so the states form one trail. Reverses steps `to - 1` down
    /// to `from` from them (one native call each way where native kernels
    /// are on), and drops them again.
    fn sweep(&mut self, from: usize, to: usize) {
        if to <= from || self.interrupted() {
            return;
        }
        let leaves = self.leaves;
        let base = self.snapshots.len() - leaves;
        self.steps_unchecked += 2 * (to - from);
        match &self.scalar.advance {
            Some(kernel) if to - from > 1 => {
                let start = self.snapshots.len();
                self.snapshots.resize(start + (to - from - 1) * leaves, 0.0);
                let (state, rest) = self.working.split_at_mut(leaves);
                // In blocks, so an interrupt stops a long sweep.
                let mut at = from;
                while at < to - 1 {
                    if at > from && cancel::requested() {
                        self.stopped = true;
                        return;
                    }
                    let end = (to - 1).min(at + (1 << 16));
                    let rows = start + (at - from) * leaves..start + (end - from) * leaves;
                    kernel.record(state, &rest[1..], at, end, &mut self.snapshots[rows]);
                    at = end;
                }
            }
            _ => {
                for i in from + 1..to {
                    self.scalar
                        .advance(&mut self.working, &mut self.next, i - 1, i);
                    self.store();
                }
            }
        }
        let body = self.working.len();
        if let Some(kernel) = &self.scalar.trail {
            kernel.reverse(
                from,
                &self.snapshots[base..],
                &self.working[leaves + 1..],
                &mut self.reverse_inputs[body..],
                &mut self.captured,
            );
        } else {
            for i in (from..to).rev() {
                let row = base + (i - from) * leaves;
                let (working, snapshots) = (&mut self.working, &self.snapshots);
                copy(&mut working[..leaves], &snapshots[row..row + leaves]);
                self.reverse_step(i);
            }
        }
        self.snapshots.truncate(base + leaves);
        copy(
            &mut self.working[..leaves],
            &self.snapshots[base..base + leaves],
        );
    }
}

impl Reversing<'_> {
    /// Whether an interrupt stopped the reverse (looked up once every
    /// 2^16 steps or so).
    fn interrupted(&mut self) -> bool {
        if self.steps_unchecked >= 1 << 16 {
            self.steps_unchecked = 0;
            self.stopped |= cancel::requested();
        }
        self.stopped
    }

    /// Pushes the working state on the snapshots (their room was reserved
    /// for the most the schedule holds).
    fn store(&mut self) {
        let leaves = self.leaves;
        self.snapshots.extend_from_slice(&self.working[..leaves]);
    }

    /// Reverses step `i`, the working state holding state `i`.
    fn reverse_step(&mut self, i: usize) {
        let leaves = self.leaves;
        let adjoint = self
            .scalar
            .adjoint
            .as_ref()
            .expect("a reverse loop has its reverse body");
        self.working[leaves] = i as f64;
        let body = self.working.len();
        copy(&mut self.reverse_inputs[..body], &self.working);
        adjoint.run(&self.reverse_inputs, &mut self.reverse_outputs);
        copy(
            &mut self.reverse_inputs[body..],
            &self.reverse_outputs[..leaves],
        );
        for (total, term) in self
            .captured
            .iter_mut()
            .zip(&self.reverse_outputs[leaves..])
        {
            *total += term;
        }
    }
}

/// Copies a few numbers (a loop over them: `copy_from_slice` would call
/// `memmove` for each step's handful of numbers).
fn copy(to: &mut [f64], from: &[f64]) {
    for (t, f) in to.iter_mut().zip(from) {
        *t = *f;
    }
}

/// The body's inputs: state, index (0 for now), captures.
fn body_inputs(state: &[f64], captures: &[f64]) -> Vec<f64> {
    let mut inputs = state.to_vec();
    inputs.push(0.0);
    inputs.extend_from_slice(captures);
    inputs
}

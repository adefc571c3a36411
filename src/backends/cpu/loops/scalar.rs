//! Loops over numbers (`scan` whose state, index and captured values are
//! all numbers, such as the logistic map): each body tape is flattened
//! into one register program with a result per output, compiled to a
//! native kernel where native kernels are on (else interpreted register by
//! register), and the loop runs with no allocation per step. Snapshots
//! live on a stack of numbers (the schedules store and free in LIFO order).

use crate::backends::BackendError;
use crate::backends::cpu::elementwise::apply_chunk;
use crate::backends::cpu::storage::reserve;
use crate::backends::cpu::{cancel, measure, native};
use crate::ir::TOp;
use crate::tape::checkpoint::{Action, Steps, Strategy};
use crate::tape::loops::LoopTapes;
use crate::tape::{FusedGroup, Kernel as TapeKernel, Tape};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
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
    body: Program,
    advance: Option<native::LoopKernel>,
    adjoint: Option<Program>,
    /// The whole reverse over a trail of every state (for store-all).
    trail: Option<native::TrailKernel>,
}

/// The loop prepared for running over numbers, if it is one.
pub fn prepare(tapes: &LoopTapes) -> Option<Rc<ScalarLoop>> {
    if let Some(found) = PREPARED.with(|p| p.borrow().get(&tapes.id).cloned()) {
        return found;
    }
    let prepared = (|| {
        let body = Program::from_tape(&tapes.body)?;
        let adjoint = match &tapes.adjoint {
            Some(tape) => Some(Program::from_tape(tape)?),
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
        let snapshots = reserve(held.saturating_mul(leaves), || {
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
    /// snapshot, in the working state), reverses steps `to - 1` down to
    /// `from` from them (one native call where native kernels are on),
    /// and drops them again.
    fn sweep(&mut self, from: usize, to: usize) {
        if to <= from || self.interrupted() {
            return;
        }
        let leaves = self.leaves;
        let base = self.snapshots.len() - leaves;
        self.steps_unchecked += 2 * (to - from);
        for i in from + 1..to {
            self.scalar
                .advance(&mut self.working, &mut self.next, i - 1, i);
            self.store();
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

/// A tape over numbers as one register program.
struct Program {
    group: FusedGroup,
    kernel: Option<native::FlatKernel>,
}

impl Program {
    /// The program of `tape`, when every value is a number and every
    /// instruction elementwise.
    fn from_tape(tape: &Tape) -> Option<Program> {
        if tape.input_shapes.iter().any(|s| !s.is_empty()) {
            return None;
        }
        let inputs = tape.input_shapes.len();
        // Registers are numbered with `u16`.
        let registers: usize = inputs
            + tape
                .instructions
                .iter()
                .map(|i| match &i.op {
                    TapeKernel::Fused(group) => group.steps.len(),
                    _ => 1,
                })
                .sum::<usize>();
        if registers > usize::from(u16::MAX) {
            return None;
        }
        let mut steps: Vec<(TOp, SmallVec<[u16; 3]>)> = Vec::new();
        let mut register_of: FxHashMap<u32, u16> = FxHashMap::default();
        let register = |steps: &Vec<(TOp, SmallVec<[u16; 3]>)>| (inputs + steps.len()) as u16;
        for instruction in &tape.instructions {
            if !instruction.shape.is_empty() {
                return None;
            }
            let args: SmallVec<[u16; 3]> = instruction
                .args
                .iter()
                .map(|s| register_of.get(s).copied())
                .collect::<Option<_>>()?;
            let out = match &instruction.op {
                TapeKernel::Op(TOp::Input { index, .. }) => *index as u16,
                TapeKernel::Op(op @ TOp::Scalar(_)) => {
                    let c = op_constant(op);
                    let r = register(&steps);
                    steps.push((c, SmallVec::new()));
                    r
                }
                TapeKernel::Op(op) if op.is_elementwise() => {
                    let r = register(&steps);
                    steps.push((op.clone(), args));
                    r
                }
                TapeKernel::Fused(group) if group.sum_over.is_none() => {
                    // The group's registers: its operands are `args`.
                    let mut map: Vec<u16> = args.to_vec();
                    for (op, operands) in &group.steps {
                        let operands = operands.iter().map(|&o| map[usize::from(o)]).collect();
                        map.push(register(&steps));
                        steps.push((op.clone(), operands));
                    }
                    map[usize::from(group.results[0])]
                }
                _ => return None,
            };
            register_of.insert(instruction.out, out);
        }
        let results = tape
            .outputs
            .iter()
            .map(|s| register_of.get(s).copied())
            .collect::<Option<_>>()?;
        let group = FusedGroup {
            inputs,
            steps,
            results,
            sum_over: None,
        };
        let kernel = native::native_kernels()
            .then(|| native::compile_flat(&group).ok())
            .flatten();
        Some(Program { group, kernel })
    }

    /// Runs the program on numbers.
    fn run(&self, inputs: &[f64], outputs: &mut [f64]) {
        if let Some(kernel) = &self.kernel {
            kernel.run(inputs, outputs);
            return;
        }
        let mut registers: SmallVec<[f64; 64]> = SmallVec::from_slice(inputs);
        for (op, args) in &self.group.steps {
            let numbers: SmallVec<[[f64; 1]; 3]> =
                args.iter().map(|&r| [registers[usize::from(r)]]).collect();
            let ins: SmallVec<[&[f64]; 3]> = numbers.iter().map(|x| &x[..]).collect();
            let mut out = [0.0];
            apply_chunk(op, &ins, &mut out);
            registers.push(out[0]);
        }
        for (out, &r) in outputs.iter_mut().zip(&self.group.results) {
            *out = registers[usize::from(r)];
        }
    }
}

/// A scalar constant as a step of a register program.
fn op_constant(op: &TOp) -> TOp {
    match op {
        TOp::Scalar(c) => TOp::Map(crate::ir::math::language::Math::Num(*c)),
        other => other.clone(),
    }
}

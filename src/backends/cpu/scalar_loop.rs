//! Loops over numbers (`scan` whose state, index and captured values are
//! all numbers, such as the logistic map): each body tape is flattened
//! into one register program with a result per output, compiled to a
//! native kernel where native kernels are on (else interpreted register by
//! register), and the loop runs with no allocation per step. Snapshots
//! live on a stack of numbers (the schedules store and free in LIFO order).

use super::elementwise::apply_chunk;
use super::execute::reserve;
use super::{cancel, measure, native};
use crate::backends::BackendError;
use crate::egraph::tensor::TOp;
use crate::tape::checkpoint::{Action, Strategy};
use crate::tape::scan::LoopTapes;
use crate::tape::{FusedGroup, Kernel as TapeKernel, Tape};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;

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
        let adjoint = self
            .adjoint
            .as_ref()
            .expect("a reverse loop has its reverse body");
        let leaves = state.len();
        let mut working = body_inputs(state, captures);
        let mut next = vec![0.0; leaves];
        let differentiable = tapes.spec.differentiable.iter().filter(|d| **d).count();
        // Inputs of the reverse step: the body's, then the cotangents.
        let mut reverse_inputs = vec![0.0; working.len() + leaves];
        reverse_inputs[working.len()..].copy_from_slice(cotangent);
        let mut reverse_outputs = vec![0.0; leaves + differentiable];
        let mut captured = vec![0.0; differentiable];
        let (values, flops) = (tapes.body.stats.values, tapes.body.stats.flops);
        let keeps_all = match tapes.spec.strategy {
            Strategy::StoreAll => true,
            Strategy::Revolve(k) => k >= tapes.spec.n,
            Strategy::Recompute => tapes.spec.n <= 1,
        };
        if keeps_all {
            // Every state kept: one pass forward, one back, no schedule.
            let n = tapes.spec.n;
            measure::stored(n * leaves * 8);
            // Each reverse step recomputes the step's intermediates.
            measure::recomputed(n, values, flops);
            let mut trail = reserve(n.saturating_mul(leaves), || {
                format!("the {n} states of a loop's store-all reverse")
            })?;
            for i in 0..n {
                trail.extend(working[..leaves].iter().copied());
                if i + 1 < n {
                    self.advance(&mut working, &mut next, i, i + 1);
                }
            }
            let body = working.len();
            if let Some(kernel) = &self.trail {
                let mut cotangent = reverse_inputs[body..].to_vec();
                kernel.reverse(
                    &trail,
                    &working[leaves + 1..],
                    &mut cotangent,
                    &mut captured,
                );
                measure::released(n * leaves * 8);
                cotangent.extend(captured);
                return Ok(cotangent);
            }
            for i in (0..n).rev() {
                copy(&mut working[..leaves], &trail[i * leaves..(i + 1) * leaves]);
                working[leaves] = i as f64;
                copy(&mut reverse_inputs[..body], &working);
                adjoint.run(&reverse_inputs, &mut reverse_outputs);
                copy(&mut reverse_inputs[body..], &reverse_outputs[..leaves]);
                for (total, term) in captured.iter_mut().zip(&reverse_outputs[leaves..]) {
                    *total += term;
                }
            }
            measure::released(n * leaves * 8);
            let mut all = reverse_inputs[body..].to_vec();
            all.extend(captured);
            return Ok(all);
        }
        let schedule = tapes.schedule();
        let mut snapshots = reserve(schedule.max_snapshots.saturating_mul(leaves), || {
            format!(
                "the {} snapshots of a loop's reverse",
                schedule.max_snapshots
            )
        })?;
        let mut stored: Vec<usize> = Vec::with_capacity(schedule.max_snapshots);
        // The schedule holds at most `max_snapshots` states at once; each
        // reverse step recomputes a step's intermediates.
        measure::stored(schedule.max_snapshots * leaves * 8);
        measure::recomputed(schedule.recomputed_steps + tapes.spec.n, values, flops);
        for (at, action) in schedule.actions().enumerate() {
            if at % 4096 == 0 && cancel::requested() {
                break;
            }
            match action {
                Action::Advance { from, to } => self.advance(&mut working, &mut next, from, to),
                Action::Store(i) => {
                    snapshots.extend(working[..leaves].iter().copied());
                    stored.push(i);
                }
                Action::Restore(i) => {
                    debug_assert_eq!(stored.last(), Some(&i), "restores read the top");
                    let top = snapshots.len() - leaves;
                    copy(&mut working[..leaves], &snapshots[top..]);
                }
                Action::Free(i) => {
                    debug_assert_eq!(stored.last(), Some(&i), "frees are last in, first out");
                    stored.pop();
                    snapshots.truncate(snapshots.len() - leaves);
                }
                Action::Reverse(i) => {
                    working[leaves] = i as f64;
                    let body = working.len();
                    copy(&mut reverse_inputs[..body], &working);
                    adjoint.run(&reverse_inputs, &mut reverse_outputs);
                    copy(&mut reverse_inputs[body..], &reverse_outputs[..leaves]);
                    for (total, term) in captured.iter_mut().zip(&reverse_outputs[leaves..]) {
                        *total += term;
                    }
                }
            }
        }
        measure::released(schedule.max_snapshots * leaves * 8);
        let mut all = reverse_inputs[working.len()..].to_vec();
        all.extend(captured);
        Ok(all)
    }

    /// Steps `from..to` on the state at the start of `inputs`.
    fn advance(&self, inputs: &mut [f64], next: &mut [f64], from: usize, to: usize) {
        let leaves = next.len();
        if let Some(kernel) = &self.advance {
            let (state, rest) = inputs.split_at_mut(leaves);
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
        TOp::Scalar(c) => TOp::Map(crate::egraph::language::Math::Num(*c)),
        other => other.clone(),
    }
}

//! Loops whose body (and, in reverse, whose reverse body) have plans
//! (`planned`), run on flat buffers: the state is one row of numbers
//! written in place step after step (two rows, swapped), snapshots are
//! copies of that row on one stack, each step's slice of a sequence is
//! read where it lies, per-step outputs and sequence cotangents are
//! written straight into their stacked rows, and captured cotangents are
//! summed into one row. No array, reference count or allocation per
//! step: what is left of a step is its plan.
//!
//! `scan` takes this path when both plans exist; a `while-loop` (its
//! condition planned too) takes it forward only, its reverse and loops
//! with values too large to plan go through `scan`'s general path. A loop
//! inside a planned tape runs here on slices of the plan's buffers
//! (`forward_into`).

use crate::backends::BackendError;
use crate::backends::cpu::execute::Buf;
use crate::backends::cpu::planned::{self, Plan};
use crate::backends::cpu::storage::reserve;
use crate::backends::cpu::{cancel, measure, strategy};
use crate::ir::Shape;
use crate::tape::checkpoint::{Action, Reversal, reverse_with};
use crate::tape::loops::LoopTapes;
use ndarray::{ArrayD, IxDyn};
use smallvec::SmallVec;
use std::rc::Rc;

/// The loop's plans, when it can run here (a `while-loop` only forward).
fn plans(tapes: &LoopTapes, reverse: bool) -> Option<(Rc<Plan>, Option<Rc<Plan>>)> {
    if !strategy::flat_loop_applies(&tapes.spec, tapes.condition.is_some(), reverse) {
        return None;
    }
    let body = planned::plan_for((tapes.id, 0), &tapes.body)?;
    let adjoint = if reverse {
        Some(planned::plan_for((tapes.id, 1), tapes.adjoint.as_ref()?)?)
    } else {
        None
    };
    Some((body, adjoint))
}

/// The loop's final state and stacked outputs, as `scan::forward` gives
/// them; `None` where the loop does not run here.
pub fn forward(tapes: &LoopTapes, args: &[Buf]) -> Option<Result<Vec<Buf>, BackendError>> {
    let (body, _) = plans(tapes, false)?;
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    let run = Run::new(tapes, body, args, leaves + spec.xs.len())?;
    let condition = condition_plan(tapes)?;
    Some(run_forward(run, condition.as_deref()).map(|(run, ys)| {
        let mut parts = run.state_parts();
        if let Some(ys) = ys {
            parts.extend(ys.finish(spec.n, &spec.ys));
        }
        parts
    }))
}

/// The loop on flat operands (the initial state's leaves, the sequences,
/// the captures), its result packed into `out` as `scan::forward` packs
/// it (the final state's leaves, then the stacked outputs, one after the
/// other); `None` where the loop does not run here.
pub fn forward_into(
    tapes: &LoopTapes,
    args: &[&[f64]],
    out: &mut [f64],
) -> Option<Result<(), BackendError>> {
    let (body, _) = plans(tapes, false)?;
    let run = Run::from_slices(tapes, body, args)?;
    let condition = condition_plan(tapes)?;
    let ys_len: usize = run.ys.iter().map(|len| len * tapes.spec.n).sum();
    if out.len() != run.state.len() + ys_len {
        return None;
    }
    Some(run_forward(run, condition.as_deref()).map(|(run, ys)| {
        let (state, rest) = out.split_at_mut(run.state.len());
        state.copy_from_slice(&run.state);
        if let Some(ys) = ys {
            let mut rest = rest;
            for data in &ys.data {
                let (part, tail) = rest.split_at_mut(data.len());
                part.copy_from_slice(data);
                rest = tail;
            }
        }
    }))
}

/// A `while-loop`'s condition plan (`Some(None)` for a `scan`; `None`
/// where the condition cannot be planned).
fn condition_plan(tapes: &LoopTapes) -> Option<Option<Rc<Plan>>> {
    match &tapes.condition {
        Some(condition) => Some(Some(planned::plan_for(
            (tapes.id, super::Body::Condition as u8),
            condition,
        )?)),
        None => Some(None),
    }
}

/// Runs a loop forward to its end: a `while-loop` while its condition
/// holds, a `scan` for its `n` steps with its stacked outputs.
fn run_forward<'a>(
    mut run: Run<'a>,
    condition: Option<&Plan>,
) -> Result<(Run<'a>, Option<Rows>), BackendError> {
    if let Some(condition) = condition {
        let mut i = 0;
        while run.go_on(condition, i)? {
            run.advance(i, i + 1, None)?;
            i += 1;
        }
        return Ok((run, None));
    }
    let n = run.tapes.spec.n;
    let mut ys = Rows::new(n, &run.tapes.spec.ys)?;
    run.advance(0, n, Some(&mut ys))?;
    Ok((run, Some(ys)))
}

/// The cotangents of the initial state, of the sequences and of the
/// differentiable captures, as `scan::reverse` gives them (not yet
/// flattened); `None` where the loop does not run here.
pub fn reverse(tapes: &LoopTapes, args: &[Buf]) -> Option<Result<Vec<Buf>, BackendError>> {
    // A store-all loop keeping each step's products (`residuals`) reverses
    // on the general path, which keeps them.
    if tapes.residuals.is_some() {
        return None;
    }
    let (body, adjoint) = plans(tapes, true)?;
    let adjoint = adjoint?;
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    let operands = leaves + spec.xs.len() + spec.captures.len();
    let run = Run::new(tapes, body, args, leaves + spec.xs.len())?;
    // The result's cotangent: the final state's, then the outputs'.
    let parts = super::unpack(args.get(operands)?, &spec.output_parts());
    let mut cotangent = Vec::with_capacity(run.state.len());
    for part in &parts[..leaves] {
        extend_flat(&mut cotangent, part);
    }
    let output_cotangents: Vec<Vec<f64>> = parts[leaves..]
        .iter()
        .map(|p| {
            let mut flat = Vec::new();
            extend_flat(&mut flat, p);
            flat
        })
        .collect();
    let captured_lens: Vec<usize> = spec
        .captures
        .iter()
        .zip(&spec.differentiable)
        .filter(|(_, d)| **d)
        .map(|(s, _)| s.iter().product())
        .collect();
    let mut reverser = Reverser {
        next_cotangent: vec![0.0; cotangent.len()],
        cotangent,
        output_cotangents,
        captured: captured_lens.iter().map(|&n| vec![0.0; n]).collect(),
        terms: captured_lens.iter().map(|&n| vec![0.0; n]).collect(),
        sequence_cotangents: Rows::default(),
        snapshots: Vec::new(),
        stack: Vec::new(),
        reversing: false,
        adjoint,
        run,
    };
    Some((|| {
        reverser.sequence_cotangents = Rows::new(spec.n, &spec.xs)?;
        reverse_with(&mut reverser, tapes.schedule())?;
        Ok(reverser.finish())
    })())
}

/// Appends a value's numbers, row-major.
fn extend_flat(out: &mut Vec<f64>, value: &Buf) {
    match value {
        Buf::Scalar(x) => out.push(*x),
        Buf::Array(a) => match a.as_slice() {
            Some(data) => out.extend_from_slice(data),
            None => out.extend(a.iter()),
        },
    }
}

/// A value of `shape` from its numbers.
fn value(shape: &[usize], data: &[f64]) -> Buf {
    if shape.is_empty() {
        return Buf::Scalar(data[0]);
    }
    let array = ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).expect("sizes match");
    Buf::Array(Rc::new(array))
}

/// A sequence's or a capture's numbers: the caller's array or slice
/// itself, or a row-major copy.
enum Numbers<'a> {
    Shared(Rc<ArrayD<f64>>),
    Borrowed(&'a [f64]),
    Own(Vec<f64>),
}

impl Numbers<'_> {
    fn numbers(&self) -> &[f64] {
        match self {
            Numbers::Shared(a) => a.as_slice().unwrap_or(&[]),
            Numbers::Borrowed(data) => data,
            Numbers::Own(v) => v,
        }
    }

    /// A buffer's numbers, shared where contiguous.
    fn of(buf: &Buf) -> Numbers<'static> {
        match buf {
            Buf::Array(a) if a.as_slice().is_some() => Numbers::Shared(Rc::clone(a)),
            other => {
                let mut data = Vec::new();
                extend_flat(&mut data, other);
                Numbers::Own(data)
            }
        }
    }
}

/// A loop running forward: its state, sequences and captures as numbers.
struct Run<'a> {
    tapes: &'a LoopTapes,
    body: Rc<Plan>,
    /// The state's leaves, one after the other.
    state: Vec<f64>,
    /// Where the next state is written (then swapped with `state`).
    next: Vec<f64>,
    /// Each leaf's range in `state`.
    leaves: Vec<(usize, usize)>,
    /// The ranges of the leaves that steps change (a snapshot holds only
    /// these: the others are the same in every state).
    changing: Vec<(usize, usize)>,
    /// Each sequence's numbers and the length of one step's slice.
    xs: Vec<(Numbers<'a>, usize)>,
    captures: Vec<Numbers<'a>>,
    /// Each per-step output's length.
    ys: Vec<usize>,
    /// Where per-step outputs nobody keeps go (recomputed steps).
    spare: Vec<f64>,
}

impl<'a> Run<'a> {
    /// The loop on `args` (initial state, sequences, captures from
    /// `captures`); `None` where a value's size is not its shape's.
    fn new(tapes: &'a LoopTapes, body: Rc<Plan>, args: &[Buf], captures: usize) -> Option<Run<'a>> {
        let spec = &tapes.spec;
        let leaves = spec.leaves.len();
        for (shape, arg) in spec.xs.iter().zip(&args[leaves..]) {
            if !matches!(arg, Buf::Array(a) if a.shape().first() == Some(&spec.n) && a.shape()[1..] == shape[..])
            {
                return None;
            }
        }
        let numbers = |from: usize, count: usize| -> Option<Vec<Numbers<'a>>> {
            let taken = args.get(from..from + count)?;
            Some(taken.iter().map(Numbers::of).collect())
        };
        let state = numbers(0, leaves)?;
        let xs = numbers(leaves, spec.xs.len())?;
        let held = numbers(captures, spec.captures.len())?;
        Run::from_numbers(tapes, body, state, xs, held)
    }

    /// The loop on flat operands: the initial state's leaves, the
    /// sequences (all their rows) and the captures, one after the other.
    fn from_slices(tapes: &'a LoopTapes, body: Rc<Plan>, args: &[&'a [f64]]) -> Option<Run<'a>> {
        let spec = &tapes.spec;
        let (leaves, xs) = (spec.leaves.len(), spec.xs.len());
        if args.len() != leaves + xs + spec.captures.len() {
            return None;
        }
        let borrowed = |range: std::ops::Range<usize>| -> Vec<Numbers<'a>> {
            args[range].iter().map(|a| Numbers::Borrowed(a)).collect()
        };
        Run::from_numbers(
            tapes,
            body,
            borrowed(0..leaves),
            borrowed(leaves..leaves + xs),
            borrowed(leaves + xs..args.len()),
        )
    }

    /// The loop on its operands' numbers; `None` where a value's size is
    /// not its shape's.
    fn from_numbers(
        tapes: &'a LoopTapes,
        body: Rc<Plan>,
        initial: Vec<Numbers<'a>>,
        sequences: Vec<Numbers<'a>>,
        captures: Vec<Numbers<'a>>,
    ) -> Option<Run<'a>> {
        let spec = &tapes.spec;
        let count = |shape: &Shape| shape.iter().product::<usize>();
        let mut state = Vec::new();
        let mut leaves = Vec::with_capacity(spec.leaves.len());
        for (shape, leaf) in spec.leaves.iter().zip(&initial) {
            let numbers = leaf.numbers();
            if numbers.len() != count(shape) {
                return None;
            }
            let start = state.len();
            state.extend_from_slice(numbers);
            leaves.push((start, state.len()));
        }
        let mut xs = Vec::with_capacity(spec.xs.len());
        for (shape, sequence) in spec.xs.iter().zip(sequences) {
            let len = count(shape);
            if sequence.numbers().len() != len * spec.n {
                return None;
            }
            xs.push((sequence, len));
        }
        if captures.len() != spec.captures.len()
            || initial.len() != spec.leaves.len()
            || xs.len() != spec.xs.len()
            || spec
                .captures
                .iter()
                .zip(&captures)
                .any(|(shape, c)| c.numbers().len() != count(shape))
        {
            return None;
        }
        let changing = leaves
            .iter()
            .enumerate()
            .filter(|(k, _)| !body.passes_through(*k))
            .map(|(_, range)| *range)
            .collect();
        Some(Run {
            tapes,
            body,
            changing,
            next: vec![0.0; state.len()],
            state,
            leaves,
            xs,
            captures,
            ys: spec.ys.iter().map(count).collect(),
            spare: vec![0.0; spec.ys.iter().map(count).sum()],
        })
    }

    /// The body's inputs at step `i`: the state's leaves, the index, the
    /// sequences' slices, the captures.
    fn inputs<'s>(&'s self, index: &'s [f64; 1], i: usize) -> SmallVec<[&'s [f64]; 32]> {
        let mut inputs: SmallVec<[&[f64]; 32]> = SmallVec::new();
        inputs.extend(self.leaves.iter().map(|&(a, b)| &self.state[a..b]));
        inputs.push(index);
        inputs.extend(
            self.xs
                .iter()
                .map(|(data, len)| &data.numbers()[i * len..(i + 1) * len]),
        );
        inputs.extend(self.captures.iter().map(Numbers::numbers));
        inputs
    }

    /// Whether a `while-loop` takes step `i` (its condition on the state);
    /// an error past the loop's step limit.
    fn go_on(&self, condition: &Plan, i: usize) -> Result<bool, BackendError> {
        if i.is_multiple_of(64) && cancel::requested() {
            return Ok(false);
        }
        let index = [i as f64];
        let mut value = [0.0];
        condition.run_flat(&self.inputs(&index, i), &mut [&mut value[..]])?;
        if value[0] != 0.0 && i >= self.tapes.spec.n {
            return Err(BackendError::step_limit(&self.tapes.spec));
        }
        Ok(value[0] != 0.0)
    }

    /// Steps `from..to`, writing per-step outputs into `ys` when given.
    fn advance(
        &mut self,
        from: usize,
        to: usize,
        mut ys: Option<&mut Rows>,
    ) -> Result<(), BackendError> {
        for i in from..to {
            if i.is_multiple_of(64) && cancel::requested() {
                return Ok(());
            }
            let index = [i as f64];
            let mut next = std::mem::take(&mut self.next);
            let mut spare = std::mem::take(&mut self.spare);
            let result = {
                let inputs = self.inputs(&index, i);
                let mut outputs: SmallVec<[&mut [f64]; 16]> = SmallVec::new();
                let mut rest: &mut [f64] = &mut next;
                for &(a, b) in &self.leaves {
                    let (leaf, tail) = std::mem::take(&mut rest).split_at_mut(b - a);
                    outputs.push(leaf);
                    rest = tail;
                }
                match ys.as_deref_mut() {
                    Some(ys) => outputs.extend(ys.rows_at(i)),
                    None => {
                        let mut rest: &mut [f64] = &mut spare;
                        for &len in &self.ys {
                            let (y, tail) = std::mem::take(&mut rest).split_at_mut(len);
                            outputs.push(y);
                            rest = tail;
                        }
                    }
                }
                self.body.run_flat(&inputs, &mut outputs)
            };
            self.next = next;
            self.spare = spare;
            result?;
            std::mem::swap(&mut self.state, &mut self.next);
        }
        Ok(())
    }

    /// The state as values of the leaves' shapes.
    fn state_parts(&self) -> Vec<Buf> {
        self.tapes
            .spec
            .leaves
            .iter()
            .zip(&self.leaves)
            .map(|(shape, &(a, b))| value(shape, &self.state[a..b]))
            .collect()
    }
}

/// Rows of `n` steps of values of some shapes, each part one buffer.
#[derive(Default)]
struct Rows {
    data: Vec<Vec<f64>>,
    lens: Vec<usize>,
}

impl Rows {
    fn new(n: usize, shapes: &[Shape]) -> Result<Rows, BackendError> {
        let mut rows = Rows::default();
        for shape in shapes {
            let len: usize = shape.iter().product();
            let total = len.checked_mul(n).ok_or_else(|| {
                BackendError::new(format!(
                    "out of memory: cannot allocate the {n} stacked steps of shape {shape:?} of a scan"
                ))
            })?;
            let mut data = reserve(total, || {
                format!("the {n} stacked steps of shape {shape:?} of a scan")
            })?;
            data.resize(total, 0.0);
            rows.data.push(data);
            rows.lens.push(len);
        }
        Ok(rows)
    }

    /// Row `i` of every part.
    fn rows_at(&mut self, i: usize) -> impl Iterator<Item = &mut [f64]> {
        self.data
            .iter_mut()
            .zip(&self.lens)
            .map(move |(data, &len)| &mut data[i * len..(i + 1) * len])
    }

    /// The parts as arrays of `n` rows of their shapes.
    fn finish(self, n: usize, shapes: &[Shape]) -> Vec<Buf> {
        self.data
            .into_iter()
            .zip(shapes)
            .map(|(data, shape)| {
                let mut full = vec![n];
                full.extend_from_slice(shape);
                let array = ArrayD::from_shape_vec(IxDyn(&full), data).expect("sizes match");
                Buf::from_array(Rc::new(array))
            })
            .collect()
    }
}

/// A loop's reverse in progress on flat buffers.
struct Reverser<'a> {
    run: Run<'a>,
    adjoint: Rc<Plan>,
    /// The cotangent of the state after the step being reversed.
    cotangent: Vec<f64>,
    next_cotangent: Vec<f64>,
    /// The cotangents of the per-step outputs, stacked.
    output_cotangents: Vec<Vec<f64>>,
    sequence_cotangents: Rows,
    /// Differentiable captures' cotangents, summed over steps.
    captured: Vec<Vec<f64>>,
    /// One step's terms of `captured`.
    terms: Vec<Vec<f64>>,
    /// The stored states' steps and whether still held, oldest first;
    /// their numbers one after the other on `stack`.
    snapshots: Vec<(usize, bool)>,
    stack: Vec<f64>,
    reversing: bool,
}

impl Reversal for Reverser<'_> {
    type Error = BackendError;

    fn go_on(&mut self, i: usize) -> Result<bool, BackendError> {
        Ok(i < self.run.tapes.spec.n)
    }

    fn apply(&mut self, action: Action) -> Result<(), BackendError> {
        let width: usize = self.run.changing.iter().map(|(a, b)| b - a).sum();
        let stats = &self.run.tapes.body.stats;
        match action {
            Action::Advance { from, to } => {
                if self.reversing {
                    measure::recomputed(to - from, stats.values, stats.flops);
                }
                self.run.advance(from, to, None)?;
            }
            Action::Store(i) => {
                self.stack.try_reserve(width).map_err(|_| {
                    BackendError::new(format!(
                        "out of memory: cannot store the state of step {i} ({width} numbers)"
                    ))
                })?;
                for &(a, b) in &self.run.changing {
                    self.stack.extend_from_slice(&self.run.state[a..b]);
                }
                if self.snapshots.is_empty() {
                    // The parts no step changes are held once, for all.
                    measure::stored(8 * (self.run.state.len() - width));
                }
                self.snapshots.push((i, true));
                measure::stored(8 * width);
            }
            Action::Restore(i) => {
                let mut from = self.snapshot_of(i)? * width;
                for &(a, b) in &self.run.changing {
                    self.run.state[a..b].copy_from_slice(&self.stack[from..from + b - a]);
                    from += b - a;
                }
            }
            Action::Free(i) => {
                let at = self.snapshot_of(i)?;
                self.snapshots[at].1 = false;
                measure::released(8 * width);
                // Freed snapshots on top leave the stack.
                while self.snapshots.last().is_some_and(|s| !s.1) {
                    self.snapshots.pop();
                }
                self.stack.truncate(self.snapshots.len() * width);
                if self.snapshots.is_empty() {
                    measure::released(8 * (self.run.state.len() - width));
                }
            }
            Action::Reverse(i) => {
                measure::recomputed(1, stats.values, stats.flops);
                self.reverse_step(i)?;
            }
        }
        Ok(())
    }

    fn reversing(&mut self) {
        self.reversing = true;
    }

    fn cancelled(&self) -> bool {
        cancel::requested()
    }
}

impl Reverser<'_> {
    /// Where the held snapshot of state `i` is (near the top).
    fn snapshot_of(&self, i: usize) -> Result<usize, BackendError> {
        self.snapshots
            .iter()
            .rposition(|&(step, held)| held && step == i)
            .ok_or_else(|| BackendError::new(format!("no snapshot of step {i}")))
    }

    /// Reverses step `i` from the state before it (in `run.state`).
    fn reverse_step(&mut self, i: usize) -> Result<(), BackendError> {
        let index = [i as f64];
        let mut inputs = self.run.inputs(&index, i);
        inputs.extend(self.run.leaves.iter().map(|&(a, b)| &self.cotangent[a..b]));
        let lens = &self.run.ys;
        inputs.extend(
            self.output_cotangents
                .iter()
                .zip(lens)
                .map(|(dys, &len)| &dys[i * len..(i + 1) * len]),
        );
        let mut outputs: SmallVec<[&mut [f64]; 16]> = SmallVec::new();
        let mut rest: &mut [f64] = &mut self.next_cotangent;
        for &(a, b) in &self.run.leaves {
            let (leaf, tail) = std::mem::take(&mut rest).split_at_mut(b - a);
            outputs.push(leaf);
            rest = tail;
        }
        outputs.extend(self.sequence_cotangents.rows_at(i));
        outputs.extend(self.terms.iter_mut().map(|t| &mut t[..]));
        self.adjoint.run_flat(&inputs, &mut outputs)?;
        drop(outputs);
        drop(inputs);
        for (total, term) in self.captured.iter_mut().zip(&self.terms) {
            for (t, x) in total.iter_mut().zip(term) {
                *t += x;
            }
        }
        std::mem::swap(&mut self.cotangent, &mut self.next_cotangent);
        Ok(())
    }

    /// The initial state's cotangent, the sequences', the captures'.
    fn finish(self) -> Vec<Buf> {
        let spec = &self.run.tapes.spec;
        let mut all: Vec<Buf> = spec
            .leaves
            .iter()
            .zip(&self.run.leaves)
            .map(|(shape, &(a, b))| value(shape, &self.cotangent[a..b]))
            .collect();
        all.extend(self.sequence_cotangents.finish(spec.n, &spec.xs));
        let captured_shapes = spec
            .captures
            .iter()
            .zip(&spec.differentiable)
            .filter(|(_, d)| **d)
            .map(|(s, _)| s);
        for (total, shape) in self.captured.iter().zip(captured_shapes) {
            all.push(value(shape, total));
        }
        all
    }
}

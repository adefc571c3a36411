//! Loops (`scan`, `while-loop`) on the CPU, all in this folder: `scalar`
//! (loops over numbers), `flat` (bodies with plans, on flat buffers), and
//! here the general path: the body's tape run `n` times, and the reverse
//! following the checkpoint schedule (advance, store, restore, reverse one
//! step with the body's reverse tape). Which one runs is decided as
//! `strategy` says.

mod flat;
mod scalar;

use crate::backends::BackendError;
use crate::backends::cpu::execute::{Buf, run};
use crate::backends::cpu::storage::Recurring;
use crate::backends::cpu::{cancel, measure, planned, strategy};
use crate::tape::checkpoint::Action;
use crate::tape::checkpoint::online::reverse_online;
use crate::tape::checkpoint::{Reversal, reverse_with};
use crate::tape::loops::LoopTapes;
use ndarray::{Array1, ArrayD, Axis, IxDyn};
use std::rc::Rc;

/// `forward` on flat operands, the packed result written into `out`;
/// `None` where the loop needs the general path (`forward`).
pub fn forward_into(
    tapes: &LoopTapes,
    args: &[&[f64]],
    out: &mut [f64],
) -> Option<Result<(), BackendError>> {
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    let numbers = spec
        .leaves
        .iter()
        .chain(&spec.captures)
        .all(|s| s.is_empty())
        && args.iter().all(|a| a.len() == 1);
    if strategy::scalar_loop_applies(spec, tapes.condition.is_some(), numbers)
        && out.len() == leaves
        && let Some(program) = scalar::prepare(tapes)
    {
        let numbers: Vec<f64> = args.iter().map(|a| a[0]).collect();
        let state = program.forward(tapes, &numbers[..leaves], &numbers[leaves..]);
        out.copy_from_slice(&state);
        return Some(Ok(()));
    }
    flat::forward_into(tapes, args, out)
}

/// The loop's final state and stacked outputs (packed when more than one
/// state leaf or any outputs).
pub fn forward(tapes: &LoopTapes, args: &[Buf]) -> Result<Buf, BackendError> {
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    if strategy::scalar_loop_applies(spec, tapes.condition.is_some(), true)
        && let (Some(numbers), Some(program)) = (numbers(args), scalar::prepare(tapes))
    {
        let state = program.forward(tapes, &numbers[..leaves], &numbers[leaves..]);
        return Ok(pack(
            &state.into_iter().map(Buf::Scalar).collect::<Vec<_>>(),
        ));
    }
    if let Some(parts) = flat::forward(tapes, args) {
        let parts = parts?;
        return Ok(if spec.ys.is_empty() {
            pack(&parts[..leaves])
        } else {
            flat(&parts)
        });
    }
    let xs = Sequences::read(tapes, args)?;
    let mut inputs = body_inputs(tapes, &args[..leaves], &args[leaves + spec.xs.len()..]);
    if tapes.condition.is_some() {
        let mut i = 0;
        while go_on(tapes, &mut inputs, i)? {
            advance(tapes, &mut inputs, &xs, None, i, i + 1)?;
            i += 1;
        }
        return Ok(pack(&inputs[..leaves]));
    }
    let mut ys = Stacked::new(spec.n, &spec.ys)?;
    advance(tapes, &mut inputs, &xs, Some(&mut ys), 0, spec.n)?;
    if spec.ys.is_empty() {
        return Ok(pack(&inputs[..leaves]));
    }
    let mut parts = inputs[..leaves].to_vec();
    parts.extend(ys.finish(spec));
    Ok(flat(&parts))
}

/// Whether a `while-loop` whose working inputs hold state `i` runs step
/// `i`: its condition is nonzero there (an error once it has run its
/// `:max-steps`; false when an interrupt is asked for, which the caller
/// reports).
fn go_on(tapes: &LoopTapes, inputs: &mut [Buf], i: usize) -> Result<bool, BackendError> {
    let Some(condition) = &tapes.condition else {
        return Ok(i < tapes.spec.n);
    };
    if i.is_multiple_of(64) && cancel::requested() {
        return Ok(false);
    }
    inputs[tapes.spec.leaves.len()] = Buf::Scalar(i as f64);
    let value = match run_body(tapes, Body::Condition, condition, inputs)?.first() {
        Some(Buf::Scalar(x)) => *x,
        Some(Buf::Array(a)) if a.len() == 1 => a.iter().copied().next().unwrap_or(0.0),
        _ => {
            return Err(BackendError::new(
                "a while-loop's condition must give one number (a comparison)",
            ));
        }
    };
    if value != 0.0 && i >= tapes.spec.n {
        return Err(BackendError::step_limit(&tapes.spec));
    }
    Ok(value != 0.0)
}

/// The cotangents of the initial state's leaves, of the sequences and of
/// the differentiable captures, flat, given the operands and the result's
/// cotangent.
pub fn reverse(tapes: &LoopTapes, args: &[Buf]) -> Result<Buf, BackendError> {
    let spec = &tapes.spec;
    let (leaves, xs_count, captures) = (spec.leaves.len(), spec.xs.len(), spec.captures.len());
    let operands = &args[..leaves + xs_count + captures];
    if strategy::scalar_loop_applies(spec, tapes.condition.is_some(), true)
        && let (Some(numbers), Some(program)) = (numbers(operands), scalar::prepare(tapes))
    {
        let cotangent: Vec<f64> = args[leaves + captures].to_array().iter().copied().collect();
        let all = program.reverse(
            tapes,
            &numbers[..leaves],
            &numbers[leaves..leaves + captures],
            &cotangent,
        )?;
        return Ok(flat(&all.into_iter().map(Buf::Scalar).collect::<Vec<_>>()));
    }
    if let Some(all) = flat::reverse(tapes, args) {
        return Ok(flat(&all?));
    }
    let mut reverser = Reverser::new(tapes, args)?;
    match tapes.condition {
        None => reverse_with(&mut reverser, tapes.schedule())?,
        Some(_) => reverse_online(&mut reverser, snapshots_of(spec.strategy))?,
    }
    reverser.finish()
}

/// The snapshots a `while-loop` may hold under `strategy`.
pub(crate) fn snapshots_of(strategy: crate::tape::checkpoint::Strategy) -> usize {
    use crate::tape::checkpoint::Strategy;
    match strategy {
        Strategy::StoreAll => usize::MAX / 2,
        Strategy::Recompute => 1,
        Strategy::Revolve(k) => k.max(1),
    }
}

/// A loop's reverse in progress: the working inputs, the snapshots, and
/// the cotangents gathered so far; `apply` takes one schedule action.
struct Reverser<'a> {
    tapes: &'a LoopTapes,
    adjoint: &'a crate::tape::Tape,
    working: Vec<Buf>,
    xs: Sequences,
    cotangents: Vec<Buf>,
    output_cotangents: Vec<Rc<ArrayD<f64>>>,
    sequence_cotangents: Stacked,
    captured: Vec<Option<Buf>>,
    /// The stored states with their step, oldest first (schedules free
    /// them newest first, so each action looks at the top).
    snapshots: Vec<(usize, Vec<Buf>)>,
    /// The buffers the snapshots hold, for `tape-stats`.
    held: measure::Held,
    /// Whether a step has been reversed (advances after it are
    /// recomputations).
    reversing: bool,
    /// The reverse step's inputs (storage reused from step to step).
    inputs: Vec<Buf>,
    /// Per step the forward sweep ran, the products it kept for the
    /// reverse step (`residuals`), oldest first.
    kept: Vec<(usize, Vec<Buf>)>,
    /// The captured matrices the reverse step reads transposed, copied
    /// so (`Residuals::transposed`).
    transposed: Copies,
}

impl Reversal for Reverser<'_> {
    type Error = BackendError;

    fn go_on(&mut self, i: usize) -> Result<bool, BackendError> {
        go_on(self.tapes, &mut self.working, i)
    }

    fn apply(&mut self, action: Action) -> Result<(), BackendError> {
        Reverser::apply(self, action)
    }

    fn reversing(&mut self) {
        self.reversing = true;
    }

    fn cancelled(&self) -> bool {
        cancel::requested()
    }
}

impl<'a> Reverser<'a> {
    fn new(tapes: &'a LoopTapes, args: &[Buf]) -> Result<Reverser<'a>, BackendError> {
        let spec = &tapes.spec;
        let adjoint = tapes
            .adjoint
            .as_ref()
            .ok_or_else(|| BackendError::new("a reverse loop without its reverse body"))?;
        let (leaves, xs_count) = (spec.leaves.len(), spec.xs.len());
        let operands = leaves + xs_count + spec.captures.len();
        let xs = Sequences::read(tapes, args)?;
        let working = body_inputs(tapes, &args[..leaves], &args[leaves + xs_count..operands]);
        let transposed = match &tapes.residuals {
            Some(residuals) => residuals
                .transposed
                .iter()
                .map(|&k| transposed(&working[k]))
                .collect(),
            None => Vec::new(),
        };
        let transposed = Copies::new(transposed);
        let mut parts = unpack(&args[operands], &spec.output_parts()).into_iter();
        let cotangents: Vec<Buf> = parts.by_ref().take(leaves).collect();
        let output_cotangents = parts.map(|p| Rc::new(p.to_array())).collect();
        Ok(Reverser {
            tapes,
            adjoint,
            working,
            xs,
            cotangents,
            output_cotangents,
            sequence_cotangents: Stacked::new(spec.n, &spec.xs)?,
            captured: vec![None; spec.differentiable.iter().filter(|d| **d).count()],
            snapshots: Vec::new(),
            held: measure::Held::default(),
            reversing: false,
            inputs: Vec::new(),
            kept: Vec::new(),
            transposed,
        })
    }

    /// Takes one action of the schedule.
    fn apply(&mut self, action: Action) -> Result<(), BackendError> {
        let tapes = self.tapes;
        let spec = &tapes.spec;
        let leaves = spec.leaves.len();
        let (values, flops) = (tapes.body.stats.values, tapes.body.stats.flops);
        match action {
            Action::Advance { from, to } => {
                if self.reversing {
                    measure::recomputed(to - from, values, flops);
                }
                match &tapes.residuals {
                    Some(residuals) if !self.reversing => {
                        self.advance_keeping(residuals, from, to)?
                    }
                    _ => advance(tapes, &mut self.working, &self.xs, None, from, to)?,
                }
            }
            Action::Store(i) => {
                let snapshot = self.working[..leaves].to_vec();
                for leaf in &snapshot {
                    count_held(&mut self.held, leaf, true);
                }
                self.snapshots.push((i, snapshot));
            }
            Action::Restore(i) => {
                let at = self.snapshot_of(i)?;
                self.working[..leaves].clone_from_slice(&self.snapshots[at].1);
            }
            Action::Free(i) => {
                let at = self.snapshot_of(i)?;
                for leaf in self.snapshots.remove(at).1 {
                    count_held(&mut self.held, &leaf, false);
                    // A freed state's storage serves later steps' results
                    // (fresh storage is zeroed first: 6% of W4's gradient).
                    if let Buf::Array(array) = leaf {
                        crate::backends::cpu::storage::recycle(array);
                    }
                }
            }
            Action::Reverse(i) => {
                // The reverse step recomputes the step's intermediates.
                measure::recomputed(1, values, flops);
                self.working[leaves] = Buf::Scalar(i as f64);
                self.xs.set_rows(&mut self.working[leaves + 1..], i);
                let mut inputs = std::mem::take(&mut self.inputs);
                inputs.clear();
                inputs.extend_from_slice(&self.working);
                inputs.append(&mut self.cotangents);
                for (dys, shape) in self.output_cotangents.iter().zip(&spec.ys) {
                    inputs.push(row(dys, i, shape));
                }
                let outputs = match &tapes.residuals {
                    Some(residuals) => self.kept_of(residuals, i).and_then(|kept| {
                        inputs.extend(kept);
                        inputs.extend(self.transposed.0.iter().cloned());
                        run_body(tapes, Body::KeptReverse, &residuals.adjoint, &inputs)
                    }),
                    None => run_body(tapes, Body::Reverse, self.adjoint, &inputs),
                };
                // The cotangent this step read gives its storage to later
                // results, as the state does in `advance`.
                for input in inputs.drain(..) {
                    if let Buf::Array(array) = input {
                        crate::backends::cpu::storage::recycle(array);
                    }
                }
                self.inputs = inputs;
                let outputs = outputs?;
                let mut outputs = outputs.into_iter();
                self.cotangents.extend(outputs.by_ref().take(leaves));
                for (k, term) in outputs.by_ref().take(spec.xs.len()).enumerate() {
                    self.sequence_cotangents.write(k, i, &term);
                }
                for (total, term) in self.captured.iter_mut().zip(outputs) {
                    accumulate(total, term);
                }
            }
        }
        Ok(())
    }

    /// Steps `from..to` through the step that also returns its products,
    /// kept (on `kept`) for the reverse steps.
    fn advance_keeping(
        &mut self,
        residuals: &crate::tape::residuals::Residuals,
        from: usize,
        to: usize,
    ) -> Result<(), BackendError> {
        let tapes = self.tapes;
        let leaves = tapes.spec.leaves.len();
        let outputs = leaves + tapes.spec.ys.len();
        for i in from..to {
            if i.is_multiple_of(64) && cancel::requested() {
                return Ok(());
            }
            self.working[leaves] = Buf::Scalar(i as f64);
            self.xs.set_rows(&mut self.working[leaves + 1..], i);
            let mut next = run_body(tapes, Body::KeptStep, &residuals.body, &self.working)?;
            let kept = next.split_off(outputs);
            for leaf in &kept {
                count_held(&mut self.held, leaf, true);
            }
            self.kept.push((i, kept));
            for (slot, value) in self.working.iter_mut().zip(next.into_iter().take(leaves)) {
                *slot = value;
            }
        }
        Ok(())
    }

    /// The products step `i` keeps: from the stack where the forward
    /// sweep kept them, else computed now from the step's state.
    fn kept_of(
        &mut self,
        residuals: &crate::tape::residuals::Residuals,
        i: usize,
    ) -> Result<Vec<Buf>, BackendError> {
        if self.kept.last().is_some_and(|(step, _)| *step == i) {
            let (_, kept) = self.kept.pop().expect("just looked");
            for leaf in &kept {
                count_held(&mut self.held, leaf, false);
            }
            return Ok(kept);
        }
        let tapes = self.tapes;
        let outputs = tapes.spec.leaves.len() + tapes.spec.ys.len();
        let mut all = run_body(tapes, Body::KeptStep, &residuals.body, &self.working)?;
        Ok(all.split_off(outputs))
    }

    /// Where the snapshot of state `i` is (near the top).
    fn snapshot_of(&self, i: usize) -> Result<usize, BackendError> {
        self.snapshots
            .iter()
            .rposition(|(step, _)| *step == i)
            .ok_or_else(|| BackendError::new(format!("no snapshot of step {i}")))
    }

    /// All cotangents, flat: the initial state's, the sequences', the
    /// differentiable captures'.
    fn finish(self) -> Result<Buf, BackendError> {
        let spec = &self.tapes.spec;
        let mut all = self.cotangents;
        all.extend(self.sequence_cotangents.finish(spec));
        let shapes = spec.adjoint_shapes();
        let skip = spec.leaves.len() + spec.xs.len();
        for (total, shape) in self.captured.into_iter().zip(&shapes[skip..]) {
            all.push(total.unwrap_or_else(|| zeros(shape)));
        }
        Ok(flat(&all))
    }
}

/// Counts a snapshot's part as held (`hold`) or let go: an array by its
/// buffer (shared buffers once), a number by itself.
fn count_held(held: &mut measure::Held, leaf: &Buf, hold: bool) {
    match (leaf, hold) {
        (Buf::Scalar(_), true) => measure::stored(8),
        (Buf::Scalar(_), false) => measure::released(8),
        (Buf::Array(a), true) => held.hold(Rc::as_ptr(a) as usize, a.len() * 8),
        (Buf::Array(a), false) => held.release(Rc::as_ptr(a) as usize, a.len() * 8),
    }
}

/// The operands as numbers, when all are.
fn numbers(args: &[Buf]) -> Option<Vec<f64>> {
    args.iter()
        .map(|a| match a {
            Buf::Scalar(x) => Some(*x),
            Buf::Array(_) => None,
        })
        .collect()
}

/// The sequences a loop scans, each with the shape of one step's slice.
struct Sequences {
    rows: Vec<(Rc<ArrayD<f64>>, crate::ir::Shape)>,
    /// Per sequence, the arrays its rows were given in.
    given: std::cell::RefCell<Vec<Recurring>>,
}

impl Sequences {
    /// The sequences among a loop's operands (after the state's leaves).
    fn read(tapes: &LoopTapes, args: &[Buf]) -> Result<Sequences, BackendError> {
        let spec = &tapes.spec;
        let leaves = spec.leaves.len();
        let rows = spec
            .xs
            .iter()
            .zip(&args[leaves..leaves + spec.xs.len()])
            .map(|(step, seq)| {
                let array = match seq {
                    Buf::Array(a) => Rc::clone(a),
                    Buf::Scalar(_) => {
                        return Err(BackendError::new("a scanned sequence is a number"));
                    }
                };
                if array.shape().first() != Some(&spec.n) || array.shape()[1..] != step[..] {
                    return Err(BackendError::new(format!(
                        "a scanned sequence of shape {:?} for {} steps of shape {:?}",
                        array.shape(),
                        spec.n,
                        &step[..]
                    )));
                }
                Ok((array, step.clone()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Sequences {
            rows,
            given: Default::default(),
        })
    }

    /// Puts row `i` of each sequence into `slots` (in arrays reused once
    /// the steps that read them let go).
    fn set_rows(&self, slots: &mut [Buf], i: usize) {
        let mut given = self.given.borrow_mut();
        if given.len() < self.rows.len() {
            given.resize_with(self.rows.len(), Recurring::default);
        }
        for ((slot, (seq, step)), given) in slots.iter_mut().zip(&self.rows).zip(given.iter_mut()) {
            let len: usize = step.iter().product();
            *slot = match seq.as_slice() {
                Some(data) if !step.is_empty() => {
                    Buf::Array(given.array(step, &data[i * len..(i + 1) * len]))
                }
                _ => row(seq, i, step),
            };
        }
    }
}

/// Row `i` of a sequence, as a value of one step's shape.
fn row(seq: &ArrayD<f64>, i: usize, step: &[usize]) -> Buf {
    let view = seq.index_axis(Axis(0), i);
    if step.is_empty() {
        return Buf::Scalar(view.iter().next().copied().unwrap_or(f64::NAN));
    }
    Buf::from_array(Rc::new(view.to_owned()))
}

/// Values of one step's shapes stacked along a new first axis, a row
/// per step, in storage reserved up front (a failure to reserve is an
/// error, not an abort).
struct Stacked {
    data: Vec<Vec<f64>>,
    lens: Vec<usize>,
}

impl Stacked {
    /// Zeros for `n` steps of each of `shapes`.
    fn new(n: usize, shapes: &[crate::ir::Shape]) -> Result<Stacked, BackendError> {
        let mut data = Vec::with_capacity(shapes.len());
        let mut lens = Vec::with_capacity(shapes.len());
        for shape in shapes {
            let len: usize = shape.iter().product();
            let total = len.checked_mul(n).ok_or_else(|| too_large(n, shape))?;
            let mut rows = crate::backends::cpu::storage::reserve(total, || {
                format!("the {n} stacked steps of shape {shape:?} of a scan")
            })?;
            rows.resize(total, 0.0);
            data.push(rows);
            lens.push(len);
        }
        Ok(Stacked { data, lens })
    }

    /// Writes `value` as row `i` of part `k`.
    fn write(&mut self, k: usize, i: usize, value: &Buf) {
        let len = self.lens[k];
        let out = &mut self.data[k][i * len..(i + 1) * len];
        match value {
            Buf::Scalar(x) => out[0] = *x,
            Buf::Array(a) => match a.as_slice() {
                Some(row) if row.len() == len => out.copy_from_slice(row),
                _ => {
                    for (o, x) in out.iter_mut().zip(a.iter()) {
                        *o = *x;
                    }
                }
            },
        }
    }

    /// The stacked parts as arrays of `n` rows.
    fn finish(self, spec: &crate::ir::loops::ScanSpec) -> Vec<Buf> {
        self.data
            .into_iter()
            .zip(&self.lens)
            .map(|(data, &len)| {
                let shape = [spec.n, len];
                let array = ArrayD::from_shape_vec(IxDyn(&shape), data).expect("sizes match");
                Buf::from_array(Rc::new(array))
            })
            .collect()
    }
}

/// The error for stacked outputs the machine cannot hold.
fn too_large(n: usize, step: &[usize]) -> BackendError {
    BackendError::new(format!(
        "out of memory: cannot allocate the {n} stacked steps of shape {:?} of a scan",
        step
    ))
}

/// The body's inputs: state leaves, the index (0 for now), the slices of
/// the sequences (placeholders until a step sets them), captures.
fn body_inputs(tapes: &LoopTapes, state: &[Buf], captures: &[Buf]) -> Vec<Buf> {
    let mut inputs = state.to_vec();
    inputs.push(Buf::Scalar(0.0));
    inputs.extend(tapes.spec.xs.iter().map(|_| Buf::Scalar(0.0)));
    inputs.extend_from_slice(captures);
    inputs
}

/// Runs steps `from..to` on the state in `inputs`, writing the steps'
/// outputs into `ys` when given.
fn advance(
    tapes: &LoopTapes,
    inputs: &mut [Buf],
    xs: &Sequences,
    mut ys: Option<&mut Stacked>,
    from: usize,
    to: usize,
) -> Result<(), BackendError> {
    let leaves = tapes.spec.leaves.len();
    for i in from..to {
        if i.is_multiple_of(64) && cancel::requested() {
            return Ok(());
        }
        inputs[leaves] = Buf::Scalar(i as f64);
        xs.set_rows(&mut inputs[leaves + 1..], i);
        let next = run_body(tapes, Body::Step, &tapes.body, inputs)?;
        let mut next = next.into_iter();
        for (slot, value) in inputs.iter_mut().zip(next.by_ref().take(leaves)) {
            // The state this step read, unless a snapshot keeps it, gives
            // its storage to the next step's results.
            if let Buf::Array(old) = std::mem::replace(slot, value) {
                crate::backends::cpu::storage::recycle(old);
            }
        }
        if let Some(ys) = ys.as_deref_mut() {
            for (k, value) in next.enumerate() {
                ys.write(k, i, &value);
            }
        }
    }
    Ok(())
}

/// Which of a loop's tapes runs.
#[derive(Clone, Copy)]
pub(super) enum Body {
    Step = 0,
    Reverse = 1,
    /// The step that also returns its products (`residuals`).
    KeptStep = 2,
    /// The reverse step that reads them.
    KeptReverse = 3,
    /// A while-loop's condition.
    Condition = 4,
}

/// Runs one of a loop's tapes on `inputs`: from its plan (`planned`)
/// where it has one, else through the general executor.
fn run_body(
    tapes: &LoopTapes,
    which: Body,
    tape: &crate::tape::Tape,
    inputs: &[Buf],
) -> Result<Vec<Buf>, BackendError> {
    if planned::enabled()
        && let Some(plan) = planned::plan_for((tapes.id, which as u8), tape)
    {
        return plan.run(inputs);
    }
    run(tape, inputs)
}

/// A state as the scan's result: one leaf as it is, several flattened and
/// joined.
fn pack(leaves: &[Buf]) -> Buf {
    match leaves {
        [one] => one.clone(),
        many => flat(many),
    }
}

/// Buffers flattened and joined into one vector.
fn flat(parts: &[Buf]) -> Buf {
    let total = parts
        .iter()
        .map(|p| match p {
            Buf::Scalar(_) => 1,
            Buf::Array(a) => a.len(),
        })
        .sum();
    let mut data = Vec::with_capacity(total);
    for part in parts {
        match part {
            Buf::Scalar(x) => data.push(*x),
            Buf::Array(a) => match a.as_slice() {
                Some(numbers) => data.extend_from_slice(numbers),
                None => data.extend(a.iter()),
            },
        }
    }
    Buf::from_array(Rc::new(Array1::from(data).into_dyn()))
}

/// A packed value split into parts of these shapes.
/// A packed value (a loop's result, or a cotangent of one) split into
/// parts of these shapes (a value of one part's shape is that part).
pub fn unpack(packed: &Buf, shapes: &[crate::ir::Shape]) -> Vec<Buf> {
    if let [shape] = shapes
        && packed.shape() == &shape[..]
    {
        return vec![packed.clone()];
    }
    let owned: Vec<f64>;
    let data: &[f64] = match packed {
        Buf::Scalar(x) => std::slice::from_ref(x),
        Buf::Array(a) => match a.as_slice() {
            Some(numbers) => numbers,
            None => {
                owned = a.iter().copied().collect();
                &owned
            }
        },
    };
    let mut offset = 0;
    shapes
        .iter()
        .map(|shape| {
            let len: usize = shape.iter().product();
            let part = data[offset..offset + len].to_vec();
            offset += len;
            let array = ArrayD::from_shape_vec(IxDyn(shape), part).expect("lengths match");
            Buf::from_array(Rc::new(array))
        })
        .collect()
}

/// Adds `term` into `total` (which starts empty), in place: a captured
/// value's cotangent summed over the steps costs one pass over it a step,
/// with no copy (and the term's storage is kept for the next).
fn accumulate(total: &mut Option<Buf>, term: Buf) {
    match (total.as_mut(), term) {
        (None, term) => *total = Some(term),
        (Some(Buf::Scalar(x)), Buf::Scalar(y)) => *x += y,
        (Some(Buf::Array(sum)), Buf::Array(term)) if sum.shape() == term.shape() => {
            let sum = Rc::make_mut(sum);
            match (sum.as_slice_mut(), term.as_slice()) {
                (Some(sum), Some(term)) => add_into(sum, term),
                _ => *sum += &*term,
            }
            // The term's storage serves the next step's term.
            crate::backends::cpu::storage::recycle(term);
        }
        (Some(sum), term) => {
            *total = Some(Buf::from_array(Rc::new(sum.to_array() + &term.to_array())));
        }
    }
}

/// Values a reverse holds from start to end, counted as alive meanwhile
/// (values, not snapshots).
struct Copies(Vec<Buf>);

impl Copies {
    fn new(values: Vec<Buf>) -> Copies {
        let copies = Copies(values);
        measure::alive(copies.bytes());
        copies
    }

    fn bytes(&self) -> usize {
        let numbers: usize = self
            .0
            .iter()
            .map(|v| v.shape().iter().product::<usize>())
            .sum();
        8 * numbers
    }
}

impl Drop for Copies {
    fn drop(&mut self) {
        measure::dead(self.bytes());
    }
}

/// `sum += term`, over the threads where long (a layer's weight
/// gradient is added into its total every reverse step).
fn add_into(sum: &mut [f64], term: &[f64]) {
    const PIECE: usize = 1 << 14;
    let add = |(sum, term): (&mut [f64], &[f64])| {
        for (s, t) in sum.iter_mut().zip(term) {
            *s += t;
        }
    };
    if sum.len() >= 2 * PIECE {
        use rayon::prelude::*;
        sum.par_chunks_mut(PIECE)
            .zip(term.par_chunks(PIECE))
            .for_each(add);
    } else {
        add((sum, term));
    }
}

/// A matrix transposed, row-major (copied tile by tile, once).
fn transposed(matrix: &Buf) -> Buf {
    let copy = match matrix {
        Buf::Array(array) => {
            crate::backends::cpu::broadcast::standard(&array.view().reversed_axes())
        }
        Buf::Scalar(x) => ArrayD::from_elem(IxDyn(&[]), *x),
    };
    Buf::from_array(Rc::new(copy))
}

fn zeros(shape: &[usize]) -> Buf {
    Buf::from_array(Rc::new(ArrayD::zeros(IxDyn(shape))))
}

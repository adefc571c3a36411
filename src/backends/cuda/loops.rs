//! Loops (`scan`) on a device: the host drives the body's tape `n` times
//! on device values, and the reverse follows the checkpoint schedule
//! (advance, store, restore, reverse one step), as on the CPU. Snapshots
//! of the state stay in device memory. A loop over numbers alone runs on
//! the CPU, which is faster than a launch per step.

use super::execute::{self, elementwise, filled, on_device};
use super::launch::single_step;
use super::machine::{Datum, Machine, from_host, release, to_host};
use crate::backends::BackendError;
use crate::backends::cpu::{self, Buf, cancel, measure};
use crate::ir::math::language::Math;
use crate::ir::{Shape, TOp};
use crate::tape::checkpoint::Action;
use crate::tape::checkpoint::online::reverse_online;
use crate::tape::checkpoint::{Reversal, reverse_with};
use crate::tape::loops::LoopTapes;
use egg::Id;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// A loop or its reverse on device values.
pub fn run_loop<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    args: &[&Datum<M::Mem>],
) -> Result<Datum<M::Mem>, BackendError> {
    // A loop over numbers (state and captures; a reverse loop's cotangent
    // may be a packed array of them) runs on the CPU.
    let spec = &tapes.spec;
    let operands = spec.leaves.len() + spec.xs.len() + spec.captures.len();
    let numbers: Option<Vec<Buf>> = args[..operands.min(args.len())]
        .iter()
        .map(|a| match a {
            Datum::Host(x) => Some(Buf::Scalar(*x)),
            Datum::Device { .. } | Datum::F32 { .. } => None,
        })
        .collect();
    if let Some(mut numbers) = numbers {
        for extra in &args[numbers.len()..] {
            let data = to_host(machine, extra)?;
            let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(extra.shape()), data)
                .map_err(|e| {
                    BackendError::new(format!("a loop cotangent of the wrong size: {e}"))
                })?;
            numbers.push(Buf::from_array(Rc::new(array)));
        }
        let result = cpu::run_loop(tapes, &numbers)?;
        let array = result.to_array();
        let data: Vec<f64> = array.iter().copied().collect();
        return from_host(machine, &data, array.shape());
    }
    let args: Vec<Datum<M::Mem>> = args.iter().map(|a| (*a).clone()).collect();
    if tapes.reverse {
        reverse(machine, tapes, &args)
    } else {
        forward(machine, tapes, &args)
    }
}

/// The loop's final state and stacked outputs (packed when more than one
/// state leaf or any outputs).
fn forward<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    args: &[Datum<M::Mem>],
) -> Result<Datum<M::Mem>, BackendError> {
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    let xs = Sequences::read(machine, tapes, args)?;
    let mut inputs = body_inputs(tapes, &args[..leaves], &args[leaves + spec.xs.len()..]);
    if tapes.condition.is_some() {
        run_while(machine, tapes, &mut inputs, &xs)?;
        return pack(machine, &inputs[..leaves]);
    }
    let mut ys = Stacked::new(machine, spec.n, &spec.ys)?;
    advance(machine, tapes, &mut inputs, &xs, Some(&mut ys), 0, spec.n)?;
    if spec.ys.is_empty() {
        return pack(machine, &inputs[..leaves]);
    }
    let mut parts = inputs[..leaves].to_vec();
    parts.extend(ys.finish(machine)?);
    flat(machine, &parts)
}

/// The most steps a `while-loop` runs before reading their conditions.
const MOST_STEPS_AHEAD: usize = 32;

/// The most bytes of states a `while-loop` keeps while running ahead.
const BYTES_AHEAD: usize = 64 << 20;

/// Runs a `while-loop`'s steps on the state in `inputs`, reading the
/// condition back once per group of steps rather than once per step: a
/// group evaluates the condition and runs the step several times (1, 2,
/// 4, ... up to 32 steps, as long as the states kept fit in 64 MiB),
/// keeping each state and each condition on the device, then reads the
/// group's conditions in one copy. Where one is false the state goes back
/// to the state it was computed on; a step run past that point is
/// discarded, its failure too, so results and errors are the CPU's.
fn run_while<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    inputs: &mut [Datum<M::Mem>],
    xs: &Sequences<M::Mem>,
) -> Result<(), BackendError> {
    let (leaves, limit) = (tapes.spec.leaves.len(), tapes.spec.n);
    let Some(condition) = &tapes.condition else {
        return Ok(());
    };
    let state_bytes: usize = inputs[..leaves].iter().map(|d| d.len() * 8).sum();
    let (mut i, mut group) = (0usize, 1usize);
    loop {
        if cancel::requested() {
            return Ok(());
        }
        if i >= limit {
            // One more condition, as the CPU reads it: true is the error.
            go_on(machine, tapes, inputs, i)?;
            return Ok(());
        }
        let fits = (BYTES_AHEAD / state_bytes.max(1)).max(1);
        let steps = group.min(limit - i).min(fits);
        let mut states: Vec<Vec<Datum<M::Mem>>> = Vec::with_capacity(steps);
        let mut conditions: Vec<Datum<M::Mem>> = Vec::with_capacity(steps);
        let mut failure = None;
        for j in 0..steps {
            states.push(inputs[..leaves].to_vec());
            inputs[leaves] = Datum::Host((i + j) as f64);
            let outputs = match execute::run(machine, condition, inputs) {
                Ok(outputs) => outputs,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            let mut outputs = outputs.into_iter();
            let value = match (outputs.next(), outputs.next()) {
                (Some(value), None) if value.len() == 1 => value,
                _ => {
                    return Err(BackendError::new(
                        "a while-loop's condition must give one number (a comparison)".to_string(),
                    ));
                }
            };
            let known_false = matches!(value, Datum::Host(x) if x == 0.0);
            conditions.push(value);
            if known_false {
                break;
            }
            if let Err(e) = advance(machine, tapes, inputs, xs, None, i + j, i + j + 1) {
                failure = Some(e);
                break;
            }
        }
        let values = numbers(machine, &conditions)?;
        conditions.into_iter().for_each(|c| release(machine, c));
        if let Some(stop) = values.iter().position(|&c| c == 0.0) {
            let kept = std::mem::take(&mut states[stop]);
            for (slot, value) in inputs[..leaves].iter_mut().zip(kept) {
                let old = std::mem::replace(slot, value);
                release(machine, old);
            }
            states
                .into_iter()
                .flatten()
                .for_each(|v| release(machine, v));
            return Ok(());
        }
        states
            .into_iter()
            .flatten()
            .for_each(|v| release(machine, v));
        if let Some(failure) = failure {
            return Err(failure);
        }
        i += values.len();
        group = (group * 2).min(MOST_STEPS_AHEAD);
    }
}

/// The numbers of one-element values, read in one copy from the device.
fn numbers<M: Machine>(machine: &M, values: &[Datum<M::Mem>]) -> Result<Vec<f64>, BackendError> {
    let on_device: Vec<&M::Mem> = values
        .iter()
        .filter_map(|v| match v {
            Datum::Device { mem, .. } => Some(&**mem),
            _ => None,
        })
        .collect();
    let read = match on_device.len() {
        0 => Vec::new(),
        1 => machine.download(on_device[0], 1)?,
        count => {
            let mut gathered = machine.alloc(count)?;
            for (k, mem) in on_device.iter().enumerate() {
                machine.copy(mem, 0, &mut gathered, k, 1)?;
            }
            let read = machine.download(&gathered, count);
            machine.release(gathered);
            read?
        }
    };
    let mut read = read.into_iter();
    values
        .iter()
        .map(|v| match v {
            Datum::Host(x) => Ok(*x),
            Datum::Device { .. } => Ok(read.next().unwrap_or(f64::NAN)),
            Datum::F32 { .. } => Ok(to_host(machine, v)?[0]),
        })
        .collect()
}

/// Whether a `while-loop` whose working inputs hold state `i` runs step
/// `i` (as the CPU backend decides it).
fn go_on<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    inputs: &mut [Datum<M::Mem>],
    i: usize,
) -> Result<bool, BackendError> {
    let Some(condition) = &tapes.condition else {
        return Ok(i < tapes.spec.n);
    };
    if i.is_multiple_of(64) && cancel::requested() {
        return Ok(false);
    }
    inputs[tapes.spec.leaves.len()] = Datum::Host(i as f64);
    let outputs = execute::run(machine, condition, inputs)?;
    let value = match outputs.first() {
        Some(value) if value.len() == 1 => to_host(machine, value)?[0],
        _ => {
            return Err(BackendError::new(
                "a while-loop's condition must give one number (a comparison)".to_string(),
            ));
        }
    };
    outputs.into_iter().for_each(|v| release(machine, v));
    if value != 0.0 && i >= tapes.spec.n {
        return Err(BackendError::step_limit(&tapes.spec));
    }
    Ok(value != 0.0)
}

/// The cotangents of the initial state's leaves, of the sequences and of
/// the differentiable captures, flat, given the operands and the result's
/// cotangent.
fn reverse<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    args: &[Datum<M::Mem>],
) -> Result<Datum<M::Mem>, BackendError> {
    let mut reverser = Reverser::new(machine, tapes, args)?;
    match tapes.condition {
        None => reverse_with(&mut reverser, tapes.schedule())?,
        Some(_) => reverse_online(&mut reverser, cpu::snapshots_of(tapes.spec.strategy))?,
    }
    reverser.finish()
}

/// A loop's reverse in progress on a device (as `cpu::scan`'s).
struct Reverser<'a, M: Machine> {
    machine: &'a M,
    tapes: &'a LoopTapes,
    adjoint: &'a crate::tape::Tape,
    working: Vec<Datum<M::Mem>>,
    xs: Sequences<M::Mem>,
    cotangents: Vec<Datum<M::Mem>>,
    output_cotangents: Sequences<M::Mem>,
    sequence_cotangents: Stacked<M::Mem>,
    captured: Vec<Option<Datum<M::Mem>>>,
    snapshots: FxHashMap<usize, Vec<Datum<M::Mem>>>,
    /// The buffers the snapshots hold, counted as the CPU backend counts
    /// them (`tape-stats`).
    held: measure::Held,
    reversing: bool,
}

impl<M: Machine> Reversal for Reverser<'_, M> {
    type Error = BackendError;

    fn go_on(&mut self, i: usize) -> Result<bool, BackendError> {
        go_on(self.machine, self.tapes, &mut self.working, i)
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

impl<'a, M: Machine> Reverser<'a, M> {
    fn new(
        machine: &'a M,
        tapes: &'a LoopTapes,
        args: &[Datum<M::Mem>],
    ) -> Result<Reverser<'a, M>, BackendError> {
        let spec = &tapes.spec;
        let adjoint = tapes.adjoint.as_ref().ok_or_else(|| {
            BackendError::new("a reverse loop without its reverse body".to_string())
        })?;
        let (leaves, xs_count) = (spec.leaves.len(), spec.xs.len());
        let operands = leaves + xs_count + spec.captures.len();
        let xs = Sequences::read(machine, tapes, args)?;
        let working = body_inputs(tapes, &args[..leaves], &args[leaves + xs_count..operands]);
        let mut parts = unpack(machine, &args[operands], &spec.output_parts())?.into_iter();
        let cotangents: Vec<Datum<M::Mem>> = parts.by_ref().take(leaves).collect();
        let output_cotangents = Sequences {
            rows: parts
                .zip(&spec.ys)
                .map(|(part, step)| Sequence::new(machine, part, step))
                .collect::<Result<_, _>>()?,
        };
        Ok(Reverser {
            machine,
            tapes,
            adjoint,
            working,
            xs,
            cotangents,
            output_cotangents,
            sequence_cotangents: Stacked::new(machine, spec.n, &spec.xs)?,
            captured: vec![None; spec.differentiable.iter().filter(|d| **d).count()],
            snapshots: FxHashMap::default(),
            held: measure::Held::default(),
            reversing: false,
        })
    }

    /// Takes one action of the schedule.
    fn apply(&mut self, action: Action) -> Result<(), BackendError> {
        let (machine, tapes) = (self.machine, self.tapes);
        let spec = &tapes.spec;
        let leaves = spec.leaves.len();
        let (values, flops) = (tapes.body.stats.values, tapes.body.stats.flops);
        match action {
            Action::Advance { from, to } => {
                if self.reversing {
                    measure::recomputed(to - from, values, flops);
                }
                advance(machine, tapes, &mut self.working, &self.xs, None, from, to)?
            }
            Action::Store(i) => {
                let snapshot = self.working[..leaves].to_vec();
                for leaf in &snapshot {
                    count_held(&mut self.held, leaf, true);
                }
                self.snapshots.insert(i, snapshot);
            }
            Action::Restore(i) => {
                let snapshot = self
                    .snapshots
                    .get(&i)
                    .ok_or_else(|| BackendError::new(format!("no snapshot of step {i}")))?;
                self.working[..leaves].clone_from_slice(snapshot);
            }
            Action::Free(i) => {
                for value in self.snapshots.remove(&i).into_iter().flatten() {
                    count_held(&mut self.held, &value, false);
                    release(machine, value);
                }
            }
            Action::Reverse(i) => {
                // The reverse step recomputes the step's intermediates.
                measure::recomputed(1, values, flops);
                self.working[leaves] = Datum::Host(i as f64);
                self.xs
                    .set_rows(machine, &mut self.working[leaves + 1..], i)?;
                let mut inputs = self.working.clone();
                inputs.append(&mut self.cotangents);
                for dys in &self.output_cotangents.rows {
                    inputs.push(dys.row(machine, i)?);
                }
                let outputs = execute::run(machine, self.adjoint, &inputs)?;
                let mut outputs = outputs.into_iter();
                self.cotangents.extend(outputs.by_ref().take(leaves));
                for (k, term) in outputs.by_ref().take(spec.xs.len()).enumerate() {
                    self.sequence_cotangents.write(machine, k, i, term)?;
                }
                for (total, term) in self.captured.iter_mut().zip(outputs) {
                    *total = Some(match total.take() {
                        None => term,
                        Some(sum) => add(machine, sum, term)?,
                    });
                }
            }
        }
        Ok(())
    }

    /// All cotangents, flat: the initial state's, the sequences', the
    /// differentiable captures'.
    fn finish(self) -> Result<Datum<M::Mem>, BackendError> {
        let machine = self.machine;
        let spec = &self.tapes.spec;
        let mut all = self.cotangents;
        all.extend(self.sequence_cotangents.finish(machine)?);
        let shapes = spec.adjoint_shapes();
        let skip = spec.leaves.len() + spec.xs.len();
        for (total, shape) in self.captured.into_iter().zip(&shapes[skip..]) {
            all.push(match total {
                Some(total) => total,
                None => zeros(machine, shape)?,
            });
        }
        flat(machine, &all)
    }
}

/// Counts a snapshot's part as held (`hold`) or let go: device memory by
/// its buffer (shared buffers once), a host number by itself.
fn count_held<M>(held: &mut measure::Held, value: &Datum<M>, hold: bool) {
    match (value, hold) {
        (Datum::Host(_), true) => measure::stored(8),
        (Datum::Host(_), false) => measure::released(8),
        (Datum::Device { mem, shape } | Datum::F32 { mem, shape }, hold) => {
            let width = if value.is_f32() { 4 } else { 8 };
            let bytes = shape.iter().product::<usize>() * width;
            let address = Rc::as_ptr(mem) as usize;
            if hold {
                held.hold(address, bytes);
            } else {
                held.release(address, bytes);
            }
        }
    }
}

/// A sequence a loop reads a row a step: numbers on the host (a row is
/// one number), arrays in device memory.
enum Sequence<M> {
    Numbers(Vec<f64>),
    Rows { mem: Rc<M>, step: Shape },
}

impl<M> Sequence<M> {
    fn new<Ma: Machine<Mem = M>>(
        machine: &Ma,
        value: Datum<M>,
        step: &Shape,
    ) -> Result<Sequence<M>, BackendError> {
        if step.is_empty() {
            return Ok(Sequence::Numbers(to_host(machine, &value)?));
        }
        match on_device(machine, &value)? {
            Datum::Device { mem, .. } => Ok(Sequence::Rows {
                mem,
                step: step.clone(),
            }),
            Datum::Host(_) => Err(BackendError::new(
                "a scanned sequence is a number".to_string(),
            )),
            Datum::F32 { .. } => Err(BackendError::new(
                "a scanned sequence in f32 storage".to_string(),
            )),
        }
    }

    /// Row `i`.
    fn row<Ma: Machine<Mem = M>>(&self, machine: &Ma, i: usize) -> Result<Datum<M>, BackendError> {
        match self {
            Sequence::Numbers(numbers) => Ok(Datum::Host(numbers[i])),
            Sequence::Rows { mem, step } => {
                let len: usize = step.iter().product();
                let mut out = machine.alloc(len)?;
                if len > 0 {
                    machine.copy(mem, i * len, &mut out, 0, len)?;
                }
                Ok(Datum::Device {
                    mem: Rc::new(out),
                    shape: step.clone(),
                })
            }
        }
    }
}

/// The sequences a loop scans.
struct Sequences<M> {
    rows: Vec<Sequence<M>>,
}

impl<M> Sequences<M> {
    /// The sequences among a loop's operands (after the state's leaves).
    fn read<Ma: Machine<Mem = M>>(
        machine: &Ma,
        tapes: &LoopTapes,
        args: &[Datum<M>],
    ) -> Result<Sequences<M>, BackendError> {
        let spec = &tapes.spec;
        let leaves = spec.leaves.len();
        let rows = spec
            .xs
            .iter()
            .zip(&args[leaves..leaves + spec.xs.len()])
            .map(|(step, seq)| Sequence::new(machine, seq.clone(), step))
            .collect::<Result<_, _>>()?;
        Ok(Sequences { rows })
    }

    /// Puts row `i` of each sequence into `slots`.
    fn set_rows<Ma: Machine<Mem = M>>(
        &self,
        machine: &Ma,
        slots: &mut [Datum<M>],
        i: usize,
    ) -> Result<(), BackendError> {
        for (slot, seq) in slots.iter_mut().zip(&self.rows) {
            let old = std::mem::replace(slot, seq.row(machine, i)?);
            release(machine, old);
        }
        Ok(())
    }
}

/// Values of one step's shapes stacked along a new first axis, a row per
/// step, in device memory (numbers gathered on the host).
struct Stacked<M> {
    parts: Vec<(Option<M>, Vec<f64>, usize)>,
    n: usize,
}

impl<M> Stacked<M> {
    /// Zeros for `n` steps of each of `shapes`.
    fn new<Ma: Machine<Mem = M>>(
        machine: &Ma,
        n: usize,
        shapes: &[Shape],
    ) -> Result<Stacked<M>, BackendError> {
        let parts = shapes
            .iter()
            .map(|shape| {
                let len: usize = shape.iter().product();
                Ok(if shape.is_empty() {
                    (None, vec![0.0; n], 1)
                } else {
                    (Some(machine.zeros(n * len)?), Vec::new(), len)
                })
            })
            .collect::<Result<_, BackendError>>()?;
        Ok(Stacked { parts, n })
    }

    /// Writes `value` as row `i` of part `k` (its memory is released).
    fn write<Ma: Machine<Mem = M>>(
        &mut self,
        machine: &Ma,
        k: usize,
        i: usize,
        value: Datum<M>,
    ) -> Result<(), BackendError> {
        let (mem, numbers, len) = &mut self.parts[k];
        match mem {
            None => numbers[i] = to_host(machine, &value)?.first().copied().unwrap_or(0.0),
            Some(mem) => {
                let value = on_device(machine, &value)?;
                if let Datum::Device { mem: row, .. } = &value
                    && *len > 0
                {
                    machine.copy(row, 0, mem, i * *len, *len)?;
                }
                release(machine, value);
            }
        }
        release(machine, value);
        Ok(())
    }

    /// The stacked parts, as flat device values.
    fn finish<Ma: Machine<Mem = M>>(self, machine: &Ma) -> Result<Vec<Datum<M>>, BackendError> {
        let n = self.n;
        self.parts
            .into_iter()
            .map(|(mem, numbers, len)| match mem {
                Some(mem) => Ok(Datum::device(mem, &[n * len])),
                None => from_host(machine, &numbers, &[n]),
            })
            .collect()
    }
}

/// The body's inputs: state leaves, the index (0 for now), the slices of
/// the sequences (placeholders until a step sets them), captures.
fn body_inputs<M>(tapes: &LoopTapes, state: &[Datum<M>], captures: &[Datum<M>]) -> Vec<Datum<M>> {
    let mut inputs = state.to_vec();
    inputs.push(Datum::Host(0.0));
    inputs.extend(tapes.spec.xs.iter().map(|_| Datum::Host(0.0)));
    inputs.extend_from_slice(captures);
    inputs
}

/// Runs steps `from..to` on the state in `inputs`, writing the steps'
/// outputs into `ys` when given.
fn advance<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    inputs: &mut [Datum<M::Mem>],
    xs: &Sequences<M::Mem>,
    mut ys: Option<&mut Stacked<M::Mem>>,
    from: usize,
    to: usize,
) -> Result<(), BackendError> {
    let leaves = tapes.spec.leaves.len();
    let mut from = from;
    if to > from {
        // Whole groups of steps as one graph launch each, where the step
        // allows.
        inputs[leaves] = Datum::Host(from as f64);
        xs.set_rows(machine, &mut inputs[leaves + 1..], from)?;
        if let Some(rows) = device_rows(tapes, xs, ys.as_deref_mut(), from) {
            from +=
                super::program::run_steps(machine, &tapes.body, inputs, leaves, to - from, rows)?;
        }
    }
    for i in from..to {
        if i.is_multiple_of(64) && cancel::requested() {
            return Ok(());
        }
        inputs[leaves] = Datum::Host(i as f64);
        xs.set_rows(machine, &mut inputs[leaves + 1..], i)?;
        let next = execute::run(machine, &tapes.body, inputs)?;
        let mut next = next.into_iter();
        for (slot, value) in inputs.iter_mut().zip(next.by_ref().take(leaves)) {
            let old = std::mem::replace(slot, value);
            release(machine, old);
        }
        match ys.as_deref_mut() {
            Some(ys) => {
                for (k, value) in next.enumerate() {
                    ys.write(machine, k, i, value)?;
                }
            }
            None => next.for_each(|value| release(machine, value)),
        }
    }
    Ok(())
}

/// The loop's sequences and stacks as rows in device memory from step
/// `first` (stacks `None` where `ys` is not given: the outputs are
/// dropped), or `None` where one is numbers or f32 storage.
fn device_rows<'a, M>(
    tapes: &LoopTapes,
    xs: &'a Sequences<M>,
    ys: Option<&'a mut Stacked<M>>,
    first: usize,
) -> Option<super::program::Rows<'a, M>> {
    let xs = xs
        .rows
        .iter()
        .map(|seq| match seq {
            Sequence::Rows { mem, step } => Some((&**mem, step.iter().product())),
            Sequence::Numbers(_) => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let ys = match ys {
        Some(stacked) => stacked
            .parts
            .iter_mut()
            .map(|(mem, _, len)| Some((Some(mem.as_mut()?), *len)))
            .collect::<Option<Vec<_>>>()?,
        None => tapes
            .spec
            .ys
            .iter()
            .map(|shape| (!shape.is_empty()).then(|| (None, shape.iter().product())))
            .collect::<Option<Vec<_>>>()?,
    };
    Some(super::program::Rows { first, xs, ys })
}

/// A state as the scan's result: one leaf as it is, several flattened and
/// joined.
fn pack<M: Machine>(machine: &M, leaves: &[Datum<M::Mem>]) -> Result<Datum<M::Mem>, BackendError> {
    match leaves {
        [one] => Ok(one.clone()),
        many => flat(machine, many),
    }
}

/// Values flattened and joined into one vector in device memory.
fn flat<M: Machine>(machine: &M, parts: &[Datum<M::Mem>]) -> Result<Datum<M::Mem>, BackendError> {
    let total: usize = parts.iter().map(Datum::len).sum();
    let mut out = machine.alloc(total)?;
    let mut at = 0;
    for part in parts {
        let part = on_device(machine, part)?;
        if let Datum::Device { mem, .. } = &part {
            let len = part.len();
            if len > 0 {
                machine.copy(mem, 0, &mut out, at, len)?;
            }
            at += len;
        }
        release(machine, part);
    }
    Ok(Datum::device(out, &[total]))
}

/// A packed value (a loop's result, or a cotangent of one) split into
/// parts of these shapes (a value of one part's shape is that part).
fn unpack<M: Machine>(
    machine: &M,
    packed: &Datum<M::Mem>,
    shapes: &[Shape],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    if let [shape] = shapes
        && packed.shape() == &shape[..]
    {
        return Ok(vec![packed.clone()]);
    }
    let packed = on_device(machine, packed)?;
    let Datum::Device { mem, .. } = &packed else {
        return Err(BackendError::new(
            "a packed loop value is not an array".to_string(),
        ));
    };
    let mut offset = 0;
    let mut parts = Vec::with_capacity(shapes.len());
    for shape in shapes {
        let len: usize = shape.iter().product();
        let mut part = machine.alloc(len)?;
        if len > 0 {
            machine.copy(mem, offset, &mut part, 0, len)?;
        }
        offset += len;
        parts.push(Datum::Device {
            mem: Rc::new(part),
            shape: shape.clone(),
        });
    }
    Ok(parts)
}

/// The sum of two values of one shape (the memory of both is released).
fn add<M: Machine>(
    machine: &M,
    a: Datum<M::Mem>,
    b: Datum<M::Mem>,
) -> Result<Datum<M::Mem>, BackendError> {
    let plus = single_step(&TOp::Map(Math::Add([Id::from(0); 2])), 2);
    let shape = a.shape().to_vec();
    let sum = elementwise(machine, &plus, &[&a, &b], &shape, false)?;
    release(machine, a);
    release(machine, b);
    Ok(sum)
}

/// Zeros of `shape`.
fn zeros<M: Machine>(machine: &M, shape: &[usize]) -> Result<Datum<M::Mem>, BackendError> {
    if shape.is_empty() {
        return Ok(Datum::Host(0.0));
    }
    filled(machine, 0.0, shape)
}

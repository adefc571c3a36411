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
use crate::egraph::language::Math;
use crate::egraph::tensor::{Shape, TOp};
use crate::tape::checkpoint::Action;
use crate::tape::scan::LoopTapes;
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
    let operands = tapes.spec.leaves.len() + tapes.spec.captures.len();
    let numbers: Option<Vec<Buf>> = args[..operands.min(args.len())]
        .iter()
        .map(|a| match a {
            Datum::Host(x) => Some(Buf::Scalar(*x)),
            Datum::Device { .. } => None,
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

/// The loop's final state (packed when it has several leaves).
fn forward<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    args: &[Datum<M::Mem>],
) -> Result<Datum<M::Mem>, BackendError> {
    let leaves = tapes.spec.leaves.len();
    let mut inputs = body_inputs(&args[..leaves], &args[leaves..]);
    advance(machine, tapes, &mut inputs, 0, tapes.spec.n)?;
    pack(machine, &inputs[..leaves])
}

/// The cotangents of the initial state's leaves and of the differentiable
/// captures, flat, given the operands and the result's cotangent.
fn reverse<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    args: &[Datum<M::Mem>],
) -> Result<Datum<M::Mem>, BackendError> {
    let spec = &tapes.spec;
    let adjoint = tapes
        .adjoint
        .as_ref()
        .ok_or_else(|| BackendError::new("a reverse loop without its reverse body".to_string()))?;
    let (leaves, captures) = (spec.leaves.len(), spec.captures.len());
    let mut working = body_inputs(&args[..leaves], &args[leaves..leaves + captures]);
    let mut cotangents = unpack(machine, &args[leaves + captures], &spec.leaves)?;
    let mut captured: Vec<Option<Datum<M::Mem>>> =
        vec![None; spec.differentiable.iter().filter(|d| **d).count()];
    let mut snapshots: FxHashMap<usize, Vec<Datum<M::Mem>>> = FxHashMap::default();
    let schedule = tapes.schedule();
    // Counted as the CPU backend counts (`tape-stats`).
    let state_bytes = spec.state_bytes();
    let (values, flops) = (tapes.body.stats.values, tapes.body.stats.flops);
    // Advances after the first reverse step are recomputations.
    let mut reversing = false;
    for (at, action) in schedule.actions().enumerate() {
        if at % 64 == 0 && cancel::requested() {
            break;
        }
        match action {
            Action::Advance { from, to } => {
                if reversing {
                    measure::recomputed(to - from, values, flops);
                }
                advance(machine, tapes, &mut working, from, to)?
            }
            Action::Store(i) => {
                measure::stored(state_bytes);
                snapshots.insert(i, working[..leaves].to_vec());
            }
            Action::Restore(i) => {
                let snapshot = snapshots
                    .get(&i)
                    .ok_or_else(|| BackendError::new(format!("no snapshot of step {i}")))?;
                working[..leaves].clone_from_slice(snapshot);
            }
            Action::Free(i) => {
                measure::released(state_bytes);
                for value in snapshots.remove(&i).into_iter().flatten() {
                    release(machine, value);
                }
            }
            Action::Reverse(i) => {
                reversing = true;
                // The reverse step recomputes the step's intermediates.
                measure::recomputed(1, values, flops);
                working[leaves] = Datum::Host(i as f64);
                let mut inputs = working.clone();
                inputs.append(&mut cotangents);
                let outputs = execute::run(machine, adjoint, &inputs)?;
                let mut outputs = outputs.into_iter();
                cotangents.extend(outputs.by_ref().take(leaves));
                for (total, term) in captured.iter_mut().zip(outputs) {
                    *total = Some(match total.take() {
                        None => term,
                        Some(sum) => add(machine, sum, term)?,
                    });
                }
            }
        }
    }
    let mut all = cotangents;
    let shapes = spec.adjoint_shapes();
    for (total, shape) in captured.into_iter().zip(&shapes[leaves..]) {
        all.push(match total {
            Some(total) => total,
            None => zeros(machine, shape)?,
        });
    }
    flat(machine, &all)
}

/// The body's inputs: state leaves, the index (0 for now), captures.
fn body_inputs<M>(state: &[Datum<M>], captures: &[Datum<M>]) -> Vec<Datum<M>> {
    let mut inputs = state.to_vec();
    inputs.push(Datum::Host(0.0));
    inputs.extend_from_slice(captures);
    inputs
}

/// Runs steps `from..to` on the state in `inputs`.
fn advance<M: Machine>(
    machine: &M,
    tapes: &LoopTapes,
    inputs: &mut [Datum<M::Mem>],
    from: usize,
    to: usize,
) -> Result<(), BackendError> {
    let leaves = tapes.spec.leaves.len();
    for i in from..to {
        if i % 64 == 0 && cancel::requested() {
            return Ok(());
        }
        inputs[leaves] = Datum::Host(i as f64);
        let next = execute::run(machine, &tapes.body, inputs)?;
        for (slot, value) in inputs.iter_mut().zip(next) {
            let old = std::mem::replace(slot, value);
            release(machine, old);
        }
    }
    Ok(())
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
    let sum = elementwise(machine, &plus, &[&a, &b], &shape)?;
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

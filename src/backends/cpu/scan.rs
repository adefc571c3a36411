//! Loops (`scan`) on the CPU: the body's tape run `n` times, and the
//! reverse following the checkpoint schedule (advance, store, restore,
//! reverse one step with the body's reverse tape).

use super::execute::{Buf, run};
use super::{cancel, measure, scalar_loop};
use crate::backends::BackendError;
use crate::tape::checkpoint::Action;
use crate::tape::scan::LoopTapes;
use ndarray::{Array1, ArrayD, IxDyn};
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// The loop's final state (packed when it has several leaves).
pub fn forward(tapes: &LoopTapes, args: &[Buf]) -> Result<Buf, BackendError> {
    let spec = &tapes.spec;
    let leaves = spec.leaves.len();
    if let (Some(numbers), Some(program)) = (numbers(args), scalar_loop::prepare(tapes)) {
        let state = program.forward(tapes, &numbers[..leaves], &numbers[leaves..]);
        return Ok(pack(
            &state.into_iter().map(Buf::Scalar).collect::<Vec<_>>(),
        ));
    }
    let mut inputs = body_inputs(&args[..leaves], &args[leaves..]);
    advance(tapes, &mut inputs, 0, spec.n)?;
    Ok(pack(&inputs[..leaves]))
}

/// The cotangents of the initial state's leaves and of the differentiable
/// captures, flat, given the operands and the result's cotangent.
pub fn reverse(tapes: &LoopTapes, args: &[Buf]) -> Result<Buf, BackendError> {
    let spec = &tapes.spec;
    let adjoint = tapes
        .adjoint
        .as_ref()
        .ok_or_else(|| BackendError::new("a reverse loop without its reverse body"))?;
    let (leaves, captures) = (spec.leaves.len(), spec.captures.len());
    let operands = &args[..leaves + captures];
    if let (Some(numbers), Some(program)) = (numbers(operands), scalar_loop::prepare(tapes)) {
        let cotangent: Vec<f64> = args[leaves + captures].to_array().iter().copied().collect();
        let all = program.reverse(
            tapes,
            &numbers[..leaves],
            &numbers[leaves..leaves + captures],
            &cotangent,
        );
        return Ok(flat(&all.into_iter().map(Buf::Scalar).collect::<Vec<_>>()));
    }
    let mut working = body_inputs(&args[..leaves], &args[leaves..leaves + captures]);
    let mut cotangents = unpack(&args[leaves + captures], &spec.leaves);
    let mut captured: Vec<Option<Buf>> =
        vec![None; spec.differentiable.iter().filter(|d| **d).count()];
    let mut snapshots: FxHashMap<usize, Vec<Buf>> = FxHashMap::default();
    let schedule = tapes.schedule();
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
                advance(tapes, &mut working, from, to)?
            }
            Action::Store(i) => {
                measure::stored(state_bytes);
                snapshots.insert(i, working[..leaves].to_vec());
            }
            Action::Restore(i) => {
                working[..leaves].clone_from_slice(&snapshots[&i]);
            }
            Action::Free(i) => {
                measure::released(state_bytes);
                snapshots.remove(&i);
            }
            Action::Reverse(i) => {
                reversing = true;
                // The reverse step recomputes the step's intermediates.
                measure::recomputed(1, values, flops);
                working[leaves] = Buf::Scalar(i as f64);
                let mut inputs = working.clone();
                inputs.append(&mut cotangents);
                let outputs = run(adjoint, &inputs)?;
                let mut outputs = outputs.into_iter();
                cotangents.extend(outputs.by_ref().take(leaves));
                for (total, term) in captured.iter_mut().zip(outputs) {
                    *total = Some(match total.take() {
                        None => term,
                        Some(sum) => add(&sum, &term),
                    });
                }
            }
        }
    }
    let mut all = cotangents;
    let shapes = spec.adjoint_shapes();
    for (total, shape) in captured.into_iter().zip(&shapes[leaves..]) {
        all.push(total.unwrap_or_else(|| zeros(shape)));
    }
    Ok(flat(&all))
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

/// The body's inputs: state leaves, the index (0 for now), captures.
fn body_inputs(state: &[Buf], captures: &[Buf]) -> Vec<Buf> {
    let mut inputs = state.to_vec();
    inputs.push(Buf::Scalar(0.0));
    inputs.extend_from_slice(captures);
    inputs
}

/// Runs steps `from..to` on the state in `inputs`.
fn advance(
    tapes: &LoopTapes,
    inputs: &mut [Buf],
    from: usize,
    to: usize,
) -> Result<(), BackendError> {
    let leaves = tapes.spec.leaves.len();
    for i in from..to {
        if i % 64 == 0 && cancel::requested() {
            return Ok(());
        }
        inputs[leaves] = Buf::Scalar(i as f64);
        let next = run(&tapes.body, inputs)?;
        for (slot, value) in inputs.iter_mut().zip(next) {
            *slot = value;
        }
    }
    Ok(())
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
    let mut data = Vec::new();
    for part in parts {
        match part {
            Buf::Scalar(x) => data.push(*x),
            Buf::Array(a) => data.extend(a.iter()),
        }
    }
    Buf::from_array(Rc::new(Array1::from(data).into_dyn()))
}

/// A packed value split into parts of these shapes.
/// A packed value (a loop's result, or a cotangent of one) split into
/// parts of these shapes (a value of one part's shape is that part).
pub fn unpack(packed: &Buf, shapes: &[crate::egraph::tensor::Shape]) -> Vec<Buf> {
    if let [shape] = shapes
        && packed.shape() == &shape[..]
    {
        return vec![packed.clone()];
    }
    let data: Vec<f64> = match packed {
        Buf::Scalar(x) => vec![*x],
        Buf::Array(a) => a.iter().copied().collect(),
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

fn add(a: &Buf, b: &Buf) -> Buf {
    match (a, b) {
        (Buf::Scalar(x), Buf::Scalar(y)) => Buf::Scalar(x + y),
        _ => Buf::from_array(Rc::new(a.to_array() + &b.to_array())),
    }
}

fn zeros(shape: &[usize]) -> Buf {
    Buf::from_array(Rc::new(ArrayD::zeros(IxDyn(shape))))
}

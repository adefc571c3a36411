//! Running a tape on a device, and the few operations the loop driver
//! issues itself between steps (a number made an array, an array of one
//! number, an elementwise sum of two values). A tape runs as its device
//! program (`program`): planned at its first run for the kinds of its
//! inputs, replayed after.

use super::launch;
use super::machine::{Arg, Datum, Machine};
use super::program;
use crate::backends::BackendError;
use crate::tape::{FusedGroup, Tape};

/// Runs `tape` on `inputs` (one per tape input, of its input shapes).
pub fn run<M: Machine>(
    machine: &M,
    tape: &Tape,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    program::run(machine, tape, inputs)
}

/// A value as device memory: a host number becomes a one-element array.
pub fn on_device<M: Machine>(
    machine: &M,
    value: &Datum<M::Mem>,
) -> Result<Datum<M::Mem>, BackendError> {
    match value {
        Datum::Host(x) => filled(machine, *x, &[]),
        device => Ok(device.clone()),
    }
}

/// `x` everywhere in a device array of `shape`.
pub fn filled<M: Machine>(
    machine: &M,
    x: f64,
    shape: &[usize],
) -> Result<Datum<M::Mem>, BackendError> {
    let n: usize = shape.iter().product();
    let mut out = machine.alloc(n)?;
    if n > 0 {
        let plan = launch::fill(shape);
        machine.launch(&plan, &[Arg::Int(n as i64), Arg::Double(x)], &mut out)?;
    }
    Ok(Datum::device(out, shape))
}

/// A fused group (or one elementwise operation) on its operands as they
/// are stored, the result in f32 storage when `single`: planned as a
/// program of its own and run at once.
pub fn elementwise<M: Machine>(
    machine: &M,
    group: &FusedGroup,
    args: &[&Datum<M::Mem>],
    shape: &[usize],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    let kinds: Vec<program::Kind> = args.iter().map(|a| program::Kind::of(*a)).collect();
    let shapes: Vec<&[usize]> = args.iter().map(|a| a.shape()).collect();
    let program = program::elementwise(group, &kinds, &shapes, shape, single)?;
    let inputs: Vec<Datum<M::Mem>> = args.iter().map(|a| (*a).clone()).collect();
    let mut outputs = program::replay(machine, &program, &inputs)?;
    outputs
        .pop()
        .ok_or_else(|| BackendError::new("an elementwise program without its result"))
}

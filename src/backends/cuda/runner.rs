//! Whole tapes on host values: inputs copied to the device, the tape run
//! there, results copied back. These are the only transfers of a run
//! (apart from a loop's host numbers joining device arrays).

use super::execute;
use super::machine::{Datum, Machine, from_host, release, to_host};
use crate::backends::BackendError;
use crate::backends::cpu::Buf;
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

/// Runs `tape` on `machine` with host inputs and outputs.
pub fn run_on<M: Machine>(
    machine: &M,
    tape: &crate::tape::Tape,
    inputs: &[Buf],
) -> Result<Vec<Buf>, BackendError> {
    let mut values = Vec::with_capacity(inputs.len());
    for input in inputs {
        values.push(match input {
            Buf::Scalar(x) => Datum::Host(*x),
            Buf::Array(array) => match array.as_slice() {
                // Straight from the array's memory when it is row-major.
                Some(data) => from_host(machine, data, array.shape())?,
                None => {
                    let data: Vec<f64> = array.iter().copied().collect();
                    from_host(machine, &data, array.shape())?
                }
            },
        });
    }
    let outputs = execute::run(machine, tape, &values);
    for value in values {
        release(machine, value);
    }
    let mut results = Vec::new();
    for value in outputs? {
        let buf = match &value {
            Datum::Host(x) => Buf::Scalar(*x),
            Datum::Device { shape, .. } | Datum::F32 { shape, .. } => {
                let data = to_host(machine, &value)?;
                let array = ArrayD::from_shape_vec(IxDyn(shape), data)
                    .map_err(|e| BackendError::new(format!("a result of the wrong size: {e}")))?;
                Buf::from_array(Rc::new(array))
            }
        };
        release(machine, value);
        results.push(buf);
    }
    Ok(results)
}

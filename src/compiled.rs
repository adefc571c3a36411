//! Compiled gradients for Rust callers: a tape traced and compiled once by
//! [`Engine::compile_grad`](crate::Engine::compile_grad), then run on
//! ndarray inputs with no interpreter in the loop.

use crate::backends::cpu::Buf;
use crate::error::Error;
use crate::lisp::autodiff::CompiledCall;
use crate::tape::{Tape, TapeStats};
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

/// The gradient of a scalar Lisp function with respect to all its
/// arguments, compiled to a tape for fixed argument shapes.
///
/// Control flow inside the function was decided when it was traced (at
/// zeros for [`compile_grad`](crate::Engine::compile_grad), at the given
/// values for [`compile_grad_at`](crate::Engine::compile_grad_at)); the
/// tape replays that path.
///
/// ```
/// let mut eps = epsilon::Engine::new();
/// let tape = eps.compile_grad("(lambda (w) (sum (* w w)))", &[&[3]]).unwrap();
/// let grads = tape.run(&[ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn()]).unwrap();
/// assert_eq!(grads[0], ndarray::arr1(&[2.0, 4.0, 6.0]).into_dyn());
/// let (value, _) = tape.run_with_value(&[ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn()]).unwrap();
/// assert_eq!(value, 14.0);
/// ```
pub struct CompiledGrad {
    call: CompiledCall,
}

impl CompiledGrad {
    pub(crate) fn new(call: CompiledCall) -> Self {
        CompiledGrad { call }
    }

    /// The gradients with respect to each argument, in argument order.
    pub fn run(&self, args: &[ArrayD<f64>]) -> Result<Vec<ArrayD<f64>>, Error> {
        self.run_with_value(args).map(|(_, grads)| grads)
    }

    /// The function's value and its gradients.
    pub fn run_with_value(&self, args: &[ArrayD<f64>]) -> Result<(f64, Vec<ArrayD<f64>>), Error> {
        let expected = self.call.argument_inputs;
        if args.len() != expected {
            return Err(Error::msg(format!(
                "the compiled gradient takes {expected} arguments, got {}",
                args.len()
            )));
        }
        let mut inputs = self.call.inputs.clone();
        for (slot, arg) in inputs.iter_mut().zip(args) {
            *slot = Buf::from_array(Rc::new(arg.clone()));
        }
        let outputs = crate::backends::run(&self.call.compiled.tape, &inputs)
            .map_err(|e| Error::msg(e.message))?;
        // The executor's results are usually not shared: moved, not copied.
        let mut arrays = outputs.into_iter().map(|b| match b {
            Buf::Scalar(x) => ArrayD::from_elem(IxDyn(&[]), x),
            Buf::Array(a) => Rc::try_unwrap(a).unwrap_or_else(|shared| (*shared).clone()),
        });
        let value = arrays
            .next()
            .and_then(|a| a.iter().next().copied())
            .unwrap_or(f64::NAN);
        Ok((value, arrays.collect()))
    }

    /// The tape.
    pub fn tape(&self) -> &Tape {
        &self.call.compiled.tape
    }

    /// What compiling found: instructions, peak bytes, flops.
    pub fn stats(&self) -> &TapeStats {
        &self.call.compiled.tape.stats
    }
}

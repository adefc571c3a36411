//! Running a tape on the CPU: slots hold scalars in registers or arrays
//! behind `Rc`; each instruction reads its operand slots and writes its
//! result slot, and storage of dead values is recycled for later results
//! of the same size.

use super::elementwise::run_group;
use super::structural::{gemm, structural};
use crate::backends::BackendError;
use crate::egraph::tensor::TOp;
use crate::egraph::tensor::shape::show;
use crate::tape::{FusedGroup, Kernel, Tape};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::rc::Rc;

/// A value on the CPU: a scalar in a register, or an array.
#[derive(Clone, Debug)]
pub enum Buf {
    /// A 0-dimensional value.
    Scalar(f64),
    /// An array (possibly shared with the caller).
    Array(Rc<ArrayD<f64>>),
}

impl Buf {
    /// An array as a buffer; 0-dimensional arrays become scalars.
    pub fn from_array(array: Rc<ArrayD<f64>>) -> Buf {
        if array.ndim() == 0 {
            Buf::Scalar(array.iter().next().copied().unwrap_or(f64::NAN))
        } else {
            Buf::Array(array)
        }
    }

    /// The value as an owned array.
    pub fn to_array(&self) -> ArrayD<f64> {
        match self {
            Buf::Scalar(x) => ArrayD::from_elem(IxDyn(&[]), *x),
            Buf::Array(a) => (**a).clone(),
        }
    }

    /// The value's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Buf::Scalar(_) => &[],
            Buf::Array(a) => a.shape(),
        }
    }

    fn view(&self) -> ArrayViewD<'_, f64> {
        match self {
            Buf::Scalar(x) => ArrayViewD::from_shape(IxDyn(&[]), std::slice::from_ref(x))
                .expect("one element for the empty shape"),
            Buf::Array(a) => a.view(),
        }
    }
}

fn single_step(op: &TOp, inputs: usize) -> FusedGroup {
    FusedGroup {
        inputs,
        steps: vec![(op.clone(), (0..inputs as u16).collect())],
        results: SmallVec::from_slice(&[inputs as u16]),
    }
}

/// Evaluates one operation on concrete operands (used by the tracer to
/// look at values that control flow depends on). `Input` and `Scalar`
/// leaves are not operations and give `None`.
pub fn eval_op(op: &TOp, args: &[&Buf], shape: &[usize]) -> Option<Buf> {
    Some(match op {
        TOp::Input { .. } => return None,
        TOp::Scalar(c) => Buf::Scalar(c.get()),
        TOp::Map(_) | TOp::Compare(_) | TOp::Round(_) | TOp::Where => {
            run_group(&single_step(op, args.len()), args, shape, None)
        }
        TOp::MatMul => from_array(gemm(&args[0].view(), &args[1].view(), false, false)),
        TOp::StopGradient | TOp::Tag(_) => args[0].clone(),
        other => {
            let views: SmallVec<[ArrayViewD<'_, f64>; 3]> = args.iter().map(|b| b.view()).collect();
            from_array(structural(other, &views, shape))
        }
    })
}

fn from_array(array: ArrayD<f64>) -> Buf {
    Buf::from_array(Rc::new(array))
}

/// Runs `tape` on `inputs`.
pub fn run(tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
    if inputs.len() != tape.input_shapes.len() {
        return Err(BackendError(format!(
            "the tape takes {} inputs, got {}",
            tape.input_shapes.len(),
            inputs.len()
        )));
    }
    for (k, (input, expected)) in inputs.iter().zip(&tape.input_shapes).enumerate() {
        if input.shape() != &expected[..] {
            return Err(BackendError(format!(
                "input {k} has shape {}, the tape was compiled for {}",
                show(input.shape()),
                show(expected)
            )));
        }
    }
    let mut slots: Vec<Option<Buf>> = vec![None; tape.slots];
    let mut pool: FxHashMap<usize, Vec<Vec<f64>>> = FxHashMap::default();
    for instruction in &tape.instructions {
        let value = {
            let args: SmallVec<[&Buf; 3]> = instruction
                .args
                .iter()
                .map(|&s| {
                    slots[s as usize]
                        .as_ref()
                        .expect("operands are computed first")
                })
                .collect();
            match &instruction.op {
                Kernel::Op(TOp::Input { index, .. }) => inputs[*index as usize].clone(),
                Kernel::Fused(group) => {
                    let n: usize = instruction.shape.iter().product();
                    let recycled = pool.get_mut(&n).and_then(Vec::pop);
                    run_group(group, &args, &instruction.shape, recycled)
                }
                Kernel::Op(op @ (TOp::Map(_) | TOp::Compare(_) | TOp::Round(_) | TOp::Where)) => {
                    let n: usize = instruction.shape.iter().product();
                    let recycled = pool.get_mut(&n).and_then(Vec::pop);
                    run_group(
                        &single_step(op, args.len()),
                        &args,
                        &instruction.shape,
                        recycled,
                    )
                }
                Kernel::Gemm { ta, tb } => {
                    from_array(gemm(&args[0].view(), &args[1].view(), *ta, *tb))
                }
                Kernel::Op(op) => {
                    eval_op(op, &args, &instruction.shape).expect("inputs are handled above")
                }
            }
        };
        slots[instruction.out as usize] = Some(value);
        for &slot in &instruction.frees {
            if slot == instruction.out {
                continue;
            }
            if let Some(Buf::Array(array)) = slots[slot as usize].take() {
                if let Ok(array) = Rc::try_unwrap(array) {
                    if array.is_standard_layout() {
                        let (data, offset) = array.into_raw_vec_and_offset();
                        if offset.unwrap_or(0) == 0 {
                            pool.entry(data.len()).or_default().push(data);
                        }
                    }
                }
            }
        }
    }
    Ok(tape
        .outputs
        .iter()
        .map(|&s| slots[s as usize].clone().expect("outputs are computed"))
        .collect())
}

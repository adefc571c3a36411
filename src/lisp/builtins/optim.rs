//! Update kernels for the stdlib's optimizers (stdlib/optim.lisp): one pass
//! over a parameter leaf instead of a dozen interpreted tensor operations.

use super::builtin;
use super::dtype::converted;
use crate::dtype::DType;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::trace::value_dtype;
use crate::lisp::value::Value;
use ndarray::ArrayD;

/// Adam's constants for one step.
struct Adam {
    rate: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    decay: f64,
    /// Bias corrections 1 - beta^step.
    c1: f64,
    c2: f64,
}

impl Adam {
    /// The new parameter, first and second moment of one element.
    fn step(&self, p: f64, g: f64, m: f64, v: f64) -> (f64, f64, f64) {
        let m = self.beta1 * m + (1.0 - self.beta1) * g;
        let v = self.beta2 * v + (1.0 - self.beta2) * g * g;
        let p =
            p - self.rate * ((m / self.c1) / ((v / self.c2).sqrt() + self.eps) + self.decay * p);
        (p, m, v)
    }
}

fn adam_update(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let number = |k: usize| args[k].as_f64();
    let (beta1, beta2, step) = (number(6)?, number(7)?, number(4)?);
    let adam = Adam {
        rate: number(5)?,
        beta1,
        beta2,
        eps: number(8)?,
        decay: number(9)?,
        c1: 1.0 - beta1.powf(step),
        c2: 1.0 - beta2.powf(step),
    };
    let leaves = &args[..4];
    if leaves
        .iter()
        .all(|v| matches!(v, Value::Int(_) | Value::Float(_)))
    {
        let (p, m, v) = adam.step(number(0)?, number(1)?, number(2)?, number(3)?);
        return Ok(Value::list(vec![
            Value::Float(p),
            Value::Float(m),
            Value::Float(v),
        ]));
    }
    if let [
        Value::TensorF32(p),
        Value::TensorF32(g),
        Value::TensorF32(m),
        Value::TensorF32(v),
    ] = leaves
        && [g, m, v].iter().all(|a| a.shape() == p.shape())
    {
        return Ok(single(&adam, p, g, m, v));
    }
    let arrays = leaves
        .iter()
        .map(Value::as_tensor)
        .collect::<EvalResult<Vec<_>>>()?;
    if let Some(odd) = arrays.iter().find(|a| a.shape() != arrays[0].shape()) {
        return Err(EvalError::shape(format!(
            "the parameter, gradient and moments need one shape, got {} and {}",
            format_shape(arrays[0].shape()),
            format_shape(odd.shape())
        )));
    }
    let len = arrays[0].len();
    let (mut p_new, mut m_new, mut v_new) = (
        Vec::with_capacity(len),
        Vec::with_capacity(len),
        Vec::with_capacity(len),
    );
    // Logical (row-major) order for every operand, whatever its layout,
    // to match `from_shape_vec` below.
    let elements = arrays[0]
        .iter()
        .zip(arrays[1].iter())
        .zip(arrays[2].iter().zip(arrays[3].iter()));
    for ((&p, &g), (&m, &v)) in elements {
        let (p, m, v) = adam.step(p, g, m, v);
        p_new.push(p);
        m_new.push(m);
        v_new.push(v);
    }
    let shape = arrays[0].raw_dim();
    let tensor = |values: Vec<f64>| {
        ArrayD::from_shape_vec(shape.clone(), values)
            .map(Value::tensor)
            .map_err(|e| EvalError::shape(e.to_string()))
    };
    let updated = Value::list(vec![tensor(p_new)?, tensor(m_new)?, tensor(v_new)?]);
    // Leaves that promote to f32 (f32 tensors with numbers) stay f32.
    let dtype = DType::promote_all(leaves.iter().map(value_dtype));
    Ok(match dtype {
        DType::F32 => converted(&updated, DType::F32),
        _ => updated,
    })
}

/// Adam on f32 leaves: each element computed in f64 and rounded once, in
/// one pass over the f32 storage (in parallel blocks for large leaves).
fn single(
    adam: &Adam,
    p: &ArrayD<f32>,
    g: &ArrayD<f32>,
    m: &ArrayD<f32>,
    v: &ArrayD<f32>,
) -> Value {
    // Leaves are row-major in practice; others are copied first.
    let copies = [p, g, m, v].map(|a| {
        a.as_slice()
            .is_none()
            .then(|| a.iter().copied().collect::<Vec<f32>>())
    });
    let views: [&[f32]; 4] = std::array::from_fn(|k| {
        let leaf = [p, g, m, v][k];
        copies[k]
            .as_deref()
            .unwrap_or_else(|| leaf.as_slice().expect("row-major"))
    });
    let len = p.len();
    let (mut p_new, mut m_new, mut v_new) = (vec![0f32; len], vec![0f32; len], vec![0f32; len]);
    let update = |(k, ((p_out, m_out), v_out)): (usize, Outputs<'_>)| {
        let block = k * BLOCK..k * BLOCK + p_out.len();
        let [p, g, m, v] = views.map(|leaf| &leaf[block.clone()]);
        // Zipped slices, no index checks: the loop vectorizes.
        let inputs = p.iter().zip(g).zip(m.iter().zip(v));
        let outputs = p_out.iter_mut().zip(m_out.iter_mut()).zip(v_out.iter_mut());
        for (((p, g), (m, v)), ((p_out, m_out), v_out)) in inputs.zip(outputs) {
            let (p, m, v) = adam.step((*p).into(), (*g).into(), (*m).into(), (*v).into());
            *p_out = p as f32;
            *m_out = m as f32;
            *v_out = v as f32;
        }
    };
    if len >= 2 * BLOCK {
        use rayon::prelude::*;
        p_new
            .par_chunks_mut(BLOCK)
            .zip(m_new.par_chunks_mut(BLOCK))
            .zip(v_new.par_chunks_mut(BLOCK))
            .enumerate()
            .for_each(update);
    } else {
        let blocks = p_new
            .chunks_mut(BLOCK)
            .zip(m_new.chunks_mut(BLOCK))
            .zip(v_new.chunks_mut(BLOCK));
        blocks.enumerate().for_each(update);
    }
    let tensor = |values: Vec<f32>| {
        let array = ArrayD::from_shape_vec(p.raw_dim(), values).expect("one number per element");
        Value::TensorF32(std::rc::Rc::new(array))
    };
    Value::list(vec![tensor(p_new), tensor(m_new), tensor(v_new)])
}

/// One block's new parameters, first and second moments.
type Outputs<'a> = ((&'a mut [f32], &'a mut [f32]), &'a mut [f32]);

/// Elements updated per parallel task.
const BLOCK: usize = 1 << 15;

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("adam-update", "(adam-update p g m v step lr beta1 beta2 eps weight-decay)", "One Adam step for one parameter leaf (a number or tensor) with gradient g and moments m, v at step (counted from 1): (list p m v) updated, in one pass. The stdlib's adam calls it for every leaf.", 10, Some(10), adam_update),
];

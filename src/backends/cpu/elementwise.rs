//! Elementwise kernels over chunks of elements: `apply_chunk` runs one
//! operation over operand slices (the match is outside the loop, so each
//! loop is a tight, vectorizable one), and `run_group` runs a fused group
//! chunk by chunk, in parallel over large tensors.

use super::execute::Buf;
use crate::egraph::language::Math;
use crate::egraph::tensor::TOp;
use crate::scalar;
use crate::tape::FusedGroup;
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// Elements per chunk: registers of a fused group stay in the L1 cache.
pub const CHUNK: usize = 512;

/// Elements per parallel task.
const TASK: usize = 32 * CHUNK;

/// Elementwise work on fewer elements stays on the calling thread.
const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Computes `out[i] = op(ins[0][i], ins[1][i], ...)` for an elementwise
/// operation (`Map`, `Compare`, `Round`, `Where`).
pub fn apply_chunk(op: &TOp, ins: &[&[f64]], out: &mut [f64]) {
    macro_rules! unary {
        ($f:expr) => {{
            let f = $f;
            for (o, &x) in out.iter_mut().zip(ins[0]) {
                *o = f(x);
            }
        }};
    }
    macro_rules! binary {
        ($f:expr) => {{
            let f = $f;
            for ((o, &x), &y) in out.iter_mut().zip(ins[0]).zip(ins[1]) {
                *o = f(x, y);
            }
        }};
    }
    match op {
        TOp::Map(math) => match math {
            Math::Add(_) => binary!(|x: f64, y: f64| x + y),
            Math::Sub(_) => binary!(|x: f64, y: f64| x - y),
            Math::Mul(_) => binary!(|x: f64, y: f64| x * y),
            Math::Div(_) => binary!(|x: f64, y: f64| x / y),
            Math::Pow(_) => binary!(scalar::pow),
            Math::Atan2(_) => binary!(f64::atan2),
            Math::Heaviside(_) => binary!(scalar::heaviside),
            Math::Xlogy(_) => binary!(scalar::xlogy),
            Math::Min(_) => binary!(scalar::nan_min),
            Math::Max(_) => binary!(scalar::nan_max),
            Math::Neg(_) => unary!(|x: f64| -x),
            Math::Exp(_) => unary!(f64::exp),
            Math::Log(_) => unary!(f64::ln),
            Math::Log1p(_) => unary!(f64::ln_1p),
            Math::Expm1(_) => unary!(f64::exp_m1),
            Math::Sqrt(_) => unary!(f64::sqrt),
            Math::Sin(_) => unary!(f64::sin),
            Math::Cos(_) => unary!(f64::cos),
            Math::Tan(_) => unary!(f64::tan),
            Math::Asin(_) => unary!(f64::asin),
            Math::Acos(_) => unary!(f64::acos),
            Math::Atan(_) => unary!(f64::atan),
            Math::Sinh(_) => unary!(f64::sinh),
            Math::Cosh(_) => unary!(f64::cosh),
            Math::Tanh(_) => unary!(f64::tanh),
            Math::Sigmoid(_) => unary!(scalar::sigmoid),
            Math::Relu(_) => unary!(scalar::relu),
            Math::Softplus(_) => unary!(scalar::softplus),
            Math::Abs(_) => unary!(f64::abs),
            Math::Sign(_) => unary!(scalar::sign),
            Math::Num(c) => out.fill(c.get()),
            Math::Var(_) => out.fill(f64::NAN),
        },
        TOp::Compare(cmp) => {
            let cmp = *cmp;
            binary!(|x: f64, y: f64| cmp.apply(x, y))
        }
        TOp::Round(round) => {
            let round = *round;
            unary!(|x: f64| round.apply(x))
        }
        TOp::Where => {
            for (((o, &c), &a), &b) in out.iter_mut().zip(ins[0]).zip(ins[1]).zip(ins[2]) {
                *o = if c != 0.0 { a } else { b };
            }
        }
        other => unreachable!("{other} is not elementwise"),
    }
}

/// An operand of a group as the loop reads it.
enum Source<'a> {
    Scalar(f64),
    Slice(&'a [f64]),
}

/// Runs a fused group (or a single elementwise operation, as a group of
/// one step) over operands broadcasting to `shape`.
pub fn run_group(
    group: &FusedGroup,
    operands: &[&Buf],
    shape: &[usize],
    pool: Option<Vec<f64>>,
) -> Buf {
    let n: usize = shape.iter().product();
    if operands.iter().all(|b| matches!(b, Buf::Scalar(_))) && shape.is_empty() {
        return Buf::Scalar(run_scalar(group, operands));
    }
    // Operands that broadcast are expanded first; exact-shape contiguous
    // tensors are read in place.
    let expanded: Vec<Option<ArrayD<f64>>> = operands
        .iter()
        .map(|b| match b {
            Buf::Array(a) if a.shape() != shape || a.as_slice().is_none() => Some(
                a.broadcast(IxDyn(shape))
                    .expect("tape shapes broadcast")
                    .as_standard_layout()
                    .into_owned(),
            ),
            _ => None,
        })
        .collect();
    let sources: Vec<Source<'_>> = operands
        .iter()
        .zip(&expanded)
        .map(|(b, e)| match (b, e) {
            (_, Some(e)) => Source::Slice(e.as_slice().expect("standard layout")),
            (Buf::Scalar(x), None) => Source::Scalar(*x),
            (Buf::Array(a), None) => Source::Slice(a.as_slice().expect("checked contiguous")),
        })
        .collect();
    let mut out = match pool {
        Some(mut v) if v.len() == n => {
            v.truncate(n);
            v
        }
        _ => vec![0.0; n],
    };
    let task = |start: usize, block: &mut [f64]| {
        let steps = group.steps.len();
        let mut registers = vec![0.0; (group.inputs + steps) * CHUNK];
        let mut offset = 0;
        while offset < block.len() {
            let len = CHUNK.min(block.len() - offset);
            let at = start + offset;
            for (k, source) in sources.iter().enumerate() {
                let r = &mut registers[k * CHUNK..k * CHUNK + len];
                match source {
                    Source::Scalar(x) => r.fill(*x),
                    Source::Slice(s) => r.copy_from_slice(&s[at..at + len]),
                }
            }
            for (s, (op, args)) in group.steps.iter().enumerate() {
                let target = group.inputs + s;
                let (before, after) = registers.split_at_mut(target * CHUNK);
                let ins: smallvec::SmallVec<[&[f64]; 3]> = args
                    .iter()
                    .map(|&r| &before[usize::from(r) * CHUNK..usize::from(r) * CHUNK + len])
                    .collect();
                apply_chunk(op, &ins, &mut after[..len]);
            }
            let result = usize::from(group.results[0]);
            block[offset..offset + len]
                .copy_from_slice(&registers[result * CHUNK..result * CHUNK + len]);
            offset += len;
        }
    };
    if n >= PARALLEL_THRESHOLD {
        out.par_chunks_mut(TASK)
            .enumerate()
            .for_each(|(i, block)| task(i * TASK, block));
    } else {
        task(0, &mut out);
    }
    Buf::Array(std::rc::Rc::new(
        ArrayD::from_shape_vec(IxDyn(shape), out).expect("length matches shape"),
    ))
}

/// A group over scalars: no allocation.
fn run_scalar(group: &FusedGroup, operands: &[&Buf]) -> f64 {
    let mut registers: smallvec::SmallVec<[f64; 16]> = operands
        .iter()
        .map(|b| match b {
            Buf::Scalar(x) => *x,
            Buf::Array(a) => a.iter().next().copied().unwrap_or(f64::NAN),
        })
        .collect();
    for (op, args) in &group.steps {
        let ins: smallvec::SmallVec<[[f64; 1]; 3]> =
            args.iter().map(|&r| [registers[usize::from(r)]]).collect();
        let refs: smallvec::SmallVec<[&[f64]; 3]> = ins.iter().map(|a| &a[..]).collect();
        let mut out = [0.0];
        apply_chunk(op, &refs, &mut out);
        registers.push(out[0]);
    }
    registers[usize::from(group.results[0])]
}

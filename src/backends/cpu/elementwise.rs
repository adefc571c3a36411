//! Elementwise kernels over chunks of elements: `apply_chunk` runs one
//! operation over operand slices (the match is outside the loop, so each
//! loop is a tight, vectorizable one), and `run_group` runs a fused group
//! chunk by chunk, in parallel over large tensors.

use super::execute::{Flat, Val};
use crate::egraph::language::Math;
use crate::egraph::tensor::TOp;
use crate::scalar;
use crate::tape::FusedGroup;
use ndarray::{ArrayD, Axis, IxDyn};
use rayon::prelude::*;

/// Elements per chunk: registers of a fused group stay in the L1 cache.
pub const CHUNK: usize = 256;

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
            Math::Pow(_) => match integer_exponent(ins[1]) {
                Some(k) => unary!(|x: f64| if x.is_nan() { x } else { x.powi(k) }),
                None => binary!(scalar::pow),
            },
            Math::Atan2(_) => binary!(f64::atan2),
            Math::Heaviside(_) => binary!(scalar::heaviside),
            Math::Xlogy(_) => binary!(scalar::xlogy),
            Math::Min(_) => binary!(scalar::nan_min),
            Math::Max(_) => binary!(scalar::nan_max),
            Math::Neg(_) => unary!(|x: f64| -x),
            Math::Exp(_) => unary!(scalar::exp),
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
            Math::Tanh(_) => unary!(scalar::tanh),
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

/// `Some(k)` when every exponent in `exponents` is the same small integer
/// `k` (a constant exponent), for which `powi` equals `pow`.
fn integer_exponent(exponents: &[f64]) -> Option<i32> {
    let first = *exponents.first()?;
    // Up to 4 factors, repeated multiplication rounds as well as `powf`.
    let small_integer = first.fract() == 0.0 && first.abs() <= 4.0;
    (small_integer && exponents.iter().all(|&e| e == first)).then_some(first as i32)
}

/// An operand of a group as the loop reads it.
enum Source<'a> {
    /// The same number everywhere.
    Scalar(f64),
    /// Element `i` is `data[i]`.
    Slice(&'a [f64]),
    /// Element `i` is `data[i - start]` inside `data`, 0 outside (a
    /// zero-padded operand read in place).
    Shifted { data: &'a [f64], start: usize },
    /// Element `i` is `value` for `start <= i < end`, 0 outside.
    Window {
        value: f64,
        start: usize,
        end: usize,
    },
}

impl Source<'_> {
    fn fill(&self, at: usize, out: &mut [f64]) {
        match self {
            Source::Scalar(x) => out.fill(*x),
            Source::Slice(s) => out.copy_from_slice(&s[at..at + out.len()]),
            Source::Shifted { data, start } => {
                let len = out.len();
                // The part of at..at+len that falls inside the data.
                let lo = at.max(*start).min(at + len);
                let hi = (start + data.len()).min(at + len).max(lo);
                out[..lo - at].fill(0.0);
                if hi > lo {
                    out[lo - at..hi - at].copy_from_slice(&data[lo - start..hi - start]);
                }
                out[hi - at..].fill(0.0);
            }
            Source::Window { value, start, end } => {
                let len = out.len();
                let lo = at.max(*start).min(at + len);
                let hi = (*end).min(at + len).max(lo);
                out[..lo - at].fill(0.0);
                out[lo - at..hi - at].fill(*value);
                out[hi - at..].fill(0.0);
            }
        }
    }
}

/// The elements of a row-major view, when they are contiguous.
fn contiguous<'a>(view: &ndarray::ArrayViewD<'a, f64>) -> Option<&'a [f64]> {
    view.to_slice()
}

/// Runs a fused group (or a single elementwise operation, as a group of
/// one step) over operands broadcasting to `shape`.
pub fn run_group(
    group: &FusedGroup,
    operands: &[&Val],
    shape: &[usize],
    pool: Option<Vec<f64>>,
) -> Val {
    // A group with a fused sum loops over its operand's shape and returns
    // the sum, in the instruction's shape (a scalar, or ones with keepdims).
    let result_shape = shape;
    let shape: &[usize] = group.sum_over.as_deref().unwrap_or(shape);
    let n: usize = shape.iter().product();
    if shape.is_empty() && operands.iter().all(|v| matches!(v, Val::Scalar(_))) {
        return Val::Scalar(run_scalar(group, operands));
    }
    // Operands are read in place when their elements line up with the
    // result's (same shape, contiguous; a pad along the first axis of a
    // contiguous array); anything else is expanded first.
    let mut expanded: Vec<Option<ArrayD<f64>>> = Vec::with_capacity(operands.len());
    for operand in operands {
        let in_place = match operand {
            Val::Scalar(_) => true,
            Val::Array(a) => a.shape() == shape && a.as_slice().is_some(),
            Val::Slice {
                base,
                axis,
                start,
                end,
            } => {
                let view = base.slice_axis(Axis(*axis), ndarray::Slice::from(*start..*end));
                view.shape() == shape && contiguous(&view).is_some()
            }
            Val::Full { shape: full, .. } => full[..] == *shape,
            Val::Padded { shape: padded, .. } => padded[..] == *shape,
        };
        expanded.push((!in_place).then(|| {
            operand
                .cow()
                .broadcast(IxDyn(shape))
                .expect("tape shapes broadcast")
                .as_standard_layout()
                .into_owned()
        }));
    }
    let sources: Vec<Source<'_>> = operands
        .iter()
        .zip(&expanded)
        .map(|(operand, e)| match (operand, e) {
            (_, Some(e)) => Source::Slice(e.as_slice().expect("standard layout")),
            (Val::Scalar(x), None) => Source::Scalar(*x),
            (Val::Array(a), None) => Source::Slice(a.as_slice().expect("checked contiguous")),
            (
                Val::Slice {
                    base,
                    axis,
                    start,
                    end,
                },
                None,
            ) => Source::Slice(
                contiguous(&base.slice_axis(Axis(*axis), ndarray::Slice::from(*start..*end)))
                    .expect("checked contiguous"),
            ),
            (Val::Full { value, .. }, None) => Source::Scalar(*value),
            (Val::Padded { inner, before, .. }, None) => match inner {
                Flat::Data { base, start, len } => Source::Shifted {
                    data: &base.as_slice().expect("padded data is contiguous")[*start..start + len],
                    start: *before,
                },
                Flat::Fill { value, len } => Source::Window {
                    value: *value,
                    start: *before,
                    end: before + len,
                },
            },
        })
        .collect();
    // Runs the group over elements `at..at + len` (at most a chunk) and
    // returns the register holding the result.
    // Registers: one chunk per operand (filled for padded operands; a
    // number is filled once per task; a contiguous operand is read where it
    // is), then one chunk per step.
    let inputs = group.inputs;
    // Registers: a chunk of each operand's constant value (numbers, and
    // the inside of a window), filled once per task; a chunk per operand
    // for the chunks where a padded operand crosses its edge; a chunk per
    // step. Contiguous data, and padded data away from its edges, are read
    // where they are.
    let chunk = |at: usize, len: usize, registers: &mut [f64]| -> usize {
        let (constants, rest) = registers.split_at_mut(inputs * CHUNK);
        let (edges, step_registers) = rest.split_at_mut(inputs * CHUNK);
        let inside = |start: usize, end: usize| at >= start && at + len <= end;
        for (k, source) in sources.iter().enumerate() {
            let crosses = match source {
                Source::Shifted { data, start } => !inside(*start, start + data.len()),
                Source::Window { start, end, .. } => !inside(*start, *end),
                _ => false,
            };
            if crosses {
                source.fill(at, &mut edges[k * CHUNK..k * CHUNK + len]);
            }
        }
        let (constants, edges): (&[f64], &[f64]) = (constants, edges);
        let operand = |r: usize| -> &[f64] {
            let register = r * CHUNK..r * CHUNK + len;
            match &sources[r] {
                Source::Slice(data) => &data[at..at + len],
                Source::Scalar(_) => &constants[register],
                Source::Shifted { data, start } if inside(*start, start + data.len()) => {
                    &data[at - start..at - start + len]
                }
                Source::Window { start, end, .. } if inside(*start, *end) => &constants[register],
                _ => &edges[register],
            }
        };
        for (s, (op, args)) in group.steps.iter().enumerate() {
            let (before, after) = step_registers.split_at_mut(s * CHUNK);
            let ins: smallvec::SmallVec<[&[f64]; 3]> = args
                .iter()
                .map(|&r| {
                    let r = usize::from(r);
                    if r < inputs {
                        operand(r)
                    } else {
                        &before[(r - inputs) * CHUNK..(r - inputs) * CHUNK + len]
                    }
                })
                .collect();
            apply_chunk(op, &ins, &mut after[..len]);
        }
        (inputs + usize::from(group.results[0])) * CHUNK
    };
    let registers_len = (2 * inputs + group.steps.len()) * CHUNK;
    let new_registers = || {
        let mut registers = vec![0.0; registers_len];
        for (k, source) in sources.iter().enumerate() {
            if let Source::Scalar(value) | Source::Window { value, .. } = source {
                registers[k * CHUNK..(k + 1) * CHUNK].fill(*value);
            }
        }
        registers
    };
    if group.sum_over.is_some() {
        let partial = |start: usize, end: usize| -> f64 {
            let mut registers = new_registers();
            let mut total = 0.0;
            let mut at = start;
            while at < end {
                let len = CHUNK.min(end - at);
                let result = chunk(at, len, &mut registers);
                total += registers[result..result + len].iter().sum::<f64>();
                at += len;
            }
            total
        };
        let total = if n >= PARALLEL_THRESHOLD {
            let parts: Vec<f64> = (0..n.div_ceil(TASK))
                .into_par_iter()
                .map(|t| partial(t * TASK, n.min((t + 1) * TASK)))
                .collect();
            parts.iter().sum()
        } else {
            partial(0, n)
        };
        return if result_shape.is_empty() {
            Val::Scalar(total)
        } else {
            Val::Array(std::rc::Rc::new(ArrayD::from_elem(
                IxDyn(result_shape),
                total,
            )))
        };
    }
    let mut out = match pool {
        Some(v) if v.len() == n => v,
        _ => vec![0.0; n],
    };
    let task = |start: usize, block: &mut [f64]| {
        let mut registers = new_registers();
        let mut offset = 0;
        while offset < block.len() {
            let len = CHUNK.min(block.len() - offset);
            let result = chunk(start + offset, len, &mut registers);
            block[offset..offset + len].copy_from_slice(&registers[result..result + len]);
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
    Val::Array(std::rc::Rc::new(
        ArrayD::from_shape_vec(IxDyn(shape), out).expect("length matches shape"),
    ))
}

/// A group over scalars: no allocation.
fn run_scalar(group: &FusedGroup, operands: &[&Val]) -> f64 {
    let mut registers: smallvec::SmallVec<[f64; 16]> = operands
        .iter()
        .map(|v| match v {
            Val::Scalar(x) => *x,
            other => other.cow().iter().next().copied().unwrap_or(f64::NAN),
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

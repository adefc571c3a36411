//! Elementwise kernels over chunks of elements: `apply_chunk` runs one
//! operation over operand slices (the match is outside the loop, so each
//! loop is a tight, vectorizable one), and `run_group` runs a fused group
//! chunk by chunk, in parallel over large tensors.

use super::execute::Val;
use super::native_task::{Kernels, NativeTask};
use super::sources::{self, Source};
use crate::ir::TOp;
use crate::ir::math::language::Math;
use crate::scalar;
use crate::tape::FusedGroup;
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// Elements per chunk: registers of a fused group stay in the L1 cache.
pub const CHUNK: usize = 256;

/// Elements per parallel task.
pub(super) const TASK: usize = 32 * CHUNK;

/// Elementwise work on fewer elements stays on the calling thread.
const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Computes `out[i] = op(ins[0][i], ins[1][i], ...)` for an elementwise
/// operation (`Map`, `Compare`, `Round`, `Where`, `Cast`).
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
            Math::Neg(_) => unary!(|x: f64| -x),
            // Vectorized loops with the scalar function's bits.
            Math::Exp(_) => scalar::exp_slice(ins[0], out),
            Math::Tanh(_) => scalar::tanh_slice(ins[0], out),
            Math::Sigmoid(_) => scalar::sigmoid_slice(ins[0], out),
            Math::Num(c) => out.fill(c.get()),
            Math::Var(_) | Math::Call(..) => out.fill(f64::NAN),
            // Every other function: its row's loop.
            row => {
                let applied = crate::ir::math::elementwise::apply_slices(row, ins, out);
                debug_assert!(applied, "{row} is a row of the elementwise table");
            }
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
        // The type is matched outside the loop, so the loop vectorizes.
        TOp::Cast(crate::dtype::DType::F32) => unary!(crate::dtype::round32),
        TOp::Cast(_) => out.copy_from_slice(&ins[0][..out.len()]),
        other => unreachable!("{other} is not elementwise"),
    }
}

/// Whether the interpreter's loop for `op` is vectorized (`scalar::exp_slice`, ...): a
/// group with such a step runs faster interpreted, chunk by chunk, than
/// natively, where the function is called once per number.
pub(super) fn vectorized(op: &TOp) -> bool {
    matches!(
        op,
        TOp::Map(Math::Exp(_) | Math::Tanh(_) | Math::Sigmoid(_))
    )
}

/// Runs a fused group (or a single elementwise operation, as a group of
/// one step) over operands broadcasting to `shape`; the result is kept in
/// f32 storage when `single` (its numbers are f32 ones).
pub fn run_group(group: &FusedGroup, operands: &[&Val], shape: &[usize], single: bool) -> Val {
    // A group with a fused sum loops over its operand's shape and returns
    // the sum, in the instruction's shape (a scalar, or ones with keepdims).
    let result_shape = shape;
    let shape: &[usize] = group.sum_over.as_deref().unwrap_or(shape);
    if shape.is_empty() && operands.iter().all(|v| matches!(v, Val::Scalar(_))) {
        return Val::Scalar(run_scalar(group, operands));
    }
    let expanded = sources::expand(operands, shape);
    let value = run_expanded(group, operands, &expanded, (shape, result_shape), single);
    // The copies of broadcast operands serve later results of their size.
    for copy in expanded.into_iter().flatten() {
        super::storage::recycle(std::rc::Rc::new(copy));
    }
    value
}

/// `run_group` once the operands that cannot be read in place are
/// expanded; `shapes` are the loop's and the result's.
fn run_expanded(
    group: &FusedGroup,
    operands: &[&Val],
    expanded: &[Option<ArrayD<f64>>],
    (shape, result_shape): (&[usize], &[usize]),
    single: bool,
) -> Val {
    let n: usize = shape.iter().product();
    let sources = sources::sources(operands, expanded, shape);
    // Native code for large groups; the interpreter for the rest.
    let kernels = Kernels::new(group, &sources, n);
    let native = kernels.as_ref().map(|k| NativeTask::new(k, &sources, n));
    let task: &dyn Task = match &native {
        Some(native) => native,
        None => &Interpreted {
            group,
            sources: &sources,
            width: CHUNK.min(n.max(1)),
        },
    };
    if group.sum_over.is_some() {
        let total = if n >= PARALLEL_THRESHOLD {
            let parts: Vec<f64> = (0..n.div_ceil(TASK))
                .into_par_iter()
                .map(|t| task.sum(t * TASK, n.min((t + 1) * TASK)))
                .collect();
            parts.iter().sum()
        } else {
            task.sum(0, n)
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
    if single {
        let out = stored(shape, |start, out: &mut [f32]| task.store_f32(start, out));
        return Val::F32(std::rc::Rc::new(out));
    }
    Val::Array(std::rc::Rc::new(stored(shape, |start, out: &mut [f64]| {
        task.store(start, out)
    })))
}

/// New storage of `shape` written by `store` (elements from `start` into
/// a block), in parallel blocks for large shapes.
fn stored<T>(shape: &[usize], store: impl Fn(usize, &mut [T]) + Sync) -> ArrayD<T>
where
    T: super::storage::Kept + Send,
{
    let n: usize = shape.iter().product();
    let mut out = super::storage::take_or_new::<T>(n);
    if n >= PARALLEL_THRESHOLD {
        out.par_chunks_mut(TASK)
            .enumerate()
            .for_each(|(i, block)| store(i * TASK, block));
    } else {
        store(0, &mut out);
    }
    ArrayD::from_shape_vec(IxDyn(shape), out).expect("length matches shape")
}

/// A way to compute a group's elements over a range, on any thread.
pub(super) trait Task: Sync {
    /// Computes elements `start..start + out.len()` into `out`.
    fn store(&self, start: usize, out: &mut [f64]);

    /// `store` into f32 storage, for a group whose elements are f32
    /// numbers.
    fn store_f32(&self, start: usize, out: &mut [f32]);

    /// The sum of elements `start..end`, added chunk by chunk in order (so
    /// every way of computing the elements gives the same sum).
    fn sum(&self, start: usize, end: usize) -> f64;
}

/// The group interpreted step by step over chunks: one register chunk per
/// step, in the L1 cache.
struct Interpreted<'a> {
    group: &'a FusedGroup,
    sources: &'a [Source<'a>],
    /// Elements per chunk: `CHUNK`, or fewer for a group over fewer
    /// elements (its registers are then that much smaller to set up).
    width: usize,
}

impl Interpreted<'_> {
    /// Registers: a chunk of each operand's constant value (numbers, and
    /// the inside of a window), filled once per task; a chunk per operand
    /// for the chunks where a padded operand crosses its edge; a chunk per
    /// step. Contiguous data, and padded data away from its edges, are read
    /// where they are. The storage is the thread's, reused from task to
    /// task (zeroing a fresh one cost 5% of a softmax's gradient): `f`
    /// runs with it.
    fn with_registers<T>(&self, f: impl FnOnce(&mut [f64]) -> T) -> T {
        let len = (2 * self.group.inputs + self.group.steps.len()) * self.width;
        // Taken out while in use, so a nested group gets storage of its own.
        let mut registers = REGISTERS.with(|r| std::mem::take(&mut *r.borrow_mut()));
        if registers.len() < len {
            registers.resize(len, 0.0);
        }
        for (k, source) in self.sources.iter().enumerate() {
            if let Source::Scalar(value) | Source::Window { value, .. } = source {
                registers[k * self.width..(k + 1) * self.width].fill(*value);
            }
        }
        let result = f(&mut registers[..len]);
        REGISTERS.with(|r| {
            let mut kept = r.borrow_mut();
            if kept.len() < registers.len() {
                *kept = registers;
            }
        });
        result
    }

    /// Runs the group over elements `at..at + out.len()` (at most a chunk)
    /// into `out`.
    fn chunk(&self, at: usize, registers: &mut [f64], out: &mut [f64]) {
        let (group, sources, inputs) = (self.group, self.sources, self.group.inputs);
        let width = self.width;
        let len = out.len();
        let (constants, rest) = registers.split_at_mut(inputs * width);
        let (edges, step_registers) = rest.split_at_mut(inputs * width);
        let inside = |start: usize, end: usize| at >= start && at + len <= end;
        for (k, source) in sources.iter().enumerate() {
            let crosses = match source {
                Source::Shifted { data, start } => !inside(*start, start + data.len()),
                Source::Window { start, end, .. } => !inside(*start, *end),
                Source::Strided(_) | Source::Cyclic { .. } => source.in_place(at, len).is_none(),
                Source::F32(_) => true,
                Source::Scalar(_) | Source::Slice(_) => false,
            };
            if crosses {
                source.fill(at, &mut edges[k * width..k * width + len]);
            }
        }
        let (constants, edges): (&[f64], &[f64]) = (constants, edges);
        let operand = |r: usize| -> &[f64] {
            let register = r * width..r * width + len;
            match &sources[r] {
                Source::Slice(data) => &data[at..at + len],
                Source::Scalar(_) => &constants[register],
                Source::Shifted { data, start } if inside(*start, start + data.len()) => {
                    &data[at - start..at - start + len]
                }
                Source::Window { start, end, .. } if inside(*start, *end) => &constants[register],
                Source::Strided(_) | Source::Cyclic { .. } => {
                    sources[r].in_place(at, len).unwrap_or(&edges[register])
                }
                _ => &edges[register],
            }
        };
        // A result made by the last step is written where it goes, not
        // through its register.
        let result = usize::from(group.results[0]);
        let steps = group.steps.len();
        let last_makes_result = steps > 0 && result == inputs + steps - 1;
        for (s, (op, args)) in group.steps.iter().enumerate() {
            let (before, after) = step_registers.split_at_mut(s * width);
            let ins: smallvec::SmallVec<[&[f64]; 3]> = args
                .iter()
                .map(|&r| {
                    let r = usize::from(r);
                    if r < inputs {
                        operand(r)
                    } else {
                        &before[(r - inputs) * width..(r - inputs) * width + len]
                    }
                })
                .collect();
            match last_makes_result && s + 1 == steps {
                true => apply_chunk(op, &ins, out),
                false => apply_chunk(op, &ins, &mut after[..len]),
            }
        }
        if last_makes_result {
            return;
        }
        out.copy_from_slice(if result < inputs {
            operand(result)
        } else {
            &step_registers[(result - inputs) * width..(result - inputs) * width + len]
        });
    }
}

impl Task for Interpreted<'_> {
    fn store(&self, start: usize, out: &mut [f64]) {
        self.with_registers(|registers| {
            for (c, block) in out.chunks_mut(self.width).enumerate() {
                self.chunk(start + c * self.width, registers, block);
            }
        });
    }

    fn store_f32(&self, start: usize, out: &mut [f32]) {
        self.with_registers(|registers| {
            let mut values = [0.0; CHUNK];
            for (c, block) in out.chunks_mut(self.width).enumerate() {
                let values = &mut values[..block.len()];
                self.chunk(start + c * self.width, registers, values);
                narrow_into(values, block);
            }
        });
    }

    fn sum(&self, start: usize, end: usize) -> f64 {
        self.with_registers(|registers| {
            let mut values = [0.0; CHUNK];
            let mut total = 0.0;
            for at in (start..end).step_by(self.width) {
                let len = self.width.min(end - at);
                self.chunk(at, registers, &mut values[..len]);
                total += scalar::sum(&values[..len]);
            }
            total
        })
    }
}

thread_local! {
    /// The registers of `Interpreted` groups run on this thread.
    static REGISTERS: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// f64 numbers that are f32 ones, into f32 storage (exact).
pub(super) fn narrow_into(values: &[f64], out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(values) {
        *o = x as f32;
    }
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

#[cfg(test)]
mod tests {
    use crate::scalar;

    /// The vectorized loops give the bits of the scalar functions, on
    /// ordinary numbers and on every special case (NaNs aside, whose
    /// payload is the hardware's choice).
    #[test]
    fn widest_loops_give_the_scalar_bits() {
        let mut values = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE / 4.0,
            709.78,
            709.79,
            -745.13,
            -745.14,
            40.0,
            -40.5,
            1e-300,
            f64::MAX,
            f64::MIN,
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            values.push((u - 0.5) * 1600.0);
            values.push((u - 0.5) * 4.0);
        }
        type Loop = fn(&[f64], &mut [f64]);
        type Pair = (Loop, fn(f64) -> f64);
        let functions: [Pair; 3] = [
            (scalar::exp_slice, scalar::exp),
            (scalar::tanh_slice, scalar::tanh),
            (scalar::sigmoid_slice, scalar::sigmoid),
        ];
        for (vectorized, scalar) in functions {
            let mut out = vec![0.0; values.len()];
            vectorized(&values, &mut out);
            for (&x, &y) in values.iter().zip(&out) {
                let want = scalar(x);
                assert!(
                    y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                    "f({x:e}) = {y:e}, one number at a time {want:e}"
                );
            }
        }
    }
}

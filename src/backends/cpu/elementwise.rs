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
use std::mem::MaybeUninit;

/// Elements per chunk: registers of a fused group stay in the L1 cache.
pub const CHUNK: usize = 256;

/// Elements per parallel task.
pub(super) const TASK: usize = 32 * CHUNK;

/// Elementwise work on fewer elements stays on the calling thread.
const PARALLEL_THRESHOLD: usize = 1 << 15;

crate::simd::widest_fns! {
    /// Computes `out[i] = op(ins[0][i], ins[1][i], ...)` for an elementwise
    /// operation (`Map`, `Compare`, `Round`, `Where`, `Cast`), its loops
    /// compiled for the widest SIMD the host has (the same operations on
    /// each number, so the same bits).
    pub fn apply_chunk(op: &TOp, ins: &[&[f64]], out: &mut [f64]) = each_element;
}

/// `apply_chunk`'s body: the match outside, a plain loop for each kind.
#[inline(always)]
fn each_element(op: &TOp, ins: &[&[f64]], out: &mut [f64]) {
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

/// Whether `group` is one add, sub, mul or div with an operand that is
/// one number over the first chunk of `n` elements without being a
/// number everywhere (a column broadcast along rows): the interpreter
/// reads it as that number in its widest loops (`with_number`), where a
/// native kernel would read it copied, two numbers at a time.
pub(super) fn reads_a_number_per_chunk(
    group: &FusedGroup,
    sources: &[Source<'_>],
    n: usize,
) -> bool {
    let [(op, args)] = &group.steps[..] else {
        return false;
    };
    if n == 0 {
        return false;
    }
    let numbers: smallvec::SmallVec<[Option<f64>; 8]> = sources
        .iter()
        .map(|s| match s {
            Source::Scalar(_) => None,
            other => other.number_over(0, CHUNK.min(n)),
        })
        .collect();
    NumberSide::of(op, args, &numbers).is_some()
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
    Val::Array(std::rc::Rc::new(stored_wide(shape, task)))
}

/// `stored` for f64 results: storage the pool has none of is not zeroed
/// first but written once by `Task::store_fresh` (zeroing a fresh 8 MB
/// result took 9% of a `logsumexp` gradient).
fn stored_wide(shape: &[usize], task: &dyn Task) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let kept = super::storage::take::<f64>(n);
    if kept.is_some() || n < PARALLEL_THRESHOLD {
        let out = kept.unwrap_or_else(|| vec![0.0; n]);
        return written(shape, out, |start, block: &mut [f64]| {
            task.store(start, block)
        });
    }
    let mut fresh: Vec<f64> = Vec::with_capacity(n);
    fresh.spare_capacity_mut()[..n]
        .par_chunks_mut(TASK)
        .enumerate()
        .for_each(|(i, block)| task.store_fresh(i * TASK, block));
    // SAFETY: the blocks cover the first n elements, and `store_fresh`
    // writes every element of its block.
    unsafe { fresh.set_len(n) };
    ArrayD::from_shape_vec(IxDyn(shape), fresh).expect("length matches shape")
}

/// New storage of `shape` written by `store` (elements from `start` into
/// a block), in parallel blocks for large shapes.
fn stored<T>(shape: &[usize], store: impl Fn(usize, &mut [T]) + Sync) -> ArrayD<T>
where
    T: super::storage::Kept + Send,
{
    let n: usize = shape.iter().product();
    written(shape, super::storage::take_or_new::<T>(n), store)
}

/// `out` (of `shape`'s size) written by `store`, in parallel blocks for
/// large shapes.
fn written<T>(shape: &[usize], mut out: Vec<T>, store: impl Fn(usize, &mut [T]) + Sync) -> ArrayD<T>
where
    T: Send,
{
    if out.len() >= PARALLEL_THRESHOLD {
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

    /// `store` into fresh storage, writing every element. The default
    /// zeroes it first.
    fn store_fresh(&self, start: usize, out: &mut [MaybeUninit<f64>]) {
        for o in out.iter_mut() {
            o.write(0.0);
        }
        // SAFETY: every element was written just above, and
        // `MaybeUninit<f64>` has the layout of `f64`.
        let numbers = unsafe { &mut *(out as *mut [MaybeUninit<f64>] as *mut [f64]) };
        self.store(start, numbers);
    }

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
    /// into `out`. An operand that is one number over the chunk (a number,
    /// a column broadcast along rows) is read as that number by the
    /// arithmetic steps that take it with a chunk (`with_number`), and is
    /// copied into a register only when another step reads it.
    fn chunk(&self, at: usize, registers: &mut [f64], mut out: Out<'_>) {
        let (group, sources, inputs) = (self.group, self.sources, self.group.inputs);
        let width = self.width;
        let len = out.len();
        let (constants, rest) = registers.split_at_mut(inputs * width);
        let (edges, step_registers) = rest.split_at_mut(inputs * width);
        let inside = |start: usize, end: usize| at >= start && at + len <= end;
        let numbers: smallvec::SmallVec<[Option<f64>; 8]> =
            sources.iter().map(|s| s.number_over(at, len)).collect();
        let sides: smallvec::SmallVec<[Option<NumberSide>; 8]> = group
            .steps
            .iter()
            .map(|(op, args)| NumberSide::of(op, args, &numbers))
            .collect();
        // The operands some step (or the result) reads as a chunk: every
        // argument of a step that takes no number (an operand that is no
        // number is copied where needed anyway).
        let mut as_chunk: smallvec::SmallVec<[bool; 8]> = smallvec::smallvec![false; inputs];
        for ((_, args), side) in group.steps.iter().zip(&sides) {
            for &r in args.iter().filter(|_| side.is_none()) {
                if usize::from(r) < inputs {
                    as_chunk[usize::from(r)] = true;
                }
            }
        }
        let result = usize::from(group.results[0]);
        if result < inputs {
            as_chunk[result] = true;
        }
        for (k, source) in sources.iter().enumerate() {
            let crosses = match source {
                Source::Shifted { data, start } => !inside(*start, start + data.len()),
                Source::Window { start, end, .. } => !inside(*start, *end),
                Source::Strided(_) | Source::Cyclic { .. } => source.in_place(at, len).is_none(),
                Source::F32(_) => true,
                Source::Scalar(_) | Source::Slice(_) => false,
            };
            if crosses && (as_chunk[k] || numbers[k].is_none()) {
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
        // through its register (into fresh storage only by a step with a
        // number side, whose loop writes each number once).
        let steps = group.steps.len();
        let last_makes_result = steps > 0 && result == inputs + steps - 1;
        let mut written = false;
        for (s, ((op, args), side)) in group.steps.iter().zip(&sides).enumerate() {
            let (before, after) = step_registers.split_at_mut(s * width);
            let read = |r: usize| -> &[f64] {
                if r < inputs {
                    operand(r)
                } else {
                    &before[(r - inputs) * width..(r - inputs) * width + len]
                }
            };
            let last = last_makes_result && s + 1 == steps;
            if let (true, Some(side), Out::Fresh(fresh)) = (last, side, &mut out) {
                let xs = read(side.chunk);
                with_number_fresh(side.arith, xs, side.number, side.first, fresh);
                written = true;
                continue;
            }
            written |= last && matches!(out, Out::Numbers(_));
            let target = match (last, &mut out) {
                (true, Out::Numbers(numbers)) => &mut **numbers,
                _ => &mut after[..len],
            };
            match side {
                Some(side) => with_number(
                    side.arith,
                    read(side.chunk),
                    side.number,
                    side.first,
                    target,
                ),
                None => {
                    let ins: smallvec::SmallVec<[&[f64]; 3]> =
                        args.iter().map(|&r| read(usize::from(r))).collect();
                    apply_chunk(op, &ins, target);
                }
            }
        }
        if written {
            return;
        }
        let values = if result < inputs {
            operand(result)
        } else {
            &step_registers[(result - inputs) * width..(result - inputs) * width + len]
        };
        match out {
            Out::Numbers(numbers) => numbers.copy_from_slice(values),
            Out::Fresh(fresh) => {
                for (o, &v) in fresh.iter_mut().zip(values) {
                    o.write(v);
                }
            }
        }
    }
}

/// Where a chunk's elements go: storage holding numbers, or fresh
/// storage (each element written once, never read).
enum Out<'a> {
    Numbers(&'a mut [f64]),
    Fresh(&'a mut [MaybeUninit<f64>]),
}

impl Out<'_> {
    fn len(&self) -> usize {
        match self {
            Out::Numbers(numbers) => numbers.len(),
            Out::Fresh(fresh) => fresh.len(),
        }
    }
}

/// An arithmetic step of two operands of which exactly one is a number
/// over the chunk at hand.
#[derive(Clone, Copy)]
struct NumberSide {
    arith: Arith,
    /// The register read as a chunk.
    chunk: usize,
    /// The other operand's number.
    number: f64,
    /// Whether the number is the first operand.
    first: bool,
}

impl NumberSide {
    /// The step `op args` as one, given the operands' numbers over the
    /// chunk (`None` for a register that is not one number).
    fn of(op: &TOp, args: &[u16], numbers: &[Option<f64>]) -> Option<NumberSide> {
        let arith = match op {
            TOp::Map(Math::Add(_)) => Arith::Add,
            TOp::Map(Math::Sub(_)) => Arith::Sub,
            TOp::Map(Math::Mul(_)) => Arith::Mul,
            TOp::Map(Math::Div(_)) => Arith::Div,
            _ => return None,
        };
        let [x, y] = [usize::from(args[0]), usize::from(args[1])];
        let number = |r: usize| numbers.get(r).copied().flatten();
        match (number(x), number(y)) {
            (Some(number), None) => Some(NumberSide {
                arith,
                chunk: y,
                number,
                first: true,
            }),
            (None, Some(number)) => Some(NumberSide {
                arith,
                chunk: x,
                number,
                first: false,
            }),
            _ => None,
        }
    }
}

/// The arithmetic `with_number` does.
#[derive(Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

crate::simd::widest_fns! {
    /// `out[i] = c op xs[i]` (`first`) or `xs[i] op c`, in the host's
    /// widest vectors: what `apply_chunk` gives with `c` repeated.
    fn with_number(arith: Arith, xs: &[f64], c: f64, first: bool, out: &mut [f64]) = number_loop;
    /// `with_number` into fresh storage.
    fn with_number_fresh(arith: Arith, xs: &[f64], c: f64, first: bool, out: &mut [MaybeUninit<f64>]) = number_loop;
}

/// Where a loop writes a number: storage already holding numbers, or
/// fresh storage written for the first time.
trait Slot {
    fn set(&mut self, value: f64);
}

impl Slot for f64 {
    #[inline(always)]
    fn set(&mut self, value: f64) {
        *self = value;
    }
}

impl Slot for MaybeUninit<f64> {
    #[inline(always)]
    fn set(&mut self, value: f64) {
        self.write(value);
    }
}

#[inline(always)]
fn number_loop<S: Slot>(arith: Arith, xs: &[f64], c: f64, first: bool, out: &mut [S]) {
    macro_rules! each {
        ($f:expr) => {{
            let f = $f;
            for (o, &x) in out.iter_mut().zip(xs) {
                o.set(f(x));
            }
        }};
    }
    match (arith, first) {
        (Arith::Add, true) => each!(|x: f64| c + x),
        (Arith::Add, false) => each!(|x: f64| x + c),
        (Arith::Sub, true) => each!(|x: f64| c - x),
        (Arith::Sub, false) => each!(|x: f64| x - c),
        (Arith::Mul, true) => each!(|x: f64| c * x),
        (Arith::Mul, false) => each!(|x: f64| x * c),
        (Arith::Div, true) => each!(|x: f64| c / x),
        (Arith::Div, false) => each!(|x: f64| x / c),
    }
}

impl Task for Interpreted<'_> {
    fn store(&self, start: usize, out: &mut [f64]) {
        self.with_registers(|registers| {
            for (c, block) in out.chunks_mut(self.width).enumerate() {
                self.chunk(start + c * self.width, registers, Out::Numbers(block));
            }
        });
    }

    fn store_fresh(&self, start: usize, out: &mut [MaybeUninit<f64>]) {
        self.with_registers(|registers| {
            for (c, block) in out.chunks_mut(self.width).enumerate() {
                self.chunk(start + c * self.width, registers, Out::Fresh(block));
            }
        });
    }

    fn store_f32(&self, start: usize, out: &mut [f32]) {
        self.with_registers(|registers| {
            let mut values = [0.0; CHUNK];
            for (c, block) in out.chunks_mut(self.width).enumerate() {
                let values = &mut values[..block.len()];
                self.chunk(start + c * self.width, registers, Out::Numbers(values));
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
                self.chunk(at, registers, Out::Numbers(&mut values[..len]));
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

    /// A column broadcast along rows, and a number, are read as numbers by
    /// the arithmetic steps and copied for the others: the elements are
    /// what the plain formula gives, for rows shorter and longer than a
    /// chunk and not dividing it.
    #[test]
    fn numbers_over_a_chunk_give_the_formula() {
        use super::{FusedGroup, Math, TOp, Val, run_group};
        use egg::Id;
        use ndarray::{ArrayD, IxDyn};
        use smallvec::smallvec;
        use std::rc::Rc;
        let o = Id::from(0usize);
        let group = FusedGroup {
            inputs: 4,
            steps: vec![
                (TOp::Map(Math::Sub([o, o])), smallvec![0, 1]),
                (TOp::Map(Math::Mul([o, o])), smallvec![2, 4]),
                (TOp::Map(Math::Exp([o])), smallvec![1]),
                (TOp::Map(Math::Add([o, o])), smallvec![1, 1]),
                (TOp::Map(Math::Div([o, o])), smallvec![5, 6]),
                (TOp::Map(Math::Add([o, o])), smallvec![8, 7]),
                (TOp::Map(Math::Sub([o, o])), smallvec![9, 3]),
            ],
            results: smallvec![10],
            sum_over: None,
        };
        let s = 0.75;
        for (n, m) in [
            (3, 1),
            (5, 7),
            (4, 256),
            (3, 300),
            (2, 1000),
            (40, 17),
            (70, 513),
        ] {
            let value = |k: usize| ((k * 7919) % 1009) as f64 / 1009.0 - 0.5;
            let x = ArrayD::from_shape_fn(IxDyn(&[n, m]), |i| value(i[0] * m + i[1]));
            let a = ArrayD::from_shape_fn(IxDyn(&[n, 1]), |i| value(3 * i[0] + 1));
            let c = ArrayD::from_shape_fn(IxDyn(&[1, m]), |i| value(5 * i[1] + 2));
            let operands = [
                Val::Array(Rc::new(x.clone())),
                Val::Array(Rc::new(a.clone())),
                Val::Scalar(s),
                Val::Array(Rc::new(c.clone())),
            ];
            let operands: Vec<&Val> = operands.iter().collect();
            let Val::Array(got) = run_group(&group, &operands, &[n, m], false) else {
                panic!("an array of {n}x{m}")
            };
            for i in 0..n {
                for j in 0..m {
                    let (xv, av, cv) = (x[[i, j]], a[[i, 0]], c[[0, j]]);
                    let want = s * (xv - av) / scalar::exp(av) + (av + av) - cv;
                    assert_eq!(got[[i, j]].to_bits(), want.to_bits(), "{n}x{m} at {i}, {j}");
                }
            }
        }
        // A last step with a number side writes fresh storage itself (the
        // results of 33,000 numbers or more the pool has none for).
        let scaled = FusedGroup {
            inputs: 2,
            steps: vec![
                (TOp::Map(Math::Sub([o, o])), smallvec![0, 1]),
                (TOp::Map(Math::Mul([o, o])), smallvec![2, 1]),
            ],
            results: smallvec![3],
            sum_over: None,
        };
        for (n, m) in [(300, 256), (130, 300), (7, 5000), (40, 17)] {
            let value = |k: usize| ((k * 7919) % 1009) as f64 / 1009.0 - 0.5;
            let x = ArrayD::from_shape_fn(IxDyn(&[n, m]), |i| value(i[0] * m + i[1]));
            let a = ArrayD::from_shape_fn(IxDyn(&[n, 1]), |i| value(3 * i[0] + 1));
            let operands = [
                Val::Array(Rc::new(x.clone())),
                Val::Array(Rc::new(a.clone())),
            ];
            let operands: Vec<&Val> = operands.iter().collect();
            let Val::Array(got) = run_group(&scaled, &operands, &[n, m], false) else {
                panic!("an array of {n}x{m}")
            };
            for i in 0..n {
                for j in 0..m {
                    let want = (x[[i, j]] - a[[i, 0]]) * a[[i, 0]];
                    assert_eq!(got[[i, j]].to_bits(), want.to_bits(), "{n}x{m} at {i}, {j}");
                }
            }
        }
    }
}

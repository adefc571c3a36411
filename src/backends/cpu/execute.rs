//! Running a tape on the CPU: slots hold scalars in registers, arrays
//! behind `Rc`, or views (a slice or a zero-padded copy of an array, made
//! lazily: elementwise kernels read them in place, other kernels copy
//! them). Storage of dead values is recycled for later results of the same
//! size.

use super::elementwise::run_group;
use super::structural::{gemm, structural};
use crate::backends::BackendError;
use crate::egraph::tensor::{Shape, TOp};
use crate::tape::scan::LoopTapes;
use crate::tape::{FusedGroup, Instruction, Kernel, Tape};
use ndarray::{ArrayD, ArrayViewD, Axis, CowArray, IxDyn, Slice};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::ops::Range;
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
}

/// A value inside the executor.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// A 0-dimensional value.
    Scalar(f64),
    /// An array.
    Array(Rc<ArrayD<f64>>),
    /// Elements `start..end` along `axis` of `base`, not copied.
    Slice {
        base: Rc<ArrayD<f64>>,
        axis: usize,
        start: usize,
        end: usize,
    },
    /// `base` with its axes permuted (a transpose), not copied: a matrix
    /// product reads a transposed stack where it is.
    Permuted {
        base: Rc<ArrayD<f64>>,
        perm: SmallVec<[usize; 4]>,
    },
    /// `value` everywhere (a broadcast number), not made.
    Full { value: f64, shape: Shape },
    /// Row-major `base` broadcast to `shape`, not made: elementwise groups
    /// read it with zero strides, slices slice its base.
    Broadcast { base: Rc<ArrayD<f64>>, shape: Shape },
    /// Zeros, then the elements of `inner` (row-major), then zeros: a pad
    /// along the first axis, not made.
    Padded {
        inner: Flat,
        before: usize,
        shape: Shape,
    },
    /// Row-major `base` rolled along its first axis, not made: element `i`
    /// (row-major) is `base`'s element `(i - shift) mod n`, `shift` counted
    /// in elements (`n` the number of elements). Elementwise groups read it
    /// in place, in at most two runs.
    Rolled { base: Rc<ArrayD<f64>>, shift: usize },
}

/// Contiguous elements a padded value holds between its zeros.
#[derive(Clone, Debug)]
pub(crate) enum Flat {
    /// `len` elements of `base`'s row-major data from `start`.
    Data {
        base: Rc<ArrayD<f64>>,
        start: usize,
        len: usize,
    },
    /// `len` copies of a number.
    Fill { value: f64, len: usize },
}

impl Flat {
    pub(crate) fn len(&self) -> usize {
        match self {
            Flat::Data { len, .. } | Flat::Fill { len, .. } => *len,
        }
    }
}

impl Val {
    fn from_buf(buf: &Buf) -> Val {
        match buf {
            Buf::Scalar(x) => Val::Scalar(*x),
            Buf::Array(a) => Val::Array(Rc::clone(a)),
        }
    }

    fn from_array(array: ArrayD<f64>) -> Val {
        if array.ndim() == 0 {
            Val::Scalar(array.iter().next().copied().unwrap_or(f64::NAN))
        } else {
            Val::Array(Rc::new(array))
        }
    }

    /// The value as an array, borrowed where it exists.
    pub(crate) fn cow(&self) -> CowArray<'_, f64, IxDyn> {
        match self {
            Val::Scalar(x) => CowArray::from(ArrayD::from_elem(IxDyn(&[]), *x)),
            Val::Array(a) => CowArray::from(a.view()),
            Val::Slice {
                base,
                axis,
                start,
                end,
            } => CowArray::from(base.slice_axis(Axis(*axis), Slice::from(*start..*end))),
            Val::Permuted { base, perm } => CowArray::from(base.view().permuted_axes(IxDyn(perm))),
            Val::Full { value, shape } => CowArray::from(ArrayD::from_elem(IxDyn(shape), *value)),
            // Made here, run by run, for operations that read arrays in
            // row-major order (elementwise groups read it in place).
            Val::Broadcast { base, shape } => {
                CowArray::from(super::broadcast::broadcast(&base.view(), shape))
            }
            Val::Padded {
                inner,
                before,
                shape,
            } => {
                let mut data = vec![0.0; shape.iter().product()];
                let target = &mut data[*before..before + inner.len()];
                match inner {
                    Flat::Data { base, start, len } => {
                        let source = base.as_slice().expect("padded data is contiguous");
                        target.copy_from_slice(&source[*start..start + len]);
                    }
                    Flat::Fill { value, .. } => target.fill(*value),
                }
                CowArray::from(ArrayD::from_shape_vec(IxDyn(shape), data).expect("sizes agree"))
            }
            Val::Rolled { base, shift } => {
                let source = base.as_slice().expect("rolled data is contiguous");
                let split = source.len() - shift;
                let mut data = Vec::with_capacity(source.len());
                data.extend_from_slice(&source[split..]);
                data.extend_from_slice(&source[..split]);
                CowArray::from(ArrayD::from_shape_vec(base.raw_dim(), data).expect("sizes agree"))
            }
        }
    }

    fn into_buf(self) -> Buf {
        match self {
            Val::Scalar(x) => Buf::Scalar(x),
            Val::Array(a) => Buf::Array(a),
            Val::Broadcast { base, shape } => {
                Buf::from_array(Rc::new(super::broadcast::broadcast(&base.view(), &shape)))
            }
            other => Buf::from_array(Rc::new(super::broadcast::standard(&other.cow().view()))),
        }
    }
}

fn single_step(op: &TOp, inputs: usize) -> FusedGroup {
    FusedGroup {
        inputs,
        steps: vec![(op.clone(), (0..inputs as u16).collect())],
        results: SmallVec::from_slice(&[inputs as u16]),
        sum_over: None,
    }
}

/// Runs one operation (not `Input`) on executor values.
fn step(
    op: &TOp,
    args: &[&Val],
    shape: &[usize],
    pool: Option<Vec<f64>>,
) -> Result<Val, BackendError> {
    Ok(match op {
        TOp::Input { .. } => unreachable!("inputs are loaded by the executor"),
        TOp::Placeholder { .. } => {
            return Err(BackendError::new(
                "a custom rule's placeholder cannot run (it stands for a cotangent or tangent)",
            ));
        }
        TOp::Scalar(c) => Val::Scalar(c.get()),
        op if op.is_elementwise() => run_group(&single_step(op, args.len()), args, shape, pool),
        TOp::MatMul => Val::from_array(gemm(
            &args[0].cow().view(),
            &args[1].cow().view(),
            (false, false),
            false,
        )),
        TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_) => args[0].clone(),
        TOp::Transpose(perm) => {
            let perm = perm.iter().map(|&p| usize::from(p));
            match args[0] {
                Val::Array(base) => Val::Permuted {
                    base: Rc::clone(base),
                    perm: perm.collect(),
                },
                // Axis i of the result is axis inner[perm[i]] of the base.
                Val::Permuted { base, perm: inner } => Val::Permuted {
                    base: Rc::clone(base),
                    perm: perm.map(|p| inner[p]).collect(),
                },
                other => {
                    let owned = Rc::new(super::broadcast::standard(&other.cow().view()));
                    return step(op, &[&Val::Array(owned)], shape, None);
                }
            }
        }
        TOp::Slice { axis, start, end } => match args[0] {
            Val::Array(base) => Val::Slice {
                base: Rc::clone(base),
                axis: usize::from(*axis),
                start: *start,
                end: *end,
            },
            Val::Broadcast { base, .. } => {
                slice_broadcast(base, usize::from(*axis), *start..*end, shape)
            }
            other => {
                let owned = Rc::new(super::broadcast::standard(&other.cow().view()));
                return step(op, &[&Val::Array(owned)], shape, None);
            }
        },
        TOp::Roll { axis: 0, shift } if matches!(args[0], Val::Array(a) if a.is_standard_layout() && !a.is_empty()) =>
        {
            let Val::Array(a) = args[0] else {
                unreachable!("matched an array")
            };
            let row: usize = a.shape()[1..].iter().product();
            match (shift * row) % a.len() {
                0 => Val::Array(Rc::clone(a)),
                shift => Val::Rolled {
                    base: Rc::clone(a),
                    shift,
                },
            }
        }
        TOp::Pad {
            axis: 0, before, ..
        } => {
            let row: usize = shape[1..].iter().product();
            let inner = flat(args[0]);
            Val::Padded {
                inner,
                before: before * row,
                shape: Shape::from(shape),
            }
        }
        TOp::Scan(spec) | TOp::ScanVjp(spec) => {
            // The tracer looking at a loop's value: compile it here.
            let tapes = LoopTapes::new(spec, matches!(op, TOp::ScanVjp(_)));
            run_loop(&tapes, args)?
        }
        TOp::Broadcast(_) if matches!(args[0], Val::Array(a) if a.is_standard_layout()) => {
            let Val::Array(a) = args[0] else {
                unreachable!("matched an array")
            };
            Val::Broadcast {
                base: Rc::clone(a),
                shape: Shape::from(shape),
            }
        }
        TOp::Broadcast(_) if matches!(args[0], Val::Broadcast { .. }) => {
            let Val::Broadcast { base, .. } = args[0] else {
                unreachable!("matched a broadcast")
            };
            Val::Broadcast {
                base: Rc::clone(base),
                shape: Shape::from(shape),
            }
        }
        TOp::Broadcast(_) if matches!(args[0], Val::Scalar(_)) => match args[0] {
            Val::Scalar(value) => Val::Full {
                value: *value,
                shape: Shape::from(shape),
            },
            _ => unreachable!("matched a scalar"),
        },
        TOp::Op(table_op) => {
            let cows: SmallVec<[CowArray<'_, f64, IxDyn>; 3]> =
                args.iter().map(|v| v.cow()).collect();
            let views: SmallVec<[ArrayViewD<'_, f64>; 3]> = cows.iter().map(|c| c.view()).collect();
            let result = table_op
                .cpu(&views, shape)
                .map_err(|e| BackendError::from_op(table_op, e))?;
            Val::from_array(result)
        }
        other => {
            let cows: SmallVec<[CowArray<'_, f64, IxDyn>; 3]> =
                args.iter().map(|v| v.cow()).collect();
            let views: SmallVec<[ArrayViewD<'_, f64>; 3]> = cows.iter().map(|c| c.view()).collect();
            Val::from_array(structural(other, &views, shape))
        }
    })
}

/// Elements `range` along `axis` of `base` broadcast to a shape: the same
/// base broadcast to the smaller `shape` when the axis is one it repeats,
/// else the slice of the base (copied; it is the small side of the
/// broadcast) broadcast.
fn slice_broadcast(
    base: &Rc<ArrayD<f64>>,
    axis: usize,
    range: Range<usize>,
    shape: &[usize],
) -> Val {
    let lead = shape.len() - base.ndim();
    let repeated = axis < lead || base.shape()[axis - lead] == 1;
    let base = if repeated {
        Rc::clone(base)
    } else {
        let sliced = base.slice_axis(Axis(axis - lead), Slice::from(range));
        Rc::new(super::broadcast::standard(&sliced))
    };
    Val::Broadcast {
        base,
        shape: Shape::from(shape),
    }
}

/// A loop (or its reverse) on executor values.
fn run_loop(tapes: &LoopTapes, args: &[&Val]) -> Result<Val, BackendError> {
    let bufs: Vec<Buf> = args.iter().map(|v| (*v).clone().into_buf()).collect();
    Ok(Val::from_buf(&super::run_loop(tapes, &bufs)?))
}

/// A value's elements as one contiguous run (copied only when they are not
/// one already).
fn flat(value: &Val) -> Flat {
    match value {
        Val::Scalar(x) => Flat::Fill { value: *x, len: 1 },
        Val::Full { value, shape } => Flat::Fill {
            value: *value,
            len: shape.iter().product(),
        },
        Val::Array(base) if base.is_standard_layout() => Flat::Data {
            base: Rc::clone(base),
            start: 0,
            len: base.len(),
        },
        Val::Slice {
            base,
            axis: 0,
            start,
            end,
        } if base.is_standard_layout() => {
            let row: usize = base.shape()[1..].iter().product();
            Flat::Data {
                base: Rc::clone(base),
                start: start * row,
                len: (end - start) * row,
            }
        }
        other => {
            let owned = other.cow().as_standard_layout().into_owned();
            let len = owned.len();
            Flat::Data {
                base: Rc::new(owned),
                start: 0,
                len,
            }
        }
    }
}

/// Evaluates one operation on concrete operands (used by the tracer to
/// look at values that control flow depends on). `Input` leaves are not
/// operations and give `None`.
pub fn eval_op(op: &TOp, args: &[&Buf], shape: &[usize]) -> Option<Result<Buf, BackendError>> {
    if let TOp::Input { .. } = op {
        return None;
    }
    let vals: SmallVec<[Val; 3]> = args.iter().map(|b| Val::from_buf(b)).collect();
    let refs: SmallVec<[&Val; 3]> = vals.iter().collect();
    Some(step(op, &refs, shape, None).map(Val::into_buf))
}

/// Runs `tape` on `inputs`.
pub fn run(tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
    crate::backends::check_inputs(tape, inputs.iter().map(Buf::shape))?;
    allow_pool(tape.stats.peak_bytes);
    let mut slots: Vec<Option<Val>> = vec![None; tape.slots];
    for instruction in &tape.instructions {
        let value = if let Some(reshaped) = reshape_in_place(instruction, &mut slots) {
            reshaped
        } else {
            let args: SmallVec<[&Val; 3]> = instruction
                .args
                .iter()
                .map(|&s| {
                    slots[s as usize]
                        .as_ref()
                        .expect("operands are computed first")
                })
                .collect();
            let n: usize = instruction.shape.iter().product();
            check_room(instruction, n)?;
            match &instruction.op {
                Kernel::Op(TOp::Input { index, .. }) => Val::from_buf(&inputs[*index as usize]),
                Kernel::Fused(group) => run_group(group, &args, &instruction.shape, take(n)),
                Kernel::Loop(tapes) => run_loop(tapes, &args)?,
                Kernel::Gemm { ta, tb, single } => Val::from_array(gemm(
                    &args[0].cow().view(),
                    &args[1].cow().view(),
                    (*ta, *tb),
                    *single,
                )),
                Kernel::Op(op)
                    if op.is_elementwise()
                        && instruction.shape.is_empty()
                        && args.iter().all(|a| matches!(a, Val::Scalar(_))) =>
                {
                    // The scalar fast path: registers only, no allocation.
                    let mut numbers = [[0.0f64; 1]; 3];
                    for (slot, arg) in numbers.iter_mut().zip(&args) {
                        if let Val::Scalar(x) = arg {
                            slot[0] = *x;
                        }
                    }
                    let ins: SmallVec<[&[f64]; 3]> =
                        numbers[..args.len()].iter().map(|n| &n[..]).collect();
                    let mut out = [0.0];
                    super::elementwise::apply_chunk(op, &ins, &mut out);
                    Val::Scalar(out[0])
                }
                Kernel::Op(op) => {
                    let recycled = if op.is_elementwise() { take(n) } else { None };
                    step(op, &args, &instruction.shape, recycled)?
                }
            }
        };
        super::measure::alive(owned_bytes(&value));
        if let Some(old) = slots[instruction.out as usize].replace(value) {
            super::measure::dead(owned_bytes(&old));
        }
        for &slot in &instruction.frees {
            if slot == instruction.out {
                continue;
            }
            let freed = slots[slot as usize].take();
            if let Some(freed) = &freed {
                super::measure::dead(owned_bytes(freed));
            }
            match freed {
                Some(
                    Val::Array(array)
                    | Val::Slice { base: array, .. }
                    | Val::Permuted { base: array, .. }
                    | Val::Rolled { base: array, .. }
                    | Val::Broadcast { base: array, .. },
                )
                | Some(Val::Padded {
                    inner: Flat::Data { base: array, .. },
                    ..
                }) => recycle(array),
                _ => {}
            }
        }
    }
    let outputs = tape
        .outputs
        .iter()
        .map(|&s| {
            slots[s as usize]
                .clone()
                .expect("outputs are computed")
                .into_buf()
        })
        .collect();
    for value in slots.iter().flatten() {
        super::measure::dead(owned_bytes(value));
    }
    Ok(outputs)
}

/// A reshape that is the last use of a contiguous array no other value
/// holds: the same numbers under the new shape, taken from the operand's
/// slot instead of copied. `None` for any other instruction.
fn reshape_in_place(instruction: &Instruction, slots: &mut [Option<Val>]) -> Option<Val> {
    let Kernel::Op(TOp::Reshape(target)) = &instruction.op else {
        return None;
    };
    let slot = *instruction.args.first()?;
    if slot == instruction.out || !instruction.frees.contains(&slot) {
        return None;
    }
    match &slots[slot as usize] {
        Some(Val::Array(array))
            if Rc::strong_count(array) == 1
                && array.is_standard_layout()
                && array.len() == target.iter().product::<usize>() => {}
        _ => return None,
    }
    let Some(Val::Array(array)) = slots[slot as usize].take() else {
        return None;
    };
    super::measure::dead(array.len() * 8);
    let array = Rc::unwrap_or_clone(array);
    let reshaped = array
        .into_shape_with_order(IxDyn(target))
        .expect("a standard-layout array of the target's size takes its shape");
    // A reshape to no axes gives a number, as every operation does.
    Some(Val::from_array(reshaped))
}

/// The bytes a value owns (views of other values own none).
fn owned_bytes(value: &Val) -> usize {
    match value {
        Val::Scalar(_) => 8,
        Val::Array(a) => a.len() * 8,
        _ => 0,
    }
}

/// Storage kept for reuse across instructions and runs, by length. Fresh
/// large allocations are mapped from the system and zeroed page by page on
/// first touch, which costs more than an elementwise pass.
struct Pool {
    free: FxHashMap<usize, Vec<Vec<f64>>>,
    bytes: usize,
    /// The most storage kept: `POOL_BYTES`, or more after a tape whose
    /// peak was larger ran on this thread (up to `POOL_CEILING`).
    limit: usize,
}

/// The most storage the pool keeps (per thread) until a larger program
/// runs.
const POOL_BYTES: usize = 512 << 20;

/// The most storage the pool keeps after a program whose values take
/// more than `POOL_BYTES` at their peak: a training step whose
/// activations take 900 MB allocated a third of them fresh at every step
/// (page faults were 16% of the step; 1.49 s against 1.29 s kept).
const POOL_CEILING: usize = 4 << 30;

/// Lets the pool keep as much as a program of `peak` bytes needs at once
/// (between `POOL_BYTES` and `POOL_CEILING`): storage the process held
/// anyway at that peak, kept for the program's next run.
fn allow_pool(peak: usize) {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        pool.limit = pool.limit.max(peak.min(POOL_CEILING));
    });
}

/// The most free buffers of one length the pool keeps: a loop whose
/// operations free more buffers of a length than they take (structural
/// operations allocate their own) must not fill the pool with them.
const POOL_PER_LENGTH: usize = 16;

thread_local! {
    static POOL: std::cell::RefCell<Pool> = std::cell::RefCell::new(Pool {
        free: FxHashMap::default(),
        bytes: 0,
        limit: POOL_BYTES,
    });
}

/// Results at least this many numbers long are allocated only after the
/// allocator has agreed to hold them (`reserve`), so a result the machine
/// cannot hold is an error, not an abort.
const PROBED_LENGTH: usize = 1 << 23;

/// Empty storage with room for `len` numbers, or the out-of-memory error
/// naming what it was for (`what`), instead of the abort an allocation
/// failure would be.
pub(crate) fn reserve(len: usize, what: impl FnOnce() -> String) -> Result<Vec<f64>, BackendError> {
    let mut storage: Vec<f64> = Vec::new();
    match storage.try_reserve_exact(len) {
        Ok(()) => Ok(storage),
        Err(_) => Err(BackendError::new(format!(
            "out of memory: cannot allocate {:.3} GB for {}",
            len as f64 * 8.0 / 1e9,
            what()
        ))),
    }
}

/// Checks that the allocator can hold an instruction's result of `n`
/// numbers (only for large results; the storage is given back at once
/// and taken again by the instruction).
fn check_room(instruction: &Instruction, n: usize) -> Result<(), BackendError> {
    if n < PROBED_LENGTH {
        return Ok(());
    }
    reserve(n, || {
        let what = match &instruction.op {
            Kernel::Op(op) => op.to_string(),
            Kernel::Fused(_) => "a fused elementwise group".to_string(),
            Kernel::Loop(_) => "a loop".to_string(),
            Kernel::Gemm { .. } => "a matrix product".to_string(),
        };
        format!(
            "the result of {what} of shape {}",
            crate::egraph::tensor::shape::show(&instruction.shape)
        )
    })
    .map(drop)
}

/// Storage of `n` elements from the pool, if it has some (contents
/// arbitrary).
pub(crate) fn take(n: usize) -> Option<Vec<f64>> {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let found = pool.free.get_mut(&n).and_then(Vec::pop)?;
        pool.bytes -= n * 8;
        Some(found)
    })
}

/// Arrays handed out for one recurring value (a plan's result, a step's
/// row of a sequence): one nobody else holds any more is written again
/// instead of allocating a new one, so a loop's values ping-pong between
/// a few arrays.
#[derive(Default)]
pub(crate) struct Recurring {
    given: SmallVec<[Rc<ArrayD<f64>>; 3]>,
}

impl Recurring {
    /// An array of `shape` holding `data` (row-major).
    pub(crate) fn array(&mut self, shape: &[usize], data: &[f64]) -> Rc<ArrayD<f64>> {
        for kept in self.given.iter_mut() {
            if let Some(array) = Rc::get_mut(kept)
                && array.shape() == shape
                && let Some(storage) = array.as_slice_mut()
            {
                storage.copy_from_slice(data);
                return Rc::clone(kept);
            }
        }
        let mut storage = take(data.len()).unwrap_or_default();
        storage.clear();
        storage.extend_from_slice(data);
        let array = Rc::new(ArrayD::from_shape_vec(IxDyn(shape), storage).expect("sizes match"));
        // Every kept one still held elsewhere (stored states, say): the
        // newest replaces the oldest.
        if self.given.len() == 3 {
            self.given.remove(0);
        }
        self.given.push(Rc::clone(&array));
        array
    }
}

/// Keeps the storage of a dead array for a later result of its size.
pub(crate) fn recycle(array: Rc<ArrayD<f64>>) {
    let Ok(array) = Rc::try_unwrap(array) else {
        return;
    };
    if !array.is_standard_layout() {
        return;
    }
    let (data, offset) = array.into_raw_vec_and_offset();
    if offset.unwrap_or(0) != 0 || data.len() < 1024 {
        return;
    }
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let len = data.len();
        let room = pool.free.get(&len).map_or(0, Vec::len) < POOL_PER_LENGTH;
        let limit = pool.limit;
        if !room || len * 8 > limit {
            return;
        }
        // A full pool gives up buffers of other lengths (the largest
        // first): what runs now needs this length, and storage kept for
        // an earlier program's sizes would leave every allocation of this
        // one fresh, zeroed page by page.
        while pool.bytes + len * 8 > limit {
            let Some(&other) = pool
                .free
                .iter()
                .filter(|(l, kept)| **l != len && !kept.is_empty())
                .map(|(l, _)| l)
                .max()
            else {
                return;
            };
            if let Some(kept) = pool.free.get_mut(&other) {
                kept.pop();
                pool.bytes -= other * 8;
            }
        }
        pool.bytes += len * 8;
        pool.free.entry(len).or_default().push(data);
    });
}

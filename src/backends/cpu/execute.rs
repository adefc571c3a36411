//! Running a tape on the CPU: slots hold scalars in registers, arrays
//! behind `Rc`, or views (a slice or a zero-padded copy of an array, made
//! lazily: elementwise kernels read them in place, other kernels copy
//! them). Storage of dead values is recycled for later results of the same
//! size.

use super::elementwise::run_group;
use super::matmul::{Factor, matmul, product_f32};
use super::storage::{PROBED_LENGTH, allow_pool, recycle, reserve};
use super::structural::structural;
use crate::backends::BackendError;
use crate::ir::math::language::Math;
use crate::ir::op::ReduceOp;
use crate::ir::{Shape, TOp};
use crate::tape::loops::LoopTapes;
use crate::tape::{FusedGroup, Instruction, Kernel, Tape};
use ndarray::{ArrayD, ArrayViewD, Axis, CowArray, IxDyn, Slice};
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
    /// f32 numbers in f32 storage, row-major: an f32 value the tape keeps
    /// in single precision (`Instruction::single`).
    F32(Rc<ArrayD<f32>>),
    /// f32 storage with its axes permuted (a transpose), not copied.
    F32Permuted {
        base: Rc<ArrayD<f32>>,
        perm: SmallVec<[usize; 4]>,
    },
    /// Row-major `base`'s elements from `offset` on under another shape
    /// (a reshape of a value that lives on, or of a contiguous slice of
    /// one, such as a part of a packed result), not copied.
    Reshaped {
        base: Rc<ArrayD<f64>>,
        offset: usize,
        shape: Shape,
    },
    /// Row-major f32 storage under another shape, not copied.
    F32Reshaped { base: Rc<ArrayD<f32>>, shape: Shape },
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

    /// The view of a value in f32 storage.
    pub(crate) fn single(&self) -> Option<ArrayViewD<'_, f32>> {
        match self {
            Val::F32(base) => Some(base.view()),
            Val::F32Permuted { base, perm } => Some(base.view().permuted_axes(IxDyn(perm))),
            Val::F32Reshaped { base, shape } => Some(reshaped(base, shape)),
            _ => None,
        }
    }

    /// The value as an array, borrowed where it exists (f32 storage is
    /// widened: kernels that read it in place ask for `single`).
    pub(crate) fn cow(&self) -> CowArray<'_, f64, IxDyn> {
        match self {
            Val::F32(_) | Val::F32Permuted { .. } | Val::F32Reshaped { .. } => {
                let single = self.single().expect("f32 storage");
                CowArray::from(super::broadcast::widened(&single))
            }
            Val::Scalar(x) => CowArray::from(ArrayD::from_elem(IxDyn(&[]), *x)),
            Val::Array(a) => CowArray::from(a.view()),
            Val::Slice {
                base,
                axis,
                start,
                end,
            } => CowArray::from(base.slice_axis(Axis(*axis), Slice::from(*start..*end))),
            Val::Permuted { base, perm } => CowArray::from(base.view().permuted_axes(IxDyn(perm))),
            Val::Reshaped {
                base,
                offset,
                shape,
            } => CowArray::from(reshaped_at(base, *offset, shape)),
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

/// Row-major `base` viewed under `shape` (of its size).
pub(crate) fn reshaped<'a, T>(base: &'a ArrayD<T>, shape: &[usize]) -> ArrayViewD<'a, T> {
    base.view()
        .into_shape_with_order(IxDyn(shape))
        .expect("a reshaped view is of a row-major base of its size")
}

/// Row-major `base`'s elements from `offset` on, as an array of `shape`.
pub(crate) fn reshaped_at<'a>(
    base: &'a ArrayD<f64>,
    offset: usize,
    shape: &[usize],
) -> ArrayViewD<'a, f64> {
    let n: usize = shape.iter().product();
    let data = base.as_slice().expect("a reshaped base is row-major");
    ArrayViewD::from_shape(IxDyn(shape), &data[offset..offset + n])
        .expect("a reshaped view is of row-major elements of its size")
}

/// Where a slice of `base` along `axis` from `start` begins in its
/// storage, when the slice is one run of it (`base` row-major and every
/// axis before `axis` of length 1).
fn contiguous_slice(base: &ArrayD<f64>, axis: usize, start: usize) -> Option<usize> {
    let leading_ones = base.shape()[..axis].iter().all(|&d| d == 1);
    (base.is_standard_layout() && leading_ones)
        .then(|| start * base.shape()[axis + 1..].iter().product::<usize>())
}

fn single_step(op: &TOp, inputs: usize) -> FusedGroup {
    FusedGroup {
        inputs,
        steps: vec![(op.clone(), (0..inputs as u16).collect())],
        results: SmallVec::from_slice(&[inputs as u16]),
        sum_over: None,
    }
}

/// Runs one operation (not `Input`) on executor values; an elementwise
/// one keeps its result in f32 storage when `single`.
fn step(op: &TOp, args: &[&Val], shape: &[usize], single: bool) -> Result<Val, BackendError> {
    Ok(match op {
        TOp::Input { .. } => unreachable!("inputs are loaded by the executor"),
        TOp::Placeholder { .. } => {
            return Err(BackendError::new(
                "a custom rule's placeholder cannot run (it stands for a cotangent or tangent)",
            ));
        }
        TOp::Scalar(c) => Val::Scalar(c.get()),
        op if op.is_elementwise() => run_group(&single_step(op, args.len()), args, shape, single),
        TOp::MatMul => Val::from_array(matmul(
            &args[0].cow().view(),
            &args[1].cow().view(),
            false,
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
                Val::F32(base) => Val::F32Permuted {
                    base: Rc::clone(base),
                    perm: perm.collect(),
                },
                Val::F32Permuted { base, perm: inner } => Val::F32Permuted {
                    base: Rc::clone(base),
                    perm: perm.map(|p| inner[p]).collect(),
                },
                Val::F32Reshaped { base, shape } => Val::F32Permuted {
                    base: Rc::new(super::broadcast::standard(&reshaped(base, shape))),
                    perm: perm.collect(),
                },
                other => {
                    let owned = Rc::new(super::broadcast::standard(&other.cow().view()));
                    return step(op, &[&Val::Array(owned)], shape, false);
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
                return step(op, &[&Val::Array(owned)], shape, false);
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
        // A row-major value under another shape is a view of it.
        TOp::Reshape(target) if !target.is_empty() => match args[0] {
            Val::Array(base) if base.is_standard_layout() => Val::Reshaped {
                base: Rc::clone(base),
                offset: 0,
                shape: target.clone(),
            },
            Val::Reshaped { base, offset, .. } => Val::Reshaped {
                base: Rc::clone(base),
                offset: *offset,
                shape: target.clone(),
            },
            Val::Slice {
                base, axis, start, ..
            } => match contiguous_slice(base, *axis, *start) {
                Some(offset) => Val::Reshaped {
                    base: Rc::clone(base),
                    offset,
                    shape: target.clone(),
                },
                None => reshape_copied(args[0], target),
            },
            Val::F32(base) if base.is_standard_layout() => Val::F32Reshaped {
                base: Rc::clone(base),
                shape: target.clone(),
            },
            Val::F32Reshaped { base, .. } => Val::F32Reshaped {
                base: Rc::clone(base),
                shape: target.clone(),
            },
            other => reshape_copied(other, target),
        },
        TOp::Reshape(target) => reshape_copied(args[0], target),
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
                .cpu_in(&views, shape, &super::storage::take::<f64>)
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

/// `value` under `target`'s shape in new storage (f32 storage stays f32).
fn reshape_copied(value: &Val, target: &[usize]) -> Val {
    const TAKES: &str = "a standard-layout array of the target's size takes its shape";
    match value.single() {
        Some(single) => {
            let data = super::broadcast::standard(&single);
            Val::F32(Rc::new(
                data.into_shape_with_order(IxDyn(target)).expect(TAKES),
            ))
        }
        None => Val::from_array(
            super::broadcast::standard(&value.cow().view())
                .into_shape_with_order(IxDyn(target))
                .expect(TAKES),
        ),
    }
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
    Some(step(op, &refs, shape, false).map(Val::into_buf))
}

/// Runs `tape` on `inputs`.
pub fn run(tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
    crate::backends::check_inputs(tape, inputs.iter().map(Buf::shape))?;
    // Half again the peak: the peak counts values, not the transient
    // storage kernels take beside them (a product's f32 result before it
    // is widened, copies of operands), which the pool keeps too.
    allow_pool(tape.stats.peak_bytes + tape.stats.peak_bytes / 2);
    let mut slots: Vec<Option<Val>> = vec![None; tape.slots];
    // The next instruction's result, computed with this one's (a sum of
    // squares whose squares are never stored).
    let mut ahead: Option<Val> = None;
    for (index, instruction) in tape.instructions.iter().enumerate() {
        let value = if let Some(value) = ahead.take() {
            value
        } else if let Some(summed) = squares_summed_next(tape, index, &slots) {
            // This instruction's squares are read by the next one alone:
            // a placeholder stands for them until it frees them.
            ahead = Some(summed);
            Val::Scalar(0.0)
        } else if let Some(reshaped) = reshape_in_place(instruction, &mut slots) {
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
                Kernel::Fused(group) => {
                    run_group(group, &args, &instruction.shape, instruction.single)
                }
                Kernel::Loop(tapes) => run_loop(tapes, &args)?,
                Kernel::Gemm {
                    ta,
                    tb,
                    single: true,
                } => {
                    let (a, b) = (factor(args[0]), factor(args[1]));
                    let product = product_f32(&a, &b, (*ta, *tb));
                    match instruction.single {
                        true => Val::F32(Rc::new(product)),
                        false => {
                            let wide = super::broadcast::widened(&product.view());
                            recycle(Rc::new(product));
                            Val::from_array(wide)
                        }
                    }
                }
                Kernel::Gemm { ta, tb, .. } => Val::from_array(matmul(
                    &args[0].cow().view(),
                    &args[1].cow().view(),
                    *ta,
                    *tb,
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
                Kernel::Op(op) => step(op, &args, &instruction.shape, instruction.single)?,
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
                    | Val::Broadcast { base: array, .. }
                    | Val::Reshaped { base: array, .. },
                )
                | Some(Val::Padded {
                    inner: Flat::Data { base: array, .. },
                    ..
                }) => recycle(array),
                Some(
                    Val::F32(array)
                    | Val::F32Permuted { base: array, .. }
                    | Val::F32Reshaped { base: array, .. },
                ) => recycle(array),
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

/// When instruction `index` squares a value (`x * x`, `square`) that only
/// the next instruction reads, a sum over some of its axes: that sum,
/// computed from the value without storing the squares
/// (`reduce::sum_of_squares`, the same bits as squaring then summing).
fn squares_summed_next(tape: &Tape, index: usize, slots: &[Option<Val>]) -> Option<Val> {
    let instruction = &tape.instructions[index];
    let x = match (&instruction.op, &instruction.args[..]) {
        (Kernel::Op(TOp::Map(Math::Mul(_))), &[a, b]) if a == b => a,
        (Kernel::Op(TOp::Map(Math::Square(_))), &[a]) => a,
        _ => return None,
    };
    let next = tape.instructions.get(index + 1)?;
    let Kernel::Op(TOp::Reduce {
        op: ReduceOp::Sum,
        axes,
        ..
    }) = &next.op
    else {
        return None;
    };
    let rank = instruction.shape.len();
    let fits = !instruction.single
        && !next.single
        && next.args[..] == [instruction.out]
        && next.frees.contains(&instruction.out)
        && !tape.outputs.contains(&instruction.out)
        && axes.len() < rank
        // More than one sum: a sum of everything is `reduce_all`'s blocked
        // fold, whose order the sum of squares does not keep.
        && next.shape.iter().product::<usize>() > 1
        // Under a memory budget the executor holds what was planned.
        && tape.stats.memory_budget.is_none()
        && instruction.shape.iter().product::<usize>() >= SUMMED_SQUARES;
    if !fits {
        return None;
    }
    let value = slots[x as usize].as_ref()?;
    if value.single().is_some() {
        return None;
    }
    let numbers = value.cow();
    // Another layout (a transposed array) would be copied into row-major
    // order first, element by element: squaring it as usual is cheaper.
    if numbers.shape() != &instruction.shape[..] || !numbers.is_standard_layout() {
        return None;
    }
    let summed = super::reduce::sum_of_squares(&numbers.view(), axes, &next.shape);
    Some(Val::from_array(summed))
}

/// Squares summed at once from at least this many numbers (fewer are
/// cheap to store).
const SUMMED_SQUARES: usize = 1 << 14;

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
    let n: usize = target.iter().product();
    let unique = |count: usize, standard: bool, len: usize| count == 1 && standard && len == n;
    match &slots[slot as usize] {
        Some(Val::Array(a)) if unique(Rc::strong_count(a), a.is_standard_layout(), a.len()) => {}
        Some(Val::F32(a)) if unique(Rc::strong_count(a), a.is_standard_layout(), a.len()) => {}
        _ => return None,
    }
    let shape = IxDyn(target);
    const TAKES: &str = "a standard-layout array of the target's size takes its shape";
    match slots[slot as usize].take()? {
        Val::Array(array) => {
            super::measure::dead(array.len() * 8);
            let reshaped = Rc::unwrap_or_clone(array).into_shape_with_order(shape);
            // A reshape to no axes gives a number, as every operation does.
            Some(Val::from_array(reshaped.expect(TAKES)))
        }
        Val::F32(array) => {
            super::measure::dead(array.len() * 4);
            let reshaped = Rc::unwrap_or_clone(array).into_shape_with_order(shape);
            Some(Val::F32(Rc::new(reshaped.expect(TAKES))))
        }
        _ => None,
    }
}

/// An operand of an f32 matrix product: f32 storage read in place, f64
/// storage (holding f32 numbers) as it is.
fn factor<'a>(value: &'a Val) -> Factor<'a> {
    match value.single() {
        Some(view) => Factor::F32(view),
        None => Factor::Wide(value.cow()),
    }
}

/// The bytes a value owns (views of other values own none).
fn owned_bytes(value: &Val) -> usize {
    match value {
        Val::Scalar(_) => 8,
        Val::Array(a) => a.len() * 8,
        Val::F32(a) => a.len() * 4,
        _ => 0,
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
            crate::ir::shape::show(&instruction.shape)
        )
    })
    .map(drop)
}

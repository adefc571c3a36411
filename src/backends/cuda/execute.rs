//! Running a tape on a device: each instruction becomes kernel launches,
//! a cuBLAS call, an alias of its operand, or a loop of sub-tape runs;
//! values stay in device memory from the tape's inputs to its outputs.
//! Work on numbers alone (constants, scalar arithmetic, loop indices) is
//! done on the host with the CPU backend's own functions, so it costs no
//! launch and gives the CPU's bits. Values the tape keeps in f32 storage
//! are held so on the device too (`single`).

use super::f32_storage;
use super::kernels::F32Storage;
use super::launch::{self, Launch};
use super::loops;
use super::machine::{Arg, Datum, Machine, release};
use crate::backends::BackendError;
use crate::backends::cpu::{apply_chunk, measure};
use crate::ir::TOp;
use crate::tape::loops::LoopTapes;
use crate::tape::{FusedGroup, Kernel, Tape};
use smallvec::SmallVec;

/// Runs `tape` on `inputs` (one per tape input, of its input shapes).
pub fn run<M: Machine>(
    machine: &M,
    tape: &Tape,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    crate::backends::check_inputs(tape, inputs.iter().map(Datum::shape))?;
    let mut slots: Vec<Option<Datum<M::Mem>>> = vec![None; tape.slots];
    for instruction in &tape.instructions {
        let value = {
            let args: SmallVec<[&Datum<M::Mem>; 3]> = instruction
                .args
                .iter()
                .map(|&s| {
                    slots[s as usize].as_ref().ok_or_else(|| {
                        BackendError::new(format!("slot {s} is read before it is written"))
                    })
                })
                .collect::<Result<_, _>>()?;
            let op = &instruction.op;
            let shape = &instruction.shape;
            if f32_storage::reads_as_stored(op, &args, instruction.single) {
                step(machine, op, &args, shape, inputs, instruction.single)?
            } else {
                let mut wide: SmallVec<[Datum<M::Mem>; 3]> = SmallVec::new();
                for arg in &args {
                    wide.push(f32_storage::widened(machine, arg)?);
                }
                let value = {
                    let refs: SmallVec<[&Datum<M::Mem>; 3]> = wide.iter().collect();
                    step(machine, op, &refs, shape, inputs, false)
                };
                for arg in wide {
                    release(machine, arg);
                }
                match value? {
                    value if instruction.single => f32_storage::narrowed(machine, value)?,
                    value => value,
                }
            }
        };
        // Counted as the CPU backend counts (`tape-stats`).
        measure::alive(bytes(&value));
        if let Some(old) = slots[instruction.out as usize].replace(value) {
            measure::dead(bytes(&old));
            release(machine, old);
        }
        for &slot in &instruction.frees {
            if slot != instruction.out
                && let Some(dead) = slots[slot as usize].take()
            {
                measure::dead(bytes(&dead));
                release(machine, dead);
            }
        }
    }
    let outputs = tape
        .outputs
        .iter()
        .map(|&s| {
            slots[s as usize]
                .clone()
                .ok_or_else(|| BackendError::new(format!("output slot {s} was never written")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for value in slots.into_iter().flatten() {
        measure::dead(bytes(&value));
        release(machine, value);
    }
    Ok(outputs)
}

/// The bytes a value holds (a host number counts as 8, as on the CPU; f32
/// storage 4 per element).
fn bytes<M>(value: &Datum<M>) -> usize {
    match value {
        Datum::F32 { .. } => value.len() * 4,
        _ => value.len().max(1) * 8,
    }
}

/// One instruction, its operands as they are stored, its result in f32
/// storage when `single` (`single::reads_as_stored` has said it can).
fn step<M: Machine>(
    machine: &M,
    kernel: &Kernel,
    args: &[&Datum<M::Mem>],
    shape: &[usize],
    inputs: &[Datum<M::Mem>],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    match kernel {
        Kernel::Op(TOp::Input { index, .. }) => inputs
            .get(*index as usize)
            .cloned()
            .ok_or_else(|| BackendError::new(format!("the tape has no input {index}"))),
        Kernel::Fused(group) => elementwise(machine, group, args, shape, single),
        Kernel::Gemm {
            ta,
            tb,
            single: f32,
        } => matmul(machine, (args[0], args[1]), (*ta, *tb, *f32), shape, single),
        Kernel::Loop(tapes) => loops::run_loop(machine, tapes, args),
        Kernel::Op(op) => operation(machine, op, args, shape, single),
    }
}

/// One tensor operation (`single` as in [`step`]).
fn operation<M: Machine>(
    machine: &M,
    op: &TOp,
    args: &[&Datum<M::Mem>],
    shape: &[usize],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    match op {
        TOp::Input { .. } => Err(BackendError::new(
            "an input outside the executor".to_string(),
        )),
        TOp::Placeholder { .. } => Err(BackendError::new(
            "a custom rule's placeholder cannot run (it stands for a cotangent or tangent)",
        )),
        TOp::Scalar(c) => Ok(Datum::Host(c.get())),
        op if op.is_elementwise() => elementwise(
            machine,
            &launch::single_step(op, args.len()),
            args,
            shape,
            single,
        ),
        TOp::MatMul => matmul(
            machine,
            (args[0], args[1]),
            (false, false, false),
            shape,
            false,
        ),
        TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_) => Ok(args[0].clone()),
        TOp::Reshape(_) => reshape(machine, args[0], shape),
        TOp::Reduce { op, axes, .. } => {
            let axes = launch::axes(axes);
            match args[0] {
                Datum::Host(x) => Ok(Datum::Host(*x)),
                Datum::Device { mem, .. } if axes.is_empty() => Ok(Datum::Device {
                    mem: mem.clone(),
                    shape: shape.into(),
                }),
                operand => {
                    if crate::backends::cuda::reduce::outputs(operand.shape(), &axes)
                        > launch::MAX_GRID
                    {
                        return Err(BackendError::new(
                            "a reduction with more than 2^31 - 1 results cannot run on CUDA"
                                .to_string(),
                        ));
                    }
                    let plan = launch::reduction(*op, operand.shape(), &axes);
                    kernel(machine, &plan, &[operand], shape, false)
                }
            }
        }
        TOp::ArgExtreme { max, axis } => match args[0] {
            Datum::Host(_) => Ok(Datum::Host(0.0)),
            operand => {
                let axis = axis.map(usize::from);
                let plan = launch::arg_extreme(*max, operand.shape(), axis);
                kernel(machine, &plan, &[operand], shape, false)
            }
        },
        TOp::Scan(spec) | TOp::ScanVjp(spec) => {
            let tapes = LoopTapes::new(spec, matches!(op, TOp::ScanVjp(_)));
            loops::run_loop(machine, &tapes, args)
        }
        TOp::Op(table) => table_operation(machine, table, args, shape),
        TOp::Concat(axis) if args.len() > CONCAT_OPERANDS => {
            // Kernel parameters are limited (4 KB): join in groups, then
            // join the groups.
            let axis = usize::from(*axis);
            let mut parts = Vec::new();
            for chunk in args.chunks(CONCAT_OPERANDS) {
                let mut part_shape = shape.to_vec();
                part_shape[axis] = chunk
                    .iter()
                    .map(|a| a.shape().get(axis).copied().unwrap_or(1))
                    .sum();
                parts.push(operation(machine, op, chunk, &part_shape, single)?);
            }
            let refs: Vec<&Datum<M::Mem>> = parts.iter().collect();
            let joined = operation(machine, op, &refs, shape, single);
            for part in parts {
                release(machine, part);
            }
            joined
        }
        other => {
            // Operations that move elements read device arrays.
            let mut owned = Vec::new();
            for arg in args {
                owned.push(on_device(machine, arg)?);
            }
            let shapes: Vec<Vec<usize>> = owned.iter().map(|v| v.shape().to_vec()).collect();
            let plan = launch::index(other, &shapes, shape, single).ok_or_else(|| {
                BackendError::new(format!("the CUDA backend cannot run {other:?} yet"))
            })?;
            let refs: Vec<&Datum<M::Mem>> = owned.iter().collect();
            let result = kernel(machine, &plan, &refs, shape, single);
            for value in owned {
                release(machine, value);
            }
            result
        }
    }
}

/// An operation of the table: its CUDA kernel where it has one, an
/// allreduce by the machine's collective library where it has one, else
/// its CPU kernel on the host (operands copied to the host, the result
/// back).
fn table_operation<M: Machine>(
    machine: &M,
    op: &crate::ir::ops::Op,
    args: &[&Datum<M::Mem>],
    shape: &[usize],
) -> Result<Datum<M::Mem>, BackendError> {
    let shapes: Vec<&[usize]> = args.iter().map(|a| a.shape()).collect();
    let n: usize = shape.iter().product();
    if let Some(cuda) = op.cuda(&shapes, shape) {
        let mut owned = Vec::with_capacity(args.len());
        for arg in args {
            owned.push(on_device(machine, arg)?);
        }
        let mut out = if cuda.zeroed {
            machine.zeros(n)?
        } else {
            machine.alloc(n)?
        };
        if cuda.copy_first
            && let Some(Datum::Device { mem, .. }) = owned.first()
        {
            machine.copy(mem, 0, &mut out, 0, n)?;
        }
        if cuda.threads > 0 {
            let plan = launch::table(&cuda);
            let mut params: Vec<Arg<'_, M::Mem>> = vec![Arg::Int(cuda.threads as i64)];
            for value in &owned {
                if let Datum::Device { mem, .. } | Datum::F32 { mem, .. } = value {
                    params.push(Arg::Mem(mem));
                }
            }
            machine.launch(&plan, &params, &mut out)?;
        }
        for value in owned {
            release(machine, value);
        }
        return Ok(Datum::device(out, shape));
    }
    if let (Some(reduction), [Datum::Device { mem, .. }]) = (op.device_allreduce(), args)
        && let Some(out) = machine.allreduce(mem, shape, reduction)?
    {
        return Ok(Datum::device(out, shape));
    }
    let mut host = Vec::with_capacity(args.len());
    for arg in args {
        let data = crate::backends::cuda::machine::to_host(machine, arg)?;
        let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(arg.shape()), data)
            .map_err(|e| BackendError::new(format!("an operand of the wrong size: {e}")))?;
        host.push(array);
    }
    let views: Vec<ndarray::ArrayViewD<'_, f64>> = host.iter().map(|a| a.view()).collect();
    let result = op
        .cpu(&views, shape)
        .map_err(|e| BackendError::from_op(op, e))?;
    let data: Vec<f64> = result.iter().copied().collect();
    crate::backends::cuda::machine::from_host(machine, &data, shape)
}

/// The most operands one concat kernel takes.
const CONCAT_OPERANDS: usize = 64;

/// Runs a kernel whose parameters are its operands' memory then the
/// output (reductions, index maps; `n` first for index maps), the output
/// in f32 storage when `single`.
fn kernel<M: Machine>(
    machine: &M,
    plan: &Launch,
    operands: &[&Datum<M::Mem>],
    shape: &[usize],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    let n: usize = shape.iter().product();
    let mut out = machine.alloc(if single { f32_storage::slots(n) } else { n })?;
    if n > 0 {
        let mut args: Vec<Arg<'_, M::Mem>> = Vec::with_capacity(operands.len() + 1);
        if plan.name == "index" {
            args.push(Arg::Int(n as i64));
        }
        for operand in operands {
            match operand {
                Datum::Device { mem, .. } | Datum::F32 { mem, .. } => args.push(Arg::Mem(mem)),
                Datum::Host(_) => {
                    return Err(BackendError::new(
                        "a kernel reads a host number as device memory".to_string(),
                    ));
                }
            }
        }
        machine.launch(plan, &args, &mut out)?;
    }
    Ok(if single {
        Datum::single(out, shape)
    } else {
        Datum::device(out, shape)
    })
}

/// A value as device memory: a host number becomes a one-element array.
pub fn on_device<M: Machine>(
    machine: &M,
    value: &Datum<M::Mem>,
) -> Result<Datum<M::Mem>, BackendError> {
    match value {
        Datum::Host(x) => filled(machine, *x, &[]),
        device => Ok(device.clone()),
    }
}

/// `x` everywhere in a device array of `shape`.
pub fn filled<M: Machine>(
    machine: &M,
    x: f64,
    shape: &[usize],
) -> Result<Datum<M::Mem>, BackendError> {
    let n: usize = shape.iter().product();
    let mut out = machine.alloc(n)?;
    if n > 0 {
        let plan = launch::fill(shape);
        machine.launch(&plan, &[Arg::Int(n as i64), Arg::Double(x)], &mut out)?;
    }
    Ok(Datum::device(out, shape))
}

/// The same elements under a new shape (no copy).
fn reshape<M: Machine>(
    machine: &M,
    value: &Datum<M::Mem>,
    shape: &[usize],
) -> Result<Datum<M::Mem>, BackendError> {
    match value {
        Datum::Host(x) if shape.is_empty() => Ok(Datum::Host(*x)),
        Datum::Host(x) => filled(machine, *x, shape),
        Datum::Device { mem, .. } => Ok(Datum::Device {
            mem: mem.clone(),
            shape: shape.into(),
        }),
        Datum::F32 { mem, .. } => Ok(Datum::F32 {
            mem: mem.clone(),
            shape: shape.into(),
        }),
    }
}

/// A fused group (or one elementwise operation) on its operands as they
/// are stored, the result in f32 storage when `single`.
pub fn elementwise<M: Machine>(
    machine: &M,
    group: &FusedGroup,
    args: &[&Datum<M::Mem>],
    shape: &[usize],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    if group.results.len() != 1 {
        return Err(BackendError::new(format!(
            "a fused group with {} results cannot run on CUDA",
            group.results.len()
        )));
    }
    let over: &[usize] = group.sum_over.as_deref().unwrap_or(shape);
    let numbers: Option<SmallVec<[f64; 4]>> = args
        .iter()
        .map(|a| match a {
            Datum::Host(x) => Some(*x),
            Datum::Device { .. } | Datum::F32 { .. } => None,
        })
        .collect();
    if let Some(numbers) = numbers
        && over.is_empty()
    {
        return Ok(Datum::Host(on_host(group, &numbers)));
    }
    let accesses: Vec<_> = args
        .iter()
        .map(|a| match a {
            Datum::Host(_) => launch::access(None, over),
            device => launch::access(Some(device.shape()), over),
        })
        .collect();
    let storage = F32Storage {
        operands: args.iter().map(|a| a.is_f32()).collect(),
        result: single,
    };
    let plan = launch::group_stored(group, over, &accesses, &storage)
        .map_err(|e| BackendError::new(format!("no CUDA kernel for a fused group: {e}")))?;
    let n: usize = over.iter().product();
    let out_len: usize = shape.iter().product();
    let slots = if single {
        f32_storage::slots(out_len)
    } else {
        out_len
    };
    let mut out = if plan.zeroed {
        machine.zeros(slots)?
    } else {
        machine.alloc(slots)?
    };
    if n > 0 {
        let mut params: Vec<Arg<'_, M::Mem>> = Vec::with_capacity(args.len() + 1);
        params.push(Arg::Int(n as i64));
        for arg in args {
            params.push(match arg {
                Datum::Host(x) => Arg::Double(*x),
                Datum::Device { mem, .. } | Datum::F32 { mem, .. } => Arg::Mem(mem),
            });
        }
        machine.launch(&plan, &params, &mut out)?;
    }
    Ok(if single {
        Datum::single(out, shape)
    } else {
        Datum::device(out, shape)
    })
}

/// A group evaluated on numbers, on the host, step by step as the CPU
/// backend evaluates it.
fn on_host(group: &FusedGroup, numbers: &[f64]) -> f64 {
    let mut registers: SmallVec<[f64; 16]> = numbers.iter().copied().collect();
    for (op, operands) in &group.steps {
        let values: SmallVec<[[f64; 1]; 3]> =
            operands.iter().map(|&r| [registers[r as usize]]).collect();
        let slices: SmallVec<[&[f64]; 3]> = values.iter().map(|v| &v[..]).collect();
        let mut out = [0.0];
        apply_chunk(op, &slices, &mut out);
        registers.push(out[0]);
    }
    registers[group.results[0] as usize]
}

/// A matrix product through cuBLAS: dgemm, or when `f32` sgemm on the
/// operands in f32 storage (narrowed first where they are f64), the
/// result in f32 storage when `single` (else widened).
fn matmul<M: Machine>(
    machine: &M,
    (a, b): (&Datum<M::Mem>, &Datum<M::Mem>),
    (ta, tb, f32): (bool, bool, bool),
    shape: &[usize],
    single: bool,
) -> Result<Datum<M::Mem>, BackendError> {
    let call = launch::gemm_call(a.shape(), b.shape(), ta, tb).map_err(BackendError::new)?;
    let n: usize = shape.iter().product();
    let [full_a, full_b] = &call.broadcast;
    let mut a = broadcast_to(machine, a, full_a.as_deref())?;
    let mut b = broadcast_to(machine, b, full_b.as_deref())?;
    if f32 {
        for operand in [&mut a, &mut b] {
            if !operand.is_f32() {
                let wide = std::mem::replace(operand, Datum::Host(0.0));
                *operand = f32_storage::narrowed(machine, wide)?;
            }
        }
    }
    let slots = if f32 { f32_storage::slots(n) } else { n };
    let mut out = if call.k == 0 {
        machine.zeros(slots)?
    } else {
        machine.alloc(slots)?
    };
    if n > 0
        && call.k > 0
        && let (
            Datum::Device { mem: ma, .. } | Datum::F32 { mem: ma, .. },
            Datum::Device { mem: mb, .. } | Datum::F32 { mem: mb, .. },
        ) = (&a, &b)
    {
        // cuBLAS's first operand is the tape's second.
        machine.gemm(&call, (mb, ma), &mut out, f32)?;
    }
    release(machine, a);
    release(machine, b);
    if !f32 {
        return Ok(Datum::device(out, shape));
    }
    let product = Datum::single(out, shape);
    if single {
        return Ok(product);
    }
    let wide = f32_storage::widened(machine, &product);
    release(machine, product);
    wide
}

/// `value` broadcast to `shape` when one is given.
fn broadcast_to<M: Machine>(
    machine: &M,
    value: &Datum<M::Mem>,
    shape: Option<&[usize]>,
) -> Result<Datum<M::Mem>, BackendError> {
    let Some(shape) = shape else {
        return on_device(machine, value);
    };
    let operand = on_device(machine, value)?;
    let op = TOp::Broadcast(shape.into());
    let single = operand.is_f32();
    let plan = launch::index(&op, &[operand.shape().to_vec()], shape, single)
        .ok_or_else(|| BackendError::new("no broadcast kernel".to_string()))?;
    let result = kernel(machine, &plan, &[&operand], shape, single);
    release(machine, operand);
    result
}

//! Planning a tape into a [`Program`]: each instruction becomes commands
//! (kernel launches, a cuBLAS call, an alias of its operand, host
//! arithmetic on numbers, a loop), decided from the instruction and the
//! kinds and shapes of its operands alone. Work on numbers alone
//! (constants, scalar arithmetic, loop indices) is host arithmetic, done
//! with the CPU backend's own functions, so it costs no launch and gives
//! the CPU's bits. Values the tape keeps in f32 storage are held so on the
//! device too.
//!
//! Buffers are counted as values are made and die: a buffer no value uses
//! any more is released, so memory is reused within a run as the tape
//! frees its slots. Inputs' buffers belong to the caller and results'
//! buffers go to it.

mod solve;

use super::views::{self, View};
use super::{Buffer, Command, Kind, Operand, Place, Program, Register};
use crate::backends::BackendError;
use crate::backends::cuda::f32_storage;
use crate::backends::cuda::kernels::{Access, F32Storage};
use crate::backends::cuda::launch::{self, Launch};
use crate::ir::TOp;
use crate::tape::loops::LoopTapes;
use crate::tape::{FusedGroup, Instruction, Kernel, Tape};
use smallvec::SmallVec;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// Plans `tape` for inputs of the kinds `signature` gives.
pub fn plan(tape: &Tape, signature: &[Kind]) -> Result<Program, BackendError> {
    let started = Instant::now();
    let mut planner = Planner::default();
    let inputs: Vec<Place> = signature
        .iter()
        .zip(&tape.input_shapes)
        .map(|(kind, shape)| planner.input(*kind, shape))
        .collect();
    let mut slots: Vec<Option<Place>> = vec![None; tape.slots];
    for instruction in &tape.instructions {
        if !accepts_views(&instruction.op) {
            for &s in &instruction.args {
                let slot = &mut slots[s as usize];
                if matches!(slot, Some(Place::View { .. }))
                    && let Some(view) = slot.take()
                {
                    let solid = planner.materialized(&view);
                    planner.drop_value(view);
                    slots[s as usize] = Some(solid);
                }
            }
        }
        let args: SmallVec<[Place; 3]> = instruction
            .args
            .iter()
            .map(|&s| {
                slots[s as usize].clone().ok_or_else(|| {
                    BackendError::new(format!("slot {s} is read before it is written"))
                })
            })
            .collect::<Result<_, _>>()?;
        let value = planner.instruction(instruction, &args, &inputs)?;
        // Counted as the CPU backend counts (`tape-stats`).
        let mut dead = 0;
        let alive = bytes(&value);
        if let Some(old) = slots[instruction.out as usize].replace(value) {
            dead += bytes(&old);
            planner.drop_value(old);
        }
        for &slot in &instruction.frees {
            if slot != instruction.out
                && let Some(value) = slots[slot as usize].take()
            {
                dead += bytes(&value);
                planner.drop_value(value);
            }
        }
        planner.commands.push(Command::Measure { alive, dead });
    }
    let outputs = tape
        .outputs
        .iter()
        .map(|&s| {
            let value = slots[s as usize]
                .clone()
                .ok_or_else(|| BackendError::new(format!("output slot {s} was never written")))?;
            // A result is memory of its own (a view is materialized).
            Ok(planner.materialized(&value))
        })
        .collect::<Result<Vec<_>, BackendError>>()?;
    let mut dead = 0;
    for value in slots.into_iter().flatten() {
        dead += bytes(&value);
        planner.drop_value(value);
    }
    for buffer in std::mem::take(&mut planner.held) {
        planner.commands.push(Command::Release(buffer));
    }
    planner.commands.push(Command::Measure { alive: 0, dead });
    crate::backends::device_stats::planned(started.elapsed());
    let graphable = super::graphs::graphable(&planner.commands, &inputs);
    Ok(Program {
        commands: planner.commands,
        registers: planner.registers,
        buffers: planner.buffers.len(),
        inputs,
        outputs,
        graphable,
    })
}

/// A program of one fused group on operands of `kinds` and `shapes`, the
/// result in f32 storage when `single` (for work the loop driver does
/// between steps).
pub fn elementwise(
    group: &FusedGroup,
    kinds: &[Kind],
    shapes: &[&[usize]],
    shape: &[usize],
    single: bool,
) -> Result<Program, BackendError> {
    let mut planner = Planner::default();
    let inputs: Vec<Place> = kinds
        .iter()
        .zip(shapes)
        .map(|(kind, shape)| planner.input(*kind, shape))
        .collect();
    let result = planner.elementwise(group, &inputs, shape, single)?;
    Ok(Program {
        commands: planner.commands,
        registers: planner.registers,
        buffers: planner.buffers.len(),
        inputs,
        outputs: vec![result],
        graphable: false,
    })
}

/// The bytes a value holds (a host number counts as 8, as on the CPU; f32
/// storage 4 per element).
fn bytes(value: &Place) -> usize {
    let len: usize = value.shape().iter().product();
    match value.is_f32() {
        true => len * 4,
        false => len.max(1) * 8,
    }
}

/// Whether `kernel` reads index maps of its operands as they are (a fused
/// group reads through them, an index map composes with them, an alias
/// passes them on); any other kernel gets them materialized first.
fn accepts_views(kernel: &Kernel) -> bool {
    match kernel {
        Kernel::Fused(_) => true,
        Kernel::Op(op) => {
            op.is_elementwise()
                || views::is_view(op)
                || matches!(
                    op,
                    TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_)
                )
        }
        _ => false,
    }
}

/// A buffer while planning.
struct BufferState {
    /// Values (and planned temporaries) using it.
    users: u32,
    /// The caller's memory (an input): never released.
    external: bool,
}

/// A program being planned.
#[derive(Default)]
struct Planner {
    commands: Vec<Command>,
    registers: Vec<f64>,
    buffers: Vec<BufferState>,
    /// Buffers of failure codes, read at the end of a run and given back
    /// only then.
    held: Vec<Buffer>,
    /// Position buffers already checked, with their axis length.
    checked: Vec<(Buffer, usize)>,
}

impl Planner {
    /// Where input `kind` of `shape` is bound.
    fn input(&mut self, kind: Kind, shape: &[usize]) -> Place {
        match kind {
            Kind::Host => Place::Host(self.register(f64::NAN)),
            Kind::Device => Place::Device {
                buffer: self.buffer(true),
                shape: shape.into(),
            },
            Kind::F32 => Place::F32 {
                buffer: self.buffer(true),
                shape: shape.into(),
            },
        }
    }

    /// A new register holding `value` before the first step.
    fn register(&mut self, value: f64) -> Register {
        self.registers.push(value);
        (self.registers.len() - 1) as Register
    }

    /// A new buffer with one user.
    fn buffer(&mut self, external: bool) -> Buffer {
        self.buffers.push(BufferState { users: 1, external });
        (self.buffers.len() - 1) as Buffer
    }

    /// A new buffer of `len` slots, taken from the machine.
    fn alloc(&mut self, len: usize, zeroed: bool) -> Buffer {
        let buffer = self.buffer(false);
        self.commands.push(Command::Alloc {
            buffer,
            len,
            zeroed,
        });
        buffer
    }

    /// One more user of `value`'s buffer.
    fn retain(&mut self, value: &Place) {
        if let Some(buffer) = value.buffer() {
            self.buffers[buffer as usize].users += 1;
        }
    }

    /// A user of `value`'s buffer is gone; the last gives it back.
    fn drop_value(&mut self, value: Place) {
        let Some(buffer) = value.buffer() else {
            return;
        };
        let state = &mut self.buffers[buffer as usize];
        state.users = state.users.saturating_sub(1);
        if state.users == 0 && !state.external {
            self.commands.push(Command::Release(buffer));
        }
    }

    /// `value` as a new user holds it.
    fn share(&mut self, value: &Place) -> Place {
        self.retain(value);
        value.clone()
    }

    /// One instruction: its operands as stored when its kernel reads them
    /// so, else widened first (and the result narrowed after when the tape
    /// keeps it in f32 storage).
    fn instruction(
        &mut self,
        instruction: &Instruction,
        args: &[Place],
        inputs: &[Place],
    ) -> Result<Place, BackendError> {
        let (op, shape, single) = (&instruction.op, &instruction.shape, instruction.single);
        let stored: SmallVec<[bool; 3]> = args.iter().map(Place::is_f32).collect();
        if f32_storage::reads_as_stored(op, &stored, single) {
            return self.step(op, args, shape, inputs, single);
        }
        let mut wide: SmallVec<[Place; 3]> = SmallVec::new();
        for arg in args {
            wide.push(self.widened(arg));
        }
        let value = self.step(op, &wide, shape, inputs, false);
        for arg in wide {
            self.drop_value(arg);
        }
        let value = value?;
        Ok(if single { self.narrowed(value) } else { value })
    }

    /// One instruction on its operands as they are stored.
    fn step(
        &mut self,
        kernel: &Kernel,
        args: &[Place],
        shape: &[usize],
        inputs: &[Place],
        single: bool,
    ) -> Result<Place, BackendError> {
        match kernel {
            Kernel::Op(TOp::Input { index, .. }) => {
                let input = inputs
                    .get(*index as usize)
                    .ok_or_else(|| BackendError::new(format!("the tape has no input {index}")))?;
                Ok(self.share(input))
            }
            Kernel::Fused(group) => self.elementwise(group, args, shape, single),
            Kernel::Gemm {
                ta,
                tb,
                single: f32,
            } => self.matmul((&args[0], &args[1]), (*ta, *tb, *f32), shape, single),
            Kernel::Loop(tapes) => Ok(self.run_loop(Arc::clone(tapes), args, shape)),
            Kernel::Op(op) => self.operation(op, args, shape, single),
        }
    }

    /// One tensor operation.
    fn operation(
        &mut self,
        op: &TOp,
        args: &[Place],
        shape: &[usize],
        single: bool,
    ) -> Result<Place, BackendError> {
        match op {
            TOp::Input { .. } => Err(BackendError::new(
                "an input outside the executor".to_string(),
            )),
            TOp::Placeholder { .. } => Err(BackendError::new(
                "a custom rule's placeholder cannot run (it stands for a cotangent or tangent)",
            )),
            TOp::Scalar(c) => Ok(Place::Host(self.register(c.get()))),
            op if op.is_elementwise() => {
                self.elementwise(&launch::single_step(op, args.len()), args, shape, single)
            }
            TOp::MatMul => self.matmul((&args[0], &args[1]), (false, false, false), shape, false),
            TOp::StopGradient | TOp::Tag(_) | TOp::Linearized | TOp::Custom(_) => {
                Ok(self.share(&args[0]))
            }
            TOp::Reshape(_) => Ok(self.reshape(&args[0], shape)),
            TOp::Reduce { op, axes, .. } => {
                let axes = launch::axes(axes);
                match &args[0] {
                    Place::Host(r) => Ok(Place::Host(*r)),
                    Place::Device { buffer, .. } if axes.is_empty() => {
                        let value = Place::Device {
                            buffer: *buffer,
                            shape: shape.into(),
                        };
                        Ok(self.share(&value))
                    }
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
                        self.reduction(plan, operand, shape)
                    }
                }
            }
            TOp::ArgExtreme { max, axis } => match &args[0] {
                Place::Host(_) => Ok(Place::Host(self.register(0.0))),
                operand => {
                    let axis = axis.map(usize::from);
                    let plan = launch::arg_extreme(*max, operand.shape(), axis);
                    self.reduction(plan, operand, shape)
                }
            },
            TOp::Scan(spec) | TOp::ScanVjp(spec) => {
                let tapes = Arc::new(LoopTapes::new(spec, matches!(op, TOp::ScanVjp(_))));
                Ok(self.run_loop(tapes, args, shape))
            }
            op if views::is_view(op) && !matches!(args.first(), None | Some(Place::Host(_))) => {
                let (buffer, stored, base) = match &args[0] {
                    Place::Device { buffer, shape } => (*buffer, false, View::of(shape)),
                    Place::F32 { buffer, shape } => (*buffer, true, View::of(shape)),
                    Place::View {
                        buffer,
                        single,
                        view,
                    } => (*buffer, *single, (**view).clone()),
                    Place::Host(_) => unreachable!("numbers are moved by kernels"),
                };
                let view = base.then(op, shape).ok_or_else(|| {
                    BackendError::new(format!("{op:?} is not an index map of one operand"))
                })?;
                self.retain(&args[0]);
                Ok(Place::View {
                    buffer,
                    single: stored,
                    view: Rc::new(view),
                })
            }
            TOp::Op(table) => Ok(self.table_operation(table, args, shape)),
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
                    parts.push(self.operation(op, chunk, &part_shape, single)?);
                }
                let joined = self.operation(op, &parts, shape, single);
                for part in parts {
                    self.drop_value(part);
                }
                joined
            }
            other => {
                // Operations that move elements read device arrays.
                let owned: Vec<Place> = args.iter().map(|a| self.on_device(a)).collect();
                let shapes: Vec<Vec<usize>> = owned.iter().map(|v| v.shape().to_vec()).collect();
                let result = match launch::index(other, &shapes, shape, single) {
                    Some(plan) => {
                        let refs: Vec<&Place> = owned.iter().collect();
                        self.kernel(plan, &refs, shape, single)
                    }
                    None => Err(BackendError::new(format!(
                        "the CUDA backend cannot run {other:?} yet"
                    ))),
                };
                for value in owned {
                    self.drop_value(value);
                }
                result
            }
        }
    }

    /// An operation of the table: its CUDA kernel where it has one, an
    /// allreduce by the machine's collective library where it may have
    /// one, else its CPU kernel on the host.
    fn table_operation(
        &mut self,
        op: &crate::ir::ops::Op,
        args: &[Place],
        shape: &[usize],
    ) -> Place {
        let shapes: Vec<&[usize]> = args.iter().map(Place::shape).collect();
        let n: usize = shape.iter().product();
        let matrices = args
            .iter()
            .all(|a| !a.is_f32() && !matches!(a, Place::Host(_)));
        if matrices && let Some(solve) = op.device_solve(&shapes, shape) {
            return self.device_solve(op, &solve, args, shape);
        }
        if let Some(cuda) = op.cuda(&shapes, shape) {
            let owned: Vec<Place> = args.iter().map(|a| self.on_device(a)).collect();
            let out = self.alloc(n, cuda.zeroed);
            if cuda.copy_first
                && let Some(Place::Device { buffer, .. }) = owned.first()
            {
                self.commands.push(Command::Copy {
                    src: *buffer,
                    from: 0,
                    dst: out,
                    to: 0,
                    len: n,
                });
            }
            if cuda.threads > 0 {
                let mut operands: SmallVec<[Operand; 6]> =
                    SmallVec::from_elem(Operand::Int(cuda.threads as i64), 1);
                operands.extend(owned.iter().filter_map(Place::buffer).map(Operand::Buffer));
                self.commands.push(Command::Launch {
                    launch: launch::table(&cuda),
                    operands,
                    out,
                });
            }
            if let Some((k, len)) = op.positions(&shapes)
                && let Some(positions) = owned.get(k)
            {
                self.check_positions(op, positions, len);
            }
            for value in owned {
                self.drop_value(value);
            }
            return Place::Device {
                buffer: out,
                shape: shape.into(),
            };
        }
        let out = self.result(shape);
        match (op.device_allreduce(), args) {
            (Some(reduction), [operand @ Place::Device { .. }]) => {
                self.commands.push(Command::Allreduce {
                    op: op.clone(),
                    reduction,
                    operand: operand.clone(),
                    out: out.clone(),
                })
            }
            _ => self.commands.push(Command::OnHost {
                op: op.clone(),
                operands: args.to_vec(),
                out: out.clone(),
            }),
        }
        out
    }

    /// Where a result the host or a loop makes goes: a register for a
    /// number, else a buffer it fills.
    fn result(&mut self, shape: &[usize]) -> Place {
        if shape.is_empty() {
            Place::Host(self.register(f64::NAN))
        } else {
            Place::Device {
                buffer: self.buffer(false),
                shape: shape.into(),
            }
        }
    }

    /// A loop, run by the loop driver when replayed.
    fn run_loop(&mut self, tapes: Arc<LoopTapes>, args: &[Place], shape: &[usize]) -> Place {
        let out = self.result(shape);
        self.commands.push(Command::Loop {
            tapes,
            operands: args.to_vec(),
            out: out.clone(),
        });
        out
    }

    /// A reduction (or `argmax`) of `operand` into `shape`: one kernel, or
    /// a kernel into partial results and one combining them.
    fn reduction(
        &mut self,
        plan: launch::ReductionLaunches,
        operand: &Place,
        shape: &[usize],
    ) -> Result<Place, BackendError> {
        let Some((partials, combine)) = plan.combine else {
            return self.kernel(plan.first, &[operand], shape, false);
        };
        let parts = self.kernel(plan.first, &[operand], &[partials], false)?;
        let result = self.kernel(combine, &[&parts], shape, false);
        self.drop_value(parts);
        result
    }

    /// A kernel whose parameters are its operands' memory then the output
    /// (reductions, index maps; `n` first for index maps), the output in
    /// f32 storage when `single`.
    fn kernel(
        &mut self,
        plan: Launch,
        operands: &[&Place],
        shape: &[usize],
        single: bool,
    ) -> Result<Place, BackendError> {
        let n: usize = shape.iter().product();
        let mut params: SmallVec<[Operand; 6]> = SmallVec::new();
        if plan.name == "index" {
            params.push(Operand::Int(n as i64));
        }
        let solid: Vec<Place> = operands.iter().map(|o| self.materialized(o)).collect();
        for operand in &solid {
            let buffer = operand.buffer().ok_or_else(|| {
                BackendError::new("a kernel reads a host number as device memory".to_string())
            })?;
            params.push(Operand::Buffer(buffer));
        }
        let out = self.alloc(if single { f32_storage::slots(n) } else { n }, false);
        if n > 0 {
            self.commands.push(Command::Launch {
                launch: plan,
                operands: params,
                out,
            });
        }
        for operand in solid {
            self.drop_value(operand);
        }
        Ok(stored(out, shape, single))
    }

    /// A value as device memory of its own: a number becomes a
    /// one-element array, an index map is materialized.
    fn on_device(&mut self, value: &Place) -> Place {
        match value {
            Place::Host(r) => self.filled(Operand::Register(*r), &[]),
            device => self.materialized(device),
        }
    }

    /// An index map materialized by one kernel into a new buffer; any
    /// other value shared.
    fn materialized(&mut self, value: &Place) -> Place {
        let Place::View {
            buffer,
            single,
            view,
        } = value
        else {
            return self.share(value);
        };
        let n: usize = view.shape.iter().product();
        let out = self.alloc(if *single { f32_storage::slots(n) } else { n }, false);
        if n > 0 {
            self.commands.push(Command::Launch {
                launch: launch::mapped(
                    &view.offset(&view.shape),
                    view.condition(&view.shape).as_deref(),
                    &view.shape,
                    *single,
                ),
                operands: SmallVec::from_slice(&[Operand::Int(n as i64), Operand::Buffer(*buffer)]),
                out,
            });
        }
        stored(out, &view.shape, *single)
    }

    /// `x` everywhere in a device array of `shape`.
    fn filled(&mut self, x: Operand, shape: &[usize]) -> Place {
        let n: usize = shape.iter().product();
        let out = self.alloc(n, false);
        if n > 0 {
            self.commands.push(Command::Launch {
                launch: launch::fill(shape),
                operands: SmallVec::from_slice(&[Operand::Int(n as i64), x]),
                out,
            });
        }
        Place::Device {
            buffer: out,
            shape: shape.into(),
        }
    }

    /// The same elements under a new shape (no copy).
    fn reshape(&mut self, value: &Place, shape: &[usize]) -> Place {
        match value {
            Place::Host(r) if shape.is_empty() => Place::Host(*r),
            Place::Host(r) => self.filled(Operand::Register(*r), shape),
            Place::Device { buffer, .. } => self.share(&Place::Device {
                buffer: *buffer,
                shape: shape.into(),
            }),
            Place::F32 { buffer, .. } => self.share(&Place::F32 {
                buffer: *buffer,
                shape: shape.into(),
            }),
            Place::View { .. } => {
                let solid = self.materialized(value);
                let reshaped = self.reshape(&solid, shape);
                self.drop_value(solid);
                reshaped
            }
        }
    }

    /// A fused group (or one elementwise operation) on its operands as
    /// they are stored, the result in f32 storage when `single`.
    fn elementwise(
        &mut self,
        group: &FusedGroup,
        args: &[Place],
        shape: &[usize],
        single: bool,
    ) -> Result<Place, BackendError> {
        if group.results.len() != 1 {
            return Err(BackendError::new(format!(
                "a fused group with {} results cannot run on CUDA",
                group.results.len()
            )));
        }
        let over: &[usize] = group.sum_over.as_deref().unwrap_or(shape);
        let numbers: Option<SmallVec<[Register; 4]>> = args
            .iter()
            .map(|a| match a {
                Place::Host(r) => Some(*r),
                _ => None,
            })
            .collect();
        if let Some(operands) = numbers
            && over.is_empty()
        {
            let out = self.register(f64::NAN);
            self.commands.push(Command::Host {
                group: group.clone(),
                operands,
                out,
            });
            return Ok(Place::Host(out));
        }
        let accesses: Vec<_> = args
            .iter()
            .map(|a| match a {
                Place::Host(_) => launch::access(None, over),
                Place::View { view, .. } => Access::Mapped(view.offset(over), view.condition(over)),
                device => launch::access(Some(device.shape()), over),
            })
            .collect();
        let storage = F32Storage {
            operands: args.iter().map(Place::is_f32).collect(),
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
        let out = self.alloc(slots, plan.zeroed);
        if n > 0 {
            let mut operands: SmallVec<[Operand; 6]> = SmallVec::new();
            operands.push(Operand::Int(n as i64));
            for arg in args {
                operands.push(match arg {
                    Place::Host(r) => Operand::Register(*r),
                    Place::Device { buffer, .. }
                    | Place::F32 { buffer, .. }
                    | Place::View { buffer, .. } => Operand::Buffer(*buffer),
                });
            }
            self.commands.push(Command::Launch {
                launch: plan,
                operands,
                out,
            });
        }
        Ok(stored(out, shape, single))
    }

    /// A matrix product through cuBLAS: dgemm, or when `f32` sgemm on the
    /// operands in f32 storage (narrowed first where they are f64), the
    /// result in f32 storage when `single` (else widened).
    fn matmul(
        &mut self,
        (a, b): (&Place, &Place),
        (ta, tb, f32): (bool, bool, bool),
        shape: &[usize],
        single: bool,
    ) -> Result<Place, BackendError> {
        let call = launch::gemm_call(a.shape(), b.shape(), ta, tb).map_err(BackendError::new)?;
        let n: usize = shape.iter().product();
        let [full_a, full_b] = &call.broadcast;
        let mut a = self.broadcast_to(a, full_a.as_deref())?;
        let mut b = self.broadcast_to(b, full_b.as_deref())?;
        if f32 {
            a = self.narrowed(a);
            b = self.narrowed(b);
        }
        let slots = if f32 { f32_storage::slots(n) } else { n };
        let out = self.alloc(slots, call.k == 0);
        if n > 0
            && call.k > 0
            && let (Some(ma), Some(mb)) = (a.buffer(), b.buffer())
        {
            // cuBLAS's first operand is the tape's second.
            self.commands.push(Command::Gemm {
                call,
                operands: (mb, ma),
                out,
                single: f32,
            });
        }
        self.drop_value(a);
        self.drop_value(b);
        if !f32 {
            return Ok(stored(out, shape, false));
        }
        let product = stored(out, shape, true);
        if single {
            return Ok(product);
        }
        let wide = self.widened(&product);
        self.drop_value(product);
        Ok(wide)
    }

    /// `value` broadcast to `shape` when one is given (on the device
    /// either way).
    fn broadcast_to(
        &mut self,
        value: &Place,
        shape: Option<&[usize]>,
    ) -> Result<Place, BackendError> {
        let operand = self.on_device(value);
        let Some(shape) = shape else {
            return Ok(operand);
        };
        let op = TOp::Broadcast(shape.into());
        let single = operand.is_f32();
        let result = match launch::index(&op, &[operand.shape().to_vec()], shape, single) {
            Some(plan) => self.kernel(plan, &[&operand], shape, single),
            None => Err(BackendError::new("no broadcast kernel".to_string())),
        };
        self.drop_value(operand);
        result
    }

    /// `value` in f64 storage: f32 storage widened into a new buffer,
    /// anything else shared.
    fn widened(&mut self, value: &Place) -> Place {
        if let Place::View { single: true, .. } = value {
            let solid = self.materialized(value);
            let wide = self.widened(&solid);
            self.drop_value(solid);
            return wide;
        }
        let Place::F32 { buffer, shape } = value else {
            return self.share(value);
        };
        let n: usize = shape.iter().product();
        let out = self.alloc(n, false);
        if n > 0 {
            self.commands.push(Command::Launch {
                launch: launch::convert(n, true),
                operands: SmallVec::from_slice(&[Operand::Int(n as i64), Operand::Buffer(*buffer)]),
                out,
            });
        }
        Place::Device {
            buffer: out,
            shape: shape.clone(),
        }
    }

    /// `value` (f32 numbers) in f32 storage; its f64 buffer loses a user. A
    /// number stays one, f32 storage stays as it is.
    fn narrowed(&mut self, value: Place) -> Place {
        if let Place::View { single: false, .. } = value {
            let solid = self.materialized(&value);
            self.drop_value(value);
            return self.narrowed(solid);
        }
        let Place::Device { buffer, shape } = &value else {
            return value;
        };
        let n: usize = shape.iter().product();
        let out = self.alloc(f32_storage::slots(n), false);
        if n > 0 {
            self.commands.push(Command::Launch {
                launch: launch::convert(n, false),
                operands: SmallVec::from_slice(&[Operand::Int(n as i64), Operand::Buffer(*buffer)]),
                out,
            });
        }
        let single = stored(out, shape, true);
        self.drop_value(value);
        single
    }
}

/// `buffer` holding `shape`'s elements, in f32 storage when `single`.
fn stored(buffer: Buffer, shape: &[usize], single: bool) -> Place {
    if single {
        Place::F32 {
            buffer,
            shape: shape.into(),
        }
    } else {
        Place::Device {
            buffer,
            shape: shape.into(),
        }
    }
}

/// The most operands one concat kernel takes.
const CONCAT_OPERANDS: usize = 64;

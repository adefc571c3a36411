//! Replaying a [`Program`] on a machine: the inputs bound to their
//! registers and buffers, then each command in order. Nothing is planned
//! here: kernels, grids and parameters come from the program.

use super::{Command, Operand, Place, Program};
use crate::backends::BackendError;
use crate::backends::cpu::{apply_chunk, measure};
use crate::backends::cuda::loops;
use crate::backends::cuda::machine::{Arg, Datum, Machine, from_host, to_host};
use crate::ir::ops::solver::Failure;
use crate::tape::FusedGroup;
use smallvec::SmallVec;
use std::rc::Rc;

/// Runs `program` on `inputs` (of the kinds it was planned for).
pub fn replay<M: Machine>(
    machine: &M,
    program: &Program,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    let mut state = State {
        machine,
        registers: program.registers.clone(),
        buffers: (0..program.buffers).map(|_| None).collect(),
        checks: Vec::new(),
    };
    for (place, input) in program.inputs.iter().zip(inputs) {
        match (place, input) {
            (Place::Host(r), Datum::Host(x)) => state.registers[*r as usize] = *x,
            (
                Place::Device { buffer, .. } | Place::F32 { buffer, .. },
                Datum::Device { mem, .. } | Datum::F32 { mem, .. },
            ) => state.buffers[*buffer as usize] = Some(Rc::clone(mem)),
            _ => {
                return Err(BackendError::new(
                    "an input of another kind than the program was planned for".to_string(),
                ));
            }
        }
    }
    let ran = program
        .commands
        .iter()
        .try_for_each(|command| state.run(command));
    // A failure the device recorded comes before any later error, as the
    // CPU would have stopped there.
    let ran = match (state.checked(), ran) {
        (Ok(Some(failure)), _) => Err(failure),
        (Ok(None), ran) => ran,
        // Codes that cannot be read: the run's own error, if it has one.
        (Err(unread), ran) => ran.and(Err(unread)),
    };
    let outputs = ran.and_then(|()| {
        program
            .outputs
            .iter()
            .map(|value| state.datum(value))
            .collect::<Result<Vec<_>, _>>()
    });
    // Memory no result holds goes back to the machine (after an error
    // too); inputs stay the caller's.
    let checked = state.checks.into_iter().map(|check| check.codes);
    for mem in state.buffers.into_iter().flatten().chain(checked) {
        if let Ok(mem) = Rc::try_unwrap(mem) {
            machine.release(mem);
        }
    }
    outputs
}

/// A replay under way: the registers, the buffers' memory and the
/// failure codes to read at the end.
struct State<'a, M: Machine> {
    machine: &'a M,
    registers: Vec<f64>,
    buffers: Vec<Option<Rc<M::Mem>>>,
    checks: Vec<Check<M::Mem>>,
}

/// Failure codes an operation's device work wrote (`Command::Check`).
struct Check<Mem> {
    op: crate::ir::ops::Op,
    codes: Rc<Mem>,
    count: usize,
    failure: Failure,
}

impl<M: Machine> State<'_, M> {
    /// The first failure the device recorded, in program order.
    fn checked(&self) -> Result<Option<BackendError>, BackendError> {
        let checks: Vec<(&crate::ir::ops::Op, &M::Mem, usize, Failure)> = self
            .checks
            .iter()
            .map(|c| (&c.op, &*c.codes, c.count, c.failure))
            .collect();
        first_failure(self.machine, &checks)
    }

    /// The memory of `buffer`.
    fn mem(&self, buffer: u32) -> Result<&M::Mem, BackendError> {
        self.buffers[buffer as usize]
            .as_deref()
            .ok_or_else(|| BackendError::new(format!("buffer {buffer} is read before it is made")))
    }

    /// `buffer`'s memory taken out to be written (put back with `put`).
    fn take(&mut self, buffer: u32) -> Result<Rc<M::Mem>, BackendError> {
        self.buffers[buffer as usize].take().ok_or_else(|| {
            BackendError::new(format!("buffer {buffer} is written before it is made"))
        })
    }

    fn put(&mut self, buffer: u32, mem: Rc<M::Mem>) {
        self.buffers[buffer as usize] = Some(mem);
    }

    /// A value as the loop driver and the host see it.
    fn datum(&self, value: &Place) -> Result<Datum<M::Mem>, BackendError> {
        Ok(match value {
            Place::Host(r) => Datum::Host(self.registers[*r as usize]),
            Place::Device { buffer, shape } => Datum::Device {
                mem: self.shared(*buffer)?,
                shape: shape.clone(),
            },
            Place::F32 { buffer, shape } => Datum::F32 {
                mem: self.shared(*buffer)?,
                shape: shape.clone(),
            },
            Place::View { .. } => {
                return Err(BackendError::new(
                    "an index map reached a replay unmaterialized".to_string(),
                ));
            }
        })
    }

    fn shared(&self, buffer: u32) -> Result<Rc<M::Mem>, BackendError> {
        self.buffers[buffer as usize]
            .clone()
            .ok_or_else(|| BackendError::new(format!("buffer {buffer} is read before it is made")))
    }

    /// Stores what the host or a loop made where the program expects it:
    /// a number in its register, an array in its buffer.
    fn deliver(&mut self, out: &Place, made: Datum<M::Mem>) -> Result<(), BackendError> {
        match (out, made) {
            (Place::Host(r), Datum::Host(x)) => self.registers[*r as usize] = x,
            (Place::Host(r), made) => {
                let numbers = to_host(self.machine, &made)?;
                self.registers[*r as usize] = numbers.first().copied().unwrap_or(f64::NAN);
            }
            (
                Place::Device { buffer, .. } | Place::F32 { buffer, .. },
                Datum::Device { mem, .. } | Datum::F32 { mem, .. },
            ) => self.put(*buffer, mem),
            (Place::Device { buffer, shape } | Place::F32 { buffer, shape }, Datum::Host(x)) => {
                let len = shape.iter().product::<usize>();
                let mem = self.machine.upload(&vec![x; len])?;
                self.put(*buffer, Rc::new(mem));
            }
            (Place::View { .. }, _) => {
                return Err(BackendError::new(
                    "a result delivered to an index map".to_string(),
                ));
            }
        }
        Ok(())
    }

    fn run(&mut self, command: &Command) -> Result<(), BackendError> {
        let machine = self.machine;
        match command {
            Command::Alloc {
                buffer,
                len,
                zeroed,
            } => {
                let mem = if *zeroed {
                    machine.zeros(*len)?
                } else {
                    machine.alloc(*len)?
                };
                self.put(*buffer, Rc::new(mem));
            }
            Command::Release(buffer) => {
                if let Some(mem) = self.buffers[*buffer as usize].take()
                    && let Ok(mem) = Rc::try_unwrap(mem)
                {
                    machine.release(mem);
                }
            }
            Command::Launch {
                launch,
                operands,
                out,
            } => {
                let mut written = self.take(*out)?;
                let result = {
                    let mut args: SmallVec<[Arg<'_, M::Mem>; 8]> = SmallVec::new();
                    for operand in operands {
                        args.push(match operand {
                            Operand::Int(x) => Arg::Int(*x),
                            Operand::Register(r) => Arg::Double(self.registers[*r as usize]),
                            Operand::Buffer(b) => Arg::Mem(self.mem(*b)?),
                        });
                    }
                    match Rc::get_mut(&mut written) {
                        Some(out) => machine.launch(launch, &args, out),
                        None => Err(shared_output()),
                    }
                };
                self.put(*out, written);
                result?;
            }
            Command::Gemm {
                call,
                operands: (a, b),
                out,
                single,
            } => {
                let mut written = self.take(*out)?;
                let result = match Rc::get_mut(&mut written) {
                    Some(c) => machine.gemm(call, (self.mem(*a)?, self.mem(*b)?), c, *single),
                    None => Err(shared_output()),
                };
                self.put(*out, written);
                result?;
            }
            Command::Copy {
                src,
                from,
                dst,
                to,
                len,
            } => {
                let mut written = self.take(*dst)?;
                let result = match Rc::get_mut(&mut written) {
                    Some(dst) => machine.copy(self.mem(*src)?, *from, dst, *to, *len),
                    None => Err(shared_output()),
                };
                self.put(*dst, written);
                result?;
            }
            Command::Routine {
                routine,
                reads,
                writes,
            } => {
                let mut taken: SmallVec<[Rc<M::Mem>; 5]> = SmallVec::new();
                for &b in writes {
                    taken.push(self.take(b)?);
                }
                let result = {
                    let mut inputs: SmallVec<[&M::Mem; 2]> = SmallVec::new();
                    for &b in reads {
                        inputs.push(self.mem(b)?);
                    }
                    let outputs: Option<SmallVec<[&mut M::Mem; 5]>> =
                        taken.iter_mut().map(Rc::get_mut).collect();
                    match outputs {
                        Some(mut outputs) => machine.routine(routine, &inputs, &mut outputs),
                        None => Err(shared_output()),
                    }
                };
                for (&b, mem) in writes.iter().zip(taken) {
                    self.put(b, mem);
                }
                result?;
            }
            Command::Check {
                op,
                codes,
                count,
                failure,
            } => {
                let codes = self.shared(*codes)?;
                self.checks.push(Check {
                    op: op.clone(),
                    codes,
                    count: *count,
                    failure: *failure,
                });
            }
            Command::Host {
                group,
                operands,
                out,
            } => host_step(&mut self.registers, group, operands, *out),
            Command::Loop {
                tapes,
                operands,
                out,
            } => {
                let args: Vec<Datum<M::Mem>> = operands
                    .iter()
                    .map(|v| self.datum(v))
                    .collect::<Result<_, _>>()?;
                let refs: Vec<&Datum<M::Mem>> = args.iter().collect();
                let made = loops::run_loop(machine, tapes, &refs)?;
                drop(args);
                self.deliver(out, made)?;
            }
            Command::OnHost { op, operands, out } => {
                let made = self.on_host_kernel(op, operands, out.shape())?;
                self.deliver(out, made)?;
            }
            Command::Allreduce {
                op,
                reduction,
                operand,
                out,
            } => {
                let shape = operand.shape().to_vec();
                let reduced = match operand.buffer() {
                    Some(b) => machine.allreduce(self.mem(b)?, &shape, *reduction)?,
                    None => None,
                };
                let made = match reduced {
                    Some(mem) => Datum::device(mem, &shape),
                    None => self.on_host_kernel(op, std::slice::from_ref(operand), out.shape())?,
                };
                self.deliver(out, made)?;
            }
            Command::Measure { alive, dead } => {
                if *alive > 0 {
                    measure::alive(*alive);
                }
                if *dead > 0 {
                    measure::dead(*dead);
                }
            }
        }
        Ok(())
    }

    /// An operation's CPU kernel on its operands copied to the host, the
    /// result copied back.
    fn on_host_kernel(
        &self,
        op: &crate::ir::ops::Op,
        operands: &[Place],
        shape: &[usize],
    ) -> Result<Datum<M::Mem>, BackendError> {
        let mut host = Vec::with_capacity(operands.len());
        for operand in operands {
            let data = to_host(self.machine, &self.datum(operand)?)?;
            let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(operand.shape()), data)
                .map_err(|e| BackendError::new(format!("an operand of the wrong size: {e}")))?;
            host.push(array);
        }
        let views: Vec<ndarray::ArrayViewD<'_, f64>> = host.iter().map(|a| a.view()).collect();
        let result = op
            .cpu(&views, shape)
            .map_err(|e| BackendError::from_op(op, e))?;
        let data: Vec<f64> = result.iter().copied().collect();
        from_host(self.machine, &data, shape)
    }
}

fn shared_output() -> BackendError {
    BackendError::new("a kernel's output is shared with another value".to_string())
}

/// The first failure among `checks` (an operation, its codes, their
/// count and meaning), in order: the codes gathered into one buffer on the
/// device and copied to the host at once. `Err`: the codes could not be
/// read.
pub fn first_failure<M: Machine>(
    machine: &M,
    checks: &[(&crate::ir::ops::Op, &M::Mem, usize, Failure)],
) -> Result<Option<BackendError>, BackendError> {
    let read = match checks {
        [] => return Ok(None),
        [(_, codes, count, failure)] => machine.download(codes, failure.slots(*count))?,
        _ => {
            let total = checks.iter().map(|(_, _, n, f)| f.slots(*n)).sum();
            let mut gathered = machine.alloc(total)?;
            let mut at = 0;
            for (_, codes, count, failure) in checks {
                let len = failure.slots(*count);
                machine.copy(codes, 0, &mut gathered, at, len)?;
                at += len;
            }
            let read = machine.download(&gathered, total);
            machine.release(gathered);
            read?
        }
    };
    let mut at = 0;
    for (op, _, count, failure) in checks {
        let len = failure.slots(*count);
        if let Some(error) = failure.error(&read[at..at + len], *count) {
            return Ok(Some(BackendError::from_op(op, error)));
        }
        at += len;
    }
    Ok(None)
}

/// A `Command::Host`: `group` on the registers `operands`, into `out`.
pub fn host_step(registers: &mut [f64], group: &FusedGroup, operands: &[u32], out: u32) {
    let numbers: SmallVec<[f64; 4]> = operands.iter().map(|r| registers[*r as usize]).collect();
    registers[out as usize] = on_host(group, &numbers);
}

/// A group evaluated on numbers, on the host, step by step as the CPU
/// backend evaluates it.
pub fn on_host(group: &FusedGroup, numbers: &[f64]) -> f64 {
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

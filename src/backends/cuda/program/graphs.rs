//! Programs replayed as one graph. A program whose device work does not
//! change from run to run (no loop, no operation on the host, no kernel
//! parameter read from a number that changes) is captured, at its second
//! run, as a graph: its buffers get memory of their own that the graph
//! keeps (buffers whose lives do not overlap share it, as they do in a
//! plain replay), so addresses stay the same from run to run. A run then
//! copies the inputs into the graph's memory, launches the graph once,
//! and copies the results out into memory of their own (the caller keeps
//! them while the next run overwrites the graph's). Host arithmetic on
//! numbers is done on the host at each run, as in a plain replay.
//!
//! The memory graphs hold is bounded (`GRAPH_BYTES` per machine); past
//! it, programs replay without a graph. `EPSILON_CUDA_GRAPHS=0` turns
//! graphs off.

use super::replay::{host_step, replay};
use super::{Buffer, Command, Entry, Operand, Place, Program, Programs, Register};
use crate::backends::BackendError;
use crate::backends::cpu::measure;
use crate::backends::cuda::f32_storage;
use crate::backends::cuda::machine::{Arg, Datum, Machine};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::rc::Rc;

/// Programs with fewer kernels replay without a graph (launching a graph
/// costs about what launching a few kernels does).
const GRAPH_MIN_KERNELS: usize = 4;

/// The most device memory a machine's graphs hold.
const GRAPH_BYTES: usize = 1 << 30;

/// Whether graphs are used (`EPSILON_CUDA_GRAPHS=0` turns them off).
pub fn graphs_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("EPSILON_CUDA_GRAPHS").map_or(true, |v| v != "0"))
}

/// What became of a program's graph.
pub enum GraphState<M: Machine> {
    /// Not tried yet.
    NotYet,
    /// The machine could not capture it, or its memory would pass the
    /// bound: plain replays.
    Refused,
    /// Captured.
    Captured(Captured<M>),
}

/// A captured program: the graph and the memory it runs on.
pub struct Captured<M: Machine> {
    /// The graph (dropped before its memory).
    pub(super) graph: M::Graph,
    /// The memory, by place: each buffer's memory is `memory[place[b]]`.
    pub(super) memory: Vec<Option<M::Mem>>,
    /// Per buffer, its place in `memory`.
    pub(super) place: Vec<usize>,
    /// Slots of each place.
    pub(super) lens: Vec<usize>,
    /// Numbers of input registers written into the graph's kernel
    /// parameters (a loop's captured numbers), by register.
    pub(super) baked: Vec<(Register, f64)>,
    /// The place of the first of the memory areas outside the program's
    /// buffers (`stages` of [`captured_with`]), the others following.
    pub(super) first_stage: usize,
}

/// Whether commands (of a program with these inputs) can be captured.
pub fn graphable(commands: &[Command], inputs: &[Place]) -> bool {
    steady(commands, inputs, &[]).is_some_and(|kernels| kernels >= GRAPH_MIN_KERNELS)
}

/// The kernels of commands whose device work does not change from run to
/// run but through the numbers of the registers `fixed` (`None` where it
/// may change otherwise).
pub(super) fn steady(commands: &[Command], inputs: &[Place], fixed: &[Register]) -> Option<usize> {
    let mut varying: Vec<u32> = inputs
        .iter()
        .filter_map(|p| match p {
            Place::Host(r) if !fixed.contains(r) => Some(*r),
            _ => None,
        })
        .collect();
    let mut kernels = 0;
    for command in commands {
        match command {
            Command::Loop { .. }
            | Command::OnHost { .. }
            | Command::Allreduce { .. }
            | Command::Routine { .. } => {
                return None;
            }
            Command::Host { out, .. } => varying.push(*out),
            Command::Launch { operands, .. } => {
                kernels += 1;
                let reads_varying = operands
                    .iter()
                    .any(|o| matches!(o, Operand::Register(r) if varying.contains(r)));
                if reads_varying {
                    return None;
                }
            }
            Command::Gemm { .. } => kernels += 1,
            _ => {}
        }
    }
    Some(kernels)
}

/// Runs `entry`'s program: a plain replay at the first run and wherever
/// no graph can be used, else its graph (captured at the second run).
pub fn run<M: Machine>(
    machine: &M,
    programs: &Programs<M>,
    entry: &Entry<M>,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    let program = &entry.program;
    let runs = entry.runs.get();
    entry.runs.set(runs + 1);
    if runs == 0 || !program.graphable || !graphs_enabled() {
        return replay(machine, program, inputs);
    }
    let mut state = entry.graph.borrow_mut();
    if let GraphState::NotYet = *state {
        *state = match capture(machine, programs, program)? {
            Some(captured) => GraphState::Captured(captured),
            None => GraphState::Refused,
        };
    }
    match &mut *state {
        GraphState::Captured(captured) => launch(machine, program, captured, inputs),
        _ => {
            drop(state);
            replay(machine, program, inputs)
        }
    }
}

/// The 8-byte slots a device value fills (f32 storage: two numbers each).
pub(super) fn slots_of(value: &Place) -> usize {
    let n: usize = value.shape().iter().product();
    match value.is_f32() {
        true => f32_storage::slots(n),
        false => n,
    }
}

/// The slots of memory each buffer needs and where it lives: buffers
/// whose lives do not overlap share a place of their length.
fn places(program: &Program) -> (Vec<usize>, Vec<usize>) {
    let mut place = vec![usize::MAX; program.buffers];
    let mut lens: Vec<usize> = Vec::new();
    let mut free: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
    let new_place = |lens: &mut Vec<usize>, len: usize| {
        lens.push(len.max(1));
        lens.len() - 1
    };
    for input in &program.inputs {
        let (Place::Device { buffer, .. } | Place::F32 { buffer, .. }) = input else {
            continue;
        };
        place[*buffer as usize] = new_place(&mut lens, slots_of(input));
    }
    for command in &program.commands {
        match command {
            Command::Alloc { buffer, len, .. } => {
                let len = (*len).max(1);
                place[*buffer as usize] = match free.get_mut(&len).and_then(Vec::pop) {
                    Some(p) => p,
                    None => new_place(&mut lens, len),
                };
            }
            Command::Release(buffer) => {
                let p = place[*buffer as usize];
                free.entry(lens[p]).or_default().push(p);
            }
            _ => {}
        }
    }
    (place, lens)
}

/// Captures `program` on `machine` with memory of its own; `None` where
/// the machine cannot capture or the memory would pass the bound.
fn capture<M: Machine>(
    machine: &M,
    programs: &Programs<M>,
    program: &Program,
) -> Result<Option<Captured<M>>, BackendError> {
    captured_with(machine, programs, program, &[], &[], |place, _, memory| {
        record(machine, program, &program.registers, place, memory)
    })
}

/// A graph of the work `work` queues on memory of the program's own
/// (given each buffer's place, each place's slots, and the memory);
/// `None` where the machine cannot capture or the memory would pass the
/// bound. `baked` are the numbers written into it; `stages` the slots of
/// memory areas it keeps besides the program's buffers (placed after
/// them, from [`Captured::first_stage`]).
pub(super) fn captured_with<M: Machine>(
    machine: &M,
    programs: &Programs<M>,
    program: &Program,
    baked: &[(Register, f64)],
    stages: &[usize],
    work: impl FnOnce(&[usize], &[usize], &mut [Option<M::Mem>]) -> Result<(), BackendError>,
) -> Result<Option<Captured<M>>, BackendError> {
    let (place, mut lens) = places(program);
    let first_stage = lens.len();
    lens.extend(stages.iter().map(|&len| len.max(1)));
    let bytes: usize = lens.iter().sum::<usize>() * 8;
    if programs.held.get() + bytes > GRAPH_BYTES {
        return Ok(None);
    }
    let mut memory = Vec::with_capacity(lens.len());
    for &len in &lens {
        memory.push(Some(machine.alloc(len)?));
    }
    let graph = if machine.begin_capture()? {
        let recorded = work(&place, &lens, &mut memory);
        let graph = machine.end_capture();
        recorded?;
        graph?
    } else {
        None
    };
    let Some(graph) = graph else {
        for mem in memory.into_iter().flatten() {
            machine.release(mem);
        }
        return Ok(None);
    };
    programs.held.set(programs.held.get() + bytes);
    Ok(Some(Captured {
        graph,
        memory,
        place,
        lens,
        baked: baked.to_vec(),
        first_stage,
    }))
}

/// Whether two sets of baked numbers are the same, bit for bit.
pub(super) fn same_numbers(a: &[(Register, f64)], b: &[(Register, f64)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((r, x), (q, y))| r == q && x.to_bits() == y.to_bits())
}

impl<M: Machine> Captured<M> {
    /// The device memory it holds, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.lens.iter().sum::<usize>() * 8
    }

    /// Copies `mem`, the caller's value bound at `place`, into the
    /// graph's memory of `buffer`.
    pub(super) fn copy_in(
        &mut self,
        machine: &M,
        buffer: Buffer,
        place: &Place,
        mem: &M::Mem,
    ) -> Result<(), BackendError> {
        let dst = self.memory[self.place[buffer as usize]]
            .as_mut()
            .ok_or_else(|| BackendError::new("a graph's memory is missing"))?;
        match slots_of(place) {
            0 => Ok(()),
            len => machine.copy(mem, 0, dst, 0, len),
        }
    }

    /// The value at `place` in the graph's memory of `buffer`, copied into
    /// memory of its own.
    pub(super) fn copy_out(
        &self,
        machine: &M,
        buffer: Buffer,
        place: &Place,
    ) -> Result<M::Mem, BackendError> {
        let len = slots_of(place);
        let mut fresh = machine.alloc(len)?;
        let src = self.memory[self.place[buffer as usize]]
            .as_ref()
            .ok_or_else(|| BackendError::new("a graph's memory is missing"))?;
        if len > 0 {
            machine.copy(src, 0, &mut fresh, 0, len)?;
        }
        Ok(fresh)
    }
}

/// Queues `program`'s device work on the captured memory (while the
/// machine records it).
pub(super) fn record<M: Machine>(
    machine: &M,
    program: &Program,
    registers: &[f64],
    place: &[usize],
    memory: &mut [Option<M::Mem>],
) -> Result<(), BackendError> {
    let missing = || BackendError::new("a graph's memory is missing".to_string());
    for command in &program.commands {
        match command {
            Command::Alloc {
                buffer,
                zeroed: true,
                ..
            } => {
                let mem = memory[place[*buffer as usize]]
                    .as_mut()
                    .ok_or_else(missing)?;
                machine.clear(mem)?;
            }
            Command::Launch {
                launch,
                operands,
                out,
            } => {
                let out_place = place[*out as usize];
                let mut written = memory[out_place].take().ok_or_else(missing)?;
                let result = {
                    let mut args: SmallVec<[Arg<'_, M::Mem>; 8]> = SmallVec::new();
                    for operand in operands {
                        args.push(match operand {
                            Operand::Int(x) => Arg::Int(*x),
                            Operand::Register(r) => Arg::Double(registers[*r as usize]),
                            Operand::Buffer(b) => {
                                Arg::Mem(memory[place[*b as usize]].as_ref().ok_or_else(missing)?)
                            }
                        });
                    }
                    machine.launch(launch, &args, &mut written)
                };
                memory[out_place] = Some(written);
                result?;
            }
            Command::Gemm {
                call,
                operands: (a, b),
                out,
                single,
            } => {
                let out_place = place[*out as usize];
                let mut written = memory[out_place].take().ok_or_else(missing)?;
                let result = match (
                    memory[place[*a as usize]].as_ref(),
                    memory[place[*b as usize]].as_ref(),
                ) {
                    (Some(a), Some(b)) => machine.gemm(call, (a, b), &mut written, *single),
                    _ => Err(missing()),
                };
                memory[out_place] = Some(written);
                result?;
            }
            Command::Copy {
                src,
                from,
                dst,
                to,
                len,
            } => {
                let dst_place = place[*dst as usize];
                let mut written = memory[dst_place].take().ok_or_else(missing)?;
                let result = match memory[place[*src as usize]].as_ref() {
                    Some(src) => machine.copy(src, *from, &mut written, *to, *len),
                    None => Err(missing()),
                };
                memory[dst_place] = Some(written);
                result?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// One run of a captured program: inputs copied in, the graph launched,
/// the host's arithmetic done, results copied out.
fn launch<M: Machine>(
    machine: &M,
    program: &Program,
    captured: &mut Captured<M>,
    inputs: &[Datum<M::Mem>],
) -> Result<Vec<Datum<M::Mem>>, BackendError> {
    let mut registers = program.registers.clone();
    let mut external: FxHashMap<Buffer, Rc<M::Mem>> = FxHashMap::default();
    for (bound, input) in program.inputs.iter().zip(inputs) {
        match (bound, input) {
            (Place::Host(r), Datum::Host(x)) => registers[*r as usize] = *x,
            (
                Place::Device { buffer, .. } | Place::F32 { buffer, .. },
                Datum::Device { mem, .. } | Datum::F32 { mem, .. },
            ) => {
                captured.copy_in(machine, *buffer, bound, mem)?;
                external.insert(*buffer, Rc::clone(mem));
            }
            _ => {
                return Err(BackendError::new(
                    "an input of another kind than the program was planned for".to_string(),
                ));
            }
        }
    }
    machine.launch_graph(&captured.graph)?;
    for command in &program.commands {
        match command {
            Command::Host {
                group,
                operands,
                out,
            } => host_step(&mut registers, group, operands, *out),
            Command::Measure { alive, dead } => {
                measure::alive(*alive);
                measure::dead(*dead);
            }
            _ => {}
        }
    }
    let mut checks = Vec::new();
    for command in &program.commands {
        if let Command::Check {
            op,
            codes,
            count,
            failure,
        } = command
        {
            let mem = captured.memory[captured.place[*codes as usize]]
                .as_ref()
                .ok_or_else(|| BackendError::new("a graph's memory is missing"))?;
            checks.push((op, mem, *count, *failure));
        }
    }
    if let Some(failure) = super::replay::first_failure(machine, &checks)? {
        return Err(failure);
    }
    program
        .outputs
        .iter()
        .map(|output| {
            let (buffer, shape, single) = match output {
                Place::Host(r) => return Ok(Datum::Host(registers[*r as usize])),
                Place::Device { buffer, shape } => (*buffer, shape, false),
                Place::F32 { buffer, shape } => (*buffer, shape, true),
                Place::View { .. } => {
                    return Err(BackendError::new(
                        "an index map reached a replay unmaterialized".to_string(),
                    ));
                }
            };
            // An input given back is the caller's own memory.
            let mem = match external.get(&buffer) {
                Some(mem) => Rc::clone(mem),
                None => Rc::new(captured.copy_out(machine, buffer, output)?),
            };
            Ok(match single {
                true => Datum::F32 {
                    mem,
                    shape: shape.clone(),
                },
                false => Datum::Device {
                    mem,
                    shape: shape.clone(),
                },
            })
        })
        .collect()
}

//! Loop steps in groups, each group one graph launch. A step whose
//! device work is the same at every step is captured [`STEPS_PER_GRAPH`]
//! times in one graph, each copy handing its state to the next. A loop
//! that reads a row of a sequence per step (`:xs`) or stacks an output
//! per step gets, in the graph's memory, a staging area per sequence and
//! per output holding a group's rows: before a launch one copy brings the
//! group's rows of each sequence in, each captured step reads its row from
//! there and writes its outputs there, and after the launch one copy per
//! output puts the group's rows into the stack.

use super::graphs::{
    Captured, GraphState, captured_with, graphs_enabled, record, same_numbers, slots_of, steady,
};
use super::{Buffer, Command, Place, Program, Programs, Register};
use crate::backends::BackendError;
use crate::backends::cuda::machine::{Datum, Machine};

/// Steps of a loop captured in one graph.
pub const STEPS_PER_GRAPH: usize = 32;

/// A loop's rows in device memory for [`run_steps`]: step `first + k`
/// reads row `first + k` of each sequence (memory and row length, in the
/// order of the step's inputs after its index) and writes its outputs
/// after the state as row `first + k` of each stack (its memory, or
/// `None` where the caller drops the outputs, and the row length).
pub struct Rows<'a, Mem> {
    /// The index of the first step.
    pub first: usize,
    /// The sequences.
    pub xs: Vec<(&'a Mem, usize)>,
    /// The stacks.
    pub ys: Vec<(Option<&'a mut Mem>, usize)>,
}

impl<Mem> Rows<'_, Mem> {
    /// No sequences, no stacks.
    pub fn none() -> Self {
        Rows {
            first: 0,
            xs: Vec::new(),
            ys: Vec::new(),
        }
    }
}

/// Runs up to `steps` steps of a loop whose step is `tape`: the first
/// `carried` inputs are the state, which the step's first results
/// replace; the input after them is the step's index, then one row of
/// each sequence of `rows` (set by the caller to the first step's rows),
/// then values every step reads. Where the step can be captured (its
/// device work the same at every step, the state, rows and outputs on the
/// device, each result in a buffer of its own), whole groups of
/// [`STEPS_PER_GRAPH`] steps run as one graph launch each; the steps
/// done are returned (0 where none could be), the caller runs the rest.
pub fn run_steps<M: Machine>(
    machine: &M,
    tape: &crate::tape::Tape,
    inputs: &mut [Datum<M::Mem>],
    carried: usize,
    steps: usize,
    mut rows: Rows<'_, M::Mem>,
) -> Result<usize, BackendError> {
    let Some(programs) = machine.programs() else {
        return Ok(0);
    };
    if steps < STEPS_PER_GRAPH || !graphs_enabled() {
        return Ok(0);
    }
    let signature: super::Signature = inputs.iter().map(super::Kind::of).collect();
    let entry = programs.get(tape, &signature)?;
    let program = &entry.program;
    // The numbers the steps read but the index: written into the graph,
    // which is captured again when they change (a loop called again with
    // other numbers).
    let baked: Vec<(Register, f64)> = program
        .inputs
        .iter()
        .zip(inputs.iter())
        .enumerate()
        .filter_map(|(k, (bound, input))| match (bound, input) {
            (Place::Host(r), Datum::Host(x)) if k != carried => Some((*r, *x)),
            _ => None,
        })
        .collect();
    let Some(shape) = StepRows::of(program, carried, &rows) else {
        return Ok(0);
    };
    let mut state = entry.steps.borrow_mut();
    let stale = matches!(&*state, GraphState::Captured(c) if !same_numbers(&c.baked, &baked));
    if stale && let GraphState::Captured(old) = std::mem::replace(&mut *state, GraphState::NotYet) {
        programs
            .held
            .set(programs.held.get().saturating_sub(old.bytes()));
    }
    if let GraphState::NotYet = *state {
        *state = match steppable(program, &shape, &baked) {
            true => match capture_steps(machine, programs, program, &shape, &baked)? {
                Some(captured) => GraphState::Captured(captured),
                None => GraphState::Refused,
            },
            false => GraphState::Refused,
        };
    }
    let GraphState::Captured(captured) = &mut *state else {
        return Ok(0);
    };
    // Every device input in place (the state and what the steps read).
    for (bound, input) in program.inputs.iter().zip(inputs.iter()) {
        if let (
            Place::Device { buffer, .. } | Place::F32 { buffer, .. },
            Datum::Device { mem, .. } | Datum::F32 { mem, .. },
        ) = (bound, input)
        {
            captured.copy_in(machine, *buffer, bound, mem)?;
        }
    }
    let nx = rows.xs.len();
    let mut done = 0;
    while done + STEPS_PER_GRAPH <= steps {
        if crate::backends::cpu::cancel::requested() {
            break;
        }
        let at = rows.first + done;
        for (j, (sequence, len)) in rows.xs.iter().enumerate() {
            let stage = captured.stage_mut(j)?;
            machine.copy(sequence, at * len, stage, 0, STEPS_PER_GRAPH * len)?;
        }
        machine.launch_graph(&captured.graph)?;
        for (j, (stack, len)) in rows.ys.iter_mut().enumerate() {
            if let Some(stack) = stack {
                let stage = captured.stage_mut(nx + j)?;
                machine.copy(stage, 0, stack, at * *len, STEPS_PER_GRAPH * *len)?;
            }
        }
        done += STEPS_PER_GRAPH;
    }
    // The state, out of the graph's memory into memory of its own.
    for (bound, slot) in program.inputs.iter().zip(inputs.iter_mut()).take(carried) {
        let Some(buffer) = bound.buffer() else {
            continue;
        };
        let fresh = captured.copy_out(machine, buffer, bound)?;
        let shape = slot.shape().to_vec();
        let next = match slot.is_f32() {
            true => Datum::single(fresh, &shape),
            false => Datum::device(fresh, &shape),
        };
        let old = std::mem::replace(slot, next);
        crate::backends::cuda::machine::release(machine, old);
    }
    Ok(done)
}

/// Where a step's rows go: the buffers its sequences' rows are read from
/// and its outputs after the state are written to, with their lengths.
struct StepRows {
    carried: usize,
    xs: Vec<(Buffer, usize)>,
    ys: Vec<(Buffer, usize)>,
}

impl StepRows {
    /// The rows' buffers of `program`, or `None` where a row is not an
    /// f64 array on the device of the length `rows` gives.
    fn of<Mem>(program: &Program, carried: usize, rows: &Rows<'_, Mem>) -> Option<StepRows> {
        let f64_buffer = |place: &Place, len: usize| match place {
            Place::Device { buffer, .. } if slots_of(place) == len && len > 0 => {
                Some((*buffer, len))
            }
            _ => None,
        };
        let xs = rows
            .xs
            .iter()
            .enumerate()
            .map(|(j, (_, len))| f64_buffer(program.inputs.get(carried + 1 + j)?, *len))
            .collect::<Option<Vec<_>>>()?;
        let ys = rows
            .ys
            .iter()
            .enumerate()
            .map(|(j, (_, len))| f64_buffer(program.outputs.get(carried + j)?, *len))
            .collect::<Option<Vec<_>>>()?;
        (program.outputs.len() == carried + ys.len()).then_some(StepRows { carried, xs, ys })
    }

    /// The slots of the staging areas: a group's rows of each sequence,
    /// then of each output.
    fn stages(&self) -> Vec<usize> {
        self.xs
            .iter()
            .chain(&self.ys)
            .map(|(_, len)| STEPS_PER_GRAPH * len)
            .collect()
    }
}

/// Whether a loop step's program can run many steps in one graph: its
/// device work the same every step, its first results exactly the next
/// state (the first `carried` inputs, on the device, of the same kinds
/// and shapes), each result in a buffer of its own.
fn steppable(program: &Program, shape: &StepRows, baked: &[(Register, f64)]) -> bool {
    let carried = shape.carried;
    let fixed: Vec<Register> = baked.iter().map(|(r, _)| *r).collect();
    steady(&program.commands, &program.inputs, &fixed).is_some()
        // Failure codes are read after each launch, not after each step.
        && !program
            .commands
            .iter()
            .any(|c| matches!(c, Command::Check { .. }))
        && program.inputs.len() > carried
        && program
            .outputs
            .iter()
            .zip(&program.inputs)
            .take(carried)
            .all(|(out, input)| {
                out.shape() == input.shape()
                    && out.is_f32() == input.is_f32()
                    && input.buffer().is_some()
            })
        && program.outputs.iter().all(|out| {
            out.buffer().is_some() && !program.inputs.iter().any(|i| i.buffer() == out.buffer())
        })
        && {
            let mut seen: Vec<Buffer> = program.outputs.iter().filter_map(Place::buffer).collect();
            seen.sort_unstable();
            seen.windows(2).all(|w| w[0] != w[1])
        }
}

/// Copies `len` slots from place `from` (at `from_at`) to place `to` (at
/// `to_at`) of a graph's memory.
fn copy_between<M: Machine>(
    machine: &M,
    memory: &mut [Option<M::Mem>],
    (from, from_at): (usize, usize),
    (to, to_at): (usize, usize),
    len: usize,
) -> Result<(), BackendError> {
    let missing = || BackendError::new("a graph's memory is missing");
    let mut written = memory[to].take().ok_or_else(missing)?;
    let result = match memory[from].as_ref() {
        Some(src) => machine.copy(src, from_at, &mut written, to_at, len),
        None => Err(missing()),
    };
    memory[to] = Some(written);
    result
}

/// Captures [`STEPS_PER_GRAPH`] steps: each step's row of each sequence
/// copied in from its staging area, the step's work, its outputs copied
/// to theirs and its results copied into the state's places for the
/// next.
fn capture_steps<M: Machine>(
    machine: &M,
    programs: &Programs<M>,
    program: &Program,
    shape: &StepRows,
    baked: &[(Register, f64)],
) -> Result<Option<Captured<M>>, BackendError> {
    let mut registers = program.registers.clone();
    for (r, x) in baked {
        registers[*r as usize] = *x;
    }
    let stages = shape.stages();
    captured_with(
        machine,
        programs,
        program,
        baked,
        &stages,
        |place, lens, memory| {
            let first_stage = lens.len() - stages.len();
            let moves: Vec<(usize, usize)> = program
                .outputs
                .iter()
                .zip(&program.inputs)
                .take(shape.carried)
                .filter_map(|(out, input)| {
                    Some((
                        place[out.buffer()? as usize],
                        place[input.buffer()? as usize],
                    ))
                })
                .collect();
            let nx = shape.xs.len();
            for k in 0..STEPS_PER_GRAPH {
                for (j, &(buffer, len)) in shape.xs.iter().enumerate() {
                    let from = (first_stage + j, k * len);
                    copy_between(machine, memory, from, (place[buffer as usize], 0), len)?;
                }
                record(machine, program, &registers, place, memory)?;
                for (j, &(buffer, len)) in shape.ys.iter().enumerate() {
                    let to = (first_stage + nx + j, k * len);
                    copy_between(machine, memory, (place[buffer as usize], 0), to, len)?;
                }
                for &(from, to) in &moves {
                    copy_between(machine, memory, (from, 0), (to, 0), lens[to])?;
                }
            }
            Ok(())
        },
    )
}

impl<M: Machine> Captured<M> {
    /// The memory of staging area `j`.
    fn stage_mut(&mut self, j: usize) -> Result<&mut M::Mem, BackendError> {
        self.memory
            .get_mut(self.first_stage + j)
            .and_then(Option::as_mut)
            .ok_or_else(|| BackendError::new("a graph's staging memory is missing"))
    }
}

//! Small tapes run from a plan: a loop body (`scan`) runs thousands of
//! times on the same shapes, so everything the general executor decides
//! per instruction (where a value lives, how an operand broadcasts, which
//! elements a slice or a concatenation moves) is decided once here, and a
//! step is a walk over prepared kernels on buffers reused from step to
//! step, with no allocation but the results handed back.
//!
//! Every value is row-major and contiguous in its slot's buffer, in an
//! input, or in part of either (a view: reshapes, leading-axis slices and
//! identities cost nothing). A view into a slot is copied out before the
//! slot is written again while the view is alive. Data movement (slice,
//! pad, broadcast, transpose, concatenation, roll) is a list of runs of
//! contiguous copies and zero fills found once; elementwise groups run
//! chunk by chunk over their registers; reductions over consecutive axes
//! and matrix products have their own kernels; any other operation runs
//! through the general executor's `eval_op`. A loop inside the tape runs
//! on flat copies of its operands (`loops::forward_into`), its packed result
//! written into its slot.

mod fuse;

use super::elementwise::{CHUNK, apply_chunk};
use super::execute::{Buf, eval_op};
use super::matmul::matmul_into;
use super::native;
use super::reduce::reduce_middle;
use super::storage::Recurring;
use crate::backends::BackendError;
use crate::ir::movement::Movement;
use crate::ir::op::{ReduceOp, Shape, TOp};
use crate::ir::ops::reduction::logsumexp_into;
use crate::tape::{FusedGroup, Kernel, Tape};
use ndarray::{ArrayD, IxDyn};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Where a value's elements start.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Base {
    /// A slot's buffer.
    Slot(u32),
    /// A run-time input.
    Input(u32),
    /// A constant of the plan's table.
    Const(u32),
}

/// A value: `len` contiguous elements from `offset` in `base`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct View {
    base: Base,
    offset: usize,
    len: usize,
}

/// A contiguous piece of a data movement: `len` elements to `to` in the
/// result, from operand `from.0` at `from.1` (zeros when `None`); when
/// `fill`, all `len` are the one number there (a broadcast number).
#[derive(Clone, Copy, Debug)]
struct Run {
    from: Option<(u8, usize)>,
    to: usize,
    len: usize,
    fill: bool,
}

/// How an elementwise operand reaches its registers.
#[derive(Clone, Debug)]
enum Operand {
    /// As many elements as the group runs over.
    Full(View),
    /// One number, repeated (filled into `scratch` from this offset).
    Scalar(View, usize),
    /// Broadcast: moved by `runs` into `scratch` from this offset.
    Spread(View, Vec<Run>, usize),
}

/// One prepared instruction.
enum Step {
    /// Copies and zero fills into slot `out`.
    Move {
        out: u32,
        sources: SmallVec<[View; 4]>,
        runs: Vec<Run>,
    },
    /// An elementwise group over `n` elements (summed into `out` when
    /// `sum`), its registers in `scratch` from `registers`.
    Elementwise {
        out: u32,
        group: Arc<FusedGroup>,
        operands: SmallVec<[Operand; 4]>,
        n: usize,
        registers: usize,
        sum: bool,
        out_len: usize,
        /// The group compiled (where native kernels are on and the step
        /// is not part of a fused program; `compile_unfused`): one call
        /// for all its elements.
        native: Option<Rc<native::Kernel>>,
    },
    /// `op` over the middle axis of `source` seen as `[outer, reduced,
    /// inner]`.
    Reduce {
        out: u32,
        op: ReduceOp,
        source: View,
        outer: usize,
        reduced: usize,
        inner: usize,
    },
    /// `logsumexp` over the middle axis of `source` seen as `[outer,
    /// reduced, inner]`.
    LogSumExp {
        out: u32,
        source: View,
        outer: usize,
        reduced: usize,
        inner: usize,
    },
    /// A product of two matrices (2-D operands).
    Gemm {
        out: u32,
        a: (View, Shape),
        b: (View, Shape),
        ta: bool,
        tb: bool,
    },
    /// Any other operation, through the general executor.
    General {
        out: u32,
        op: TOp,
        args: SmallVec<[(View, Shape); 3]>,
        shape: Shape,
    },
    /// A loop (`scan`, `while-loop`) run on copies of its operands.
    Loop {
        out: u32,
        tapes: Arc<crate::tape::loops::LoopTapes>,
        args: SmallVec<[(View, Shape); 3]>,
    },
    /// Copies a live view into its own slot before its base is written.
    Keep { out: u32, source: View },
    /// A run of the steps above compiled as one program (`fuse`).
    Fused { program: native::Program },
}

/// A tape prepared for running many times.
pub struct Plan {
    steps: Vec<Step>,
    /// How fused steps find their places.
    layout: fuse::Layout,
    /// The length of each slot's buffer.
    slot_lens: Vec<usize>,
    /// The scratch an elementwise step needs, at most.
    scratch_len: usize,
    constants: Vec<f64>,
    outputs: Vec<(View, Shape)>,
    /// Per output, the slot that native programs may write in the
    /// caller's buffer directly (`run_flat`), where no other step touches
    /// it and it holds that output whole.
    direct: Vec<Option<u32>>,
    input_lens: Vec<usize>,
    /// The buffers, reused by every run (taken while a run is under way).
    buffers: RefCell<Option<Buffers>>,
}

/// A run's working storage.
struct Buffers {
    slots: Vec<Vec<f64>>,
    scratch: Vec<f64>,
    numbers: Vec<f64>,
    /// Per output, the arrays given out (reused once let go).
    given: Vec<Recurring>,
}

/// Plans kept per thread (emptied when it grows past this).
const MAX_PLANS: usize = 256;

/// Plans by loop and tape (`None`: the tape cannot be planned).
type Plans = rustc_hash::FxHashMap<(u64, u8), Option<Rc<Plan>>>;

thread_local! {
    static PLANS: RefCell<Plans> = RefCell::default();
}

pub use super::strategy::plans_enabled as enabled;

/// The plan of `tape`, which a loop keys by `key`, if it can be planned.
pub fn plan_for(key: (u64, u8), tape: &Tape) -> Option<Rc<Plan>> {
    if let Some(found) = PLANS.with(|p| p.borrow().get(&key).cloned()) {
        return found;
    }
    let plan = Plan::new(tape).map(Rc::new);
    PLANS.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() >= MAX_PLANS {
            p.clear();
        }
        p.insert(key, plan.clone());
    });
    plan
}

/// What planning knows of a value while walking the tape.
#[derive(Clone, Debug)]
struct Known {
    view: View,
    shape: Shape,
}

/// The plan under construction.
struct Planner {
    steps: Vec<Step>,
    slot_lens: Vec<usize>,
    scratch_len: usize,
    constants: Vec<f64>,
    /// The value each slot names now, if alive.
    values: Vec<Option<Known>>,
}

impl Plan {
    /// The plan of `tape`, or `None` where a value holds more than
    /// `LARGEST` numbers (`CHEAP` for values no transcendental makes,
    /// `AROUND_LOOPS` in a tape holding a loop): the
    /// general executor's lazy views, threads and native kernels serve
    /// large values better, and the per-instruction work a plan saves is
    /// small beside theirs.
    pub fn new(tape: &Tape) -> Option<Plan> {
        // A loop's packed operands and results are only buffers (their
        // parts are what the tape computes with), joined and split by
        // copies. A tape holding a loop spends its time in the loop: its
        // own large values are the loop's packed state and cotangents,
        // cheap beside it, and the loop's body is planned on its own.
        let packing = |op: &Kernel| {
            matches!(
                op,
                Kernel::Loop(_)
                    | Kernel::Op(
                        TOp::Concat(_)
                            | TOp::Pad { .. }
                            | TOp::Slice { .. }
                            | TOp::Reshape(_)
                            | TOp::StopGradient
                            | TOp::Tag(_)
                    )
            )
        };
        let holds_loop = tape
            .instructions
            .iter()
            .any(|i| matches!(i.op, Kernel::Loop(_)));
        // `exp`, `tanh` and `sigmoid` over many numbers run better as the
        // general executor's vectorized, threaded loops.
        let transcendental = |op: &Kernel| match op {
            Kernel::Fused(group) => group
                .steps
                .iter()
                .any(|(op, _)| super::elementwise::vectorized(op)),
            Kernel::Op(op) => super::elementwise::vectorized(op),
            _ => false,
        };
        let largest = |op: &Kernel| super::strategy::plan_limit(holds_loop, transcendental(op));
        if tape
            .instructions
            .iter()
            .any(|i| !packing(&i.op) && i.shape.iter().product::<usize>() > largest(&i.op))
        {
            return None;
        }
        let mut planner = Planner {
            steps: Vec::new(),
            slot_lens: vec![0; tape.slots],
            scratch_len: 0,
            constants: Vec::new(),
            values: vec![None; tape.slots],
        };
        for instruction in &tape.instructions {
            let out = instruction.out;
            // The slot is written: views into it are kept first.
            planner.keep_views_of(out);
            let args: Option<SmallVec<[Known; 3]>> = instruction
                .args
                .iter()
                .map(|&s| planner.values[s as usize].clone())
                .collect();
            let args = args?;
            let reads_own_slot = args.iter().any(|a| a.view.base == Base::Slot(out));
            let is_view = matches!(
                instruction.op,
                Kernel::Op(TOp::Reshape(_) | TOp::StopGradient | TOp::Tag(_))
            );
            if reads_own_slot && !is_view {
                return None;
            }
            let known = planner.plan(&instruction.op, &args, out, &instruction.shape)?;
            planner.values[out as usize] = Some(known);
            for &slot in &instruction.frees {
                if slot != out {
                    planner.values[slot as usize] = None;
                }
            }
        }
        let outputs = tape
            .outputs
            .iter()
            .map(|&s| {
                planner.values[s as usize]
                    .clone()
                    .map(|k| (k.view, k.shape))
            })
            .collect::<Option<Vec<_>>>()?;
        let layout = fuse::Layout {
            slots: tape.slots as u32,
            inputs: tape.input_shapes.len() as u32,
        };
        let mut steps = fuse::fuse(planner.steps, layout);
        let scratch_len = compile_unfused(&mut steps, planner.scratch_len);
        let direct = direct_outputs(&steps, &outputs, &planner.slot_lens);
        Some(Plan {
            steps,
            layout,
            direct,
            slot_lens: planner.slot_lens,
            scratch_len,
            constants: planner.constants,
            outputs,
            input_lens: tape
                .input_shapes
                .iter()
                .map(|s| s.iter().product())
                .collect(),
            buffers: RefCell::new(None),
        })
    }

    /// Runs the tape on `inputs` (of the tape's shapes: the caller checks).
    pub fn run(&self, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        self.with_buffers(|buffers| self.run_on(buffers, inputs))
    }

    /// Runs `f` on the plan's buffers (made at the first run, reused).
    fn with_buffers<T>(&self, f: impl FnOnce(&mut Buffers) -> T) -> T {
        let mut buffers = self
            .buffers
            .borrow_mut()
            .take()
            .unwrap_or_else(|| self.buffers());
        // The plan's buffers are its values' storage while it runs.
        let bytes = 8 * (self.slot_lens.iter().sum::<usize>() + self.scratch_len);
        super::measure::alive(bytes);
        let result = f(&mut buffers);
        super::measure::dead(bytes);
        *self.buffers.borrow_mut() = Some(buffers);
        result
    }

    /// Runs the tape on flat inputs (one slice per input, row-major, of
    /// the tape's sizes), writing each output's numbers into `outputs`
    /// (which do not overlap the inputs).
    pub fn run_flat(
        &self,
        inputs: &[&[f64]],
        outputs: &mut [&mut [f64]],
    ) -> Result<(), BackendError> {
        self.check_inputs(inputs)?;
        if outputs.len() != self.outputs.len()
            || outputs
                .iter()
                .zip(&self.outputs)
                .any(|(o, (view, _))| o.len() != view.len)
        {
            return Err(BackendError::new(
                "output buffers that do not match the loop body's outputs",
            ));
        }
        // Outputs the programs write in place: their slots are the
        // caller's buffers during this run.
        let redirect: SmallVec<[(u32, *mut f64); 16]> = self
            .direct
            .iter()
            .zip(outputs.iter_mut())
            .filter_map(|(slot, out)| slot.map(|s| (s, out.as_mut_ptr())))
            .collect();
        self.with_buffers(|buffers| {
            let result = self.steps_on(buffers, inputs, &redirect);
            if result.is_ok() {
                let reader = Reader {
                    slots: &buffers.slots,
                    inputs,
                    constants: &self.constants,
                };
                for (((view, _), out), direct) in self
                    .outputs
                    .iter()
                    .zip(outputs.iter_mut())
                    .zip(&self.direct)
                {
                    if direct.is_none() {
                        out.copy_from_slice(reader.read(*view));
                    }
                }
            }
            result
        })
    }

    /// How many runs of steps run as one native program.
    #[cfg(test)]
    pub(crate) fn fused_steps(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Fused { .. }))
            .count()
    }

    /// Whether output `k` is input `k` itself, whole (a loop's state
    /// part that its step leaves unchanged).
    pub fn passes_through(&self, k: usize) -> bool {
        self.outputs.get(k).is_some_and(|(view, _)| {
            view.base == Base::Input(k as u32)
                && view.offset == 0
                && self.input_lens.get(k) == Some(&view.len)
        })
    }

    fn buffers(&self) -> Buffers {
        Buffers {
            slots: self.slot_lens.iter().map(|&n| vec![0.0; n]).collect(),
            scratch: vec![0.0; self.scratch_len],
            numbers: Vec::new(),
            given: self.outputs.iter().map(|_| Recurring::default()).collect(),
        }
    }

    /// Refuses inputs of the wrong number or sizes.
    fn check_inputs(&self, input_slices: &[&[f64]]) -> Result<(), BackendError> {
        if input_slices.len() != self.input_lens.len() {
            return Err(BackendError::new(format!(
                "{} inputs where the loop body takes {}",
                input_slices.len(),
                self.input_lens.len()
            )));
        }
        for (k, (slice, &len)) in input_slices.iter().zip(&self.input_lens).enumerate() {
            if slice.len() != len {
                return Err(BackendError::new(format!(
                    "input {k} has {} numbers where the loop body takes {len}",
                    slice.len()
                )));
            }
        }
        Ok(())
    }

    fn run_on(&self, buffers: &mut Buffers, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        // Inputs as slices: numbers from a small table, arrays in place
        // (copied where not contiguous).
        let mut numbers = std::mem::take(&mut buffers.numbers);
        numbers.clear();
        numbers.extend(inputs.iter().map(|b| match b {
            Buf::Scalar(x) => *x,
            Buf::Array(_) => 0.0,
        }));
        let strided = inputs
            .iter()
            .any(|b| matches!(b, Buf::Array(a) if a.as_slice().is_none()));
        let copies: Vec<Option<Vec<f64>>> = if strided {
            inputs
                .iter()
                .map(|b| match b {
                    Buf::Array(a) if a.as_slice().is_none() => Some(a.iter().copied().collect()),
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let input_slices: SmallVec<[&[f64]; 32]> = inputs
            .iter()
            .enumerate()
            .map(|(k, b)| match (b, copies.get(k).and_then(Option::as_ref)) {
                (_, Some(copy)) => &copy[..],
                (Buf::Array(a), None) => a.as_slice().unwrap_or(&[]),
                (Buf::Scalar(_), None) => &numbers[k..k + 1],
            })
            .collect();
        let result = self
            .check_inputs(&input_slices)
            .and_then(|()| self.steps_on(buffers, &input_slices, &[]))
            .map(|()| self.outputs_of(buffers, inputs, &input_slices));
        drop(input_slices);
        buffers.numbers = numbers;
        result
    }

    /// The outputs as buffers, once the steps have run.
    fn outputs_of(
        &self,
        buffers: &mut Buffers,
        inputs: &[Buf],
        input_slices: &[&[f64]],
    ) -> Vec<Buf> {
        let reader = Reader {
            slots: &buffers.slots,
            inputs: input_slices,
            constants: &self.constants,
        };
        let given = &mut buffers.given;
        self.outputs
            .iter()
            .zip(given.iter_mut())
            .map(|((view, shape), given)| {
                // An input given back whole is the input itself (a state
                // part a step leaves unchanged stays one shared buffer).
                if let Base::Input(k) = view.base
                    && view.offset == 0
                    && inputs[k as usize].shape() == &shape[..]
                {
                    return inputs[k as usize].clone();
                }
                let data = reader.read(*view);
                if shape.is_empty() {
                    return Buf::Scalar(data[0]);
                }
                Buf::Array(given.array(shape, data))
            })
            .collect()
    }

    /// Runs every step on `input_slices`; the programs use the buffers in
    /// `redirect` (each as long as its slot) for those slots.
    fn steps_on(
        &self,
        buffers: &mut Buffers,
        input_slices: &[&[f64]],
        redirect: &[(u32, *mut f64)],
    ) -> Result<(), BackendError> {
        let slots = &mut buffers.slots;
        let scratch = &mut buffers.scratch;
        for step in &self.steps {
            if let Step::Fused { program } = step {
                let mut table: SmallVec<[*mut f64; 64]> = SmallVec::new();
                table.extend(slots.iter_mut().map(|s| s.as_mut_ptr()));
                for &(slot, buffer) in redirect {
                    table[slot as usize] = buffer;
                }
                table.extend(input_slices.iter().map(|s| s.as_ptr().cast_mut()));
                table.push(self.constants.as_ptr().cast_mut());
                table.push(scratch.as_mut_ptr());
                debug_assert_eq!(table.len(), self.layout.bases());
                // SAFETY: the table has a pointer per slot, input, the
                // constants and the scratch, each as long as the plan
                // sized it (a redirected slot's buffer is the caller's
                // output of that length, overlapping nothing else, as
                // `run_flat`'s borrows guarantee); fused steps write only slots and scratch,
                // never a place they read in the same piece, and nothing
                // else holds a reference into them while the program
                // runs. Inputs and constants are only read.
                unsafe { program.run(&table) };
                continue;
            }
            let out_slot = step.out() as usize;
            let mut out = std::mem::take(&mut slots[out_slot]);
            let reader = Reader {
                slots,
                inputs: input_slices,
                constants: &self.constants,
            };
            let done = step.run(&reader, &mut out, scratch);
            slots[out_slot] = out;
            done?;
        }
        Ok(())
    }
}

/// Per output, its slot where native programs alone touch that slot and
/// the output is all of it, and no other output is in it: such an output
/// can be written where the caller wants it (`Plan::run_flat`).
fn direct_outputs(
    steps: &[Step],
    outputs: &[(View, Shape)],
    slot_lens: &[usize],
) -> Vec<Option<u32>> {
    let mut touched = vec![false; slot_lens.len()];
    let mut mark = |view: &View| {
        if let Base::Slot(s) = view.base {
            touched[s as usize] = true;
        }
    };
    for step in steps {
        if matches!(step, Step::Fused { .. }) {
            continue;
        }
        mark(&View {
            base: Base::Slot(step.out()),
            offset: 0,
            len: 0,
        });
        step.reads().iter().for_each(&mut mark);
    }
    let mut uses = vec![0usize; slot_lens.len()];
    for (view, _) in outputs {
        if let Base::Slot(s) = view.base {
            uses[s as usize] += 1;
        }
    }
    outputs
        .iter()
        .map(|(view, _)| match view.base {
            Base::Slot(s)
                if view.offset == 0
                    && view.len == slot_lens[s as usize]
                    && !touched[s as usize]
                    && uses[s as usize] == 1 =>
            {
                Some(s)
            }
            _ => None,
        })
        .collect()
}

/// Reads views during a run.
struct Reader<'a> {
    slots: &'a [Vec<f64>],
    inputs: &'a [&'a [f64]],
    constants: &'a [f64],
}

impl Reader<'_> {
    fn read(&self, view: View) -> &[f64] {
        let whole: &[f64] = match view.base {
            Base::Slot(s) => &self.slots[s as usize],
            Base::Input(k) => self.inputs[k as usize],
            Base::Const(c) => &self.constants[c as usize..c as usize + 1],
        };
        &whole[view.offset..view.offset + view.len]
    }
}

impl Step {
    /// The views the step reads (none for a fused step).
    fn reads(&self) -> SmallVec<[View; 4]> {
        match self {
            Step::Move { sources, .. } => sources.clone(),
            Step::Elementwise { operands, .. } => operands
                .iter()
                .map(|o| match o {
                    Operand::Full(v) | Operand::Scalar(v, _) | Operand::Spread(v, _, _) => *v,
                })
                .collect(),
            Step::Reduce { source, .. }
            | Step::LogSumExp { source, .. }
            | Step::Keep { source, .. } => smallvec::smallvec![*source],
            Step::Gemm { a, b, .. } => smallvec::smallvec![a.0, b.0],
            Step::General { args, .. } | Step::Loop { args, .. } => {
                args.iter().map(|(v, _)| *v).collect()
            }
            Step::Fused { .. } => SmallVec::new(),
        }
    }

    fn out(&self) -> u32 {
        match self {
            Step::Move { out, .. }
            | Step::Elementwise { out, .. }
            | Step::Reduce { out, .. }
            | Step::LogSumExp { out, .. }
            | Step::Gemm { out, .. }
            | Step::General { out, .. }
            | Step::Loop { out, .. }
            | Step::Keep { out, .. } => *out,
            Step::Fused { .. } => unreachable!("a fused step has no one output"),
        }
    }

    fn run(
        &self,
        reader: &Reader<'_>,
        out: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<(), BackendError> {
        match self {
            Step::Keep { source, .. } => out[..source.len].copy_from_slice(reader.read(*source)),
            Step::Fused { .. } => unreachable!("fused steps run from `run_on`"),
            Step::Move { sources, runs, .. } => {
                let sources: SmallVec<[&[f64]; 4]> =
                    sources.iter().map(|v| reader.read(*v)).collect();
                move_runs(runs, &sources, out);
            }
            Step::Elementwise {
                group,
                operands,
                n,
                registers,
                sum,
                out_len,
                native,
                ..
            } => {
                if let Some(kernel) = native {
                    if !*sum {
                        run_native(kernel, operands, *n, reader, out, scratch);
                        return Ok(());
                    }
                    // The elements into scratch after the operands', then
                    // summed chunk by chunk as the interpreter and the
                    // executor's groups sum them (`scalar::sum`'s lanes).
                    let (operand_space, values) = scratch.split_at_mut(*registers);
                    run_native(kernel, operands, *n, reader, values, operand_space);
                    let total = values[..*n]
                        .chunks(CHUNK)
                        .fold(0.0, |total, chunk| total + crate::scalar::sum(chunk));
                    out[..*out_len].fill(total);
                    return Ok(());
                }
                let total =
                    elementwise(group, operands, *n, *registers, *sum, reader, out, scratch);
                if *sum {
                    out[..*out_len].fill(total);
                }
            }
            Step::Reduce {
                op,
                source,
                outer,
                reduced,
                inner,
                ..
            } => reduce_middle(*op, reader.read(*source), (*outer, *reduced, *inner), out),
            Step::LogSumExp {
                source,
                outer,
                reduced,
                inner,
                ..
            } => logsumexp_into(
                reader.read(*source),
                (*reduced, *inner),
                &mut out[..outer * inner],
            ),
            Step::Gemm { a, b, ta, tb, .. } => {
                let matrix = |(_, shape): &(View, Shape)| [shape[0], shape[1]];
                matmul_into(
                    (reader.read(a.0), matrix(a), *ta),
                    (reader.read(b.0), matrix(b), *tb),
                    out,
                );
            }
            Step::General {
                op, args, shape, ..
            } => {
                let bufs = buffers_of(args, reader);
                let refs: SmallVec<[&Buf; 3]> = bufs.iter().collect();
                let value = eval_op(op, &refs, shape)
                    .unwrap_or_else(|| Err(BackendError::new("an input inside a plan")))?;
                copy_buf(&value, out);
            }
            Step::Loop { tapes, args, .. } => {
                if !tapes.reverse {
                    let slices: SmallVec<[&[f64]; 16]> =
                        args.iter().map(|(v, _)| reader.read(*v)).collect();
                    if let Some(done) = super::loops::forward_into(tapes, &slices, out) {
                        return done;
                    }
                }
                let bufs = buffers_of(args, reader);
                copy_buf(&super::run_loop(tapes, &bufs)?, out);
            }
        }
        Ok(())
    }
}

/// The general executor's buffers of these views (copies).
fn buffers_of(args: &[(View, Shape)], reader: &Reader<'_>) -> SmallVec<[Buf; 3]> {
    args.iter()
        .map(|(v, s)| {
            let data = reader.read(*v);
            if s.is_empty() {
                Buf::Scalar(data[0])
            } else {
                let array = ArrayD::from_shape_vec(IxDyn(s), data.to_vec()).expect("sizes match");
                Buf::Array(Rc::new(array))
            }
        })
        .collect()
}

/// Copies a buffer's elements, row-major, to the front of `out`.
fn copy_buf(value: &Buf, out: &mut [f64]) {
    match value {
        Buf::Scalar(x) => out[0] = *x,
        Buf::Array(a) => copy_array(a, out),
    }
}

/// Copies an array's elements, row-major, to the front of `out`.
fn copy_array(array: &ArrayD<f64>, out: &mut [f64]) {
    match array.as_slice() {
        Some(data) => out[..data.len()].copy_from_slice(data),
        None => {
            for (o, x) in out.iter_mut().zip(array.iter()) {
                *o = *x;
            }
        }
    }
}

/// Takes `runs` from `sources` into `out`.
fn move_runs(runs: &[Run], sources: &[&[f64]], out: &mut [f64]) {
    for run in runs {
        let to = &mut out[run.to..run.to + run.len];
        match run.from {
            Some((k, from)) if run.len == 1 || run.fill => to.fill(sources[k as usize][from]),
            Some((k, from)) => to.copy_from_slice(&sources[k as usize][from..from + run.len]),
            None => to.fill(0.0),
        }
    }
}

/// Runs a compiled group over its `n` elements in one call (spread
/// operands moved into `scratch` first).
fn run_native(
    kernel: &native::Kernel,
    operands: &[Operand],
    n: usize,
    reader: &Reader<'_>,
    out: &mut [f64],
    scratch: &mut [f64],
) {
    for operand in operands {
        if let Operand::Spread(view, runs, at) = operand {
            move_runs(runs, &[reader.read(*view)], &mut scratch[*at..*at + n]);
        }
    }
    let scratch: &[f64] = scratch;
    let slices: SmallVec<[&[f64]; 16]> = operands
        .iter()
        .map(|operand| match operand {
            Operand::Full(view) | Operand::Scalar(view, _) => reader.read(*view),
            Operand::Spread(_, _, at) => &scratch[*at..*at + n],
        })
        .collect();
    kernel.handle().run(&slices, &mut out[..n]);
}

/// Runs an elementwise group over `n` elements chunk by chunk; returns
/// the sum of its results when `sum` (and then writes no elements).
#[allow(clippy::too_many_arguments)]
fn elementwise(
    group: &FusedGroup,
    operands: &[Operand],
    n: usize,
    registers: usize,
    sum: bool,
    reader: &Reader<'_>,
    out: &mut [f64],
    scratch: &mut [f64],
) -> f64 {
    let (prepared, rest) = scratch.split_at_mut(registers);
    // Spread operands are moved once; scalars filled once per run.
    for operand in operands {
        match operand {
            Operand::Full(_) => {}
            Operand::Scalar(view, at) => {
                let value = reader.read(*view)[0];
                prepared[*at..*at + CHUNK.min(n)].fill(value);
            }
            Operand::Spread(view, runs, at) => {
                let source = reader.read(*view);
                move_runs(runs, &[source], &mut prepared[*at..*at + n]);
            }
        }
    }
    let prepared: &[f64] = prepared;
    let steps = group.steps.len();
    let result = group.results[0] as usize;
    let mut total = 0.0;
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        let mut regs: SmallVec<[&[f64]; 32]> = operands
            .iter()
            .map(|operand| match operand {
                Operand::Full(view) => &reader.read(*view)[start..start + len],
                Operand::Scalar(_, at) => &prepared[*at..*at + len],
                Operand::Spread(_, _, at) => &prepared[*at + start..*at + start + len],
            })
            .collect();
        let mut free: &mut [f64] = &mut rest[..steps * CHUNK];
        for (op, args) in &group.steps {
            let (register, tail) = std::mem::take(&mut free).split_at_mut(CHUNK);
            let register = &mut register[..len];
            let mut ins: [&[f64]; 3] = [&[]; 3];
            for (slot, &a) in ins.iter_mut().zip(args) {
                *slot = regs[a as usize];
            }
            apply_chunk(op, &ins[..args.len()], register);
            let register: &[f64] = register;
            regs.push(register);
            free = tail;
        }
        let values = regs[result];
        if sum {
            total += crate::scalar::sum(values);
        } else {
            out[start..start + len].copy_from_slice(values);
        }
        start += len;
    }
    total
}

impl Planner {
    /// Before slot `slot` is written: every other live value viewing it is
    /// copied into its own slot (the values this instruction frees
    /// included: it reads them), after the views into that slot are kept
    /// in turn.
    fn keep_views_of(&mut self, slot: u32) {
        for other in 0..self.values.len() {
            if other == slot as usize {
                continue;
            }
            let Some(known) = &self.values[other] else {
                continue;
            };
            if known.view.base == Base::Slot(slot) {
                let source = known.view;
                self.keep_views_of(other as u32);
                self.grow(other as u32, source.len);
                self.steps.push(Step::Keep {
                    out: other as u32,
                    source,
                });
                if let Some(known) = &mut self.values[other] {
                    known.view = View {
                        base: Base::Slot(other as u32),
                        offset: 0,
                        len: source.len,
                    };
                }
            }
        }
    }

    fn grow(&mut self, slot: u32, len: usize) {
        let at = &mut self.slot_lens[slot as usize];
        *at = (*at).max(len);
    }

    /// A value computed into slot `out`.
    fn computed(&mut self, out: u32, shape: &[usize]) -> Known {
        let len = shape.iter().product();
        self.grow(out, len);
        Known {
            view: View {
                base: Base::Slot(out),
                offset: 0,
                len,
            },
            shape: shape.into(),
        }
    }

    /// Plans one instruction; returns where its value is.
    fn plan(&mut self, op: &Kernel, args: &[Known], out: u32, shape: &Shape) -> Option<Known> {
        let len: usize = shape.iter().product();
        let view_of = |known: &Known, offset: usize| Known {
            view: View {
                base: known.view.base,
                offset: known.view.offset + offset,
                len,
            },
            shape: shape.clone(),
        };
        match op {
            Kernel::Loop(tapes) => {
                self.steps.push(Step::Loop {
                    out,
                    tapes: Arc::clone(tapes),
                    args: args.iter().map(|a| (a.view, a.shape.clone())).collect(),
                });
                Some(self.computed(out, shape))
            }
            Kernel::Op(TOp::Input { index, .. }) => Some(Known {
                view: View {
                    base: Base::Input(*index),
                    offset: 0,
                    len,
                },
                shape: shape.clone(),
            }),
            Kernel::Op(TOp::Scalar(c)) => {
                self.constants.push(c.get());
                Some(Known {
                    view: View {
                        base: Base::Const(self.constants.len() as u32 - 1),
                        offset: 0,
                        len: 1,
                    },
                    shape: shape.clone(),
                })
            }
            Kernel::Op(TOp::Reshape(_) | TOp::StopGradient | TOp::Tag(_)) => {
                Some(view_of(&args[0], 0))
            }
            Kernel::Op(TOp::Slice { axis, start, .. }) => {
                let input = &args[0].shape;
                let axis = usize::from(*axis);
                let leading: usize = input[..axis].iter().product();
                if leading == 1 {
                    // A leading-axis slice is a contiguous range.
                    let inner: usize = input[axis + 1..].iter().product();
                    return Some(view_of(&args[0], start * inner));
                }
                self.movement(op, args, out, shape)
            }
            Kernel::Op(
                TOp::Pad { .. }
                | TOp::Broadcast(_)
                | TOp::Transpose(_)
                | TOp::Concat(_)
                | TOp::Roll { .. },
            ) => self.movement(op, args, out, shape),
            Kernel::Fused(group) => self.elementwise(Arc::clone(group), args, out, shape),
            Kernel::Op(op) if op.is_elementwise() => {
                let group = FusedGroup {
                    inputs: args.len(),
                    steps: vec![(op.clone(), (0..args.len() as u16).collect())],
                    results: SmallVec::from_slice(&[args.len() as u16]),
                    sum_over: None,
                };
                self.elementwise(Arc::new(group), args, out, shape)
            }
            Kernel::Op(reduce @ TOp::Reduce { op: fold, axes, .. }) => {
                let input = &args[0].shape;
                let (first, last) = (*axes.first()? as usize, *axes.last()? as usize);
                if last - first + 1 != axes.len() {
                    return self.general(reduce.clone(), args, out, shape);
                }
                let step = Step::Reduce {
                    out,
                    op: *fold,
                    source: args[0].view,
                    outer: input[..first].iter().product(),
                    reduced: input[first..=last].iter().product(),
                    inner: input[last + 1..].iter().product(),
                };
                self.steps.push(step);
                Some(self.computed(out, shape))
            }
            Kernel::Op(general @ TOp::Op(crate::ir::ops::Op::LogSumExp(lse))) => {
                let input = &args[0].shape;
                let (first, last) = (*lse.axes.first()? as usize, *lse.axes.last()? as usize);
                if last - first + 1 != lse.axes.len() {
                    return self.general(general.clone(), args, out, shape);
                }
                self.steps.push(Step::LogSumExp {
                    out,
                    source: args[0].view,
                    outer: input[..first].iter().product(),
                    reduced: input[first..=last].iter().product(),
                    inner: input[last + 1..].iter().product(),
                });
                Some(self.computed(out, shape))
            }
            // f32 products run in the general executor's f32 kernel.
            Kernel::Gemm { single: true, .. } => None,
            Kernel::Gemm { ta, tb, .. } => {
                if args.iter().any(|a| a.shape.len() != 2) {
                    // Other ranks: NumPy's matmul through the general
                    // executor (transposed operands are not planned).
                    return match (ta, tb) {
                        (false, false) => self.general(TOp::MatMul, args, out, shape),
                        _ => None,
                    };
                }
                self.steps.push(Step::Gemm {
                    out,
                    a: (args[0].view, args[0].shape.clone()),
                    b: (args[1].view, args[1].shape.clone()),
                    ta: *ta,
                    tb: *tb,
                });
                Some(self.computed(out, shape))
            }
            Kernel::Op(other) => self.general(other.clone(), args, out, shape),
        }
    }

    fn general(&mut self, op: TOp, args: &[Known], out: u32, shape: &Shape) -> Option<Known> {
        self.steps.push(Step::General {
            out,
            op,
            args: args.iter().map(|a| (a.view, a.shape.clone())).collect(),
            shape: shape.clone(),
        });
        Some(self.computed(out, shape))
    }

    /// Data movement as runs of copies.
    fn movement(&mut self, op: &Kernel, args: &[Known], out: u32, shape: &Shape) -> Option<Known> {
        let Kernel::Op(op) = op else { return None };
        let shapes: SmallVec<[&[usize]; 4]> = args.iter().map(|a| &a.shape[..]).collect();
        let runs = runs_of(op, &shapes, shape)?;
        self.steps.push(Step::Move {
            out,
            sources: args.iter().map(|a| a.view).collect(),
            runs,
        });
        Some(self.computed(out, shape))
    }

    fn elementwise(
        &mut self,
        group: Arc<FusedGroup>,
        args: &[Known],
        out: u32,
        shape: &Shape,
    ) -> Option<Known> {
        if group.results.len() != 1 {
            return None;
        }
        let over: Shape = group.sum_over.clone().unwrap_or_else(|| shape.clone());
        let n: usize = over.iter().product();
        let mut prepared = 0;
        let mut operands: SmallVec<[Operand; 4]> = SmallVec::new();
        for arg in args {
            let len: usize = arg.shape.iter().product();
            if len == n && arg.shape.len() <= over.len() {
                operands.push(Operand::Full(arg.view));
            } else if len == 1 {
                operands.push(Operand::Scalar(arg.view, prepared));
                prepared += CHUNK.min(n);
            } else {
                let runs = runs_of(&TOp::Broadcast(over.clone()), &[&arg.shape], &over)?;
                operands.push(Operand::Spread(arg.view, runs, prepared));
                prepared += n;
            }
        }
        self.scratch_len = self.scratch_len.max(prepared + group.steps.len() * CHUNK);
        let sum = group.sum_over.is_some();
        let out_len = shape.iter().product();
        // The step's own kernel, where it is not fused, is compiled after
        // fusing (`compile_unfused`).
        self.steps.push(Step::Elementwise {
            out,
            group,
            operands,
            n,
            registers: prepared,
            sum,
            out_len,
            native: None,
        });
        Some(self.computed(out, shape))
    }
}

/// Compiles the kernel of each elementwise step left out of the fused
/// programs (where native kernels are on), through the kernel cache (steps
/// of one structure share a kernel); returns the scratch the plan needs
/// then (`scratch_len` before: a summed group's kernel writes its
/// elements to scratch first).
fn compile_unfused(steps: &mut [Step], mut scratch_len: usize) -> usize {
    if !native::native_kernels() {
        return scratch_len;
    }
    for step in steps {
        let Step::Elementwise {
            group,
            operands,
            n,
            registers,
            sum,
            native,
            ..
        } = step
        else {
            continue;
        };
        // Steps the interpreter runs as vectorized loops (`exp`, `tanh`,
        // `sigmoid`) beat compiled code's call per number.
        if group
            .steps
            .iter()
            .any(|(op, _)| super::elementwise::vectorized(op))
        {
            continue;
        }
        let layout: Vec<native::Operand> = operands
            .iter()
            .map(|o| match o {
                Operand::Scalar(..) => native::Operand::Uniform,
                _ => native::Operand::Streamed,
            })
            .collect();
        // A summed group compiles without its sum: the kernel writes the
        // elements, the step adds them up.
        let elements = FusedGroup {
            sum_over: None,
            ..(**group).clone()
        };
        *native = native::cached_kernel(&elements, &layout);
        if *sum && native.is_some() {
            scratch_len = scratch_len.max(*registers + *n);
        }
    }
    scratch_len
}

/// The runs of a data movement from operands of `shapes` into `shape`
/// (`None` for an operation that is not one).
fn runs_of(op: &TOp, shapes: &[&[usize]], shape: &[usize]) -> Option<Vec<Run>> {
    let rank = shape.len();
    let n: usize = shape.iter().product();
    let movement = Movement::new(op, shapes)?;
    let source = |index: &[usize]| movement.source(index);
    let mut runs: Vec<Run> = Vec::new();
    let mut index = vec![0usize; rank];
    for to in 0..n {
        let from = source(&index);
        match runs.last_mut() {
            Some(last)
                if last.to + last.len == to
                    && !last.fill
                    && match (last.from, from) {
                        (None, None) => true,
                        (Some((k, a)), Some((j, b))) => k == j && a + last.len == b,
                        _ => false,
                    } =>
            {
                last.len += 1
            }
            // The same number again: a broadcast number fills the run.
            Some(last)
                if last.to + last.len == to
                    && (last.fill || last.len == 1)
                    && from.is_some()
                    && last.from == from =>
            {
                last.fill = true;
                last.len += 1
            }
            _ => runs.push(Run {
                from,
                to,
                len: 1,
                fill: false,
            }),
        }
        // The next index, row-major.
        for d in (0..rank).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(runs)
}

#[cfg(test)]
mod tests;

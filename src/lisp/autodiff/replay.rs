//! Replays: a transformed function (`jit`, `grad`, `value-and-grad`)
//! called again on arguments of the same structure runs its compiled tape
//! (or a gradient's straight-line program, `backends::cpu::straight`) at once, without running the Lisp function again to trace it (JAX's
//! cache of traced functions by argument signature).
//!
//! A trace is kept for replay only when running it again could not come
//! out differently or do anything a replay skips:
//! - nothing looked at a traced value (a branch or a comparison on a
//!   number the arguments decide: `Trace::inspected`);
//! - nothing with an effect ran while it was recorded (printing, random
//!   draws, the clock, files, loading code: `NumericState::effects`), and
//!   no assignment reached a global or a frame made before it;
//! - the world it read is the same when it is replayed: every definition
//!   or assignment of a global, assignment to a frame that outlives the
//!   call, and setting (`set-...!`, `seed!`, `add-rule!`) since then makes
//!   it stale (`NumericState::world`).
//!
//! A trace that calls a function the host registered
//! (`Engine::register_fn`) is not kept either: such a function may have
//! effects Epsilon cannot see.
//!
//! The signature of a call is the structure of its arguments, the shape of
//! each tensor and the value of each integer (integers may be static
//! arguments: counts, axes). Numbers and tensors are the tape's inputs:
//! their values change nothing in a replayable trace. Tensors the function
//! captured (globals, closures) are inputs too, kept as they were recorded
//! (a tensor never changes; a new one in the same variable is an
//! assignment, which makes the replay stale).

use super::tree::{Tree, flatten};
use super::{
    Compiled, Execution, Outcome, Request, Straight, assemble, finish, record, run_straight,
};
use crate::backends::cpu::Buf;
use crate::backends::cpu::cancel::with_cancel;
use crate::backends::cpu::straight::StraightLine;
use crate::dtype::DType;
use crate::lisp::error::EvalResult;
use crate::lisp::interp::Interp;
use crate::lisp::trace::value_to_buf;
use crate::lisp::value::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// Replays kept per transformed function (the oldest is dropped first).
const KEPT: usize = 8;

/// What a call's arguments are, as far as its trace can tell.
#[derive(Clone, Debug, PartialEq)]
enum Leaf {
    /// An integer (possibly a static argument).
    Int(i64),
    /// A float.
    Number,
    /// A tensor of this shape and type.
    Tensor(Vec<usize>, DType),
}

/// A call's arguments: their structure and leaves.
#[derive(Clone, Debug, PartialEq)]
struct Signature {
    trees: Vec<Tree>,
    leaves: Vec<Leaf>,
}

impl Signature {
    /// The signature of `args` and their leaves (`None`: not numbers,
    /// tensors and lists of them; the trace reports that).
    fn of(args: &[Value]) -> Option<(Signature, Vec<Value>)> {
        let mut values = Vec::new();
        let trees = args
            .iter()
            .map(|a| flatten(a, &mut values, "arguments").ok())
            .collect::<Option<Vec<_>>>()?;
        let leaves = values
            .iter()
            .map(|v| match v {
                Value::Int(n) => Some(Leaf::Int(*n)),
                Value::Float(_) => Some(Leaf::Number),
                Value::Tensor(t) => Some(Leaf::Tensor(t.shape().to_vec(), DType::F64)),
                Value::TensorF32(t) => Some(Leaf::Tensor(t.shape().to_vec(), DType::F32)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((Signature { trees, leaves }, values))
    }
}

/// What a replay runs.
enum Program {
    /// A compiled tape.
    Tape(Rc<Compiled>),
    /// A gradient's straight-line program (`backends::cpu::straight`).
    Straight(Rc<StraightLine>),
}

/// One replayable trace: its program, and how to make the tape's inputs and
/// read its results.
struct Replay {
    signature: Signature,
    /// `NumericState::world` when it was recorded.
    world: u64,
    program: Program,
    /// The inputs it was recorded with: captured tensors as they were,
    /// placeholders where the arguments go.
    inputs: Vec<Buf>,
    /// The argument leaves that the first inputs take, in order.
    input_leaves: Vec<usize>,
    n_out: usize,
    out_tree: Tree,
    groups: Vec<Tree>,
}

/// The replays of one transformed function.
#[derive(Default)]
pub struct Replays {
    kept: RefCell<Vec<Rc<Replay>>>,
}

/// Whether replays are on (`EPSILON_REPLAY=0` turns them off: every call
/// traces its function again).
fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("EPSILON_REPLAY").map_or(true, |v| v != "0"))
}

impl Replays {
    /// `super::run` for a request with no seeds, replaying a trace of an
    /// earlier call with the same signature where one is kept and still
    /// current, and keeping this call's trace where it can be replayed.
    pub fn run(
        &self,
        interp: &mut Interp,
        f: &Value,
        args: &[Value],
        request: &Request,
    ) -> EvalResult<Outcome> {
        let signature = if interp.numeric.trace.is_none() && !interp.numeric.debug_nans && enabled()
        {
            Signature::of(args)
        } else {
            None
        };
        let Some((signature, leaves)) = signature else {
            return super::run(interp, f, args, request, &[]);
        };
        let world = interp.numeric.world;
        let found = self
            .kept
            .borrow()
            .iter()
            .find(|r| r.world == world && r.signature == signature)
            .cloned();
        if let Some(replay) = found {
            interp.numeric.driver.tapes.hits += 1;
            interp.numeric.replayed += 1;
            return replay.run(interp, &leaves, request);
        }
        let effects = interp.numeric.effects;
        let outer = interp
            .numeric
            .recording_frames
            .replace(crate::lisp::env::next_frame_serial());
        let recorded = record(interp, f, args, request, &[], Execution::Any);
        interp.numeric.recording_frames = outer;
        let recorded = recorded?;
        let pure = interp.numeric.effects == effects
            && interp.numeric.world == world
            && !recorded.trace.borrow().inspected;
        let kept = pure.then(|| {
            // The arguments' own inputs are replaced at every replay: the
            // kept list does not hold on to this call's tensors.
            let mut inputs = recorded.trace.borrow().inputs.clone();
            for input in inputs.iter_mut().take(recorded.input_leaves.len()) {
                *input = Buf::Scalar(0.0);
            }
            (
                inputs,
                recorded.input_leaves.clone(),
                recorded.out_tree.clone(),
                recorded.groups.clone(),
                recorded.n_out,
            )
        });
        let straight = recorded.straight.clone();
        let outcome = finish(interp, recorded, request)?;
        let program = match (&outcome.compiled, straight) {
            (Some(compiled), _) => Some(Program::Tape(Rc::clone(compiled))),
            (None, Some(Straight::Gradient(program))) => Some(Program::Straight(program)),
            _ => None,
        };
        if let (Some((inputs, input_leaves, out_tree, groups, n_out)), Some(program)) =
            (kept, program)
        {
            let mut list = self.kept.borrow_mut();
            if list.len() >= KEPT {
                list.remove(0);
            }
            list.push(Rc::new(Replay {
                signature,
                world,
                program,
                inputs,
                input_leaves,
                n_out,
                out_tree,
                groups,
            }));
        }
        Ok(outcome)
    }
}

impl Replay {
    /// Runs the tape on the call's argument leaves.
    fn run(&self, interp: &mut Interp, leaves: &[Value], request: &Request) -> EvalResult<Outcome> {
        let mut inputs = self.inputs.clone();
        for (input, &leaf) in inputs.iter_mut().zip(&self.input_leaves) {
            *input = value_to_buf(&leaves[leaf])?;
        }
        let (values, compiled) = match &self.program {
            Program::Tape(compiled) => {
                let outputs = with_cancel(interp.interrupt_flag(), || {
                    crate::backends::run(&compiled.tape, &inputs)
                });
                interp.check_interrupt()?;
                let outputs = outputs.map_err(crate::lisp::sites::eval_error)?;
                let values = super::typed_values(outputs, &compiled.tape.output_dtypes);
                (values, Some(Rc::clone(compiled)))
            }
            Program::Straight(program) => (run_straight(interp, program, &inputs, request)?, None),
        };
        let (value, derivatives) =
            assemble(&values, self.n_out, &self.out_tree, &self.groups, request);
        Ok(Outcome {
            value,
            derivatives,
            cached: Some(true),
            compiled,
        })
    }
}

/// Built-ins a replay would skip or could not repeat: output, input, files,
/// loading and evaluating code, random draws, the clock.
const EFFECTS: &[&str] = &[
    "clock",
    "display",
    "doc",
    "eprintln",
    "eval",
    "exit",
    "gensym",
    "load",
    "load-npy",
    "newline",
    "permutation",
    "plot",
    "plot-lines",
    "print",
    "println",
    "progress",
    "rand",
    "randn",
    "read-csv",
    "read-line",
    "save-dot",
    "save-npy",
    "sync",
    "write",
    "write-csv",
];

/// Counts what a built-in's call means for replays: a setting (a name
/// ending in `!`, and `debug-nans`) changes the world; an effect while a
/// trace is recorded keeps that trace from being replayed.
pub fn note_call(interp: &mut Interp, builtin: &crate::lisp::procedure::Builtin) {
    let name = builtin.name;
    if name.ends_with('!') || name == "debug-nans" {
        interp.numeric.world += 1;
    }
    if interp.numeric.recording_frames.is_some() && EFFECTS.contains(&name) {
        interp.numeric.effects += 1;
    }
}

/// A function the host registered (`Engine::register_fn`) may do anything:
/// a trace that calls one is not replayed.
pub fn note_host_call(interp: &mut Interp) {
    if interp.numeric.recording_frames.is_some() {
        interp.numeric.effects += 1;
    }
}

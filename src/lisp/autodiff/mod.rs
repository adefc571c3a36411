//! Numeric differentiation of Lisp functions: trace the function on its
//! arguments, append the requested derivatives to the traced program
//! (reverse sweep, forward sweep, or both), compile it to a tape — or take
//! the tape from the cache, keyed by the program's structure — and run the
//! tape on the CPU backend.
//!
//! Inside a function that is itself being traced, the same requests append
//! to the enclosing trace instead, so derivatives nest (`(grad (grad f))`).
//!
//! The gradient of a long program of scalar operations (a Lisp loop over
//! numbers: its trace is mostly the flat arena, `Trace::flat`) skips the
//! sweep, the optimizer and the tape compiler: a `backends::cpu::straight`
//! program read from the trace in place gives value and gradient in two
//! passes (`straight_line`).

mod hoist;
pub mod loops;
pub mod replay;
pub mod tree;
pub mod vmap;

use super::error::{EvalError, EvalResult};
use super::interp::Interp;
use super::trace::{Trace, TraceRef, node_of, traced};
use super::value::Value;
pub use crate::ad::request::Request;
use crate::ad::request::{Arguments, Group, Recording, Seed};
use crate::backends::cpu::cancel::with_cancel;
use crate::backends::cpu::straight::{StraightError, StraightLine};
pub use crate::driver::{Compiled, MAX_CACHED_TAPES, SparseKind};
use crate::driver::{Driver, Settings};
use crate::egraph::tensor::optimize::{Optimized, TensorLimits, optimize};
use crate::ir::{Shape, TOp, TensorGraph};
use crate::tape::dot::Names;
use egg::Id;
use std::cell::RefCell;
use std::rc::Rc;
use tree::{Tree, flatten, has_complex, leaf_indices, rebuild_in_order};

/// Per-interpreter state of numeric differentiation.
#[derive(Default)]
pub struct NumericState {
    /// The trace being recorded, while a traced function runs.
    pub(crate) trace: Option<TraceRef>,
    /// Compiled tapes and sparsity patterns, by program.
    pub driver: Driver,
    next_tag: u32,
    /// The memory budget of compiled tapes (`set-memory-budget!`).
    pub memory_budget: Option<usize>,
    /// `(debug-nans #t)`: operations are checked one by one for the
    /// first that makes a NaN or an infinity.
    pub debug_nans: bool,
    /// What traced functions may read and replays must not outlive
    /// (`replay`): counts changes of globals, of older frames' variables
    /// and of settings.
    pub(crate) world: u64,
    /// Effects a replay would skip (printing, random draws, the clock,
    /// files) counted while a trace is recorded.
    pub(crate) effects: u64,
    /// While a replayable trace is recorded: the serial of the first frame
    /// made during it (assignments to frames made before it change the
    /// world).
    pub(crate) recording_frames: Option<u64>,
    /// Calls that ran a kept trace's tape without tracing (`replay`).
    pub replayed: u64,
    /// The type the constructors make (`set-default-dtype!`).
    pub default_dtype: crate::dtype::DType,
}

/// The outcome of running a request.
pub struct Outcome {
    /// The function's result (structure and values).
    pub value: Value,
    /// The derivatives, one list entry per derivative root group, shaped
    /// like what they differentiate.
    pub derivatives: Vec<Value>,
    /// Whether the tape came from the cache (top level only).
    pub cached: Option<bool>,
    /// The compiled program (top level only).
    pub compiled: Option<Rc<Compiled>>,
}

fn fresh_tag(interp: &mut Interp) -> u32 {
    interp.numeric.next_tag += 1;
    interp.numeric.next_tag
}

/// A traced request: the program with its derivative roots.
struct Recorded {
    trace: TraceRef,
    roots: Vec<Id>,
    /// The function's own results (computed first under `debug-nans`).
    outputs: Vec<Id>,
    groups: Vec<Tree>,
    out_tree: Tree,
    n_out: usize,
    nested: bool,
    n_leaves: usize,
    /// The argument leaves (by leaf index) the trace's first inputs hold,
    /// in input order (top level only).
    input_leaves: Vec<usize>,
    /// Display names of the argument inputs and of the roots.
    names: Names,
    /// For a gradient or a directional derivative of a long scalar
    /// program: the program to run in place of the derivative roots
    /// (`roots` is empty then, `outputs` may name flat steps, and nothing
    /// is compiled).
    straight: Option<Straight>,
}

/// A straight-line program (`backends::cpu::straight`) serving a request.
#[derive(Clone)]
enum Straight {
    /// The value and gradient (`grad`, `value-and-grad`).
    Gradient(Rc<StraightLine>),
    /// The value and the derivative along these tangents, one per
    /// argument leaf (`jvp`).
    Tangent(Rc<StraightLine>, Vec<f64>),
}

/// Traces `f` on `args` and computes `request`. `seeds` are the cotangent
/// (for `Vjp`), the tangents, one per argument (for `Jvp`), or the vector
/// (for `Hvp`).
pub fn run(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    request: &Request,
    seeds: &[Value],
) -> EvalResult<Outcome> {
    let recorded = record(interp, f, args, request, seeds, Execution::Any)?;
    finish(interp, recorded, request)
}

/// `run`, always through a compiled tape (for what describes the tape:
/// `tape-stats`, `show-tape`).
pub fn run_on_tape(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    request: &Request,
) -> EvalResult<Outcome> {
    let recorded = record(interp, f, args, request, &[], Execution::Tape)?;
    finish(interp, recorded, request)
}

/// How a top-level request may be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Execution {
    /// A gradient of a long scalar program by a straight-line program
    /// (`backends::cpu::straight`), anything else by a compiled tape.
    Any,
    /// By a compiled tape.
    Tape,
}

/// The non-zero pattern of the Jacobian of `f`'s one result, or of the
/// Hessian of its one number, with respect to its first argument at
/// `args`, read from the traced program (`sparse::jacobian_pattern`; for
/// a Hessian, over the nodes of the gradient's reverse sweep); refused
/// past `max_nnz` entries and inside a traced function.
pub fn derivative_sparsity(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    kind: SparseKind,
    max_nnz: usize,
) -> EvalResult<Rc<crate::ad::sparse::Compression>> {
    let form = kind.form();
    if interp.numeric.trace.is_some() {
        return Err(EvalError::type_error(format!(
            "{form} inside a traced function (grad, jit, a loop's step) is not supported: call it at top level"
        )));
    }
    let recorded = record(interp, f, args, &Request::Value, &[], Execution::Tape)?;
    let [output] = recorded.outputs[..] else {
        return Err(EvalError::type_error(format!(
            "{form} needs a function returning one number or tensor, this one returned {} values",
            recorded.outputs.len()
        )));
    };
    // The first argument's leaf is leaf 0; the inputs that hold it.
    let wrt: Vec<u32> = (0..recorded.input_leaves.len() as u32)
        .filter(|&k| recorded.input_leaves[k as usize] == 0)
        .collect();
    let mut trace = recorded.trace.borrow_mut();
    interp
        .numeric
        .driver
        .patterns
        .pattern(&mut trace.graph, output, &wrt, kind, max_nnz)
        .map_err(EvalError::from)
}

/// A tape's results as Lisp values of their types.
pub(super) fn typed_values(
    outputs: Vec<crate::backends::cpu::Buf>,
    dtypes: &[crate::dtype::DType],
) -> Vec<Value> {
    outputs
        .into_iter()
        .zip(
            dtypes
                .iter()
                .copied()
                .chain(std::iter::repeat(crate::dtype::DType::F64)),
        )
        .map(|(buf, dtype)| crate::lisp::trace::typed_value(buf, dtype))
        .collect()
}

/// Computes a recorded trace's results and derivatives.
fn finish(interp: &mut Interp, recorded: Recorded, request: &Request) -> EvalResult<Outcome> {
    let trace = &recorded.trace;
    // Root values: top level runs the tape; nested returns traced nodes.
    let (values, cached, compiled): (Vec<Value>, Option<bool>, Option<Rc<Compiled>>) = if recorded
        .nested
    {
        (
            recorded.roots.iter().map(|&id| traced(trace, id)).collect(),
            None,
            None,
        )
    } else if interp.numeric.debug_nans {
        // The function's results first: a NaN the forward pass makes
        // is reported before what its derivative makes of it.
        let mut all = recorded.outputs.clone();
        all.extend(&recorded.roots);
        let checked = trace.borrow().checked_values(&all);
        let mut outputs = checked.map_err(|failure| nan_error(&trace.borrow(), failure))?;
        let outputs = outputs.split_off(recorded.outputs.len());
        let dtypes: Vec<crate::dtype::DType> = {
            let t = trace.borrow();
            recorded.roots.iter().map(|&r| t.graph.dtype(r)).collect()
        };
        (typed_values(outputs, &dtypes), None, None)
    } else if let Some(straight) = &recorded.straight {
        let inputs = &trace.borrow().inputs;
        let values = match straight {
            Straight::Gradient(program) => run_straight(interp, program, inputs, request)?,
            Straight::Tangent(program, tangents) => run_tangent(interp, program, inputs, tangents)?,
        };
        (values, None, None)
    } else {
        let (compiled, hit) = compiled_for(interp, trace, &recorded.roots);
        let inputs = trace.borrow().inputs.clone();
        // A long loop stops when interrupted; its results are then
        // dropped for the interruption.
        let outputs = with_cancel(interp.interrupt_flag(), || {
            crate::backends::run(&compiled.tape, &inputs)
        });
        interp.check_interrupt()?;
        let outputs = outputs.map_err(crate::lisp::sites::eval_error)?;
        (
            typed_values(outputs, &compiled.tape.output_dtypes),
            Some(hit),
            Some(compiled),
        )
    };
    let (value, derivatives) = assemble(
        &values,
        recorded.n_out,
        &recorded.out_tree,
        &recorded.groups,
        request,
    );
    Ok(Outcome {
        value,
        derivatives,
        cached,
        compiled,
    })
}

/// The function's value and the derivatives, rebuilt in the shapes of its
/// result (`out_tree`, the first `n_out` values) and of the argument groups
/// differentiated.
fn assemble(
    values: &[Value],
    n_out: usize,
    out_tree: &Tree,
    groups: &[Tree],
    request: &Request,
) -> (Value, Vec<Value>) {
    let value = if n_out == 0 && !request.wants_value() {
        Value::Nil
    } else {
        rebuild_in_order(out_tree, &mut values[..n_out].iter().cloned())
    };
    let mut derivatives = Vec::new();
    let mut offset = n_out;
    for group in groups {
        let count = count_leaves(group);
        let slice = values[offset..offset + count].to_vec();
        offset += count;
        derivatives.push(rebuild_in_order(group, &mut slice.into_iter()));
    }
    (value, derivatives)
}

/// The error `debug-nans` gives for a failed checked evaluation: the
/// operation, the pass (the function's own, or the derivative of which
/// operation), and the built-in call that recorded it.
fn nan_error(trace: &Trace, failure: crate::lisp::trace::CheckFailure) -> EvalError {
    let (node, value) = match failure {
        crate::lisp::trace::CheckFailure::Backend(error) => {
            return crate::lisp::sites::eval_error(error);
        }
        crate::lisp::trace::CheckFailure::NonFinite { node, value } => (node, value),
    };
    let graph = &trace.graph;
    let source = |id: Id| trace.sources.get(usize::from(id)).copied().flatten();
    let op = graph.node(node).op.to_string();
    let made = if value.is_nan() {
        "NaN".to_string()
    } else {
        value.to_string()
    };
    // Follow a derivative node back to the traced call it differentiates.
    let (origin, pass) = crate::driver::nan_origin(graph, node, |id| source(id).is_some());
    let what = match (pass, source(origin)) {
        (None, Some((_, name))) => format!("{op} in ({name} ...) made {made} (forward pass)"),
        (Some(true), Some((_, name))) => {
            format!("{op} in the reverse pass (the derivative of ({name} ...)) made {made}")
        }
        (Some(false), Some((_, name))) => {
            format!("{op} in the forward-mode pass (the tangent of ({name} ...)) made {made}")
        }
        (Some(true), None) => format!("{op} in the reverse pass made {made}"),
        (Some(false), None) => format!("{op} in the forward-mode pass made {made}"),
        (None, None) => format!("{op} made {made}"),
    };
    let error = EvalError::range(format!("debug-nans: {what}"));
    match source(origin) {
        Some((span, _)) => error.at(span),
        None => error,
    }
}

/// A tape compiled for a request, with the inputs it was traced on: the
/// arguments' leaves first, then tensors the function closed over.
pub struct CompiledCall {
    /// The compiled program.
    pub compiled: Rc<Compiled>,
    /// The inputs of the traced call.
    pub inputs: Vec<crate::backends::cpu::Buf>,
    /// How many inputs are argument leaves (the rest are captured).
    pub argument_inputs: usize,
    /// How many outputs are the function's results (the rest are
    /// derivatives).
    pub results: usize,
    /// Display names of the inputs and outputs (`save-dot`).
    pub names: Names,
}

/// Traces and compiles `request` for `f` at `args` without running it
/// (top level only).
pub fn compile_call(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    request: &Request,
) -> EvalResult<CompiledCall> {
    if interp.numeric.trace.is_some() {
        return Err(EvalError::type_error(
            "cannot compile inside a traced function",
        ));
    }
    let recorded = record(interp, f, args, request, &[], Execution::Tape)?;
    let (compiled, _) = compiled_for(interp, &recorded.trace, &recorded.roots);
    let inputs = recorded.trace.borrow().inputs.clone();
    let names = recorded.names_for(inputs.len());
    Ok(CompiledCall {
        compiled,
        inputs,
        argument_inputs: recorded.n_leaves,
        results: recorded.n_out,
        names,
    })
}

/// A traced request's program after optimization, before it is compiled
/// to a tape (`save-dot`'s `:graph 'program`).
pub struct OptimizedCall {
    /// The optimized program with its roots.
    pub program: Optimized,
    /// Display names of its inputs and roots.
    pub names: Names,
}

/// Traces `request` for `f` at `args` and optimizes the program as a tape
/// would be (top level only; not cached, not compiled, not run).
pub fn optimized_call(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    request: &Request,
) -> EvalResult<OptimizedCall> {
    if interp.numeric.trace.is_some() {
        return Err(EvalError::type_error(
            "cannot compile inside a traced function",
        ));
    }
    let recorded = record(interp, f, args, request, &[], Execution::Tape)?;
    let borrowed = recorded.trace.borrow();
    let upto = recorded
        .roots
        .iter()
        .map(|&r| usize::from(r) + 1)
        .max()
        .unwrap_or(0);
    let limits = TensorLimits::for_level(interp.symbolic.level);
    let program = optimize(&borrowed.graph.nodes()[..upto], &recorded.roots, limits);
    Ok(OptimizedCall {
        program,
        names: recorded.names_for(borrowed.inputs.len()),
    })
}

impl Recorded {
    /// The names of all `inputs` inputs (those past the arguments' leaves
    /// are tensors the function closed over) and of the roots.
    fn names_for(&self, inputs: usize) -> Names {
        let mut names = self.names.clone();
        let arguments = names.inputs.len();
        names
            .inputs
            .extend((arguments..inputs).map(|k| format!("captured{}", k - arguments)));
        names
    }
}

/// Display names: argument `p` is `argp`, leaf `k` of a list argument
/// `argp.k`; results `value` (`value.k`); gradients `gradient argp`
/// (`gradient argp.k`), other derivatives `derivative-g` (`derivative-g.k`).
fn display_names(
    trees: &[Tree],
    is_static: &[bool],
    request: &Request,
    out_tree: &Tree,
    groups: &[Tree],
) -> Names {
    let leaf_names = |tree: &Tree, stem: &str| -> Vec<(usize, String)> {
        let mut indices = Vec::new();
        leaf_indices(tree, &mut indices);
        match tree {
            Tree::Leaf(i) => vec![(*i, stem.to_string())],
            Tree::Complex(..) => indices
                .iter()
                .zip([".re", ".im"])
                .map(|(&i, part)| (i, format!("{stem}{part}")))
                .collect(),
            Tree::List(_) => indices
                .iter()
                .enumerate()
                .map(|(k, &i)| (i, format!("{stem}.{k}")))
                .collect(),
        }
    };
    let mut by_leaf: Vec<(usize, String)> = trees
        .iter()
        .enumerate()
        .flat_map(|(p, tree)| leaf_names(tree, &format!("arg{p}")))
        .collect();
    by_leaf.sort_by_key(|(i, _)| *i);
    let inputs = by_leaf
        .into_iter()
        .filter(|(i, _)| !is_static.get(*i).copied().unwrap_or(false))
        .map(|(_, name)| name)
        .collect();
    let mut outputs = Vec::new();
    if request.wants_value() {
        outputs.extend(leaf_names(out_tree, "value").into_iter().map(|(_, n)| n));
    }
    for (g, group) in groups.iter().enumerate() {
        let stem = match request {
            Request::Grad { wrt, .. } => {
                format!("gradient arg{}", wrt.get(g).copied().unwrap_or(g))
            }
            _ => format!("derivative-{g}"),
        };
        outputs.extend(leaf_names(group, &stem).into_iter().map(|(_, n)| n));
    }
    Names { inputs, outputs }
}

fn record(
    interp: &mut Interp,
    f: &Value,
    args: &[Value],
    request: &Request,
    seeds: &[Value],
    execution: Execution,
) -> EvalResult<Recorded> {
    let mut leaves = Vec::new();
    let trees: Vec<Tree> = args
        .iter()
        .map(|a| flatten(a, &mut leaves, "arguments of a differentiated function"))
        .collect::<EvalResult<_>>()?;
    let nested = interp.numeric.trace.clone();
    if nested.is_none() {
        // Tags need only be distinct within one trace; numbering them from
        // zero in each makes equal traces equal (and the cache hit).
        interp.numeric.next_tag = 0;
    }
    let trace: TraceRef = match &nested {
        Some(active) => Rc::clone(active),
        // A top-level trace records scalar operations in its flat arena
        // (`debug-nans` follows each operation in the graph instead).
        None => {
            let mut top = Trace::default();
            top.flat_recording = !interp.numeric.debug_nans;
            Rc::new(RefCell::new(top))
        }
    };
    let arg_leaf_ranges: Vec<Vec<usize>> = trees
        .iter()
        .map(|t| {
            let mut v = Vec::new();
            leaf_indices(t, &mut v);
            v
        })
        .collect();
    // Integers in arguments that are not differentiated stay integers (static
    // arguments, such as a count or an axis); every other leaf is traced.
    let differentiated = request.differentiated(args.len());
    let mut is_static = vec![false; leaves.len()];
    for (position, indices) in arg_leaf_ranges.iter().enumerate() {
        if !differentiated.contains(&position) {
            for &i in indices {
                is_static[i] = matches!(leaves[i], Value::Int(_));
            }
        }
    }
    let mut leaf_ids: Vec<Id> = Vec::with_capacity(leaves.len());
    let mut traced_leaves: Vec<Value> = Vec::with_capacity(leaves.len());
    let mut input_leaves = Vec::new();
    for (position, (leaf, &fixed)) in leaves.iter().zip(&is_static).enumerate() {
        if fixed {
            // Never read: derivatives are only built for differentiated
            // arguments.
            leaf_ids.push(Id::from(0));
            traced_leaves.push(leaf.clone());
            continue;
        }
        let id = if nested.is_some() {
            let inner = node_of(&trace, leaf)?;
            let tag = fresh_tag(interp);
            trace
                .borrow_mut()
                .graph
                .add(TOp::Tag(tag), &[inner])
                .map_err(|e| EvalError::shape(e.0))?
        } else {
            input_leaves.push(position);
            trace.borrow_mut().add_value_input(leaf)?
        };
        leaf_ids.push(id);
        traced_leaves.push(traced(&trace, id));
    }
    let traced_args: Vec<Value> = trees
        .iter()
        .map(|t| rebuild_in_order(t, &mut leaf_values(t, &traced_leaves).into_iter()))
        .collect();
    let saved = interp.numeric.trace.replace(Rc::clone(&trace));
    let saved_modes = trace.borrow().modes;
    trace.borrow_mut().modes = saved_modes.union(request.modes());
    let result = interp.apply(f, traced_args);
    trace.borrow_mut().modes = saved_modes;
    interp.numeric.trace = saved;
    let result = result?;
    let mut out_leaves = Vec::new();
    let out_tree = flatten(
        &result,
        &mut out_leaves,
        "results of a differentiated function",
    )?;
    if matches!(request, Request::Jet { .. })
        && (has_complex(&out_tree) || trees.iter().any(has_complex))
    {
        return Err(EvalError::type_error(
            "Taylor mode (jet, taylor, derivatives) takes and gives real values; for a complex function, take its real and imaginary parts as two real functions",
        ));
    }
    if matches!(request, Request::Grad { .. }) && matches!(out_tree, Tree::Complex(..)) {
        return Err(EvalError::type_error(
            "grad needs a real-valued function, this one returned a complex value: take its real part or abs, or pass :holomorphic #t for a holomorphic function (JAX's rule)",
        ));
    }
    // The results' nodes, as recorded (possibly steps of the flat arena).
    let recorded_out: Vec<Id> = out_leaves
        .iter()
        .map(|v| match v {
            Value::Traced(t) if Rc::ptr_eq(&t.trace, &trace) => Ok(t.id),
            other => node_of(&trace, other),
        })
        .collect::<EvalResult<_>>()?;
    let straight = match (&nested, execution) {
        (None, Execution::Any) => straight_line(
            interp,
            &trace.borrow(),
            request,
            &recorded_out,
            Arguments {
                leaves: &leaf_ids,
                ranges: &arg_leaf_ranges,
            },
            seeds,
        ),
        _ => None,
    };
    // Anything else works on the graph.
    let out_ids: Vec<Id> = match straight {
        Some(_) => recorded_out,
        None => {
            let mut t = trace.borrow_mut();
            recorded_out
                .iter()
                .map(|&id| t.graph_node(id).map_err(|e| EvalError::shape(e.0)))
                .collect::<EvalResult<_>>()?
        }
    };
    let (roots, groups) = if straight.is_some() {
        let groups = match request {
            Request::Grad { wrt, .. } => wrt.iter().map(|&p| trees[p].clone()).collect(),
            _ => vec![Tree::Leaf(0)],
        };
        (Vec::new(), groups)
    } else {
        let mut borrowed = trace.borrow_mut();
        derivative_roots(
            &mut borrowed,
            request,
            &out_ids,
            Arguments {
                leaves: &leaf_ids,
                ranges: &arg_leaf_ranges,
            },
            (&trees, &out_tree),
            seeds,
            &trace,
        )?
    };
    let names = if nested.is_some() {
        Names::default()
    } else {
        display_names(&trees, &is_static, request, &out_tree, &groups)
    };
    Ok(Recorded {
        trace,
        outputs: out_ids.clone(),
        roots,
        groups,
        out_tree,
        n_out: if request.wants_value() {
            out_ids.len()
        } else {
            0
        },
        nested: nested.is_some(),
        n_leaves: leaves.len(),
        input_leaves,
        names,
        straight,
    })
}

/// The straight-line program for a gradient or `jvp` `request` of a
/// trace with the results `outputs`, with respect to the argument leaves
/// (`seeds`: a `jvp`'s tangents, one per argument), where one serves: a
/// single scalar result whose program is all scalar operations
/// (`StraightLine::build`), too long for the optimizer's saturation (which
/// may rewrite a shorter program, so that one keeps the tensor pipeline),
/// with neither a memory budget to keep (the tape compiler's
/// checkpointing) nor `debug-nans`; for `jvp`, scalar leaves with number
/// tangents (anything else gets `derivative_roots`' checks and errors).
/// Custom rules and loops are tensor operations, so the refusals of
/// `derivative_roots` never apply to such a program.
fn straight_line(
    interp: &Interp,
    trace: &Trace,
    request: &Request,
    outputs: &[Id],
    arguments: Arguments<'_>,
    seeds: &[Value],
) -> Option<Straight> {
    let &[output] = outputs else {
        return None;
    };
    let numeric = &interp.numeric;
    if !crate::driver::straight::may_apply(output, numeric.debug_nans, numeric.memory_budget) {
        return None;
    }
    let Arguments { leaves, ranges, .. } = arguments;
    let build = |targets: &[Id]| {
        crate::driver::straight::program(&trace.graph, &trace.flat, output, targets)
    };
    match request {
        Request::Grad { wrt, .. } => {
            let targets: Vec<Id> = wrt
                .iter()
                .flat_map(|&position| ranges[position].iter().map(|&i| leaves[i]))
                .collect();
            build(&targets).map(Straight::Gradient)
        }
        Request::Jvp => {
            let mut tangent_leaves = Vec::new();
            for seed in seeds {
                flatten(seed, &mut tangent_leaves, "tangents").ok()?;
            }
            if tangent_leaves.len() != leaves.len()
                || leaves
                    .iter()
                    .any(|&leaf| !trace.graph.shape(leaf).is_empty())
            {
                return None;
            }
            let tangents: Vec<f64> = tangent_leaves
                .iter()
                .map(|tangent| match tangent {
                    Value::Int(n) => Some(*n as f64),
                    Value::Float(x) => Some(*x),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            build(leaves).map(|program| Straight::Tangent(program, tangents))
        }
        _ => None,
    }
}

/// The values a straight-line program gives at `inputs` along
/// `tangents`: the result, then its directional derivative.
fn run_tangent(
    interp: &mut Interp,
    program: &StraightLine,
    inputs: &[crate::backends::cpu::Buf],
    tangents: &[f64],
) -> EvalResult<Vec<Value>> {
    let result = with_cancel(interp.interrupt_flag(), || {
        program.value_and_tangent(inputs, tangents)
    });
    interp.check_interrupt()?;
    let (value, tangent) = result.map_err(straight_error)?;
    Ok(vec![Value::Float(value), Value::Float(tangent)])
}

/// A straight-line run's failure as an error.
fn straight_error(error: StraightError) -> EvalError {
    match error {
        StraightError::Interrupted => EvalError::type_error("interrupted"),
        StraightError::NotScalarInput(k) => {
            EvalError::type_error(format!("input {k} of a scalar program is not a number"))
        }
    }
}

/// The values a straight-line program gives at `inputs`: the result (when
/// `request` wants it), then the gradient, one number per target.
fn run_straight(
    interp: &mut Interp,
    program: &StraightLine,
    inputs: &[crate::backends::cpu::Buf],
    request: &Request,
) -> EvalResult<Vec<Value>> {
    let result = with_cancel(interp.interrupt_flag(), || {
        program.value_and_gradient(inputs)
    });
    interp.check_interrupt()?;
    let (value, gradient) = result.map_err(straight_error)?;
    let mut values = Vec::with_capacity(gradient.len() + 1);
    if request.wants_value() {
        values.push(Value::Float(value));
    }
    values.extend(gradient.into_iter().map(Value::Float));
    Ok(values)
}

fn leaf_values(tree: &Tree, all: &[Value]) -> Vec<Value> {
    let mut indices = Vec::new();
    leaf_indices(tree, &mut indices);
    indices.iter().map(|&i| all[i].clone()).collect()
}

fn count_leaves(tree: &Tree) -> usize {
    let mut v = Vec::new();
    leaf_indices(tree, &mut v);
    v.len()
}

/// The recording a request appends to: the trace, and the Lisp values its
/// seeds are given as, flattened on first use.
struct TraceRecording<'a> {
    t: &'a mut Trace,
    trace: &'a TraceRef,
    seeds: &'a [Value],
    /// The flattened parts of the seed last asked for.
    parts: Option<(Seed, Vec<Value>)>,
}

impl TraceRecording<'_> {
    /// The flattened parts of `seed`.
    fn parts(&mut self, seed: Seed) -> EvalResult<&[Value]> {
        if self.parts.as_ref().is_none_or(|(s, _)| *s != seed) {
            let mut parts = Vec::new();
            match seed {
                Seed::Cotangent => {
                    let cotangent = self.seeds.first().cloned().unwrap_or(Value::Nil);
                    flatten(&cotangent, &mut parts, "the cotangent")?;
                }
                Seed::Tangents => {
                    for seed in self.seeds {
                        flatten(seed, &mut parts, "tangents")?;
                    }
                }
                Seed::Vector => {
                    flatten(
                        self.seeds.first().unwrap_or(&Value::Nil),
                        &mut parts,
                        "the vector",
                    )?;
                }
                Seed::Series => {
                    // One series (a list of terms) per argument, each term
                    // shaped as the argument: its leaves' series in turn.
                    for series in self.seeds {
                        let mut terms = Vec::new();
                        for term in series.list_to_vec()? {
                            let mut leaves = Vec::new();
                            flatten(&term, &mut leaves, "a series term")?;
                            terms.push(leaves);
                        }
                        let count = terms.first().map_or(0, Vec::len);
                        if terms.iter().any(|t| t.len() != count) {
                            return Err(EvalError::shape(
                                "jet: the terms of a series differ in structure",
                            ));
                        }
                        for leaf in 0..count {
                            parts.extend(terms.iter().map(|t| t[leaf].clone()));
                        }
                    }
                }
            }
            self.parts = Some((seed, parts));
        }
        Ok(&self.parts.as_ref().expect("just made").1)
    }
}

impl Recording for TraceRecording<'_> {
    type Error = EvalError;

    fn graph(&mut self) -> &mut TensorGraph {
        &mut self.t.graph
    }

    fn seed_parts(&mut self, seed: Seed) -> EvalResult<usize> {
        Ok(self.parts(seed)?.len())
    }

    fn seed_node(&mut self, seed: Seed, k: usize) -> EvalResult<Id> {
        let value = self.parts(seed)?[k].clone();
        seed_node(self.t, self.trace, &value)
    }

    fn directions(&mut self) -> EvalResult<Id> {
        let seed = self.seeds.first().unwrap_or(&Value::Nil);
        seed_node(self.t, self.trace, seed)
    }

    fn identity(&mut self, x: Id) -> EvalResult<(usize, Id)> {
        identity_seed(self.t, x)
    }
}

/// Appends the derivative nodes of `request`; returns all roots (results
/// first) and the structure of each derivative group (from the trees of
/// the arguments and of the result).
fn derivative_roots(
    t: &mut Trace,
    request: &Request,
    outputs: &[Id],
    arguments: Arguments<'_>,
    (trees, out_tree): (&[Tree], &Tree),
    seeds: &[Value],
    trace: &TraceRef,
) -> EvalResult<(Vec<Id>, Vec<Tree>)> {
    let mut recording = TraceRecording {
        t,
        trace,
        seeds,
        parts: None,
    };
    let (roots, groups) =
        crate::ad::request::derivative_roots(&mut recording, request, outputs, arguments)?;
    let mut trees_of_groups = Vec::new();
    for group in groups {
        match group {
            Group::Argument(position) => trees_of_groups.push(
                trees
                    .get(position)
                    .cloned()
                    .unwrap_or(Tree::List(Vec::new())),
            ),
            Group::Arguments => trees_of_groups.extend(trees.iter().cloned()),
            Group::Outputs(1) | Group::One => trees_of_groups.push(Tree::Leaf(0)),
            // One derivative per result leaf, shaped like the results
            // (a complex result's tangent is complex).
            Group::Outputs(n) if has_complex(out_tree) && count_leaves(out_tree) == n => {
                trees_of_groups.push(out_tree.clone());
            }
            Group::Outputs(n) => {
                trees_of_groups.push(Tree::List((0..n).map(Tree::Leaf).collect()));
            }
            Group::Series { outputs, order } => {
                let series =
                    |o: usize| Tree::List((0..order).map(|k| Tree::Leaf(o * order + k)).collect());
                trees_of_groups.push(match outputs {
                    1 => series(0),
                    n => Tree::List((0..n).map(series).collect()),
                });
            }
        }
    }
    Ok((roots, trees_of_groups))
}

/// Refuses a derivative whose result would have too many axes.
pub(crate) fn check_derivative_rank(form: &str, result: &[usize], x: &[usize]) -> EvalResult<()> {
    crate::ad::request::check_derivative_rank(form, result, x).map_err(EvalError::from)
}

/// The identity as a batch of tangents for `x`: shape [n] ++ shape(x),
/// direction k the k-th unit vector. Returns n and the seed's node.
fn identity_seed(t: &mut Trace, x: Id) -> EvalResult<(usize, Id)> {
    let shape = t.graph.shape(x).clone();
    let n: usize = shape.iter().product();
    let mut seed_shape: Vec<usize> = vec![n];
    seed_shape.extend_from_slice(&shape);
    crate::lisp::tensor::check_allocation(&seed_shape)?;
    let eye = ndarray::Array2::<f64>::eye(n)
        .into_shape_with_order(ndarray::IxDyn(&seed_shape))
        .expect("n rows of n elements");
    // Zeros and ones: weak, so an f32 function's derivative stays f32.
    let id = t.add_typed_input(
        crate::backends::cpu::Buf::Array(Rc::new(eye)),
        crate::dtype::DType::Weak,
    );
    Ok((n, id))
}

/// A seed value as a node: a run-time input at top level (so the tape can
/// be rerun with other seeds), the value's own node when nested.
fn seed_node(t: &mut Trace, trace: &TraceRef, value: &Value) -> EvalResult<Id> {
    match value {
        Value::Traced(v) if Rc::ptr_eq(&v.trace, trace) => {
            t.graph_node(v.id).map_err(|e| EvalError::shape(e.0))
        }
        Value::Traced(_) => t.capture_enclosing(value).ok_or_else(|| {
            EvalError::type_error("a traced value escaped the function being differentiated")
        }),
        other => t.add_value_input(other),
    }
}

/// The tape for `roots` of `trace`, from the cache or compiled now.
fn compiled_for(interp: &mut Interp, trace: &TraceRef, roots: &[Id]) -> (Rc<Compiled>, bool) {
    let borrowed = trace.borrow();
    // Inputs the roots do not reach still belong to the tape's signature.
    let input_shapes: Vec<Shape> = borrowed.inputs.iter().map(|b| b.shape().into()).collect();
    let settings = Settings {
        limits: TensorLimits::for_level(interp.symbolic.level),
        budget: interp.numeric.memory_budget,
    };
    interp
        .numeric
        .driver
        .compile(&borrowed.graph, roots, &input_shapes, settings)
}

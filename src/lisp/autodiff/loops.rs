//! `(scan step init n)`: the step is traced once, on placeholder states,
//! into a body program (`ir::loops`), optimized once and
//! compiled once; the loop then runs the compiled body `n` times.
//!
//! Inside a traced function the loop is one node of the enclosing program,
//! whose reverse runs the body's reverse under a checkpoint schedule. The
//! step may read values from outside (tensors, numbers, traced values of
//! the enclosing function): they become the body's captured inputs, and
//! traced ones receive gradients summed over the steps.

use super::hoist::hoist_invariants;
use super::tree::{Tree, flatten, rebuild_in_order};
use crate::backends::cpu::cancel::with_cancel;
use crate::backends::cpu::{Buf, run_loop};
use crate::dtype::DType;
use crate::egraph::tensor::optimize::TensorLimits;
use crate::ir::loops::{Body, ScanSpec, Strategy};
use crate::ir::shape::show;
use crate::ir::{Shape, TNode, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::trace::{
    Trace, TraceRef, node_of, traced, typed_value, value_dtype, value_to_buf,
};
use crate::lisp::value::Value;
use crate::tape::loops::LoopTapes;
use egg::Id;
use ndarray::{ArrayD, IxDyn};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Where a captured value comes from.
pub(super) enum Origin {
    /// A traced value of an enclosing trace.
    Traced(Value),
    /// A traced value of an enclosing trace computed from known values
    /// only (a hoisted invariant): no derivative flows to it.
    Constant(Value),
    /// A tensor or number known now, of this type (an f32 one held
    /// widened).
    Known(Buf, DType),
}

/// What a scan runs over: a number of steps, or sequences whose rows the
/// steps take (`(scan step init xs)`).
pub enum Steps {
    /// `(step state i)` for i below this.
    Count(usize),
    /// `(step carry x)` for each row x of these tensors (a tensor, or a
    /// list of them with one leading length), returning `(list carry y)`.
    Over(Value),
}

/// A traced step: its program and roots (the next state's leaves, then
/// the step's outputs), the structure and shapes of its outputs, and its
/// captured values with their shapes.
struct TracedStep {
    nodes: Vec<TNode>,
    shapes: Vec<Shape>,
    roots: Vec<Id>,
    outputs: Tree,
    output_shapes: Vec<Shape>,
    captures: Vec<(Origin, Shape)>,
}

/// Runs `(scan step init n)` or `(scan step init xs)` with `strategy`
/// for its reverse.
pub fn scan(
    interp: &mut Interp,
    step: &Value,
    init: &Value,
    steps: Steps,
    strategy: Strategy,
) -> EvalResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(init, &mut leaves, "the state of scan")?;
    let (n, sequences, xs_tree) = match &steps {
        Steps::Count(0) => return Ok(init.clone()),
        Steps::Count(n) => (*n, Vec::new(), None),
        Steps::Over(xs) => {
            let mut sequences = Vec::new();
            let xs_tree = flatten(xs, &mut sequences, "the sequences scan runs over")?;
            (sequence_length(&sequences)?, sequences, Some(xs_tree))
        }
    };
    let shapes: Vec<Shape> = leaves.iter().map(leaf_shape).collect();
    let mut dtypes: Vec<DType> = leaves.iter().map(value_dtype).collect();
    let xs: Vec<Shape> = sequences
        .iter()
        .map(|x| leaf_shape(x)[1..].into())
        .collect();
    let xs_dtypes: Vec<DType> = sequences.iter().map(value_dtype).collect();
    let outer = interp.numeric.trace.clone();
    let trace = |interp: &mut Interp, dtypes: &[DType]| {
        trace_step(
            interp,
            step,
            &tree,
            (&shapes, dtypes),
            xs_tree.as_ref().map(|t| (t, &xs[..], &xs_dtypes[..])),
            outer.clone(),
        )
    };
    let mut traced = trace(interp, &dtypes)?;
    // A number in the state that the step makes f32 or f64 is a value of
    // that type from the start (JAX promotes weak carries the same way):
    // the step is traced again with it so.
    let made = crate::ir::dtypes::dtypes_of(&traced.nodes);
    let mut promoted = false;
    for k in 0..leaves.len() {
        let next = made[usize::from(traced.roots[k])];
        if dtypes[k] == DType::Weak && next != DType::Weak {
            dtypes[k] = next;
            leaves[k] = crate::lisp::builtins::dtype::converted_number(&leaves[k], next);
            promoted = true;
        }
    }
    if promoted {
        traced = trace(interp, &dtypes)?;
    }
    let limits = TensorLimits::for_level(interp.symbolic.level);
    let mut captures = traced.captures;
    let nodes = match &outer {
        Some(outer) => hoist_invariants(
            &traced.nodes,
            &traced.shapes,
            &traced.roots,
            shapes.len() + 1 + xs.len(),
            &mut captures,
            outer,
        )?,
        None => traced.nodes,
    };
    let body = optimized_body(interp, &nodes, &traced.roots, limits);
    let differentiable = captures
        .iter()
        .map(|(origin, _)| origin.differentiable())
        .collect();
    let capture_shapes = captures.iter().map(|(_, s)| s.clone()).collect();
    let spec = Arc::new(
        ScanSpec::new(
            body,
            shapes.clone(),
            capture_shapes,
            differentiable,
            n,
            strategy,
            limits,
        )
        .over(xs, traced.output_shapes.clone()),
    );
    let results = if n == 0 {
        // No step runs: the state as it was, and no rows of output.
        let mut results = leaves.clone();
        let dtypes = spec.body.root_dtypes();
        results.extend(
            spec.output_parts()[shapes.len()..]
                .iter()
                .zip(&dtypes[shapes.len()..])
                .map(|(shape, &dtype)| typed_value(zeros(shape), dtype)),
        );
        results
    } else {
        match &outer {
            Some(outer) => record(outer, &spec, &leaves, &sequences, &captures)?,
            None => run_now(interp, &spec, &leaves, &sequences, &captures)?,
        }
    };
    let mut results = results.into_iter();
    let state = rebuild_in_order(&tree, &mut results);
    Ok(match steps {
        Steps::Count(_) => state,
        Steps::Over(_) => {
            let ys = rebuild_in_order(&traced.outputs, &mut results);
            Value::list(vec![state, ys])
        }
    })
}

/// Runs `(while-loop cond body init)`: `state <- (body state)` while
/// `(cond state)`, at most `max_steps` steps, its reverse keeping states
/// by the online schedule with the snapshots `strategy` allows. The
/// condition and the body are traced once, into one program over the
/// state, the step count and the values they capture.
pub fn while_loop(
    interp: &mut Interp,
    condition: &Value,
    step: &Value,
    init: &Value,
    max_steps: usize,
    strategy: Strategy,
    limit_message: Option<Arc<str>>,
) -> EvalResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(init, &mut leaves, "the state of while-loop")?;
    let shapes: Vec<Shape> = leaves.iter().map(leaf_shape).collect();
    let dtypes: Vec<DType> = leaves.iter().map(value_dtype).collect();
    let outer = interp.numeric.trace.clone();
    let body: TraceRef = Rc::new(RefCell::new(Trace::loop_body(outer.clone())));
    let state_ids: Vec<Id> = shapes
        .iter()
        .zip(&dtypes)
        .map(|(shape, &dtype)| body.borrow_mut().add_typed_input(zeros(shape), dtype))
        .collect();
    body.borrow_mut().add_input(Buf::Scalar(0.0));
    let state = rebuild_in_order(&tree, &mut state_ids.iter().map(|&id| traced(&body, id)));
    let saved = interp.numeric.trace.replace(Rc::clone(&body));
    body.borrow_mut().record_comparisons = true;
    let go = interp.apply(condition, vec![state.clone()]);
    body.borrow_mut().record_comparisons = false;
    let next = match &go {
        Ok(_) => interp.apply(step, vec![state]),
        Err(_) => Ok(Value::Nil),
    };
    interp.numeric.trace = saved;
    let (go, next) = (go?, next?);
    let go = match go {
        Value::Bool(b) => Value::Float(if b { 1.0 } else { 0.0 }),
        other => other,
    };
    let go = node_of(&body, &go).map_err(|_| {
        EvalError::type_error(format!(
            "the condition of while-loop must give a comparison or a number, got {}",
            go.short()
        ))
    })?;
    let mut out_leaves = Vec::new();
    let out_tree = flatten(
        &next,
        &mut out_leaves,
        "the state while-loop's body returns",
    )?;
    if out_tree != tree {
        return Err(EvalError::shape(format!(
            "the body of while-loop must return a state of the same structure as the initial state: {} leaves in {}, the initial state has {}",
            out_leaves.len(),
            next.short(),
            shapes.len()
        )));
    }
    let mut roots: Vec<Id> = out_leaves
        .iter()
        .map(|v| node_of(&body, v))
        .collect::<EvalResult<_>>()?;
    carried(&body, &mut roots, &dtypes, "while-loop's body")?;
    let b = body.borrow();
    if !b.graph.shape(go).is_empty() {
        return Err(EvalError::shape(format!(
            "the condition of while-loop must give one number (a comparison), got shape {}",
            show(b.graph.shape(go))
        )));
    }
    for (k, (&root, shape)) in roots.iter().zip(&shapes).enumerate() {
        if b.graph.shape(root) != shape {
            return Err(EvalError::shape(format!(
                "the body of while-loop returned shape {} for state part {k}, which has shape {}",
                show(b.graph.shape(root)),
                show(shape)
            )));
        }
    }
    let mut captures = captured(&b, shapes.len() + 1).map_err(|_| {
        EvalError::type_error(
            "the condition or body of while-loop looks at the values of its state (if, while, a comparison inside the body, printing): they are compiled once for every step; use where in the body, and comparisons combined with * (and) or max (or) in the condition",
        )
    })?;
    let nodes = b.graph.nodes().to_vec();
    let node_shapes = b.graph.shapes().to_vec();
    drop(b);
    let nodes = match &outer {
        Some(outer) => {
            let mut all_roots = roots.clone();
            all_roots.push(go);
            hoist_invariants(
                &nodes,
                &node_shapes,
                &all_roots,
                shapes.len() + 1,
                &mut captures,
                outer,
            )?
        }
        None => nodes,
    };
    let limits = TensorLimits::for_level(interp.symbolic.level);
    let test = optimized_body(interp, &nodes, &[go], limits);
    let step_body = optimized_body(interp, &nodes, &roots, limits);
    let spec = Arc::new(
        ScanSpec::new(
            step_body,
            shapes,
            captures.iter().map(|(_, s)| s.clone()).collect(),
            captures
                .iter()
                .map(|(origin, _)| origin.differentiable())
                .collect(),
            max_steps,
            strategy,
            limits,
        )
        .while_true(test)
        .limit_message(limit_message),
    );
    let results = match &outer {
        Some(outer) => record(outer, &spec, &leaves, &[], &captures)?,
        None => run_now(interp, &spec, &leaves, &[], &captures)?,
    };
    Ok(rebuild_in_order(&tree, &mut results.into_iter()))
}

/// The common leading length of the sequences of `(scan step init xs)`.
fn sequence_length(sequences: &[Value]) -> EvalResult<usize> {
    let mut length: Option<(usize, Shape)> = None;
    for x in sequences {
        let shape = leaf_shape(x);
        let Some(&len) = shape.first() else {
            return Err(EvalError::shape(format!(
                "scan runs over the rows of tensors, got {} (a tensor of rank 0 has no rows)",
                x.short()
            )));
        };
        match &length {
            None => length = Some((len, shape)),
            Some((first, first_shape)) if *first != len => {
                return Err(EvalError::shape(format!(
                    "the sequences scan runs over have different lengths: shape {} has {first} rows, shape {} has {len}",
                    show(first_shape),
                    show(&shape)
                )));
            }
            Some(_) => {}
        }
    }
    length.map(|(len, _)| len).ok_or_else(|| {
        EvalError::shape("scan over sequences needs at least one tensor to run over")
    })
}

/// Calls `(checkpoint f)` on `args`. Inside a traced function, `f` runs as
/// a loop of one step whose state is `f`'s arguments and results, reversed
/// by recomputation: the tape keeps `f`'s results, not its intermediates,
/// and the reverse recomputes them. Elsewhere it is a plain call.
pub fn checkpoint_call(interp: &mut Interp, f: &Value, args: &[Value]) -> EvalResult<Value> {
    let Some(outer) = interp.numeric.trace.clone() else {
        return interp.apply(f, args.to_vec());
    };
    let mut leaves = Vec::new();
    let arg_tree = flatten(
        &Value::list(args.to_vec()),
        &mut leaves,
        "the arguments of a checkpointed function",
    )?;
    // Integer arguments stay integers (a count, an index, a flag), as
    // `grad` and `jit` keep them: only the other leaves are traced.
    let (fixed, leaves): (Vec<(usize, Value)>, Vec<Value>) = {
        let mut fixed = Vec::new();
        let mut traced_leaves = Vec::new();
        for (k, leaf) in leaves.into_iter().enumerate() {
            if matches!(leaf, Value::Int(_)) {
                fixed.push((k, leaf));
            } else {
                traced_leaves.push(leaf);
            }
        }
        (fixed, traced_leaves)
    };
    let shapes: Vec<Shape> = leaves.iter().map(leaf_shape).collect();
    let body: TraceRef = Rc::new(RefCell::new(Trace::loop_body(Some(Rc::clone(&outer)))));
    let arg_ids: Vec<Id> = shapes
        .iter()
        .zip(&leaves)
        .map(|(shape, leaf)| {
            body.borrow_mut()
                .add_typed_input(zeros(shape), value_dtype(leaf))
        })
        .collect();
    // The index of the one step (unused by `f`).
    body.borrow_mut().add_input(Buf::Scalar(0.0));
    let mut traced_ids = arg_ids.iter().map(|&id| traced(&body, id));
    let mut fixed_values = fixed.iter().peekable();
    let all_leaves: Vec<Value> = (0..fixed.len() + arg_ids.len())
        .map(|k| match fixed_values.peek() {
            Some((at, value)) if *at == k => {
                fixed_values.next();
                value.clone()
            }
            _ => traced_ids.next().unwrap_or(Value::Nil),
        })
        .collect();
    let traced_args = rebuild_in_order(&arg_tree, &mut all_leaves.into_iter());
    let saved = interp.numeric.trace.replace(Rc::clone(&body));
    let result = interp.apply(f, traced_args.list_to_vec()?);
    interp.numeric.trace = saved;
    let result = result?;
    let mut results = Vec::new();
    let result_tree = flatten(
        &result,
        &mut results,
        "the results of a checkpointed function",
    )?;
    let roots: Vec<Id> = results
        .iter()
        .map(|v| node_of(&body, v))
        .collect::<EvalResult<_>>()?;
    let b = body.borrow();
    let result_shapes: Vec<Shape> = roots.iter().map(|&r| b.graph.shape(r).clone()).collect();
    let result_dtypes: Vec<crate::dtype::DType> = roots.iter().map(|&r| b.graph.dtype(r)).collect();
    let captures = captured(&b, shapes.len() + 1).map_err(|_| {
        EvalError::type_error(
            "a checkpointed function looks at the values of its arguments (if, while, a comparison of numbers, printing): it is recomputed in the backward pass, so it cannot branch on them",
        )
    })?;
    // The loop's state is the arguments, then the results: inputs move up
    // by one per result, and the results get inputs of their own.
    let (arguments, results_count) = (shapes.len(), result_shapes.len());
    let mut nodes: Vec<TNode> = b
        .graph
        .nodes()
        .iter()
        .map(|node| match &node.op {
            TOp::Input {
                index,
                shape,
                dtype,
            } if *index as usize >= arguments => TNode::new(
                TOp::Input {
                    index: index + results_count as u32,
                    shape: shape.clone(),
                    dtype: *dtype,
                },
                &[],
            ),
            _ => node.clone(),
        })
        .collect();
    drop(b);
    for (k, shape) in result_shapes.iter().enumerate() {
        nodes.push(TNode::new(
            TOp::Input {
                index: (arguments + k) as u32,
                shape: shape.clone(),
                dtype: result_dtypes[k],
            },
            &[],
        ));
    }
    let body_roots: Vec<Id> = arg_ids.iter().chain(&roots).copied().collect();
    let limits = TensorLimits::for_level(interp.symbolic.level);
    let body = optimized_body(interp, &nodes, &body_roots, limits);
    let state_shapes: Vec<Shape> = shapes.iter().chain(&result_shapes).cloned().collect();
    let spec = Arc::new(ScanSpec::new(
        body,
        state_shapes.clone(),
        captures.iter().map(|(_, s)| s.clone()).collect(),
        captures
            .iter()
            .map(|(origin, _)| origin.differentiable())
            .collect(),
        1,
        Strategy::Recompute,
        limits,
    ));
    let mut state: Vec<Id> = leaves
        .iter()
        .map(|leaf| node_of(&outer, leaf))
        .collect::<EvalResult<_>>()?;
    for shape in &result_shapes {
        state.push(outer.borrow_mut().graph.full(0.0, shape));
    }
    let outputs = record_nodes(&outer, &spec, state, &captures)?;
    Ok(rebuild_in_order(
        &result_tree,
        &mut outputs.into_iter().skip(arguments),
    ))
}

/// The shape of a state leaf.
pub(super) fn leaf_shape(leaf: &Value) -> Shape {
    match leaf {
        Value::Tensor(t) => t.shape().into(),
        Value::TensorF32(t) => t.shape().into(),
        Value::Traced(t) => t.shape.clone(),
        _ => Shape::new(),
    }
}

/// Traces `step` on placeholder states of `shapes` and a traced index, or
/// (for a scan over sequences) on placeholder rows of the sequences: the
/// body's program and roots, its outputs, and its captured values.
fn trace_step(
    interp: &mut Interp,
    step: &Value,
    tree: &Tree,
    (shapes, dtypes): (&[Shape], &[DType]),
    xs: Option<(&Tree, &[Shape], &[DType])>,
    outer: Option<TraceRef>,
) -> EvalResult<TracedStep> {
    let body: TraceRef = Rc::new(RefCell::new(Trace::loop_body(outer)));
    let state_ids: Vec<Id> = shapes
        .iter()
        .zip(dtypes)
        .map(|(shape, &dtype)| body.borrow_mut().add_typed_input(zeros(shape), dtype))
        .collect();
    let index_id = body.borrow_mut().add_input(Buf::Scalar(0.0));
    let (rows, row_dtypes) = xs.map(|(_, rows, d)| (rows, d)).unwrap_or_default();
    let row_ids: Vec<Id> = rows
        .iter()
        .zip(row_dtypes)
        .map(|(shape, &dtype)| body.borrow_mut().add_typed_input(zeros(shape), dtype))
        .collect();
    let state = rebuild_in_order(tree, &mut state_ids.iter().map(|&id| traced(&body, id)));
    let second = match xs {
        Some((xs_tree, _, _)) => {
            rebuild_in_order(xs_tree, &mut row_ids.iter().map(|&id| traced(&body, id)))
        }
        None => traced(&body, index_id),
    };
    let saved = interp.numeric.trace.replace(Rc::clone(&body));
    let result = interp.apply(step, vec![state, second]);
    interp.numeric.trace = saved;
    let result = result?;
    let (state_out, output) = match xs {
        None => (result, Value::Nil),
        Some(_) => match result.list_to_vec().ok().as_deref() {
            Some([carry, y]) => (carry.clone(), y.clone()),
            _ => {
                return Err(EvalError::type_error(format!(
                    "the step of (scan step init xs) returns (list carry y), got {}",
                    result.short()
                )));
            }
        },
    };
    let mut out_leaves = Vec::new();
    let out_tree = flatten(&state_out, &mut out_leaves, "the state scan's step returns")?;
    if out_tree != *tree {
        return Err(EvalError::shape(format!(
            "the step must return a state of the same structure as the initial state: {} leaves in {}, the initial state has {}",
            out_leaves.len(),
            state_out.short(),
            shapes.len()
        )));
    }
    let mut output_leaves = Vec::new();
    let outputs = flatten(&output, &mut output_leaves, "the outputs of scan's step")?;
    let mut roots: Vec<Id> = out_leaves
        .iter()
        .chain(&output_leaves)
        .map(|v| node_of(&body, v))
        .collect::<EvalResult<_>>()?;
    carried(&body, &mut roots[..shapes.len()], dtypes, "scan's step")?;
    let b = body.borrow();
    for (k, (&root, shape)) in roots.iter().zip(shapes).enumerate() {
        if b.graph.shape(root) != shape {
            return Err(EvalError::shape(format!(
                "the step returned shape {} for state part {k}, which has shape {}",
                show(b.graph.shape(root)),
                show(shape)
            )));
        }
    }
    let output_shapes = roots[shapes.len()..]
        .iter()
        .map(|&r| b.graph.shape(r).clone())
        .collect();
    let captures = captured(&b, shapes.len() + 1 + row_ids.len())?;
    Ok(TracedStep {
        nodes: b.graph.nodes().to_vec(),
        shapes: b.graph.shapes().to_vec(),
        roots,
        outputs,
        output_shapes,
        captures,
    })
}

/// Makes a step's next state of the initial state's number types: a weak
/// leaf (a number) takes the leaf's strong type; a leaf whose strong type
/// changes is refused, naming both types (as JAX does).
fn carried(body: &TraceRef, roots: &mut [Id], dtypes: &[DType], what: &str) -> EvalResult<()> {
    let mut b = body.borrow_mut();
    for (k, (root, &initial)) in roots.iter_mut().zip(dtypes).enumerate() {
        let made = b.graph.dtype(*root);
        match (initial, made) {
            (DType::Weak, _) => {}
            (_, DType::Weak) => *root = b.graph.cast(*root, initial),
            (initial, made) if initial != made => {
                return Err(EvalError::type_error(format!(
                    "{what} makes state part {k} {made} from {initial}: the state keeps its type from step to step (astype the initial value or the step's result)"
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The captured values of a traced body whose captures start at input
/// `first_capture`; refuses a body that looked at values.
pub(super) fn captured(b: &Trace, first_capture: usize) -> EvalResult<Vec<(Origin, Shape)>> {
    if b.inspected {
        return Err(EvalError::type_error(
            "the step looks at the values of its state or of its step index (if, while, a comparison of numbers, printing): it is compiled once for every step, so it cannot branch on them; use where on tensors (a number state can be a one-element tensor), or a Lisp loop",
        ));
    }
    let input_nodes: FxHashMap<usize, Id> = b
        .graph
        .nodes()
        .iter()
        .enumerate()
        .filter_map(|(i, node)| match node.op {
            TOp::Input { index, .. } => Some((index as usize, Id::from(i))),
            _ => None,
        })
        .collect();
    let captures = (first_capture..b.inputs.len())
        .map(|j| {
            let node = input_nodes.get(&j).copied();
            let origin = b
                .outer
                .iter()
                .find(|(_, id)| Some(*id) == node)
                .map_or_else(
                    || {
                        let dtype = match (node, &b.inputs[j]) {
                            (Some(node), _) => b.graph.dtype(node),
                            (None, Buf::Scalar(_)) => DType::Weak,
                            (None, Buf::Array(_)) => DType::F64,
                        };
                        Origin::Known(b.inputs[j].clone(), dtype)
                    },
                    |(value, _)| Origin::Traced(value.clone()),
                );
            (origin, Shape::from(b.inputs[j].shape()))
        })
        .collect();
    Ok(captures)
}

/// The body optimized, from the cache when this program was seen before.
fn optimized_body(
    interp: &mut Interp,
    nodes: &[TNode],
    roots: &[Id],
    limits: Option<TensorLimits>,
) -> Body {
    interp.numeric.driver.loops.body(nodes, roots, limits)
}

/// Records the loop as one node of the enclosing trace; its results (the
/// final state's leaves, then the stacked outputs) are traced values.
fn record(
    outer: &TraceRef,
    spec: &Arc<ScanSpec>,
    leaves: &[Value],
    sequences: &[Value],
    captures: &[(Origin, Shape)],
) -> EvalResult<Vec<Value>> {
    let children: Vec<Id> = leaves
        .iter()
        .chain(sequences)
        .map(|leaf| node_of(outer, leaf))
        .collect::<EvalResult<_>>()?;
    record_nodes(outer, spec, children, captures)
}

/// `record` with the initial state's leaves and the sequences given as
/// nodes.
fn record_nodes(
    outer: &TraceRef,
    spec: &Arc<ScanSpec>,
    mut children: Vec<Id>,
    captures: &[(Origin, Shape)],
) -> EvalResult<Vec<Value>> {
    for (origin, _) in captures {
        children.push(origin.node_in(outer)?);
    }
    let mut trace = outer.borrow_mut();
    let node = trace
        .graph
        .add(TOp::Scan(Arc::clone(spec)), &children)
        .map_err(|e| EvalError::shape(e.0))?;
    let parts = spec.output_parts();
    let mut dtypes = spec.body.root_dtypes().into_iter();
    let ids: Vec<Id> = if spec.ys.is_empty() && parts.len() == 1 {
        vec![node]
    } else {
        let mut offset = 0;
        parts
            .iter()
            .map(|shape| {
                let len: usize = shape.iter().product();
                let slice = TOp::Slice {
                    axis: 0,
                    start: offset,
                    end: offset + len,
                };
                offset += len;
                let piece = trace.graph.add_valid(slice, &[node]);
                let piece = trace.graph.reshape(piece, shape);
                // Each part has its own type (the pack holds them all).
                let dtype = dtypes.next().unwrap_or_default();
                trace.graph.cast(piece, dtype)
            })
            .collect()
    };
    drop(trace);
    Ok(ids.into_iter().map(|id| traced(outer, id)).collect())
}

/// Runs the loop now (no enclosing trace): compiled once per loop, then
/// the body `n` times.
fn run_now(
    interp: &mut Interp,
    spec: &Arc<ScanSpec>,
    leaves: &[Value],
    sequences: &[Value],
    captures: &[(Origin, Shape)],
) -> EvalResult<Vec<Value>> {
    let mut args: Vec<Buf> = leaves
        .iter()
        .chain(sequences)
        .map(value_to_buf)
        .collect::<EvalResult<_>>()?;
    for (origin, _) in captures {
        match origin {
            Origin::Known(buf, _) => args.push(buf.clone()),
            Origin::Traced(_) | Origin::Constant(_) => {
                unreachable!("no enclosing trace to capture from")
            }
        }
    }
    let tapes = compiled_loop(interp, spec);
    crate::backends::preflight::check_loop(&tapes).map_err(crate::lisp::sites::eval_error)?;
    let result = with_cancel(interp.interrupt_flag(), || run_loop(&tapes, &args));
    interp.check_interrupt()?;
    let result = result.map_err(crate::lisp::sites::eval_error)?;
    Ok(unpack(
        result,
        &spec.output_parts(),
        &spec.body.root_dtypes(),
    ))
}

/// The loop compiled, from the cache when an equal loop was compiled.
fn compiled_loop(interp: &mut Interp, spec: &Arc<ScanSpec>) -> Rc<LoopTapes> {
    interp.numeric.driver.loops.compiled(spec)
}

/// A loop's result split into the state's leaves.
fn unpack(result: Buf, shapes: &[Shape], dtypes: &[DType]) -> Vec<Value> {
    crate::backends::cpu::unpack(&result, shapes)
        .into_iter()
        .zip(dtypes)
        .map(|(buf, &dtype)| typed_value(buf, dtype))
        .collect()
}

pub(super) fn zeros(shape: &[usize]) -> Buf {
    if shape.is_empty() {
        Buf::Scalar(0.0)
    } else {
        Buf::from_array(Rc::new(ArrayD::zeros(IxDyn(shape))))
    }
}

//! `(scan step init n)`: the step is traced once, on placeholder states,
//! into a body program (`egraph::tensor::scan`), optimized once and
//! compiled once; the loop then runs the compiled body `n` times.
//!
//! Inside a traced function the loop is one node of the enclosing program,
//! whose reverse runs the body's reverse under a checkpoint schedule. The
//! step may read values from outside (tensors, numbers, traced values of
//! the enclosing function): they become the body's captured inputs, and
//! traced ones receive gradients summed over the steps.

use super::tree::{Tree, flatten, rebuild_in_order};
use crate::backends::cpu::cancel::with_cancel;
use crate::backends::cpu::{Buf, run_loop};
use crate::egraph::tensor::optimize::TensorLimits;
use crate::egraph::tensor::scan::{Body, ScanSpec, Strategy};
use crate::egraph::tensor::shape::show;
use crate::egraph::tensor::{Shape, TNode, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::trace::{Trace, TraceRef, buf_to_value, node_of, traced, value_to_buf};
use crate::lisp::value::Value;
use crate::tape::scan::LoopTapes;
use egg::Id;
use ndarray::{ArrayD, IxDyn};
use rustc_hash::{FxHashMap, FxHasher};
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;

/// Loop bodies and compiled loops kept per session (each cache is emptied
/// when it grows past this).
const MAX_CACHED_LOOPS: usize = 256;

/// Caches of optimized bodies (by the traced step's program) and of
/// compiled loops (by the loop), so a loop traced again is not optimized or
/// compiled again.
#[derive(Default)]
pub struct LoopCache {
    bodies: FxHashMap<u64, Vec<CachedBody>>,
    compiled: FxHashMap<u64, Vec<CachedLoop>>,
}

/// A traced step's program and roots, with its optimized body.
type CachedBody = (Vec<TNode>, Vec<Id>, Body);

/// A loop with its compiled tapes.
type CachedLoop = (Arc<ScanSpec>, Rc<LoopTapes>);

/// Where a captured value comes from.
enum Origin {
    /// A traced value of an enclosing trace.
    Traced(Value),
    /// A tensor or number known now.
    Known(Buf),
}

/// Runs `(scan step init n)` with `strategy` for its reverse.
pub fn scan(
    interp: &mut Interp,
    step: &Value,
    init: &Value,
    n: usize,
    strategy: Strategy,
) -> EvalResult<Value> {
    let mut leaves = Vec::new();
    let tree = flatten(init, &mut leaves, "the state of scan")?;
    if n == 0 {
        return Ok(init.clone());
    }
    let shapes: Vec<Shape> = leaves.iter().map(leaf_shape).collect();
    let outer = interp.numeric.trace.clone();
    let (body, captures) = trace_step(interp, step, &tree, &shapes, outer.clone())?;
    let limits = TensorLimits::for_level(interp.symbolic.level);
    let body = optimized_body(interp, &body.0, &body.1, limits);
    let differentiable = captures
        .iter()
        .map(|(origin, _)| matches!(origin, Origin::Traced(_)))
        .collect();
    let capture_shapes = captures.iter().map(|(_, s)| s.clone()).collect();
    let spec = Arc::new(ScanSpec::new(
        body,
        shapes.clone(),
        capture_shapes,
        differentiable,
        n,
        strategy,
        limits,
    ));
    let results = match &outer {
        Some(outer) => record(outer, &spec, &leaves, &captures, &shapes)?,
        None => run_now(interp, &spec, &leaves, &captures, &shapes)?,
    };
    Ok(rebuild_in_order(&tree, &mut results.into_iter()))
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
        .map(|shape| body.borrow_mut().add_input(zeros(shape)))
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
            TOp::Input { index, shape } if *index as usize >= arguments => TNode::new(
                TOp::Input {
                    index: index + results_count as u32,
                    shape: shape.clone(),
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
            .map(|(origin, _)| matches!(origin, Origin::Traced(_)))
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
    let outputs = record_nodes(&outer, &spec, state, &captures, &state_shapes)?;
    Ok(rebuild_in_order(
        &result_tree,
        &mut outputs.into_iter().skip(arguments),
    ))
}

/// The shape of a state leaf.
fn leaf_shape(leaf: &Value) -> Shape {
    match leaf {
        Value::Tensor(t) => t.shape().into(),
        Value::Traced(t) => t.shape.clone(),
        _ => Shape::new(),
    }
}

/// Traces `step` on placeholder states of `shapes` and a traced index:
/// the body's program and roots, and its captured values with their
/// shapes.
#[allow(clippy::type_complexity)]
fn trace_step(
    interp: &mut Interp,
    step: &Value,
    tree: &Tree,
    shapes: &[Shape],
    outer: Option<TraceRef>,
) -> EvalResult<((Vec<TNode>, Vec<Id>), Vec<(Origin, Shape)>)> {
    let body: TraceRef = Rc::new(RefCell::new(Trace::loop_body(outer)));
    let state_ids: Vec<Id> = shapes
        .iter()
        .map(|shape| body.borrow_mut().add_input(zeros(shape)))
        .collect();
    let index_id = body.borrow_mut().add_input(Buf::Scalar(0.0));
    let state = rebuild_in_order(tree, &mut state_ids.iter().map(|&id| traced(&body, id)));
    let index = traced(&body, index_id);
    let saved = interp.numeric.trace.replace(Rc::clone(&body));
    let result = interp.apply(step, vec![state, index]);
    interp.numeric.trace = saved;
    let result = result?;
    let mut out_leaves = Vec::new();
    let out_tree = flatten(&result, &mut out_leaves, "the state scan's step returns")?;
    if out_tree != *tree {
        return Err(EvalError::shape(
            "the step must return a state of the same structure as the initial state",
        ));
    }
    let roots: Vec<Id> = out_leaves
        .iter()
        .map(|v| node_of(&body, v))
        .collect::<EvalResult<_>>()?;
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
    let captures = captured(&b, shapes.len() + 1)?;
    Ok(((b.graph.nodes().to_vec(), roots), captures))
}

/// The captured values of a traced body whose captures start at input
/// `first_capture`; refuses a body that looked at values.
fn captured(b: &Trace, first_capture: usize) -> EvalResult<Vec<(Origin, Shape)>> {
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
                    || Origin::Known(b.inputs[j].clone()),
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
    let mut hasher = FxHasher::default();
    nodes.hash(&mut hasher);
    roots.hash(&mut hasher);
    let key = hasher.finish();
    let cache = &mut interp.numeric.loops;
    if let Some(entries) = cache.bodies.get(&key)
        && let Some((_, _, body)) = entries
            .iter()
            .find(|(n, r, _)| n[..] == *nodes && r[..] == *roots)
    {
        return body.clone();
    }
    let body = Body::optimized(nodes, roots, limits);
    if cache.bodies.len() >= MAX_CACHED_LOOPS {
        cache.bodies.clear();
    }
    cache
        .bodies
        .entry(key)
        .or_default()
        .push((nodes.to_vec(), roots.to_vec(), body.clone()));
    body
}

/// Records the loop as one node of the enclosing trace; its results (the
/// final state's leaves) are traced values.
fn record(
    outer: &TraceRef,
    spec: &Arc<ScanSpec>,
    leaves: &[Value],
    captures: &[(Origin, Shape)],
    shapes: &[Shape],
) -> EvalResult<Vec<Value>> {
    let leaves: Vec<Id> = leaves
        .iter()
        .map(|leaf| node_of(outer, leaf))
        .collect::<EvalResult<_>>()?;
    record_nodes(outer, spec, leaves, captures, shapes)
}

/// `record` with the initial state's leaves given as nodes.
fn record_nodes(
    outer: &TraceRef,
    spec: &Arc<ScanSpec>,
    mut children: Vec<Id>,
    captures: &[(Origin, Shape)],
    shapes: &[Shape],
) -> EvalResult<Vec<Value>> {
    for (origin, _) in captures {
        children.push(match origin {
            Origin::Traced(value) => node_of(outer, value)?,
            Origin::Known(buf) => node_of(outer, &buf_to_value(buf.clone()))?,
        });
    }
    let mut trace = outer.borrow_mut();
    let node = trace
        .graph
        .add(TOp::Scan(Arc::clone(spec)), &children)
        .map_err(|e| EvalError::shape(e.0))?;
    let ids: Vec<Id> = if shapes.len() == 1 {
        vec![node]
    } else {
        let mut offset = 0;
        shapes
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
                trace.graph.reshape(piece, shape)
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
    captures: &[(Origin, Shape)],
    shapes: &[Shape],
) -> EvalResult<Vec<Value>> {
    let mut args: Vec<Buf> = leaves.iter().map(value_to_buf).collect::<EvalResult<_>>()?;
    for (origin, _) in captures {
        match origin {
            Origin::Known(buf) => args.push(buf.clone()),
            Origin::Traced(_) => unreachable!("no enclosing trace to capture from"),
        }
    }
    let tapes = compiled_loop(interp, spec);
    let result = with_cancel(interp.interrupt_flag(), || run_loop(&tapes, &args));
    interp.check_interrupt()?;
    let result = result.map_err(crate::lisp::sites::eval_error)?;
    Ok(unpack(result, shapes))
}

/// The loop compiled, from the cache when an equal loop was compiled.
fn compiled_loop(interp: &mut Interp, spec: &Arc<ScanSpec>) -> Rc<LoopTapes> {
    let mut hasher = FxHasher::default();
    spec.hash(&mut hasher);
    let key = hasher.finish();
    let cache = &mut interp.numeric.loops;
    if let Some(entries) = cache.compiled.get(&key)
        && let Some((_, tapes)) = entries.iter().find(|(s, _)| s == spec)
    {
        return Rc::clone(tapes);
    }
    let tapes = Rc::new(LoopTapes::new(spec, false));
    if cache.compiled.len() >= MAX_CACHED_LOOPS {
        cache.compiled.clear();
    }
    cache
        .compiled
        .entry(key)
        .or_default()
        .push((Arc::clone(spec), Rc::clone(&tapes)));
    tapes
}

/// A loop's result split into the state's leaves.
fn unpack(result: Buf, shapes: &[Shape]) -> Vec<Value> {
    crate::backends::cpu::unpack(&result, shapes)
        .into_iter()
        .map(buf_to_value)
        .collect()
}

fn zeros(shape: &[usize]) -> Buf {
    if shape.is_empty() {
        Buf::Scalar(0.0)
    } else {
        Buf::from_array(Rc::new(ArrayD::zeros(IxDyn(shape))))
    }
}

//! Tracing: while a differentiation form (`grad`, `jit`, ...) runs a Lisp
//! function, its arguments are `Traced` values. Each differentiable
//! built-in called on one records its operation, with its shape, into the
//! trace's `TensorGraph` instead of computing it (`ops.rs`).
//!
//! Control flow follows concrete values: when a branch, a comparison of
//! scalars or a printout needs a traced value's number, the trace computes
//! it (and what it depends on) with the CPU kernels and remembers it. A
//! function without such inspection is only recorded, never run, during
//! tracing.

pub(crate) mod ops;

use super::error::{EvalError, EvalResult};
use super::value::Value;
use crate::backends::cpu::{Buf, eval_op};
use crate::dtype::DType;
use crate::ir::flat::{FlatScalars, is_flat};
use crate::ir::{Shape, ShapeError, TOp, TensorGraph};
use egg::Id;
use ndarray::ArrayD;
use std::cell::RefCell;
use std::rc::Rc;

/// The state of one trace: the recorded program, the concrete inputs, and
/// the values computed so far.
#[derive(Default)]
pub struct Trace {
    /// The recorded program.
    pub graph: TensorGraph,
    /// Scalar operations recorded without hashing while `flat_recording`
    /// is on (ids past `flat::FLAT_BASE`), entering `graph` only when
    /// something needs them there (`graph_node`).
    pub flat: FlatScalars,
    /// Whether scalar operations go to `flat` (a top-level request's
    /// trace, without `debug-nans`).
    pub flat_recording: bool,
    /// Concrete values of the program's inputs, by input index.
    pub inputs: Vec<Buf>,
    /// Tensors captured as inputs, by address (one input per tensor).
    captured: Vec<(*const (), Id)>,
    /// The f32 tensors captured (widened for the tape): kept so their
    /// addresses stay theirs while the trace lives.
    captured32: Vec<Rc<ArrayD<f32>>>,
    /// Concrete values computed so far, by node.
    values: Vec<Option<Buf>>,
    /// For a loop body (`scan`): the trace the loop runs in, whose traced
    /// values the body captures as inputs.
    pub parent: Option<TraceRef>,
    /// For a loop body: the enclosing traced values captured, with their
    /// input nodes here.
    pub outer: Vec<(Value, Id)>,
    /// For a loop body: whether something looked at a value (a branch, a
    /// comparison of numbers, printing), which a body compiled once for
    /// every step cannot do.
    pub inspected: bool,
    /// Whether this trace records a loop body.
    pub loop_body: bool,
    /// While a `while-loop`'s condition is traced: comparisons of numbers
    /// are recorded (a number, 1 or 0) instead of compared now, and a
    /// test of a recorded value (if, and, or, cond) is an error.
    pub record_comparisons: bool,
    /// The sweeps the requests under way will run over this trace (a
    /// nested request adds its own while its function runs): a custom
    /// rule is traced only for a mode that may need it.
    pub modes: crate::ad::reverse::Modes,
    /// Under `(debug-nans #t)`: the built-in call (its span and name)
    /// that recorded each node, by node.
    pub sources: Vec<Option<(crate::reader::Span, &'static str)>>,
}

/// A shared, growing trace.
pub type TraceRef = Rc<RefCell<Trace>>;

/// A value inside a traced function: a node of the active trace.
pub struct Traced {
    /// The trace it belongs to.
    pub trace: TraceRef,
    /// Its node.
    pub id: Id,
    /// Its shape.
    pub shape: Shape,
    /// Its number type.
    pub dtype: DType,
}

impl Trace {
    /// A trace for a loop body run inside `parent` (if any).
    pub fn loop_body(parent: Option<TraceRef>) -> Trace {
        let modes = parent
            .as_ref()
            .map(|p| p.borrow().modes)
            .unwrap_or_default();
        Trace {
            parent,
            modes,
            loop_body: true,
            ..Trace::default()
        }
    }

    /// A new run-time input holding `value` (a weak number, or an f64
    /// tensor).
    pub fn add_input(&mut self, value: Buf) -> Id {
        let dtype = match value {
            Buf::Scalar(_) => DType::Weak,
            Buf::Array(_) => DType::F64,
        };
        self.add_typed_input(value, dtype)
    }

    /// A new run-time input holding `value`, of type `dtype` (an f32 value
    /// is held widened).
    pub fn add_typed_input(&mut self, value: Buf, dtype: DType) -> Id {
        self.flush();
        let index = self.inputs.len() as u32;
        let id = self.graph.input(index, value.shape(), dtype);
        self.inputs.push(value);
        id
    }

    /// A new run-time input for a Lisp value (a number, a tensor of
    /// either type, or a traced value's number).
    pub fn add_value_input(&mut self, value: &Value) -> EvalResult<Id> {
        let buf = value_to_buf(value)?;
        let dtype = match value {
            Value::Int(_) | Value::Float(_) => DType::Weak,
            Value::Traced(t) => t.dtype,
            other => value_dtype(other),
        };
        Ok(self.add_typed_input(buf, dtype))
    }

    /// The node of a tensor captured from outside the traced function (one
    /// input per distinct tensor).
    pub fn capture(&mut self, tensor: &Rc<ArrayD<f64>>) -> Id {
        let address = Rc::as_ptr(tensor) as *const ();
        if let Some(&(_, id)) = self.captured.iter().find(|(a, _)| *a == address) {
            return id;
        }
        let id = self.add_input(Buf::Array(Rc::clone(tensor)));
        self.captured.push((address, id));
        id
    }

    /// The node of an f32 tensor captured from outside the traced function
    /// (one input per distinct tensor).
    pub fn capture32(&mut self, tensor: &Rc<ArrayD<f32>>) -> Id {
        let address = Rc::as_ptr(tensor) as *const ();
        if let Some(&(_, id)) = self.captured.iter().find(|(a, _)| *a == address) {
            return id;
        }
        let widened = Buf::from_array(Rc::new(crate::dtype::widen(tensor)));
        let id = self.add_typed_input(widened, DType::F32);
        self.captured.push((address, id));
        self.captured32.push(Rc::clone(tensor));
        id
    }

    /// The node of a number: a constant, or an input when not finite.
    pub fn number(&mut self, x: f64) -> Id {
        if let Some(id) = self.graph.find_scalar(x) {
            return id;
        }
        self.flush();
        match self.graph.scalar(x) {
            Some(id) => id,
            None => self.add_input(Buf::Scalar(x)),
        }
    }

    /// The graph node of `id` (a graph node, or a step of `flat`, which
    /// enters the graph with the steps before it).
    pub fn graph_node(&mut self, id: Id) -> Result<Id, ShapeError> {
        self.flat.flush(&mut self.graph)?;
        self.flat.materialize(&mut self.graph, id)
    }

    /// Brings the flat arena's pending steps into the graph before a node
    /// is added there some other way (`FlatScalars::flush`).
    pub(crate) fn flush(&mut self) {
        // Flat steps are scalar operators over scalars: they always fit.
        let flushed = self.flat.flush(&mut self.graph);
        debug_assert!(flushed.is_ok(), "flat steps fit");
    }

    /// The shape of `id` (a graph node or a flat step).
    pub fn shape_of(&self, id: Id) -> Shape {
        match is_flat(id) {
            true => Shape::new(),
            false => self.graph.shape(id).clone(),
        }
    }

    /// The number type of `id` (a graph node or a flat step).
    pub fn dtype_of(&self, id: Id) -> DType {
        match is_flat(id) {
            true => self.flat.dtype(id),
            false => self.graph.dtype(id),
        }
    }

    /// The concrete value of node `id`, computing what it needs (an
    /// operation may refuse its values: a singular matrix, say).
    pub fn concrete(&mut self, id: Id) -> Result<Buf, crate::backends::BackendError> {
        let id = self
            .graph_node(id)
            .map_err(|e| crate::backends::BackendError::new(e.0))?;
        self.inspected = true;
        let mut values = std::mem::take(&mut self.values);
        if values.len() < self.graph.len() {
            values.resize(self.graph.len(), None);
        }
        let result = self.evaluate(&mut vec![id], &mut values, false);
        self.values = values;
        result.map_err(|failure| match failure {
            CheckFailure::Backend(error) => error,
            CheckFailure::NonFinite { .. } => unreachable!("values are not checked here"),
        })?;
        self.values[usize::from(id)]
            .clone()
            .ok_or_else(|| crate::backends::BackendError::new("internal: a value was not computed"))
    }
}

/// Why a checked evaluation stopped.
pub enum CheckFailure {
    /// An operation refused its values (a singular matrix, say).
    Backend(crate::backends::BackendError),
    /// Node `node` made `value` (a NaN or an infinity) from finite
    /// operands.
    NonFinite {
        /// The node.
        node: Id,
        /// Its first non-finite element.
        value: f64,
    },
}

/// The first non-finite number of a value, if any.
pub fn first_non_finite(buf: &Buf) -> Option<f64> {
    match buf {
        Buf::Scalar(x) => (!x.is_finite()).then_some(*x),
        Buf::Array(a) => a.iter().copied().find(|x| !x.is_finite()),
    }
}

impl Trace {
    /// The values of `roots`, computed node by node on the CPU with each
    /// result checked (`debug-nans`): the first operation that makes a
    /// NaN or an infinity from finite operands stops the evaluation.
    /// Values an alias passes on (a stop-gradient, a call with its own
    /// rule) are their operand's.
    pub fn checked_values(&self, roots: &[Id]) -> Result<Vec<Buf>, CheckFailure> {
        let mut values: Vec<Option<Buf>> = vec![None; self.graph.len()];
        // One root after another, in order.
        let mut stack: Vec<Id> = Vec::new();
        for &root in roots {
            stack.push(root);
            self.evaluate(&mut stack, &mut values, true)?;
        }
        Ok(roots
            .iter()
            .map(|&r| values[usize::from(r)].clone().expect("computed above"))
            .collect())
    }

    /// Computes the values the nodes on `stack` need into `values`; with
    /// `check`, a node that makes a NaN or an infinity from finite
    /// operands stops it. A call with declared partials or rules is its
    /// value (its partials and rules are not computed); a placeholder has
    /// no value.
    fn evaluate(
        &self,
        stack: &mut Vec<Id>,
        values: &mut [Option<Buf>],
        check: bool,
    ) -> Result<(), CheckFailure> {
        while let Some(&top) = stack.last() {
            if values[usize::from(top)].is_some() {
                stack.pop();
                continue;
            }
            let mut node = self.graph.node(top).clone();
            if matches!(node.op, TOp::Linearized | TOp::Custom(_)) {
                node.children.truncate(1);
            }
            if let TOp::Placeholder { .. } = node.op {
                return Err(CheckFailure::Backend(crate::backends::BackendError::new(
                    "a derivative rule looked at the values of its cotangent or tangent (a branch, a comparison or a printout); a rule must work for any of them",
                )));
            }
            let missing: Vec<Id> = node
                .children
                .iter()
                .copied()
                .filter(|&c| values[usize::from(c)].is_none())
                .collect();
            if !missing.is_empty() {
                stack.extend(missing);
                continue;
            }
            let value = match &node.op {
                TOp::Input { index, .. } => self.inputs[*index as usize].clone(),
                op => {
                    let args: Vec<&Buf> = node
                        .children
                        .iter()
                        .map(|&c| values[usize::from(c)].as_ref().expect("computed above"))
                        .collect();
                    let value = eval_op(op, &args, self.graph.shape(top))
                        .unwrap_or_else(|| {
                            Err(crate::backends::BackendError::new(
                                "internal: an input without its value",
                            ))
                        })
                        .map_err(CheckFailure::Backend)?;
                    // An f32 operation is its f64 result rounded once.
                    let value = match self.graph.dtype(top) {
                        DType::F32 => round_buf(value),
                        _ => value,
                    };
                    if check
                        && args.iter().all(|a| first_non_finite(a).is_none())
                        && let Some(bad) = first_non_finite(&value)
                    {
                        return Err(CheckFailure::NonFinite {
                            node: top,
                            value: bad,
                        });
                    }
                    value
                }
            };
            values[usize::from(top)] = Some(value);
            stack.pop();
        }
        Ok(())
    }
}

impl Traced {
    /// The value as a Lisp value, computing it if needed.
    pub fn concrete_value(&self) -> EvalResult<Value> {
        let computed = self.trace.borrow_mut().concrete(self.id);
        computed
            .map(|buf| typed_value(buf, self.dtype))
            .map_err(crate::lisp::sites::eval_error)
    }

    /// Whether it is a scalar.
    pub fn is_scalar(&self) -> bool {
        self.shape.is_empty()
    }
}

/// A CPU buffer as a Lisp value (0-dimensional values are floats).
pub fn buf_to_value(buf: Buf) -> Value {
    match buf {
        Buf::Scalar(x) => Value::Float(x),
        Buf::Array(a) => Value::Tensor(a),
    }
}

/// A CPU buffer as a Lisp value of type `dtype`: an f32 result is
/// narrowed (its values are f32 numbers already); 0-dimensional values
/// are floats.
pub fn typed_value(buf: Buf, dtype: DType) -> Value {
    match (buf, dtype) {
        (Buf::Array(a), DType::F32) => Value::TensorF32(Rc::new(crate::dtype::narrow(&a))),
        (Buf::Scalar(x), DType::F32) => Value::Float(crate::dtype::round32(x)),
        (buf, _) => buf_to_value(buf),
    }
}

/// Every element of `buf` rounded to f32.
pub fn round_buf(buf: Buf) -> Buf {
    match buf {
        Buf::Scalar(x) => Buf::Scalar(crate::dtype::round32(x)),
        Buf::Array(a) => {
            let mut owned = Rc::try_unwrap(a).unwrap_or_else(|shared| (*shared).clone());
            owned.mapv_inplace(crate::dtype::round32);
            Buf::Array(Rc::new(owned))
        }
    }
}

/// The number type of a Lisp value: f32 or f64 for tensors, weak for
/// numbers and anything else.
pub fn value_dtype(value: &Value) -> DType {
    match value {
        Value::Tensor(_) => DType::F64,
        Value::TensorF32(_) => DType::F32,
        Value::Traced(t) => t.dtype,
        _ => DType::Weak,
    }
}

/// A Lisp number or tensor as a CPU buffer (an f32 tensor widened).
pub fn value_to_buf(value: &Value) -> EvalResult<Buf> {
    match value {
        Value::Int(n) => Ok(Buf::Scalar(*n as f64)),
        Value::Float(x) => Ok(Buf::Scalar(*x)),
        Value::Tensor(t) => Ok(Buf::from_array(Rc::clone(t))),
        Value::TensorF32(t) => Ok(Buf::from_array(Rc::new(crate::dtype::widen(t)))),
        Value::Traced(t) => {
            let computed = t.trace.borrow_mut().concrete(t.id);
            computed.map_err(crate::lisp::sites::eval_error)
        }
        other => Err(EvalError::type_error(format!(
            "expected a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// Whether `outer` is a trace that `inner` (a loop body) runs inside.
fn encloses(outer: &TraceRef, inner: &TraceRef) -> bool {
    encloses_from(outer, inner.borrow().parent.clone())
}

/// Whether `outer` is `parent` or a trace `parent` runs inside.
fn encloses_from(outer: &TraceRef, parent: Option<TraceRef>) -> bool {
    let mut current = parent;
    while let Some(trace) = current {
        if Rc::ptr_eq(&trace, outer) {
            return true;
        }
        current = trace.borrow().parent.clone();
    }
    false
}

/// The input node of a loop body for a traced value of an enclosing trace
/// (one input per value). Its concrete value is a placeholder of zeros: a
/// body that looks at values is refused.
fn capture_outer(trace: &TraceRef, value: &Value, shape: &Shape) -> Id {
    capture_outer_in(&mut trace.borrow_mut(), value, shape)
}

fn capture_outer_in(body: &mut Trace, value: &Value, shape: &Shape) -> Id {
    let Value::Traced(traced) = value else {
        unreachable!("only traced values are captured from outside")
    };
    let found = body.outer.iter().find(|(v, _)| match v {
        Value::Traced(t) => Rc::ptr_eq(t, traced),
        _ => false,
    });
    if let Some(&(_, id)) = found {
        return id;
    }
    let placeholder = if shape.is_empty() {
        Buf::Scalar(0.0)
    } else {
        Buf::from_array(Rc::new(ArrayD::zeros(ndarray::IxDyn(shape))))
    };
    let id = body.add_typed_input(placeholder, traced.dtype);
    body.outer.push((value.clone(), id));
    id
}

impl Trace {
    /// The node, in this trace (already borrowed), of a traced value of an
    /// enclosing trace: captured as an input, as `node_of` would.
    pub fn capture_enclosing(&mut self, value: &Value) -> Option<Id> {
        let Value::Traced(t) = value else {
            return None;
        };
        if !encloses_from(&t.trace, self.parent.clone()) {
            return None;
        }
        let shape = t.shape.clone();
        Some(capture_outer_in(self, value, &shape))
    }
}

/// The value of node `id` of `trace`: a number for a scalar constant, a
/// `Traced` otherwise.
pub fn traced(trace: &TraceRef, id: Id) -> Value {
    let borrowed = trace.borrow();
    if !is_flat(id)
        && let Some(x) = borrowed.graph.constant(id)
    {
        return Value::Float(x);
    }
    let shape = borrowed.shape_of(id);
    let dtype = borrowed.dtype_of(id);
    drop(borrowed);
    Value::Traced(Rc::new(Traced {
        trace: Rc::clone(trace),
        id,
        shape,
        dtype,
    }))
}

/// The node of `value` in `trace`: traced values of this trace as they
/// are, numbers as constants, tensors as captured inputs.
pub fn node_of(trace: &TraceRef, value: &Value) -> EvalResult<Id> {
    match value {
        Value::Traced(t) if Rc::ptr_eq(&t.trace, trace) => trace
            .borrow_mut()
            .graph_node(t.id)
            .map_err(|e| EvalError::shape(e.0)),
        Value::Traced(t) if encloses(&t.trace, trace) => Ok(capture_outer(trace, value, &t.shape)),
        Value::Traced(_) => Err(EvalError::type_error(
            "a traced value escaped the function being differentiated (was it stored in a global?)",
        )),
        Value::Int(n) => Ok(trace.borrow_mut().number(*n as f64)),
        Value::Float(x) => Ok(trace.borrow_mut().number(*x)),
        Value::Tensor(t) => Ok(trace.borrow_mut().capture(t)),
        Value::TensorF32(t) => Ok(trace.borrow_mut().capture32(t)),
        other => Err(EvalError::type_error(format!(
            "expected a number or tensor, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

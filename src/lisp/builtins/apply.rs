//! Tensor operations applied to Lisp values, the one way the built-ins of
//! the operation table (`crate::ir::ops`) compute: inside a traced function,
//! when an operand is traced, the operation is recorded; otherwise it runs
//! at once on the CPU with the same kernel a tape would use. A built-in is
//! therefore written once, as operations over its arguments, and works
//! the same eagerly, under `grad`, `jvp`, `jit` and in `scan` bodies.

use crate::backends::cpu::{Buf, eval_op};
use crate::ir::ops::{Op, Site};
use crate::ir::shape::infer;
use crate::ir::{Shape, TOp};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::tensor::check_allocation;
use crate::lisp::trace::{TraceRef, buf_to_value, node_of, traced, value_to_buf};
use crate::lisp::value::Value;
use crate::reader::Span;
use smallvec::SmallVec;
use std::rc::Rc;

/// `message` without the table operation's name in front (the evaluator
/// puts the built-in's name there).
fn without_name(op: &TOp, message: String) -> String {
    match op {
        TOp::Op(table) => match message.strip_prefix(&format!("{}: ", table.name())) {
            Some(rest) => rest.to_string(),
            None => message,
        },
        _ => message,
    }
}

/// A shape error of `op`.
fn shape_error(op: &TOp, message: String) -> EvalError {
    EvalError::shape(without_name(op, message))
}

/// Applies operations for one built-in call.
pub struct Apply {
    trace: Option<TraceRef>,
    span: Span,
}

impl Apply {
    /// For a call of `interp`'s current built-in on `args`: recording when
    /// one of them is traced (inside a traced function).
    pub fn new(interp: &Interp, args: &[Value]) -> Apply {
        let traced = args.iter().any(crate::lisp::trace::ops::involves_traced);
        Apply {
            trace: if traced {
                interp.numeric.trace.clone()
            } else {
                None
            },
            span: interp.call_span,
        }
    }

    /// Where the built-in was called, for operations whose kernels can
    /// fail at run time.
    pub fn site(&self) -> Site {
        crate::lisp::sites::site(self.span)
    }

    /// The shape of a number, tensor or traced value.
    pub fn shape(&self, value: &Value) -> EvalResult<Shape> {
        match value {
            Value::Int(_) | Value::Float(_) => Ok(Shape::new()),
            Value::Tensor(t) => Ok(SmallVec::from_slice(t.shape())),
            Value::TensorF32(t) => Ok(SmallVec::from_slice(t.shape())),
            Value::Traced(t) => Ok(t.shape.clone()),
            other => Err(EvalError::type_error(format!(
                "expected a number or tensor, got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// `op` over `operands`: recorded or computed.
    pub fn op(&self, op: TOp, operands: &[&Value]) -> EvalResult<Value> {
        match &self.trace {
            Some(trace) => {
                let ids = operands
                    .iter()
                    .map(|v| node_of(trace, v))
                    .collect::<EvalResult<SmallVec<[_; 4]>>>()?;
                let added = trace.borrow_mut().graph.add(op.clone(), &ids);
                let id = added.map_err(|e| shape_error(&op, e.0))?;
                let shape = trace.borrow().graph.shape(id).clone();
                check_allocation(&shape)?;
                Ok(traced(trace, id))
            }
            None => {
                let bufs = operands
                    .iter()
                    .map(|v| value_to_buf(v))
                    .collect::<EvalResult<SmallVec<[Buf; 4]>>>()?;
                let shapes: SmallVec<[&[usize]; 4]> = bufs.iter().map(Buf::shape).collect();
                let shape = infer(&op, &shapes).map_err(|e| shape_error(&op, e.0))?;
                check_allocation(&shape)?;
                let refs: SmallVec<[&Buf; 4]> = bufs.iter().collect();
                match eval_op(&op, &refs, &shape) {
                    Some(Ok(buf)) => Ok(buf_to_value(buf)),
                    Some(Err(error)) => Err(EvalError::range(without_name(&op, error.message))),
                    None => Err(EvalError::type_error("an input is not an operation")),
                }
            }
        }
    }

    /// An operation of the table over `operands`.
    pub fn table(&self, op: Op, operands: &[&Value]) -> EvalResult<Value> {
        self.op(TOp::Op(op), operands)
    }

    /// A tensor of the numbers of `value` (a list of numbers, a number or
    /// a tensor, traced or not), for index arguments.
    pub fn tensor_of(&self, value: &Value) -> EvalResult<Value> {
        match value {
            Value::Tensor(_)
            | Value::TensorF32(_)
            | Value::Traced(_)
            | Value::Int(_)
            | Value::Float(_) => Ok(value.clone()),
            Value::Nil | Value::Pair(_) => {
                let items = value.list_to_vec()?;
                let numbers = items
                    .iter()
                    .map(Value::as_f64)
                    .collect::<EvalResult<Vec<f64>>>()?;
                let len = numbers.len();
                let array = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[len]), numbers)
                    .map_err(|e| EvalError::shape(e.to_string()))?;
                Ok(Value::Tensor(Rc::new(array)))
            }
            other => Err(EvalError::type_error(format!(
                "expected indices (a list or tensor of whole numbers), got {} {}",
                other.type_name(),
                other.short()
            ))),
        }
    }

    /// The number `x` as a value.
    pub fn number(x: f64) -> Value {
        Value::Float(x)
    }

    /// Whether operations are recorded (an argument is traced) rather
    /// than computed at once.
    pub fn records(&self) -> bool {
        self.trace.is_some()
    }
}

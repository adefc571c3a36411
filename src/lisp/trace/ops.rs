//! Built-ins on traced values: each differentiable built-in of SPEC
//! section 3 records its operation in the trace. Arguments are parsed as
//! the eager built-in parses them; shape errors are reported like the
//! eager ones.

use super::{TraceRef, node_of, traced};
use crate::dtype::DType;
use crate::ir::flat::is_flat;
use crate::ir::math::language::Math;
use crate::ir::op::map_op;
use crate::ir::ops::Op;
use crate::ir::ops::reduction::LogSumExp;
use crate::ir::{CmpOp, ReduceOp, RoundOp, Shape, TOp};
use crate::lisp::builtins::reduce::{keepdims, reduced_axes};
use crate::lisp::builtins::tensor_make::resolve_shape;
use crate::lisp::builtins::tensor_ops::bound;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::procedure::Args;
use crate::lisp::tensor::normalize_axis;
use crate::lisp::value::Value;
use egg::Id;
use smallvec::SmallVec;
use std::rc::Rc;

/// Built-ins whose result is a plain value computed from the numbers of
/// their arguments, not an operation to record: an index into a tensor
/// (`argmax` over all elements gives an integer, as outside a trace). They
/// run on the arguments' values; the numbers they give become constants
/// of the trace (a new value traces again).
pub fn reads_values(name: &str, args: &Args) -> bool {
    matches!(name, "argmax" | "argmin") && args.option("axis").is_none()
}

/// The arguments with traced values replaced by their numbers.
pub fn concrete_args(args: &[Value]) -> EvalResult<Vec<Value>> {
    args.iter()
        .map(|value| match value {
            Value::Traced(t) => t.concrete_value(),
            other => Ok(other.clone()),
        })
        .collect()
}

/// Whether `value` (or, for a list, one of its elements) is traced.
pub fn involves_traced(value: &Value) -> bool {
    match value {
        Value::Traced(_) => true,
        Value::Complex(z) => involves_traced(&z.re) || involves_traced(&z.im),
        Value::Pair(_) => value.iter().any(|(item, _)| match item {
            Value::Traced(_) => true,
            Value::Complex(z) => involves_traced(&z.re) || involves_traced(&z.im),
            _ => false,
        }),
        _ => false,
    }
}

struct Recorder<'a> {
    trace: &'a TraceRef,
}

impl Recorder<'_> {
    /// The node of `value`: for a traced value of this trace its recorded
    /// id (possibly a flat step, which `add` brings into the graph).
    fn node(&self, value: &Value) -> EvalResult<Id> {
        match value {
            Value::Traced(t) if Rc::ptr_eq(&t.trace, self.trace) => Ok(t.id),
            _ => node_of(self.trace, value),
        }
    }

    fn shape(&self, id: Id) -> Shape {
        self.trace.borrow().shape_of(id)
    }

    /// Records `op` over `children` in the graph (flat steps among them
    /// enter it first).
    fn add(&self, op: TOp, children: &[Id]) -> EvalResult<Id> {
        let id = {
            let mut t = self.trace.borrow_mut();
            t.flush();
            let children: SmallVec<[Id; 3]> = children
                .iter()
                .map(|&c| t.graph_node(c))
                .collect::<Result<_, _>>()
                .map_err(|e| EvalError::shape(e.0))?;
            t.graph
                .add(op, &children)
                .map_err(|e| EvalError::shape(e.0))?
        };
        // A result the machine cannot hold is an error now, not an abort
        // when the tape runs.
        crate::lisp::tensor::check_allocation(&self.shape(id))?;
        Ok(id)
    }

    /// Records the scalar operator `math` over `children`: a step of the
    /// flat arena when the trace keeps one and every operand is a number
    /// (not all constants, which the graph folds; not f32, which the graph
    /// rounds), a graph node otherwise.
    fn map(&self, math: Math, children: &[Id]) -> EvalResult<Id> {
        if let Some(id) = self.flat_step(&math, children) {
            return Ok(id);
        }
        self.add(map_op(&math), children)
    }

    fn flat_step(&self, math: &Math, children: &[Id]) -> Option<Id> {
        let mut t = self.trace.borrow_mut();
        if !t.flat_recording || matches!(math, Math::Call(..)) {
            return None;
        }
        let mut dtype = DType::Weak;
        let mut all_constant = true;
        for &child in children {
            let child_dtype = if is_flat(child) {
                all_constant = false;
                t.flat.dtype(child)
            } else {
                if !t.graph.shape(child).is_empty() {
                    return None;
                }
                all_constant &= t.graph.constant(child).is_some();
                t.graph.dtype(child)
            };
            match child_dtype {
                DType::Weak => {}
                DType::F64 => dtype = DType::F64,
                DType::F32 => return None,
            }
        }
        if all_constant {
            return None;
        }
        t.flat.push(math, children, dtype)
    }

    fn num(&self, x: f64) -> Id {
        self.trace.borrow_mut().number(x)
    }

    fn value(&self, id: Id) -> Value {
        traced(self.trace, id)
    }

    fn fold(&self, args: &[Value], math: Math) -> EvalResult<Id> {
        let mut acc = self.node(&args[0])?;
        for arg in &args[1..] {
            let next = self.node(arg)?;
            acc = self.map(math.clone(), &[acc, next])?;
        }
        Ok(acc)
    }

    fn reduce(&self, op: ReduceOp, x: Id, args: &Args) -> EvalResult<Id> {
        let shape = self.shape(x);
        let axes: SmallVec<[u8; 4]> = reduced_axes(args, shape.len())?
            .into_iter()
            .map(|a| a as u8)
            .collect();
        let empty = axes.iter().any(|&a| shape[usize::from(a)] == 0);
        if empty && matches!(op, ReduceOp::Max | ReduceOp::Min) {
            return Err(EvalError::range(format!(
                "{} of an empty tensor",
                op.name()
            )));
        }
        self.add(
            TOp::Reduce {
                op,
                axes,
                keepdims: keepdims(args),
            },
            &[x],
        )
    }

    /// A tensor from a (nested) list of numbers and tensors, as `tensor`
    /// makes one.
    fn stack(&self, list: &Value) -> EvalResult<Id> {
        let items = list.list_to_vec()?;
        self.stack_items(&items)
    }

    /// Equal-shape items stacked along a new first axis; lists inside are
    /// stacked first.
    fn stack_items(&self, items: &[Value]) -> EvalResult<Id> {
        if items.is_empty() {
            return Err(EvalError::shape(
                "cannot make a tensor of traced values from an empty list",
            ));
        }
        let mut shaped = Vec::with_capacity(items.len());
        let mut first: Option<Shape> = None;
        for item in items {
            let id = if item.is_list() {
                self.stack(item)?
            } else {
                self.node(item)?
            };
            let mut shape = self.shape(id);
            match &first {
                Some(expected) if *expected != shape => {
                    return Err(EvalError::shape(format!(
                        "tensor elements have shapes {} and {}",
                        crate::lisp::tensor::format_shape(expected),
                        crate::lisp::tensor::format_shape(&shape)
                    )));
                }
                _ => first = Some(shape.clone()),
            }
            shape.insert(0, 1);
            shaped.push(self.add(TOp::Reshape(shape), &[id])?);
        }
        self.add(TOp::Concat(0), &shaped)
    }

    /// The axis option (default `default`, negative from the end).
    fn axis(&self, args: &Args, rank: usize, default: i64) -> EvalResult<usize> {
        let axis = match args.option("axis") {
            Some(value) => value.as_i64()?,
            None => default,
        };
        normalize_axis(axis, rank)
    }

    /// `logsumexp` over `axes`: one operation of the table
    /// (`ops::reduction::LogSumExp`), which shifts out each lane's largest
    /// element; its gradient is the softmax.
    fn logsumexp(&self, x: Id, axes: &[u8], keep: bool) -> EvalResult<Id> {
        let shape = self.shape(x);
        let op = LogSumExp {
            axes: SmallVec::from_slice(axes),
        };
        let result = self.add(TOp::Op(Op::LogSumExp(op)), &[x])?;
        if keep {
            Ok(result)
        } else {
            let out: Shape = shape
                .iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(&(*i as u8)))
                .map(|(_, &d)| d)
                .collect();
            self.add(TOp::Reshape(out), &[result])
        }
    }
}

fn unary_math(name: &str) -> Option<Math> {
    let arity = crate::ir::math::language::operator_arity(name)?;
    (arity == 1).then(|| Math::from_op_name(name, &[Id::from(0)]))?
}

/// Runs built-in `name` on arguments of which some are traced; `None`
/// when the built-in has no traced form (it then runs as usual, and fails
/// on a traced argument if it needs a number).
pub fn call(trace: &TraceRef, name: &str, args: &Args) -> Option<EvalResult<Value>> {
    let r = Recorder { trace };
    (|| -> Option<EvalResult<Value>> {
        Some(match name {
            "+" => r
                .fold(args, Math::Add([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "*" => r
                .fold(args, Math::Mul([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "-" if args.len() == 1 => r
                .node(&args[0])
                .and_then(|x| r.map(Math::Neg([Id::from(0)]), &[x]))
                .map(|id| r.value(id)),
            "-" => r
                .fold(args, Math::Sub([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "/" if args.len() == 1 => (|| {
                let x = r.node(&args[0])?;
                r.map(Math::Div([Id::from(0); 2]), &[r.num(1.0), x])
            })()
            .map(|id| r.value(id)),
            "/" => r
                .fold(args, Math::Div([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "pow" => (|| {
                let math = Math::from_op_name(name, &[Id::from(0); 2]).expect("binary operator");
                let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
                r.map(math, &[a, b])
            })()
            .map(|id| r.value(id)),
            "heaviside" => (|| {
                let x = r.node(&args[0])?;
                let at_zero = match args.get(1) {
                    Some(v) => r.node(v)?,
                    None => r.num(0.5),
                };
                r.map(Math::Heaviside([Id::from(0); 2]), &[x, at_zero])
            })()
            .map(|id| r.value(id)),
            "log2" | "log10" => (|| {
                let x = r.node(&args[0])?;
                let log = r.map(Math::Log([Id::from(0)]), &[x])?;
                let base = if name == "log2" {
                    2f64.ln()
                } else {
                    10f64.ln()
                };
                r.map(Math::Div([Id::from(0); 2]), &[log, r.num(base)])
            })()
            .map(|id| r.value(id)),
            "max" | "min" if args.len() == 1 => (|| {
                let op = if name == "max" {
                    ReduceOp::Max
                } else {
                    ReduceOp::Min
                };
                let x = r.node(&args[0])?;
                r.reduce(op, x, args)
            })()
            .map(|id| r.value(id)),
            "max" => r
                .fold(args, Math::Max([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "min" => r
                .fold(args, Math::Min([Id::from(0); 2]))
                .map(|id| r.value(id)),
            "clamp" => (|| {
                let (x, lo, hi) = (r.node(&args[0])?, r.node(&args[1])?, r.node(&args[2])?);
                let above = r.map(Math::Max([Id::from(0); 2]), &[x, lo])?;
                r.map(Math::Min([Id::from(0); 2]), &[above, hi])
            })()
            .map(|id| r.value(id)),
            "floor" | "ceil" | "round" => (|| {
                let op = match name {
                    "floor" => RoundOp::Floor,
                    "ceil" => RoundOp::Ceil,
                    _ => RoundOp::Round,
                };
                let x = r.node(&args[0])?;
                r.add(TOp::Round(op), &[x])
            })()
            .map(|id| r.value(id)),
            "float" => Ok(args[0].clone()),
            "mod" => (|| {
                // a - b * floor(a / b): derivative 1 in a, -floor(a/b) in b.
                let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
                let ratio = r.map(Math::Div([Id::from(0); 2]), &[a, b])?;
                let floor = r.add(TOp::Round(RoundOp::Floor), &[ratio])?;
                let multiple = r.map(Math::Mul([Id::from(0); 2]), &[b, floor])?;
                r.map(Math::Sub([Id::from(0); 2]), &[a, multiple])
            })()
            .map(|id| r.value(id)),
            "=" | "/=" | "<" | ">" | "<=" | ">=" => compare(&r, name, args),
            "zero?" | "positive?" | "negative?" => {
                let x = match super::value_to_buf(&args[0]) {
                    Ok(crate::backends::cpu::Buf::Scalar(x)) => x,
                    Ok(_) => return None,
                    Err(e) => return Some(Err(e)),
                };
                Ok(Value::Bool(match name {
                    "zero?" => x == 0.0,
                    "positive?" => x > 0.0,
                    _ => x < 0.0,
                }))
            }
            // Predicates and shape queries look at a traced value itself; on
            // anything else (a list holding traced values, say) the plain
            // built-in answers.
            "number?" | "float?" | "tensor?" | "integer?" | "shape" | "rank" | "size"
                if !matches!(args[0], Value::Traced(_)) =>
            {
                return None;
            }
            "number?" | "float?" => Ok(Value::Bool(is_scalar(&args[0]))),
            "tensor?" => Ok(Value::Bool(!is_scalar(&args[0]))),
            "integer?" => Ok(Value::Bool(false)),
            "shape" => Ok(Value::list(
                traced_shape(&args[0]).iter().map(|&d| Value::Int(d as i64)),
            )),
            "rank" => Ok(Value::Int(traced_shape(&args[0]).len() as i64)),
            "size" => Ok(Value::Int(
                traced_shape(&args[0]).iter().product::<usize>() as i64
            )),
            "stop-gradient" => r
                .node(&args[0])
                .and_then(|x| r.add(TOp::StopGradient, &[x]))
                .map(|id| r.value(id)),
            _ => {
                if let Some(math) = unary_math(name) {
                    return Some(
                        r.node(&args[0])
                            .and_then(|x| r.map(math, &[x]))
                            .map(|id| r.value(id)),
                    );
                }
                // A function of two operands of the elementwise table
                // (`atan2`, `hypot`, `logaddexp`, ...).
                if let Some(math) = crate::ir::math::elementwise::builtin_node(name)
                    && args.len() == 2
                {
                    return Some(
                        (|| {
                            let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
                            r.map(math, &[a, b])
                        })()
                        .map(|id| r.value(id)),
                    );
                }
                return tensor_call(&r, name, args);
            }
        })
    })()
}

fn is_scalar(value: &Value) -> bool {
    traced_shape(value).is_empty()
}

fn traced_shape(value: &Value) -> Shape {
    match value {
        Value::Traced(t) => t.shape.clone(),
        Value::Tensor(t) => SmallVec::from_slice(t.shape()),
        Value::TensorF32(t) => SmallVec::from_slice(t.shape()),
        _ => Shape::new(),
    }
}

fn compare(r: &Recorder<'_>, name: &str, args: &Args) -> EvalResult<Value> {
    let op = match name {
        "=" => CmpOp::Eq,
        "/=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        ">" => CmpOp::Gt,
        "<=" => CmpOp::Le,
        _ => CmpOp::Ge,
    };
    let all_scalar = args.iter().all(is_scalar);
    let recorded = r.trace.borrow().record_comparisons && args.len() == 2;
    if all_scalar && !recorded {
        // Control flow: compare the numbers.
        let mut numbers = Vec::with_capacity(args.len());
        for arg in args.iter() {
            match super::value_to_buf(arg)? {
                crate::backends::cpu::Buf::Scalar(x) => numbers.push(x),
                crate::backends::cpu::Buf::Array(a) => {
                    numbers.push(a.iter().next().copied().unwrap_or(f64::NAN))
                }
            }
        }
        return Ok(Value::Bool(
            numbers
                .windows(2)
                .all(|pair| op.apply(pair[0], pair[1]) != 0.0),
        ));
    }
    if args.len() != 2 {
        return Err(EvalError::type_error(format!(
            "{name} on tensors takes two arguments"
        )));
    }
    let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
    r.add(TOp::Compare(op), &[a, b]).map(|id| r.value(id))
}

fn tensor_call(r: &Recorder<'_>, name: &str, args: &Args) -> Option<EvalResult<Value>> {
    if name == "to-list" {
        return Some(to_list(r, args));
    }
    // A traced position (a scan's step index) makes `index` and `slice`
    // gathers, which the built-ins record with their call site.
    if matches!(name, "index" | "slice")
        && crate::lisp::builtins::indexing::traced_position(&args.values[1..])
    {
        return None;
    }
    // Cleared by the fallback arm: the built-in has no traced form.
    let mut traceable = true;
    let mut run = || -> EvalResult<Id> {
        match name {
            "sum" => r.reduce(ReduceOp::Sum, r.node(&args[0])?, args),
            "prod" => r.reduce(ReduceOp::Prod, r.node(&args[0])?, args),
            "mean" => {
                let x = r.node(&args[0])?;
                let shape = r.shape(x);
                let axes = reduced_axes(args, shape.len())?;
                let count: usize = axes.iter().map(|&a| shape[a]).product();
                let total = r.reduce(ReduceOp::Sum, x, args)?;
                r.map(Math::Div([Id::from(0); 2]), &[total, r.num(count as f64)])
            }
            "logsumexp" => {
                let x = r.node(&args[0])?;
                let axes: Vec<u8> = reduced_axes(args, r.shape(x).len())?
                    .into_iter()
                    .map(|a| a as u8)
                    .collect();
                r.logsumexp(x, &axes, keepdims(args))
            }
            "softmax" | "log-softmax" => {
                let x = r.node(&args[0])?;
                let rank = r.shape(x).len();
                if rank == 0 {
                    return Ok(r.num(if name == "softmax" { 1.0 } else { 0.0 }));
                }
                let axis = r.axis(args, rank, -1)? as u8;
                let lse = r.logsumexp(x, &[axis], true)?;
                let log_softmax = r.map(Math::Sub([Id::from(0); 2]), &[x, lse])?;
                if name == "log-softmax" {
                    Ok(log_softmax)
                } else {
                    r.map(Math::Exp([Id::from(0)]), &[log_softmax])
                }
            }
            "argmax" | "argmin" => {
                let x = r.node(&args[0])?;
                let rank = r.shape(x).len();
                let axis = match args.option("axis") {
                    Some(a) => Some(normalize_axis(a.as_i64()?, rank)? as u8),
                    None => None,
                };
                let id = r.add(
                    TOp::ArgExtreme {
                        max: name == "argmax",
                        axis,
                    },
                    &[x],
                )?;
                match (axis, keepdims(args)) {
                    (Some(axis), true) => {
                        let mut shape = r.shape(x);
                        shape[usize::from(axis)] = 1;
                        r.add(TOp::Reshape(shape), &[id])
                    }
                    _ => Ok(id),
                }
            }
            "matmul" | "dot" => {
                let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
                if r.shape(a).is_empty() || r.shape(b).is_empty() {
                    if name == "dot" {
                        return r.map(Math::Mul([Id::from(0); 2]), &[a, b]);
                    }
                    return Err(EvalError::shape(
                        "matmul needs tensors of rank 1 or more (use * for scalars)",
                    ));
                }
                r.add(TOp::MatMul, &[a, b])
            }
            "outer" => {
                let (a, b) = (r.node(&args[0])?, r.node(&args[1])?);
                let (n, m) = (r.shape(a).iter().product(), r.shape(b).iter().product());
                let column = r.add(TOp::Reshape(SmallVec::from_slice(&[n, 1])), &[a])?;
                let row = r.add(TOp::Reshape(SmallVec::from_slice(&[1, m])), &[b])?;
                r.map(Math::Mul([Id::from(0); 2]), &[column, row])
            }
            "trace" => {
                let x = r.node(&args[0])?;
                let shape = r.shape(x);
                if shape.len() != 2 {
                    return Err(EvalError::shape(format!(
                        "trace needs a matrix, got shape {}",
                        crate::lisp::tensor::format_shape(&shape)
                    )));
                }
                let eye = ndarray::Array2::<f64>::eye(shape[0].max(shape[1]))
                    .slice(ndarray::s![..shape[0], ..shape[1]])
                    .to_owned()
                    .into_dyn();
                let eye = r.trace.borrow_mut().capture(&std::rc::Rc::new(eye));
                let masked = r.map(Math::Mul([Id::from(0); 2]), &[x, eye])?;
                r.add(
                    TOp::Reduce {
                        op: ReduceOp::Sum,
                        axes: SmallVec::from_slice(&[0, 1]),
                        keepdims: false,
                    },
                    &[masked],
                )
            }
            "transpose" => {
                let x = r.node(&args[0])?;
                let rank = r.shape(x).len();
                let perm: SmallVec<[u8; 4]> = match args.get(1) {
                    None => (0..rank as u8).rev().collect(),
                    Some(list) => list
                        .list_to_vec()?
                        .iter()
                        .map(|a| Ok(normalize_axis(a.as_i64()?, rank)? as u8))
                        .collect::<EvalResult<_>>()?,
                };
                r.add(TOp::Transpose(perm), &[x])
            }
            "reshape" => {
                let x = r.node(&args[0])?;
                let shape = r.shape(x);
                let target = resolve_shape(&args[1], shape.iter().product(), &shape)?;
                r.add(TOp::Reshape(SmallVec::from_slice(&target)), &[x])
            }
            "flatten" => {
                let x = r.node(&args[0])?;
                let n: usize = r.shape(x).iter().product();
                r.add(TOp::Reshape(SmallVec::from_slice(&[n])), &[x])
            }
            "item" => {
                let x = r.node(&args[0])?;
                if r.shape(x).iter().product::<usize>() != 1 {
                    return Err(EvalError::shape("item needs a tensor of one element"));
                }
                r.add(TOp::Reshape(Shape::new()), &[x])
            }
            "broadcast-to" => {
                let x = r.node(&args[0])?;
                let target = crate::lisp::tensor::shape_from_list(&args[1])?;
                r.add(TOp::Broadcast(SmallVec::from_slice(&target)), &[x])
            }
            "where" => {
                if let Value::Bool(_) | Value::Nil = &args[0] {
                    return r.node(if args[0].is_truthy() {
                        &args[1]
                    } else {
                        &args[2]
                    });
                }
                let (c, a, b) = (r.node(&args[0])?, r.node(&args[1])?, r.node(&args[2])?);
                r.add(TOp::Where, &[c, a, b])
            }
            "concat" | "stack" => {
                let items = args[0].list_to_vec()?;
                if items.is_empty() {
                    return Err(EvalError::type_error(
                        "expected a non-empty list of tensors",
                    ));
                }
                let mut ids: Vec<Id> =
                    items.iter().map(|v| r.node(v)).collect::<EvalResult<_>>()?;
                let rank = r.shape(ids[0]).len();
                if name == "stack" {
                    let axis = r.axis(args, rank + 1, 0)?;
                    for id in &mut ids {
                        let mut shape = r.shape(*id);
                        if shape.len() != rank {
                            return Err(EvalError::shape("stack needs tensors of one shape"));
                        }
                        shape.insert(axis, 1);
                        *id = r.add(TOp::Reshape(shape), &[*id])?;
                    }
                    r.add(TOp::Concat(axis as u8), &ids)
                } else {
                    if rank == 0 {
                        return Err(EvalError::shape("concat needs tensors of rank 1 or more"));
                    }
                    let axis = r.axis(args, rank, 0)?;
                    r.add(TOp::Concat(axis as u8), &ids)
                }
            }
            "tensor" => match &args[..] {
                [single] if single.is_list() => r.stack(single),
                // One number or tensor is itself, as when not traced: a
                // number becomes a 0-dimensional tensor, not a vector.
                [single] => r.node(single),
                many => r.stack_items(many),
            },
            "slice" => {
                let x = r.node(&args[0])?;
                let shape = r.shape(x);
                if shape.is_empty() {
                    return Err(EvalError::shape("cannot slice a number"));
                }
                let axis = r.axis(args, shape.len(), 0)?;
                let len = shape[axis];
                let start = bound(&args[1], len)? as usize;
                let end = match args.get(2) {
                    None | Some(Value::Nil) => len,
                    Some(end) => bound(end, len)? as usize,
                };
                if let Some(step) = args.option("step")
                    && step.as_i64()? != 1
                {
                    return Err(EvalError::type_error(
                        "slice with :step is not differentiable yet",
                    ));
                }
                r.add(
                    TOp::Slice {
                        axis: axis as u8,
                        start,
                        end: end.max(start),
                    },
                    &[x],
                )
            }
            "index" => {
                let mut x = r.node(&args[0])?;
                let indices = &args[1..];
                let shape = r.shape(x);
                if indices.len() > shape.len() {
                    return Err(EvalError::range(format!(
                        "{} indices for a tensor of rank {}",
                        indices.len(),
                        shape.len()
                    )));
                }
                for (axis, value) in indices.iter().enumerate() {
                    let len = shape[axis];
                    let k = value.as_i64()?;
                    let resolved = if k < 0 { k + len as i64 } else { k };
                    if resolved < 0 || resolved >= len as i64 {
                        return Err(EvalError::range(format!(
                            "index {k} is out of range for axis {axis} of length {len}"
                        )));
                    }
                    let resolved = resolved as usize;
                    x = r.add(
                        TOp::Slice {
                            axis: 0,
                            start: resolved,
                            end: resolved + 1,
                        },
                        &[x],
                    )?;
                    let rest: Shape = r.shape(x)[1..].into();
                    x = r.add(TOp::Reshape(rest), &[x])?;
                }
                Ok(x)
            }
            "roll" => {
                let x = r.node(&args[0])?;
                let shape = r.shape(x);
                let shift = args[1].as_i64()?;
                if shape.is_empty() {
                    return Ok(x);
                }
                match args.option("axis") {
                    Some(axis) => {
                        let axis = normalize_axis(axis.as_i64()?, shape.len())?;
                        let len = shape[axis].max(1) as i64;
                        r.add(
                            TOp::Roll {
                                axis: axis as u8,
                                shift: shift.rem_euclid(len) as usize,
                            },
                            &[x],
                        )
                    }
                    None => {
                        let n: usize = shape.iter().product();
                        let flat = r.add(TOp::Reshape(SmallVec::from_slice(&[n])), &[x])?;
                        let rolled = r.add(
                            TOp::Roll {
                                axis: 0,
                                shift: shift.rem_euclid(n.max(1) as i64) as usize,
                            },
                            &[flat],
                        )?;
                        r.add(TOp::Reshape(shape), &[rolled])
                    }
                }
            }
            _ => {
                traceable = false;
                Err(EvalError::type_error("no traced form"))
            }
        }
    };
    let result = run();
    traceable.then(|| result.map(|id| r.value(id)))
}

fn to_list(r: &Recorder<'_>, args: &Args) -> EvalResult<Value> {
    let x = r.node(&args[0])?;
    let shape = r.shape(x);
    if shape.is_empty() {
        return Ok(r.value(x));
    }
    let rest: Shape = shape[1..].into();
    let mut items = Vec::with_capacity(shape[0]);
    for i in 0..shape[0] {
        let row = r.add(
            TOp::Slice {
                axis: 0,
                start: i,
                end: i + 1,
            },
            &[x],
        )?;
        let row = r.add(TOp::Reshape(rest.clone()), &[row])?;
        items.push(if rest.is_empty() {
            r.value(row)
        } else {
            to_list(
                r,
                &Args {
                    values: &[r.value(row)],
                    options: Vec::new(),
                },
            )?
        });
    }
    Ok(Value::list(items))
}

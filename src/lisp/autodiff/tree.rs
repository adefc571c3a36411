//! Arguments and results as trees: a number, a tensor, or a list of them
//! (nested), flattened to leaves for tracing and rebuilt afterwards, so a
//! gradient has the structure of its argument.

use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::value::Value;

/// The structure of a value; leaves are numbered in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    /// A number or tensor (leaf `index`).
    Leaf(usize),
    /// A list of subtrees.
    List(Vec<Tree>),
    /// A complex value: its real part's tree and its imaginary part's
    /// (two leaves: complex values are differentiated as pairs of reals).
    Complex(Box<Tree>, Box<Tree>),
}

/// The deepest nesting of lists walked as a tree (the reader's own limit
/// on brackets): a deeper argument, result or state is an error, not a
/// walk that overflows the stack.
pub const MAX_TREE_DEPTH: usize = crate::reader::MAX_NESTING;

/// The error for a value nested deeper than [`MAX_TREE_DEPTH`].
pub fn too_deep(what: &str) -> EvalError {
    EvalError::range(format!(
        "lists nested deeper than {MAX_TREE_DEPTH} levels in {what} (the limit on the nesting of values walked as trees)"
    ))
}

/// Runs `f` with room on the stack for one more level of a walk.
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Flattens `value` into `leaves` and returns its structure.
pub fn flatten(value: &Value, leaves: &mut Vec<Value>, what: &str) -> EvalResult<Tree> {
    flatten_at(value, leaves, what, 0)
}

fn flatten_at(
    value: &Value,
    leaves: &mut Vec<Value>,
    what: &str,
    depth: usize,
) -> EvalResult<Tree> {
    match value {
        Value::Int(_)
        | Value::Float(_)
        | Value::Tensor(_)
        | Value::TensorF32(_)
        | Value::Traced(_) => {
            leaves.push(value.clone());
            Ok(Tree::Leaf(leaves.len() - 1))
        }
        Value::Complex(z) => {
            let re = flatten_at(&z.re, leaves, what, depth + 1)?;
            let im = flatten_at(&z.im, leaves, what, depth + 1)?;
            Ok(Tree::Complex(Box::new(re), Box::new(im)))
        }
        Value::Nil | Value::Pair(_) if value.is_list() => {
            if depth >= MAX_TREE_DEPTH {
                return Err(too_deep(what));
            }
            let items = value.list_to_vec()?;
            with_stack(|| {
                Ok(Tree::List(
                    items
                        .iter()
                        .map(|item| flatten_at(item, leaves, what, depth + 1))
                        .collect::<EvalResult<_>>()?,
                ))
            })
        }
        other => Err(EvalError::type_error(format!(
            "{what} must be numbers, tensors or lists of them, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// Rebuilds a value of structure `tree` from `leaves` (indexed by leaf).
pub fn rebuild(tree: &Tree, leaves: &[Value]) -> Value {
    match tree {
        Tree::Leaf(index) => leaves[*index].clone(),
        Tree::List(items) => {
            with_stack(|| Value::list(items.iter().map(|t| rebuild(t, leaves)).collect::<Vec<_>>()))
        }
        Tree::Complex(re, im) => Value::complex(rebuild(re, leaves), rebuild(im, leaves)),
    }
}

/// The leaf indices of `tree`, in order.
pub fn leaf_indices(tree: &Tree, out: &mut Vec<usize>) {
    match tree {
        Tree::Leaf(index) => out.push(*index),
        Tree::List(items) => with_stack(|| items.iter().for_each(|t| leaf_indices(t, out))),
        Tree::Complex(re, im) => {
            leaf_indices(re, out);
            leaf_indices(im, out);
        }
    }
}

/// Whether `tree` holds a complex value.
pub fn has_complex(tree: &Tree) -> bool {
    match tree {
        Tree::Leaf(_) => false,
        Tree::List(items) => items.iter().any(has_complex),
        Tree::Complex(..) => true,
    }
}

/// Rebuilds `tree` with leaf `k` (in order) taken from `values[k]`.
pub fn rebuild_in_order(tree: &Tree, values: &mut impl Iterator<Item = Value>) -> Value {
    match tree {
        Tree::Leaf(_) => values.next().unwrap_or(Value::Nil),
        Tree::List(items) => with_stack(|| {
            Value::list(
                items
                    .iter()
                    .map(|t| rebuild_in_order(t, values))
                    .collect::<Vec<_>>(),
            )
        }),
        Tree::Complex(re, im) => {
            let re = rebuild_in_order(re, values);
            let im = rebuild_in_order(im, values);
            Value::complex(re, im)
        }
    }
}

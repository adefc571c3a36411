//! `(einsum "ij,jk->ik" a b ...)`: the subscripts are planned by
//! `crate::ir::ops::einsum` into transposes, reshapes, sums, diagonals and
//! (batched) matrix products, and the plan is run here over the operands
//! with `Apply`, so it is recorded inside traced functions and computed at
//! once otherwise, and differentiates through those operations' rules.

use super::apply::Apply;
use super::builtin;
use crate::ir::Shape;
use crate::ir::ops::einsum::plan;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;

fn einsum(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let subscripts = match &args[0] {
        Value::Str(text) => text.to_string(),
        other => {
            return Err(EvalError::type_error(format!(
                "the subscripts must be a string such as \"ij,jk->ik\", got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    let apply = Apply::new(interp, args.values);
    let mut values: Vec<Value> = Vec::with_capacity(args.len() - 1);
    for operand in &args[1..] {
        values.push(apply.tensor_of(operand)?);
    }
    let shapes = values
        .iter()
        .map(|v| apply.shape(v))
        .collect::<EvalResult<Vec<Shape>>>()?;
    let shape_refs: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
    let plan = plan(&subscripts, &shape_refs).map_err(|e| EvalError::shape(e.0))?;
    for step in &plan.steps {
        let operands: Vec<&Value> = step.operands.iter().map(|&k| &values[k]).collect();
        let value = apply.op(step.op.clone(), &operands)?;
        values.push(value);
    }
    Ok(values.swap_remove(plan.result))
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("einsum", "(einsum subscripts a b ...)", "Einstein summation in NumPy's notation: (einsum \"ij,jk->ik\" a b) is a matrix product, \"ii->\" a trace, \"ii->i\" a diagonal, \"ij->ji\" a transpose, \"i,j->ij\" an outer product, \"...ij,...jk->...ik\" a batched product (size-1 batch axes broadcast). Letters name axes; a letter in several operands and not in the output is summed over. Without '->' the output is the broadcast axes then the letters used once, in alphabetical order (uppercase first). Any number of operands; each pair is contracted with one (batched) matmul after transposes and reshapes, pairs sharing an index first, smallest result first. Differentiable in every operand.", 1, None, einsum),
];

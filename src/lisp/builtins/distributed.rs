//! The distributed built-ins of SPEC section 7 ("Distributed"): the rank
//! and the number of ranks, and the collectives of the operation table
//! (`crate::ir::ops::collective`) over Lisp values, so they work eagerly and
//! inside `grad`, `jit` and `scan` alike. In a build without the cargo
//! feature `mpi`, each is an error saying how to build with it.

use super::apply::Apply;
use super::indexing::axis_option;
use super::{builtin, with_options};
use crate::distributed::{self, Reduction};
use crate::ir::ops::Op;
use crate::ir::ops::collective::{Allgather, Allreduce, Halo, HaloExchange, Stacking};
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;

/// An error of the distributed layer (MPI missing from the build, or
/// finalized).
fn unavailable(message: String) -> EvalError {
    EvalError::new(EvalErrorKind::User, message)
}

/// The number of ranks, or why there are none.
fn ranks() -> EvalResult<usize> {
    distributed::size().map_err(unavailable)
}

fn mpi_rank(_interp: &mut Interp, _args: &Args) -> EvalResult<Value> {
    let rank = distributed::rank().map_err(unavailable)?;
    Ok(Value::Int(rank as i64))
}

fn mpi_size(_interp: &mut Interp, _args: &Args) -> EvalResult<Value> {
    Ok(Value::Int(ranks()? as i64))
}

/// The `:op` option: a symbol or string naming a reduction.
fn reduction(args: &Args) -> EvalResult<Reduction> {
    let name = match args.option("op") {
        None => return Ok(Reduction::Sum),
        Some(Value::Str(s)) => s.to_string(),
        Some(value) => value
            .as_symbol()
            .map(|s| s.name().to_string())
            .map_err(|_| {
                EvalError::type_error(format!(
                    ":op must be 'sum, 'mean, 'max or 'min, got {}",
                    value.short()
                ))
            })?,
    };
    Reduction::from_name(&name).ok_or_else(|| {
        EvalError::range(format!(
            ":op must be 'sum, 'mean, 'max or 'min, got '{name}"
        ))
    })
}

fn allreduce(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    ranks()?;
    let apply = Apply::new(interp, args.values);
    apply.shape(&args[0])?;
    let op = Allreduce {
        reduction: reduction(args)?,
        site: apply.site(),
    };
    apply.table(Op::Allreduce(op), &[&args[0]])
}

fn allgather(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let ranks = ranks()?;
    let apply = Apply::new(interp, args.values);
    let shape = apply.shape(&args[0])?;
    let axis = axis_option(args, shape.len() + 1, 0)?;
    let op = Allgather(Stacking {
        axis: axis as u8,
        ranks: ranks as u32,
        site: apply.site(),
    });
    apply.table(Op::Allgather(op), &[&args[0]])
}

fn halo_exchange(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    ranks()?;
    let apply = Apply::new(interp, args.values);
    let shape = apply.shape(&args[0])?;
    if shape.is_empty() {
        return Err(EvalError::shape(
            "halo-exchange needs a tensor with at least one axis, got a number",
        ));
    }
    let width = args[1].as_i64()?;
    let width = u32::try_from(width).map_err(|_| {
        EvalError::range(format!(
            "the halo's width must be a whole number from 0, got {width}"
        ))
    })?;
    let axis = axis_option(args, shape.len(), 0)?;
    let periodic = args.option("periodic").is_some_and(Value::is_truthy);
    let op = HaloExchange(Halo {
        axis: axis as u8,
        width,
        periodic,
        site: apply.site(),
    });
    apply.table(Op::HaloExchange(op), &[&args[0]])
}

fn mpi_traffic(_interp: &mut Interp, _args: &Args) -> EvalResult<Value> {
    ranks()?;
    let t = distributed::traffic();
    let entry = |name: &str, n: u64| Value::list([Value::symbol(name), Value::Int(n as i64)]);
    Ok(Value::list([
        entry("bytes", t.bytes),
        entry("messages", t.messages),
        entry("collectives", t.collectives),
        entry("nccl", t.device_collectives),
    ]))
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("mpi-rank", "(mpi-rank)", "This process's rank in the MPI job, from 0 (0 when not started by mpirun). Needs the cargo feature `mpi`.", 0, Some(0), mpi_rank),
    builtin("mpi-size", "(mpi-size)", "The number of ranks in the MPI job (1 when not started by mpirun). Needs the cargo feature `mpi`.", 0, Some(0), mpi_size),
    with_options(builtin("allreduce", "(allreduce t :op 'sum)", "Every rank's t (the same shape on each) combined element by element: 'sum (default), 'mean, 'max or 'min; the result is the same on every rank. Differentiable: the adjoint of a sum is a sum of the ranks' cotangents (max and min pass it to the ranks holding the extreme, shared by ties).", 1, Some(1), allreduce), &["op"]),
    with_options(builtin("allgather", "(allgather t :axis 0)", "Every rank's t (the same shape on each) stacked in rank order along a new axis (default 0, of length (mpi-size)); the same on every rank. Differentiable: each rank's block of the cotangent is summed over the ranks.", 1, Some(1), allgather), &["axis"]),
    with_options(builtin("halo-exchange", "(halo-exchange t width :axis k :periodic #f)", "A block of a domain split along axis k (default 0) across the ranks in rank order, extended by width cells on each side: the last width cells of rank - 1 before it, the first width cells of rank + 1 after it; zeros beyond the two ends of the domain, or with :periodic #t the cells of the other end. Differentiable: each halo's cotangent returns to the rank it came from, added into its boundary cells.", 2, Some(2), halo_exchange), &["axis", "periodic"]),
    builtin("mpi-traffic", "(mpi-traffic)", "What this rank has handed to MPI to send so far: ((bytes n) (messages m) (collectives c) (nccl d)): payload bytes of halo slabs and collective contributions, point-to-point messages, collective calls, and of those the allreduces run on GPUs through NCCL.", 0, Some(0), mpi_traffic),
];

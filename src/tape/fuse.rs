//! Fusion of elementwise chains: a value computed elementwise and used only
//! by elementwise operations of the same shape is not stored; its consumer
//! recomputes it chunk by chunk inside one fused kernel. Cheap arithmetic
//! used several times is recomputed in each consumer; an expensive value
//! (`exp`, `log`, ...) with several consumers is stored once.

use super::Kernel;
use super::compile::{Kernels, Registers, fused_kernel};
use crate::ir::math::language::Math;
use crate::ir::shape::numel;
use crate::ir::{ReduceOp, Shape, TOp};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// The most steps in one fused kernel, not counting the roundings of f32
/// steps (each f32 operation is followed by one).
const MAX_STEPS: usize = 48;

fn elementwise(kernel: &Kernel) -> bool {
    matches!(kernel, Kernel::Op(op) if op.is_elementwise())
}

/// Whether value `i` is cheap to recompute in each consumer: a rounding of
/// an f32 step costs what the step it rounds costs (a stored `tanh`
/// stays stored when its users read its rounding).
fn cheap_value(kernels: &Kernels, i: usize) -> bool {
    match kernels[i].as_ref() {
        Some((Kernel::Op(TOp::Cast(_)), args)) => cheap_value(kernels, args[0]),
        Some((kernel, _)) => cheap(kernel),
        None => false,
    }
}

fn cheap(kernel: &Kernel) -> bool {
    match kernel {
        Kernel::Op(op) => cheap_op(op),
        _ => false,
    }
}

/// Whether an elementwise operation costs about as much as reading its
/// operands (so recomputing it beats storing it).
pub(super) fn cheap_op(op: &TOp) -> bool {
    match op {
        TOp::Compare(_) | TOp::Where | TOp::Round(_) | TOp::Cast(_) => true,
        TOp::Map(math) => match crate::ir::math::elementwise::row(math) {
            // A function that costs no more than reading its operands.
            Some(row) => row.cost.free(),
            None => matches!(
                math,
                Math::Add(_) | Math::Sub(_) | Math::Mul(_) | Math::Div(_) | Math::Neg(_)
            ),
        },
        _ => false,
    }
}

/// Replaces elementwise chains in `kernels` by fused kernels and updates
/// `needed`; returns the number of fused kernels made.
pub(super) fn fuse(
    kernels: &mut Kernels,
    needed: &mut [bool],
    shapes: &[Shape],
    roots: &[usize],
) -> usize {
    let n = kernels.len();
    let mut users: Vec<SmallVec<[usize; 2]>> = vec![SmallVec::new(); n];
    for index in 0..n {
        if !needed[index] {
            continue;
        }
        if let Some((_, args)) = &kernels[index] {
            for &arg in args {
                users[arg].push(index);
            }
        }
    }
    let fusable = |kernels: &Kernels, i: usize| {
        needed[i]
            && numel(&shapes[i]) > 1
            && kernels[i].as_ref().is_some_and(|(k, _)| elementwise(k))
    };
    let is_root: Vec<bool> = {
        let mut flags = vec![false; n];
        for &r in roots {
            flags[r] = true;
        }
        flags
    };
    // A full sum whose operand is a fusable value read by it alone takes
    // the operand's group into its loop: the summed values are never
    // stored.
    let summed: Vec<Option<usize>> = (0..n)
        .map(|i| {
            let (
                Kernel::Op(TOp::Reduce {
                    op: ReduceOp::Sum,
                    axes,
                    ..
                }),
                args,
            ) = kernels[i].as_ref()?
            else {
                return None;
            };
            let x = args[0];
            let all_axes = axes.len() == shapes[x].len();
            (needed[i] && all_axes && fusable(kernels, x) && users[x].len() == 1 && !is_root[x])
                .then_some(x)
        })
        .collect();
    let mut sum_operand = vec![false; n];
    for &x in summed.iter().flatten() {
        sum_operand[x] = true;
    }
    // A fusable value is stored when something other than a same-shape
    // elementwise operation reads it, or when it is expensive and read
    // more than once.
    let stored: Vec<bool> = (0..n)
        .map(|i| {
            fusable(kernels, i)
                && !sum_operand[i]
                && (is_root[i]
                    || users[i]
                        .iter()
                        .any(|&u| !fusable(kernels, u) || shapes[u] != shapes[i])
                    || (users[i].len() > 1 && !cheap_value(kernels, i)))
        })
        .collect();
    let inlinable = |kernels: &Kernels, i: usize, shape: &Shape| {
        fusable(kernels, i) && !stored[i] && shapes[i] == *shape
    };
    let mut made = 0;
    let mut replacements: Vec<(usize, Kernel, SmallVec<[usize; 3]>)> = Vec::new();
    for group_root in 0..n {
        // The group computes `root`; a fused sum takes the place of
        // `group_root`.
        let (root, sum_over) = match summed[group_root] {
            Some(x) => (x, Some(shapes[x].clone())),
            None if stored[group_root] => (group_root, None),
            None => continue,
        };
        let shape = &shapes[root];
        // Registers: operands first (numbered after the walk), then steps.
        let mut operands: Vec<usize> = Vec::new();
        let mut operand_register: FxHashMap<usize, u16> = FxHashMap::default();
        let mut step_register: FxHashMap<usize, u16> = FxHashMap::default();
        let mut steps: Vec<(TOp, SmallVec<[Ref; 3]>)> = Vec::new();
        // Steps counted against `MAX_STEPS`.
        let mut counted = 0;
        // Iterative post-order walk from the root.
        let mut stack: Vec<(usize, bool)> = vec![(root, false)];
        while let Some((node, expanded)) = stack.pop() {
            if step_register.contains_key(&node) {
                continue;
            }
            let (kernel, args) = kernels[node].as_ref().expect("fusable nodes have kernels");
            if !expanded {
                stack.push((node, true));
                for &arg in args.iter().rev() {
                    let inline =
                        counted + stack.len() < MAX_STEPS && inlinable(kernels, arg, shape);
                    if inline && !step_register.contains_key(&arg) {
                        stack.push((arg, false));
                    }
                }
                continue;
            }
            let op = match kernel {
                Kernel::Op(op) => op.clone(),
                _ => unreachable!("only elementwise kernels are walked"),
            };
            let refs: SmallVec<[Ref; 3]> = args
                .iter()
                .map(|&arg| match step_register.get(&arg) {
                    Some(&r) => Ref::Step(r),
                    None => {
                        let next = operands.len() as u16;
                        let r = *operand_register.entry(arg).or_insert_with(|| {
                            operands.push(arg);
                            next
                        });
                        Ref::Operand(r)
                    }
                })
                .collect();
            step_register.insert(node, steps.len() as u16);
            counted += usize::from(!matches!(op, TOp::Cast(_)));
            steps.push((op, refs));
        }
        if steps.len() < 2 && sum_over.is_none() {
            continue;
        }
        let inputs = operands.len();
        let resolve = |r: &Ref| match *r {
            Ref::Operand(k) => k,
            Ref::Step(s) => inputs as u16 + s,
        };
        let program: Vec<(TOp, Registers)> = steps
            .iter()
            .map(|(op, refs)| (op.clone(), refs.iter().map(resolve).collect()))
            .collect();
        let result = (inputs + program.len() - 1) as u16;
        replacements.push((
            group_root,
            fused_kernel(inputs, program, result, sum_over),
            operands.into_iter().collect(),
        ));
        made += 1;
    }
    for (root, kernel, args) in replacements {
        kernels[root] = Some((kernel, args));
    }
    // Recompute what the roots reach.
    needed.iter_mut().for_each(|flag| *flag = false);
    for &root in roots {
        needed[root] = true;
    }
    for index in (0..n).rev() {
        if needed[index]
            && let Some((_, args)) = &kernels[index]
        {
            for &arg in args.clone().iter() {
                needed[arg] = true;
            }
        }
    }
    made
}

/// A reference inside a group being built.
#[derive(Clone, Copy)]
enum Ref {
    Operand(u16),
    Step(u16),
}

//! Compiling a tensor program into a `Tape`: keep what the roots reach,
//! turn stop-gradients into aliases and transposes feeding matrix products
//! into flags, fuse elementwise chains, then assign slots by liveness and
//! measure the peak memory.

use super::{FusedGroup, Instruction, Kernel, Slot, Tape, TapeStats};
use crate::ir::shape::numel;
use crate::ir::{Shape, TNode, TOp};
use egg::{Id, RecExpr};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Compiles `roots` of `program` (whose nodes' shapes are `shapes`) into a
/// tape with `inputs` run-time inputs of the given shapes.
pub fn compile(
    program: &RecExpr<TNode>,
    shapes: &[Shape],
    roots: &[Id],
    input_shapes: &[Shape],
) -> Tape {
    let rounded = super::rounding::round_f32_results(program, shapes, roots);
    let (program, shapes, roots) = match &rounded {
        Some((program, shapes, roots)) => (program, &shapes[..], &roots[..]),
        None => (program, shapes, roots),
    };
    // Only a pad along the first axis can be pushed: without one the
    // program stays as it is (no copy, no second hash-consing).
    let pushed;
    let (program, shapes, roots) = if super::push_pads::has_first_axis_pad(program) {
        pushed = super::push_pads::push_pads(program, shapes, roots);
        (&pushed.0, &pushed.1[..], &pushed.2[..])
    } else {
        (program, shapes, roots)
    };
    let nodes = program.as_ref();
    let dtypes = crate::ir::dtypes::dtypes_of(nodes);
    // An f32 product runs in f32 arithmetic on the CPU (each backend
    // gives f32 numbers): the rounding after it is the product itself.
    let single = |index: usize| {
        matches!(nodes[index].op, TOp::MatMul) && dtypes[index] == crate::dtype::DType::F32
    };
    // Aliases: a stop-gradient is its operand, and a call with declared
    // partials its value (the partials serve derivative sweeps only).
    let mut alias: Vec<usize> = (0..nodes.len()).collect();
    for (index, node) in nodes.iter().enumerate() {
        // Values are held as f64, so a conversion to f64 is its operand.
        if let TOp::StopGradient
        | TOp::Tag(_)
        | TOp::Linearized
        | TOp::Custom(_)
        | TOp::Cast(crate::dtype::DType::F64 | crate::dtype::DType::Weak) = node.op
        {
            alias[index] = alias[usize::from(node.children[0])];
        }
        if let TOp::Cast(crate::dtype::DType::F32) = node.op
            && single(alias[usize::from(node.children[0])])
        {
            alias[index] = alias[usize::from(node.children[0])];
        }
    }
    let resolve = |id: Id| alias[usize::from(id)];
    // Kernels, with transposed matrix operands folded into flags.
    let mut kernels: Kernels = vec![None; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        if alias[index] != index {
            continue;
        }
        let mut args: SmallVec<[usize; 3]> = node.children.iter().map(|&c| resolve(c)).collect();
        let kernel = match node.op {
            TOp::MatMul => {
                let mut flags = [false, false];
                // Flags serve plain matrix products; stacks keep their
                // transposes.
                let plain = args.iter().all(|&a| shapes[a].len() <= 2);
                for (k, arg) in args.iter_mut().enumerate().filter(|_| plain) {
                    if let Some(inner) = plain_transpose(nodes, shapes, *arg) {
                        flags[k] = true;
                        *arg = alias[inner];
                    }
                }
                Kernel::Gemm {
                    ta: flags[0],
                    tb: flags[1],
                    single: single(index),
                }
            }
            ref op if op.is_elementwise() => {
                // Elementwise kernels broadcast their operands themselves.
                for arg in args.iter_mut() {
                    if let TOp::Broadcast(_) = nodes[*arg].op {
                        *arg = resolve(nodes[*arg].children[0]);
                    }
                }
                Kernel::Op(op.clone())
            }
            TOp::Scan(ref spec) => Kernel::Loop(std::sync::Arc::new(super::loops::LoopTapes::new(
                spec, false,
            ))),
            TOp::ScanVjp(ref spec) => Kernel::Loop(std::sync::Arc::new(
                super::loops::LoopTapes::new(spec, true),
            )),
            ref op => Kernel::Op(op.clone()),
        };
        kernels[index] = Some((kernel, args));
    }
    // What the roots reach.
    let mut needed = vec![false; nodes.len()];
    for &root in roots {
        needed[resolve(root)] = true;
    }
    for index in (0..nodes.len()).rev() {
        if needed[index]
            && let Some((_, args)) = &kernels[index]
        {
            for &arg in args {
                needed[arg] = true;
            }
        }
    }
    let root_values: Vec<usize> = roots.iter().map(|&r| resolve(r)).collect();
    let fused = super::fuse::fuse(&mut kernels, &mut needed, shapes, &root_values);
    let single =
        super::storage::f32_storage(&kernels, &needed, nodes, &dtypes, shapes, &root_values);
    let mut tape = schedule(
        &kernels,
        (&needed, &single),
        shapes,
        &root_values,
        input_shapes,
        fused,
    );
    tape.output_dtypes = roots.iter().map(|&r| dtypes[usize::from(r)]).collect();
    tape
}

/// `Some(x)` when node `index` is `x` transposed as a matrix.
fn plain_transpose(nodes: &[TNode], shapes: &[Shape], index: usize) -> Option<usize> {
    match &nodes[index].op {
        TOp::Transpose(perm) if perm[..] == [1, 0] => {
            let inner = usize::from(nodes[index].children[0]);
            (shapes[inner].len() == 2).then_some(inner)
        }
        _ => None,
    }
}

/// The bytes of a value of `shape`, kept in f32 storage when `single`.
fn bytes(shape: &[usize], single: bool) -> usize {
    numel(shape).max(1) * if single { 4 } else { 8 }
}

/// Orders the needed kernels (their index order is topological), assigns
/// slots reusing dead ones of the same size, and counts memory and flops.
fn schedule(
    kernels: &Kernels,
    (needed, single): (&[bool], &[bool]),
    shapes: &[Shape],
    roots: &[usize],
    input_shapes: &[Shape],
    fused_groups: usize,
) -> Tape {
    let order: Vec<usize> = (0..kernels.len())
        .filter(|&i| needed[i] && kernels[i].is_some())
        .collect();
    // Last use of each value (roots live to the end), by node: plain
    // vectors, so a tape of millions of instructions is scheduled in
    // linear time and little memory.
    const UNUSED: usize = usize::MAX - 1;
    let mut last_use: Vec<usize> = vec![UNUSED; kernels.len()];
    for (p, &index) in order.iter().enumerate() {
        last_use[index] = p;
        if let Some((_, args)) = &kernels[index] {
            for &arg in args {
                last_use[arg] = p;
            }
        }
    }
    for &root in roots {
        last_use[root] = usize::MAX;
    }
    // Values in index order, so each list comes out sorted.
    let mut dying_at: Vec<SmallVec<[usize; 2]>> = vec![SmallVec::new(); order.len()];
    for (value, &p) in last_use.iter().enumerate() {
        if p < UNUSED {
            dying_at[p].push(value);
        }
    }
    let mut free: BTreeMap<usize, Vec<Slot>> = BTreeMap::new();
    let mut slot_of: Vec<Slot> = vec![Slot::MAX; kernels.len()];
    let mut slots: Slot = 0;
    let mut instructions = Vec::with_capacity(order.len());
    let (mut live, mut peak, mut total, mut flops) = (0usize, 0usize, 0usize, 0u64);
    for (p, &index) in order.iter().enumerate() {
        let (kernel, args) = kernels[index].as_ref().expect("scheduled kernels exist");
        let shape = &shapes[index];
        let size = bytes(shape, single[index]);
        let out = match free.get_mut(&size).and_then(Vec::pop) {
            Some(slot) => slot,
            None => {
                slots += 1;
                slots - 1
            }
        };
        slot_of[index] = out;
        live += size;
        total += size;
        peak = peak.max(live);
        flops += kernel_flops(kernel, args, shapes, shape);
        let mut frees: SmallVec<[Slot; 2]> = SmallVec::new();
        for &value in &dying_at[p] {
            let slot = slot_of[value];
            frees.push(slot);
            free.entry(bytes(&shapes[value], single[value]))
                .or_default()
                .push(slot);
            live -= bytes(&shapes[value], single[value]);
        }
        instructions.push(Instruction {
            op: kernel.clone(),
            args: args.iter().map(|&a| slot_of[a]).collect(),
            out,
            shape: shape.clone(),
            frees,
            single: single[index],
        });
    }
    let stats = TapeStats {
        instructions: instructions.len(),
        values: instructions
            .iter()
            .filter(|i| !matches!(i.op, Kernel::Op(TOp::Input { .. })))
            .count(),
        peak_bytes: peak,
        total_bytes: total,
        flops,
        fused_groups,
        memory_budget: None,
        rematerialized: 0,
    };
    Tape {
        instructions,
        slots: slots as usize,
        input_shapes: input_shapes.to_vec(),
        outputs: roots.iter().map(|&r| slot_of[r]).collect(),
        output_shapes: roots.iter().map(|&r| shapes[r].clone()).collect(),
        output_dtypes: vec![crate::dtype::DType::F64; roots.len()],
        stats,
        id: super::fresh_id(),
    }
}

fn kernel_flops(kernel: &Kernel, args: &[usize], shapes: &[Shape], shape: &[usize]) -> u64 {
    let n = numel(shape) as u64;
    match kernel {
        Kernel::Gemm { ta, .. } => {
            // The contracted axis: the last of the first operand (its
            // first for a transposed matrix); stacks contract their last.
            let a = &shapes[args[0]];
            let inner = match a.len() {
                1 => a[0],
                2 if *ta => a[0],
                rank => a[rank - 1],
            };
            2 * n * inner as u64
        }
        Kernel::Fused(group) => {
            let elements = group.sum_over.as_deref().map_or(n, |s| numel(s) as u64);
            elements * (group.steps.len() as u64 + u64::from(group.sum_over.is_some()))
        }
        Kernel::Op(op) if op.is_elementwise() => n,
        Kernel::Op(TOp::Reduce { .. } | TOp::ArgExtreme { .. }) => numel(&shapes[args[0]]) as u64,
        Kernel::Op(TOp::Op(op)) => {
            let operands: SmallVec<[&[usize]; 3]> = args.iter().map(|&a| &shapes[a][..]).collect();
            op.flops(&operands, shape)
        }
        Kernel::Op(_) => 0,
        Kernel::Loop(tapes) => tapes.flops(),
    }
}

/// Per node: its kernel and operand nodes (`None` for aliases).
pub(super) type Kernels = Vec<Option<(Kernel, SmallVec<[usize; 3]>)>>;

/// Registers of a fused group referring to operands or earlier steps.
pub(super) type Registers = SmallVec<[u16; 3]>;

/// Builds a `FusedGroup` kernel (used by `fuse`).
pub(super) fn fused_kernel(
    inputs: usize,
    steps: Vec<(TOp, Registers)>,
    result: u16,
    sum_over: Option<Shape>,
) -> Kernel {
    Kernel::Fused(std::sync::Arc::new(FusedGroup {
        inputs,
        steps,
        results: SmallVec::from_slice(&[result]),
        sum_over,
    }))
}

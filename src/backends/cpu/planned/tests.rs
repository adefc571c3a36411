//! Plans against the general executor: programs mixing views, data
//! movement, elementwise groups, reductions and products, with slots
//! reused, must give the same numbers both ways.

use super::super::execute::{Buf, run};
use super::Plan;
use crate::ir::TensorGraph;
use crate::ir::math::language::Math;
use crate::ir::op::{ReduceOp, TOp};
use crate::tape::compile::compile;
use egg::{Id, RecExpr};
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

/// Deterministic numbers for an input of `shape`.
fn input(shape: &[usize], seed: f64) -> Buf {
    let n: usize = shape.iter().product();
    if shape.is_empty() {
        return Buf::Scalar(seed.sin());
    }
    let data: Vec<f64> = (0..n)
        .map(|i| ((i as f64 + 1.0) * 0.37 + seed).sin())
        .collect();
    Buf::Array(Rc::new(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()))
}

/// Runs `roots` of `graph` (inputs `shapes`) both ways and compares, with
/// native code (steps fused into programs) and interpreted; returns how
/// many fused steps the native plan has.
fn check(graph: &TensorGraph, roots: &[Id], shapes: &[Vec<usize>]) -> usize {
    let mut fused = 0;
    for native in [true, false] {
        crate::backends::cpu::native::set_native_kernels(native);
        let count = check_once(graph, roots, shapes);
        if native {
            fused = count;
        } else {
            assert_eq!(count, 0, "no program without native code");
        }
    }
    crate::backends::cpu::native::set_native_kernels(true);
    fused
}

fn check_once(graph: &TensorGraph, roots: &[Id], shapes: &[Vec<usize>]) -> usize {
    let program = RecExpr::from(graph.nodes().to_vec());
    let input_shapes: Vec<_> = shapes.iter().map(|s| s.as_slice().into()).collect();
    let tape = compile(&program, graph.shapes(), roots, &input_shapes);
    let plan = Plan::new(&tape).expect("a tape without loops is planned");
    let inputs: Vec<Buf> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| input(s, k as f64))
        .collect();
    let expected = run(&tape, &inputs).unwrap();
    // On flat buffers, as loops run it.
    let flat_inputs: Vec<Vec<f64>> = inputs
        .iter()
        .map(|b| b.to_array().iter().copied().collect())
        .collect();
    let input_slices: Vec<&[f64]> = flat_inputs.iter().map(|v| &v[..]).collect();
    let mut flat_outputs: Vec<Vec<f64>> = expected
        .iter()
        .map(|e| vec![f64::NAN; e.to_array().len()])
        .collect();
    {
        let mut outputs: Vec<&mut [f64]> = flat_outputs.iter_mut().map(|v| &mut v[..]).collect();
        plan.run_flat(&input_slices, &mut outputs).unwrap();
    }
    for (g, e) in flat_outputs.iter().zip(&expected) {
        for (x, y) in g.iter().zip(e.to_array().iter()) {
            assert!(
                (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                "flat: {x} vs {y}\n{tape}"
            );
        }
    }
    // Twice: the second run reuses the first one's buffers.
    for _ in 0..2 {
        let got = plan.run(&inputs).unwrap();
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.shape(), e.shape());
            let (g, e) = (g.to_array(), e.to_array());
            for (x, y) in g.iter().zip(e.iter()) {
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                    "{x} vs {y}\n{tape}"
                );
            }
        }
    }
    plan.fused_steps()
}

fn op(graph: &mut TensorGraph, op: TOp, children: &[Id]) -> Id {
    graph.add(op, children).expect("valid shapes")
}

#[test]
fn views_and_movements_agree_with_the_executor() {
    let mut g = TensorGraph::new();
    let a = g.input(0, &[4, 6], crate::dtype::DType::F64);
    let b = g.input(1, &[6], crate::dtype::DType::F64);
    let s = g.input(2, &[], crate::dtype::DType::F64);
    let rows = op(
        &mut g,
        TOp::Slice {
            axis: 0,
            start: 1,
            end: 3,
        },
        &[a],
    );
    let cols = op(
        &mut g,
        TOp::Slice {
            axis: 1,
            start: 2,
            end: 5,
        },
        &[a],
    );
    let flat = g.reshape(rows, &[12]);
    let padded = op(
        &mut g,
        TOp::Pad {
            axis: 1,
            before: 1,
            after: 2,
        },
        &[cols],
    );
    let t = op(
        &mut g,
        TOp::Transpose(smallvec::SmallVec::from_slice(&[1, 0])),
        &[a],
    );
    let wide = g.broadcast(b, &[4, 6]);
    let joined = op(&mut g, TOp::Concat(0), &[a, wide, a]);
    let side = op(&mut g, TOp::Concat(1), &[a, cols]);
    let rolled = op(&mut g, TOp::Roll { axis: 1, shift: 2 }, &[a]);
    let scaled = g.map(Math::Mul([Id::from(0); 2]), &[a, s]);
    let mixed = g.map(Math::Add([Id::from(0); 2]), &[scaled, b]);
    let squashed = g.map(Math::Sigmoid([Id::from(0)]), &[mixed]);
    let total = g.sum_axes(squashed, &[0, 1], false);
    let by_rows = g.sum_axes(t, &[1], true);
    let by_cols = g.sum_axes(a, &[0], false);
    let max = op(
        &mut g,
        TOp::Reduce {
            op: ReduceOp::Max,
            axes: smallvec::SmallVec::from_slice(&[1]),
            keepdims: false,
        },
        &[joined],
    );
    let product = op(&mut g, TOp::MatMul, &[a, t]);
    let lse = |axes: &[u8]| {
        TOp::Op(crate::ir::ops::Op::LogSumExp(
            crate::ir::ops::reduction::LogSumExp {
                axes: smallvec::SmallVec::from_slice(axes),
            },
        ))
    };
    let lse_rows = op(&mut g, lse(&[1]), &[a]);
    let lse_columns = op(&mut g, lse(&[0]), &[joined]);
    let lse_all = op(&mut g, lse(&[0, 1]), &[a]);
    let roots = [
        flat,
        padded,
        t,
        joined,
        side,
        rolled,
        squashed,
        total,
        by_rows,
        by_cols,
        max,
        product,
        lse_rows,
        lse_columns,
        lse_all,
    ];
    let fused = check(&g, &roots, &[vec![4, 6], vec![6], vec![]]);
    assert!(
        fused >= 1,
        "movements, groups and reductions run as programs"
    );
}

#[test]
fn slots_reused_under_live_views_keep_their_values() {
    // Many slices of one value, each reshaped and used late: the tape
    // reuses slots while the views are alive.
    let mut g = TensorGraph::new();
    let a = g.input(0, &[4, 14], crate::dtype::DType::F64);
    let x = g.input(1, &[14], crate::dtype::DType::F64);
    let mut parts = Vec::new();
    for k in 0..4 {
        let row = op(
            &mut g,
            TOp::Slice {
                axis: 0,
                start: k,
                end: k + 1,
            },
            &[a],
        );
        let row = g.reshape(row, &[14]);
        let row = g.map(Math::Mul([Id::from(0); 2]), &[row, x]);
        let row = op(&mut g, TOp::Concat(0), &[row, x]);
        let row = g.reshape(row, &[2, 14]);
        let first = op(
            &mut g,
            TOp::Slice {
                axis: 0,
                start: 0,
                end: 1,
            },
            &[row],
        );
        parts.push(g.reshape(first, &[14]));
    }
    let mut total = parts[0];
    for &p in &parts[1..] {
        let t = g.map(Math::Tanh([Id::from(0)]), &[p]);
        total = g.map(Math::Add([Id::from(0); 2]), &[total, t]);
    }
    let joined = op(&mut g, TOp::Concat(0), &parts);
    check(&g, &[total, joined], &[vec![4, 14], vec![14]]);
}

#[test]
fn large_groups_run_in_chunks() {
    let mut g = TensorGraph::new();
    let a = g.input(0, &[3, 300], crate::dtype::DType::F64);
    let b = g.input(1, &[300], crate::dtype::DType::F64);
    let c = g.input(2, &[3, 1], crate::dtype::DType::F64);
    let e = g.map(Math::Exp([Id::from(0)]), &[a]);
    let m = g.map(Math::Mul([Id::from(0); 2]), &[e, b]);
    let d = g.map(Math::Sub([Id::from(0); 2]), &[m, c]);
    let total = g.sum_axes(d, &[0, 1], false);
    check(&g, &[d, total], &[vec![3, 300], vec![300], vec![3, 1]]);
}

#[test]
fn results_held_by_the_caller_are_never_overwritten() {
    let mut g = TensorGraph::new();
    let a = g.input(0, &[4], crate::dtype::DType::F64);
    let two = g.num(2.0);
    let doubled = g.map(Math::Mul([Id::from(0); 2]), &[a, two]);
    let program = RecExpr::from(g.nodes().to_vec());
    let tape = compile(&program, g.shapes(), &[doubled], &[[4].as_slice().into()]);
    let plan = Plan::new(&tape).expect("planned");
    let value = |buf: &Buf| buf.to_array().iter().copied().collect::<Vec<f64>>();
    // Each result is kept while later runs reuse what was let go.
    let mut held = Vec::new();
    for k in 0..8 {
        let result = plan.run(&[input(&[4], k as f64)]).unwrap().remove(0);
        let expected: Vec<f64> = value(&input(&[4], k as f64))
            .iter()
            .map(|x| 2.0 * x)
            .collect();
        assert_eq!(value(&result), expected);
        if k % 2 == 0 {
            held.push((result, expected));
        }
    }
    for (result, expected) in &held {
        assert_eq!(&value(result), expected, "a held result was written again");
    }
}

#[test]
fn reductions_over_scattered_axes_and_stacked_products_take_the_general_path() {
    let mut g = TensorGraph::new();
    let a = g.input(0, &[2, 3, 4], crate::dtype::DType::F64);
    let b = g.input(1, &[2, 4, 3], crate::dtype::DType::F64);
    let sum = op(
        &mut g,
        TOp::Reduce {
            op: ReduceOp::Sum,
            axes: smallvec::SmallVec::from_slice(&[0, 2]),
            keepdims: false,
        },
        &[a],
    );
    let lse = op(
        &mut g,
        TOp::Op(crate::ir::ops::Op::LogSumExp(
            crate::ir::ops::reduction::LogSumExp {
                axes: smallvec::SmallVec::from_slice(&[0, 2]),
            },
        )),
        &[a],
    );
    let stacked = op(&mut g, TOp::MatMul, &[a, b]);
    check(&g, &[sum, lse, stacked], &[vec![2, 3, 4], vec![2, 4, 3]]);
}

/// A long straight-line body (a loop traced step by step) is fused into
/// several programs of bounded length, and its steps' own kernels are not
/// compiled one by one: a traced step of 66,000 operations used to
/// compile a kernel per step and one program whose register allocation
/// took minutes.
#[test]
fn a_long_body_is_fused_in_bounded_programs_without_a_kernel_per_step() {
    let mut g = TensorGraph::new();
    let x = g.input(0, &[3], crate::dtype::DType::F64);
    let s = g.input(1, &[], crate::dtype::DType::F64);
    let mut y = x;
    for _ in 0..8000 {
        let scaled = g.map(Math::Mul([Id::from(0); 2]), &[y, s]);
        y = g.map(Math::Add([Id::from(0); 2]), &[scaled, x]);
    }
    let before = crate::backends::cpu::native::kernels_compiled();
    let fused = check(&g, &[y], &[vec![3], vec![]]);
    let compiled = crate::backends::cpu::native::kernels_compiled() - before;
    assert!(fused >= 2, "16,000 steps in {fused} program(s)");
    assert_eq!(compiled, 0, "fused steps need no kernels of their own");
}

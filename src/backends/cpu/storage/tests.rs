//! f32 storage against f64 storage: a tape whose f32 values are kept in
//! f32 (`Instruction::single`) gives the bits of the same tape holding
//! them as f64, forward and reverse, natively and interpreted.

use crate::ad::reverse;
use crate::backends::cpu::execute::{Buf, run};
use crate::dtype::DType;
use crate::ir::math::language::Math;
use crate::ir::math::partials::PartialBuilder;
use crate::ir::{Shape, TOp, TensorGraph};
use crate::tape::Tape;
use egg::{Id, RecExpr};
use ndarray::{ArrayD, IxDyn};
use smallvec::SmallVec;
use std::rc::Rc;

/// f32 numbers (held as f64) for an input of `shape`.
pub(crate) fn input(shape: &[usize], seed: f64) -> Buf {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|i| crate::dtype::round32(0.2 * ((i as f64 + 1.0) * 0.37 + seed).sin()))
        .collect();
    Buf::Array(Rc::new(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()))
}

/// An attention block and the gradient of its sum of squares: products
/// of stacks and of a stack by a shared matrix, head views, a softmax-like
/// group and its reduction.
pub(crate) fn attention(
    batch: usize,
    seq: usize,
    width: usize,
    heads: usize,
) -> (TensorGraph, Vec<Id>) {
    let mut graph = TensorGraph::new();
    let head = width / heads;
    let x = graph.input(0, &[batch, seq, width], DType::F32);
    let weights: Vec<Id> = (1..=4)
        .map(|k| graph.input(k, &[width, width], DType::F32))
        .collect();
    let split = |graph: &mut TensorGraph, y: Id| {
        let r = graph.reshape(y, &[batch, seq, heads, head]);
        graph.add_valid(TOp::Transpose(SmallVec::from_slice(&[0, 2, 1, 3])), &[r])
    };
    let project = |graph: &mut TensorGraph, w: Id| {
        let y = graph.add_valid(TOp::MatMul, &[x, w]);
        split(graph, y)
    };
    let q = project(&mut graph, weights[0]);
    let k = project(&mut graph, weights[1]);
    let v = project(&mut graph, weights[2]);
    let kt = graph.add_valid(TOp::Transpose(SmallVec::from_slice(&[0, 1, 3, 2])), &[k]);
    let scores = graph.add_valid(TOp::MatMul, &[q, kt]);
    let e = graph.map(Math::Exp([scores]), &[scores]);
    let total = graph.sum_axes(e, &[3], true);
    let p = graph.map(Math::Div([e, total]), &[e, total]);
    let o = graph.add_valid(TOp::MatMul, &[p, v]);
    let merged = graph.add_valid(TOp::Transpose(SmallVec::from_slice(&[0, 2, 1, 3])), &[o]);
    let merged = graph.reshape(merged, &[batch, seq, width]);
    let y = graph.add_valid(TOp::MatMul, &[merged, weights[3]]);
    let t = graph.map(Math::Tanh([y]), &[y]);
    let squares = graph.mul(t, t);
    let loss = graph.sum_axes(squares, &[0, 1, 2], false);
    let seed = graph.num(1.0);
    let mut wrt = vec![x];
    wrt.extend(&weights);
    let mut roots = vec![loss];
    roots.extend(reverse::vjp(&mut graph, &[(loss, seed)], &wrt));
    (graph, roots)
}

pub(crate) fn compiled(graph: &TensorGraph, roots: &[Id], inputs: usize) -> Tape {
    let program = RecExpr::from(graph.nodes().to_vec());
    let shapes: Vec<Shape> = graph.shapes().to_vec();
    let input_shapes: Vec<Shape> = (0..inputs).map(|k| shapes[k].clone()).collect();
    crate::tape::compile(&program, &shapes, roots, &input_shapes)
}

pub(crate) fn bits(outputs: &[Buf]) -> Vec<Vec<u64>> {
    outputs
        .iter()
        .map(|b| b.to_array().iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn f32_storage_gives_the_bits_of_f64_storage() {
    // Large enough for the parallel and native paths, and small.
    for (batch, seq, width, heads) in [(2, 8, 16, 2), (4, 64, 64, 4)] {
        let (graph, roots) = attention(batch, seq, width, heads);
        let tape = compiled(&graph, &roots, 5);
        let kept = tape.instructions.iter().filter(|i| i.single).count();
        assert!(kept >= 8, "{kept} values in f32 storage\n{tape}");
        let mut wide = tape.clone();
        wide.instructions.iter_mut().for_each(|i| i.single = false);
        let inputs: Vec<Buf> = (0..5)
            .map(|k| {
                let shape = graph.shape(Id::from(k)).to_vec();
                input(&shape, k as f64)
            })
            .collect();
        for native in [true, false] {
            crate::backends::cpu::native::set_native_kernels(native);
            let single = run(&tape, &inputs).unwrap();
            let double = run(&wide, &inputs).unwrap();
            // Twice: the second run reuses the first one's storage.
            let again = run(&tape, &inputs).unwrap();
            assert_eq!(bits(&single), bits(&double), "native {native}\n{tape}");
            assert_eq!(bits(&again), bits(&double), "native {native}, second run");
            for output in &single {
                let values = output.to_array();
                assert!(
                    values
                        .iter()
                        .all(|x| x.is_finite() && crate::dtype::round32(*x) == *x)
                );
            }
        }
        crate::backends::cpu::native::set_native_kernels(true);
    }
}

/// Reshapes of values that live on (read as views of their storage, f64
/// and f32), chained, read by products, groups at both shapes, a
/// reduction and a transpose, and returned.
fn reshapes(rows: usize, cols: usize) -> (TensorGraph, Vec<Id>) {
    let mut graph = TensorGraph::new();
    let x = graph.input(0, &[rows, cols], DType::F32);
    let w = graph.input(1, &[2, cols / 2, 3], DType::F32);
    // f32 storage: a product read as [rows * 2, cols / 2] and at its shape.
    let v = graph.map(Math::Tanh([x]), &[x]);
    let split = graph.reshape(v, &[2, rows, cols / 2]);
    let product = graph.add_valid(TOp::MatMul, &[split, w]);
    let again = graph.reshape(split, &[2 * rows, cols / 2]);
    let flipped = graph.add_valid(TOp::Transpose(SmallVec::from_slice(&[1, 0])), &[again]);
    let squares = graph.mul(v, v);
    // f64 storage: a value read by a reduction, reshaped and kept.
    let wide = graph.cast(x, DType::F64);
    let wide = graph.map(Math::Sin([wide]), &[wide]);
    let column = graph.reshape(wide, &[rows * cols, 1]);
    let total = graph.sum_axes(wide, &[0, 1], false);
    let shifted = graph.map(Math::Add([column, total]), &[column, total]);
    let roots = vec![product, flipped, squares, column, shifted, total, again];
    (graph, roots)
}

#[test]
fn reshapes_of_values_that_live_on_read_their_storage() {
    for (rows, cols) in [(3, 4), (96, 64)] {
        let (graph, roots) = reshapes(rows, cols);
        let tape = compiled(&graph, &roots, 2);
        let inputs: Vec<Buf> = (0..2)
            .map(|k| input(graph.shape(Id::from(k)), k as f64))
            .collect();
        let outputs = run(&tape, &inputs).unwrap();
        let x = inputs[0].to_array();
        let w = inputs[1].to_array();
        let round = crate::dtype::round32;
        let v = x.mapv(|a| round(a.tanh()));
        // Each [rows, cols / 2] block by its matrix, in f32.
        let split = v.to_shape(IxDyn(&[2, rows, cols / 2])).unwrap();
        let product = &outputs[0].to_array();
        for r in 0..rows {
            for h in 0..2 {
                for j in 0..3 {
                    let want: f32 = (0..cols / 2)
                        .map(|k| split[[h, r, k]] as f32 * w[[h, k, j]] as f32)
                        .sum();
                    let got = product[[h, r, j]];
                    assert!((got - f64::from(want)).abs() <= 1e-5 * (1.0 + got.abs()));
                }
            }
        }
        let again = v.to_shape(IxDyn(&[2 * rows, cols / 2])).unwrap();
        assert_eq!(outputs[6].to_array(), again.to_owned());
        assert_eq!(outputs[1].to_array(), again.t().to_owned());
        assert_eq!(outputs[2].to_array(), v.mapv(|a| round(a * a)));
        let wide = x.mapv(f64::sin);
        let total: f64 = wide.iter().sum();
        let column = wide.to_shape(IxDyn(&[rows * cols, 1])).unwrap().to_owned();
        // The backend's `sin` agrees with libm's to rounding.
        let near = |got: &ArrayD<f64>, want: &ArrayD<f64>| {
            assert_eq!(got.shape(), want.shape());
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= 1e-14 * (1.0 + w.abs()), "{g} against {w}");
            }
        };
        near(&outputs[3].to_array(), &column);
        near(&outputs[4].to_array(), &column.mapv(|a| a + total));
        assert!((outputs[5].to_array().sum() - total).abs() <= 1e-12 * wide.len() as f64);
    }
}

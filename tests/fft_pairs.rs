//! The Fourier transform of the operation table (`ir::ops::fft`, complex
//! numbers held as real pairs) differentiated through the driver: reverse
//! mode against central differences, forward mode with a batch of
//! tangents against the transform of each.

use epsilon::backends::cpu::Buf;
use epsilon::driver::{Driver, Settings};
use epsilon::ir::TOp;
use epsilon::ir::TensorGraph;
use epsilon::ir::math::language::Math;
use epsilon::ir::ops::fft::Fft;
use epsilon::ir::ops::{Definition, Op};
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

/// Deterministic numbers of `shape`.
fn numbers(shape: &[usize], seed: f64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| ((i as f64 + 1.0) * 0.731 + seed).sin() + 0.25 * ((i as f64) * 1.37).cos())
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
}

/// The operation's own kernel (checked against the DFT's definition in
/// its unit tests).
fn transform(x: &ArrayD<f64>, axis: u8, backward: bool) -> ArrayD<f64> {
    let op = Fft { axis, backward };
    let shape = op.shape(&[x.shape()]).unwrap();
    op.cpu(&[x.view()], &shape).unwrap()
}

fn assert_close(got: &ArrayD<f64>, want: &ArrayD<f64>, tolerance: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (g, w) in got.iter().zip(want.iter()) {
        assert!(
            (g - w).abs() <= tolerance * (1.0 + w.abs()),
            "{what}: {g} vs {w}"
        );
    }
}

/// Reverse mode through the driver against central differences, for a
/// real-valued function of the pairs: sum(w * sin(fft(x))).
#[test]
fn gradients_through_the_transform_match_central_differences() {
    let shape = [6, 3, 2];
    let x0 = numbers(&shape, 0.7);
    let w = numbers(&shape, 2.3);
    for (axis, backward) in [(0u8, false), (1, true)] {
        let value =
            |x: &ArrayD<f64>| -> f64 { (&w * &transform(x, axis, backward).mapv(f64::sin)).sum() };
        let mut graph = TensorGraph::new();
        let input = graph.input(0, &shape, epsilon::dtype::DType::F64);
        let weights = graph.input(1, &shape, epsilon::dtype::DType::F64);
        let y = graph
            .add(TOp::Op(Op::Fft(Fft { axis, backward })), &[input])
            .unwrap();
        let s = graph.map(Math::Sin([0.into()]), &[y]);
        let p = graph.map(Math::Mul([0.into(); 2]), &[weights, s]);
        let total = graph.sum_axes(p, &[0, 1, 2], false);
        let inputs = [
            Buf::Array(Rc::new(x0.clone())),
            Buf::Array(Rc::new(w.clone())),
        ];
        let mut driver = Driver::default();
        let (v, grads) = driver
            .value_and_grad(&mut graph, total, &[0], &inputs, Settings::default())
            .unwrap();
        assert!((v - value(&x0)).abs() < 1e-10 * v.abs().max(1.0));
        let g = grads[0].to_array();
        let h = 1e-6;
        for k in 0..x0.len() {
            let (mut up, mut down) = (x0.clone(), x0.clone());
            up.as_slice_mut().unwrap()[k] += h;
            down.as_slice_mut().unwrap()[k] -= h;
            let fd = (value(&up) - value(&down)) / (2.0 * h);
            let got = g.as_slice().unwrap()[k];
            assert!(
                (got - fd).abs() < 1e-6 * (1.0 + fd.abs()),
                "element {k}: {got} vs {fd}"
            );
        }
    }
}

/// Forward mode with a batch of two tangents (the rule shifts its axis
/// past the batch axis): the transform of each tangent, as it is linear.
#[test]
fn tangents_are_transformed_along_the_same_axis() {
    let shape = [5, 3, 2];
    let x0 = numbers(&shape, 0.2);
    let tangents = numbers(&[2, 5, 3, 2], 1.1);
    for (axis, backward) in [(0u8, false), (1, true)] {
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &shape, epsilon::dtype::DType::F64);
        let t = graph.input(1, &[2, 5, 3, 2], epsilon::dtype::DType::F64);
        let y = graph
            .add(TOp::Op(Op::Fft(Fft { axis, backward })), &[x])
            .unwrap();
        let out = epsilon::ad::forward::jvp(&mut graph, &[(x, t)], &[y], Some(2))[0];
        let inputs = [
            Buf::Array(Rc::new(x0.clone())),
            Buf::Array(Rc::new(tangents.clone())),
        ];
        let got = Driver::default()
            .run(&graph, &[out], &inputs, Settings::default())
            .unwrap()[0]
            .to_array();
        for b in 0..2 {
            let tb = tangents.index_axis(ndarray::Axis(0), b).to_owned();
            let want = transform(&tb, axis, backward);
            let gb = got.index_axis(ndarray::Axis(0), b).to_owned();
            assert_close(&gb, &want, 1e-12, &format!("tangent {b}"));
        }
    }
}

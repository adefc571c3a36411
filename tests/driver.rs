//! The differentiation driver's Rust API on programs built without the
//! Lisp layer: a `TensorGraph` made by hand, its gradient appended and
//! compiled by the driver, the tape found again in the cache, and the
//! numbers checked against central finite differences.

use epsilon::backends::cpu::Buf;
use epsilon::driver::{Driver, DriverError, RequestError, Settings};
use epsilon::dtype::DType;
use epsilon::ir::TensorGraph;
use epsilon::ir::math::language::Math;
use ndarray::ArrayD;
use std::rc::Rc;

/// `sum(sin(x) * y) + exp(x0)`-like programs: sum(sin(x) * y) for vectors
/// x and y of length n.
fn program(n: usize) -> (TensorGraph, egg::Id) {
    let mut graph = TensorGraph::new();
    let x = graph.input(0, &[n], DType::F64);
    let y = graph.input(1, &[n], DType::F64);
    let sin = graph.map(Math::Sin([0.into()]), &[x]);
    let product = graph.map(Math::Mul([0.into(), 1.into()]), &[sin, y]);
    let total = graph.sum_axes(product, &[0], false);
    (graph, total)
}

fn buffer(values: &[f64]) -> Buf {
    Buf::from_array(Rc::new(
        ArrayD::from_shape_vec(vec![values.len()], values.to_vec()).unwrap(),
    ))
}

fn value(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a.sin() * b).sum()
}

#[test]
fn a_hand_built_program_has_the_gradient_finite_differences_give() {
    let x = [0.3, -1.2, 2.5, 0.9];
    let y = [1.5, 0.25, -0.75, 2.0];
    let (mut graph, output) = program(x.len());
    let mut driver = Driver::default();
    let (v, grads) = driver
        .value_and_grad(
            &mut graph,
            output,
            &[0, 1],
            &[buffer(&x), buffer(&y)],
            Settings::default(),
        )
        .expect("the gradient runs");
    assert!((v - value(&x, &y)).abs() < 1e-12, "value {v}");
    let h = 1e-6;
    for (k, gradient) in grads.iter().enumerate() {
        let g: Vec<f64> = gradient.to_array().iter().copied().collect();
        for (i, &g_i) in g.iter().enumerate() {
            let (mut plus, mut minus) = ((x, y), (x, y));
            if k == 0 {
                plus.0[i] += h;
                minus.0[i] -= h;
            } else {
                plus.1[i] += h;
                minus.1[i] -= h;
            }
            let fd = (value(&plus.0, &plus.1) - value(&minus.0, &minus.1)) / (2.0 * h);
            assert!(
                (g_i - fd).abs() < 1e-7,
                "d/d{} [{i}]: {g_i} vs {fd}",
                ["x", "y"][k],
            );
        }
    }
    assert_eq!((driver.tapes.hits, driver.tapes.misses), (0, 1));
}

#[test]
fn the_same_program_again_finds_its_tape() {
    let mut driver = Driver::default();
    for round in 0..3 {
        let (mut graph, output) = program(3);
        let inputs = [buffer(&[1.0, 2.0, 3.0]), buffer(&[round as f64, 1.0, -1.0])];
        driver
            .value_and_grad(&mut graph, output, &[0], &inputs, Settings::default())
            .expect("the gradient runs");
    }
    assert_eq!((driver.tapes.hits, driver.tapes.misses), (2, 1));
}

#[test]
fn a_gradient_of_a_tensor_or_of_a_missing_input_is_refused() {
    let mut driver = Driver::default();
    let mut graph = TensorGraph::new();
    let x = graph.input(0, &[2], DType::F64);
    let doubled = graph.map(Math::Add([0.into(), 1.into()]), &[x, x]);
    let refused = driver.value_and_grad(
        &mut graph,
        doubled,
        &[0],
        &[buffer(&[1.0, 2.0])],
        Settings::default(),
    );
    assert!(
        matches!(refused, Err(DriverError::Request(RequestError::Shape(ref m))) if m.contains("[2]")),
        "{refused:?}"
    );
    let (mut graph, output) = program(2);
    let refused = driver.value_and_grad(
        &mut graph,
        output,
        &[7],
        &[buffer(&[1.0, 2.0]), buffer(&[1.0, 2.0])],
        Settings::default(),
    );
    assert!(
        matches!(refused, Err(DriverError::Request(RequestError::Range(ref m))) if m.contains('7')),
        "{refused:?}"
    );
}

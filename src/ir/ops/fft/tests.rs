//! The transform against the definition of the DFT, its round trip, the
//! adjoint relation its reverse rule relies on, and shape errors (its
//! derivatives through the driver: `tests/fft_pairs.rs`).

use super::Fft;
use crate::ir::ops::Definition;
use ndarray::{ArrayD, IxDyn};
use std::f64::consts::PI;

/// Deterministic numbers of `shape`.
fn numbers(shape: &[usize], seed: f64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| ((i as f64 + 1.0) * 0.731 + seed).sin() + 0.25 * ((i as f64) * 1.37).cos())
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
}

/// The DFT by its definition along `axis` of pairs.
fn definition(x: &ArrayD<f64>, axis: usize, backward: bool) -> ArrayD<f64> {
    let shape = x.shape().to_vec();
    let len = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..shape.len() - 1].iter().product();
    let data = x.as_slice().unwrap();
    let sign = if backward { 1.0 } else { -1.0 };
    let mut out = vec![0.0; data.len()];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..len {
                let (mut re, mut im) = (0.0, 0.0);
                for j in 0..len {
                    let p = 2 * ((o * len + j) * inner + i);
                    let angle = sign * 2.0 * PI * (j * k) as f64 / len as f64;
                    let (c, s) = (angle.cos(), angle.sin());
                    re += data[p] * c - data[p + 1] * s;
                    im += data[p] * s + data[p + 1] * c;
                }
                let p = 2 * ((o * len + k) * inner + i);
                out[p] = re;
                out[p + 1] = im;
            }
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), out).unwrap()
}

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

#[test]
fn transforms_match_the_definition_of_the_dft() {
    for (shape, axis) in [
        (vec![8, 2], 0u8),
        (vec![7, 2], 0),
        (vec![3, 5, 2], 1),
        (vec![6, 3, 2], 0),
        (vec![2, 12, 3, 2], 1),
        (vec![1, 2], 0),
    ] {
        let x = numbers(&shape, axis as f64);
        for backward in [false, true] {
            let what = format!("{shape:?} along {axis}, backward {backward}");
            assert_close(
                &transform(&x, axis, backward),
                &definition(&x, usize::from(axis), backward),
                1e-12,
                &what,
            );
        }
        // Forward then backward is n times the identity.
        let n = shape[usize::from(axis)] as f64;
        let back = transform(&transform(&x, axis, false), axis, true);
        assert_close(&back, &x.mapv(|v| v * n), 1e-12, "round trip");
    }
}

/// Under the real inner product of pairs each direction is the other's
/// adjoint: <F x, y> = <x, F^H y>.
#[test]
fn the_backward_transform_is_the_adjoint_of_the_forward_one() {
    let shape = [5, 6, 2];
    let (x, y) = (numbers(&shape, 0.3), numbers(&shape, 1.9));
    for axis in [0u8, 1] {
        for backward in [false, true] {
            let left: f64 = (&transform(&x, axis, backward) * &y).sum();
            let right: f64 = (&x * &transform(&y, axis, !backward)).sum();
            assert!(
                (left - right).abs() < 1e-11 * left.abs().max(1.0),
                "{left} vs {right}"
            );
        }
    }
}

#[test]
fn operands_that_are_not_pairs_are_refused_with_their_shape() {
    let op = Fft {
        axis: 0,
        backward: false,
    };
    let e = op.shape(&[&[4, 3]]).unwrap_err();
    assert!(
        e.0.contains("last axis of 2") && e.0.contains("[4 3]"),
        "{}",
        e.0
    );
    let e = Fft {
        axis: 1,
        backward: false,
    }
    .shape(&[&[4, 2]])
    .unwrap_err();
    assert!(e.0.contains("axis 1 is out of range"), "{}", e.0);
}

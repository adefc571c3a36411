//! Reductions against a plain fold over every output element, on random
//! shapes (empty and length-1 axes included), axes and layouts
//! (contiguous, transposed, strided); large shapes that take the blocked
//! and parallel paths; the same bits on one thread as on many.

use super::{reduce, sum_of_squares};
use crate::ir::ReduceOp;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};
use proptest::prelude::*;

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

/// The reduction by definition: for each output element, a sequential
/// fold over the reduced elements in row-major order.
fn reference(op: ReduceOp, x: &ArrayViewD<'_, f64>, axes: &[u8]) -> ArrayD<f64> {
    let kept: Vec<usize> = (0..x.ndim())
        .filter(|a| !axes.contains(&(*a as u8)))
        .collect();
    let out_shape: Vec<usize> = kept.iter().map(|&a| x.shape()[a]).collect();
    let mut out = ArrayD::from_elem(IxDyn(&out_shape), f64::NAN);
    for (index, slot) in out.indexed_iter_mut() {
        let mut lane = x.clone();
        // Fix the kept axes, from the last so earlier axis numbers hold.
        for (k, &axis) in kept.iter().enumerate().rev() {
            lane = lane.index_axis_move(Axis(axis), index[k]);
        }
        *slot = match op {
            ReduceOp::Sum => lane.iter().fold(0.0, |a, &b| a + b),
            ReduceOp::Prod => lane.iter().fold(1.0, |a, &b| a * b),
            ReduceOp::Max => lane
                .iter()
                .fold(f64::NEG_INFINITY, |a, &b| crate::scalar::nan_max(a, b)),
            ReduceOp::Min => lane
                .iter()
                .fold(f64::INFINITY, |a, &b| crate::scalar::nan_min(a, b)),
        };
    }
    out
}

/// Sums and products agree to rounding; extremes exactly (NaN with NaN).
fn assert_close(op: ReduceOp, got: &ArrayD<f64>, want: &ArrayD<f64>, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: sizes");
    for (g, w) in got.iter().zip(want) {
        let same = match op {
            _ if w.is_nan() => g.is_nan(),
            ReduceOp::Max | ReduceOp::Min => g == w,
            _ => g == w || (g - w).abs() <= 1e-12 * w.abs().max(1.0),
        };
        assert!(same, "{what}: got {g}, want {w}");
    }
}

/// The result's shape without (or, with `keep`, with length-1) reduced axes.
fn result_shape(shape: &[usize], axes: &[u8], keep: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(a, &len)| match axes.contains(&(a as u8)) {
            true if keep => Some(1),
            true => None,
            false => Some(len),
        })
        .collect()
}

fn check(x: &ArrayViewD<'_, f64>, axes: &[u8]) {
    for op in OPS {
        for keep in [false, true] {
            let shape = result_shape(x.shape(), axes, keep);
            let got = reduce(op, x, axes, &shape);
            assert_eq!(got.shape(), &shape[..]);
            let want = reference(op, x, axes)
                .into_shape_with_order(IxDyn(&shape))
                .expect("sizes agree");
            let what = format!("{op:?} over {axes:?} of shape {:?}", x.shape());
            assert_close(op, &got, &want, &what);
        }
    }
}

/// Numbers near 1 (products stay finite), a few NaNs and infinities.
fn numbers(n: usize, seed: u64, specials: bool) -> Vec<f64> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            match state % 97 {
                0 if specials => f64::NAN,
                1 if specials => f64::INFINITY,
                _ => 0.5 + u,
            }
        })
        .collect()
}

fn array(shape: &[usize], seed: u64, specials: bool) -> ArrayD<f64> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), numbers(n, seed, specials)).expect("sizes agree")
}

/// A shape, a subset of its axes, a seed and a layout (0 contiguous,
/// 1 transposed, 2 every other element of a larger array).
fn case() -> impl Strategy<Value = (Vec<usize>, Vec<u8>, u64, u8)> {
    prop::collection::vec(
        prop_oneof![Just(0usize), Just(1), 2usize..6, 6usize..40],
        1..5,
    )
    .prop_flat_map(|shape| {
        let rank = shape.len();
        (
            Just(shape),
            prop::collection::vec(any::<bool>(), rank),
            any::<u64>(),
            0u8..3,
        )
    })
    .prop_map(|(shape, pick, seed, layout)| {
        let axes = (0..shape.len() as u8)
            .filter(|&a| pick[usize::from(a)])
            .collect();
        (shape, axes, seed, layout)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn reductions_match_a_plain_fold((shape, axes, seed, layout) in case()) {
        match layout {
            0 => check(&array(&shape, seed, true).view(), &axes),
            1 => {
                let reversed: Vec<usize> = shape.iter().rev().copied().collect();
                let base = array(&reversed, seed, true);
                check(&base.view().reversed_axes(), &axes);
            }
            _ => {
                let doubled: Vec<usize> = shape.iter().map(|&d| 2 * d).collect();
                let base = array(&doubled, seed, true);
                let strided = base.slice_each_axis(|_| Slice::new(0, None, 2));
                check(&strided, &axes);
            }
        }
    }
}

/// Shapes that take the long-row, column-block, piece and parallel paths.
#[test]
fn large_reductions_match_a_plain_fold() {
    let cases: &[(&[usize], &[u8])] = &[
        (&[3, 70_000], &[1]),
        (&[70_000, 3], &[0]),
        (&[9_000, 8], &[0]),
        (&[9_000, 8], &[1]),
        (&[2, 20_000], &[0]),
        (&[4, 600, 30], &[1]),
        (&[40, 50, 60], &[0, 2]),
        (&[40, 50, 60], &[0, 1]),
        (&[1, 50_000], &[0, 1]),
        (&[50_001], &[0]),
        (&[70_000, 1], &[0]),
    ];
    for (k, &(shape, axes)) in cases.iter().enumerate() {
        // Without NaNs, so sums are compared as numbers.
        check(&array(shape, k as u64 + 1, false).view(), axes);
    }
}

/// Every element is folded in the same order on any number of threads.
#[test]
fn reductions_give_the_same_bits_on_one_thread() {
    let cases: &[(&[usize], &[u8])] = &[
        (&[3, 70_000], &[1]),
        (&[70_000, 3], &[0]),
        (&[300, 400], &[0]),
        (&[40, 50, 60], &[0, 2]),
        (&[200_000], &[0]),
    ];
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a thread pool");
    for (k, &(shape, axes)) in cases.iter().enumerate() {
        let x = array(shape, k as u64 + 7, false);
        let out = result_shape(shape, axes, false);
        for op in OPS {
            let many = reduce(op, &x.view(), axes, &out);
            let one = single.install(|| reduce(op, &x.view(), axes, &out));
            let bits = |a: &ArrayD<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&many), bits(&one), "{op:?} over {axes:?} of {shape:?}");
        }
    }
}

/// `sum_of_squares` is the sum of the squared array, bit for bit, where
/// the result has more than one number; a sum of everything (`reduce` has
/// a blocked fold of its own) is the same number to rounding.
fn check_squares(x: &ArrayViewD<'_, f64>, axes: &[u8]) {
    let squared = x.mapv(|v| v * v);
    let shape = result_shape(x.shape(), axes, false);
    let want = reduce(ReduceOp::Sum, &squared.view(), axes, &shape);
    let got = sum_of_squares(x, axes, &shape);
    assert_eq!(got.shape(), want.shape());
    // One number out: every axis longer than 1 summed (`reduce_all`).
    let every_axis = got.len() == 1;
    for (g, w) in got.iter().zip(want.iter()) {
        if every_axis {
            assert!(
                g == w || (g - w).abs() <= 1e-12 * w.abs() || (g.is_nan() && w.is_nan()),
                "{g} vs {w} over {axes:?} of {:?}",
                x.shape()
            );
        } else {
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "{g} vs {w} over {axes:?} of {:?}",
                x.shape()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sums_of_squares_match_summed_squares((shape, axes, seed, _layout) in case()) {
        check_squares(&array(&shape, seed, true).view(), &axes);
    }
}

/// The blocked and parallel paths, with the squares summed as they are
/// read.
#[test]
fn large_sums_of_squares_match_summed_squares() {
    let cases: &[(&[usize], &[u8])] = &[
        (&[3, 70_000], &[1]),
        (&[70_000, 3], &[0]),
        (&[64, 64, 256], &[1]),
        (&[4, 600, 30], &[1]),
        (&[40, 50, 60], &[0, 2]),
        (&[2, 20_000], &[0]),
        (&[50_001], &[0]),
        (&[1, 20_000], &[1]),
    ];
    for (k, &(shape, axes)) in cases.iter().enumerate() {
        check_squares(&array(shape, k as u64 + 7, false).view(), axes);
    }
}

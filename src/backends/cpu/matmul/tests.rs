//! Matrix products against a triple loop, on random stacks whose batch
//! axes broadcast (missing, length 1, length 0), vectors, transposed
//! flags and operands that are not in row-major order.

use super::matmul;
use ndarray::{ArrayD, ArrayViewD, Dimension, IxDyn, Slice};
use proptest::prelude::*;

/// The product by definition, for operands of rank 2 or more (after the
/// flags are applied), leading axes broadcast.
fn reference(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>) -> ArrayD<f64> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[ra - 2], a.shape()[ra - 1], b.shape()[rb - 1]);
    let rank = ra.max(rb);
    let pad = |s: &[usize], r: usize| -> Vec<usize> {
        let mut v = vec![1; rank - r];
        v.extend_from_slice(&s[..r - 2]);
        v
    };
    let (la, lb) = (pad(a.shape(), ra), pad(b.shape(), rb));
    let batch: Vec<usize> = la
        .iter()
        .zip(&lb)
        .map(|(&x, &y)| if x == 1 { y } else { x })
        .collect();
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let full = |x: &ArrayViewD<'_, f64>, r: usize, c: usize| {
        let mut s = batch.clone();
        s.extend([r, c]);
        x.broadcast(IxDyn(&s)).expect("broadcasts").to_owned()
    };
    let (a, b) = (full(a, m, k), full(b, k, n));
    let mut out = ArrayD::zeros(IxDyn(&shape));
    for (index, slot) in out.indexed_iter_mut() {
        let index = index.slice().to_vec();
        let (lead, i, j) = (&index[..rank - 2], index[rank - 2], index[rank - 1]);
        let mut total = 0.0;
        for p in 0..k {
            let mut ai = lead.to_vec();
            ai.extend([i, p]);
            let mut bi = lead.to_vec();
            bi.extend([p, j]);
            total += a[IxDyn(&ai)] * b[IxDyn(&bi)];
        }
        *slot = total;
    }
    out
}

fn values(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| ((i as u64 * 2654435761 + seed) % 1000) as f64 / 250.0 - 2.0)
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).expect("sizes agree")
}

/// An array of `shape` holding `values(shape, seed)` in some memory
/// order: 0 row-major, 1 stored with its axes reversed, 2 every other
/// element of a larger array, 3 stored with its last two axes swapped (a
/// transposed stack), 4 with its last three axes stored in the order
/// (last, first, second) (a stack of transposed heads: rows lie in place
/// only with the last two axes swapped). Gives the storage and how to
/// view it.
fn laid_out(shape: &[usize], seed: u64, layout: u8) -> (ArrayD<f64>, u8) {
    let x = values(shape, seed);
    match layout {
        1 => {
            let mut stored = ArrayD::zeros(IxDyn(&shape.iter().rev().copied().collect::<Vec<_>>()));
            stored.assign(&x.view().reversed_axes());
            (stored, 1)
        }
        2 => {
            let doubled: Vec<usize> = shape.iter().map(|&d| 2 * d).collect();
            let mut stored = ArrayD::zeros(IxDyn(&doubled));
            stored
                .slice_each_axis_mut(|_| Slice::new(0, None, 2))
                .assign(&x);
            (stored, 2)
        }
        3 if shape.len() >= 2 => {
            let mut swapped = x.view();
            swapped.swap_axes(shape.len() - 2, shape.len() - 1);
            (swapped.as_standard_layout().into_owned(), 3)
        }
        4 if shape.len() >= 3 => {
            let (lead, rank) = (shape.len() - 3, shape.len());
            let perm: Vec<usize> = (0..lead).chain([rank - 1, lead, lead + 1]).collect();
            let stored = x.view().permuted_axes(IxDyn(&perm));
            (stored.as_standard_layout().into_owned(), 4)
        }
        _ => (x, 0),
    }
}

/// The view `laid_out` stands for.
fn view(stored: &(ArrayD<f64>, u8)) -> ArrayViewD<'_, f64> {
    match stored.1 {
        1 => stored.0.view().reversed_axes(),
        2 => stored.0.slice_each_axis(|_| Slice::new(0, None, 2)),
        3 => {
            let mut view = stored.0.view();
            let rank = view.ndim();
            view.swap_axes(rank - 2, rank - 1);
            view
        }
        4 => {
            let rank = stored.0.ndim();
            let lead = rank - 3;
            let perm: Vec<usize> = (0..lead).chain([lead + 1, lead + 2, lead]).collect();
            stored.0.view().permuted_axes(IxDyn(&perm))
        }
        _ => stored.0.view(),
    }
}

/// `x` with its last two axes swapped when `t` is set.
fn swap<'a>(x: &ArrayViewD<'a, f64>, t: bool) -> ArrayViewD<'a, f64> {
    let mut v = x.clone();
    if t {
        let r = v.ndim();
        v.swap_axes(r - 2, r - 1);
    }
    v
}

fn check(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>, ta: bool, tb: bool) {
    let got = matmul(a, b, ta, tb);
    let (ea, eb) = (swap(a, ta), swap(b, tb));
    // Vectors as NumPy promotes them.
    let ea = if ea.ndim() == 1 {
        ea.insert_axis(ndarray::Axis(0))
    } else {
        ea
    };
    let eb = if eb.ndim() == 1 {
        eb.insert_axis(ndarray::Axis(1))
    } else {
        eb
    };
    let mut want = reference(&ea, &eb);
    if b.ndim() == 1 {
        let last = want.ndim() - 1;
        want = want.index_axis_move(ndarray::Axis(last), 0);
    }
    if a.ndim() == 1 {
        let axis = want.ndim() - if b.ndim() == 1 { 1 } else { 2 };
        want = want.index_axis_move(ndarray::Axis(axis), 0);
    }
    assert_eq!(
        got.shape(),
        want.shape(),
        "{:?} @ {:?} ({ta}, {tb})",
        a.shape(),
        b.shape()
    );
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{g} against {w}");
    }
}

/// Operand shapes (as stored) and flags: a batch both broadcast from,
/// matrix sizes with 0 and 1, vectors where NumPy allows them.
fn case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, bool, bool)> {
    let size = || prop_oneof![Just(0usize), Just(1), 2usize..9, 9usize..40];
    (
        prop::collection::vec(prop_oneof![Just(0usize), Just(1), 2usize..4], 0..3),
        size(),
        size(),
        size(),
        (0usize..4, 0usize..4),
        prop::collection::vec(any::<bool>(), 6),
        0u8..4,
    )
        .prop_map(|(batch, m, k, n, (drop_a, drop_b), ones, vectors)| {
            let lead = |drop: usize, offset: usize| -> Vec<usize> {
                let drop = drop.min(batch.len());
                batch[drop..]
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if ones[(i + offset) % 6] { 1 } else { d })
                    .collect()
            };
            let (ta, tb) = (ones[4], ones[5]);
            let mut a = lead(drop_a, 0);
            a.extend(if ta { [k, m] } else { [m, k] });
            let mut b = lead(drop_b, 2);
            b.extend(if tb { [n, k] } else { [k, n] });
            match vectors {
                0 => (vec![k], vec![k, n], false, false),
                1 => (vec![m, k], vec![k], false, false),
                2 if m < 2 => (vec![k], vec![k], false, false),
                _ => (a, b, ta, tb),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn products_match_a_triple_loop(
        (a, b, ta, tb) in case(),
        layouts in (0u8..5, 0u8..5),
        seed in any::<u32>(),
    ) {
        let a = laid_out(&a, u64::from(seed), layouts.0);
        let b = laid_out(&b, u64::from(seed) + 1, layouts.1);
        check(&view(&a), &view(&b), ta, tb);
    }
}

/// Shapes that take the parallel, threaded, stacked-rows and split paths.
#[test]
fn large_products_match_a_triple_loop() {
    let cases: &[(&[usize], &[usize], bool, bool)] = &[
        (&[70, 80], &[80, 90], false, false),
        (&[80, 70], &[80, 90], true, false),
        (&[70, 80], &[90, 80], false, true),
        (&[300, 10, 10], &[300, 10, 10], false, false),
        (&[3, 50, 60], &[60, 70], false, false),
        (&[3, 60, 50], &[60, 70], true, false),
        (&[50, 60], &[4, 60, 7], false, false),
        (&[2, 1, 30, 20], &[5, 40, 20], false, true),
        (&[1, 64, 64], &[64, 64], false, false),
        // Tall: split by rows over the threads (`tall`), an uneven last
        // block, a transposed left operand, stacked rows.
        (&[9001, 24], &[24, 17], false, false),
        (&[24, 9001], &[24, 17], true, false),
        (&[3, 3001, 24], &[24, 17], false, false),
    ];
    for (i, &(a, b, ta, tb)) in cases.iter().enumerate() {
        let (a, b) = (values(a, i as u64), values(b, i as u64 + 9));
        check(&a.view(), &b.view(), ta, tb);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// f32 products (`product_single`) of f32 numbers: f32 numbers, within
    /// f32 accumulation's error of the f64 product, on every path.
    #[test]
    fn single_products_are_f32_numbers_near_the_product(
        (a, b, ta, tb) in case(),
        layouts in (0u8..5, 0u8..5),
        seed in any::<u32>(),
    ) {
        let round = |(mut x, layout): (ArrayD<f64>, u8)| {
            x.mapv_inplace(crate::dtype::round32);
            (x, layout)
        };
        let a = round(laid_out(&a, u64::from(seed), layouts.0));
        let b = round(laid_out(&b, u64::from(seed) + 1, layouts.1));
        let (va, vb) = (view(&a), view(&b));
        let k = if ta { va.shape()[va.ndim().saturating_sub(2)] } else { va.shape()[va.ndim() - 1] };
        let (wa, wb) = (super::Factor::Wide(va.view().into()), super::Factor::Wide(vb.view().into()));
        let got = super::product_f32(&wa, &wb, (ta, tb)).mapv(f64::from);
        let want = matmul(&va, &vb, ta, tb);
        prop_assert_eq!(got.shape(), want.shape());
        // Operands lie in [-2, 2]: each product term is at most 4.
        let bound = (k as f64 + 1.0) * f64::from(f32::EPSILON) * 4.0 * k as f64;
        // The same product from f32 storage.
        let (sa, sb) = (va.mapv(|x| x as f32), vb.mapv(|x| x as f32));
        let stored = super::product_f32(
            &super::Factor::F32(sa.view()),
            &super::Factor::F32(sb.view()),
            (ta, tb),
        );
        prop_assert_eq!(stored.mapv(f64::from), got.clone());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(*g, crate::dtype::round32(*g));
            prop_assert!((g - w).abs() <= bound.max(1e-30), "{} against {}", g, w);
        }
    }
}

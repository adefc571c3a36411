//! The dense linear algebra of the table beyond solves (`det`, `slogdet`,
//! `eigh`, `svd`, `qr`, `lstsq`, `matrix-exp`), each through the table
//! harness (`table::run_table`: `grad`, `vjp` and `jvp` against finite
//! differences, `jit`, `scan`, `hessian`, and stacks of matrices against
//! each matrix). Values against closed forms, degenerate points and
//! errors are in `table_linalg_values.rs`.
//!
//! Factorizations whose factors are unique only up to signs or rotations
//! are made well posed for finite differences: matrices get a dominant
//! diagonal with distinct entries (`10 (i + 1)`), so eigenvalues and
//! singular values are well separated and each vector's largest entry is
//! clear (the sign conventions then are smooth), or the tested function
//! is invariant to the signs (`v ∘ v`, `V diag(w) Vᵀ`).

use super::ops::{Instance, arg, instance};
use super::table::{Pick, run_table};
use super::*;

/// A `let*` binding of `flat`: `(flat t r)` joins the last `r` axes of
/// `t` into one, so results of stacks and of single matrices concatenate
/// alike.
const FLAT: &str =
    "(flat (lambda (t r) (reshape t (append (take (shape t) (- (rank t) r)) (list -1)))))";

/// `(dominant m n)`: the `m x n` matrix with `10 (i + 1)` at `(i, i)`.
fn dominant(m: usize, n: usize) -> String {
    format!("(* (* 10 (reshape (+ 1 (arange {m})) (list {m} 1))) (eye {m} {n}))")
}

/// A matrix shape, stacked (two matrices) when `stack`.
fn stack_of(stack: bool, m: usize, n: usize) -> Vec<usize> {
    if stack { vec![2, m, n] } else { vec![m, n] }
}

// ------------------------------------------------------------ determinants

#[test]
fn det_of_square_matrices() {
    run_table("det", true, |p| {
        let n = p.dims[0];
        let stack = p.variant % 2 == 1 && n <= 2;
        instance("(lambda (a) (det a))", vec![arg(stack_of(stack, n, n), R1)])
    });
}

#[test]
fn slogdet_of_square_matrices_of_either_sign() {
    run_table("slogdet", true, |p| {
        let n = p.dims[0];
        let stack = p.variant % 2 == 1 && n <= 2;
        // A shift of ±5 keeps the determinant away from 0, of either sign.
        let shift = if p.variant % 4 < 2 { 5 } else { -5 };
        instance(
            format!(
                "(lambda (a) (let ((r (slogdet (+ a (* {shift} (eye {n})))))) (+ (* 10 (car r)) (second r))))"
            ),
            vec![arg(stack_of(stack, n, n), R1)],
        )
    });
}

// ------------------------------------------------------------ eigh

/// `eigh` of a matrix with a dominant diagonal, every part of the result
/// (the sign convention is smooth there), or of any matrix through
/// sign-invariant functions (`v ∘ v` and the reconstruction).
fn eigh_case(p: &Pick) -> Instance {
    let n = p.dims[0];
    let stack = p.variant % 2 == 1 && n <= 2;
    let d = dominant(n, n);
    let body = match (p.variant / 2) % 3 {
        0 => format!(
            "(let* ({FLAT} (r (eigh (+ b {d})))) (concat (list (car r) (flat (second r) 2)) :axis -1))"
        ),
        1 => format!(
            "(let* ({FLAT} (r (eigh (+ b {d}))) (v (second r))) (concat (list (* (car r) (car r)) (flat (* v v) 2)) :axis -1))"
        ),
        _ => format!(
            "(let* ((r (eigh b)) (v (second r)) (w (car r))) (matmul (* v (reshape w (append (take (shape w) (- (rank w) 1)) (list 1 {n})))) (mT v)))"
        ),
    };
    instance(
        format!("(lambda (b) {body})"),
        vec![arg(stack_of(stack, n, n), R1)],
    )
}

#[test]
fn eigh_values_vectors_and_reconstruction() {
    run_table("eigh", true, eigh_case);
}

// ------------------------------------------------------------ svd

/// `svd` of tall, square and wide matrices with distinct dominant
/// singular values (every part of the result), or sign-invariant parts
/// (`u ∘ u`, `s`, `vt ∘ vt`).
fn svd_case(p: &Pick) -> Instance {
    let [a, b, _] = p.dims;
    let (m, n) = match p.variant % 3 {
        0 => (a + 1, b.min(a)),
        1 => (b.min(a), a + 1),
        _ => (a, a),
    };
    let stack = (p.variant / 3) % 2 == 1 && m * n <= 8;
    let d = dominant(m, n);
    let body = if (p.variant / 6).is_multiple_of(2) {
        format!(
            "(let* ({FLAT} (r (svd (+ x {d})))) (concat (list (flat (car r) 2) (second r) (flat (nth r 2) 2)) :axis -1))"
        )
    } else {
        format!(
            "(let* ({FLAT} (r (svd (+ x {d}))) (u (car r)) (vt (nth r 2))) (concat (list (flat (* u u) 2) (* (second r) (second r)) (flat (* vt vt) 2)) :axis -1))"
        )
    };
    instance(
        format!("(lambda (x) {body})"),
        vec![arg(stack_of(stack, m, n), R1)],
    )
}

#[test]
fn svd_thin_of_tall_square_and_wide_matrices() {
    run_table("svd", true, svd_case);
}

// ------------------------------------------------------------ qr

/// `qr` of tall, square and wide matrices (a dominant diagonal keeps `R`
/// well conditioned); both factors are unique there.
fn qr_case(p: &Pick) -> Instance {
    let [a, b, _] = p.dims;
    let (m, n) = match p.variant % 3 {
        0 => (a + 1, b.min(a)),
        1 => (b.min(a), a + 1),
        _ => (a, a),
    };
    let stack = (p.variant / 3) % 2 == 1 && m * n <= 8;
    let d = dominant(m, n);
    instance(
        format!(
            "(lambda (x) (let* ({FLAT} (r (qr (+ x {d})))) (concat (list (flat (car r) 2) (flat (second r) 2)) :axis -1)))"
        ),
        vec![arg(stack_of(stack, m, n), R1)],
    )
}

#[test]
fn qr_thin_of_tall_square_and_wide_matrices() {
    run_table("qr", true, qr_case);
}

// ------------------------------------------------------------ lstsq

/// `lstsq` with a tall or wide `a` (full rank), `b` a vector or a matrix.
fn lstsq_case(p: &Pick) -> Instance {
    let [a, b, k] = p.dims;
    let (m, n) = if p.variant.is_multiple_of(2) {
        (a + 1, b.min(a))
    } else {
        (b.min(a), a + 1)
    };
    let d = dominant(m, n);
    let b_shape = if (p.variant / 2).is_multiple_of(2) {
        vec![m]
    } else {
        vec![m, k]
    };
    instance(
        format!("(lambda (a b) (lstsq (+ a {d}) b))"),
        vec![arg(vec![m, n], R1), arg(b_shape, R2)],
    )
}

#[test]
fn lstsq_of_tall_and_wide_matrices() {
    run_table("lstsq", false, lstsq_case);
}

#[test]
fn lstsq_of_stacks() {
    run_table("lstsq stacks", true, |p| {
        let [a, b, _] = p.dims;
        let (m, n) = (a + 1, b.min(a));
        let d = dominant(m, n);
        instance(
            format!("(lambda (a b) (lstsq (+ a {d}) b))"),
            vec![arg(vec![m, n], R1), arg(vec![m, 2], R2)],
        )
    });
}

// ------------------------------------------------------------ matrix-exp

#[test]
fn matrix_exp_small_and_scaled() {
    run_table("matrix-exp", true, |p| {
        let n = p.dims[0];
        let stack = p.variant % 2 == 1 && n <= 2;
        // A scale of 3 gives 1-norms past the degree-13 threshold (5.37),
        // so the scaling and squaring runs.
        let scale = if p.variant % 4 < 2 { 1 } else { 3 };
        instance(
            format!("(lambda (a) (matrix-exp (* {scale} a)))"),
            vec![arg(stack_of(stack, n, n), R1)],
        )
    });
}

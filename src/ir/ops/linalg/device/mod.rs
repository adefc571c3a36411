//! The linear algebra of this folder on a device: each factorization as
//! solver-library routines ([`Routine`]) between small kernels that check
//! and prepare the operands (finite entries, the symmetrized matrix, the
//! column-major copy a routine needs) and finish the results as the CPU
//! kernels give them (triangles zeroed, the signs of eigenvectors,
//! singular vectors and `R`'s diagonal fixed the same way, the packed
//! layout of several results).
//!
//! A row-major matrix is the column-major storage of its transpose, so a
//! symmetric matrix needs no copy, a triangular solve from the left is a
//! column-major solve from the right, and the LU factors of `aᵀ` solve
//! `a` with the transposed solve.
//!
//! Each function returns `None` for empty matrices (nothing to compute);
//! those run the CPU kernel. Operand batches that broadcast against each
//! other are repeated to the full batch on the device first, except one
//! matrix shared by the whole batch, which the routines read as it is.

mod kernels;

use super::leading;
use crate::ir::ops::solver::{DeviceSolve, Failure, Routine, Slot, int_slots};
use kernels::*;

const A: Slot = Slot::Operand(0);
const B: Slot = Slot::Operand(1);

/// Fills `to` with the `count` right-hand sides of `size` numbers in
/// `batches.b`, which holds them all or one for all.
fn right_hand_sides(solve: &mut DeviceSolve, batches: &Batches, size: usize, to: Slot) {
    if batches.b_count == batches.count {
        solve.copy(batches.b, to, batches.count * size);
    } else {
        solve.kernel(repeated(batches.count, size), &[batches.b], to);
    }
}

/// The number of `n x n` matrices in `shape` and `n`.
fn square(shape: &[usize]) -> (usize, usize) {
    let n = shape[shape.len() - 1];
    (leading(shape).iter().product(), n)
}

/// `cholesky`: the symmetrized matrix factored in place (`potrf` on the
/// upper triangle of the column-major storage is the lower factor
/// row-major), the upper triangle zeroed.
pub fn cholesky(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let finite = solve.scratch(int_slots(count));
    let info = solve.scratch(int_slots(count));
    solve.kernel(not_finite(count, n * n), &[A], finite);
    solve.kernel(symmetrized(count, n), &[A], Slot::Out);
    let routine = Routine::Cholesky {
        n,
        batch: count,
        upper: true,
    };
    solve.routine(routine, &[], &[Slot::Out, info]);
    solve.kernel(zero_upper(count, n), &[], Slot::Out);
    solve.check(finite, count, Failure::NotFinite);
    solve.check(info, count, Failure::NotPositiveDefinite);
    Some(solve)
}

/// The operands of a solve as the device solves them: `a`'s matrices and
/// the right-hand sides, each either one for every solve or one shared
/// by the whole batch.
struct Batches {
    /// Where `a`'s matrices are.
    a: Slot,
    /// Where the right-hand sides are.
    b: Slot,
    /// Matrices in `a` (1: shared).
    a_count: usize,
    /// Right-hand sides in `b` (1: shared).
    b_count: usize,
    /// Solves.
    count: usize,
    /// The side of `a`.
    n: usize,
    /// Columns of each right-hand side.
    columns: usize,
}

/// The operands of a solve of `a` (shape) and `b`: an operand whose
/// batch axes broadcast other than as one matrix for the whole batch
/// (`[3 1]` against `[1 4]`) is first repeated to the full batch by a
/// kernel. `None` for an empty solve.
fn solve_batches(
    solve: &mut DeviceSolve,
    a: &[usize],
    b: &[usize],
    vector: bool,
) -> Option<Batches> {
    let (a_count, n) = square(a);
    let core = if vector { 1 } else { 2 };
    let b_lead = &b[..b.len() - core];
    let columns = if vector { 1 } else { b[b.len() - 1] };
    let b_count: usize = b_lead.iter().product();
    let a_lead = leading(a);
    let out_lead = crate::ir::shape::broadcast(&a_lead, b_lead).ok()?;
    let count: usize = out_lead.iter().product();
    if count * n * columns == 0 {
        return None;
    }
    let mut operand = |slot: Slot, lead: &[usize], own: usize, size: usize| {
        if *lead == out_lead[..] || own == 1 {
            return (slot, own);
        }
        let full = solve.scratch(count * size);
        solve.kernel(broadcast_batches(&out_lead, lead, size), &[slot], full);
        (full, count)
    };
    let (a_slot, a_count) = operand(A, &a_lead, a_count, n * n);
    let (b_slot, b_count) = operand(B, b_lead, b_count, n * columns);
    Some(Batches {
        a: a_slot,
        b: b_slot,
        a_count,
        b_count,
        count,
        n,
        columns,
    })
}

/// `triangular-solve`: `op(a) x = b` is `xᵀ op(a)ᵀ = bᵀ`, the solve from
/// the right of the column-major storage, with the triangle's side
/// swapped; a zero diagonal entry is an error, as on the CPU.
pub fn triangular_solve(
    a: &[usize],
    b: &[usize],
    lower: bool,
    transpose: bool,
    vector: bool,
) -> Option<DeviceSolve> {
    let mut solve = DeviceSolve::default();
    let batches = solve_batches(&mut solve, a, b, vector)?;
    let (a_count, count, n, columns) = (batches.a_count, batches.count, batches.n, batches.columns);
    let zero = solve.scratch(int_slots(a_count));
    solve.kernel(zero_diagonal(a_count, n), &[batches.a], zero);
    right_hand_sides(&mut solve, &batches, n * columns, Slot::Out);
    let routine = Routine::TriangularSolve {
        m: columns,
        n,
        batch: count,
        upper: lower,
        transpose,
        shared: a_count == 1 && count > 1,
    };
    solve.routine(routine, &[batches.a], &[Slot::Out]);
    solve.check(zero, a_count, Failure::SingularTriangle);
    Some(solve)
}

/// The LU factors of `a`'s matrices (of `aᵀ` as stored): scratch for the
/// finiteness codes, the factors, the pivots and `getrf`'s codes.
struct Factored {
    finite: Slot,
    lu: Slot,
    pivots: Slot,
    info: Slot,
}

fn factored(solve: &mut DeviceSolve, count: usize, n: usize) -> Factored {
    factored_from(solve, count, n, A, 0)
}

/// As [`factored`], the matrices at position `at` of `source`.
fn factored_from(
    solve: &mut DeviceSolve,
    count: usize,
    n: usize,
    source: Slot,
    at: usize,
) -> Factored {
    let finite = solve.scratch(int_slots(count));
    let lu = solve.scratch(count * n * n);
    let pivots = solve.scratch(int_slots(count * n));
    let info = solve.scratch(int_slots(count));
    solve.copy_from(source, at, lu, count * n * n);
    solve.kernel(not_finite(count, n * n), &[lu], finite);
    solve.routine(Routine::Lu { n, batch: count }, &[], &[lu, pivots, info]);
    Factored {
        finite,
        lu,
        pivots,
        info,
    }
}

/// `solve`: `getrf` of the stored `aᵀ`, then `getrs` with the other
/// transpose on the right-hand sides made column-major.
pub fn solve(a: &[usize], b: &[usize], transpose: bool, vector: bool) -> Option<DeviceSolve> {
    let mut solve = DeviceSolve::default();
    let batches = solve_batches(&mut solve, a, b, vector)?;
    let (a_count, count, n, columns) = (batches.a_count, batches.count, batches.n, batches.columns);
    let lu = factored_from(&mut solve, a_count, n, batches.a, 0);
    let info = solve.scratch(int_slots(count));
    let rhs = if columns == 1 {
        right_hand_sides(&mut solve, &batches, n, Slot::Out);
        Slot::Out
    } else {
        let rhs = solve.scratch(count * n * columns);
        let prepare = repeated_transposed(count, batches.b_count, n, columns);
        solve.kernel(prepare, &[batches.b], rhs);
        rhs
    };
    let routine = Routine::LuSolve {
        n,
        nrhs: columns,
        batch: count,
        transpose: !transpose,
        shared: a_count == 1 && count > 1,
    };
    solve.routine(routine, &[lu.lu, lu.pivots], &[rhs, info]);
    if columns > 1 {
        solve.kernel(transposed(count, columns, n), &[rhs], Slot::Out);
    }
    solve.check(lu.finite, a_count, Failure::NotFinite);
    solve.check(lu.info, a_count, Failure::Singular);
    Some(solve)
}

/// `det`: the product of the pivots of `getrf` and the interchanges'
/// sign (`det aᵀ = det a`); a singular matrix gives 0, not an error.
pub fn det(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let lu = factored(&mut solve, count, n);
    solve.kernel(lu_determinant(count, n), &[lu.lu, lu.pivots], Slot::Out);
    solve.check(lu.finite, count, Failure::NotFinite);
    Some(solve)
}

/// `slogdet`: signs and logarithms from the pivots of `getrf`.
pub fn slogdet(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let lu = factored(&mut solve, count, n);
    solve.kernel(lu_slogdet(count, n), &[lu.lu, lu.pivots], Slot::Out);
    solve.check(lu.finite, count, Failure::NotFinite);
    Some(solve)
}

/// `eigh`: `syevd` on the symmetrized matrix (its own column-major
/// storage), the result packed with the CPU's signs.
pub fn eigh(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let finite = solve.scratch(int_slots(count));
    let vectors = solve.scratch(count * n * n);
    let w = solve.scratch(count * n);
    let info = solve.scratch(int_slots(count));
    solve.kernel(not_finite(count, n * n), &[A], finite);
    solve.kernel(symmetrized(count, n), &[A], vectors);
    solve.routine(Routine::Eigh { n, batch: count }, &[], &[vectors, w, info]);
    solve.kernel(eigh_result(count, n), &[vectors, w], Slot::Out);
    solve.check(finite, count, Failure::NotFinite);
    solve.check(info, count, Failure::NotConverged("eigenvalue"));
    Some(solve)
}

/// The number of `m x n` matrices in `shape`, `m` and `n`.
fn matrices(shape: &[usize]) -> (usize, usize, usize) {
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    (leading(shape).iter().product(), m, n)
}

/// `svd`: `gesvd` (which needs at least as many rows as columns) on the
/// column-major copy of a tall matrix, or on the stored transpose of a
/// wide one, the result packed with the CPU's signs.
pub fn svd(a: &[usize]) -> Option<DeviceSolve> {
    let (count, m, n) = matrices(a);
    if count * m * n == 0 {
        return None;
    }
    let wide = m < n;
    let (rows, cols) = if wide { (n, m) } else { (m, n) };
    let mut solve = DeviceSolve::default();
    let finite = solve.scratch(int_slots(count));
    let work = solve.scratch(count * m * n);
    let s = solve.scratch(count * cols);
    let u = solve.scratch(count * rows * cols);
    let vt = solve.scratch(count * cols * cols);
    let info = solve.scratch(int_slots(count));
    solve.kernel(not_finite(count, m * n), &[A], finite);
    if wide {
        solve.copy(A, work, count * m * n);
    } else {
        solve.kernel(transposed(count, m, n), &[A], work);
    }
    solve.routine(
        Routine::Svd {
            m: rows,
            n: cols,
            batch: count,
        },
        &[],
        &[work, s, u, vt, info],
    );
    solve.kernel(svd_result(count, m, n, wide), &[s, u, vt], Slot::Out);
    solve.check(finite, count, Failure::NotFinite);
    solve.check(info, count, Failure::NotConverged("SVD"));
    Some(solve)
}

/// `qr`: `geqrf` and `orgqr` on the column-major copy, `r` kept between
/// them, the result packed with `r`'s diagonal non-negative.
pub fn qr(a: &[usize]) -> Option<DeviceSolve> {
    let (count, m, n) = matrices(a);
    let k = m.min(n);
    if count * k == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let finite = solve.scratch(int_slots(count));
    let work = solve.scratch(count * m * n);
    let tau = solve.scratch(count * k);
    let info = solve.scratch(int_slots(count));
    let r = solve.scratch(count * k * n);
    let basis_info = solve.scratch(int_slots(count));
    solve.kernel(not_finite(count, m * n), &[A], finite);
    solve.kernel(transposed(count, m, n), &[A], work);
    let batch = count;
    solve.routine(Routine::Qr { m, n, batch }, &[], &[work, tau, info]);
    solve.kernel(qr_r(count, m, n), &[work], r);
    solve.routine(
        Routine::QrBasis { m, n, batch },
        &[tau],
        &[work, basis_info],
    );
    solve.kernel(qr_result(count, m, n), &[work, r], Slot::Out);
    solve.check(finite, count, Failure::NotFinite);
    Some(solve)
}

/// `full-rank`: the operand copied, each matrix's diagonal checked.
pub fn full_rank(r: &[usize], size: usize) -> Option<DeviceSolve> {
    let (count, rows, cols) = matrices(r);
    if count * rows * cols == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    let codes = solve.scratch(Failure::RankDeficient.slots(count));
    solve.kernel(rank_check(count, rows, cols, size), &[A], codes);
    solve.copy(A, Slot::Out, count * rows * cols);
    solve.check(codes, count, Failure::RankDeficient);
    Some(solve)
}

/// `adjugate`: from the SVD as on the CPU, `C = σ U diag(Π) Vᵀ` with `σ`
/// the sign of `det(U) det(Vᵀ)`; a 1 x 1 matrix's is 1.
pub fn adjugate(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let mut solve = DeviceSolve::default();
    if n == 1 {
        let ones = kernel("ones", count, &[], "        out[e] = 1.0;");
        solve.kernel(ones, &[], Slot::Out);
        return Some(solve);
    }
    let size = count * (2 * n * n + n);
    let packed = solve.embed(svd(a)?, A, size);
    let u = factored_from(&mut solve, count, n, packed, 0);
    let vt = factored_from(&mut solve, count, n, packed, count * (n * n + n));
    let weights = solve.scratch(count * n);
    let s = solve.scratch(count * n);
    solve.copy_from(packed, count * n * n, s, count * n);
    solve.kernel(
        adjugate_weights(count, n),
        &[s, u.lu, u.pivots, vt.lu, vt.pivots],
        weights,
    );
    solve.kernel(adjugate_product(count, n), &[packed, weights], Slot::Out);
    Some(solve)
}

/// `matrix-exp`: scaling and squaring with the degree-13 Padé
/// approximant for every matrix (`s` from the 1-norm as on the CPU, which
/// takes a lower degree instead for matrices of small norm), the
/// denominator solved through `getrf`/`getrs`, the squarings by one block
/// per matrix.
pub fn matrix_exp(a: &[usize]) -> Option<DeviceSolve> {
    let (count, n) = square(a);
    if count * n == 0 {
        return None;
    }
    let size = count * n * n;
    let b = super::expm::coefficients(13);
    let mut solve = DeviceSolve::default();
    let finite = solve.scratch(int_slots(count));
    solve.kernel(not_finite(count, n * n), &[A], finite);
    let squarings = solve.scratch(count);
    solve.kernel(expm_squarings(count, n), &[A], squarings);
    let x = solve.scratch(size);
    solve.kernel(expm_scaled(count, n), &[A, squarings], x);
    let matrix = |solve: &mut DeviceSolve| solve.scratch(size);
    let (a2, a4, a6) = (matrix(&mut solve), matrix(&mut solve), matrix(&mut solve));
    solve.product(x, x, a2, n, count);
    solve.product(a2, a2, a4, n, count);
    solve.product(a4, a2, a6, n, count);
    // One of u, v: a6 (Σ high) + (Σ low + identity), times x for u.
    let half = |solve: &mut DeviceSolve, high: [f64; 3], low: [f64; 3], identity: f64| {
        let (h, g, l, sum) = (matrix(solve), matrix(solve), matrix(solve), matrix(solve));
        solve.kernel(combination(count, n, &high, 0.0), &[a6, a4, a2], h);
        solve.product(a6, h, g, n, count);
        solve.kernel(combination(count, n, &low, identity), &[a6, a4, a2], l);
        solve.kernel(sum_of(size, 1.0), &[g, l], sum);
        sum
    };
    let inner = half(&mut solve, [b[13], b[11], b[9]], [b[7], b[5], b[3]], b[1]);
    let v = half(&mut solve, [b[12], b[10], b[8]], [b[6], b[4], b[2]], b[0]);
    let u = matrix(&mut solve);
    solve.product(x, inner, u, n, count);
    let (numerator, denominator) = (matrix(&mut solve), matrix(&mut solve));
    solve.kernel(sum_of(size, 1.0), &[v, u], numerator);
    solve.kernel(sum_of(size, -1.0), &[v, u], denominator);
    // denominator⁻¹ numerator: the LU of the stored transpose solves with
    // the transposed solve, on the right-hand sides made column-major.
    let lu = factored_from(&mut solve, count, n, denominator, 0);
    let (rhs, info, r) = (
        matrix(&mut solve),
        solve.scratch(int_slots(count)),
        matrix(&mut solve),
    );
    solve.kernel(transposed(count, n, n), &[numerator], rhs);
    let routine = Routine::LuSolve {
        n,
        nrhs: n,
        batch: count,
        transpose: true,
        shared: false,
    };
    solve.routine(routine, &[lu.lu, lu.pivots], &[rhs, info]);
    solve.kernel(transposed(count, n, n), &[rhs], r);
    let squared = solve.scratch(2 * size);
    solve.kernel(expm_squared(count, n), &[r, squarings], squared);
    solve.copy(squared, Slot::Out, size);
    solve.check(finite, count, Failure::NotFinite);
    solve.check(lu.info, count, Failure::PadeSingular);
    Some(solve)
}

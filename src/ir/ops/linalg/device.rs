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
//! Each function returns `None` for empty matrices (nothing to compute)
//! and for operand batches that broadcast against each other other than
//! one matrix shared by the whole batch; those run the CPU kernel.

use super::leading;
use crate::ir::ops::CudaKernel;
use crate::ir::ops::solver::{DeviceSolve, Failure, Routine, Slot, int_slots};

const A: Slot = Slot::Operand(0);
const B: Slot = Slot::Operand(1);

/// A grid-stride kernel `name` over `threads` elements `e` whose loop body
/// is `body` (operands `inputs`, output `out`).
fn kernel(name: &'static str, threads: usize, inputs: &[&str], body: &str) -> CudaKernel {
    let mut params = String::from("long long n");
    for input in inputs {
        params.push_str(&format!(", const double* {input}"));
    }
    CudaKernel {
        name,
        source: format!(
            "extern \"C\" __global__ void {name}({params}, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
{body}
    }}
}}
"
        ),
        threads,
        zeroed: false,
        copy_first: false,
    }
}

/// Code 1 in `codes[b]` where matrix `b` (of `size` numbers) has a NaN or
/// an infinite entry (the output starts at zero).
fn not_finite(count: usize, size: usize) -> CudaKernel {
    let mut k = kernel(
        "not_finite",
        count * size,
        &["x"],
        &format!("        if (!isfinite(x[e])) ((int*)out)[e / {size}LL] = 1;"),
    );
    k.zeroed = true;
    k
}

/// `(a + aᵀ) / 2` of each `n x n` matrix.
fn symmetrized(count: usize, n: usize) -> CudaKernel {
    kernel(
        "symmetrized",
        count * n * n,
        &["x"],
        &format!(
            "        long long j = e % {n}LL, i = (e / {n}LL) % {n}LL, base = e - i * {n}LL - j;
        out[e] = 0.5 * (x[e] + x[base + j * {n}LL + i]);"
        ),
    )
}

/// Each row-major `rows x cols` matrix as the row-major `cols x rows`
/// transpose (the column-major storage of the matrix itself).
fn transposed(count: usize, rows: usize, cols: usize) -> CudaKernel {
    repeated_transposed(count, count, rows, cols)
}

/// As [`transposed`], `count` results from `sources` matrices taken in
/// turn (one matrix repeated when `sources` is 1).
fn repeated_transposed(count: usize, sources: usize, rows: usize, cols: usize) -> CudaKernel {
    kernel(
        "transposed",
        count * rows * cols,
        &["x"],
        &format!(
            "        long long size = {rows}LL * {cols}LL, b = e / size, r = e % size;
        long long i = r / {rows}LL, j = r % {rows}LL;
        out[e] = x[(b % {sources}LL) * size + j * {cols}LL + i];"
        ),
    )
}

/// `count` copies of the `size` numbers of `x`.
fn repeated(count: usize, size: usize) -> CudaKernel {
    kernel(
        "repeated",
        count * size,
        &["x"],
        &format!("        out[e] = x[e % {size}LL];"),
    )
}

/// Fills `to` with `count` right-hand sides of `size` numbers from `b`,
/// which holds them all or (`b_count` 1) one for all.
fn right_hand_sides(solve: &mut DeviceSolve, b_count: usize, count: usize, size: usize, to: Slot) {
    if b_count == count {
        solve.copy(B, to, count * size);
    } else {
        solve.kernel(repeated(count, size), &[B], to);
    }
}

/// Zeros above the diagonal of each row-major `n x n` matrix, in place.
fn zero_upper(count: usize, n: usize) -> CudaKernel {
    kernel(
        "zero_upper",
        count * n * n,
        &[],
        &format!(
            "        long long j = e % {n}LL, i = (e / {n}LL) % {n}LL;
        if (j > i) out[e] = 0.0;"
        ),
    )
}

/// `codes[b]` = 1 + the first zero diagonal entry of matrix `b` (`n x n`),
/// or 0.
fn zero_diagonal(count: usize, n: usize) -> CudaKernel {
    kernel(
        "zero_diagonal",
        count,
        &["a"],
        &format!(
            "        int code = 0;
        for (long long i = 0; i < {n}LL; i++) {{
            if (a[e * {n}LL * {n}LL + i * {n}LL + i] == 0.0) {{ code = (int)i + 1; break; }}
        }}
        ((int*)out)[e] = code;"
        ),
    )
}

/// The sign of the row interchanges of matrix `e` and the pivots, read
/// by the determinant kernels (`lu`, `pivots` as `getrf` left them).
fn pivots_loop(n: usize, body: &str) -> String {
    format!(
        "        const double* m = lu + e * {n}LL * {n}LL;
        const int* p = (const int*)pivots + e * {n}LL;
        double sign = 1.0;
        for (long long i = 0; i < {n}LL; i++) if (p[i] != i + 1) sign = -sign;
        bool zero = false;
{body}"
    )
}

/// The determinant of each matrix from its LU factors: 0 from the first
/// zero pivot.
fn lu_determinant(count: usize, n: usize) -> CudaKernel {
    kernel(
        "lu_determinant",
        count,
        &["lu", "pivots"],
        &pivots_loop(
            n,
            &format!(
                "        double d = sign;
        for (long long i = 0; i < {n}LL && !zero; i++) {{
            double u = m[i * {n}LL + i];
            if (u == 0.0) zero = true; else d *= u;
        }}
        out[e] = zero ? 0.0 : d + 0.0;"
            ),
        ),
    )
}

/// The sign (0 if singular) and the log of the absolute determinant of
/// each matrix, packed: every sign, then every logarithm.
fn lu_slogdet(count: usize, n: usize) -> CudaKernel {
    kernel(
        "lu_slogdet",
        count,
        &["lu", "pivots"],
        &pivots_loop(
            n,
            &format!(
                "        double log_abs = 0.0;
        for (long long i = 0; i < {n}LL && !zero; i++) {{
            double u = m[i * {n}LL + i];
            if (u == 0.0) zero = true;
            else {{ if (u < 0.0) sign = -sign; log_abs += log(fabs(u)); }}
        }}
        out[e] = zero ? 0.0 : sign;
        out[{count}LL + e] = zero ? -eps_inf() : log_abs;"
            ),
        ),
    )
}

/// C code setting `flip` to -1 where the entry of largest magnitude (the
/// first such) of `len` numbers at `at(i)` is negative, else 1: the sign
/// convention of the CPU kernels (`largest_entry`).
fn flip_by_largest(len: usize, at: &str) -> String {
    format!(
        "        long long top = 0; double best = -eps_inf();
        for (long long i = 0; i < {len}LL; i++) {{ double v = fabs({at}); if (v > best) {{ best = v; top = i; }} }}
        double flip;
        {{ long long i = top; flip = ({at}) < 0.0 ? -1.0 : 1.0; }}"
    )
}

/// `eigh`'s packed result from `syevd`'s: the eigenvalues, then the
/// eigenvectors row-major, each with its largest entry positive.
fn eigh_result(count: usize, n: usize) -> CudaKernel {
    let column = format!("vectors[b * {n}LL * {n}LL + j * {n}LL + i]");
    kernel(
        "eigh_result",
        count * n,
        &["vectors", "w"],
        &format!(
            "        long long b = e / {n}LL, j = e % {n}LL;
{flip}
        out[e] = w[e];
        for (long long i = 0; i < {n}LL; i++)
            out[{count}LL * {n}LL + b * {n}LL * {n}LL + i * {n}LL + j] = flip * {column} + 0.0;",
            flip = flip_by_largest(n, &column),
        ),
    )
}

/// `svd`'s packed result (`u`, `s`, `vt`, row-major, each column of `u`
/// with its largest entry positive) from `gesvd`'s on `a` (`m >= n`) or,
/// when `wide`, on `aᵀ`.
fn svd_result(count: usize, m: usize, n: usize, wide: bool) -> CudaKernel {
    let k = m.min(n);
    // u[i, j] and vt[j, c] of matrix b in gesvd's outputs.
    let (u_at, vt_at) = if wide {
        (
            format!("gvt[b * {k}LL * {k}LL + j + i * {k}LL]"),
            format!("gu[b * {n}LL * {k}LL + c + j * {n}LL]"),
        )
    } else {
        (
            format!("gu[b * {m}LL * {k}LL + i + j * {m}LL]"),
            format!("gvt[b * {k}LL * {n}LL + j + c * {k}LL]"),
        )
    };
    kernel(
        "svd_result",
        count * k,
        &["gs", "gu", "gvt"],
        &format!(
            "        long long b = e / {k}LL, j = e % {k}LL;
{flip}
        for (long long i = 0; i < {m}LL; i++)
            out[b * {m}LL * {k}LL + i * {k}LL + j] = flip * {u_at} + 0.0;
        out[{count}LL * {m}LL * {k}LL + e] = gs[e];
        for (long long c = 0; c < {n}LL; c++)
            out[{count}LL * ({m}LL * {k}LL + {k}LL) + b * {k}LL * {n}LL + j * {n}LL + c] = flip * {vt_at} + 0.0;",
            flip = flip_by_largest(m, &u_at),
        ),
    )
}

/// `r` (`k x n`, row-major, zeros below the diagonal) of each matrix
/// `geqrf` factored (`m x n`, column-major).
fn qr_r(count: usize, m: usize, n: usize) -> CudaKernel {
    let k = m.min(n);
    kernel(
        "qr_r",
        count * k * n,
        &["f"],
        &format!(
            "        long long b = e / ({k}LL * {n}LL), r = e % ({k}LL * {n}LL);
        long long i = r / {n}LL, j = r % {n}LL;
        out[e] = j >= i ? f[b * {m}LL * {n}LL + i + j * {m}LL] : 0.0;"
        ),
    )
}

/// `qr`'s packed result (`q` then `r`, row-major) with `r`'s diagonal
/// non-negative, from `orgqr`'s `q` (column-major, `m x n` matrices) and
/// `r` as [`qr_r`] wrote it.
fn qr_result(count: usize, m: usize, n: usize) -> CudaKernel {
    let k = m.min(n);
    kernel(
        "qr_result",
        count * k,
        &["q", "r"],
        &format!(
            "        long long b = e / {k}LL, i = e % {k}LL;
        const double* rb = r + b * {k}LL * {n}LL;
        double flip = rb[i * {n}LL + i] < 0.0 ? -1.0 : 1.0;
        for (long long row = 0; row < {m}LL; row++)
            out[b * {m}LL * {k}LL + row * {k}LL + i] = flip * q[b * {m}LL * {n}LL + row + i * {m}LL] + 0.0;
        for (long long j = 0; j < {n}LL; j++)
            out[{count}LL * {m}LL * {k}LL + b * {k}LL * {n}LL + i * {n}LL + j] = j >= i ? flip * rb[i * {n}LL + j] + 0.0 : 0.0;"
        ),
    )
}

/// `full-rank`'s check: per matrix (`rows x cols`), the first diagonal
/// index + 1 whose entry is at most `size` units of rounding of the
/// largest entry, the entry and the tolerance (zeros when none is).
fn rank_check(count: usize, rows: usize, cols: usize, size: usize) -> CudaKernel {
    let k = rows.min(cols);
    kernel(
        "rank_check",
        count,
        &["r"],
        &format!(
            "        const double* x = r + e * {rows}LL * {cols}LL;
        double largest = 0.0;
        for (long long i = 0; i < {rows}LL * {cols}LL; i++) largest = fmax(largest, fabs(x[i]));
        double tol = {size}.0 * {eps:e} * largest;
        out[3 * e] = 0.0; out[3 * e + 1] = 0.0; out[3 * e + 2] = 0.0;
        for (long long i = 0; i < {k}LL; i++) {{
            double d = x[i * {cols}LL + i];
            if (fabs(d) <= tol) {{ out[3 * e] = (double)(i + 1); out[3 * e + 1] = d; out[3 * e + 2] = tol; break; }}
        }}",
            size = size.max(1),
            eps = f64::EPSILON,
        ),
    )
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

/// The matrices of a solve's operands: `(matrices in a, right-hand
/// sides in b, solves, n, columns of each right-hand side)`, or `None`
/// when the batches broadcast other than an operand that is one matrix
/// (or right-hand side) for the whole batch.
fn solve_batches(
    a: &[usize],
    b: &[usize],
    vector: bool,
) -> Option<(usize, usize, usize, usize, usize)> {
    let (a_count, n) = square(a);
    let core = if vector { 1 } else { 2 };
    let b_lead = &b[..b.len() - core];
    let columns = if vector { 1 } else { b[b.len() - 1] };
    let b_count: usize = b_lead.iter().product();
    let a_lead = leading(a);
    let out_lead = crate::ir::shape::broadcast(&a_lead, b_lead).ok()?;
    let count: usize = out_lead.iter().product();
    let fits = |lead: &[usize], own: usize| *lead == out_lead[..] || own == 1;
    if !fits(&a_lead, a_count) || !fits(b_lead, b_count) || count * n * columns == 0 {
        return None;
    }
    Some((a_count, b_count, count, n, columns))
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
    let (a_count, b_count, count, n, columns) = solve_batches(a, b, vector)?;
    let mut solve = DeviceSolve::default();
    let zero = solve.scratch(int_slots(a_count));
    solve.kernel(zero_diagonal(a_count, n), &[A], zero);
    right_hand_sides(&mut solve, b_count, count, n * columns, Slot::Out);
    let routine = Routine::TriangularSolve {
        m: columns,
        n,
        batch: count,
        upper: lower,
        transpose,
        shared: a_count == 1 && count > 1,
    };
    solve.routine(routine, &[A], &[Slot::Out]);
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
    let (a_count, b_count, count, n, columns) = solve_batches(a, b, vector)?;
    let mut solve = DeviceSolve::default();
    let lu = factored(&mut solve, a_count, n);
    let info = solve.scratch(int_slots(count));
    let rhs = if columns == 1 {
        right_hand_sides(&mut solve, b_count, count, n, Slot::Out);
        Slot::Out
    } else {
        let rhs = solve.scratch(count * n * columns);
        let prepare = repeated_transposed(count, b_count, n, columns);
        solve.kernel(prepare, &[B], rhs);
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

/// `Π`-weights of the transposed adjugate: per matrix and index `k`, the
/// product of the singular values other than `s_k`, times the sign of
/// `det(U) det(Vᵀ)` (from their LU factors).
fn adjugate_weights(count: usize, n: usize) -> CudaKernel {
    kernel(
        "adjugate_weights",
        count * n,
        &["s", "u_lu", "u_pivots", "vt_lu", "vt_pivots"],
        &format!(
            "        long long b = e / {n}LL, k = e % {n}LL;
        double sign = 1.0;
        const double* factors[2] = {{u_lu + b * {n}LL * {n}LL, vt_lu + b * {n}LL * {n}LL}};
        const int* pivots[2] = {{(const int*)u_pivots + b * {n}LL, (const int*)vt_pivots + b * {n}LL}};
        for (int f = 0; f < 2; f++) {{
            for (long long i = 0; i < {n}LL; i++) {{
                if (pivots[f][i] != i + 1) sign = -sign;
                double d = factors[f][i * {n}LL + i];
                if (d < 0.0) sign = -sign;
            }}
        }}
        double product = 1.0;
        for (long long m = 0; m < {n}LL; m++) if (m != k) product *= s[b * {n}LL + m];
        out[e] = product * sign;"
        ),
    )
}

/// `C = U diag(w) Vᵀ` of each matrix from the packed SVD `svd` and the
/// weights `w`.
fn adjugate_product(count: usize, n: usize) -> CudaKernel {
    kernel(
        "adjugate_product",
        count * n * n,
        &["svd", "w"],
        &format!(
            "        long long b = e / ({n}LL * {n}LL), i = (e / {n}LL) % {n}LL, j = e % {n}LL;
        const double* u = svd + b * {n}LL * {n}LL;
        const double* vt = svd + {count}LL * ({n}LL * {n}LL + {n}LL) + b * {n}LL * {n}LL;
        double total = 0.0;
        for (long long k = 0; k < {n}LL; k++) total += u[i * {n}LL + k] * w[b * {n}LL + k] * vt[k * {n}LL + j];
        out[e] = total + 0.0;"
        ),
    )
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

/// `out = identity · I + Σ weights[k] · terms[k]` of each `n x n`
/// matrix, summed in that order (as the CPU's `combine`).
fn combination(count: usize, n: usize, weights: &[f64], identity: f64) -> CudaKernel {
    const NAMES: [&str; 4] = ["t0", "t1", "t2", "t3"];
    let mut body = format!(
        "        long long i = (e / {n}LL) % {n}LL, j = e % {n}LL;
        double total = i == j ? {identity:e} : 0.0;
"
    );
    for (k, w) in weights.iter().enumerate() {
        body.push_str(&format!(
            "        total = total + {w:e} * {}[e];\n",
            NAMES[k]
        ));
    }
    body.push_str("        out[e] = total;");
    kernel("combination", count * n * n, &NAMES[..weights.len()], &body)
}

/// `x + sign · y`, elementwise.
fn sum_of(len: usize, sign: f64) -> CudaKernel {
    kernel(
        "sum_of",
        len,
        &["x", "y"],
        &format!("        out[e] = x[e] + {sign:e} * y[e];"),
    )
}

/// Per matrix, the squarings `s` of scaling and squaring: the smallest
/// `s >= 0` with `|a|₁ / 2^s` at most the degree-13 bound.
fn expm_squarings(count: usize, n: usize) -> CudaKernel {
    kernel(
        "expm_squarings",
        count,
        &["a"],
        &format!(
            "        const double* m = a + e * {n}LL * {n}LL;
        double norm = 0.0;
        for (long long j = 0; j < {n}LL; j++) {{
            double column = 0.0;
            for (long long i = 0; i < {n}LL; i++) column += fabs(m[i * {n}LL + j]);
            norm = fmax(norm, column);
        }}
        out[e] = fmax(ceil(log2(norm / {theta:e})), 0.0);",
            theta = super::expm::THETA[4].1,
        ),
    )
}

/// `a / 2^s` of each matrix.
fn expm_scaled(count: usize, n: usize) -> CudaKernel {
    kernel(
        "expm_scaled",
        count * n * n,
        &["a", "s"],
        &format!("        out[e] = ldexp(a[e], -(int)s[e / ({n}LL * {n}LL)]);"),
    )
}

/// Each matrix of `r` squared `s` times, by one block of threads per
/// matrix (a product per squaring, the block in step between them):
/// `out` holds the results, then room for the products.
fn expm_squared(count: usize, n: usize) -> CudaKernel {
    let size = n * n;
    CudaKernel {
        name: "expm_squared",
        source: format!(
            "extern \"C\" __global__ void expm_squared(long long n, const double* r, const double* s, double* out) {{
    for (long long b = blockIdx.x; b < {count}LL; b += gridDim.x) {{
        double* x = out + b * {size}LL;
        double* y = out + {count}LL * {size}LL + b * {size}LL;
        for (long long e = threadIdx.x; e < {size}LL; e += blockDim.x) x[e] = r[b * {size}LL + e];
        __syncthreads();
        int times = (int)s[b];
        for (int t = 0; t < times; t++) {{
            for (long long e = threadIdx.x; e < {size}LL; e += blockDim.x) {{
                long long i = e / {n}LL, j = e % {n}LL;
                double total = 0.0;
                for (long long k = 0; k < {n}LL; k++) total += x[i * {n}LL + k] * x[k * {n}LL + j];
                y[e] = total;
            }}
            __syncthreads();
            double* swap = x; x = y; y = swap;
        }}
        if (times % 2 == 1) {{
            for (long long e = threadIdx.x; e < {size}LL; e += blockDim.x) y[e] = x[e];
        }}
        __syncthreads();
    }}
}}
"
        ),
        threads: count * 256,
        zeroed: false,
        copy_first: false,
    }
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

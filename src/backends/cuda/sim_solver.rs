//! The solver library's routines on the simulated device: each
//! [`Routine`] computed on the host by LAPACK's column-major definition
//! (`potrf`, `getrf`/`getrs` with partial pivoting, `trsm`, Householder
//! `geqrf`/`orgqr`; `syevd` and `gesvd` through faer), writing what the
//! library writes where it writes it, so that the recipes' kernels around
//! a routine are checked against the layout a GPU gives them. The FFT
//! library's transform is the sum that defines it (O(n^2) per line, a
//! second method beside the CPU kernel's rustfft).

use crate::ir::ops::solver::{Routine, write_ints};
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{ComputeEigenvectors, self_adjoint_evd, self_adjoint_evd_scratch};
use faer::linalg::svd::{ComputeSvdVectors, svd, svd_scratch};
use faer::{Mat, Par};

/// Runs `routine` on `reads` and, in place, `writes`.
pub fn run(
    routine: &Routine,
    reads: &[&[f64]],
    writes: &mut [&mut Vec<f64>],
) -> Result<(), String> {
    let needed = routine.writes();
    if writes.len() != needed {
        return Err(format!(
            "{routine:?} writes {needed} buffers, got {}",
            writes.len()
        ));
    }
    match *routine {
        Routine::Fft {
            len,
            inner,
            outer,
            backward,
        } => dft(writes[0], len, inner, outer, backward),
        Routine::Cholesky { n, batch, upper } => {
            let (a, info) = pair(writes);
            let codes: Vec<i32> = (0..batch)
                .map(|b| cholesky(&mut a[b * n * n..(b + 1) * n * n], n, upper))
                .collect();
            write_ints(info, &codes);
        }
        Routine::Lu { n, batch } => {
            let [a, pivots, info] = writes else {
                unreachable!("counted above")
            };
            let mut all_pivots = Vec::with_capacity(batch * n);
            let mut codes = Vec::with_capacity(batch);
            for b in 0..batch {
                let (p, code) = lu(&mut a[b * n * n..(b + 1) * n * n], n);
                all_pivots.extend(p);
                codes.push(code);
            }
            write_ints(pivots, &all_pivots);
            write_ints(info, &codes);
        }
        Routine::LuSolve {
            n,
            nrhs,
            batch,
            transpose,
            shared,
        } => {
            let pivots =
                crate::ir::ops::solver::read_ints(reads[1], if shared { n } else { batch * n });
            let (x, info) = pair(writes);
            for b in 0..batch {
                let at = if shared { 0 } else { b };
                let factors = &reads[0][at * n * n..(at + 1) * n * n];
                let p = &pivots[at * n..(at + 1) * n];
                for c in 0..nrhs {
                    let start = b * n * nrhs + c * n;
                    lu_solve(factors, p, &mut x[start..start + n], transpose);
                }
            }
            write_ints(info, &vec![0; batch]);
        }
        Routine::TriangularSolve {
            m,
            n,
            batch,
            upper,
            transpose,
            shared,
        } => {
            for b in 0..batch {
                let at = if shared { 0 } else { b };
                let a = &reads[0][at * n * n..(at + 1) * n * n];
                let x = &mut writes[0][b * m * n..(b + 1) * m * n];
                solve_from_right(a, x, m, n, upper, transpose);
            }
        }
        Routine::Qr { m, n, batch } => {
            let [a, tau, info] = writes else {
                unreachable!("counted above")
            };
            let k = m.min(n);
            for b in 0..batch {
                let scalars = householder_qr(&mut a[b * m * n..(b + 1) * m * n], m, n);
                tau[b * k..(b + 1) * k].copy_from_slice(&scalars);
            }
            write_ints(info, &vec![0; batch]);
        }
        Routine::QrBasis { m, n, batch } => {
            let k = m.min(n);
            let (a, info) = pair(writes);
            for b in 0..batch {
                let tau = &reads[0][b * k..(b + 1) * k];
                householder_basis(&mut a[b * m * n..(b + 1) * m * n], m, k, tau);
            }
            write_ints(info, &vec![0; batch]);
        }
        Routine::Eigh { n, batch } => {
            let [a, w, info] = writes else {
                unreachable!("counted above")
            };
            let mut codes = Vec::with_capacity(batch);
            for b in 0..batch {
                let code = eigh(
                    &mut a[b * n * n..(b + 1) * n * n],
                    &mut w[b * n..(b + 1) * n],
                    n,
                );
                codes.push(code);
            }
            write_ints(info, &codes);
        }
        Routine::Svd { m, n, batch } => {
            let [a, s, u, vt, info] = writes else {
                unreachable!("counted above")
            };
            if m < n {
                return Err(format!("gesvd needs m >= n, got {m} x {n}"));
            }
            let mut codes = Vec::with_capacity(batch);
            for b in 0..batch {
                let code = thin_svd(
                    &a[b * m * n..(b + 1) * m * n],
                    m,
                    n,
                    &mut s[b * n..(b + 1) * n],
                    &mut u[b * m * n..(b + 1) * m * n],
                    &mut vt[b * n * n..(b + 1) * n * n],
                );
                codes.push(code);
            }
            write_ints(info, &codes);
        }
    }
    Ok(())
}

fn pair<'a>(writes: &'a mut [&mut Vec<f64>]) -> (&'a mut Vec<f64>, &'a mut Vec<f64>) {
    let [a, b] = writes else {
        unreachable!("counted by the caller")
    };
    (a, b)
}

/// `potrf` of one `n x n` column-major matrix: the triangle it reads is
/// replaced by the factor (`u` with `a = uᵀu` when `upper`, else `l`);
/// the code is 0 or the order of the first block that is not positive
/// definite.
fn cholesky(a: &mut [f64], n: usize, upper: bool) -> i32 {
    // a(i, j) for i >= j, from the triangle the routine reads.
    let at = |a: &[f64], i: usize, j: usize| {
        if upper { a[j + i * n] } else { a[i + j * n] }
    };
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut s = at(a, j, j);
        for k in 0..j {
            s -= l[j * n + k] * l[j * n + k];
        }
        if s.is_nan() || s <= 0.0 {
            return j as i32 + 1;
        }
        let d = s.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = at(a, i, j);
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    for i in 0..n {
        for j in 0..=i {
            // l(i, j), stored as u(j, i) when upper.
            if upper {
                a[j + i * n] = l[i * n + j];
            } else {
                a[i + j * n] = l[i * n + j];
            }
            // The other triangle is not defined after the routine (the
            // batched variant works in it): NaN, so no kernel reads it.
            if i != j {
                if upper {
                    a[i + j * n] = f64::NAN;
                } else {
                    a[j + i * n] = f64::NAN;
                }
            }
        }
    }
    0
}

/// `getrf` of one column-major `n x n` matrix: its 1-based pivots and the
/// code (0, or 1 + the first zero pivot).
fn lu(a: &mut [f64], n: usize) -> (Vec<i32>, i32) {
    let mut pivots = Vec::with_capacity(n);
    let mut info = 0;
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if a[i + j * n].abs() > a[p + j * n].abs() {
                p = i;
            }
        }
        pivots.push(p as i32 + 1);
        if a[p + j * n] != 0.0 {
            if p != j {
                for c in 0..n {
                    a.swap(j + c * n, p + c * n);
                }
            }
            let d = a[j + j * n];
            for i in j + 1..n {
                a[i + j * n] /= d;
            }
        } else if info == 0 {
            info = j as i32 + 1;
        }
        for c in j + 1..n {
            let x = a[j + c * n];
            for i in j + 1..n {
                a[i + c * n] -= a[i + j * n] * x;
            }
        }
    }
    (pivots, info)
}

/// `getrs` for one column `x` (in place).
fn lu_solve(lu: &[f64], pivots: &[i32], x: &mut [f64], transpose: bool) {
    let n = x.len();
    let at = |i: usize, j: usize| lu[i + j * n];
    if !transpose {
        for (i, &p) in pivots.iter().enumerate() {
            x.swap(i, p as usize - 1);
        }
        for i in 0..n {
            for k in 0..i {
                x[i] -= at(i, k) * x[k];
            }
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                x[i] -= at(i, k) * x[k];
            }
            x[i] /= at(i, i);
        }
    } else {
        for i in 0..n {
            for k in 0..i {
                x[i] -= at(k, i) * x[k];
            }
            x[i] /= at(i, i);
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                x[i] -= at(k, i) * x[k];
            }
        }
        for (i, &p) in pivots.iter().enumerate().rev() {
            x.swap(i, p as usize - 1);
        }
    }
}

/// `trsm` from the right for one `m x n` column-major `x`: `x op(a) = x`
/// in place, `a` `n x n` with only its `upper` (or lower) triangle read.
fn solve_from_right(a: &[f64], x: &mut [f64], m: usize, n: usize, upper: bool, transpose: bool) {
    let stored = |i: usize, k: usize| {
        let inside = if upper { i <= k } else { i >= k };
        if inside { a[i + k * n] } else { 0.0 }
    };
    // Row r of x solves t xᵀ = bᵀ with t = op(a)ᵀ.
    let t = |i: usize, k: usize| {
        if transpose {
            stored(i, k)
        } else {
            stored(k, i)
        }
    };
    let lower = if transpose { !upper } else { upper };
    for r in 0..m {
        let order: Vec<usize> = if lower {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for &i in &order {
            let mut s = x[r + i * m];
            for k in 0..n {
                if k != i && (if lower { k < i } else { k > i }) {
                    s -= t(i, k) * x[r + k * m];
                }
            }
            x[r + i * m] = s / t(i, i);
        }
    }
}

/// `geqrf` of one column-major `m x n` matrix: `r` in the upper triangle,
/// the Householder vectors below it, the scalars returned (LAPACK's
/// `dlarfg` convention: `beta = -sign(alpha) |(alpha, x)|`).
fn householder_qr(a: &mut [f64], m: usize, n: usize) -> Vec<f64> {
    let k = m.min(n);
    let mut tau = vec![0.0; k];
    for i in 0..k {
        let alpha = a[i + i * m];
        let xnorm = (i + 1..m).map(|r| a[r + i * m].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            continue;
        }
        let norm = alpha.hypot(xnorm);
        let beta = if alpha >= 0.0 { -norm } else { norm };
        tau[i] = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for r in i + 1..m {
            a[r + i * m] *= scale;
        }
        a[i + i * m] = beta;
        for c in i + 1..n {
            let mut w = a[i + c * m];
            for r in i + 1..m {
                w += a[r + i * m] * a[r + c * m];
            }
            a[i + c * m] -= tau[i] * w;
            for r in i + 1..m {
                a[r + c * m] -= tau[i] * w * a[r + i * m];
            }
        }
    }
    tau
}

/// `orgqr`: the first `k` columns of `q` in place of the Householder
/// vectors `geqrf` left in the column-major `m`-row matrix `a`.
fn householder_basis(a: &mut [f64], m: usize, k: usize, tau: &[f64]) {
    for i in (0..k).rev() {
        for c in i + 1..k {
            let mut w = a[i + c * m];
            for r in i + 1..m {
                w += a[r + i * m] * a[r + c * m];
            }
            a[i + c * m] -= tau[i] * w;
            for r in i + 1..m {
                a[r + c * m] -= tau[i] * w * a[r + i * m];
            }
        }
        for r in i + 1..m {
            a[r + i * m] *= -tau[i];
        }
        a[i + i * m] = 1.0 - tau[i];
        for r in 0..i {
            a[r + i * m] = 0.0;
        }
    }
}

/// `syevd` of one column-major `n x n` matrix (its lower triangle read):
/// eigenvalues ascending into `w`, eigenvectors as `a`'s columns.
fn eigh(a: &mut [f64], w: &mut [f64], n: usize) -> i32 {
    let m = Mat::from_fn(
        n,
        n,
        |i, j| {
            if i >= j { a[i + j * n] } else { a[j + i * n] }
        },
    );
    let mut s = Diag::<f64>::zeros(n);
    let mut u = Mat::<f64>::zeros(n, n);
    let mut buffer = MemBuffer::new(self_adjoint_evd_scratch::<f64>(
        n,
        ComputeEigenvectors::Yes,
        Par::Seq,
        Default::default(),
    ));
    let done = self_adjoint_evd(
        m.as_ref(),
        s.as_mut(),
        Some(u.as_mut()),
        Par::Seq,
        MemStack::new(&mut buffer),
        Default::default(),
    );
    if done.is_err() {
        return 1;
    }
    for j in 0..n {
        w[j] = s[j];
        for i in 0..n {
            a[i + j * n] = u[(i, j)];
        }
    }
    0
}

/// `gesvd` (thin) of one column-major `m x n` matrix, `m >= n`.
fn thin_svd(a: &[f64], m: usize, n: usize, s: &mut [f64], u: &mut [f64], vt: &mut [f64]) -> i32 {
    let matrix = Mat::from_fn(m, n, |i, j| a[i + j * m]);
    let mut values = Diag::<f64>::zeros(n);
    let mut left = Mat::<f64>::zeros(m, n);
    let mut right = Mat::<f64>::zeros(n, n);
    let thin = ComputeSvdVectors::Thin;
    let mut buffer = MemBuffer::new(svd_scratch::<f64>(
        m,
        n,
        thin,
        thin,
        Par::Seq,
        Default::default(),
    ));
    let done = svd(
        matrix.as_ref(),
        values.as_mut(),
        Some(left.as_mut()),
        Some(right.as_mut()),
        Par::Seq,
        MemStack::new(&mut buffer),
        Default::default(),
    );
    if done.is_err() {
        return 1;
    }
    for j in 0..n {
        s[j] = values[j];
        for i in 0..m {
            u[i + j * m] = left[(i, j)];
        }
        for c in 0..n {
            vt[j + c * n] = right[(c, j)];
        }
    }
    0
}

/// The discrete Fourier transform of each line of `x` (see
/// [`Routine::Fft`]) by its definition, in place.
fn dft(x: &mut [f64], len: usize, inner: usize, outer: usize, backward: bool) {
    let sign = if backward { 1.0 } else { -1.0 };
    let mut line = vec![(0.0, 0.0); len];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| 2 * ((o * len + k) * inner + i);
            for (k, z) in line.iter_mut().enumerate() {
                *z = (x[at(k)], x[at(k) + 1]);
            }
            for k in 0..len {
                let (mut re, mut im) = (0.0, 0.0);
                for (j, (a, b)) in line.iter().enumerate() {
                    // The angle from j k mod n, exact for large products.
                    let turn = ((j * k) % len) as f64 / len as f64;
                    let (s, c) = (sign * std::f64::consts::TAU * turn).sin_cos();
                    re += a * c - b * s;
                    im += a * s + b * c;
                }
                x[at(k)] = re;
                x[at(k) + 1] = im;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(len: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            })
            .collect()
    }

    /// Column-major `m x n` times `n x p`.
    fn product(a: &[f64], b: &[f64], m: usize, n: usize, p: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * p];
        for i in 0..m {
            for j in 0..p {
                c[i + j * m] = (0..n).map(|k| a[i + k * m] * b[k + j * n]).sum();
            }
        }
        c
    }

    fn close(a: &[f64], b: &[f64]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-10, "{a:?}\n{b:?}");
        }
    }

    #[test]
    fn lu_solves_in_both_directions() {
        let n = 5;
        let a = random(n * n, 1);
        let x = random(n, 2);
        let b = product(&a, &x, n, n, 1);
        let mut at = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                at[i + j * n] = a[j + i * n];
            }
        }
        let bt = product(&at, &x, n, n, 1);
        let mut lu_a = a.clone();
        let (pivots, info) = lu(&mut lu_a, n);
        assert_eq!(info, 0);
        let mut y = b.clone();
        lu_solve(&lu_a, &pivots, &mut y, false);
        close(&y, &x);
        let mut y = bt.clone();
        lu_solve(&lu_a, &pivots, &mut y, true);
        close(&y, &x);
    }

    #[test]
    fn householder_factors_multiply_back() {
        for (m, n) in [(5, 3), (3, 5), (4, 4)] {
            let a = random(m * n, 3);
            let mut f = a.clone();
            let tau = householder_qr(&mut f, m, n);
            let k = m.min(n);
            let r: Vec<f64> = (0..k * n)
                .map(|e| {
                    let (i, j) = (e % k, e / k);
                    if j >= i { f[i + j * m] } else { 0.0 }
                })
                .collect();
            householder_basis(&mut f, m, k, &tau);
            close(&product(&f[..m * k], &r, m, k, n), &a);
        }
    }

    #[test]
    fn triangular_solves_from_the_right() {
        let (m, n) = (3, 4);
        for upper in [false, true] {
            for transpose in [false, true] {
                let mut a = random(n * n, 4);
                for i in 0..n {
                    a[i + i * n] += 3.0;
                }
                let op: Vec<f64> = (0..n * n)
                    .map(|e| {
                        let (i, k) = if transpose {
                            (e / n, e % n)
                        } else {
                            (e % n, e / n)
                        };
                        let inside = if upper { i <= k } else { i >= k };
                        if inside { a[i + k * n] } else { 0.0 }
                    })
                    .collect();
                let x = random(m * n, 5);
                let mut b = product(&x, &op, m, n, n);
                solve_from_right(&a, &mut b, m, n, upper, transpose);
                close(&b, &x);
            }
        }
    }

    #[test]
    fn cholesky_writes_the_factor_it_was_asked_for() {
        let n = 4;
        let g = random(n * n, 6);
        // g gᵀ + 1
        let a = {
            let mut s = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    s[i + j * n] = (0..n).map(|k| g[i + k * n] * g[j + k * n]).sum::<f64>()
                        + if i == j { 1.0 } else { 0.0 };
                }
            }
            s
        };
        let mut f = a.clone();
        assert_eq!(cholesky(&mut f, n, true), 0);
        let u: Vec<f64> = (0..n * n)
            .map(|e| if e % n <= e / n { f[e] } else { 0.0 })
            .collect();
        let ut: Vec<f64> = (0..n * n).map(|e| u[e / n + (e % n) * n]).collect();
        close(&product(&ut, &u, n, n, n), &a);
        let mut bad = a.clone();
        bad[2 + 2 * n] = -10.0;
        assert_eq!(cholesky(&mut bad, n, false), 3);
    }
}

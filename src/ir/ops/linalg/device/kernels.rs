//! The CUDA C of the kernels around the solver routines: checks of the
//! operands, the matrices the routines need (symmetrized, transposed,
//! repeated), and the results finished as the CPU kernels give them.
//! Each function gives one kernel with its sizes written in; the recipes
//! of the parent module place them between the routines.

use crate::ir::ops::CudaKernel;

/// A grid-stride kernel `name` over `threads` elements `e` whose loop body
/// is `body` (operands `inputs`, output `out`).
pub(super) fn kernel(
    name: &'static str,
    threads: usize,
    inputs: &[&str],
    body: &str,
) -> CudaKernel {
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
pub(super) fn not_finite(count: usize, size: usize) -> CudaKernel {
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
pub(super) fn symmetrized(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn transposed(count: usize, rows: usize, cols: usize) -> CudaKernel {
    repeated_transposed(count, count, rows, cols)
}

/// As [`transposed`], `count` results from `sources` matrices taken in
/// turn (one matrix repeated when `sources` is 1).
pub(super) fn repeated_transposed(
    count: usize,
    sources: usize,
    rows: usize,
    cols: usize,
) -> CudaKernel {
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
pub(super) fn repeated(count: usize, size: usize) -> CudaKernel {
    kernel(
        "repeated",
        count * size,
        &["x"],
        &format!("        out[e] = x[e % {size}LL];"),
    )
}

/// The matrices (of `size` numbers) of an operand whose batch axes
/// `from` broadcast to `to` (aligned at the right, an axis of 1 repeated),
/// one for each index of `to` in order.
pub(super) fn broadcast_batches(to: &[usize], from: &[usize], size: usize) -> CudaKernel {
    let count: usize = to.iter().product();
    let offset = to.len() - from.len();
    // The source's index, axis by axis from the last: the output's index
    // along the axis where the source has it, 0 where it is repeated.
    let mut body = format!(
        "        long long m = e / {size}LL, rest = m, source = 0, stride = 1;
"
    );
    for axis in (0..to.len()).rev() {
        let len = to[axis];
        body.push_str(&format!(
            "        {{ long long i = rest % {len}LL; rest /= {len}LL;"
        ));
        if axis >= offset {
            let own = from[axis - offset];
            if own == len {
                body.push_str(" source += i * stride;");
            }
            body.push_str(&format!(" stride *= {own}LL;"));
        }
        body.push_str(
            " }
",
        );
    }
    body.push_str(&format!(
        "        out[e] = x[source * {size}LL + e % {size}LL];"
    ));
    kernel("broadcast_batches", count * size, &["x"], &body)
}

/// Zeros above the diagonal of each row-major `n x n` matrix, in place.
pub(super) fn zero_upper(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn zero_diagonal(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn pivots_loop(n: usize, body: &str) -> String {
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
pub(super) fn lu_determinant(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn lu_slogdet(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn flip_by_largest(len: usize, at: &str) -> String {
    format!(
        "        long long top = 0; double best = -eps_inf();
        for (long long i = 0; i < {len}LL; i++) {{ double v = fabs({at}); if (v > best) {{ best = v; top = i; }} }}
        double flip;
        {{ long long i = top; flip = ({at}) < 0.0 ? -1.0 : 1.0; }}"
    )
}

/// `eigh`'s packed result from `syevd`'s: the eigenvalues, then the
/// eigenvectors row-major, each with its largest entry positive.
pub(super) fn eigh_result(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn svd_result(count: usize, m: usize, n: usize, wide: bool) -> CudaKernel {
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
pub(super) fn qr_r(count: usize, m: usize, n: usize) -> CudaKernel {
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
pub(super) fn qr_result(count: usize, m: usize, n: usize) -> CudaKernel {
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
pub(super) fn rank_check(count: usize, rows: usize, cols: usize, size: usize) -> CudaKernel {
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

/// `Π`-weights of the transposed adjugate: per matrix and index `k`, the
/// product of the singular values other than `s_k`, times the sign of
/// `det(U) det(Vᵀ)` (from their LU factors).
pub(super) fn adjugate_weights(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn adjugate_product(count: usize, n: usize) -> CudaKernel {
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

/// `out = identity · I + Σ weights[k] · terms[k]` of each `n x n`
/// matrix, summed in that order (as the CPU's `combine`).
pub(super) fn combination(count: usize, n: usize, weights: &[f64], identity: f64) -> CudaKernel {
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
pub(super) fn sum_of(len: usize, sign: f64) -> CudaKernel {
    kernel(
        "sum_of",
        len,
        &["x", "y"],
        &format!("        out[e] = x[e] + {sign:e} * y[e];"),
    )
}

/// Per matrix, the squarings `s` of scaling and squaring: the smallest
/// `s >= 0` with `|a|₁ / 2^s` at most the degree-13 bound.
pub(super) fn expm_squarings(count: usize, n: usize) -> CudaKernel {
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
            theta = super::super::expm::THETA[4].1,
        ),
    )
}

/// `a / 2^s` of each matrix.
pub(super) fn expm_scaled(count: usize, n: usize) -> CudaKernel {
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
pub(super) fn expm_squared(count: usize, n: usize) -> CudaKernel {
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

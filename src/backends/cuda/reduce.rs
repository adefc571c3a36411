//! CUDA C source for reductions (`sum`, `prod`, `max`, `min` over any set
//! of axes; `mean`, `logsumexp` and `softmax` reach the tape as these plus
//! elementwise groups).
//!
//! One block per output element: its threads stride over the reduced
//! elements, then combine through warp shuffles and shared memory. Many
//! outputs (a row-wise sum) give many blocks; one output (a full sum)
//! gives one block whose threads share the work. The shape and axes are
//! written into the source, so an input offset is a sum of constant
//! divisions and remainders.

use super::kernels::prelude;
use crate::ir::ReduceOp;
use std::fmt::Write as _;

/// Threads per block the kernels are written for (a multiple of 32, at
/// most 1024).
pub const BLOCK: usize = 256;

/// The combining expression of `op` over `a` and `b`, and its identity.
fn combine(op: ReduceOp) -> (&'static str, &'static str) {
    match op {
        ReduceOp::Sum => ("a + b", "0.0"),
        ReduceOp::Prod => ("a * b", "1.0"),
        // NaN-propagating, as the CPU's reductions.
        ReduceOp::Max => ("eps_max(a, b)", "(-eps_inf())"),
        ReduceOp::Min => ("eps_min(a, b)", "eps_inf()"),
    }
}

/// The offset of an element whose coordinates along `axes` of `shape`
/// come from the index `var` over those axes (row-major among them).
fn offset(shape: &[usize], axes: &[usize], var: &str) -> String {
    let strides: Vec<usize> = (0..shape.len())
        .map(|k| shape[k + 1..].iter().product())
        .collect();
    let mut terms = Vec::new();
    let mut inner = 1usize;
    for &axis in axes.iter().rev() {
        let dim = shape[axis];
        if dim > 1 {
            terms.push(format!(
                "(({var} / {inner}LL) % {dim}LL) * {}LL",
                strides[axis]
            ));
        }
        inner *= dim;
    }
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

/// The CUDA C source of kernel `name` reducing `shape` with `op` over
/// `axes` (sorted, distinct). Parameters: the input (`const double*`,
/// row-major) and the output (`double*`, the kept axes row-major). Launch
/// it with one block of [`BLOCK`] threads per output element.
pub fn reduction_kernel(op: ReduceOp, shape: &[usize], axes: &[usize], name: &str) -> String {
    let kept: Vec<usize> = (0..shape.len()).filter(|k| !axes.contains(k)).collect();
    let reduced_count: usize = axes.iter().map(|&a| shape[a]).product();
    let (expr, identity) = combine(op);
    let mut source = String::from(prelude());
    let _ = write!(
        source,
        r#"
__device__ __forceinline__ double {name}_combine(double a, double b) {{ return {expr}; }}

extern "C" __global__ void {name}(const double* __restrict__ x, double* __restrict__ out) {{
    const long long o = blockIdx.x;
    const long long base = {base};
    double acc = {identity};
    for (long long r = threadIdx.x; r < {reduced_count}LL; r += blockDim.x) {{
        acc = {name}_combine(acc, x[base + {inner}]);
    }}
    for (int offset = 16; offset > 0; offset /= 2) {{
        acc = {name}_combine(acc, __shfl_down_sync(0xffffffffu, acc, offset));
    }}
    __shared__ double warp_results[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_results[warp] = acc;
    __syncthreads();
    if (warp == 0) {{
        acc = lane < (blockDim.x + 31) / 32 ? warp_results[lane] : {identity};
        for (int offset = 16; offset > 0; offset /= 2) {{
            acc = {name}_combine(acc, __shfl_down_sync(0xffffffffu, acc, offset));
        }}
        if (lane == 0) out[o] = acc;
    }}
}}
"#,
        base = offset(shape, &kept, "o"),
        inner = offset(shape, axes, "r"),
    );
    source
}

/// How many output elements (blocks) a reduction has.
pub fn outputs(shape: &[usize], axes: &[usize]) -> usize {
    (0..shape.len())
        .filter(|k| !axes.contains(k))
        .map(|k| shape[k])
        .product()
}

/// The CUDA C source of kernel `name` giving the index of the maximum
/// (`max`) or minimum of each lane of `shape` along `axis`, or of all
/// elements (`axis` of `None`), as a number. The first NaN wins, then the
/// first extreme, as on the CPU (and in NumPy). One thread per output in a
/// grid-stride loop. Parameters: the input and the output.
pub fn arg_extreme_kernel(max: bool, shape: &[usize], axis: Option<usize>, name: &str) -> String {
    let total: usize = shape.iter().product();
    let (len, inner) = match axis {
        Some(axis) => (shape[axis], shape[axis + 1..].iter().product::<usize>()),
        None => (total, 1),
    };
    let inner = inner.max(1);
    let outputs = total / len.max(1);
    let better = if max {
        "v > best_value"
    } else {
        "v < best_value"
    };
    let mut source = String::from(prelude());
    let _ = write!(
        source,
        r#"
extern "C" __global__ void {name}(const double* __restrict__ x, double* __restrict__ out) {{
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < {outputs}LL;
         o += (long long)gridDim.x * blockDim.x) {{
        const long long base = (o / {inner}LL) * {lane}LL + o % {inner}LL;
        long long best = 0;
        double best_value = {len}LL > 0 ? x[base] : 0.0;
        for (long long r = 1; r < {len}LL; ++r) {{
            const double v = x[base + r * {inner}LL];
            if (!isnan(best_value) && (isnan(v) || {better})) {{
                best = r;
                best_value = v;
            }}
        }}
        out[o] = (double)best;
    }}
}}
"#,
        lane = len * inner,
    );
    source
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cuda::{CudaUnavailable, compile, nvrtc_available, oldest_arch};

    #[test]
    fn offsets_follow_row_major_strides() {
        // Shape 2x3x4 (strides 12, 4, 1): kept axes 0 and 2, reduced axis 1.
        assert_eq!(
            offset(&[2, 3, 4], &[0, 2], "o"),
            "((o / 1LL) % 4LL) * 1LL + ((o / 4LL) % 2LL) * 12LL"
        );
        assert_eq!(offset(&[2, 3, 4], &[1], "r"), "((r / 1LL) % 3LL) * 4LL");
        // Axes of length 1 add nothing; no axes at all is offset 0.
        assert_eq!(offset(&[1, 5], &[0], "o"), "0");
        assert_eq!(offset(&[7], &[], "o"), "0");
        assert_eq!(outputs(&[2, 3, 4], &[1]), 8);
        assert_eq!(outputs(&[2, 3, 4], &[0, 1, 2]), 1);
    }

    #[test]
    fn each_reduction_has_its_combine_and_identity() {
        for (op, expr, identity) in [
            (ReduceOp::Sum, "a + b", "double acc = 0.0;"),
            (ReduceOp::Prod, "a * b", "double acc = 1.0;"),
            (ReduceOp::Max, "eps_max(a, b)", "double acc = (-eps_inf());"),
            (ReduceOp::Min, "eps_min(a, b)", "double acc = eps_inf();"),
        ] {
            let source = reduction_kernel(op, &[4, 5], &[1], "red");
            assert!(source.contains(&format!("return {expr};")), "{op:?}");
            assert!(source.contains(identity), "{op:?}");
            assert!(
                source.contains("r < 5LL"),
                "{op:?}: five reduced elements per row"
            );
            assert!(source.contains("out[o] = acc;"));
        }
    }

    #[test]
    fn every_reduction_compiles_with_nvrtc() {
        if !nvrtc_available() {
            eprintln!(
                "skipped NVRTC compilation of reductions: {}",
                CudaUnavailable::NoNvrtc
            );
            return;
        }
        let cases: [(&[usize], &[usize]); 4] = [
            (&[1000], &[0]),
            (&[64, 10], &[1]),
            (&[64, 10], &[0]),
            (&[2, 3, 4, 5], &[1, 3]),
        ];
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
            for (shape, axes) in cases {
                let source = reduction_kernel(op, shape, axes, "reduce");
                let ptx = oldest_arch()
                    .and_then(|arch| compile(&source, arch))
                    .unwrap_or_else(|e| panic!("{op:?} over {axes:?} of {shape:?}: {e}"));
                assert!(ptx.contains(".visible .entry reduce"));
            }
        }
    }
}

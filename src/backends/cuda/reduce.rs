//! CUDA C source for reductions (`sum`, `prod`, `max`, `min` over any set
//! of axes; `mean`, `logsumexp` and `softmax` reach the tape as these plus
//! elementwise groups).
//!
//! Three ways, chosen by [`strategy`] from the numbers of outputs and of
//! elements reduced into each:
//!
//! - a short lane (32 elements or fewer): one thread per output, in a
//!   grid-stride loop (a block per output would leave most threads idle);
//! - many outputs: one block per output, its threads striding over the
//!   reduced elements, then combining through warp shuffles and shared
//!   memory;
//! - few outputs of long lanes (a full sum): each output's lane split
//!   over several blocks, each writing a partial result, and a second
//!   kernel combining the partials, so the whole device takes part. No
//!   atomics: the result does not depend on the order blocks finish in.
//!
//! `argmax` and `argmin` take a thread per output for short lanes, a
//! block per output for long ones, and for few long lanes (over all
//! elements) each lane split over several blocks whose winners a second
//! kernel combines. The shape and axes are written into
//! the source, so an input offset is a sum of constant divisions and
//! remainders.

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

/// The kept axes of `shape` and how many elements each output reduces.
fn lanes(shape: &[usize], axes: &[usize]) -> (Vec<usize>, usize) {
    let kept = (0..shape.len()).filter(|k| !axes.contains(k)).collect();
    (kept, axes.iter().map(|&a| shape[a]).product())
}

/// The start of a reduction kernel's source (the prelude and `{name}_combine`),
/// and `op`'s identity.
fn head(op: ReduceOp, name: &str) -> (String, &'static str) {
    let (expr, identity) = combine(op);
    let mut source = String::from(prelude());
    let _ = write!(
        source,
        "\n__device__ __forceinline__ double {name}_combine(double a, double b) {{ return {expr}; }}\n"
    );
    (source, identity)
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

/// Lanes this short or shorter are reduced by one thread each.
pub const SHORT_LANE: usize = 32;

/// Elements each thread of a split lane should reduce, at least.
const PER_THREAD: usize = 16;

/// Blocks a split reduction aims to fill the device with.
const TARGET_BLOCKS: usize = 2048;

/// How a reduction runs (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One thread per output.
    ThreadPerOutput,
    /// `parts` blocks per output (1: a block per output; more: partial
    /// results, combined by a second kernel).
    Blocks {
        /// Blocks per output.
        parts: usize,
    },
}

/// How the reduction of `shape` over `axes` runs.
pub fn strategy(shape: &[usize], axes: &[usize]) -> Strategy {
    let reduced: usize = axes.iter().map(|&a| shape[a]).product();
    let outputs = outputs(shape, axes).max(1);
    if reduced <= SHORT_LANE {
        return Strategy::ThreadPerOutput;
    }
    let by_work = reduced.div_ceil(BLOCK * PER_THREAD);
    let by_device = TARGET_BLOCKS.div_ceil(outputs);
    Strategy::Blocks {
        parts: by_work.min(by_device).max(1),
    }
}

/// The CUDA C source of kernel `name` reducing `shape` with `op` over
/// `axes` (sorted, distinct). Parameters: the input (`const double*`,
/// row-major) and the output (`double*`, the kept axes row-major). Launch
/// it with one block of [`BLOCK`] threads per output element.
pub fn reduction_kernel(op: ReduceOp, shape: &[usize], axes: &[usize], name: &str) -> String {
    split_reduction_kernel(op, shape, axes, 1, name)
}

/// The CUDA C source of kernel `name` reducing `shape` with `op` over
/// `axes` with `parts` blocks per output: block `b` reduces part `b %
/// parts` of output `b / parts`'s lane and writes its result at `b` (with
/// `parts` 1, the output itself). Launch it with `outputs * parts` blocks
/// of [`BLOCK`] threads.
pub fn split_reduction_kernel(
    op: ReduceOp,
    shape: &[usize],
    axes: &[usize],
    parts: usize,
    name: &str,
) -> String {
    let (kept, reduced_count) = lanes(shape, axes);
    let parts = parts.max(1);
    let (mut source, identity) = head(op, name);
    let _ = write!(
        source,
        r#"
extern "C" __global__ void {name}(const double* __restrict__ x, double* __restrict__ out) {{
    const long long o = blockIdx.x / {parts}LL;
    const long long part = blockIdx.x % {parts}LL;
    const long long base = {base};
    double acc = {identity};
    for (long long r = part * blockDim.x + threadIdx.x; r < {reduced_count}LL;
         r += {parts}LL * blockDim.x) {{
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
        if (lane == 0) out[blockIdx.x] = acc;
    }}
}}
"#,
        base = offset(shape, &kept, "o"),
        inner = offset(shape, axes, "r"),
    );
    source
}

/// The CUDA C source of kernel `name` reducing `shape` with `op` over
/// `axes` with one thread per output, in a grid-stride loop: for short
/// lanes. Parameters as [`reduction_kernel`]'s.
pub fn lane_reduction_kernel(op: ReduceOp, shape: &[usize], axes: &[usize], name: &str) -> String {
    let (kept, reduced_count) = lanes(shape, axes);
    let count = outputs(shape, axes);
    let (mut source, identity) = head(op, name);
    let _ = write!(
        source,
        r#"
extern "C" __global__ void {name}(const double* __restrict__ x, double* __restrict__ out) {{
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < {count}LL;
         o += (long long)gridDim.x * blockDim.x) {{
        const long long base = {base};
        double acc = {identity};
        for (long long r = 0; r < {reduced_count}LL; ++r) {{
            acc = {name}_combine(acc, x[base + {inner}]);
        }}
        out[o] = acc;
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

/// Lanes longer than this get a block each in `argmax`/`argmin`.
pub const LONG_ARG_LANE: usize = 64;

/// Blocks each output's lane is split over in `argmax`/`argmin` (as for
/// a reduction: 1 unless the outputs are too few to fill the device).
pub fn arg_extreme_parts(shape: &[usize], axis: Option<usize>) -> usize {
    match axis {
        Some(axis) => match strategy(shape, &[axis]) {
            Strategy::Blocks { parts } => parts,
            Strategy::ThreadPerOutput => 1,
        },
        None => {
            let all: Vec<usize> = (0..shape.len()).collect();
            match strategy(shape, &all) {
                Strategy::Blocks { parts } => parts,
                Strategy::ThreadPerOutput => 1,
            }
        }
    }
}

/// The device function `{name}_wins(v, i, w, j)`: whether element `i`
/// of value `v` wins over element `j` of value `w` for the maximum
/// (`max`) or minimum: a NaN first, then the extreme, then the lower
/// index; an index below 0 is no candidate.
fn arg_wins(max: bool, name: &str) -> String {
    let strictly = if max { ">" } else { "<" };
    format!(
        r#"
__device__ __forceinline__ bool {name}_wins(double v, long long i, double w, long long j) {{
    if (i < 0) return false;
    if (j < 0) return true;
    if (isnan(w)) return isnan(v) && i < j;
    if (isnan(v)) return true;
    if (v {strictly} w) return true;
    return v == w && i < j;
}}
"#
    )
}

/// The end of a block's `argmax`: each thread's `best` and `best_value`
/// combined through warp shuffles and shared memory, then `write` run by
/// the block's first thread with the block's winner.
fn arg_block_combine(name: &str, write: &str) -> String {
    format!(
        r#"    for (int offset = 16; offset > 0; offset /= 2) {{
        const double v = __shfl_down_sync(0xffffffffu, best_value, offset);
        const long long i = __shfl_down_sync(0xffffffffu, best, offset);
        if ({name}_wins(v, i, best_value, best)) {{
            best = i;
            best_value = v;
        }}
    }}
    __shared__ double warp_values[32];
    __shared__ long long warp_indices[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {{
        warp_values[warp] = best_value;
        warp_indices[warp] = best;
    }}
    __syncthreads();
    if (warp == 0) {{
        const bool present = lane < (blockDim.x + 31) / 32;
        best_value = present ? warp_values[lane] : 0.0;
        best = present ? warp_indices[lane] : -1;
        for (int offset = 16; offset > 0; offset /= 2) {{
            const double v = __shfl_down_sync(0xffffffffu, best_value, offset);
            const long long i = __shfl_down_sync(0xffffffffu, best, offset);
            if ({name}_wins(v, i, best_value, best)) {{
                best = i;
                best_value = v;
            }}
        }}
        if (lane == 0) {{ {write} }}
    }}
"#
    )
}

/// A kernel `name` of one block per output (or per part of one): each
/// thread runs the loop `each` (whose body defines the candidate `v` of
/// index `i`) after the lines `head`, keeping its best candidate; the
/// block combines them and its first thread runs `write`.
fn arg_block_kernel(max: bool, name: &str, head: &str, each: &str, write: &str) -> String {
    let mut source = String::from(prelude());
    source.push_str(&arg_wins(max, name));
    let _ = write!(
        source,
        r#"
extern "C" __global__ void {name}(const double* __restrict__ x, double* __restrict__ out) {{
{head}
    long long best = -1;
    double best_value = 0.0;
    {each}
        if ({name}_wins(v, i, best_value, best)) {{
            best = i;
            best_value = v;
        }}
    }}
{combine}}}
"#,
        combine = arg_block_combine(name, write),
    );
    source
}

/// The CUDA C source of kernel `name` giving the index of the maximum
/// (`max`) or minimum of each lane of `shape` along `axis`, or of all
/// elements (`None`), with each lane split over `parts` blocks of
/// [`BLOCK`] threads: the first NaN wins, then the first extreme, as in
/// [`arg_extreme_kernel`]. Each thread keeps the best of its elements,
/// then the block combines them, ties going to the lower index. With one
/// part the block writes the index; with several each block writes its
/// winner as a pair (value, index, or index -1 where its part is empty)
/// for [`arg_extreme_combine_kernel`]. Launch it with `parts` blocks per
/// output.
pub fn block_arg_extreme_kernel(
    max: bool,
    shape: &[usize],
    axis: Option<usize>,
    parts: usize,
    name: &str,
) -> String {
    let total: usize = shape.iter().product();
    let (len, inner) = match axis {
        Some(axis) => (shape[axis], shape[axis + 1..].iter().product::<usize>()),
        None => (total, 1),
    };
    let inner = inner.max(1);
    let parts = parts.max(1);
    let write = if parts == 1 {
        "out[o] = best < 0 ? 0.0 : (double)best;"
    } else {
        "out[2 * blockIdx.x] = best_value; out[2 * blockIdx.x + 1] = (double)best;"
    };
    let head = format!(
        "    const long long o = blockIdx.x / {parts}LL, part = blockIdx.x % {parts}LL;
    const long long base = (o / {inner}LL) * {lane}LL + o % {inner}LL;",
        lane = len * inner
    );
    let each = format!(
        "for (long long i = part * blockDim.x + threadIdx.x; i < {len}LL; i += {parts}LL * blockDim.x) {{
        const double v = x[base + i * {inner}LL];"
    );
    arg_block_kernel(max, name, &head, &each, write)
}

/// The CUDA C source of kernel `name` combining the `parts` winners of
/// each lane that [`block_arg_extreme_kernel`] wrote as pairs into the
/// index of the lane's winner. Launch it with one block of [`BLOCK`]
/// threads per output.
pub fn arg_extreme_combine_kernel(max: bool, parts: usize, name: &str) -> String {
    let each = format!(
        "for (long long p = threadIdx.x; p < {parts}LL; p += blockDim.x) {{
        const double v = x[2 * (o * {parts}LL + p)];
        const long long i = (long long)x[2 * (o * {parts}LL + p) + 1];"
    );
    let write = "out[o] = best < 0 ? 0.0 : (double)best;";
    arg_block_kernel(
        max,
        name,
        "    const long long o = blockIdx.x;",
        &each,
        write,
    )
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
            assert!(source.contains("out[blockIdx.x] = acc;"));
            let lanes = lane_reduction_kernel(op, &[4, 5], &[1], "red");
            assert!(lanes.contains(&format!("return {expr};")), "{op:?}");
            assert!(lanes.contains("r < 5LL; ++r") && lanes.contains("out[o] = acc;"));
        }
        // A split reduction: each block a part of its output's lane.
        let split = split_reduction_kernel(ReduceOp::Sum, &[100_000], &[0], 25, "red");
        assert!(split.contains("blockIdx.x / 25LL") && split.contains("r += 25LL * blockDim.x"));
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

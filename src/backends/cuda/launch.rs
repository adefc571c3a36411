//! What the device is asked to do for one instruction, decided on the
//! host: kernel launches (generated source, grid and block) and matrix
//! products as cuBLAS calls. Planning needs no device, so the plans are
//! tested on machines without one.
//!
//! Kernels are keyed by a hash of their source: the same operation on the
//! same shapes and layouts is compiled once per process.

use super::kernels::{Access, F32Storage, KernelError, group_kernel_stored, prelude};
use super::reduce::{
    self, arg_extreme_kernel, block_arg_extreme_kernel, lane_reduction_kernel, reduction_kernel,
    split_reduction_kernel,
};
use super::structural::index_kernel_stored;
use crate::ir::{ReduceOp, TOp};
use crate::tape::FusedGroup;
use smallvec::{SmallVec, smallvec};
use std::hash::{Hash, Hasher};

/// Threads per block of elementwise and index kernels.
pub const THREADS: u32 = 256;

/// The most blocks an elementwise launch uses; grid-stride loops cover
/// the elements beyond.
const MAX_BLOCKS: usize = 4096;

/// The most blocks a grid may have along x (2^31 - 1).
pub const MAX_GRID: usize = (1 << 31) - 1;

/// One kernel launch: the kernel's source and name, and its grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The kernel's name in `source`.
    pub name: &'static str,
    /// CUDA C, prelude included.
    pub source: String,
    /// A hash of `source`, the kernel cache's key.
    pub key: u64,
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// The output must start at zero (a summing group adds into it).
    pub zeroed: bool,
}

impl Launch {
    fn new(name: &'static str, source: String, grid: usize, block: u32, zeroed: bool) -> Launch {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        // Every kernel starts with the same prelude: hash what follows.
        source
            .strip_prefix(prelude())
            .unwrap_or(&source)
            .hash(&mut hasher);
        Launch {
            name,
            key: hasher.finish(),
            source,
            grid: u32::try_from(grid.clamp(1, MAX_GRID)).unwrap_or(1),
            block,
            zeroed,
        }
    }
}

/// Converts `n` f64 numbers that are f32 ones into f32 storage, two per
/// slot of the output (`widen`: back from f32 storage to f64): the
/// operands and result of a product in single precision
/// (`Machine::gemm_single`).
pub fn convert(n: usize, widen: bool) -> Launch {
    let (name, body) = if widen {
        (
            "widen_f32",
            "out[i] = (double)reinterpret_cast<const float*>(x)[i];",
        )
    } else {
        (
            "narrow_f32",
            "reinterpret_cast<float*>(out)[i] = (float)x[i];",
        )
    };
    let source = format!(
        "{prelude}extern \"C\" __global__ void {name}(long long n, const double* x, double* out) {{
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += step) {{
        {body}
    }}
}}
",
        prelude = prelude()
    );
    Launch::new(name, source, blocks(n), THREADS, false)
}

/// Blocks for a grid-stride loop over `n` elements.
fn blocks(n: usize) -> usize {
    n.div_ceil(THREADS as usize).clamp(1, MAX_BLOCKS)
}

/// How an elementwise kernel over `shape` reads an operand of shape
/// `operand`; `None` is a number on the host, passed by value.
pub fn access(operand: Option<&[usize]>, shape: &[usize]) -> Access {
    match operand {
        None => Access::Uniform,
        Some(operand) if operand == shape => Access::Elementwise,
        Some(operand) => {
            // Right-aligned broadcasting: stride 0 where the operand's axis
            // is missing or of length 1.
            let lead = shape.len().saturating_sub(operand.len());
            let mut strides = vec![0isize; shape.len()];
            let mut step = 1isize;
            for (k, dim) in operand.iter().enumerate().rev() {
                if *dim > 1 {
                    strides[lead + k] = step;
                }
                step *= *dim as isize;
            }
            Access::Strided(strides)
        }
    }
}

/// A fused group (or one elementwise operation as a group) over `shape`,
/// the group's own shape for a summing group.
pub fn group(
    group: &FusedGroup,
    shape: &[usize],
    access: &[Access],
) -> Result<Launch, KernelError> {
    group_stored(group, shape, access, &F32Storage::default())
}

/// [`group`] with the arrays `storage` names in f32 storage.
pub fn group_stored(
    group: &FusedGroup,
    shape: &[usize],
    access: &[Access],
    storage: &F32Storage,
) -> Result<Launch, KernelError> {
    let source = group_kernel_stored(group, shape, access, storage, "group")?;
    let n: usize = shape.iter().product();
    let summing = group.sum_over.is_some();
    Ok(Launch::new("group", source, blocks(n), THREADS, summing))
}

/// One elementwise operation over `inputs` operands as a group.
pub fn single_step(op: &TOp, inputs: usize) -> FusedGroup {
    FusedGroup {
        inputs,
        steps: vec![(op.clone(), (0..inputs as u16).collect())],
        results: smallvec![inputs as u16],
        sum_over: None,
    }
}

/// A number spread over `shape` (one uniform operand, no steps).
pub fn fill(shape: &[usize]) -> Launch {
    let copy = FusedGroup {
        inputs: 1,
        steps: Vec::new(),
        results: smallvec![0],
        sum_over: None,
    };
    group(&copy, shape, &[Access::Uniform]).expect("a copy has one operand")
}

/// The CUDA kernel of an operation of the table (`crate::ir::ops`): one
/// thread per element of its work, in a grid-stride loop.
pub fn table(kernel: &crate::ir::ops::CudaKernel) -> Launch {
    let source = format!("{}{}", prelude(), kernel.source);
    Launch::new(
        kernel.name,
        source,
        blocks(kernel.threads),
        THREADS,
        kernel.zeroed,
    )
}

/// A reduction as launches: one kernel from the operand to the result,
/// or (a lane split over several blocks) a kernel from the operand to
/// `partials` partial results and a second from those to the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReductionLaunches {
    /// The first kernel (reading the operand).
    pub first: Launch,
    /// The number of partial results and the kernel combining them.
    pub combine: Option<(usize, Launch)>,
}

/// A reduction of `shape` over `axes`, as [`reduce::strategy`] says.
pub fn reduction(op: ReduceOp, shape: &[usize], axes: &[usize]) -> ReductionLaunches {
    let outputs = reduce::outputs(shape, axes);
    match reduce::strategy(shape, axes) {
        reduce::Strategy::ThreadPerOutput => ReductionLaunches {
            first: Launch::new(
                "reduce",
                lane_reduction_kernel(op, shape, axes, "reduce"),
                blocks(outputs),
                THREADS,
                false,
            ),
            combine: None,
        },
        reduce::Strategy::Blocks { parts: 1 } => ReductionLaunches {
            first: Launch::new(
                "reduce",
                reduction_kernel(op, shape, axes, "reduce"),
                outputs,
                reduce::BLOCK as u32,
                false,
            ),
            combine: None,
        },
        reduce::Strategy::Blocks { parts } => {
            let partials = [outputs, parts];
            ReductionLaunches {
                first: Launch::new(
                    "reduce",
                    split_reduction_kernel(op, shape, axes, parts, "reduce"),
                    outputs * parts,
                    reduce::BLOCK as u32,
                    false,
                ),
                combine: Some((outputs * parts, reduction(op, &partials, &[1]).first)),
            }
        }
    }
}

/// The index of the maximum or minimum along `axis` (or of all elements):
/// a thread per output for short lanes, a block per output for long ones,
/// and for few long lanes each split over several blocks, whose winners
/// (a value and an index each) a second kernel combines.
pub fn arg_extreme(max: bool, shape: &[usize], axis: Option<usize>) -> ReductionLaunches {
    let len = match axis {
        Some(axis) => shape[axis],
        None => shape.iter().product(),
    };
    let outputs = shape.iter().product::<usize>() / len.max(1);
    if len <= reduce::LONG_ARG_LANE {
        let source = arg_extreme_kernel(max, shape, axis, "arg_extreme");
        return ReductionLaunches {
            first: Launch::new("arg_extreme", source, blocks(outputs), THREADS, false),
            combine: None,
        };
    }
    let parts = reduce::arg_extreme_parts(shape, axis);
    let source = block_arg_extreme_kernel(max, shape, axis, parts, "arg_extreme");
    let first = Launch::new(
        "arg_extreme",
        source,
        outputs * parts,
        reduce::BLOCK as u32,
        false,
    );
    let combine = (parts > 1).then(|| {
        let source = reduce::arg_extreme_combine_kernel(max, parts, "arg_combine");
        let launch = Launch::new("arg_combine", source, outputs, reduce::BLOCK as u32, false);
        (2 * outputs * parts, launch)
    });
    ReductionLaunches { first, combine }
}

/// An operation that moves elements (broadcast, transpose, slice, pad,
/// concat, roll) from operands of `inputs` shapes into `output`, all in
/// f32 storage when `single`; `None` for other operations.
pub fn index(op: &TOp, inputs: &[Vec<usize>], output: &[usize], single: bool) -> Option<Launch> {
    let source = index_kernel_stored(op, inputs, output, "index", single)?;
    let n: usize = output.iter().product();
    Some(Launch::new("index", source, blocks(n), THREADS, false))
}

/// A composed index map materialized: each element of `output` read from
/// the operand at the C expression `offset` of its coordinates where
/// `condition` holds (0 elsewhere), in f32 storage when `single`.
pub fn mapped(offset: &str, condition: Option<&str>, output: &[usize], single: bool) -> Launch {
    let source = super::structural::mapped_kernel(offset, condition, output, "index", single);
    let n: usize = output.iter().product();
    Launch::new("index", source, blocks(n), THREADS, false)
}

/// A matrix product as cuBLAS sees it. cuBLAS is column-major and the
/// tape row-major; a row-major matrix read column-major is its transpose,
/// so the row-major `C = op(A) op(B)` is computed as the column-major
/// `Cᵀ = op(B)ᵀ op(A)ᵀ`: cuBLAS's first operand is the tape's second.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmCall {
    /// Transpose cuBLAS's first operand (the tape's second).
    pub transa: bool,
    /// Transpose cuBLAS's second operand (the tape's first).
    pub transb: bool,
    /// Rows of cuBLAS's result (columns of the tape's).
    pub m: usize,
    /// Columns of cuBLAS's result (rows of the tape's).
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
    /// Leading dimension of cuBLAS's first operand.
    pub lda: usize,
    /// Leading dimension of cuBLAS's second operand.
    pub ldb: usize,
    /// Leading dimension of the result.
    pub ldc: usize,
    /// Matrices in the batch (1 for a single product).
    pub batch: usize,
    /// Elements between batch entries of cuBLAS's first operand.
    pub stride_a: usize,
    /// Elements between batch entries of cuBLAS's second operand.
    pub stride_b: usize,
    /// Elements between batch entries of the result.
    pub stride_c: usize,
    /// The shapes the tape's operands must be broadcast to first (stacked
    /// products whose batch axes differ), when they must.
    pub broadcast: [Option<Vec<usize>>; 2],
}

/// The cuBLAS call of `op(a) op(b)` (numpy `matmul` for ranks 1 and 2;
/// stacks of matrices for higher ranks, whose flags must be false), or why
/// there is none.
pub fn gemm_call(a: &[usize], b: &[usize], ta: bool, tb: bool) -> Result<GemmCall, String> {
    let (ra, rb) = (a.len(), b.len());
    if ra == 0 || rb == 0 {
        return Err("matmul needs operands of rank 1 or more".to_string());
    }
    if ra > 2 || rb > 2 {
        return stacked(a, b, ta || tb);
    }
    // Vectors as matrices: a row on the left, a column on the right.
    let (a_rows, a_cols) = if ra == 2 { (a[0], a[1]) } else { (1, a[0]) };
    let (b_rows, b_cols) = if rb == 2 { (b[0], b[1]) } else { (b[0], 1) };
    let (ta, tb) = (ta && ra == 2, tb && rb == 2);
    let (m, k) = if ta {
        (a_cols, a_rows)
    } else {
        (a_rows, a_cols)
    };
    let (k2, n) = if tb {
        (b_cols, b_rows)
    } else {
        (b_rows, b_cols)
    };
    if k != k2 {
        return Err(format!(
            "matmul of shapes {a:?} and {b:?}: inner dimensions {k} and {k2} differ"
        ));
    }
    Ok(GemmCall {
        transa: tb,
        transb: ta,
        m: n,
        n: m,
        k,
        lda: b_cols.max(1),
        ldb: a_cols.max(1),
        ldc: n.max(1),
        batch: 1,
        stride_a: 0,
        stride_b: 0,
        stride_c: 0,
        broadcast: [None, None],
    })
}

/// A product of stacks of matrices (batch axes broadcast).
fn stacked(a: &[usize], b: &[usize], flagged: bool) -> Result<GemmCall, String> {
    let (ra, rb) = (a.len(), b.len());
    if flagged || ra < 2 || rb < 2 {
        return Err(format!(
            "matmul of shapes {a:?} and {b:?} is not supported on CUDA (stacks need matrices on both sides)"
        ));
    }
    let rank = ra.max(rb);
    let lead = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(&s[..s.len() - 2]);
        v
    };
    let (la, lb) = (lead(a), lead(b));
    let mut batch_shape = Vec::with_capacity(rank - 2);
    for (x, y) in la.iter().zip(&lb) {
        if x != y && *x != 1 && *y != 1 {
            return Err(format!(
                "matmul of shapes {a:?} and {b:?}: batch axes do not broadcast"
            ));
        }
        batch_shape.push(*x.max(y));
    }
    let (m, k, k2, n) = (a[ra - 2], a[ra - 1], b[rb - 2], b[rb - 1]);
    if k != k2 {
        return Err(format!(
            "matmul of shapes {a:?} and {b:?}: inner dimensions {k} and {k2} differ"
        ));
    }
    let with =
        |x: usize, y: usize| -> Vec<usize> { batch_shape.iter().copied().chain([x, y]).collect() };
    let (full_a, full_b) = (with(m, k), with(k, n));
    Ok(GemmCall {
        transa: false,
        transb: false,
        m: n,
        n: m,
        k,
        lda: n.max(1),
        ldb: k.max(1),
        ldc: n.max(1),
        batch: batch_shape.iter().product(),
        stride_a: k * n,
        stride_b: m * k,
        stride_c: m * n,
        broadcast: [
            (a != full_a.as_slice()).then_some(full_a),
            (b != full_b.as_slice()).then_some(full_b),
        ],
    })
}

/// Reduced axes as `usize`.
pub fn axes(axes: &SmallVec<[u8; 4]>) -> Vec<usize> {
    axes.iter().map(|&a| usize::from(a)).collect()
}

#[cfg(test)]
mod tests;

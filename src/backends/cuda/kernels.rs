//! CUDA C source for a tape's fused elementwise groups.
//!
//! One kernel per group: a grid-stride loop over the group's elements in
//! which each step of the group's register program becomes one `const
//! double` (the same steps, in the same order, as the CPU interpreter and
//! the Cranelift kernels). Operations with a CUDA math-library function
//! (`exp`, `log1p`, `atan2`, ...) call it; the rest (`sigmoid`, `relu`,
//! NaN-propagating `min`/`max`, ...) are device functions of [`prelude`]
//! written after `crate::scalar`, so they treat NaN, signed zeros and
//! infinities alike. Each function's spelling and device function are in
//! its row of the elementwise table (`ir::math::elementwise`). The special
//! functions (`lgamma`, `erf`, ...) are
//! device functions of `special::prelude`, added to the kernels that call
//! them. CUDA's math library rounds some functions differently
//! from the host's libm (within a few units in the last place), so the two
//! backends agree to rounding, not to the bit.
//!
//! Arrays the tape keeps in f32 storage are read and written through
//! `float` pointers ([`F32Storage`]), and f32 steps on f32 numbers are
//! computed in `float` (`float`).
//!
//! A group with `sum_over` adds its result over all elements instead of
//! storing it: each thread sums its elements, warps and blocks reduce with
//! shuffles, and one `atomicAdd` per block adds into the output (compute
//! capability 6.0 or newer). The order of additions differs from the CPU's.
//!
//! Shapes are known when a tape is compiled, so an operand's layout is
//! written into the source ([`Access`]); kernels are meant to be cached by
//! their source text.

use crate::ir::math::language::Math;
use crate::ir::{CmpOp, RoundOp, TOp};
use crate::tape::FusedGroup;
use std::fmt::Write as _;

mod f32_steps;

/// Device functions every kernel starts with: NaN, infinity and `pow`
/// here, then the device functions of the elementwise table's rows
/// (`ir::math::elementwise`, `Spelling::Device`), all after `crate::scalar`.
const PRELUDE_HEAD: &str = r#"// Epsilon's elementwise functions (see src/scalar.rs).
__device__ __forceinline__ double eps_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ double eps_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
// Unlike IEEE pow, a NaN operand always gives NaN (pow(NaN, 0) is NaN).
__device__ __forceinline__ double eps_pow(double a, double b) {
    return (isnan(a) || isnan(b)) ? eps_nan() : pow(a, b);
}
"#;

/// The device functions every kernel starts with (`PRELUDE_HEAD` and the
/// rows' device functions), made once.
pub fn prelude() -> &'static str {
    static PRELUDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PRELUDE.get_or_init(|| {
        let mut text = String::from(PRELUDE_HEAD);
        for source in crate::ir::math::elementwise::device_functions() {
            text.push_str(source);
        }
        text
    })
}

/// How a kernel reads one operand of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// A device array laid out like the group's elements: element `i`.
    Elementwise,
    /// One number, passed by value.
    Uniform,
    /// A device array read through strides (in elements) over the group's
    /// shape: 0 for a broadcast axis, any value for a transposed view.
    Strided(Vec<isize>),
    /// A device array read at a C expression of the element's coordinates
    /// `c0, c1, ...` over the group's shape (an index map folded into the
    /// group: a slice, a roll, a pad, their compositions), where a C
    /// condition on them holds (0 elsewhere; `None`: everywhere).
    Mapped(String, Option<String>),
}

/// A number as a CUDA C literal that reads back to the same `f64`.
fn literal(x: f64) -> String {
    if x.is_nan() {
        "eps_nan()".to_string()
    } else if x.is_infinite() {
        if x > 0.0 {
            "eps_inf()".to_string()
        } else {
            "(-eps_inf())".to_string()
        }
    } else {
        // `{:?}` is the shortest text that parses back to the same bits,
        // and always has a `.` or an exponent, so C reads a double.
        format!("{x:?}")
    }
}

/// The CUDA C expression of one elementwise step over operand
/// expressions `a`; `None` for an operation that is not elementwise.
pub fn expression(op: &TOp, a: &[String]) -> Option<String> {
    let arg = |k: usize| a.get(k).cloned().unwrap_or_else(|| "eps_nan()".to_string());
    let call = |f: &str| format!("{f}({})", arg(0));
    let call2 = |f: &str| format!("{f}({}, {})", arg(0), arg(1));
    Some(match op {
        TOp::Map(math) => match math {
            Math::Add(_) => format!("{} + {}", arg(0), arg(1)),
            Math::Sub(_) => format!("{} - {}", arg(0), arg(1)),
            Math::Mul(_) => format!("{} * {}", arg(0), arg(1)),
            Math::Div(_) => format!("{} / {}", arg(0), arg(1)),
            Math::Neg(_) => format!("-{}", arg(0)),
            Math::Num(c) => literal(c.get()),
            Math::Var(_) | Math::Call(..) => "eps_nan()".to_string(),
            Math::Pow(_) => call2("eps_pow"),
            // Every function: its row's spelling (registers are atoms).
            row => {
                let row = crate::ir::math::elementwise::row(row)?;
                let args: Vec<String> = (0..row.arity).map(arg).collect();
                row.cuda.apply(&args, &args)?
            }
        },
        TOp::Compare(cmp) => {
            let symbol = match cmp {
                CmpOp::Lt => "<",
                CmpOp::Le => "<=",
                CmpOp::Gt => ">",
                CmpOp::Ge => ">=",
                CmpOp::Eq => "==",
                CmpOp::Ne => "!=",
            };
            format!("({} {symbol} {}) ? 1.0 : 0.0", arg(0), arg(1))
        }
        TOp::Round(RoundOp::Floor) => call("floor"),
        TOp::Round(RoundOp::Ceil) => call("ceil"),
        // rint rounds ties to even in the default rounding mode.
        TOp::Round(RoundOp::Round) => call("rint"),
        // A NaN condition selects `a`, as on the CPU.
        TOp::Where => format!("({} != 0.0) ? {} : {}", arg(0), arg(1), arg(2)),
        // An f32 step's result: rounded to single precision (a C
        // conversion rounds to nearest, ties to even, as on the CPU).
        TOp::Cast(crate::dtype::DType::F32) => format!("(double)(float)({})", arg(0)),
        TOp::Cast(_) => arg(0),
        _ => return None,
    })
}

/// Why a group has no kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// A step has no CUDA expression.
    #[error("step {step} of the group is not elementwise ({op})")]
    NotElementwise {
        /// The step's index.
        step: usize,
        /// The operation, as debug text.
        op: String,
    },
    /// `access` does not give one layout per operand.
    #[error("the group has {inputs} operands but {accesses} access patterns")]
    OperandCount {
        /// The group's operands.
        inputs: usize,
        /// The layouts given.
        accesses: usize,
    },
    /// A summing group's one number cannot be f32 storage (it is added
    /// into, in f64, by every block).
    #[error("a summing group's result cannot be f32 storage")]
    SummingF32,
    /// A strided operand's strides do not match the group's rank.
    #[error("operand {operand} has {strides} strides for a group of rank {rank}")]
    StrideRank {
        /// The operand.
        operand: usize,
        /// Its strides.
        strides: usize,
        /// The group's rank.
        rank: usize,
    },
}

/// Which arrays of a group kernel hold f32 storage: f32 numbers packed
/// two per 8-byte slot (see `single`). The parameters stay `double*`; the
/// kernel reads such an operand through a `float*` (widened, exactly, to
/// the `double` its steps compute in) and narrows its result on storing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct F32Storage {
    /// Per operand (missing ones are f64).
    pub operands: Vec<bool>,
    /// The result.
    pub result: bool,
}

impl F32Storage {
    fn operand(&self, k: usize) -> bool {
        self.operands.get(k).copied().unwrap_or(false)
    }
}

/// The CUDA C source of `group` as the kernel `name` over elements of
/// `shape`, reading operand `k` as `access[k]`, every array in f64
/// storage.
///
/// Parameters, in order: the element count `n` (`long long`), each operand
/// (`const double*`, or `double` when uniform), then each result
/// (`double*`; for a summing group the one result is a single number that
/// the kernel adds into, so it must start at 0).
pub fn group_kernel(
    group: &FusedGroup,
    shape: &[usize],
    access: &[Access],
    name: &str,
) -> Result<String, KernelError> {
    group_kernel_stored(group, shape, access, &F32Storage::default(), name)
}

/// [`group_kernel`] with the arrays that `storage` names in f32 storage.
pub fn group_kernel_stored(
    group: &FusedGroup,
    shape: &[usize],
    access: &[Access],
    storage: &F32Storage,
    name: &str,
) -> Result<String, KernelError> {
    if group.sum_over.is_some() && storage.result {
        return Err(KernelError::SummingF32);
    }
    if access.len() != group.inputs {
        return Err(KernelError::OperandCount {
            inputs: group.inputs,
            accesses: access.len(),
        });
    }
    let mut params = vec!["const long long n".to_string()];
    let mut body = String::new();
    let in_storage: Vec<bool> = (0..group.inputs)
        .map(|k| storage.operand(k) && access[k] != Access::Uniform)
        .collect();
    let (float, in_float) = f32_steps::plan(group, &in_storage);
    let kind = |r: usize| if float[r] { "float" } else { "double" };
    for (k, how) in access.iter().enumerate() {
        // An f32 operand is read through a float pointer.
        let array = if in_storage[k] {
            format!("reinterpret_cast<const float*>(a{k})")
        } else {
            format!("a{k}")
        };
        let kind = kind(k);
        match how {
            Access::Elementwise => {
                params.push(format!("const double* __restrict__ a{k}"));
                let _ = writeln!(body, "        const {kind} r{k} = {array}[i];");
            }
            Access::Uniform => {
                params.push(format!("const double a{k}"));
                let _ = writeln!(body, "        const double r{k} = a{k};");
            }
            Access::Mapped(offset, condition) => {
                params.push(format!("const double* __restrict__ a{k}"));
                let read = match condition {
                    None => format!("{array}[{offset}]"),
                    Some(condition) => format!("({condition}) ? {array}[{offset}] : ({kind})0"),
                };
                let _ = writeln!(body, "        const {kind} r{k} = {read};");
            }
            Access::Strided(strides) => {
                if strides.len() != shape.len() {
                    return Err(KernelError::StrideRank {
                        operand: k,
                        strides: strides.len(),
                        rank: shape.len(),
                    });
                }
                params.push(format!("const double* __restrict__ a{k}"));
                let _ = writeln!(
                    body,
                    "        const {kind} r{k} = {array}[{}];",
                    strided_offset(shape, strides)
                );
            }
        }
    }
    for (s, (op, operands)) in group.steps.iter().enumerate() {
        let register = group.inputs + s;
        let expr = if in_float[s] {
            let args: Vec<String> = operands.iter().map(|r| format!("r{r}")).collect();
            f32_steps::expression(op, &args)
        } else if let TOp::Cast(crate::dtype::DType::F32) = op {
            operands.first().map(|r| format!("(float)r{r}"))
        } else {
            // Double arithmetic, float registers widened (exactly).
            let args: Vec<String> = operands
                .iter()
                .map(|&r| match float[r as usize] {
                    true => format!("(double)r{r}"),
                    false => format!("r{r}"),
                })
                .collect();
            expression(op, &args)
        };
        let expr = expr.ok_or_else(|| KernelError::NotElementwise {
            step: s,
            op: format!("{op:?}"),
        })?;
        let _ = writeln!(
            body,
            "        const {} r{register} = {expr};",
            kind(register)
        );
    }
    let summing = group.sum_over.is_some();
    for (k, _) in group.results.iter().enumerate() {
        params.push(format!("double* __restrict__ out{k}"));
    }
    let mut source = String::from(prelude());
    // The special functions' device code only where a step calls one.
    if group
        .steps
        .iter()
        .any(|(op, _)| matches!(op, TOp::Map(math) if super::special::needs_prelude(math)))
    {
        source.push_str(super::special::prelude());
    }
    let _ = writeln!(
        source,
        "\nextern \"C\" __global__ void {name}({}) {{",
        params.join(", ")
    );
    if summing {
        source.push_str("    double acc = 0.0;\n");
    }
    source.push_str(
        "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n         i += (long long)gridDim.x * blockDim.x) {\n",
    );
    if access.iter().any(|a| matches!(a, Access::Mapped(..))) {
        // The element's coordinates, for the mapped operands.
        let mut inner = 1usize;
        let mut declarations = Vec::new();
        for (k, dim) in shape.iter().enumerate().rev() {
            declarations.push(format!(
                "        const long long c{k} = (i / {inner}LL) % {dim}LL;\n"
            ));
            inner *= dim;
        }
        declarations.reverse();
        source.push_str(&declarations.concat());
    }
    source.push_str(&body);
    for (k, r) in group.results.iter().enumerate() {
        if summing {
            let _ = writeln!(source, "        acc += r{r};");
        } else if storage.result {
            let _ = writeln!(
                source,
                "        reinterpret_cast<float*>(out{k})[i] = (float)r{r};"
            );
        } else {
            let _ = writeln!(source, "        out{k}[i] = r{r};");
        }
    }
    source.push_str("    }\n");
    if summing {
        source.push_str(BLOCK_SUM);
    }
    source.push_str("}\n");
    Ok(source)
}

/// The offset of element `i` of `shape` in an operand with `strides`.
fn strided_offset(shape: &[usize], strides: &[isize]) -> String {
    let mut terms = Vec::new();
    let mut inner: usize = 1;
    for (dim, stride) in shape.iter().zip(strides).rev() {
        if *stride != 0 && *dim > 1 {
            terms.push(format!("((i / {inner}LL) % {dim}LL) * {stride}LL"));
        }
        inner *= dim;
    }
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

/// The end of a summing kernel: warp shuffles, then one partial sum per
/// warp in shared memory, then one `atomicAdd` per block.
const BLOCK_SUM: &str = r#"    for (int offset = 16; offset > 0; offset /= 2) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    __shared__ double warp_sums[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) {
            acc += __shfl_down_sync(0xffffffffu, acc, offset);
        }
        if (lane == 0) atomicAdd(out0, acc);
    }
"#;

#[cfg(test)]
pub(crate) mod tests;

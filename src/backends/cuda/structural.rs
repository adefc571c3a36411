//! CUDA C source for the operations that move elements without computing
//! with them: `broadcast`, `reshape`, `transpose`, `slice`, `pad`,
//! `concat` and `roll`. Each is one kernel in which output element `i`
//! reads the input element its coordinates map to (or writes 0 in a pad).
//! Shapes are written into the source, as in `kernels`.

use super::kernels::prelude;
use crate::ir::TOp;
use std::fmt::Write as _;

/// Row-major strides of `shape`, in elements.
fn strides(shape: &[usize]) -> Vec<usize> {
    (0..shape.len())
        .map(|k| shape[k + 1..].iter().product())
        .collect()
}

/// `c{k}`, the coordinate of output element `i` along axis `k`, for every
/// axis of `shape`, as C declarations.
fn coordinates(shape: &[usize]) -> String {
    let strides = strides(shape);
    let mut out = String::new();
    for (k, (dim, stride)) in shape.iter().zip(&strides).enumerate() {
        let _ = writeln!(
            out,
            "        const long long c{k} = (i / {stride}LL) % {dim}LL;"
        );
    }
    out
}

/// `Σ coordinate_k * stride_k` over an input's axes; `coordinate(k)` gives
/// the C expression of the input's coordinate along axis `k`.
fn offset(shape: &[usize], coordinate: impl Fn(usize) -> String) -> String {
    let terms: Vec<String> = strides(shape)
        .iter()
        .enumerate()
        .filter(|(k, _)| shape[*k] > 1)
        .map(|(k, stride)| format!("({}) * {stride}LL", coordinate(k)))
        .collect();
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

/// The CUDA C source of kernel `name` computing `op` from operands of
/// `inputs` shapes into `output` shape; `None` for an operation that is
/// not one of these. Parameters: `n` (the output's element count), each
/// operand (`const double*`), then the output (`double*`).
pub fn index_kernel(
    op: &TOp,
    inputs: &[Vec<usize>],
    output: &[usize],
    name: &str,
) -> Option<String> {
    index_kernel_stored(op, inputs, output, name, false)
}

/// [`index_kernel`] on arrays that all hold f32 storage when `single`
/// (f32 numbers packed two per 8-byte slot): the parameters stay
/// `double*` and the kernel moves `float`s.
pub fn index_kernel_stored(
    op: &TOp,
    inputs: &[Vec<usize>],
    output: &[usize],
    name: &str,
    single: bool,
) -> Option<String> {
    let first = inputs.first()?;
    let read = match op {
        TOp::Reshape(_) | TOp::StopGradient | TOp::Tag(_) => "x0[i]".to_string(),
        TOp::Broadcast(_) => {
            let lead = output.len() - first.len();
            format!("x0[{}]", offset(first, |k| format!("c{}", k + lead)))
        }
        TOp::Transpose(perm) => {
            // Result axis j is operand axis perm[j].
            let axis_of = |k: usize| perm.iter().position(|&p| p as usize == k).unwrap_or(k);
            format!("x0[{}]", offset(first, |k| format!("c{}", axis_of(k))))
        }
        TOp::Slice { axis, start, .. } => {
            let axis = *axis as usize;
            format!(
                "x0[{}]",
                offset(first, |k| if k == axis {
                    format!("c{k} + {start}LL")
                } else {
                    format!("c{k}")
                })
            )
        }
        TOp::Roll { axis, shift } => {
            let axis = *axis as usize;
            let len = first[axis];
            format!(
                "x0[{}]",
                offset(first, |k| if k == axis {
                    format!("(c{k} + {}LL) % {len}LL", len - shift % len.max(1))
                } else {
                    format!("c{k}")
                })
            )
        }
        TOp::Pad { axis, before, .. } => {
            let axis = *axis as usize;
            let len = first[axis];
            format!(
                "(c{axis} >= {before}LL && c{axis} < {}LL) ? x0[{}] : 0.0",
                before + len,
                offset(first, |k| if k == axis {
                    format!("c{k} - {before}LL")
                } else {
                    format!("c{k}")
                })
            )
        }
        TOp::Concat(axis) => {
            let axis = *axis as usize;
            let mut start = 0usize;
            let mut choices = Vec::new();
            for (j, shape) in inputs.iter().enumerate() {
                let end = start + shape[axis];
                let read = format!(
                    "x{j}[{}]",
                    offset(shape, |k| if k == axis {
                        format!("c{k} - {start}LL")
                    } else {
                        format!("c{k}")
                    })
                );
                choices.push((end, read));
                start = end;
            }
            let mut expr = choices.last()?.1.clone();
            for (end, read) in choices.iter().rev().skip(1) {
                expr = format!("c{axis} < {end}LL ? {read} : ({expr})");
            }
            expr
        }
        _ => return None,
    };
    Some(moving_kernel(&read, inputs.len(), output, name, single))
}

/// The CUDA C source of kernel `name` writing each element `i` of an
/// array of `output` shape from operand `x0` at the C expression
/// `offset` of its coordinates `c0, c1, ...` where `condition` holds, 0
/// elsewhere (a composed index map). Parameters as [`index_kernel`]'s
/// with one operand.
pub fn mapped_kernel(
    offset: &str,
    condition: Option<&str>,
    output: &[usize],
    name: &str,
    single: bool,
) -> String {
    let read = match condition {
        None => format!("x0[{offset}]"),
        Some(condition) => format!("({condition}) ? x0[{offset}] : 0.0"),
    };
    moving_kernel(&read, 1, output, name, single)
}

/// The kernel of an operation that moves elements: each output element
/// `i` is `read`, an expression of its coordinates and of the `operands`
/// arrays `x0, x1, ...`.
fn moving_kernel(
    read: &str,
    operands: usize,
    output: &[usize],
    name: &str,
    single: bool,
) -> String {
    let inputs = vec![(); operands];
    let mut params = vec!["const long long n".to_string()];
    let mut views = String::new();
    if single {
        // The same names as `float` pointers over the parameters' slots.
        for j in 0..inputs.len() {
            params.push(format!("const double* __restrict__ slots{j}"));
            let _ = writeln!(
                views,
                "    const float* __restrict__ x{j} = reinterpret_cast<const float*>(slots{j});"
            );
        }
        params.push("double* __restrict__ slots".to_string());
        views.push_str("    float* __restrict__ out = reinterpret_cast<float*>(slots);\n");
    } else {
        params.extend((0..inputs.len()).map(|j| format!("const double* __restrict__ x{j}")));
        params.push("double* __restrict__ out".to_string());
    }
    let mut source = String::from(prelude());
    let _ = write!(
        source,
        "\nextern \"C\" __global__ void {name}({}) {{\n{views}    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n         i += (long long)gridDim.x * blockDim.x) {{\n{}        out[i] = {read};\n    }}\n}}\n",
        params.join(", "),
        coordinates(output),
    );
    source
}

#[cfg(test)]
mod tests;

//! What the operations' dependence rules (`Definition::reads`, used by the
//! sparsity patterns of the `sparse` module) share: row-major positions and
//! the elements an element of a result reads.

use smallvec::SmallVec;

/// The index of flat position `flat` in `shape` (row-major).
pub fn unravel(mut flat: usize, shape: &[usize]) -> SmallVec<[usize; 6]> {
    let mut index: SmallVec<[usize; 6]> = SmallVec::from_elem(0, shape.len());
    for d in (0..shape.len()).rev() {
        let extent = shape[d].max(1);
        index[d] = flat % extent;
        flat /= extent;
    }
    index
}

/// The flat position of `index` in `shape` (row-major).
pub fn ravel(index: &[usize], shape: &[usize]) -> usize {
    index
        .iter()
        .zip(shape)
        .fold(0, |at, (&i, &extent)| at * extent + i)
}

/// Every element of `operand` (of `shape`) that agrees with `index` off
/// `axis`: the lane through `index` along `axis`.
pub fn lane(
    out: &mut Vec<(usize, usize)>,
    operand: usize,
    shape: &[usize],
    index: &[usize],
    axis: usize,
) {
    let mut at: SmallVec<[usize; 6]> = SmallVec::from_slice(index);
    for k in 0..shape[axis] {
        at[axis] = k;
        out.push((operand, ravel(&at, shape)));
    }
}

/// Every element of the matrix (the last `core` axes) of `operand` (of
/// `shape`) whose leading axes broadcast to the stack position `stack`
/// (right-aligned; an axis of length 1 stands for every position).
pub fn matrix(
    out: &mut Vec<(usize, usize)>,
    operand: usize,
    shape: &[usize],
    stack: &[usize],
    core: usize,
) {
    let lead = shape.len() - core;
    let offset = stack.len().saturating_sub(lead);
    let mut base: SmallVec<[usize; 6]> = SmallVec::from_elem(0, shape.len());
    for d in 0..lead {
        base[d] = if shape[d] == 1 { 0 } else { stack[offset + d] };
    }
    let size: usize = shape[lead..].iter().product();
    let start = ravel(&base, shape);
    out.extend((start..start + size).map(|p| (operand, p)));
}

/// For an operation on stacks of matrices whose result's last
/// `result_core` axes are one matrix's: each result element reads the
/// whole matrix at its stack position of each operand (operand `k`'s last
/// `cores[k]` axes a matrix or a vector), as a factorization or a solve
/// does.
pub fn per_matrix(
    out: &mut Vec<(usize, usize)>,
    operands: &[&[usize]],
    cores: &[usize],
    shape: &[usize],
    result_core: usize,
    element: usize,
) {
    let index = unravel(element, shape);
    let stack = &index[..shape.len() - result_core];
    for (k, operand) in operands.iter().enumerate() {
        matrix(out, k, operand, stack, cores[k]);
    }
}

/// `per_matrix` for a result that packs `parts` (each with the stack's
/// leading axes, then `part_cores[p]` axes of its own) into one vector.
pub fn per_matrix_packed(
    out: &mut Vec<(usize, usize)>,
    operands: &[&[usize]],
    cores: &[usize],
    parts: &[crate::ir::Shape],
    part_cores: &[usize],
    element: usize,
) {
    let mut offset = 0;
    for (part, &core) in parts.iter().zip(part_cores) {
        let len: usize = part.iter().product();
        if element < offset + len {
            per_matrix(out, operands, cores, part, core, element - offset);
            return;
        }
        offset += len;
    }
}

//! Triangles and diagonals of stacks of matrices: `tril`/`triu`
//! (`Triangle`), the diagonal of each matrix (`Diagonal`) and the matrix
//! with a given diagonal (`Diag`). All three are linear, so each one's
//! reverse and forward rules are itself or its partner applied to the
//! cotangent or tangent.

use super::matrix_dims;
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::indexing::array;
use crate::ir::ops::{CudaKernel, Definition, Op, OpError, Pulled, Rules};
use crate::ir::shape::{ShapeError, show};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// The entries on one side of a diagonal of each matrix, zeros elsewhere:
/// `tril(x, k)` keeps `j <= i + k` (`lower`), `triu(x, k)` keeps
/// `j >= i + k`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Triangle {
    /// Keep the lower triangle (else the upper).
    pub lower: bool,
    /// The diagonal: 0 the main one, positive above it.
    pub k: i64,
}

impl Triangle {
    fn keeps(&self, i: usize, j: usize) -> bool {
        let (i, j) = (i as i64, j as i64);
        if self.lower {
            j <= i + self.k
        } else {
            j >= i + self.k
        }
    }
}

impl Definition for Triangle {
    fn describe(&self) -> String {
        format!("{}[{}]", if self.lower { "tril" } else { "triu" }, self.k)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let what = if self.lower { "tril" } else { "triu" };
        matrix_dims(operands[0], what)?;
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let (rows, cols) = matrix_dims(shape, "triangle").map_err(|e| OpError::new(e.0))?;
        let mut data: Vec<f64> = operands[0].as_standard_layout().iter().copied().collect();
        for matrix in data.chunks_mut((rows * cols).max(1)) {
            for (index, x) in matrix.iter_mut().enumerate() {
                if !self.keeps(index / cols.max(1), index % cols.max(1)) {
                    *x = 0.0;
                }
            }
        }
        array(shape, data)
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (rows, cols) = matrix_dims(operands[0], "triangle").ok()?;
        let (rows, cols) = (rows.max(1), cols.max(1));
        let keep = if self.lower {
            "j <= i + k"
        } else {
            "j >= i + k"
        };
        Some(CudaKernel {
            name: "triangle",
            source: format!(
                "extern \"C\" __global__ void triangle(long long n, const double* x, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long j = e % {cols}LL, i = (e / {cols}LL) % {rows}LL, k = {k}LL;
        out[e] = ({keep}) ? x[e] : 0.0;
    }}
}}
",
                k = self.k
            ),
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        SmallVec::from_slice(&[Some(rules.op(Op::Triangle(self.clone()), &[g]))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        rules.op(Op::Triangle(self.clone()), &[t])
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        shape.iter().product::<usize>() as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = (operands, shape);
        out.push((0, element));
        true
    }

    /// Linear, matrix by matrix: the summed stack's.
    fn sum_through(&self, batched: &[bool], ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        (batched == [true] && ranks[0] >= 3).then(|| crate::ir::ops::Op::Triangle(self.clone()))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Triangle(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }
}

/// The diagonal of each matrix: `[.., n, m]` gives `[.., min(n, m)]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Diagonal;

impl Definition for Diagonal {
    fn describe(&self) -> String {
        "diagonal".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let (rows, cols) = matrix_dims(operands[0], "diagonal")?;
        let x = operands[0];
        let mut out: Shape = x[..x.len() - 2].iter().copied().collect();
        out.push(rows.min(cols));
        Ok(out)
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let x = operands[0].as_standard_layout();
        let (rows, cols) = matrix_dims(x.shape(), "diagonal").map_err(|e| OpError::new(e.0))?;
        let source = x.as_slice().unwrap_or(&[]);
        let k = rows.min(cols);
        let count: usize = shape.iter().product::<usize>() / k.max(1);
        let mut out = Vec::with_capacity(count * k);
        for b in 0..count {
            let matrix = &source[b * rows * cols..];
            out.extend((0..k).map(|i| matrix[i * cols + i]));
        }
        array(shape, out)
    }

    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (rows, cols) = matrix_dims(operands[0], "diagonal").ok()?;
        let k = rows.min(cols).max(1);
        Some(CudaKernel {
            name: "diagonal",
            source: format!(
                "extern \"C\" __global__ void diagonal(long long n, const double* x, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        out[e] = x[(e / {k}LL) * {size}LL + (e % {k}LL) * {step}LL];
    }}
}}
",
                size = rows * cols,
                step = cols + 1
            ),
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let shape = rules.shape(operands[0]);
        let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        SmallVec::from_slice(&[Some(rules.diag(g, rows, cols))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        rules.diagonal(t)
    }

    fn flops(&self, _operands: &[&[usize]], _shape: &[usize]) -> u64 {
        0
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let x = operands[0];
        let mut index = crate::ir::ops::reads::unravel(element, shape);
        let i = index[index.len() - 1];
        index.push(i);
        out.push((0, crate::ir::ops::reads::ravel(&index, x)));
        true
    }

    /// Linear, matrix by matrix: the summed stack's.
    fn sum_through(&self, batched: &[bool], ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        (batched == [true] && ranks[0] >= 3).then(|| crate::ir::ops::Op::Diagonal(self.clone()))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Diagonal(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }
}

/// Matrices of `rows x cols` with the last axis of the operand (of length
/// `min(rows, cols)`) on the diagonal and zeros elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Diag {
    /// Rows of each matrix.
    pub rows: usize,
    /// Columns of each matrix.
    pub cols: usize,
}

impl Definition for Diag {
    fn describe(&self) -> String {
        format!("diag[{} {}]", self.rows, self.cols)
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let v = operands[0];
        let k = self.rows.min(self.cols);
        match v.last() {
            Some(&len) if len == k => {
                let mut out: Shape = v[..v.len() - 1].iter().copied().collect();
                out.push(self.rows);
                out.push(self.cols);
                Ok(out)
            }
            _ => Err(ShapeError(format!(
                "diag of a {}x{} matrix needs a vector of length {k}, got shape {}",
                self.rows,
                self.cols,
                show(v)
            ))),
        }
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let v = operands[0].as_standard_layout();
        let source = v.as_slice().unwrap_or(&[]);
        let k = self.rows.min(self.cols);
        let size = self.rows * self.cols;
        let count = source.len() / k.max(1);
        let mut out = vec![0.0; count * size];
        for b in 0..count {
            for i in 0..k {
                out[b * size + i * self.cols + i] = source[b * k + i];
            }
        }
        array(shape, out)
    }

    fn cuda(&self, _operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let (rows, cols) = (self.rows.max(1), self.cols.max(1));
        let k = self.rows.min(self.cols).max(1);
        Some(CudaKernel {
            name: "diag",
            source: format!(
                "extern \"C\" __global__ void diag(long long n, const double* v, double* out) {{
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {{
        long long j = e % {cols}LL, i = (e / {cols}LL) % {rows}LL;
        out[e] = i == j ? v[(e / ({rows}LL * {cols}LL)) * {k}LL + i] : 0.0;
    }}
}}
"
            ),
            threads: shape.iter().product(),
            zeroed: false,
            copy_first: false,
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, _operands: &[Id], g: Id) -> Pulled {
        SmallVec::from_slice(&[Some(rules.diagonal(g))])
    }

    fn jvp(
        &self,
        rules: &mut Rules<'_>,
        _node: Id,
        operands: &[Id],
        tangents: &[Option<Id>],
    ) -> Id {
        let t = rules.tangent_or_zero(operands[0], tangents[0]);
        rules.diag(t, self.rows, self.cols)
    }

    fn flops(&self, _operands: &[&[usize]], _shape: &[usize]) -> u64 {
        0
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let index = crate::ir::ops::reads::unravel(element, shape);
        let (r, c) = (index[index.len() - 2], index[index.len() - 1]);
        if r == c {
            let mut at: SmallVec<[usize; 6]> = index[..index.len() - 1].iter().copied().collect();
            at[index.len() - 2] = r;
            out.push((0, crate::ir::ops::reads::ravel(&at, operands[0])));
        }
        true
    }

    /// Linear, matrix by matrix: the summed stack's.
    fn sum_through(&self, batched: &[bool], ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        (batched == [true] && ranks[0] >= 2).then(|| crate::ir::ops::Op::Diag(self.clone()))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Diag(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[1], size)
    }
}

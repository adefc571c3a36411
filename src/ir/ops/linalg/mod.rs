//! Dense linear algebra, batched over leading axes: triangles and
//! diagonals (`triangle`), Cholesky factors, triangular and general
//! solves (`cholesky`, `solve`), determinants (`det`) and the adjugate
//! their derivative is made of (`adjugate`), the symmetric
//! eigendecomposition (`eigh`), the thin SVD (`svd`), the thin QR
//! factorization (`qr`) and the matrix exponential (`expm`). Complex
//! matrices held as two real parts have their own factorizations
//! (`eigh_hermitian`, `slogdet_complex`, `cholesky_complex`,
//! `qr_complex`, `svd_complex`), whose rules share the algebra of pairs
//! (`pairs`).
//! Factorizations come from faer (pure Rust, no system LAPACK). Each operation's derivative rules are written in the
//! operations of this table and the tensor language, so second
//! derivatives, loops and compiled functions go through them.
//!
//! Matrices live in the last two axes; the leading axes of the operands
//! broadcast (NumPy's stacks of matrices). A kernel runs one matrix at a
//! time: over a batch the matrices are spread across threads (each one
//! factored sequentially), a single large matrix uses faer's own threads.
//!
//! Operations with several results (`slogdet`, `eigh`, `svd`, `qr`) write
//! them packed (`run_packed`): every matrix's first part, then every
//! matrix's second part, and so on, the layout `ops::unpack` reads.

mod adjugate;
mod cholesky;
mod cholesky_complex;
mod det;
pub mod device;
mod eigh;
mod eigh_hermitian;
mod expm;
mod lu;
mod pairs;
mod qr;
mod qr_complex;
mod slogdet_complex;
mod solve;
mod spectral;
mod svd;
mod svd_complex;
mod triangle;

pub use adjugate::Adjugate;
pub use cholesky::Cholesky;
pub use cholesky_complex::CholeskyComplex;
pub use det::{Det, Slogdet};
pub use eigh::Eigh;
pub use eigh_hermitian::EighHermitian;
pub use expm::MatrixExp;
pub use qr::{FullRank, Qr};
pub use qr_complex::QrComplex;
pub use slogdet_complex::SlogdetComplex;
pub use solve::{Solve, TriangularSolve};
pub use svd::Svd;
pub use svd_complex::SvdComplex;
pub use triangle::{Diag, Diagonal, Triangle};

use super::OpError;
use crate::ir::Shape;
use crate::ir::shape::{ShapeError, broadcast, show};
use faer::{Mat, MatRef, Par, c64};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Matrices at least this large use faer's threads when there is one of
/// them.
const THREADED: usize = 192;

/// `(rows, cols)` of the matrices of `shape`, or an error naming `what`.
pub(crate) fn matrix_dims(shape: &[usize], what: &str) -> Result<(usize, usize), ShapeError> {
    match shape {
        [.., rows, cols] => Ok((*rows, *cols)),
        _ => Err(ShapeError(format!(
            "{what} needs a matrix (or a stack of them), got shape {}",
            show(shape)
        ))),
    }
}

/// The side of the square matrices of `shape`.
pub(crate) fn square_dim(shape: &[usize], what: &str) -> Result<usize, ShapeError> {
    let (rows, cols) = matrix_dims(shape, what)?;
    if rows != cols {
        return Err(ShapeError(format!(
            "{what} needs square matrices, got shape {}",
            show(shape)
        )));
    }
    Ok(rows)
}

/// The broadcast of the leading (batch) axes of operands whose last
/// `core[k]` axes are the matrix (or vector) part.
pub(crate) fn batch_shape(shapes: &[&[usize]], core: &[usize]) -> Result<Shape, ShapeError> {
    let mut out = Shape::new();
    for (shape, &c) in shapes.iter().zip(core) {
        out = broadcast(&out, &shape[..shape.len() - c])?;
    }
    Ok(out)
}

/// The operands of a batched kernel as contiguous numbers, each
/// broadcast to `batch` followed by its own core axes (the last `core[k]`).
pub(crate) struct Batched {
    /// The numbers of each operand, batch-major.
    pub data: Vec<Vec<f64>>,
    /// The numbers in one core of each operand.
    pub sizes: Vec<usize>,
    /// How many cores (matrices) there are.
    pub count: usize,
}

impl Batched {
    /// Broadcasts `operands` over the batch `batch`.
    pub fn new(
        operands: &[ArrayViewD<'_, f64>],
        core: &[usize],
        batch: &[usize],
    ) -> Result<Batched, OpError> {
        let mut data = Vec::with_capacity(operands.len());
        let mut sizes = Vec::with_capacity(operands.len());
        for (x, &c) in operands.iter().zip(core) {
            let own = &x.shape()[x.ndim() - c..];
            let mut full: Vec<usize> = batch.to_vec();
            full.extend_from_slice(own);
            let view = x.broadcast(IxDyn(&full)).ok_or_else(|| {
                OpError::new(format!(
                    "internal: shape {} does not broadcast to {}",
                    show(x.shape()),
                    show(&full)
                ))
            })?;
            data.push(match view.as_slice() {
                Some(slice) => slice.to_vec(),
                None => view.iter().copied().collect(),
            });
            sizes.push(own.iter().product());
        }
        Ok(Batched {
            data,
            sizes,
            count: batch.iter().product(),
        })
    }

    /// Operand `k`'s core number `b`.
    pub fn core(&self, k: usize, b: usize) -> &[f64] {
        &self.data[k][b * self.sizes[k]..(b + 1) * self.sizes[k]]
    }
}

/// Runs `kernel` on every core of a batch (in parallel across the batch
/// when there are several), writing `out_size` numbers per core, and
/// joins the results into an array of `shape`. The kernel gets the core's
/// index, the parallelism to use inside it and its output; an error
/// names the failing matrix when there are several.
pub(crate) fn run_batch(
    count: usize,
    out_size: usize,
    side: usize,
    shape: &[usize],
    kernel: impl Fn(usize, Par, &mut [f64]) -> Result<(), OpError> + Sync,
) -> Result<ArrayD<f64>, OpError> {
    let mut out = vec![0.0; count * out_size];
    let label = |b: usize, e: OpError| {
        if count > 1 {
            OpError::new(format!("{} (matrix {b} of the batch)", e.message))
        } else {
            e
        }
    };
    if count == 1 {
        let par = if side >= THREADED {
            Par::rayon(0)
        } else {
            Par::Seq
        };
        kernel(0, par, &mut out).map_err(|e| label(0, e))?;
    } else if out_size > 0 {
        out.par_chunks_mut(out_size)
            .enumerate()
            .try_for_each(|(b, chunk)| kernel(b, Par::Seq, chunk).map_err(|e| label(b, e)))?;
    }
    super::indexing::array(shape, out)
}

/// Runs `kernel` on every core of a batch like [`run_batch`], each core
/// writing its results one after another (`parts` numbers each), and
/// lays them out packed: part 0 of every core, then part 1 of every
/// core, and so on (one flat vector).
pub(crate) fn run_packed(
    count: usize,
    parts: &[usize],
    side: usize,
    kernel: impl Fn(usize, Par, &mut [f64]) -> Result<(), OpError> + Sync,
) -> Result<ArrayD<f64>, OpError> {
    let per: usize = parts.iter().sum();
    let joined = run_batch(count, per, side, &[count * per], kernel)?;
    let data = joined
        .as_slice()
        .ok_or_else(|| OpError::new("internal: a batch result is not contiguous"))?;
    let mut out = Vec::with_capacity(count * per);
    let mut inner = 0;
    for &size in parts {
        for b in 0..count {
            let start = b * per + inner;
            out.extend_from_slice(&data[start..start + size]);
        }
        inner += size;
    }
    super::indexing::array(&[count * per], out)
}

/// The square matrices of an operation on complex matrices given as two
/// parts: both of one shape. Their side.
pub(crate) fn two_parts(operands: &[&[usize]], what: &str) -> Result<usize, ShapeError> {
    let n = square_dim(operands[0], what)?;
    same_parts(operands, what)?;
    Ok(n)
}

/// The matrices of an operation on complex matrices given as two parts:
/// both of one shape. Their `(rows, cols)`.
pub(crate) fn two_part_matrices(
    operands: &[&[usize]],
    what: &str,
) -> Result<(usize, usize), ShapeError> {
    let dims = matrix_dims(operands[0], what)?;
    same_parts(operands, what)?;
    Ok(dims)
}

fn same_parts(operands: &[&[usize]], what: &str) -> Result<(), ShapeError> {
    match operands[0] == operands[1] {
        true => Ok(()),
        false => Err(ShapeError(format!(
            "{what}: the real part has shape {} and the imaginary part {}",
            show(operands[0]),
            show(operands[1])
        ))),
    }
}

/// Both parts of a complex matrix finite, or the error of a
/// factorization given a NaN or an infinity.
pub(crate) fn finite_parts(re: &[f64], im: &[f64]) -> Result<(), OpError> {
    match all_finite(re) && all_finite(im) {
        true => Ok(()),
        false => Err(OpError::new("the matrix has a NaN or an infinite entry")),
    }
}

/// The `rows x cols` complex matrix with the (finite) row-major parts
/// `re`, `im`.
pub(crate) fn complex_mat(
    re: &[f64],
    im: &[f64],
    rows: usize,
    cols: usize,
) -> Result<Mat<c64>, OpError> {
    finite_parts(re, im)?;
    Ok(Mat::from_fn(rows, cols, |i, j| {
        c64::new(re[i * cols + j], im[i * cols + j])
    }))
}

/// The columns of `u` (`rows x cols`) written row-major into the parts
/// `re`, `im`, each turned so that its pivot (`pivot_turn`) is real and
/// positive, the pivots marked one-hot in `pivots` (zeroed first); the
/// turns, one per column.
pub(crate) fn phase_fixed(
    u: MatRef<'_, c64>,
    re: &mut [f64],
    im: &mut [f64],
    pivots: &mut [f64],
) -> Vec<c64> {
    let (rows, cols) = u.shape();
    pivots.fill(0.0);
    (0..cols)
        .map(|j| {
            let (p, turn) = pivot_turn((0..rows).map(|i| u[(i, j)]));
            for i in 0..rows {
                let z = u[(i, j)] * turn;
                re[i * cols + j] = z.re + 0.0;
                im[i * cols + j] = z.im + 0.0;
            }
            im[p * cols + j] = 0.0;
            pivots[p * cols + j] = 1.0;
            turn
        })
        .collect()
}

/// The pivot of a vector (its entry of largest magnitude, the first of
/// equals) and the unit number that turns the pivot real and positive
/// when the vector is multiplied by it (1 for a zero vector).
pub(crate) fn pivot_turn(entries: impl Iterator<Item = c64> + Clone) -> (usize, c64) {
    let p = spectral::largest_entry(entries.clone().map(|z| z.norm()));
    let pivot = entries.clone().nth(p).unwrap_or(c64::new(1.0, 0.0));
    let size = pivot.norm();
    match size > 0.0 {
        true => (p, c64::new(pivot.re / size, -pivot.im / size)),
        false => (p, c64::new(1.0, 0.0)),
    }
}

/// Runs `kernel` on the two parts (`re`, `im`) of every complex matrix
/// of a stack given as the operands `Ar`, `Ai` of one shape, each matrix
/// writing `parts` numbers, laid out packed as [`run_packed`] does;
/// `side` chooses the parallelism.
pub(crate) fn run_on_parts(
    operands: &[ArrayViewD<'_, f64>],
    parts: &[usize],
    side: usize,
    kernel: impl Fn(&[f64], &[f64], Par, &mut [f64]) -> Result<(), OpError> + Sync,
) -> Result<ArrayD<f64>, OpError> {
    let input = Batched::new(operands, &[2, 2], &leading(operands[0].shape()))?;
    run_packed(input.count, parts, side, |b, par, out| {
        kernel(input.core(0, b), input.core(1, b), par, out)
    })
}

/// An operation on the two parts of complex matrices batched over a new
/// leading axis: the operation on the stacks, its packed results (of
/// shapes `parts` of the stacked matrices) laid out per example.
pub(crate) fn two_parts_batched(
    graph: &mut crate::ir::TensorGraph,
    op: super::Op,
    operands: &[egg::Id],
    batched: &[bool],
    size: usize,
    parts: impl Fn(&[usize]) -> Vec<Shape>,
) -> Option<egg::Id> {
    // Both parts batched (a shared one broadcast): they must have one
    // shape.
    let both: SmallVec<[egg::Id; 2]> = operands
        .iter()
        .zip(batched)
        .map(|(&id, &b)| super::batching::full(graph, id, b, size))
        .collect();
    let node = super::batching::leading_axes(graph, op, &both, &[true, true], &[2, 2], size)?;
    // The stack the packed parts come from.
    let input = graph.shape(both[0]).clone();
    Some(super::batching::repacked(graph, node, &parts(&input), size))
}

/// The leading (batch) axes of a stack of matrices.
pub(crate) fn leading(shape: &[usize]) -> Shape {
    shape[..shape.len().saturating_sub(2)]
        .iter()
        .copied()
        .collect()
}

/// `lead` followed by `core`.
pub(crate) fn with_core(lead: &[usize], core: &[usize]) -> Shape {
    lead.iter().chain(core).copied().collect()
}

/// A row-major `rows x cols` block as a faer matrix.
pub(crate) fn to_mat(data: &[f64], rows: usize, cols: usize) -> Mat<f64> {
    Mat::from_fn(rows, cols, |i, j| data[i * cols + j])
}

/// A faer matrix written row-major into `out`.
pub(crate) fn write_mat(m: MatRef<'_, f64>, out: &mut [f64]) {
    let cols = m.ncols();
    for i in 0..m.nrows() {
        for j in 0..cols {
            out[i * cols + j] = m[(i, j)];
        }
    }
}

/// Whether every number is finite (a factorization's input check).
pub(crate) fn all_finite(data: &[f64]) -> bool {
    data.iter().all(|x| x.is_finite())
}

//! Matrix products on the CPU with faer's gemm (AVX2/AVX-512 kernels
//! chosen at run time, nano-gemm for tiny matrices): NumPy `matmul` for
//! vectors, matrices and stacks of matrices whose leading (batch) axes
//! broadcast, either operand optionally transposed.
//!
//! Operands are read where they are: a matrix of a stack is a slice of
//! its row-major operand, a broadcast batch axis repeats the same slice,
//! and a transposed operand (a flag, or a view with its last two axes
//! swapped) is the same slice read column by column; only a view in
//! another order is copied first. A stack of many
//! products is spread over rayon's threads, one single-threaded product
//! per task; fewer products than threads use faer's threads inside each
//! large product. A stack times one broadcast matrix is a single product
//! of the stacked rows.
//!
//! Knows ndarray views and faer, nothing of tapes.

use super::storage::Kept;
use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{ArrayD, ArrayViewD, CowArray, IxDyn};
use rayon::prelude::*;

/// Products of at least this many multiply-adds use several threads.
const THREADED: usize = 1 << 18;

/// NumPy `matmul` of `a` and `b`, each transposed (its last two axes
/// swapped) first when its flag is set. Shapes are the tape's, checked by
/// shape inference: the inner sizes agree and the batch axes broadcast.
pub fn matmul(a: &ArrayViewD<'_, f64>, b: &ArrayViewD<'_, f64>, ta: bool, tb: bool) -> ArrayD<f64> {
    let ((a_stored, a_swapped), (b_stored, b_swapped)) = (stored(a), stored(b));
    let left = Layout::new(a_stored.shape(), ta != a_swapped);
    let right = Layout::new(b_stored.shape(), tb != b_swapped);
    let len = left.out_len(&right);
    let out = super::storage::take_or_new::<f64>(len);
    let out = left.product(&right, (numbers(&a_stored), numbers(&b_stored)), out);
    ArrayD::from_shape_vec(IxDyn(&left.out_shape(&right)), out).expect("sizes agree")
}

/// An operand of a product in f32 arithmetic (faer's f32 kernels, twice
/// as many lanes per instruction as f64's, accumulating in f32 as BLAS's
/// sgemm does).
pub(crate) enum Factor<'a> {
    /// f64 storage holding f32 numbers: narrowed (exactly) first.
    Wide(CowArray<'a, f64, IxDyn>),
    /// f32 storage, read where it is.
    F32(ArrayViewD<'a, f32>),
}

impl Factor<'_> {
    /// The row-major f32 numbers the product reads, their shape, and
    /// whether they hold the operand with its last two axes swapped.
    fn numbers(&self) -> (Numbers<'_>, Vec<usize>, bool) {
        match self {
            Factor::Wide(x) => {
                let (stored, swapped) = stored(&x.view());
                let shape = stored.shape().to_vec();
                (
                    Numbers::Narrowed(narrowed(numbers(&stored))),
                    shape,
                    swapped,
                )
            }
            Factor::F32(x) => {
                let (stored, swapped) = stored(x);
                let shape = stored.shape().to_vec();
                (Numbers::Stored(stored), shape, swapped)
            }
        }
    }
}

/// f32 numbers of an operand.
enum Numbers<'a> {
    Stored(CowArray<'a, f32, IxDyn>),
    Narrowed(Vec<f32>),
}

impl Numbers<'_> {
    fn slice(&self) -> &[f32] {
        match self {
            Numbers::Stored(x) => numbers(x),
            Numbers::Narrowed(x) => x,
        }
    }
}

/// The product of `a` and `b` (each transposed first when its flag is
/// set) in f32 arithmetic, as f32 storage.
pub(crate) fn product_f32(a: &Factor<'_>, b: &Factor<'_>, (ta, tb): (bool, bool)) -> ArrayD<f32> {
    let (a_numbers, a_shape, a_swapped) = a.numbers();
    let (b_numbers, b_shape, b_swapped) = b.numbers();
    let left = Layout::new(&a_shape, ta != a_swapped);
    let right = Layout::new(&b_shape, tb != b_swapped);
    let out = super::storage::take_or_new::<f32>(left.out_len(&right));
    let out = left.product(&right, (a_numbers.slice(), b_numbers.slice()), out);
    for used in [a_numbers, b_numbers] {
        if let Numbers::Narrowed(scratch) = used {
            keep(scratch);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&left.out_shape(&right)), out).expect("sizes agree")
}

/// How an operand's row-major numbers are read as a stack of matrices.
struct Layout {
    /// The stored shape, a vector as a one-row (left) or one-column
    /// (right) matrix.
    shape: Vec<usize>,
    transposed: bool,
    /// Whether the operand is a vector.
    vector: bool,
}

impl Layout {
    /// An operand of `shape` whose numbers are read transposed when
    /// `transposed` (ignored for vectors).
    fn new(shape: &[usize], transposed: bool) -> Layout {
        match shape {
            [k] => Layout {
                shape: vec![*k],
                transposed: false,
                vector: true,
            },
            shape => Layout {
                shape: shape.to_vec(),
                transposed,
                vector: false,
            },
        }
    }

    /// The operand as a left (`left`) or right matrix stack.
    fn operand<'a, T>(&self, data: &'a [T], left: bool) -> Operand<'a, T> {
        match (self.vector, left) {
            (true, true) => Operand::new(data, &[1, self.shape[0]], false),
            (true, false) => Operand::new(data, &[self.shape[0], 1], false),
            (false, _) => Operand::new(data, &self.shape, self.transposed),
        }
    }

    /// The number of elements of the product with `right`.
    fn out_len(&self, right: &Layout) -> usize {
        self.out_shape(right).iter().product()
    }

    /// The shape of the product with `right` (NumPy's: a vector operand's
    /// axis dropped).
    fn out_shape(&self, right: &Layout) -> Vec<usize> {
        let (left_op, right_op) = (
            self.operand::<u8>(&[], true),
            right.operand::<u8>(&[], false),
        );
        let mut shape = broadcast_batch(&left_op.batch, &right_op.batch);
        if !self.vector {
            shape.push(left_op.rows());
        }
        if !right.vector {
            shape.push(right_op.cols());
        }
        shape
    }

    /// The products of `data.0` (this layout) and `data.1` (`right`'s)
    /// written into `out` (of `out_len` numbers), which is returned.
    fn product<T>(&self, right: &Layout, data: (&[T], &[T]), mut out: Vec<T>) -> Vec<T>
    where
        T: faer::traits::ComplexField + Copy + Send + Sync + Default,
    {
        let left_op = self.operand(data.0, true);
        let right_op = right.operand(data.1, false);
        let k = left_op.cols();
        debug_assert_eq!(k, right_op.rows(), "shape inference checks the inner sizes");
        let batch = broadcast_batch(&left_op.batch, &right_op.batch);
        if k == 0 {
            out.fill(T::default());
        } else if !out.is_empty() {
            products(&left_op, &right_op, &batch, &mut out, T::one_impl());
        }
        out
    }
}

/// The numbers of `x` in row-major order, and whether they hold `x` with
/// its last two axes swapped (a transposed view, read as it is stored);
/// copied only for other layouts.
/// The product of two row-major matrices written into `out` (its rows x
/// columns, row-major): `a` of shape `a_shape`, used transposed when
/// `ta`, likewise `b`. The same arithmetic as `matmul` on those operands,
/// without an allocation (plans call it every step).
pub(crate) fn matmul_into(
    (a, a_shape, ta): (&[f64], [usize; 2], bool),
    (b, b_shape, tb): (&[f64], [usize; 2], bool),
    out: &mut [f64],
) {
    let left = Operand::new(a, &a_shape, ta);
    let right = Operand::new(b, &b_shape, tb);
    let (m, k, n) = (left.rows(), left.cols(), right.cols());
    debug_assert_eq!(k, right.rows(), "shape inference checks the inner sizes");
    let out = &mut out[..m * n];
    if k == 0 {
        out.fill(0.0);
    } else if !out.is_empty() {
        products(&left, &right, &[], out, 1.0);
    }
}

fn stored<'a, T: Kept + Send + Sync>(x: &ArrayViewD<'a, T>) -> (CowArray<'a, T, IxDyn>, bool) {
    let rank = x.ndim();
    if !x.is_standard_layout() && rank >= 2 {
        let mut swapped = x.clone();
        swapped.swap_axes(rank - 2, rank - 1);
        if swapped.is_standard_layout() {
            return (CowArray::from(swapped), true);
        }
        // A copy either way: the order whose rows lie in place copies
        // run by run (a stack of transposed heads), the other number by
        // number.
        if x.strides()[rank - 1] != 1 && swapped.strides()[rank - 1] == 1 {
            return (CowArray::from(super::broadcast::standard(&swapped)), true);
        }
    }
    (super::broadcast::row_major(x), false)
}

fn numbers<'a, T>(x: &'a CowArray<'_, T, IxDyn>) -> &'a [T] {
    x.as_slice().expect("a standard-layout array is contiguous")
}

/// Numbers converted in parallel blocks of this many.
const CONVERTED: usize = 1 << 14;

/// f32 scratch buffers kept per thread (the products of one tape come in
/// a few sizes): fresh memory would be zeroed and faulted in each time.
const KEPT_SCRATCH: usize = 6;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<Vec<f32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An f32 buffer of `len` numbers (their values are left over from an
/// earlier use: every one is written before it is read).
fn scratch(len: usize) -> Vec<f32> {
    let kept = SCRATCH.with(|kept| {
        let mut kept = kept.borrow_mut();
        let fitting = kept
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= len)
            .min_by_key(|(_, v)| v.capacity())
            .map(|(i, _)| i);
        fitting.map(|i| kept.swap_remove(i))
    });
    let mut buffer = kept.unwrap_or_default();
    buffer.resize(len, 0.0);
    buffer.truncate(len);
    buffer
}

/// Gives a scratch buffer back for later products on this thread.
fn keep(buffer: Vec<f32>) {
    SCRATCH.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() >= KEPT_SCRATCH
            && let Some(smallest) = (0..kept.len()).min_by_key(|&i| kept[i].capacity())
        {
            if kept[smallest].capacity() >= buffer.capacity() {
                return;
            }
            kept.swap_remove(smallest);
        }
        kept.push(buffer);
    });
}

/// f32 numbers held as f64, as f32 (exact).
fn narrowed(x: &[f64]) -> Vec<f32> {
    let mut out = scratch(x.len());
    out.par_chunks_mut(CONVERTED)
        .zip(x.par_chunks(CONVERTED))
        .for_each(|(o, x)| {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = x as f32;
            }
        });
    out
}

/// One operand: row-major numbers, its batch axes, the matrix as stored
/// and whether it is read transposed.
struct Operand<'a, T = f64> {
    data: &'a [T],
    batch: Vec<usize>,
    stored: (usize, usize),
    transposed: bool,
}

impl<'a, T> Operand<'a, T> {
    fn new(data: &'a [T], shape: &[usize], transposed: bool) -> Operand<'a, T> {
        let rank = shape.len();
        Operand {
            data,
            batch: shape[..rank - 2].to_vec(),
            stored: (shape[rank - 2], shape[rank - 1]),
            transposed,
        }
    }

    fn rows(&self) -> usize {
        if self.transposed {
            self.stored.1
        } else {
            self.stored.0
        }
    }

    fn cols(&self) -> usize {
        if self.transposed {
            self.stored.0
        } else {
            self.stored.1
        }
    }

    fn size(&self) -> usize {
        self.stored.0 * self.stored.1
    }

    /// Where each matrix of the broadcast batch `batch` starts in `data`.
    fn offsets(&self, batch: &[usize]) -> Vec<usize> {
        let lead = batch.len() - self.batch.len();
        // Numbers between consecutive matrices along each batch axis; 0
        // along an axis this operand broadcasts.
        let mut strides = vec![0; batch.len()];
        let mut step = self.size();
        for axis in (lead..batch.len()).rev() {
            let len = self.batch[axis - lead];
            if len != 1 {
                strides[axis] = step;
            }
            step *= len;
        }
        let count: usize = batch.iter().product();
        let mut index = vec![0; batch.len()];
        let mut offsets = Vec::with_capacity(count);
        let mut offset = 0;
        for _ in 0..count {
            offsets.push(offset);
            // The next index, last axis fastest.
            for axis in (0..batch.len()).rev() {
                index[axis] += 1;
                offset += strides[axis];
                if index[axis] < batch[axis] {
                    break;
                }
                offset -= strides[axis] * index[axis];
                index[axis] = 0;
            }
        }
        offsets
    }

    /// The matrix whose numbers start at `offset`.
    fn matrix(&self, offset: usize) -> MatRef<'a, T> {
        let (rows, cols) = self.stored;
        let numbers = &self.data[offset..offset + rows * cols];
        let matrix = MatRef::from_row_major_slice(numbers, rows, cols);
        if self.transposed {
            matrix.transpose()
        } else {
            matrix
        }
    }
}

/// The broadcast of two batch shapes (aligned at their last axes).
fn broadcast_batch(a: &[usize], b: &[usize]) -> Vec<usize> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], axis: usize| (axis + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
    (0..rank)
        .map(|axis| {
            let (x, y) = (at(a, axis), at(b, axis));
            if x == 1 { y } else { x }
        })
        .collect()
}

/// Rows per thread from which a product of `rows x inner` times `inner x
/// columns` is split by rows: the right matrix small (its packed copy,
/// one per thread, stays in the cache), and every thread's block long
/// (faer's own threads synchronize inside; split, a
/// `[16384 256] x [256 256]` product takes 0.5 ms less of 21.5 ms).
const TALL_ROWS: usize = 2048;

/// The most numbers of a right matrix that a split product repeats per
/// thread.
const TALL_RIGHT: usize = 512 * 512;

/// Whether a product of `rows x inner` times `inner x columns` on
/// `threads` threads is split by rows.
fn tall(rows: usize, inner: usize, columns: usize, threads: usize) -> bool {
    threads > 1 && rows >= TALL_ROWS * threads && inner * columns <= TALL_RIGHT
}

/// Fills `out` (row-major, `batch` x rows x columns) with the products
/// (`one` is the number 1 of their type).
fn products<T>(
    left: &Operand<'_, T>,
    right: &Operand<'_, T>,
    batch: &[usize],
    out: &mut [T],
    one: T,
) where
    T: faer::traits::ComplexField + Copy + Send + Sync,
{
    let (m, k, n) = (left.rows(), left.cols(), right.cols());
    let count: usize = batch.iter().product();
    let work = m * n * k;
    let threads = rayon::current_num_threads();
    let par = |work: usize| {
        if work >= THREADED && threads > 1 {
            Par::rayon(0)
        } else {
            Par::Seq
        }
    };
    let product = |out: &mut [T], a: MatRef<'_, T>, b: MatRef<'_, T>, par: Par| {
        let rows = a.nrows();
        if matches!(par, Par::Rayon(_)) && tall(rows, k, n, threads) {
            // Many rows times a small matrix: one single-threaded product
            // per block of rows, with no synchronization inside.
            let block = rows.div_ceil(threads);
            out.par_chunks_mut(block * n)
                .enumerate()
                .for_each(|(i, out)| {
                    let r = out.len() / n;
                    let dst = MatMut::from_row_major_slice_mut(out, r, n);
                    faer_matmul(
                        dst,
                        Accum::Replace,
                        a.subrows(i * block, r),
                        b,
                        one,
                        Par::Seq,
                    );
                });
            return;
        }
        let dst = MatMut::from_row_major_slice_mut(out, rows, n);
        faer_matmul(dst, Accum::Replace, a, b, one, par);
    };
    let a_offsets = left.offsets(batch);
    let b_offsets = right.offsets(batch);
    let right_shared = b_offsets.iter().all(|&o| o == 0);
    let left_stacked = a_offsets.iter().enumerate().all(|(i, &o)| o == i * m * k);
    if count > 1 && right_shared && left_stacked && !left.transposed {
        // The stacked rows of the left operand times one matrix.
        let rows = count * m;
        let a = MatRef::from_row_major_slice(&left.data[..rows * k], rows, k);
        product(out, a, right.matrix(0), par(rows * n * k));
        return;
    }
    let one = |(b, out): (usize, &mut [T]), par: Par| {
        product(
            out,
            left.matrix(a_offsets[b]),
            right.matrix(b_offsets[b]),
            par,
        );
    };
    if count < threads || count * work < THREADED {
        // Few products (each threaded when large) or little work in all.
        for item in out.chunks_exact_mut(m * n).enumerate() {
            one(item, par(work));
        }
    } else {
        out.par_chunks_mut(m * n)
            .enumerate()
            .for_each(|item| one(item, Par::Seq));
    }
}

#[cfg(test)]
mod tests;

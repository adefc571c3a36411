//! The operation table: tensor operations declared once, each in one
//! place that says everything about it — its shape rule, its CPU kernel,
//! its CUDA kernel (or that it runs on the host), its reverse rule and its
//! forward rule. A new operation is one entry of [`Op`] and one type
//! implementing [`Definition`], plus tests; nothing else in the tracer,
//! the sweeps or the executors changes.
//!
//! The table holds the operations added for real models: indexing
//! (`indexing`), sequences along an axis (`sequence`) and dense linear
//! algebra (`linalg`), and collectives across the ranks of an MPI job
//! (`collective`). The original vocabulary (elementwise maps,
//! reductions, reshapes, matrix products, loops) stays in `TOp` itself,
//! where fusion and the native and CUDA code generators know each variant.
//!
//! A node of the tensor language holds an [`Op`] as `TOp::Op`. Shape
//! inference, the reverse and forward sweeps, the tape compiler and both
//! executors dispatch to the definition here. Operations with several
//! results (`eigh`, `svd`, `qr`, `slogdet`) pack them into one flat
//! vector; [`unpack`] makes the views a caller sees, and their reverse
//! rules slice the packed cotangent the same way.
//!
//! This folder knows the tensor language and its graph builder (`ir`)
//! and arrays; it knows nothing of Lisp values, tapes or how executors
//! schedule work.

pub mod along;
pub mod batching;
pub mod collective;
pub mod einsum;
pub mod fft;
pub mod indexing;
pub mod linalg;
pub mod reads;
pub mod reduction;
mod rules;
pub mod sequence;
pub mod softmax;
pub mod solver;

pub use rules::{Pulled, Rules};

use crate::ir::shape::ShapeError;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;
use std::fmt;

/// A failure of an operation's kernel on the values it was given: an
/// index out of range, a singular matrix, a factorization that did not
/// converge. The message names the operation's problem (the caller adds
/// the operation's name and where it was called).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError {
    /// What went wrong.
    pub message: String,
}

impl OpError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> OpError {
        OpError {
            message: message.into(),
        }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

/// Where an operation was called, as an opaque number the front end
/// assigned (0: unknown). It travels with the operation so a failure at
/// run time can point at the call; it takes no part in equality, so the
/// same operation called from two places is one node.
#[derive(Clone, Copy, Debug, Default)]
pub struct Site(pub u32);

impl PartialEq for Site {
    fn eq(&self, _: &Site) -> bool {
        true
    }
}

impl Eq for Site {}

impl PartialOrd for Site {
    fn partial_cmp(&self, other: &Site) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Site {
    fn cmp(&self, _: &Site) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl std::hash::Hash for Site {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// A CUDA kernel of an operation: CUDA C that follows the backend's
/// prelude, launched with one thread per element of `threads`. Its
/// parameters are `long long n` (= `threads`), then each operand's
/// device pointer (`const double*`), then the output (`double*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaKernel {
    /// The kernel's name in `source`.
    pub name: &'static str,
    /// The kernel's CUDA C (without the prelude).
    pub source: String,
    /// How many threads run it.
    pub threads: usize,
    /// Whether the output must start at zero (the kernel adds into it).
    pub zeroed: bool,
    /// Whether the output must start as a copy of the first operand (the
    /// kernel then updates it in place and reads the other operands).
    pub copy_first: bool,
}

/// Everything about one operation. Implementations are small value types
/// holding the operation's static parameters (an axis, flags).
pub trait Definition {
    /// The name shown in `show-tape`, graphs and errors, with the static
    /// parameters (`gather[1]`).
    fn describe(&self) -> String;

    /// The result's shape from the operands' shapes, or why they do not
    /// fit (both shapes in the message).
    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError>;

    /// Runs the operation on the CPU. `shape` is the result's shape
    /// (`shape` above). Operands arrive in any memory layout.
    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError>;

    /// `cpu` with the executor's kept storage at hand: `storage(n)` gives
    /// storage for `n` numbers kept from an earlier result, if there is
    /// some (contents arbitrary). A large result allocated afresh is
    /// zeroed by the system page by page, which costs more than a pass
    /// over it. The default does not ask.
    fn cpu_in(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
        storage: &dyn Fn(usize) -> Option<Vec<f64>>,
    ) -> Result<ArrayD<f64>, OpError> {
        let _ = storage;
        self.cpu(operands, shape)
    }

    /// Whether derivatives pass to operand `k` (an index operand takes
    /// none).
    fn differentiable(&self, operand: usize) -> bool {
        let _ = operand;
        true
    }

    /// The reverse rule: the cotangent of each operand from the result's
    /// cotangent `g` (`None`: no dependence), as nodes appended through
    /// `rules`. `node` is the result itself, for rules that reuse it.
    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled;

    /// The forward rule: the result's tangent from the operands' tangents
    /// (`None`: zero). With `rules.batch()` set, every tangent has one more
    /// leading axis than its value.
    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id;

    /// Floating-point operations of one run, for `tape-stats` and the
    /// optimizer's cost model.
    fn flops(&self, operands: &[&[usize]], shape: &[usize]) -> u64;

    /// For sparsity patterns read from a program (the `sparse` module, no
    /// values known): appends to `out` the operand elements `(operand,
    /// flat position)` that element `element` of the result (of `shape`)
    /// may depend on; positions an index operand picks count as any
    /// position along their axis. `false` (the default) when every
    /// element may depend on every element of the operands.
    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = (operands, shape, element, out);
        false
    }

    /// The batching rule (`vmap`): the result over a batch of `size`
    /// examples, where the operands marked in `batched` carry the batch
    /// as one more leading axis and the others are the same for every
    /// example; the result carries the batch axis first. `None`: the
    /// operands do not combine so (`vmap` reports it naming the operation).
    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id>;

    /// How a sum over the result's leading (batch) axis passes through
    /// the operation (`ad::collapse`, the collapsed Laplacian): where the
    /// result is linear in the operands marked in `batched` (each with the
    /// batch axis first; the others the same for every member of the
    /// batch, without it), the operation that gives that sum when each
    /// batched operand is replaced by its own sum over the axis. `None`
    /// (the default): the sum is taken of the result. `ranks` are the
    /// operands' ranks, batch axis included.
    fn sum_through(&self, batched: &[bool], ranks: &[usize]) -> Option<Op> {
        let _ = (batched, ranks);
        None
    }

    /// A CUDA kernel, or `None` to run the CPU kernel on the host (the
    /// operands are copied to the host and the result back).
    fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        let _ = (operands, shape);
        None
    }

    /// The operation as routines of a device's solver library and small
    /// kernels ([`solver::DeviceSolve`]), for the dense linear algebra
    /// that has no single kernel; `None`: the `cuda` kernel, else the
    /// CPU kernel on the host.
    fn device_solve(&self, operands: &[&[usize]], shape: &[usize]) -> Option<solver::DeviceSolve> {
        let _ = (operands, shape);
        None
    }

    /// Where the operation was called, for operations whose kernel can
    /// fail on the values it is given.
    fn site(&self) -> Site {
        Site::default()
    }

    /// The operand holding positions along an axis (`gather`,
    /// `take-along`, ...) and that axis's length, so that a device checks
    /// them as the CPU kernel does.
    fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        let _ = operands;
        None
    }

    /// For an allreduce across ranks: its reduction, so that a device
    /// with a collective library (NCCL) may run it on device memory
    /// instead of the host kernel.
    fn device_allreduce(&self) -> Option<crate::distributed::Reduction> {
        None
    }
}

/// Declares [`Op`] over the definitions and dispatches the trait to them.
macro_rules! table {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        /// An operation of the table with its static parameters.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $($(#[$doc])* $variant($ty),)*
        }

        impl Op {
            fn definition(&self) -> &dyn Definition {
                match self {
                    $(Op::$variant(op) => op,)*
                }
            }
        }
    };
}

table! {
    /// `gather`: slices at integer positions along an axis.
    Gather(indexing::Gather),
    /// `scatter-add`: updates added at integer positions along an axis.
    ScatterAdd(indexing::ScatterAdd),
    /// `index-set`: slices replaced at integer positions along an axis.
    IndexSet(indexing::IndexSet),
    /// Which of repeated positions is the last (for `index-set`'s rule).
    LastOccurrence(indexing::LastOccurrence),
    /// A first-order linear recurrence along an axis (`cumsum`, `cumprod`).
    Recurrence(sequence::Recurrence),
    /// Elements in reverse order along an axis.
    Flip(sequence::Flip),
    /// The discrete Fourier transform along an axis, of complex numbers
    /// held as real pairs.
    Fft(fft::Fft),
    /// `tril` / `triu`.
    Triangle(linalg::Triangle),
    /// The diagonal of each matrix.
    Diagonal(linalg::Diagonal),
    /// Matrices with a given diagonal.
    Diag(linalg::Diag),
    /// The lower Cholesky factor.
    Cholesky(linalg::Cholesky),
    /// The lower Cholesky factor of a complex Hermitian matrix given as its
    /// two parts, packed (the factor's parts).
    CholeskyComplex(linalg::CholeskyComplex),
    /// A triangular solve.
    TriangularSolve(linalg::TriangularSolve),
    /// A general solve (LU).
    Solve(linalg::Solve),
    /// `take-along`: elements at positions along an axis, slice by slice.
    TakeAlong(along::TakeAlong),
    /// `take-along`'s adjoint: updates added at positions along an axis.
    PutAlongAdd(along::PutAlongAdd),
    /// The determinant.
    Det(linalg::Det),
    /// The transposed adjugate (the derivative of the determinant).
    Adjugate(linalg::Adjugate),
    /// The sign and log-absolute determinant, packed.
    Slogdet(linalg::Slogdet),
    /// The complex sign and log-absolute determinant of a complex matrix
    /// given as its two parts, packed.
    SlogdetComplex(linalg::SlogdetComplex),
    /// The symmetric eigendecomposition, packed (eigenvalues, vectors).
    Eigh(linalg::Eigh),
    /// The Hermitian eigendecomposition of a complex matrix given as its
    /// two parts, packed (eigenvalues, vectors' parts, pivots).
    EighHermitian(linalg::EighHermitian),
    /// The thin SVD, packed (u, s, vt).
    Svd(linalg::Svd),
    /// The thin SVD of a complex matrix given as its two parts, packed
    /// (u's parts, s, vh's parts, pivots).
    SvdComplex(linalg::SvdComplex),
    /// The thin QR factorization, packed (q, r).
    Qr(linalg::Qr),
    /// The thin QR factorization of a complex matrix given as its two
    /// parts, packed (q's parts, r's parts).
    QrComplex(linalg::QrComplex),
    /// The identity on triangular factors, checking they have full rank.
    FullRank(linalg::FullRank),
    /// The matrix exponential.
    MatrixExp(linalg::MatrixExp),
    /// `logsumexp` over any axes in two passes.
    LogSumExp(reduction::LogSumExp),
    /// `logsumexp` and its softmax, packed (softmax, logsumexp): what the
    /// rules of `logsumexp` read, so each exponential is taken once.
    LogSumExpSoftmax(softmax::LogSumExpSoftmax),
    /// `allreduce`: a tensor combined over the ranks of an MPI job.
    Allreduce(collective::Allreduce),
    /// `allgather`: the ranks' tensors stacked along a new axis.
    Allgather(collective::Allgather),
    /// The adjoint of `allgather`: each rank's block summed over the ranks.
    ReduceScatter(collective::ReduceScatter),
    /// `halo-exchange`: a block extended by its neighbours' boundary cells.
    HaloExchange(collective::HaloExchange),
    /// The adjoint of `halo-exchange`: halos returned and added.
    HaloReturn(collective::HaloReturn),
}

impl Op {
    /// The operation's name, without its parameters (`gather`).
    pub fn name(&self) -> String {
        let described = self.definition().describe();
        match described.split_once('[') {
            Some((name, _)) => name.to_string(),
            None => described,
        }
    }

    /// The result's shape from the operands' shapes.
    pub fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        self.definition().shape(operands)
    }

    /// Runs the operation on the CPU, checking the result's size first
    /// (an allocation that cannot succeed is an error, not an abort).
    pub fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        self.cpu_in(operands, shape, &|_| None)
    }

    /// `cpu` with kept storage at hand (`Definition::cpu_in`).
    pub fn cpu_in(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
        storage: &dyn Fn(usize) -> Option<Vec<f64>>,
    ) -> Result<ArrayD<f64>, OpError> {
        let elements = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        match elements {
            Some(n) if n <= MAX_ELEMENTS => self.definition().cpu_in(operands, shape, storage),
            _ => Err(OpError::new(format!(
                "a result of shape {} is too large to allocate",
                crate::ir::shape::show(shape)
            ))),
        }
    }

    /// Whether derivatives pass to operand `k`.
    pub fn differentiable(&self, operand: usize) -> bool {
        self.definition().differentiable(operand)
    }

    /// The reverse rule (see [`Definition::vjp`]).
    pub fn vjp(&self, graph: &mut TensorGraph, node: Id, g: Id) -> Pulled {
        let operands: SmallVec<[Id; 4]> = graph.node(node).children.clone().into_iter().collect();
        let mut rules = Rules::new(graph, None);
        let mut pulled = self.definition().vjp(&mut rules, node, &operands, g);
        for (k, contribution) in pulled.iter_mut().enumerate() {
            if !self.differentiable(k) {
                *contribution = None;
            }
        }
        pulled
    }

    /// The forward rule (see [`Definition::jvp`]).
    pub fn jvp(
        &self,
        graph: &mut TensorGraph,
        batch: Option<usize>,
        node: Id,
        tangents: &[Option<Id>],
    ) -> Id {
        let operands: SmallVec<[Id; 4]> = graph.node(node).children.clone().into_iter().collect();
        let tangents: SmallVec<[Option<Id>; 4]> = tangents
            .iter()
            .enumerate()
            .map(|(k, t)| t.filter(|_| self.differentiable(k)))
            .collect();
        let mut rules = Rules::new(graph, batch);
        self.definition()
            .jvp(&mut rules, node, &operands, &tangents)
    }

    /// The batching rule (see [`Definition::batch`]).
    pub fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        self.definition().batch(graph, operands, batched, size)
    }

    /// The operation a sum over the batch axis passes through as (see
    /// [`Definition::sum_through`]).
    pub fn sum_through(&self, batched: &[bool], ranks: &[usize]) -> Option<Op> {
        self.definition().sum_through(batched, ranks)
    }

    /// The operand elements a result element may depend on (see
    /// [`Definition::reads`]); `false` for all of them.
    pub fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        self.definition().reads(operands, shape, element, out)
    }

    /// Floating-point operations of one run.
    pub fn flops(&self, operands: &[&[usize]], shape: &[usize]) -> u64 {
        self.definition().flops(operands, shape)
    }

    /// The CUDA kernel, if the operation has one.
    pub fn cuda(&self, operands: &[&[usize]], shape: &[usize]) -> Option<CudaKernel> {
        self.definition().cuda(operands, shape)
    }

    /// Where the operation was called (see [`Site`]).
    pub fn site(&self) -> Site {
        self.definition().site()
    }

    /// The reduction of an allreduce a device may run itself (see
    /// [`Definition::device_allreduce`]).
    pub fn device_allreduce(&self) -> Option<crate::distributed::Reduction> {
        self.definition().device_allreduce()
    }

    /// The operand holding positions and the length of their axis (see
    /// [`Definition::positions`]).
    pub fn positions(&self, operands: &[&[usize]]) -> Option<(usize, usize)> {
        self.definition().positions(operands)
    }

    /// The operation as device solver routines (see
    /// [`Definition::device_solve`]).
    pub fn device_solve(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
    ) -> Option<solver::DeviceSolve> {
        self.definition().device_solve(operands, shape)
    }

    /// A tensor-language operation of this entry.
    pub fn node(self) -> TOp {
        TOp::Op(self)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.definition().describe())
    }
}

/// The most elements one result may have (2^40: 8 TiB of numbers), so a
/// size that overflows or can never be allocated is an error.
pub const MAX_ELEMENTS: usize = 1 << 40;

/// The views of a packed result: `node` holds `parts` (shapes, in order)
/// flattened one after the other.
pub fn unpack(graph: &mut TensorGraph, node: Id, parts: &[Shape]) -> Vec<Id> {
    let mut offset = 0;
    parts
        .iter()
        .map(|shape| {
            let len: usize = shape.iter().product();
            let piece = graph.add_valid(
                TOp::Slice {
                    axis: 0,
                    start: offset,
                    end: offset + len,
                },
                &[node],
            );
            offset += len;
            graph.reshape(piece, shape)
        })
        .collect()
}

/// The length of a packed result holding `parts`.
pub fn packed_len(parts: &[Shape]) -> usize {
    parts.iter().map(|s| s.iter().product::<usize>()).sum()
}

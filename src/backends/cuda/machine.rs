//! What the executor needs from a device: memory, transfers, kernel
//! launches and matrix products. The CUDA device (`device`) implements it
//! with cudarc; tests implement it with a simulated device on the host, so
//! the executor's bookkeeping is checked on machines without a GPU.

use super::launch::{GemmCall, Launch};
use crate::backends::BackendError;
use crate::ir::Shape;
use crate::ir::ops::solver::Routine;
use std::rc::Rc;

/// A kernel parameter.
pub enum Arg<'a, M> {
    /// A `long long`.
    Int(i64),
    /// A `double`.
    Double(f64),
    /// A pointer to device memory.
    Mem(&'a M),
}

/// A device: memory of `f64`s and what runs on it. Work is queued in
/// order; `download` waits for it.
pub trait Machine {
    /// Device memory of some number of `f64`s.
    type Mem;

    /// Work captured once and replayed with one launch (a CUDA graph).
    type Graph;

    /// Memory for `len` numbers (contents arbitrary), from the cache of
    /// released memory where it has some of that length.
    fn alloc(&self, len: usize) -> Result<Self::Mem, BackendError>;

    /// Memory for `len` zeros.
    fn zeros(&self, len: usize) -> Result<Self::Mem, BackendError>;

    /// Numbers copied to the device.
    fn upload(&self, data: &[f64]) -> Result<Self::Mem, BackendError>;

    /// The first `len` numbers of `mem`, copied to the host.
    fn download(&self, mem: &Self::Mem, len: usize) -> Result<Vec<f64>, BackendError>;

    /// Runs `launch` with `args` then `out` as its parameters.
    fn launch(
        &self,
        launch: &Launch,
        args: &[Arg<'_, Self::Mem>],
        out: &mut Self::Mem,
    ) -> Result<(), BackendError>;

    /// `c = a b` as `call` describes it (`operands` are `(a, b)`, `a`
    /// cuBLAS's first operand):
    /// dgemm, or when `single` sgemm on f32 numbers packed two per slot
    /// (`launch::convert` puts them there and back).
    fn gemm(
        &self,
        call: &GemmCall,
        operands: (&Self::Mem, &Self::Mem),
        c: &mut Self::Mem,
        single: bool,
    ) -> Result<(), BackendError>;

    /// Runs a routine of the solver library on `reads` and, in place,
    /// `writes` (see [`Routine`] for what each holds). Not captured into
    /// graphs: a program holding one is replayed command by command.
    fn routine(
        &self,
        routine: &Routine,
        reads: &[&Self::Mem],
        writes: &mut [&mut Self::Mem],
    ) -> Result<(), BackendError> {
        let _ = (reads, writes);
        Err(BackendError::new(format!(
            "this device has no solver library for {routine:?}"
        )))
    }

    /// Copies `len` numbers of `src` from `from` into `dst` at `to`.
    fn copy(
        &self,
        src: &Self::Mem,
        from: usize,
        dst: &mut Self::Mem,
        to: usize,
        len: usize,
    ) -> Result<(), BackendError>;

    /// The device programs planned on this machine, kept so that a tape's
    /// later runs replay its program; `None`: a program is planned for
    /// every run.
    fn programs(&self) -> Option<&super::program::Programs<Self>>
    where
        Self: Sized,
    {
        None
    }

    /// Sets `mem` to zeros (queued like a kernel, so it can be captured).
    fn clear(&self, mem: &mut Self::Mem) -> Result<(), BackendError>;

    /// From now on, work queued (launches, products, copies, clears) is
    /// recorded into a graph rather than run, until [`end_capture`]; no
    /// memory may be taken or copied to or from the host meanwhile.
    /// `false` where the machine cannot capture (nothing changes then).
    ///
    /// [`end_capture`]: Machine::end_capture
    fn begin_capture(&self) -> Result<bool, BackendError> {
        Ok(false)
    }

    /// The graph of the work queued since [`begin_capture`], which it
    /// did not run; `None` where nothing could be captured.
    ///
    /// [`begin_capture`]: Machine::begin_capture
    fn end_capture(&self) -> Result<Option<Self::Graph>, BackendError> {
        Ok(None)
    }

    /// Runs a captured graph: its work on the memory it was captured with.
    fn launch_graph(&self, graph: &Self::Graph) -> Result<(), BackendError>;

    /// Takes back memory no value uses any more (kept for reuse).
    fn release(&self, mem: Self::Mem) {
        drop(mem);
    }

    /// The allreduce across the ranks of an MPI job of `src` (a tensor of
    /// `shape`) into new device memory, by a collective library on the
    /// device (NCCL); `None` where the machine has none, or not every
    /// rank can use it (the host kernel runs instead).
    fn allreduce(
        &self,
        src: &Self::Mem,
        shape: &[usize],
        reduction: crate::distributed::Reduction,
    ) -> Result<Option<Self::Mem>, BackendError> {
        let _ = (src, shape, reduction);
        Ok(None)
    }
}

/// A value while a tape runs on a device: a number on the host (constants,
/// scalar inputs, loop indices, and what is computed from numbers alone),
/// or an array in device memory, shared between values that alias it
/// (`reshape`, `stop-gradient`), in f64 or (inside a tape only) f32
/// storage.
pub enum Datum<M> {
    /// A 0-dimensional value on the host.
    Host(f64),
    /// Device memory holding `shape`'s elements, row-major.
    Device {
        /// The memory.
        mem: Rc<M>,
        /// The shape.
        shape: Shape,
    },
    /// Device memory holding `shape`'s elements as f32 numbers, row-major,
    /// two per slot (`single`). Only the executor's own values are kept
    /// so (`Instruction::single`); tape inputs and results, and what a
    /// loop sees, are f64.
    F32 {
        /// The memory: `single::slots(len)` slots.
        mem: Rc<M>,
        /// The shape.
        shape: Shape,
    },
}

impl<M> Clone for Datum<M> {
    fn clone(&self) -> Self {
        match self {
            Datum::Host(x) => Datum::Host(*x),
            Datum::Device { mem, shape } => Datum::Device {
                mem: Rc::clone(mem),
                shape: shape.clone(),
            },
            Datum::F32 { mem, shape } => Datum::F32 {
                mem: Rc::clone(mem),
                shape: shape.clone(),
            },
        }
    }
}

impl<M> Datum<M> {
    /// The value's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Datum::Host(_) => &[],
            Datum::Device { shape, .. } | Datum::F32 { shape, .. } => shape,
        }
    }

    /// Whether it is held in f32 storage.
    pub fn is_f32(&self) -> bool {
        matches!(self, Datum::F32 { .. })
    }

    /// Its number of elements.
    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Memory of `len` numbers of `shape`.
    pub fn device(mem: M, shape: &[usize]) -> Datum<M> {
        Datum::Device {
            mem: Rc::new(mem),
            shape: Shape::from(shape),
        }
    }

    /// Memory of `single::slots(len)` slots holding `shape`'s elements in
    /// f32 storage.
    pub fn single(mem: M, shape: &[usize]) -> Datum<M> {
        Datum::F32 {
            mem: Rc::new(mem),
            shape: Shape::from(shape),
        }
    }
}

/// Gives a dead value's memory back to the machine when no other value
/// shares it.
pub fn release<M: Machine>(machine: &M, value: Datum<M::Mem>) {
    if let Datum::Device { mem, .. } | Datum::F32 { mem, .. } = value
        && let Ok(mem) = Rc::try_unwrap(mem)
    {
        machine.release(mem);
    }
}

/// A value's elements on the host, row-major.
pub fn to_host<M: Machine>(machine: &M, value: &Datum<M::Mem>) -> Result<Vec<f64>, BackendError> {
    match value {
        Datum::Host(x) => Ok(vec![*x]),
        Datum::Device { mem, shape } => machine.download(mem, shape.iter().product()),
        Datum::F32 { mem, shape } => {
            let len = shape.iter().product();
            let slots = machine.download(mem, super::f32_storage::slots(len))?;
            let mut numbers: Vec<f64> = super::f32_storage::unpacked(&slots)
                .into_iter()
                .map(f64::from)
                .collect();
            numbers.truncate(len);
            Ok(numbers)
        }
    }
}

/// Host elements of `shape` as a value (a number stays on the host).
pub fn from_host<M: Machine>(
    machine: &M,
    data: &[f64],
    shape: &[usize],
) -> Result<Datum<M::Mem>, BackendError> {
    if shape.is_empty() {
        return Ok(Datum::Host(data.first().copied().unwrap_or(f64::NAN)));
    }
    Ok(Datum::device(machine.upload(data)?, shape))
}

//! A simulated device for tests on machines without a GPU: memory is host
//! vectors, every kernel launch runs the generated CUDA C on host threads
//! (`host_sim`), and matrix products follow cuBLAS's column-major
//! definition. The executor, the loop driver and the kernels run exactly
//! as they would on a GPU, apart from timing and the memory model.
//!
//! Where the NVRTC library can be loaded, every distinct kernel is also
//! compiled to PTX, as the GPU backend would compile it.
//!
//! Fresh memory is filled with NaN, so a kernel that leaves part of its
//! output unwritten shows; a kernel that writes an operand fails.

use super::execute;
use super::f32_storage::{packed, unpacked};
use super::host_sim::{SimArg, Simulator};
use super::launch::{GemmCall, Launch};
use super::machine::{Arg, Machine};
use super::probe::{compile, nvrtc_available, oldest_arch};
use super::runner::run_on;
use crate::backends::cpu::Buf;
use crate::backends::{Backend, BackendError, device_stats};
use crate::tape::Tape;
use std::cell::{Cell, RefCell};

/// The simulated device, with counts of what crossed to and from it.
pub struct SimMachine {
    simulator: RefCell<Simulator>,
    /// Arrays copied to the device.
    pub uploads: Cell<usize>,
    /// Arrays copied back.
    pub downloads: Cell<usize>,
    /// Kernels launched.
    pub launches: Cell<usize>,
    /// Matrix products.
    pub gemms: Cell<usize>,
    /// Solver routines.
    pub routines: Cell<usize>,
    /// Kernels already compiled by NVRTC (by source hash).
    compiled: RefCell<std::collections::HashSet<u64>>,
    /// Graphs launched.
    pub graph_launches: Cell<usize>,
    /// The device programs planned on it.
    programs: super::program::Programs<SimMachine>,
    /// The work recorded while a capture is under way.
    capturing: RefCell<Option<Vec<SimOp>>>,
}

/// Memory as a graph records it: where its numbers are and how many (the
/// buffer of a `Vec`, which stays put while the `Vec` is moved).
#[derive(Clone, Copy, Debug)]
struct Raw {
    ptr: *mut f64,
    len: usize,
}

impl Raw {
    fn of(mem: &[f64]) -> Raw {
        Raw {
            ptr: mem.as_ptr().cast_mut(),
            len: mem.len(),
        }
    }

    /// # Safety
    ///
    /// The memory must be alive and of the recorded length.
    unsafe fn read(&self) -> Vec<f64> {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }

    /// # Safety
    ///
    /// As `read`, and not borrowed elsewhere.
    unsafe fn write(&self, data: &[f64]) {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
            .copy_from_slice(&data[..self.len]);
    }
}

/// A kernel parameter as a graph records it.
#[derive(Debug)]
enum RawArg {
    Int(i64),
    Double(f64),
    Mem(Raw),
}

impl RawArg {
    fn of(arg: &Arg<'_, Vec<f64>>) -> RawArg {
        match arg {
            Arg::Int(x) => RawArg::Int(*x),
            Arg::Double(x) => RawArg::Double(*x),
            Arg::Mem(mem) => RawArg::Mem(Raw::of(mem)),
        }
    }
}

/// One piece of recorded work.
#[derive(Debug)]
enum SimOp {
    Launch {
        launch: Launch,
        args: Vec<RawArg>,
        out: Raw,
    },
    Gemm {
        call: GemmCall,
        operands: (Raw, Raw),
        out: Raw,
        single: bool,
    },
    Copy {
        src: Raw,
        from: usize,
        dst: Raw,
        to: usize,
        len: usize,
    },
    Clear(Raw),
}

/// The simulated device's graph: the work recorded, run again in order.
#[derive(Debug)]
pub struct SimGraph {
    ops: Vec<SimOp>,
}

impl SimMachine {
    /// A simulated device, or `None` without a host C++ compiler.
    pub fn new() -> Option<SimMachine> {
        Some(SimMachine {
            simulator: RefCell::new(Simulator::new()?),
            uploads: Cell::new(0),
            downloads: Cell::new(0),
            launches: Cell::new(0),
            gemms: Cell::new(0),
            routines: Cell::new(0),
            compiled: RefCell::default(),
            graph_launches: Cell::new(0),
            programs: super::program::Programs::default(),
            capturing: RefCell::new(None),
        })
    }

    /// How many distinct kernels NVRTC compiled (0 without the library).
    pub fn nvrtc_compiled(&self) -> usize {
        self.compiled.borrow().len()
    }

    /// Runs a tape with device values (for tests of the executor itself).
    #[allow(dead_code)]
    pub fn execute(
        &self,
        tape: &Tape,
        inputs: &[super::machine::Datum<Vec<f64>>],
    ) -> Result<Vec<super::machine::Datum<Vec<f64>>>, BackendError> {
        execute::run(self, tape, inputs)
    }
}

impl Backend for SimMachine {
    fn name(&self) -> &'static str {
        "simulated cuda"
    }

    fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        run_on(self, tape, inputs)
    }
}

/// `c = op(a) op(b)` by cuBLAS's column-major definition, checking the
/// leading dimensions as cuBLAS does.
pub fn column_major_gemm<T>(call: &GemmCall, a: &[T], b: &[T]) -> Result<Vec<T>, String>
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let (m, n, k) = (call.m, call.n, call.k);
    let rows_a = if call.transa { k } else { m };
    let rows_b = if call.transb { n } else { k };
    if call.lda < rows_a.max(1) || call.ldb < rows_b.max(1) || call.ldc < m.max(1) {
        return Err(format!("invalid leading dimensions in {call:?}"));
    }
    let mut c = vec![T::default(); call.stride_c.max(m * n) * call.batch.max(1)];
    for batch in 0..call.batch {
        let (oa, ob, oc) = (
            batch * call.stride_a,
            batch * call.stride_b,
            batch * call.stride_c,
        );
        for i in 0..m {
            for j in 0..n {
                let mut total = T::default();
                for l in 0..k {
                    let x = if call.transa {
                        a[oa + l + i * call.lda]
                    } else {
                        a[oa + i + l * call.lda]
                    };
                    let y = if call.transb {
                        b[ob + j + l * call.ldb]
                    } else {
                        b[ob + l + j * call.ldb]
                    };
                    total = total + x * y;
                }
                c[oc + i + j * call.ldc] = total;
            }
        }
    }
    Ok(c)
}

impl Machine for SimMachine {
    type Mem = Vec<f64>;
    type Graph = SimGraph;

    fn alloc(&self, len: usize) -> Result<Vec<f64>, BackendError> {
        self.outside_capture("memory taken")?;
        Ok(vec![f64::NAN; len])
    }

    fn zeros(&self, len: usize) -> Result<Vec<f64>, BackendError> {
        self.outside_capture("memory taken")?;
        Ok(vec![0.0; len])
    }

    fn programs(&self) -> Option<&super::program::Programs<SimMachine>> {
        Some(&self.programs)
    }

    fn upload(&self, data: &[f64]) -> Result<Vec<f64>, BackendError> {
        self.outside_capture("a copy to the device")?;
        self.uploads.set(self.uploads.get() + 1);
        device_stats::uploaded(data.len() * 8);
        Ok(data.to_vec())
    }

    fn download(&self, mem: &Vec<f64>, len: usize) -> Result<Vec<f64>, BackendError> {
        self.outside_capture("a copy to the host")?;
        self.downloads.set(self.downloads.get() + 1);
        device_stats::downloaded(len * 8);
        mem.get(..len)
            .map(<[f64]>::to_vec)
            .ok_or_else(|| BackendError::new(format!("download of {len} from {}", mem.len())))
    }

    fn launch(
        &self,
        launch: &Launch,
        args: &[Arg<'_, Vec<f64>>],
        out: &mut Vec<f64>,
    ) -> Result<(), BackendError> {
        if let Some(ops) = self.capturing.borrow_mut().as_mut() {
            ops.push(SimOp::Launch {
                launch: launch.clone(),
                args: args.iter().map(RawArg::of).collect(),
                out: Raw::of(out),
            });
            return Ok(());
        }
        self.launches.set(self.launches.get() + 1);
        device_stats::launched();
        self.run_launch(launch, args, out)
    }

    fn gemm(
        &self,
        call: &GemmCall,
        (a, b): (&Vec<f64>, &Vec<f64>),
        c: &mut Vec<f64>,
        single: bool,
    ) -> Result<(), BackendError> {
        if let Some(ops) = self.capturing.borrow_mut().as_mut() {
            ops.push(SimOp::Gemm {
                call: call.clone(),
                operands: (Raw::of(a), Raw::of(b)),
                out: Raw::of(c),
                single,
            });
            return Ok(());
        }
        self.gemms.set(self.gemms.get() + 1);
        device_stats::library_call();
        run_gemm(call, (a, b), c, single)
    }

    fn routine(
        &self,
        routine: &crate::ir::ops::solver::Routine,
        reads: &[&Vec<f64>],
        writes: &mut [&mut Vec<f64>],
    ) -> Result<(), BackendError> {
        self.outside_capture("a solver routine")?;
        self.routines.set(self.routines.get() + 1);
        device_stats::library_call();
        let reads: Vec<&[f64]> = reads.iter().map(|r| r.as_slice()).collect();
        super::sim_solver::run(routine, &reads, writes)
            .map_err(|e| BackendError::new(format!("simulated {routine:?}: {e}")))
    }

    fn copy(
        &self,
        src: &Vec<f64>,
        from: usize,
        dst: &mut Vec<f64>,
        to: usize,
        len: usize,
    ) -> Result<(), BackendError> {
        if let Some(ops) = self.capturing.borrow_mut().as_mut() {
            ops.push(SimOp::Copy {
                src: Raw::of(src),
                from,
                dst: Raw::of(dst),
                to,
                len,
            });
            return Ok(());
        }
        dst[to..to + len].copy_from_slice(&src[from..from + len]);
        Ok(())
    }

    fn clear(&self, mem: &mut Vec<f64>) -> Result<(), BackendError> {
        if let Some(ops) = self.capturing.borrow_mut().as_mut() {
            ops.push(SimOp::Clear(Raw::of(mem)));
            return Ok(());
        }
        mem.fill(0.0);
        Ok(())
    }

    fn begin_capture(&self) -> Result<bool, BackendError> {
        let mut capturing = self.capturing.borrow_mut();
        if capturing.is_some() {
            return Err(BackendError::new("a capture inside a capture".to_string()));
        }
        *capturing = Some(Vec::new());
        Ok(true)
    }

    fn end_capture(&self) -> Result<Option<SimGraph>, BackendError> {
        Ok(self
            .capturing
            .borrow_mut()
            .take()
            .map(|ops| SimGraph { ops }))
    }

    fn launch_graph(&self, graph: &SimGraph) -> Result<(), BackendError> {
        self.graph_launches.set(self.graph_launches.get() + 1);
        device_stats::graph_launched();
        // SAFETY: a graph runs on the memory it was captured with, which
        // its program keeps (and never resizes) as long as the graph.
        unsafe { self.run_graph(graph) }
    }
}

impl SimMachine {
    /// Fails when called inside a captured region (memory taken, copied
    /// to or from the host: a real capture would fail or synchronise).
    fn outside_capture(&self, what: &str) -> Result<(), BackendError> {
        match self.capturing.borrow().is_some() {
            true => Err(BackendError::new(format!(
                "{what} inside a captured region"
            ))),
            false => Ok(()),
        }
    }

    /// Runs a graph's work in order on the memory it names.
    ///
    /// # Safety
    ///
    /// The memory each recorded pointer names must be alive, of the
    /// recorded length, and not otherwise borrowed.
    unsafe fn run_graph(&self, graph: &SimGraph) -> Result<(), BackendError> {
        for op in &graph.ops {
            // SAFETY: as the caller promises, for every `Raw` below.
            unsafe {
                match op {
                    SimOp::Launch { launch, args, out } => {
                        let held: Vec<Option<Vec<f64>>> = args
                            .iter()
                            .map(|a| match a {
                                RawArg::Mem(raw) => Some(raw.read()),
                                _ => None,
                            })
                            .collect();
                        let args: Vec<Arg<'_, Vec<f64>>> = args
                            .iter()
                            .zip(&held)
                            .map(|(a, h)| match (a, h) {
                                (RawArg::Int(x), _) => Arg::Int(*x),
                                (RawArg::Double(x), _) => Arg::Double(*x),
                                (RawArg::Mem(_), Some(mem)) => Arg::Mem(mem),
                                (RawArg::Mem(_), None) => unreachable!("read above"),
                            })
                            .collect();
                        let mut written = out.read();
                        self.run_launch(launch, &args, &mut written)?;
                        out.write(&written);
                    }
                    SimOp::Gemm {
                        call,
                        operands: (a, b),
                        out,
                        single,
                    } => {
                        let mut written = out.read();
                        run_gemm(call, (&a.read(), &b.read()), &mut written, *single)?;
                        out.write(&written);
                    }
                    SimOp::Copy {
                        src,
                        from,
                        dst,
                        to,
                        len,
                    } => {
                        let mut written = dst.read();
                        written[*to..to + len].copy_from_slice(&src.read()[*from..from + len]);
                        dst.write(&written);
                    }
                    SimOp::Clear(mem) => mem.write(&vec![0.0; mem.len]),
                }
            }
        }
        Ok(())
    }

    /// Runs one launch on the simulator.
    fn run_launch(
        &self,
        launch: &Launch,
        args: &[Arg<'_, Vec<f64>>],
        out: &mut Vec<f64>,
    ) -> Result<(), BackendError> {
        // What a GPU would compile: each distinct kernel through NVRTC,
        // where the library is present.
        if nvrtc_available() && self.compiled.borrow_mut().insert(launch.key) {
            oldest_arch()
                .and_then(|arch| compile(&launch.source, arch))
                .map_err(|e| {
                    BackendError::new(format!(
                        "{} does not compile: {e}\n{}",
                        launch.name, launch.source
                    ))
                })?;
        }
        let mut buffers: Vec<Vec<f64>> = Vec::new();
        let mut params = Vec::with_capacity(args.len() + 1);
        for arg in args {
            params.push(match arg {
                Arg::Int(x) => SimArg::Int(*x),
                Arg::Double(x) => SimArg::Double(*x),
                Arg::Mem(mem) => {
                    buffers.push((*mem).clone());
                    SimArg::Buffer(buffers.len() - 1)
                }
            });
        }
        let operands = buffers.clone();
        buffers.push(std::mem::take(out));
        params.push(SimArg::Buffer(buffers.len() - 1));
        self.simulator
            .borrow_mut()
            .launch(
                &launch.source,
                launch.name,
                launch.grid,
                launch.block,
                &params,
                &mut buffers,
            )
            .map_err(|e| BackendError::new(format!("simulated launch of {}: {e}", launch.name)))?;
        *out = buffers.pop().expect("the output was pushed last");
        for (k, (before, after)) in operands.iter().zip(&buffers).enumerate() {
            let same = before
                .iter()
                .zip(after)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            if !same {
                return Err(BackendError::new(format!(
                    "kernel {} wrote its operand {k}",
                    launch.name
                )));
            }
        }
        Ok(())
    }
}

/// `c = a b` as cuBLAS computes it (sgemm on f32 storage when `single`).
fn run_gemm(
    call: &GemmCall,
    (a, b): (&[f64], &[f64]),
    c: &mut [f64],
    single: bool,
) -> Result<(), BackendError> {
    if !single {
        let product = column_major_gemm(call, a, b).map_err(BackendError::new)?;
        let len = c.len().min(product.len());
        c[..len].copy_from_slice(&product[..len]);
        return Ok(());
    }
    let product = column_major_gemm(call, &unpacked(a), &unpacked(b)).map_err(BackendError::new)?;
    let mut values = unpacked(c);
    let len = values.len().min(product.len());
    values[..len].copy_from_slice(&product[..len]);
    let slots = packed(&values);
    let len = c.len().min(slots.len());
    c[..len].copy_from_slice(&slots[..len]);
    Ok(())
}

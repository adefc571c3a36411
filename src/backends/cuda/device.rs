//! The CUDA device through cudarc: one context and stream on this
//! process's device (device 0; under an MPI launcher, the rank's local
//! rank modulo the devices; `EPSILON_CUDA_DEVICE` chooses one),
//! kernels compiled by NVRTC at first use and kept by source hash, memory
//! kept for reuse by length (a caching allocator), and cuBLAS for matrix
//! products. All work goes on one stream, so it runs in order and memory
//! released to the cache is only reused by later work.
//!
//! Nothing here runs before [`CudaDevice::open`] has checked that the
//! driver, NVRTC and cuBLAS libraries can be loaded (cudarc panics when a
//! function of a missing library is called). With the feature `nccl`, an
//! allreduce of device memory goes through NCCL where every rank has the
//! library and a device of its own (`nccl.rs`); NCCL's presence is
//! checked the same way.

mod batched;
mod fourier;
mod solver;

use super::launch::{GemmCall, Launch};
use super::machine::{Arg, Machine};
use super::probe::{
    CudaUnavailable, Device, compile, compile_binary, needs_binaries, nvrtc_arch, nvrtc_available,
    probe,
};
use crate::backends::{BackendError, device_stats};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// The most memory the cache of released buffers keeps.
const CACHE_BYTES: usize = 1 << 30;

/// An open CUDA device.
pub struct CudaDevice {
    /// What `probe` found.
    pub info: Device,
    stream: Arc<CudaStream>,
    /// Never dropped: cudarc's `CudaBlas::drop` unwraps `cublasDestroy`,
    /// which would panic in a thread-local destructor after a device
    /// error. The handle lives as long as the thread.
    blas: ManuallyDrop<CudaBlas>,
    target: Target,
    /// Compiled kernels by source hash (with their source), and kernels
    /// that failed to compile (with the message), so a failure is not
    /// paid again on every run.
    kernels: RefCell<Kernels>,
    cache: RefCell<Cache>,
    /// Bytes taken from the driver and not given back.
    held: std::cell::Cell<usize>,
    /// The device programs planned on this device.
    programs: super::program::Programs<CudaDevice>,
    /// cuSOLVER's handle (never dropped, as `blas`), made at the first
    /// solver routine.
    solver: std::cell::OnceCell<solver::SolverHandle>,
    /// cuFFT's plans by layout, made at their first transform.
    plans: RefCell<fourier::Plans>,
    /// The NCCL communicator, made at the first allreduce that uses it.
    #[cfg(feature = "nccl")]
    nccl: super::nccl::Communicator,
}

/// Kernels by source hash: the source, and the loaded kernel or why it
/// could not be compiled or loaded.
type Kernels = FxHashMap<u64, (String, Result<CudaFunction, String>)>;

/// What NVRTC compiles kernels to.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// PTX for `compute_XY`, finished by the driver.
    Ptx(&'static str),
    /// A cubin for `sm_XY` (NVRTC newer than the driver).
    Binary(i32),
}

/// Released device memory by length.
#[derive(Default)]
struct Cache {
    free: FxHashMap<usize, Vec<CudaSlice<f64>>>,
    bytes: usize,
}

/// Which of `count` devices this process takes: `EPSILON_CUDA_DEVICE`
/// when set, else under an MPI launcher its local rank modulo `count`
/// (so ranks on one machine take different devices), else 0.
fn ordinal(count: usize) -> usize {
    let chosen = std::env::var("EPSILON_CUDA_DEVICE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .or_else(crate::distributed::local_rank)
        .unwrap_or(0);
    chosen % count.max(1)
}

fn driver_error(error: impl std::fmt::Display) -> BackendError {
    BackendError::new(format!("CUDA: {error}"))
}

impl CudaDevice {
    /// Opens this process's device, or says what is missing.
    pub fn open() -> Result<CudaDevice, CudaUnavailable> {
        let info = probe()?;
        if !nvrtc_available() {
            return Err(CudaUnavailable::NoNvrtc);
        }
        // SAFETY: `is_culib_present` only tries to open the shared library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(CudaUnavailable::NoCublas);
        }
        let binaries = needs_binaries()?;
        let failed = |e: &dyn std::fmt::Display| CudaUnavailable::DriverFailed(e.to_string());
        let context = CudaContext::new(ordinal(info.count)).map_err(|e| failed(&e))?;
        let (major, minor) = context.compute_capability().map_err(|e| failed(&e))?;
        if major < 6 {
            return Err(CudaUnavailable::OldDevice {
                name: info.name,
                major,
                minor,
            });
        }
        // SAFETY: all work, cuBLAS's included, goes on this one stream, so
        // its order alone keeps uses of memory apart; per-buffer events
        // (two per allocation) would only add cost.
        unsafe { context.disable_event_tracking() };
        // A stream of its own: the default stream cannot be captured into
        // a graph.
        let stream = context.new_stream().map_err(|e| failed(&e))?;
        let blas = ManuallyDrop::new(CudaBlas::new(stream.clone()).map_err(|e| failed(&e))?);
        let arch = nvrtc_arch(major, minor)?;
        let target = if binaries {
            // The cubin must be for the device itself (sm_XY runs only on
            // XY), which this NVRTC must know.
            if arch != format!("compute_{major}{minor}") {
                return Err(CudaUnavailable::CompileFailed(format!(
                    "NVRTC is newer than the driver, so kernels must be compiled to machine code for the device, and this NVRTC cannot compile for compute capability {major}.{minor}"
                )));
            }
            Target::Binary(major * 10 + minor)
        } else {
            // One architecture name per device handle: leaked.
            Target::Ptx(Box::leak(arch.into_boxed_str()))
        };
        let device = CudaDevice {
            info,
            stream,
            blas,
            target,
            kernels: RefCell::default(),
            cache: RefCell::default(),
            held: std::cell::Cell::new(0),
            programs: super::program::Programs::default(),
            solver: std::cell::OnceCell::new(),
            plans: RefCell::default(),
            #[cfg(feature = "nccl")]
            nccl: super::nccl::Communicator::default(),
        };
        device.test_kernel()?;
        Ok(device)
    }

    /// Compiles, loads and runs one small kernel, so that a device that
    /// cannot run Epsilon's kernels (an NVRTC the driver refuses, an
    /// architecture it cannot load) is found when the backend is chosen,
    /// where `auto` can still pick the CPU.
    fn test_kernel(&self) -> Result<(), CudaUnavailable> {
        let failed = |e: BackendError| CudaUnavailable::TestKernelFailed(e.message);
        let plan = super::launch::fill(&[3]);
        let mut out = self.alloc(3).map_err(failed)?;
        self.launch(&plan, &[Arg::Int(3), Arg::Double(1.5)], &mut out)
            .map_err(failed)?;
        let values = self.download(&out, 3).map_err(failed)?;
        if values != [1.5, 1.5, 1.5] {
            return Err(CudaUnavailable::TestKernelFailed(format!(
                "it wrote {values:?} instead of 1.5 three times"
            )));
        }
        Ok(())
    }

    /// The compiled kernel of `launch`, compiling it at first use.
    fn function(&self, launch: &Launch) -> Result<CudaFunction, BackendError> {
        if let Some((source, function)) = self.kernels.borrow().get(&launch.key)
            && *source == launch.source
        {
            return function.clone().map_err(BackendError::new);
        }
        let function = self.load(launch);
        // A different source under the same hash (never seen) replaces it.
        self.kernels
            .borrow_mut()
            .insert(launch.key, (launch.source.clone(), function.clone()));
        function.map_err(BackendError::new)
    }

    /// Compiles and loads `launch`'s kernel.
    fn load(&self, launch: &Launch) -> Result<CudaFunction, String> {
        let image = match self.target {
            Target::Ptx(arch) => {
                Ptx::from_src(compile(&launch.source, arch).map_err(|e| e.to_string())?)
            }
            Target::Binary(sm) => {
                Ptx::from_binary(compile_binary(&launch.source, sm).map_err(|e| e.to_string())?)
            }
        };
        let module = self
            .stream
            .context()
            .load_module(image)
            .map_err(|e| driver_error(e).message)?;
        module
            .load_function(launch.name)
            .map_err(|e| driver_error(e).message)
    }

    /// How many kernels have been compiled.
    pub fn compiled_kernels(&self) -> usize {
        self.kernels.borrow().len()
    }

    /// Waits for queued work.
    pub fn synchronize(&self) -> Result<(), BackendError> {
        self.stream.synchronize().map_err(driver_error)
    }
}

impl CudaDevice {
    /// `c = a b` as `call` describes it, in `T` (cuBLAS's dgemm or sgemm;
    /// strided batched for stacks); `one` is 1 in `T`.
    fn blas_gemm<T, A, B, C>(
        &self,
        call: &GemmCall,
        one: T,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), BackendError>
    where
        T: Copy + Default,
        CudaBlas: Gemm<T>,
        A: DevicePtr<T>,
        B: DevicePtr<T>,
        C: DevicePtrMut<T>,
    {
        let config = GemmConfig {
            transa: operation(call.transa),
            transb: operation(call.transb),
            m: int(call.m)?,
            n: int(call.n)?,
            k: int(call.k)?,
            alpha: one,
            lda: int(call.lda)?,
            ldb: int(call.ldb)?,
            beta: T::default(),
            ldc: int(call.ldc)?,
        };
        let result = if call.batch == 1 {
            // SAFETY: the dimensions come from the operands' shapes.
            unsafe { self.blas.gemm(config, a, b, c) }
        } else {
            let batched = StridedBatchedConfig {
                gemm: config,
                batch_size: int(call.batch)?,
                stride_a: call.stride_a as i64,
                stride_b: call.stride_b as i64,
                stride_c: call.stride_c as i64,
            };
            // SAFETY: as above; the strides are whole matrices.
            unsafe { self.blas.gemm_strided_batched(batched, a, b, c) }
        };
        result.map_err(|e| BackendError::new(format!("cuBLAS: {e}")))
    }
}

fn operation(transpose: bool) -> cublasOperation_t {
    if transpose {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

fn int(x: usize) -> Result<i32, BackendError> {
    i32::try_from(x).map_err(|_| BackendError::new(format!("{x} is too large for cuBLAS")))
}

impl Machine for CudaDevice {
    type Mem = CudaSlice<f64>;
    type Graph = CudaGraph;

    fn alloc(&self, len: usize) -> Result<CudaSlice<f64>, BackendError> {
        let len = len.max(1);
        {
            let mut cache = self.cache.borrow_mut();
            if let Some(mem) = cache.free.get_mut(&len).and_then(Vec::pop) {
                cache.bytes -= len * 8;
                return Ok(mem);
            }
        }
        // SAFETY: every kernel writes all of its output before it is read.
        let fresh = unsafe { self.stream.alloc::<f64>(len) };
        let mem = match fresh {
            Ok(mem) => mem,
            Err(_) => {
                // Out of memory: give the cache back to the driver, retry.
                let mut cache = self.cache.borrow_mut();
                cache.free.clear();
                self.held.set(self.held.get().saturating_sub(cache.bytes));
                cache.bytes = 0;
                drop(cache);
                // SAFETY: as above.
                unsafe { self.stream.alloc::<f64>(len) }.map_err(driver_error)?
            }
        };
        self.held.set(self.held.get() + len * 8);
        device_stats::holding(self.held.get());
        Ok(mem)
    }

    fn zeros(&self, len: usize) -> Result<CudaSlice<f64>, BackendError> {
        let mut mem = self.alloc(len)?;
        self.stream.memset_zeros(&mut mem).map_err(driver_error)?;
        Ok(mem)
    }

    fn upload(&self, data: &[f64]) -> Result<CudaSlice<f64>, BackendError> {
        device_stats::uploaded(data.len() * 8);
        let mut mem = self.alloc(data.len())?;
        if !data.is_empty() {
            self.stream
                .memcpy_htod(data, &mut mem)
                .map_err(driver_error)?;
        }
        Ok(mem)
    }

    fn download(&self, mem: &CudaSlice<f64>, len: usize) -> Result<Vec<f64>, BackendError> {
        device_stats::downloaded(len * 8);
        let mut data = vec![0.0; len];
        if len > 0 {
            self.stream
                .memcpy_dtoh(&mem.slice(0..len), &mut data)
                .map_err(driver_error)?;
        }
        self.stream.synchronize().map_err(driver_error)?;
        Ok(data)
    }

    fn launch(
        &self,
        launch: &Launch,
        args: &[Arg<'_, CudaSlice<f64>>],
        out: &mut CudaSlice<f64>,
    ) -> Result<(), BackendError> {
        let function = self.function(launch)?;
        device_stats::launched();
        // Numbers are passed by reference to where they live.
        let ints: Vec<i64> = args
            .iter()
            .map(|a| if let Arg::Int(x) = a { *x } else { 0 })
            .collect();
        let doubles: Vec<f64> = args
            .iter()
            .map(|a| if let Arg::Double(x) = a { *x } else { 0.0 })
            .collect();
        let mut builder = self.stream.launch_builder(&function);
        for (k, arg) in args.iter().enumerate() {
            match arg {
                Arg::Int(_) => builder.arg(&ints[k]),
                Arg::Double(_) => builder.arg(&doubles[k]),
                Arg::Mem(mem) => builder.arg(*mem),
            };
        }
        builder.arg(out);
        let config = LaunchConfig {
            grid_dim: (launch.grid, 1, 1),
            block_dim: (launch.block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the parameters follow the generated kernel's signature
        // (see `launch` and `kernels`), and every index it reads is within
        // its operands' shapes.
        unsafe { builder.launch(config) }.map_err(driver_error)?;
        Ok(())
    }

    fn gemm(
        &self,
        call: &GemmCall,
        (a, b): (&CudaSlice<f64>, &CudaSlice<f64>),
        c: &mut CudaSlice<f64>,
        single: bool,
    ) -> Result<(), BackendError> {
        device_stats::library_call();
        if !single {
            return self.blas_gemm(call, 1.0f64, a, b, c);
        }
        let (a_len, b_len, c_len) = (2 * a.len(), 2 * b.len(), 2 * c.len());
        // SAFETY: the memory holds f32 numbers two per slot
        // (`launch::convert`), and every bit pattern is an f32.
        let views = unsafe {
            (
                a.transmute::<f32>(a_len),
                b.transmute::<f32>(b_len),
                c.transmute_mut::<f32>(c_len),
            )
        };
        let (Some(a), Some(b), Some(mut c)) = views else {
            return Err(BackendError::new("f32 storage smaller than its slots"));
        };
        self.blas_gemm(call, 1.0f32, &a, &b, &mut c)
    }

    fn routine(
        &self,
        routine: &crate::ir::ops::solver::Routine,
        reads: &[&CudaSlice<f64>],
        writes: &mut [&mut CudaSlice<f64>],
    ) -> Result<(), BackendError> {
        device_stats::library_call();
        self.run_routine(routine, reads, writes)
    }

    fn copy(
        &self,
        src: &CudaSlice<f64>,
        from: usize,
        dst: &mut CudaSlice<f64>,
        to: usize,
        len: usize,
    ) -> Result<(), BackendError> {
        self.stream
            .memcpy_dtod(
                &src.slice(from..from + len),
                &mut dst.slice_mut(to..to + len),
            )
            .map_err(driver_error)
    }

    #[cfg(feature = "nccl")]
    fn allreduce(
        &self,
        src: &CudaSlice<f64>,
        shape: &[usize],
        reduction: crate::distributed::Reduction,
    ) -> Result<Option<CudaSlice<f64>>, BackendError> {
        let n: usize = shape.iter().product();
        let out = self.alloc(n)?;
        self.nccl
            .allreduce(&self.stream, self.info.count, src, out, shape, reduction)
    }

    fn programs(&self) -> Option<&super::program::Programs<CudaDevice>> {
        Some(&self.programs)
    }

    fn clear(&self, mem: &mut CudaSlice<f64>) -> Result<(), BackendError> {
        self.stream.memset_zeros(mem).map_err(driver_error)
    }

    fn begin_capture(&self) -> Result<bool, BackendError> {
        use cudarc::driver::sys::CUstreamCaptureMode;
        match self
            .stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        {
            Ok(()) => Ok(true),
            // A driver that cannot capture: plain replays.
            Err(_) => Ok(false),
        }
    }

    fn end_capture(&self) -> Result<Option<CudaGraph>, BackendError> {
        use cudarc::driver::sys::CUgraphInstantiate_flags;
        self.stream
            .end_capture(CUgraphInstantiate_flags(0))
            .map_err(driver_error)
    }

    fn launch_graph(&self, graph: &CudaGraph) -> Result<(), BackendError> {
        device_stats::graph_launched();
        graph.launch().map_err(driver_error)
    }

    fn release(&self, mem: CudaSlice<f64>) {
        let mut cache = self.cache.borrow_mut();
        let bytes = mem.len() * 8;
        if cache.bytes + bytes <= CACHE_BYTES {
            cache.bytes += bytes;
            cache.free.entry(mem.len()).or_default().push(mem);
        } else {
            // Dropped: back to the driver.
            self.held.set(self.held.get().saturating_sub(bytes));
            device_stats::holding(self.held.get());
        }
    }
}

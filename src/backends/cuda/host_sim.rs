//! A simulated CUDA device on the host, for tests on machines without a
//! GPU: runs any generated kernel, block-level cooperation included.
//!
//! Each kernel is compiled once as host C++ (under [`SIM_HEADER`], which
//! gives CUDA's names host meanings) and linked with a small runtime
//! ([`RUNTIME`]) into a program that performs one launch per run: it reads
//! the grid, the block, the arguments and the buffers from a file, runs
//! every CUDA thread of a block as a host thread, and writes the buffers
//! back bit for bit. What is modelled:
//!
//! - `threadIdx`, `blockIdx` (per thread), `blockDim`, `gridDim` (per
//!   launch); `.x` only, `.y` and `.z` are 0 or 1;
//! - `__syncthreads()` is a barrier of the block's threads;
//! - `__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync`, `__shfl_xor_sync`
//!   exchange values within a warp of 32 threads, all 32 taking part (a
//!   shuffle in a partial warp, with a mask other than `0xffffffff`, or
//!   after some lanes returned is reported as an error);
//! - `__shared__` variables are shared by the threads of a block: blocks
//!   run one after another, so one copy (`static`) serves them all;
//! - `atomicAdd` is atomic (under one lock);
//! - a thread that returns stops counting in its block's barriers, as on
//!   current devices;
//! - the math functions are the host's `<cmath>` ones.
//!
//! What is not: the device's memory model (host threads synchronise
//! through real barriers, so races the device would expose may pass),
//! warps that diverge within a shuffle (lanes that reach different shuffle
//! calls are paired up as if they were one), dynamic shared memory, blocks
//! running concurrently, timing. Results can differ from a device's in the
//! last place: CUDA's math library rounds differently from the host's, and
//! the device contracts `a * b + c` into fused multiply-adds by default.
//! A launch in which some thread never reaches a barrier the others wait at
//! deadlocks; it is stopped after a time limit and reported.
//!
//! Cost, on two cores: the runtime compiles once per [`Simulator`] (about
//! 1 s), each kernel once (about 0.25 s); a launch takes about 20 ms, plus
//! about 5 ms per block of 256 threads that shuffle (host threads switching
//! at every barrier). Meant for small tests, not large grids.

use super::host_run::host_compiler;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// CUDA's names for kernels compiled as host C++ (`sim.h`).
const SIM_HEADER: &str = r#"// The simulated device, as kernels see it (see src/backends/cuda/host_sim.rs).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
extern thread_local uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
constexpr int warpSize = 32;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__
// Blocks run one after another, so one copy serves every block.
#define __shared__ static

inline double __longlong_as_double(long long bits) { double x; std::memcpy(&x, &bits, sizeof x); return x; }
inline long long __double_as_longlong(double x) { long long bits; std::memcpy(&bits, &x, sizeof bits); return bits; }

void __syncthreads();

// The value `bits` of lane `source` of the calling warp; every lane calls it.
std::uint64_t eps_sim_exchange(unsigned mask, std::uint64_t bits, unsigned source);
template <class T> T eps_sim_shuffle(unsigned mask, T v, unsigned source) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    bits = eps_sim_exchange(mask, bits, source);
    std::memcpy(&v, &bits, sizeof v);
    return v;
}
// CUDA's rules: lanes form groups of `width` (a power of two); a source
// outside the caller's group gives the caller's own value (`idx` wraps).
template <class T> T __shfl_sync(unsigned mask, T v, int lane, int width = warpSize) {
    const unsigned me = threadIdx.x % warpSize, w = width;
    return eps_sim_shuffle(mask, v, me / w * w + unsigned(lane) % w);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    const unsigned me = threadIdx.x % warpSize, w = width;
    return eps_sim_shuffle(mask, v, me % w >= delta ? me - delta : me);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    const unsigned me = threadIdx.x % warpSize, w = width;
    return eps_sim_shuffle(mask, v, me % w + delta < w ? me + delta : me);
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
    const unsigned me = threadIdx.x % warpSize, w = width, other = me ^ unsigned(lane_mask);
    return eps_sim_shuffle(mask, v, other / w <= me / w ? other : me);
}

void eps_sim_atomic_lock();
void eps_sim_atomic_unlock();
template <class T> T atomicAdd(T* address, T value) {
    eps_sim_atomic_lock();
    const T old = *address;
    *address = old + value;
    eps_sim_atomic_unlock();
    return old;
}

// One launch argument as read from the launch file, and the three kinds of
// kernel parameter: each converts only to its own parameter types, so
// arguments that do not match the kernel's parameters do not compile.
struct EpsSimArg { long long i; double d; double* p; };
struct EpsSimInt {
    long long v;
    template <class T> requires std::is_same_v<T, long long> operator T() const { return v; }
};
struct EpsSimDouble {
    double v;
    template <class T> requires std::is_same_v<T, double> operator T() const { return v; }
};
struct EpsSimBuffer {
    double* v;
    template <class T> requires(std::is_same_v<T, double*> || std::is_same_v<T, const double*>)
    operator T() const { return v; }
};
void eps_sim_call(const EpsSimArg* args); // the kernel, generated per kernel
"#;

/// The device: threads, barriers, shuffles, and `main`, which runs one
/// launch (`runtime.cpp`, compiled once per [`Simulator`]).
const RUNTIME: &str = r#"// The simulated device's runtime (see src/backends/cuda/host_sim.rs).
// Usage: program LAUNCH_FILE BUFFERS_FILE. The launch file holds 8-byte
// words in the host's byte order: grid, block, the argument count, per
// argument its kind (0 long long, 1 double, 2 buffer) and value (the bits,
// or the buffer's index), the buffer count, per buffer its length and
// elements. The buffers' elements are written back to BUFFERS_FILE.
#include "sim.h"
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

thread_local uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {
struct Warp {
    explicit Warp(int lanes) : lanes(lanes), running(lanes), sync(lanes) {}
    const int lanes;           // 32, but in a last, partial warp
    std::atomic<int> running;  // lanes that have not returned
    std::barrier<> sync;
    std::uint64_t values[32];  // each lane's value in a shuffle
};

struct Block {
    explicit Block(unsigned threads) : sync(threads) {
        for (unsigned t = 0; t < threads; t += warpSize)
            warps.push_back(std::make_unique<Warp>(std::min<unsigned>(warpSize, threads - t)));
    }
    std::barrier<> sync;  // __syncthreads
    std::vector<std::unique_ptr<Warp>> warps;
};

std::unique_ptr<Block> block;  // the running block's; a new one for each block
std::mutex atomics;

Warp& my_warp() { return *block->warps[threadIdx.x / warpSize]; }

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "simulated device, block %u, thread %u: %s\n", blockIdx.x, threadIdx.x, what);
    std::_Exit(3);
}

// A thread that returns from the kernel stops counting in its barriers.
void leave_block() {
    Warp& warp = my_warp();
    warp.running.fetch_sub(1);
    warp.sync.arrive_and_drop();
    block->sync.arrive_and_drop();
}

std::uint64_t word(std::FILE* file) {
    std::uint64_t w;
    if (std::fread(&w, sizeof w, 1, file) != 1) fail("the launch file is truncated");
    return w;
}
}  // namespace

void __syncthreads() { block->sync.arrive_and_wait(); }
void eps_sim_atomic_lock() { atomics.lock(); }
void eps_sim_atomic_unlock() { atomics.unlock(); }

std::uint64_t eps_sim_exchange(unsigned mask, std::uint64_t bits, unsigned source) {
    Warp& warp = my_warp();
    if (mask != 0xffffffffu) fail("a shuffle whose mask is not the whole warp (not modelled)");
    if (warp.lanes != warpSize) fail("a shuffle in a warp of fewer than 32 threads");
    if (source >= unsigned(warpSize)) fail("a shuffle from a lane outside the warp");
    warp.values[threadIdx.x % warpSize] = bits;
    warp.sync.arrive_and_wait();
    if (warp.running.load() != warpSize) fail("a shuffle after some lanes of the warp returned");
    const std::uint64_t got = warp.values[source];
    warp.sync.arrive_and_wait();
    return got;
}

int main(int argc, char** argv) {
    if (argc != 3) fail("usage: program LAUNCH_FILE BUFFERS_FILE");
    std::FILE* in = std::fopen(argv[1], "rb");
    if (!in) fail("cannot open the launch file");
    const unsigned grid = word(in), threads = word(in);
    std::vector<std::uint64_t> kinds(word(in)), values(kinds.size());
    for (size_t k = 0; k < kinds.size(); ++k) kinds[k] = word(in), values[k] = word(in);
    std::vector<std::vector<double>> buffers(word(in));
    for (auto& buffer : buffers) {
        buffer.resize(word(in));
        if (std::fread(buffer.data(), sizeof(double), buffer.size(), in) != buffer.size())
            fail("the launch file is truncated");
    }
    std::fclose(in);
    std::vector<EpsSimArg> args(kinds.size());
    for (size_t k = 0; k < kinds.size(); ++k) {
        if (kinds[k] == 0) args[k].i = (long long)values[k];
        else if (kinds[k] == 1) std::memcpy(&args[k].d, &values[k], sizeof(double));
        else if (values[k] < buffers.size()) args[k].p = buffers[values[k]].data();
        else fail("an argument names a buffer that is not there");
    }

    gridDim = {grid, 1, 1};
    blockDim = {threads, 1, 1};
    block = std::make_unique<Block>(threads);
    // Every thread of a block has returned before the next block starts.
    std::barrier between(threads, [threads]() noexcept { block = std::make_unique<Block>(threads); });
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            for (unsigned b = 0; b < grid; ++b) {
                blockIdx = {b, 0, 0};
                eps_sim_call(args.data());
                leave_block();
                between.arrive_and_wait();
            }
        });
    for (auto& worker : workers) worker.join();

    std::FILE* out = std::fopen(argv[2], "wb");
    if (!out) fail("cannot create the buffers file");
    for (const auto& buffer : buffers)
        if (std::fwrite(buffer.data(), sizeof(double), buffer.size(), out) != buffer.size())
            fail("cannot write the buffers file");
    if (std::fclose(out) != 0) fail("cannot write the buffers file");
    return 0;
}
"#;

/// Compiler options: C++20 for `std::barrier` and `requires`.
const FLAGS: [&str; 3] = ["-O1", "-std=c++20", "-pthread"];

/// One kernel parameter value.
#[derive(Clone, Copy, Debug)]
pub enum SimArg {
    /// A `long long` parameter.
    Int(i64),
    /// A `double` parameter.
    Double(f64),
    /// A `double*` or `const double*` parameter: `buffers[k]`.
    Buffer(usize),
}

impl SimArg {
    /// The kind's code in the launch file, and the value's word.
    fn words(self) -> [u64; 2] {
        match self {
            SimArg::Int(v) => [0, v as u64],
            SimArg::Double(v) => [1, v.to_bits()],
            SimArg::Buffer(k) => [2, k as u64],
        }
    }

    /// The C++ expression passing launch argument `k` of this kind.
    fn parameter(self, k: usize) -> String {
        match self {
            SimArg::Int(_) => format!("EpsSimInt{{a[{k}].i}}"),
            SimArg::Double(_) => format!("EpsSimDouble{{a[{k}].d}}"),
            SimArg::Buffer(_) => format!("EpsSimBuffer{{a[{k}].p}}"),
        }
    }
}

/// A simulated device: a host C++ compiler, a temporary directory, and the
/// programs compiled so far.
pub struct Simulator {
    compiler: &'static str,
    dir: tempfile::TempDir,
    /// `runtime.o`, once compiled.
    runtime: Option<PathBuf>,
    /// Programs by (source, kernel name, argument kinds).
    programs: HashMap<(String, String, String), PathBuf>,
    /// How long a launch may run before it is taken for a deadlock.
    time_limit: Duration,
}

impl Simulator {
    /// None when there is no host C++ compiler (g++/c++/clang++), so tests
    /// can skip with a printed reason.
    pub fn new() -> Option<Simulator> {
        let compiler = host_compiler()?;
        let dir = tempfile::Builder::new()
            .prefix("epsilon-host-sim")
            .tempdir()
            .ok()?;
        std::fs::write(dir.path().join("sim.h"), SIM_HEADER).ok()?;
        Some(Simulator {
            compiler,
            dir,
            runtime: None,
            programs: HashMap::new(),
            time_limit: Duration::from_secs(60),
        })
    }

    /// Runs kernel `name` of `source` (CUDA C as generated, PRELUDE
    /// included) with `grid` blocks of `block` threads, parameters `args`
    /// in order; Buffer(k) params point at `buffers[k]` (read and written in
    /// place).
    pub fn launch(
        &mut self,
        source: &str,
        name: &str,
        grid: u32,
        block: u32,
        args: &[SimArg],
        buffers: &mut [Vec<f64>],
    ) -> Result<(), String> {
        if grid == 0 || grid > i32::MAX as u32 {
            return Err(format!("a grid of {grid} blocks cannot be launched"));
        }
        if !(1..=1024).contains(&block) {
            return Err(format!("a block of {block} threads cannot be launched"));
        }
        if let Some(k) = args.iter().find_map(|a| match a {
            SimArg::Buffer(k) if *k >= buffers.len() => Some(*k),
            _ => None,
        }) {
            return Err(format!(
                "argument Buffer({k}), but there are {} buffers",
                buffers.len()
            ));
        }
        let program = self.program(source, name, args)?;

        let mut words = vec![u64::from(grid), u64::from(block), args.len() as u64];
        words.extend(args.iter().flat_map(|a| a.words()));
        words.push(buffers.len() as u64);
        for buffer in buffers.iter() {
            words.push(buffer.len() as u64);
            words.extend(buffer.iter().map(|x| x.to_bits()));
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let launch_file = self.dir.path().join("launch.bin");
        let buffers_file = self.dir.path().join("buffers.bin");
        let log_file = self.dir.path().join("launch.log");
        std::fs::write(&launch_file, bytes).map_err(|e| e.to_string())?;
        self.run(&program, &launch_file, &buffers_file, &log_file)?;

        let bytes = std::fs::read(&buffers_file).map_err(|e| e.to_string())?;
        let total: usize = buffers.iter().map(Vec::len).sum();
        if bytes.len() != 8 * total {
            return Err(format!(
                "the program wrote {} bytes for {total} elements",
                bytes.len()
            ));
        }
        let mut values = bytes
            .chunks_exact(8)
            .map(|b| f64::from_bits(u64::from_ne_bytes(b.try_into().expect("8 bytes"))));
        for x in buffers.iter_mut().flatten() {
            *x = values.next().expect("counted");
        }
        Ok(())
    }

    /// Runs `program` on one launch, stopping it after the time limit.
    fn run(&self, program: &Path, launch: &Path, buffers: &Path, log: &Path) -> Result<(), String> {
        let log_out = File::create(log).map_err(|e| e.to_string())?;
        let log_err = log_out.try_clone().map_err(|e| e.to_string())?;
        let mut child = Command::new(program)
            .arg(launch)
            .arg(buffers)
            .stdin(Stdio::null())
            .stdout(log_out)
            .stderr(log_err)
            .spawn()
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if start.elapsed() > self.time_limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the launch did not finish in {:?}: probably a barrier or shuffle \
                     that not every thread of a block or warp reaches",
                    self.time_limit
                ));
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        if status.success() {
            Ok(())
        } else {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            Err(format!("the launch failed ({status}): {}", text.trim()))
        }
    }

    /// The program running kernel `name` of `source` with arguments of the
    /// kinds of `args`, compiled on first use.
    fn program(&mut self, source: &str, name: &str, args: &[SimArg]) -> Result<PathBuf, String> {
        let kinds: String = args
            .iter()
            .map(|a| match a {
                SimArg::Int(_) => 'i',
                SimArg::Double(_) => 'd',
                SimArg::Buffer(_) => 'b',
            })
            .collect();
        let key = (source.to_string(), name.to_string(), kinds);
        if let Some(program) = self.programs.get(&key) {
            return Ok(program.clone());
        }
        let runtime = self.runtime()?;
        let k = self.programs.len();
        let mut text = String::from("#include \"sim.h\"\n#line 1 \"kernel.cu\"\n");
        text.push_str(source);
        let parameters: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(k, a)| a.parameter(k))
            .collect();
        let _ = write!(
            text,
            "\n// The launch's arguments, of the kinds {:?}.\nvoid eps_sim_call(const EpsSimArg* a) {{ {name}({}); }}\n",
            key.2,
            parameters.join(", ")
        );
        let cpp = self.dir.path().join(format!("kernel{k}.cpp"));
        let program = self.dir.path().join(format!("kernel{k}"));
        std::fs::write(&cpp, text).map_err(|e| e.to_string())?;
        self.compile(&[cpp.as_os_str(), runtime.as_os_str()], &program, false)
            .map_err(|log| {
                format!(
                    "kernel {name} with arguments {args:?} does not compile as host C++:\n{log}"
                )
            })?;
        self.programs.insert(key, program.clone());
        Ok(program)
    }

    /// `runtime.o`, compiled on first use.
    fn runtime(&mut self) -> Result<PathBuf, String> {
        if let Some(object) = &self.runtime {
            return Ok(object.clone());
        }
        let cpp = self.dir.path().join("runtime.cpp");
        let object = self.dir.path().join("runtime.o");
        std::fs::write(&cpp, RUNTIME).map_err(|e| e.to_string())?;
        self.compile(&[cpp.as_os_str()], &object, true)
            .map_err(|log| format!("the simulator's runtime does not compile:\n{log}"))?;
        self.runtime = Some(object.clone());
        Ok(object)
    }

    /// Compiles `inputs` into `output` (an object file when `object`); the
    /// compiler's messages on failure.
    fn compile(
        &self,
        inputs: &[&std::ffi::OsStr],
        output: &Path,
        object: bool,
    ) -> Result<(), String> {
        let mut command = Command::new(self.compiler);
        command.args(FLAGS).arg("-I").arg(self.dir.path());
        if object {
            command.arg("-c");
        }
        let compiled = command
            .args(inputs)
            .arg("-o")
            .arg(output)
            .output()
            .map_err(|e| e.to_string())?;
        if compiled.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&compiled.stderr).into_owned())
        }
    }
}

mod tests;

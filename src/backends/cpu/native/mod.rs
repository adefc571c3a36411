//! Native code for fused elementwise groups. A group that runs over many
//! elements is compiled once, with Cranelift, to a loop that keeps every
//! intermediate in a register (`codegen`); `lowering` says which
//! operations become instructions and which call the interpreter's own
//! functions, so native and interpreted runs agree bit for bit.
//!
//! Kernels are cached per thread by the group's structure, so a tape run
//! again (or another tape with the same group) does not compile again. The
//! interpreter in `elementwise` remains the fallback: for small tensors,
//! groups of more than 64 operands, groups with a step the interpreter
//! vectorizes (`exp`, `tanh`, `sigmoid`: `native_task` leaves them to it),
//! where the host has no Cranelift backend, and when `EPSILON_NATIVE=0`. "The same bits" excepts the sign
//! and payload of NaNs: which NaN operand an instruction keeps is the
//! hardware's and the compiler's choice (the interpreter's vectorized
//! loops do not keep one either).
//! `EPSILON_NATIVE_DUMP=1` prints each kernel's machine code on stderr as
//! it is compiled.

mod codegen;
mod fold;
mod lowering;
mod program;
mod scalar;
mod transcendental;

pub use program::{Arg, Piece, Place, Program};
pub use scalar::{FlatKernel, LoopKernel, TrailKernel};

use crate::ir::TOp;
use crate::tape::FusedGroup;
use cranelift_codegen::ir::{AbiParam, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Kernels kept per thread before the cache is emptied.
const MAX_CACHED_KERNELS: usize = 512;

/// Kernels compiled per group and operand layout with different known
/// numbers; past this, numbers are read at run time instead (a number
/// that changes from run to run must not compile a kernel per run).
const MAX_KNOWN_VARIANTS: usize = 4;

/// How a kernel reads one of its group's operands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// Element `i` is `operands[k][i]`.
    Streamed,
    /// One number for all elements, `operands[k][0]`, read once.
    Uniform,
    /// One number known when compiling, which becomes part of the code
    /// (steps over known numbers are folded away).
    Known(f64),
}

impl Operand {
    fn known(&self) -> Option<f64> {
        match self {
            Operand::Known(x) => Some(*x),
            _ => None,
        }
    }

    /// The operand as a key: known numbers by their bits.
    fn key(&self) -> (u8, u64) {
        match self {
            Operand::Streamed => (0, 0),
            Operand::Uniform => (1, 0),
            Operand::Known(x) => (2, x.to_bits()),
        }
    }
}

/// The compiled function: `kernel(operands, outs, len)`.
type Entry = unsafe extern "C" fn(*const *const f64, *const *mut f64, usize);

/// A compiled group. Its code lives as long as the kernel; handles borrow
/// it.
pub struct Kernel {
    module: Option<JITModule>,
    entry: Entry,
    inputs: usize,
    outputs: usize,
    uniform: u64,
}

impl Kernel {
    /// The entry point, shareable with worker threads while the kernel
    /// is borrowed.
    pub fn handle(&self) -> Handle<'_> {
        Handle {
            entry: self.entry,
            inputs: self.inputs,
            outputs: self.outputs,
            uniform: self.uniform,
            kernel: std::marker::PhantomData,
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: the only pointers into the module's memory are
            // `entry` and the handles' copies, which borrow this kernel.
            unsafe { module.free_memory() };
        }
    }
}

/// The entry point of a kernel, shareable with worker threads; it cannot
/// outlive the kernel.
#[derive(Clone, Copy)]
pub struct Handle<'k> {
    entry: Entry,
    inputs: usize,
    outputs: usize,
    uniform: u64,
    kernel: std::marker::PhantomData<&'k Kernel>,
}

// SAFETY: the kernel's code is immutable once finalized and reads only
// what `run` passes it; the borrow keeps the code alive.
unsafe impl Send for Handle<'_> {}
// SAFETY: as above.
unsafe impl Sync for Handle<'_> {}

impl Handle<'_> {
    /// Computes `out[i]` from `operands[k][i]` (`operands[k][0]` for a
    /// uniform operand) for every `i < out.len()`.
    pub fn run(&self, operands: &[&[f64]], out: &mut [f64]) {
        assert_eq!(operands.len(), self.inputs, "one slice per operand");
        let covers = |(k, o): (usize, &&[f64])| {
            o.len()
                >= if self.uniform >> k & 1 == 1 {
                    1
                } else {
                    out.len()
                }
        };
        assert!(
            operands.iter().enumerate().all(covers),
            "every operand covers the output"
        );
        assert_eq!(self.outputs, 1, "one output");
        let pointers: SmallVec<[*const f64; 16]> = operands.iter().map(|o| o.as_ptr()).collect();
        let outs = [out.as_mut_ptr()];
        // SAFETY: the kernel reads `operands[k][..out.len()]` (or
        // `operands[k][0]`, for uniform operands) and writes
        // `out[..out.len()]`, all in bounds by the checks above.
        unsafe { (self.entry)(pointers.as_ptr(), outs.as_ptr(), out.len()) }
    }

    /// One element: `outputs[r]` from `inputs[k]` (operand `k`'s only
    /// element), for a kernel with one output per entry of `outputs`.
    pub fn run_one(&self, inputs: &[f64], outputs: &mut [f64]) {
        assert_eq!(inputs.len(), self.inputs, "one number per operand");
        assert_eq!(outputs.len(), self.outputs, "one number per output");
        let pointers: SmallVec<[*const f64; 16]> = (0..inputs.len())
            .map(|k| &inputs[k] as *const f64)
            .collect();
        let base = outputs.as_mut_ptr();
        // SAFETY: `base.add(r)` is in bounds for every `r < outputs.len()`.
        let outs: SmallVec<[*mut f64; 8]> =
            (0..outputs.len()).map(|r| unsafe { base.add(r) }).collect();
        // SAFETY: with length 1 the kernel reads `*pointers[k]` and writes
        // `*outs[r]`, all in bounds.
        unsafe { (self.entry)(pointers.as_ptr(), outs.as_ptr(), 1) }
    }
}

thread_local! {
    static COMPILER: RefCell<Option<Compiler>> = RefCell::new(Compiler::new().ok());
    static KERNELS: RefCell<Cache<Option<Rc<Kernel>>>> = RefCell::default();
    static KNOWN_VARIANTS: RefCell<Cache<usize>> = RefCell::default();
    static COMPILED: Cell<usize> = const { Cell::new(0) };
}

pub use super::strategy::{native_kernels, set_native_kernels};

/// How many kernels this thread has compiled (successfully).
pub fn kernels_compiled() -> usize {
    COMPILED.with(Cell::get)
}

/// A group's structure: what its kernel depends on.
struct Key {
    inputs: usize,
    operands: Vec<(u8, u64)>,
    steps: Vec<(TOp, SmallVec<[u16; 3]>)>,
    results: SmallVec<[u16; 2]>,
}

impl Key {
    fn of(group: &FusedGroup, operands: &[Operand]) -> Key {
        Key {
            inputs: group.inputs,
            operands: operands.iter().map(Operand::key).collect(),
            steps: group.steps.clone(),
            results: group.results.clone(),
        }
    }

    /// Whether this is the key of `group` over `operands`.
    fn describes(&self, group: &FusedGroup, operands: &[Operand]) -> bool {
        self.inputs == group.inputs
            && self.steps == group.steps
            && self.results == group.results
            && self
                .operands
                .iter()
                .copied()
                .eq(operands.iter().map(Operand::key))
    }

    /// The hash of `Key::of(group, operands)`, from the group itself.
    fn hash_of(group: &FusedGroup, operands: &[Operand]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        group.inputs.hash(&mut hasher);
        for operand in operands {
            operand.key().hash(&mut hasher);
        }
        group.steps.hash(&mut hasher);
        group.results.hash(&mut hasher);
        hasher.finish()
    }
}

/// Values by a group's structure and its operands' layouts, looked up
/// without copying the group (a loop looks its groups' kernels up at every
/// step; copying each group into a key was 7% of W4's gradient): entries
/// by the structure's hash, compared field by field.
struct Cache<T> {
    entries: FxHashMap<u64, SmallVec<[(Key, T); 1]>>,
    len: usize,
}

impl<T> Default for Cache<T> {
    fn default() -> Self {
        Cache {
            entries: FxHashMap::default(),
            len: 0,
        }
    }
}

impl<T> Cache<T> {
    fn get(&self, group: &FusedGroup, operands: &[Operand]) -> Option<&T> {
        self.entries
            .get(&Key::hash_of(group, operands))?
            .iter()
            .find(|(key, _)| key.describes(group, operands))
            .map(|(_, value)| value)
    }

    /// The value of `group` over `operands`, inserted as `value` if absent.
    fn entry(&mut self, group: &FusedGroup, operands: &[Operand], value: T) -> &mut T {
        let entries = self
            .entries
            .entry(Key::hash_of(group, operands))
            .or_default();
        match entries
            .iter()
            .position(|(key, _)| key.describes(group, operands))
        {
            Some(at) => &mut entries[at].1,
            None => {
                entries.push((Key::of(group, operands), value));
                self.len += 1;
                &mut entries.last_mut().expect("just pushed").1
            }
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.len = 0;
    }
}

/// The kernel for `group` when it should run natively over `elements`
/// elements, reading its operands as `operands` says: `None` when native
/// kernels are off, the group is small, has more than 64 operands, or
/// cannot be compiled here (it is then interpreted).
pub fn kernel_for(group: &FusedGroup, operands: &[Operand], elements: usize) -> Option<Rc<Kernel>> {
    if elements < super::strategy::NATIVE_MIN_ELEMENTS {
        return None;
    }
    cached_kernel(group, operands)
}

/// The kernel for `group` reading its operands as `operands` says, from
/// the per-thread cache of kernels by structure (compiled on a miss):
/// `None` when native kernels are off, the group has more than 64
/// operands, or it cannot be compiled here.
pub fn cached_kernel(group: &FusedGroup, operands: &[Operand]) -> Option<Rc<Kernel>> {
    if !native_kernels() || group.inputs > 64 {
        return None;
    }
    let unknown: SmallVec<[Operand; 16]> = operands
        .iter()
        .map(|o| match o {
            Operand::Known(_) => Operand::Uniform,
            other => *other,
        })
        .collect();
    let variants = KNOWN_VARIANTS.with(|v| v.borrow().get(group, &unknown).copied().unwrap_or(0));
    let operands = if variants >= MAX_KNOWN_VARIANTS {
        &unknown[..]
    } else {
        operands
    };
    if let Some(cached) = KERNELS.with(|k| k.borrow().get(group, operands).cloned()) {
        return cached;
    }
    let kernel = compile(group, operands).ok().map(Rc::new);
    if kernel.is_some() {
        COMPILED.with(|c| c.set(c.get() + 1));
    }
    if operands.iter().any(|o| o.known().is_some()) {
        KNOWN_VARIANTS.with(|v| *v.borrow_mut().entry(group, &unknown, 0) += 1);
    }
    KERNELS.with(|k| {
        let mut kernels = k.borrow_mut();
        if kernels.len >= MAX_CACHED_KERNELS {
            kernels.clear();
            KNOWN_VARIANTS.with(|v| v.borrow_mut().clear());
        }
        *kernels.entry(group, operands, None) = kernel.clone();
    });
    kernel
}

/// Compiles `group` now, whatever its size, reading its operands as
/// `operands` says (tests call this directly).
pub fn compile(group: &FusedGroup, operands: &[Operand]) -> Result<Kernel, String> {
    if operands.len() != group.inputs || group.inputs > 64 {
        return Err(format!(
            "{} operand layouts for {} operands",
            operands.len(),
            group.inputs
        ));
    }
    COMPILER.with(|c| match c.borrow_mut().as_mut() {
        Some(compiler) => compiler.compile(group, operands),
        None => Err("no Cranelift backend for this host".to_string()),
    })
}

/// The host's instruction set and reusable builder state.
struct Compiler {
    isa: OwnedTargetIsa,
    context: FunctionBuilderContext,
}

impl Compiler {
    fn new() -> Result<Compiler, String> {
        let mut flags = settings::builder();
        let set = |flags: &mut settings::Builder, name, value| {
            flags.set(name, value).map_err(|e| format!("{name}: {e}"))
        };
        set(&mut flags, "opt_level", "speed")?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        set(&mut flags, "is_pic", "false")?;
        let isa = cranelift_native::builder()?
            .finish(settings::Flags::new(flags))
            .map_err(|e| e.to_string())?;
        Ok(Compiler {
            isa,
            context: FunctionBuilderContext::new(),
        })
    }

    fn compile(&mut self, group: &FusedGroup, operands: &[Operand]) -> Result<Kernel, String> {
        let (module, code) = self.build(3, |func, context, config, call_conv| {
            codegen::define(group, operands, func, context, config, call_conv)
        })?;
        // SAFETY: `code` is the function just defined, with the `Entry`
        // signature in the ISA's default calling convention, which is
        // `extern "C"` on the hosts Cranelift supports.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(code) };
        Ok(Kernel {
            module: Some(module),
            entry,
            inputs: group.inputs,
            outputs: group.results.len(),
            uniform: operands
                .iter()
                .enumerate()
                .filter(|(_, o)| **o != Operand::Streamed)
                .fold(0, |mask, (k, _)| mask | 1 << k),
        })
    }

    /// Builds one function of `params` pointer-sized parameters with
    /// `define`; returns its module (which owns the code) and its address.
    fn build(
        &mut self,
        params: usize,
        define: impl FnOnce(
            &mut cranelift_codegen::ir::Function,
            &mut FunctionBuilderContext,
            cranelift_codegen::isa::TargetFrontendConfig,
            cranelift_codegen::isa::CallConv,
        ) -> Result<(), String>,
    ) -> Result<(JITModule, *const u8), String> {
        // Fresh builder state for each kernel: nothing half-built by an
        // earlier failure can leak into this one.
        self.context = FunctionBuilderContext::new();
        let mut module = JITModule::new(JITBuilder::with_isa(
            self.isa.clone(),
            default_libcall_names(),
        ));
        let pointer = module.target_config().pointer_type();
        let mut signature = module.make_signature();
        signature
            .params
            .extend(std::iter::repeat_n(AbiParam::new(pointer), params));
        let id = module
            .declare_function("kernel", Linkage::Local, &signature)
            .map_err(|e| e.to_string())?;
        let mut context = module.make_context();
        context.func.signature = signature;
        context.func.name = UserFuncName::user(0, id.as_u32());
        let call_conv = self.isa.default_call_conv();
        define(
            &mut context.func,
            &mut self.context,
            module.target_config(),
            call_conv,
        )?;
        context.set_disasm(super::strategy::native_dump());
        module
            .define_function(id, &mut context)
            .map_err(|e| format!("{e:?}"))?;
        if let Some(vcode) = context.compiled_code().and_then(|c| c.vcode.as_ref()) {
            eprintln!("{vcode}");
        }
        module.finalize_definitions().map_err(|e| e.to_string())?;
        let code = module.get_finalized_function(id);
        Ok((module, code))
    }
}

/// Compiles `group` (over numbers) as a function of flat arrays:
/// `f(inputs, outputs)` with operand `k` at `inputs[k]` and result `r`
/// written to `outputs[r]`.
pub fn compile_flat(group: &FusedGroup) -> Result<scalar::FlatKernel, String> {
    with_compiler(|compiler| {
        let (module, code) = compiler.build(2, |func, context, config, call_conv| {
            scalar::define_flat(group, func, context, config, call_conv)
        })?;
        Ok(scalar::FlatKernel::new(module, code, group))
    })
}

/// Compiles `group` (over numbers; its first `leaves` operands are a
/// loop's state, the next the step index, the rest captured numbers, and
/// its results the next state) as a whole loop:
/// `f(state, captures, from, to, trail)` runs steps `from..to` in
/// registers, writing each step's state into `trail` unless it is null.
pub fn compile_loop(group: &FusedGroup, leaves: usize) -> Result<scalar::LoopKernel, String> {
    with_compiler(|compiler| {
        let (module, code) = compiler.build(5, |func, context, config, call_conv| {
            scalar::define_loop(group, leaves, func, context, config, call_conv)
        })?;
        Ok(scalar::LoopKernel::new(module, code, group, leaves))
    })
}

/// Compiles a loop's reverse body `group` (inputs: `leaves` state
/// numbers, the index, captures, `leaves` cotangents; results: the state's
/// cotangent, then captured cotangents) as the whole reverse of a loop
/// whose states are all kept: `f(trail, captures, cotangent, totals, n)`.
pub fn compile_trail(group: &FusedGroup, leaves: usize) -> Result<scalar::TrailKernel, String> {
    with_compiler(|compiler| {
        let (module, code) = compiler.build(6, |func, context, config, call_conv| {
            scalar::define_trail(group, leaves, func, context, config, call_conv)
        })?;
        Ok(scalar::TrailKernel::new(module, code, group, leaves))
    })
}

/// Compiles a straight-line program (`program`) as one function of a
/// table of base pointers.
pub fn compile_program(pieces: &[Piece]) -> Result<Program, String> {
    if !native_kernels() {
        return Err("native kernels are off".to_string());
    }
    if program::bases_named(pieces) >= (i32::MAX / 8) as usize {
        return Err("too many buffers for one program".to_string());
    }
    with_compiler(|compiler| {
        let (module, code) = compiler.build(1, |func, context, config, call_conv| {
            program::define(pieces, func, context, config, call_conv)
        })?;
        Ok(Program::new(
            scalar::OwnedCode::new(module),
            code,
            program::bases_named(pieces),
        ))
    })
}

fn with_compiler<T>(f: impl FnOnce(&mut Compiler) -> Result<T, String>) -> Result<T, String> {
    COMPILER.with(|c| match c.borrow_mut().as_mut() {
        Some(compiler) => f(compiler),
        None => Err("no Cranelift backend for this host".to_string()),
    })
}

#[cfg(test)]
pub(crate) mod tests;

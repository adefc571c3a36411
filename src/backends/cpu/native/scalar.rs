//! Kernels over numbers, for loops whose state is numbers (`scan` on the
//! logistic map): a flat kernel `f(inputs, outputs)` for one step of a
//! loop's reverse, and a loop kernel `f(state, captures, from, to)` that
//! runs steps `from..to` with the state in registers, as a compiled
//! `fori_loop` would.

use super::codegen::{Code, prepare};
use crate::tape::FusedGroup;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{BlockArg, Function, InstBuilder, MemFlagsData, Value, types};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;

/// The code of a kernel, freed with it.
pub(super) struct OwnedCode {
    module: Option<JITModule>,
}

impl OwnedCode {
    pub(super) fn new(module: JITModule) -> OwnedCode {
        OwnedCode {
            module: Some(module),
        }
    }
}

impl Drop for OwnedCode {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: the only pointer into the module's memory is the
            // kernel's entry, which dies with the kernel.
            unsafe { module.free_memory() };
        }
    }
}

type FlatEntry = unsafe extern "C" fn(*const f64, *mut f64);
type TrailEntry = unsafe extern "C" fn(*const f64, *const f64, *mut f64, *mut f64, usize, usize);
type LoopEntry = unsafe extern "C" fn(*mut f64, *const f64, usize, usize);

/// `f(inputs, outputs)` over numbers.
pub struct FlatKernel {
    _code: OwnedCode,
    entry: FlatEntry,
    inputs: usize,
    outputs: usize,
}

impl FlatKernel {
    pub(super) fn new(module: JITModule, code: *const u8, group: &FusedGroup) -> FlatKernel {
        FlatKernel {
            _code: OwnedCode {
                module: Some(module),
            },
            // SAFETY: `code` was defined with this signature (two pointers)
            // in the default calling convention (`extern "C"`).
            entry: unsafe { std::mem::transmute::<*const u8, FlatEntry>(code) },
            inputs: group.inputs,
            outputs: group.results.len(),
        }
    }

    /// `outputs` from `inputs`.
    pub fn run(&self, inputs: &[f64], outputs: &mut [f64]) {
        assert!(inputs.len() >= self.inputs && outputs.len() >= self.outputs);
        // SAFETY: the kernel reads `inputs[..self.inputs]` and writes
        // `outputs[..self.outputs]`, in bounds by the check above.
        unsafe { (self.entry)(inputs.as_ptr(), outputs.as_mut_ptr()) }
    }
}

/// `f(state, captures, from, to)`: steps `from..to` of a loop.
pub struct LoopKernel {
    _code: OwnedCode,
    entry: LoopEntry,
    leaves: usize,
    captures: usize,
}

impl LoopKernel {
    pub(super) fn new(
        module: JITModule,
        code: *const u8,
        group: &FusedGroup,
        leaves: usize,
    ) -> LoopKernel {
        LoopKernel {
            _code: OwnedCode {
                module: Some(module),
            },
            // SAFETY: `code` was defined with this signature (four
            // pointer-sized parameters) in the default calling convention.
            entry: unsafe { std::mem::transmute::<*const u8, LoopEntry>(code) },
            leaves,
            captures: group.inputs - leaves - 1,
        }
    }

    /// Runs steps `from..to` on `state`.
    pub fn advance(&self, state: &mut [f64], captures: &[f64], from: usize, to: usize) {
        assert!(state.len() >= self.leaves && captures.len() >= self.captures);
        // SAFETY: the kernel reads and writes `state[..leaves]` and reads
        // `captures[..self.captures]`, in bounds by the check above.
        unsafe { (self.entry)(state.as_mut_ptr(), captures.as_ptr(), from, to) }
    }
}

/// `f(trail, captures, cotangent, totals, first, n)`: a loop's reverse
/// over a trail of the states of steps `first..first + n`, from the last
/// down to `first`.
pub struct TrailKernel {
    _code: OwnedCode,
    entry: TrailEntry,
    leaves: usize,
    captures: usize,
    totals: usize,
}

impl TrailKernel {
    pub(super) fn new(
        module: JITModule,
        code: *const u8,
        group: &FusedGroup,
        leaves: usize,
    ) -> TrailKernel {
        TrailKernel {
            _code: OwnedCode {
                module: Some(module),
            },
            // SAFETY: `code` was defined with this signature (six
            // pointer-sized parameters) in the default calling convention.
            entry: unsafe { std::mem::transmute::<*const u8, TrailEntry>(code) },
            leaves,
            captures: group.inputs - 2 * leaves - 1,
            totals: group.results.len() - leaves,
        }
    }

    /// Reverses steps `first + n - 1` down to `first`: `trail` holds their
    /// `n` states, `cotangent` the cotangent of the state after them on
    /// entry and of state `first` on return; each step's captured
    /// cotangents are added to `totals`.
    pub fn reverse(
        &self,
        first: usize,
        trail: &[f64],
        captures: &[f64],
        cotangent: &mut [f64],
        totals: &mut [f64],
    ) {
        let n = trail.len() / self.leaves.max(1);
        assert!(
            trail.len() == n * self.leaves
                && captures.len() >= self.captures
                && cotangent.len() >= self.leaves
                && totals.len() >= self.totals
        );
        // SAFETY: the kernel reads `trail[..n * leaves]` and
        // `captures[..self.captures]`, and reads and writes
        // `cotangent[..leaves]` and `totals[..self.totals]`, all in bounds
        // by the check above.
        unsafe {
            (self.entry)(
                trail.as_ptr(),
                captures.as_ptr(),
                cotangent.as_mut_ptr(),
                totals.as_mut_ptr(),
                first,
                n,
            )
        }
    }
}

/// Loads `count` numbers from `base`.
fn load_all(b: &mut FunctionBuilder, base: Value, count: usize) -> Vec<Value> {
    (0..count)
        .map(|k| {
            let offset = i32::try_from(k * 8).unwrap_or(i32::MAX);
            b.ins()
                .load(types::F64, MemFlagsData::trusted(), base, offset)
        })
        .collect()
}

/// Stores `values` from `base` on.
fn store_all(b: &mut FunctionBuilder, base: Value, values: &[Value]) {
    for (k, &value) in values.iter().enumerate() {
        let offset = i32::try_from(k * 8).unwrap_or(i32::MAX);
        b.ins().store(MemFlagsData::trusted(), value, base, offset);
    }
}

/// Defines `f(inputs, outputs)`.
pub fn define_flat(
    group: &FusedGroup,
    func: &mut Function,
    context: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    call_conv: CallConv,
) -> Result<(), String> {
    let (lowerings, known) = prepare(group, &vec![None; group.inputs])?;
    let mut b = FunctionBuilder::new(func, context);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let (inputs, outputs) = (b.block_params(entry)[0], b.block_params(entry)[1]);
    let operands = load_all(&mut b, inputs, group.inputs);
    let code = Code::over_values(group, &lowerings, &known, call_conv, config.pointer_type());
    let results = code.compute(&mut b, &operands);
    store_all(&mut b, outputs, &results);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

/// Defines `f(state, captures, from, to)`: the state lives in block
/// parameters across iterations.
pub fn define_loop(
    group: &FusedGroup,
    leaves: usize,
    func: &mut Function,
    context: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    call_conv: CallConv,
) -> Result<(), String> {
    if group.results.len() != leaves || group.inputs <= leaves {
        return Err("a loop body returns one number per state number".to_string());
    }
    let (lowerings, known) = prepare(group, &vec![None; group.inputs])?;
    let pointer = config.pointer_type();
    let mut b = FunctionBuilder::new(func, context);
    let entry = b.create_block();
    let head = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    for block in [head, body] {
        b.append_block_param(block, pointer);
        for _ in 0..leaves {
            b.append_block_param(block, types::F64);
        }
    }
    for _ in 0..leaves {
        b.append_block_param(exit, types::F64);
    }
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (state, captured, from, to) = (params[0], params[1], params[2], params[3]);
    let initial = load_all(&mut b, state, leaves);
    let captures = load_all(&mut b, captured, group.inputs - leaves - 1);
    let args = |i: Value, s: &[Value]| -> Vec<BlockArg> {
        std::iter::once(i)
            .chain(s.iter().copied())
            .map(BlockArg::Value)
            .collect()
    };
    b.ins().jump(head, &args(from, &initial));

    b.switch_to_block(head);
    let params = b.block_params(head).to_vec();
    let more = b.ins().icmp(IntCC::UnsignedLessThan, params[0], to);
    let current: Vec<BlockArg> = params[1..].iter().copied().map(BlockArg::Value).collect();
    b.ins()
        .brif(more, body, &args(params[0], &params[1..]), exit, &current);

    b.switch_to_block(body);
    let params = b.block_params(body).to_vec();
    let index = b.ins().fcvt_from_uint(types::F64, params[0]);
    let mut operands: Vec<Value> = params[1..].to_vec();
    operands.push(index);
    operands.extend(&captures);
    let code = Code::over_values(group, &lowerings, &known, call_conv, pointer);
    let next_state = code.compute(&mut b, &operands);
    let next = b.ins().iadd_imm_u(params[0], 1);
    b.ins().jump(head, &args(next, &next_state));

    b.switch_to_block(exit);
    let last = b.block_params(exit).to_vec();
    store_all(&mut b, state, &last);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

/// Defines `f(trail, captures, cotangent, totals, n)` for a reverse body
/// `group` (inputs: state, index, captures, cotangent; results: the
/// state's cotangent, then captured cotangents): the cotangent and the
/// totals live in block parameters from step `n - 1` down to 0.
pub fn define_trail(
    group: &FusedGroup,
    leaves: usize,
    func: &mut Function,
    context: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    call_conv: CallConv,
) -> Result<(), String> {
    if group.inputs < 2 * leaves + 1 || group.results.len() < leaves {
        return Err("a reverse body reads state, index, captures and cotangent".to_string());
    }
    let (lowerings, known) = prepare(group, &vec![None; group.inputs])?;
    let captures_count = group.inputs - 2 * leaves - 1;
    let totals_count = group.results.len() - leaves;
    let pointer = config.pointer_type();
    let mut b = FunctionBuilder::new(func, context);
    let entry = b.create_block();
    let head = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    // Parameters: the steps left (the next step is one less), then the
    // cotangent and the totals.
    for block in [head, body] {
        b.append_block_param(block, pointer);
    }
    for block in [head, body, exit] {
        for _ in 0..leaves + totals_count {
            b.append_block_param(block, types::F64);
        }
    }
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (trail, captured, cotangent, totals, first, n) = (
        params[0], params[1], params[2], params[3], params[4], params[5],
    );
    let mut carried = load_all(&mut b, cotangent, leaves);
    carried.extend(load_all(&mut b, totals, totals_count));
    let captures = load_all(&mut b, captured, captures_count);
    let args = |left: Value, values: &[Value]| -> Vec<BlockArg> {
        std::iter::once(left)
            .chain(values.iter().copied())
            .map(BlockArg::Value)
            .collect()
    };
    b.ins().jump(head, &args(n, &carried));

    b.switch_to_block(head);
    let params = b.block_params(head).to_vec();
    let zero = b.ins().iconst(pointer, 0);
    let more = b.ins().icmp(IntCC::UnsignedGreaterThan, params[0], zero);
    let values: Vec<BlockArg> = params[1..].iter().copied().map(BlockArg::Value).collect();
    b.ins()
        .brif(more, body, &args(params[0], &params[1..]), exit, &values);

    b.switch_to_block(body);
    let params = b.block_params(body).to_vec();
    let i = b.ins().iadd_imm_s(params[0], -1);
    let row = b.ins().imul_imm_s(i, (leaves * 8) as i64);
    let address = b.ins().iadd(trail, row);
    let mut operands = load_all(&mut b, address, leaves);
    let step = b.ins().iadd(first, i);
    operands.push(b.ins().fcvt_from_uint(types::F64, step));
    operands.extend(&captures);
    operands.extend(&params[1..1 + leaves]);
    let code = Code::over_values(group, &lowerings, &known, call_conv, pointer);
    let results = code.compute(&mut b, &operands);
    let mut next: Vec<Value> = results[..leaves].to_vec();
    for (k, &term) in results[leaves..].iter().enumerate() {
        next.push(b.ins().fadd(params[1 + leaves + k], term));
    }
    b.ins().jump(head, &args(i, &next));

    b.switch_to_block(exit);
    let last = b.block_params(exit).to_vec();
    store_all(&mut b, cotangent, &last[..leaves]);
    store_all(&mut b, totals, &last[leaves..]);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

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
type LoopEntry = unsafe extern "C" fn(*mut f64, *const f64, usize, usize, *mut f64);

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

/// `f(state, captures, from, to, trail)`: steps `from..to` of a loop,
/// writing each step's state into `trail` where it is not null.
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
            // SAFETY: `code` was defined with this signature (five
            // pointer-sized parameters) in the default calling convention.
            entry: unsafe { std::mem::transmute::<*const u8, LoopEntry>(code) },
            leaves,
            captures: group.inputs - leaves - 1,
        }
    }

    /// Runs steps `from..to` on `state`.
    pub fn advance(&self, state: &mut [f64], captures: &[f64], from: usize, to: usize) {
        // SAFETY: a null trail is never written.
        unsafe { self.run(state, captures, from, to, std::ptr::null_mut()) }
    }

    /// Runs steps `from..to` on `state`, writing the state after each
    /// step into `trail`, one row of `leaves` numbers a step.
    pub fn record(
        &self,
        state: &mut [f64],
        captures: &[f64],
        from: usize,
        to: usize,
        trail: &mut [f64],
    ) {
        assert!(to >= from && trail.len() >= (to - from) * self.leaves);
        // SAFETY: the kernel writes `trail[..(to - from) * leaves]`, in
        // bounds by the check above.
        unsafe { self.run(state, captures, from, to, trail.as_mut_ptr()) }
    }

    /// Calls the kernel.
    ///
    /// # Safety
    ///
    /// `trail` is null or valid for writing `(to - from) * leaves`
    /// numbers.
    unsafe fn run(
        &self,
        state: &mut [f64],
        captures: &[f64],
        from: usize,
        to: usize,
        trail: *mut f64,
    ) {
        assert!(state.len() >= self.leaves && captures.len() >= self.captures);
        // SAFETY: the kernel reads and writes `state[..leaves]` and reads
        // `captures[..self.captures]`, in bounds by the check above, and
        // writes the trail only where it is not null (the caller's
        // promise covers it).
        unsafe { (self.entry)(state.as_mut_ptr(), captures.as_ptr(), from, to, trail) }
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

/// Defines `f(state, captures, from, to, trail)`: the state lives in
/// block parameters across iterations; where `trail` is not null, the
/// state after each step `i` is also written at `trail[(i - from) *
/// leaves..]` (a second copy of the loop, chosen once on entry).
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
    let plain = b.create_block();
    let recording = b.create_block();
    let exit = b.create_block();
    for _ in 0..leaves {
        b.append_block_param(exit, types::F64);
    }
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (state, captured, from, to, trail) =
        (params[0], params[1], params[2], params[3], params[4]);
    let initial = load_all(&mut b, state, leaves);
    let captures = load_all(&mut b, captured, group.inputs - leaves - 1);
    let no_trail = b.ins().icmp_imm_u(IntCC::Equal, trail, 0);
    b.ins().brif(no_trail, plain, &[], recording, &[]);
    let code = Code::over_values(group, &lowerings, &known, call_conv, pointer);
    let steps = StepLoop {
        code: &code,
        captures: &captures,
        initial: &initial,
        from,
        to,
        exit,
        pointer,
    };
    b.switch_to_block(plain);
    steps.build(&mut b, None);
    b.switch_to_block(recording);
    steps.build(&mut b, Some(trail));

    b.switch_to_block(exit);
    let last = b.block_params(exit).to_vec();
    store_all(&mut b, state, &last);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

/// One copy of a loop kernel's loop: steps `from..to` from `initial`,
/// jumping to `exit` with the last state.
struct StepLoop<'a> {
    code: &'a Code<'a>,
    captures: &'a [Value],
    initial: &'a [Value],
    from: Value,
    to: Value,
    exit: cranelift_codegen::ir::Block,
    pointer: types::Type,
}

impl StepLoop<'_> {
    /// Emits the loop from the current block; with `trail`, each step's
    /// state is also stored there, one row after another.
    fn build(&self, b: &mut FunctionBuilder, trail: Option<Value>) {
        let leaves = self.initial.len();
        let head = b.create_block();
        let body = b.create_block();
        // Parameters: the index, the trail's next row (when recording),
        // then the state.
        let carried = 1 + usize::from(trail.is_some());
        for block in [head, body] {
            for _ in 0..carried {
                b.append_block_param(block, self.pointer);
            }
            for _ in 0..leaves {
                b.append_block_param(block, types::F64);
            }
        }
        let args = |counters: &[Value], s: &[Value]| -> Vec<BlockArg> {
            counters
                .iter()
                .chain(s)
                .copied()
                .map(BlockArg::Value)
                .collect()
        };
        let start: Vec<Value> = std::iter::once(self.from).chain(trail).collect();
        b.ins().jump(head, &args(&start, self.initial));

        b.switch_to_block(head);
        let params = b.block_params(head).to_vec();
        let more = b.ins().icmp(IntCC::UnsignedLessThan, params[0], self.to);
        let current: Vec<BlockArg> = params[carried..]
            .iter()
            .copied()
            .map(BlockArg::Value)
            .collect();
        b.ins().brif(
            more,
            body,
            &args(&params[..carried], &params[carried..]),
            self.exit,
            &current,
        );

        b.switch_to_block(body);
        let params = b.block_params(body).to_vec();
        let index = b.ins().fcvt_from_uint(types::F64, params[0]);
        let mut operands: Vec<Value> = params[carried..].to_vec();
        operands.push(index);
        operands.extend(self.captures);
        let next_state = self.code.compute(b, &operands);
        let mut counters = vec![b.ins().iadd_imm_u(params[0], 1)];
        if trail.is_some() {
            let row = params[1];
            store_all(b, row, &next_state);
            let step = i64::try_from(leaves * 8).unwrap_or(i64::MAX);
            counters.push(b.ins().iadd_imm_s(row, step));
        }
        b.ins().jump(head, &args(&counters, &next_state));
    }
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

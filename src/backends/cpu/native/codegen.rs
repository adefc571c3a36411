//! Cranelift IR for a fused group: one function
//! `kernel(operands: *const *const f64, outs: *const *mut f64, len: usize)`
//! that computes `outs[r][i]` (one output per result of the group) for
//! `i < len` from `operands[k][i]`, or from
//! `operands[k][0]` for a uniform operand (read once, before the loop). The main loop
//! handles two elements per iteration in SIMD registers (`f64x2`, present
//! on every x86-64 and aarch64); a scalar loop finishes an odd tail.
//! Intermediates stay in registers (except around calls to library
//! functions, which may spill them): nothing but the operands is read and
//! nothing but the result is written.

use super::Operand;
use super::fold::{Known, fold};
use super::lowering::{Lowering, lowering};
use crate::ir::CmpOp;
use crate::tape::FusedGroup;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, BlockArg, Function, InstBuilder, MemFlagsData, Signature, Type, Value, types,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

/// Bytes per element.
const ELEMENT: i64 = 8;

/// Fills `func` (whose signature is already set to the kernel's) with the
/// code of `group`. Fails on an operation that is not elementwise.
pub fn define(
    group: &FusedGroup,
    layout: &[Operand],
    func: &mut Function,
    context: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    call_conv: CallConv,
) -> Result<(), String> {
    let pointer = config.pointer_type();
    let known: Vec<Option<f64>> = layout.iter().map(Operand::known).collect();
    let (lowerings, known) = prepare(group, &known)?;
    let mut b = FunctionBuilder::new(func, context);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [operands, outs, len] = b.block_params(entry) else {
        unreachable!("the kernel signature has three parameters")
    };
    let (operands, outs, len) = (*operands, *outs, *len);
    let pointer_bytes = i64::from(pointer.bytes());
    let outs: Vec<Value> = (0..group.results.len())
        .map(|r| {
            let offset = i32::try_from(r as i64 * pointer_bytes).unwrap_or(i32::MAX);
            b.ins().load(pointer, MemFlagsData::trusted(), outs, offset)
        })
        .collect();
    // The operands' base pointers, loaded once.
    let bases: Vec<Value> = (0..group.inputs)
        .map(|k| {
            let offset = i32::try_from(k as i64 * i64::from(pointer.bytes())).unwrap_or(i32::MAX);
            b.ins()
                .load(pointer, MemFlagsData::trusted(), operands, offset)
        })
        .collect();
    // Uniform operands' values, as a number and in every lane.
    let uniforms: Vec<Option<(Value, Value)>> = bases
        .iter()
        .zip(layout)
        .map(|(&base, operand)| {
            (*operand == Operand::Uniform).then(|| {
                let value = b.ins().load(types::F64, MemFlagsData::trusted(), base, 0);
                (value, b.ins().splat(types::F64X2, value))
            })
        })
        .collect();
    let code = Code {
        group,
        lowerings: &lowerings,
        known: &known,
        bases: &bases,
        uniforms: &uniforms,
        outs: &outs,
        call_conv,
        pointer,
    };
    code.emit_loops(&mut b, len);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

impl Code<'_> {
    /// The loops over elements `0..len`, from the current block; the code
    /// after them goes on in the block current when this returns.
    pub(super) fn emit_loops(&self, b: &mut FunctionBuilder, len: Value) {
        let zero = b.ins().iconst(self.pointer, 0);
        // Eight elements an iteration (four pairs) while eight remain: the
        // loop's own instructions amortized, independent pairs in flight;
        // then pairs, then one at a time for the rest.
        let i = counted(b, zero, len, 8, |b, i| {
            for pair in 0..4 {
                let at = if pair == 0 {
                    i
                } else {
                    b.ins().iadd_imm_u(i, 2 * pair)
                };
                self.element(b, at, types::F64X2);
            }
        });
        let i = counted(b, i, len, 2, |b, i| self.element(b, i, types::F64X2));
        counted(b, i, len, 1, |b, i| self.element(b, i, types::F64));
    }

    /// Elements `0..n` for an `n` known when compiling: up to `STRAIGHT`
    /// elements written out (pairs, then an odd last one) with no loop and
    /// no block, the loops of `emit_loops` past that.
    pub(super) fn emit_known(&self, b: &mut FunctionBuilder, n: usize) {
        if n > STRAIGHT {
            let len = b.ins().iconst(self.pointer, n as i64);
            self.emit_loops(b, len);
            return;
        }
        let mut at = 0;
        while at + 2 <= n {
            let i = b.ins().iconst(self.pointer, at as i64);
            self.element(b, i, types::F64X2);
            at += 2;
        }
        if at < n {
            let i = b.ins().iconst(self.pointer, at as i64);
            self.element(b, i, types::F64);
        }
    }
}

/// Elements of a group with a known count that are written out without a
/// loop (`Code::emit_known`).
const STRAIGHT: usize = 8;

/// A loop from the current block running `body(i)` for `i` from `start` by
/// `stride` while `i + stride <= len`; returns the first `i` it did not
/// run (the code after it goes on in the block current on return).
fn counted(
    b: &mut FunctionBuilder,
    start: Value,
    len: Value,
    stride: i64,
    mut body: impl FnMut(&mut FunctionBuilder, Value),
) -> Value {
    let pointer = b.func.dfg.value_type(start);
    let (head, block, exit) = (b.create_block(), b.create_block(), b.create_block());
    for block in [head, block, exit] {
        b.append_block_param(block, pointer);
    }
    b.ins().jump(head, &[BlockArg::Value(start)]);
    b.switch_to_block(head);
    let i = b.block_params(head)[0];
    let next = b.ins().iadd_imm_u(i, stride);
    let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, next, len);
    b.ins().brif(
        fits,
        block,
        &[BlockArg::Value(i)],
        exit,
        &[BlockArg::Value(i)],
    );
    b.switch_to_block(block);
    let i = b.block_params(block)[0];
    body(b, i);
    let next = b.ins().iadd_imm_u(i, stride);
    b.ins().jump(head, &[BlockArg::Value(next)]);
    b.switch_to_block(exit);
    b.block_params(exit)[0]
}

/// A group's lowerings and what is known of its registers (`operands`:
/// the numbers known when compiling), after checking it.
pub(super) fn prepare(
    group: &FusedGroup,
    operands: &[Option<f64>],
) -> Result<(Vec<Lowering>, Vec<Known>), String> {
    let lowerings = group
        .steps
        .iter()
        .map(|(op, _)| lowering(op).ok_or_else(|| format!("{op} is not elementwise")))
        .collect::<Result<Vec<_>, _>>()?;
    check(group, &lowerings)?;
    Ok((lowerings, fold(group, operands)))
}

/// Refuses a malformed group: a step with the wrong number of arguments,
/// or reading a register not yet computed; a result out of range.
pub(super) fn check(group: &FusedGroup, lowerings: &[Lowering]) -> Result<(), String> {
    for (s, ((op, args), lowering)) in group.steps.iter().zip(lowerings).enumerate() {
        let arity = match lowering {
            Lowering::Constant(_) => 0,
            Lowering::Neg
            | Lowering::Abs
            | Lowering::Sqrt
            | Lowering::Round32
            | Lowering::Identity
            | Lowering::Inline(_)
            | Lowering::Unary(_) => 1,
            Lowering::Where => 3,
            _ => 2,
        };
        let available = group.inputs + s;
        if args.len() != arity || args.iter().any(|&r| usize::from(r) >= available) {
            return Err(format!(
                "step {s} ({op}) reads {args:?} of {available} registers"
            ));
        }
    }
    let registers = group.inputs + group.steps.len();
    if group.results.is_empty() || group.results.iter().any(|&r| usize::from(r) >= registers) {
        return Err("the group's results are not registers".to_string());
    }
    Ok(())
}

/// What the loop bodies need to emit a group's code.
pub(super) struct Code<'a> {
    pub(super) group: &'a FusedGroup,
    pub(super) lowerings: &'a [Lowering],
    pub(super) known: &'a [Known],
    pub(super) bases: &'a [Value],
    pub(super) uniforms: &'a [Option<(Value, Value)>],
    pub(super) outs: &'a [Value],
    pub(super) call_conv: CallConv,
    pub(super) pointer: Type,
}

impl<'a> Code<'a> {
    /// Computes elements `i..i + lanes` and stores them (`ty` is `f64` or
    /// `f64x2`).
    fn element(&self, b: &mut FunctionBuilder, i: Value, ty: Type) {
        let offset = b.ins().imul_imm_s(i, ELEMENT);
        let inputs = self.group.inputs;
        let mut values: Vec<Option<Value>> = vec![None; inputs + self.group.steps.len()];
        for (s, ((_, args), lowering)) in self.group.steps.iter().zip(self.lowerings).enumerate() {
            if self.known[inputs + s] != Known::Varies {
                continue;
            }
            let xs: smallvec::SmallVec<[Value; 3]> = args
                .iter()
                .map(|&r| self.value(b, &mut values, usize::from(r), offset, ty))
                .collect();
            values[inputs + s] = Some(self.step(b, *lowering, &xs, ty));
        }
        for (&result, &out) in self.group.results.iter().zip(self.outs) {
            let value = self.value(b, &mut values, usize::from(result), offset, ty);
            let address = b.ins().iadd(out, offset);
            b.ins().store(memory(), value, address, 0);
        }
    }

    /// Code for a group whose operands the caller passes as values (no
    /// operand is read from memory, no result is stored).
    pub(super) fn over_values(
        group: &'a FusedGroup,
        lowerings: &'a [Lowering],
        known: &'a [Known],
        call_conv: CallConv,
        pointer: Type,
    ) -> Code<'a> {
        Code {
            group,
            lowerings,
            known,
            bases: &[],
            uniforms: &[],
            outs: &[],
            call_conv,
            pointer,
        }
    }

    /// The group's results, as numbers, from its operands' values (no
    /// memory is touched).
    pub(super) fn compute(
        &self,
        b: &mut FunctionBuilder,
        operands: &[Value],
    ) -> smallvec::SmallVec<[Value; 4]> {
        let inputs = self.group.inputs;
        let mut values: Vec<Option<Value>> = operands.iter().copied().map(Some).collect();
        values.resize(inputs + self.group.steps.len(), None);
        let offset = b.ins().iconst(self.pointer, 0);
        for (s, ((_, args), lowering)) in self.group.steps.iter().zip(self.lowerings).enumerate() {
            if self.known[inputs + s] != Known::Varies {
                continue;
            }
            let xs: smallvec::SmallVec<[Value; 3]> = args
                .iter()
                .map(|&r| self.value(b, &mut values, usize::from(r), offset, types::F64))
                .collect();
            values[inputs + s] = Some(self.step(b, *lowering, &xs, types::F64));
        }
        self.group
            .results
            .iter()
            .map(|&r| self.value(b, &mut values, usize::from(r), offset, types::F64))
            .collect()
    }

    /// Register `r`'s value: a constant, a uniform operand, an operand
    /// loaded at its first use, or a step computed before.
    fn value(
        &self,
        b: &mut FunctionBuilder,
        values: &mut [Option<Value>],
        r: usize,
        offset: Value,
        ty: Type,
    ) -> Value {
        let r = match self.known[r] {
            Known::Number(c) => return constant(b, c, ty),
            Known::Same(target) => target,
            Known::Varies => r,
        };
        if let Some(value) = values[r] {
            return value;
        }
        let value = match self.uniforms.get(r).copied().flatten() {
            Some((scalar, _)) if ty == types::F64 => scalar,
            Some((_, vector)) => vector,
            None => {
                let address = b.ins().iadd(self.bases[r], offset);
                b.ins().load(ty, memory(), address, 0)
            }
        };
        values[r] = Some(value);
        value
    }

    /// One step's value from its arguments' values.
    fn step(&self, b: &mut FunctionBuilder, lowering: Lowering, x: &[Value], ty: Type) -> Value {
        match lowering {
            Lowering::Add => b.ins().fadd(x[0], x[1]),
            Lowering::Sub => b.ins().fsub(x[0], x[1]),
            Lowering::Mul => b.ins().fmul(x[0], x[1]),
            Lowering::Div => b.ins().fdiv(x[0], x[1]),
            Lowering::Min => b.ins().fmin(x[0], x[1]),
            Lowering::Max => b.ins().fmax(x[0], x[1]),
            Lowering::Neg => b.ins().fneg(x[0]),
            Lowering::Abs => b.ins().fabs(x[0]),
            Lowering::Sqrt => b.ins().sqrt(x[0]),
            Lowering::Constant(c) => constant(b, c, ty),
            Lowering::Round32 if ty == types::F64 => {
                let single = b.ins().fdemote(types::F32, x[0]);
                b.ins().fpromote(types::F64, single)
            }
            Lowering::Round32 => {
                let single = b.ins().fvdemote(x[0]);
                b.ins().fvpromote_low(single)
            }
            Lowering::Identity => x[0],
            Lowering::Compare(cmp) => {
                let holds = b.ins().fcmp(condition(cmp), x[0], x[1]);
                let (one, zero) = (constant(b, 1.0, ty), constant(b, 0.0, ty));
                select(b, holds, one, zero, ty)
            }
            Lowering::Where => {
                let zero = constant(b, 0.0, ty);
                let nonzero = b.ins().fcmp(FloatCC::NotEqual, x[0], zero);
                select(b, nonzero, x[1], x[2], ty)
            }
            Lowering::Inline(f) => super::transcendental::emit(b, f, x[0], ty),
            Lowering::Unary(f) => self.per_lane(b, f as usize, x, ty),
            Lowering::Binary(f) => self.per_lane(b, f as usize, x, ty),
        }
    }

    /// Calls the function at `address` on each lane of `x`.
    fn per_lane(&self, b: &mut FunctionBuilder, address: usize, x: &[Value], ty: Type) -> Value {
        let mut signature = Signature::new(self.call_conv);
        signature
            .params
            .extend(x.iter().map(|_| AbiParam::new(types::F64)));
        signature.returns.push(AbiParam::new(types::F64));
        let signature = b.import_signature(signature);
        let callee = b.ins().iconst(self.pointer, address as i64);
        let call = |b: &mut FunctionBuilder, args: &[Value]| {
            let call = b.ins().call_indirect(signature, callee, args);
            b.inst_results(call)[0]
        };
        if ty == types::F64 {
            return call(b, x);
        }
        let lanes: Vec<Value> = (0..ty.lane_count())
            .map(|lane| {
                let args: smallvec::SmallVec<[Value; 2]> = x
                    .iter()
                    .map(|&v| b.ins().extractlane(v, lane as u8))
                    .collect();
                call(b, &args)
            })
            .collect();
        let mut vector = b.ins().splat(ty, lanes[0]);
        for (lane, &value) in lanes.iter().enumerate().skip(1) {
            vector = b.ins().insertlane(vector, value, lane as u8);
        }
        vector
    }
}

/// Flags for the loop's loads and stores: the host's byte order,
/// unaligned.
fn memory() -> MemFlagsData {
    MemFlagsData::new()
}

/// The number `c` in every lane.
pub(super) fn constant(b: &mut FunctionBuilder, c: f64, ty: Type) -> Value {
    let scalar = b.ins().f64const(c);
    if ty == types::F64 {
        scalar
    } else {
        b.ins().splat(ty, scalar)
    }
}

/// `if condition { a } else { b }`, lane by lane; `condition` is what
/// `fcmp` gave for `ty`.
fn select(b: &mut FunctionBuilder, condition: Value, x: Value, y: Value, ty: Type) -> Value {
    if ty == types::F64 {
        b.ins().select(condition, x, y)
    } else {
        let mask = b.ins().bitcast(ty, memory(), condition);
        b.ins().bitselect(mask, x, y)
    }
}

/// The IEEE comparison Rust's operator makes (ordered, except `!=`).
fn condition(cmp: CmpOp) -> FloatCC {
    match cmp {
        CmpOp::Lt => FloatCC::LessThan,
        CmpOp::Le => FloatCC::LessThanOrEqual,
        CmpOp::Gt => FloatCC::GreaterThan,
        CmpOp::Ge => FloatCC::GreaterThanOrEqual,
        CmpOp::Eq => FloatCC::Equal,
        CmpOp::Ne => FloatCC::NotEqual,
    }
}

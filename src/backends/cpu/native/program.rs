//! A straight-line program over buffers whose sizes are known when
//! compiling, as one function: copies and zero fills, elementwise groups
//! (their intermediates in registers, two lanes at a time) and calls to
//! Rust functions for what is not elementwise (reductions), one after the
//! other with nothing in between. A loop body of a few dozen small
//! operations runs as one call instead of a dispatch per operation.
//!
//! The function is `program(bases: *const *mut f64)`: every place is an
//! element offset from one of the `bases`, which the caller passes at run
//! time (so the buffers may move between runs, and inputs differ).

use super::codegen::{Code, prepare};
use super::scalar::OwnedCode;
use crate::tape::FusedGroup;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, BlockArg, Function, InstBuilder, MemFlagsData, Signature, Type, Value, types,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use smallvec::SmallVec;
use std::sync::Arc;

/// Where the numbers of a copy come from.
#[derive(Clone, Copy)]
enum Source {
    /// As many numbers from a place.
    Place(Place),
    /// One number, repeated.
    Number(Place),
    /// Zeros.
    Zero,
}

/// Bytes per element.
const ELEMENT: usize = 8;

/// Copies up to this long are written out one element at a time.
const UNROLLED: usize = 8;

/// Element `offset` of base `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Which pointer of the table passed at run time.
    pub base: u32,
    /// Elements from that pointer.
    pub offset: usize,
}

/// An argument of a call: a place's address or a number.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// The address of a place.
    At(Place),
    /// A number known when compiling.
    Number(usize),
}

/// One instruction of a program.
#[derive(Clone, Debug)]
pub enum Piece {
    /// `len` elements from `from` to `to` (the ranges do not overlap).
    Copy {
        /// Where the elements go.
        to: Place,
        /// Where they come from.
        from: Place,
        /// How many.
        len: usize,
    },
    /// `len` copies of the number at `from`, at `to`.
    Fill {
        /// Where the copies go.
        to: Place,
        /// The number.
        from: Place,
        /// How many.
        len: usize,
    },
    /// `len` zeros at `to`.
    Zero {
        /// Where the zeros go.
        to: Place,
        /// How many.
        len: usize,
    },
    /// `group`'s one result for elements `0..n`, written from `out`;
    /// operand `k` read from `operands[k].0` (element `i` at offset `i`,
    /// or its one number for all `i` when `operands[k].1`).
    Group {
        /// The group (one result).
        group: Arc<FusedGroup>,
        /// Each operand's place, and whether it is one number.
        operands: SmallVec<[(Place, bool); 4]>,
        /// Where the results go.
        out: Place,
        /// How many elements.
        n: usize,
    },
    /// `function(args...)`: an `extern "C"` function of pointer-sized
    /// arguments returning nothing.
    Call {
        /// The function's address.
        function: usize,
        /// Its arguments.
        args: SmallVec<[Arg; 8]>,
    },
}

type Entry = unsafe extern "C" fn(*const *mut f64);

/// A compiled program.
pub struct Program {
    _code: OwnedCode,
    entry: Entry,
    bases: usize,
}

impl Program {
    pub(super) fn new(code: OwnedCode, address: *const u8, bases: usize) -> Program {
        Program {
            _code: code,
            // SAFETY: the function was defined with this signature (one
            // pointer) in the default calling convention (`extern "C"`).
            entry: unsafe { std::mem::transmute::<*const u8, Entry>(address) },
            bases,
        }
    }

    /// Runs the program.
    ///
    /// # Safety
    /// `bases` has an entry for every base the pieces name, and every
    /// place the pieces read or write lies inside its base's allocation;
    /// places written are not read through any other reference while the
    /// program runs.
    pub unsafe fn run(&self, bases: &[*mut f64]) {
        assert!(bases.len() >= self.bases, "a pointer per base");
        // SAFETY: the caller's promise.
        unsafe { (self.entry)(bases.as_ptr()) }
    }
}

/// The number of bases `pieces` name.
pub(super) fn bases_named(pieces: &[Piece]) -> usize {
    let mut most = 0;
    let mut see = |p: &Place| most = most.max(p.base as usize + 1);
    for piece in pieces {
        match piece {
            Piece::Copy { to, from, .. } => {
                see(to);
                see(from);
            }
            Piece::Zero { to, .. } => see(to),
            Piece::Fill { to, from, .. } => {
                see(to);
                see(from);
            }
            Piece::Group { operands, out, .. } => {
                see(out);
                operands.iter().for_each(|(p, _)| see(p));
            }
            Piece::Call { args, .. } => args.iter().for_each(|a| {
                if let Arg::At(p) = a {
                    see(p)
                }
            }),
        }
    }
    most
}

/// Fills `func` (one pointer parameter) with the code of `pieces`.
pub(super) fn define(
    pieces: &[Piece],
    func: &mut Function,
    context: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    call_conv: CallConv,
) -> Result<(), String> {
    let pointer = config.pointer_type();
    // Check every group before building anything.
    let prepared = pieces
        .iter()
        .map(|piece| match piece {
            Piece::Group {
                group, operands, ..
            } => {
                if operands.len() != group.inputs || group.results.len() != 1 {
                    return Err("a group's operands or results do not match".to_string());
                }
                prepare(group, &vec![None; group.inputs]).map(Some)
            }
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut b = FunctionBuilder::new(func, context);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let table = b.block_params(entry)[0];
    let emitter = Emitter {
        table,
        pointer,
        call_conv,
    };
    for (piece, prepared) in pieces.iter().zip(&prepared) {
        match (piece, prepared) {
            (Piece::Copy { to, from, len }, _) => {
                emitter.copy(&mut b, *to, Source::Place(*from), *len)
            }
            (Piece::Fill { to, from, len }, _) => {
                emitter.copy(&mut b, *to, Source::Number(*from), *len)
            }
            (Piece::Zero { to, len }, _) => emitter.copy(&mut b, *to, Source::Zero, *len),
            (
                Piece::Group {
                    group,
                    operands,
                    out,
                    n,
                },
                Some((lowerings, known)),
            ) => {
                let bases: Vec<Value> = operands
                    .iter()
                    .map(|(place, _)| emitter.address(&mut b, *place))
                    .collect();
                let uniforms: Vec<Option<(Value, Value)>> = bases
                    .iter()
                    .zip(operands)
                    .map(|(&address, (_, uniform))| {
                        uniform.then(|| {
                            let value =
                                b.ins()
                                    .load(types::F64, MemFlagsData::trusted(), address, 0);
                            (value, b.ins().splat(types::F64X2, value))
                        })
                    })
                    .collect();
                let outs = [emitter.address(&mut b, *out)];
                let code = Code {
                    group,
                    lowerings,
                    known,
                    bases: &bases,
                    uniforms: &uniforms,
                    outs: &outs,
                    call_conv,
                    pointer,
                };
                code.emit_known(&mut b, *n);
            }
            (Piece::Group { .. }, None) => unreachable!("groups are prepared"),
            (Piece::Call { function, args }, _) => emitter.call(&mut b, *function, args),
        }
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

/// What emitting a piece needs.
struct Emitter {
    table: Value,
    pointer: Type,
    call_conv: CallConv,
}

impl Emitter {
    /// The address of `place`.
    fn address(&self, b: &mut FunctionBuilder, place: Place) -> Value {
        let slot = i32::try_from(place.base as usize * self.pointer.bytes() as usize)
            .expect("`compile_program` refuses larger tables");
        let base = b
            .ins()
            .load(self.pointer, MemFlagsData::trusted(), self.table, slot);
        if place.offset == 0 {
            base
        } else {
            b.ins().iadd_imm_u(base, (place.offset * ELEMENT) as i64)
        }
    }

    /// `len` elements from `from` (zeros where `None`) to `to`: short runs
    /// element by element, longer ones in a loop of two at a time.
    fn copy(&self, b: &mut FunctionBuilder, to: Place, from: Source, len: usize) {
        if len == 0 {
            return;
        }
        let target = self.address(b, to);
        let flags = MemFlagsData::new();
        // A number repeated (zero or one read once), or the source's address.
        let (source, number) = match from {
            Source::Place(place) => (Some(self.address(b, place)), None),
            Source::Zero => (None, Some(b.ins().f64const(0.0))),
            Source::Number(place) => {
                let address = self.address(b, place);
                (None, Some(b.ins().load(types::F64, flags, address, 0)))
            }
        };
        let pair = number.map(|x| b.ins().splat(types::F64X2, x));
        let value = |b: &mut FunctionBuilder, ty: Type, at: i32| match (source, number, pair) {
            (Some(source), _, _) => b.ins().load(ty, flags, source, at),
            (None, Some(x), _) if ty == types::F64 => x,
            (None, _, Some(pair)) => pair,
            _ => unreachable!("a copy reads a place or repeats a number"),
        };
        if len <= UNROLLED {
            let mut at = 0;
            while at + 2 <= len {
                let offset = (at * ELEMENT) as i32;
                let v = value(b, types::F64X2, offset);
                b.ins().store(flags, v, target, offset);
                at += 2;
            }
            if at < len {
                let offset = (at * ELEMENT) as i32;
                let v = value(b, types::F64, offset);
                b.ins().store(flags, v, target, offset);
            }
            return;
        }
        // Pairs in a loop over byte offsets, then an odd last element.
        let pairs = (len / 2 * 2 * ELEMENT) as i64;
        let head = b.create_block();
        let body = b.create_block();
        let done = b.create_block();
        b.append_block_param(head, self.pointer);
        b.append_block_param(body, self.pointer);
        let zero = b.ins().iconst(self.pointer, 0);
        b.ins().jump(head, &[BlockArg::Value(zero)]);
        b.switch_to_block(head);
        let at = b.block_params(head)[0];
        let more = b.ins().icmp_imm_s(IntCC::SignedLessThan, at, pairs);
        b.ins().brif(more, body, &[BlockArg::Value(at)], done, &[]);
        b.switch_to_block(body);
        let at = b.block_params(body)[0];
        let v = match source {
            Some(source) => {
                let address = b.ins().iadd(source, at);
                b.ins().load(types::F64X2, flags, address, 0)
            }
            None => pair.expect("a copy reads a place or repeats a number"),
        };
        let address = b.ins().iadd(target, at);
        b.ins().store(flags, v, address, 0);
        let next = b.ins().iadd_imm_u(at, 2 * ELEMENT as i64);
        b.ins().jump(head, &[BlockArg::Value(next)]);
        b.switch_to_block(done);
        if len % 2 == 1 {
            let offset = ((len - 1) * ELEMENT) as i32;
            let v = value(b, types::F64, offset);
            b.ins().store(flags, v, target, offset);
        }
    }

    /// A call of the function at `function` with `args`.
    fn call(&self, b: &mut FunctionBuilder, function: usize, args: &[Arg]) {
        let mut signature = Signature::new(self.call_conv);
        signature
            .params
            .extend(args.iter().map(|_| AbiParam::new(self.pointer)));
        let signature = b.import_signature(signature);
        let values: SmallVec<[Value; 8]> = args
            .iter()
            .map(|arg| match arg {
                Arg::At(place) => self.address(b, *place),
                Arg::Number(n) => b.ins().iconst(self.pointer, *n as i64),
            })
            .collect();
        let callee = b.ins().iconst(self.pointer, function as i64);
        b.ins().call_indirect(signature, callee, &values);
    }
}

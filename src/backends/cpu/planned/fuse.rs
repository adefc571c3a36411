//! Runs of a plan's steps compiled as one native program (`native::
//! program`): copies, elementwise groups and reductions back to back in
//! one call, their operands' addresses fixed when compiling, instead of a
//! dispatch, a few bounds checks and a function call per step; matrix
//! products and reductions are calls from the program. Steps that need the
//! general executor (`eval_op`) and summed groups stay as they are and
//! split the runs.

use super::{Base, Operand, Run, Step, View};
use crate::backends::cpu::matmul::matmul_into;
use crate::backends::cpu::native::{self, Arg, Piece, Place};
use crate::backends::cpu::reduce::reduce_middle;
use crate::ir::op::ReduceOp;
use crate::ir::ops::reduction::logsumexp_into;
use smallvec::smallvec;

/// Fewer steps than this are left to the plan's own dispatch.
const SHORTEST: usize = 2;

/// A run is closed (compiled as one program) once it has this many
/// pieces: the compiler's register allocation grows faster than the
/// function (a traced step of 66,000 operations took minutes as one).
const LONGEST: usize = 256;

/// How places are numbered in the table of pointers a program gets:
/// the slots first, then the inputs, the constants, the scratch.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub(super) slots: u32,
    pub(super) inputs: u32,
}

impl Layout {
    fn place(&self, view: View) -> Place {
        match view.base {
            Base::Slot(s) => Place {
                base: s,
                offset: view.offset,
            },
            Base::Input(k) => Place {
                base: self.slots + k,
                offset: view.offset,
            },
            Base::Const(c) => Place {
                base: self.constants(),
                offset: c as usize + view.offset,
            },
        }
    }

    fn slot(&self, slot: u32, offset: usize) -> Place {
        Place { base: slot, offset }
    }

    fn scratch(&self, offset: usize) -> Place {
        Place {
            base: self.constants() + 1,
            offset,
        }
    }

    fn constants(&self) -> u32 {
        self.slots + self.inputs
    }

    /// How many pointers the table holds.
    pub(super) fn bases(&self) -> usize {
        self.constants() as usize + 2
    }
}

/// `steps` with every run of at least `SHORTEST` steps that compile
/// replaced by one `Step::Fused` (steps whose program fails to compile
/// stay as they were).
pub(super) fn fuse(steps: Vec<Step>, layout: Layout) -> Vec<Step> {
    let mut fused = Vec::with_capacity(steps.len());
    let mut run: Vec<Step> = Vec::new();
    let mut pieces: Vec<Piece> = Vec::new();
    for step in steps {
        let before = pieces.len();
        if pieces_of(&step, &layout, &mut pieces) {
            run.push(step);
            if pieces.len() >= LONGEST {
                close(&mut run, &mut pieces, &mut fused);
            }
            continue;
        }
        pieces.truncate(before);
        close(&mut run, &mut pieces, &mut fused);
        fused.push(step);
    }
    close(&mut run, &mut pieces, &mut fused);
    fused
}

/// Ends a run: compiled as one step where long enough and it compiles.
fn close(run: &mut Vec<Step>, pieces: &mut Vec<Piece>, fused: &mut Vec<Step>) {
    if run.len() >= SHORTEST
        && let Ok(program) = native::compile_program(pieces)
    {
        fused.push(Step::Fused { program });
        run.clear();
    }
    fused.append(run);
    pieces.clear();
}

/// Appends `step`'s pieces; false when it cannot be part of a program.
fn pieces_of(step: &Step, layout: &Layout, pieces: &mut Vec<Piece>) -> bool {
    match step {
        Step::Keep { out, source } => {
            pieces.push(Piece::Copy {
                to: layout.slot(*out, 0),
                from: layout.place(*source),
                len: source.len,
            });
        }
        Step::Move { out, sources, runs } => {
            let sources: Vec<Place> = sources.iter().map(|v| layout.place(*v)).collect();
            moves(runs, &sources, layout.slot(*out, 0), pieces);
        }
        Step::Elementwise {
            out,
            group,
            operands,
            n,
            sum: false,
            ..
        } => {
            let mut places = smallvec![];
            for operand in operands {
                places.push(match operand {
                    Operand::Full(view) => (layout.place(*view), false),
                    Operand::Scalar(view, _) => (layout.place(*view), true),
                    Operand::Spread(view, runs, at) => {
                        let into = layout.scratch(*at);
                        moves(runs, &[layout.place(*view)], into, pieces);
                        (into, false)
                    }
                });
            }
            pieces.push(Piece::Group {
                group: group.clone(),
                operands: places,
                out: layout.slot(*out, 0),
                n: *n,
            });
        }
        Step::Reduce {
            out,
            op,
            source,
            outer,
            reduced,
            inner,
        } => pieces.push(Piece::Call {
            function: reduce_call as *const () as usize,
            args: smallvec![
                Arg::Number(reduce_code(*op)),
                Arg::At(layout.place(*source)),
                Arg::Number(*outer),
                Arg::Number(*reduced),
                Arg::Number(*inner),
                Arg::At(layout.slot(*out, 0)),
            ],
        }),
        Step::LogSumExp {
            out,
            source,
            outer,
            reduced,
            inner,
        } => pieces.push(Piece::Call {
            function: logsumexp_call as *const () as usize,
            args: smallvec![
                Arg::At(layout.place(*source)),
                Arg::Number(*outer),
                Arg::Number(*reduced),
                Arg::Number(*inner),
                Arg::At(layout.slot(*out, 0)),
            ],
        }),
        Step::Gemm { out, a, b, ta, tb } => pieces.push(Piece::Call {
            function: gemm_call as *const () as usize,
            args: smallvec![
                Arg::At(layout.place(a.0)),
                Arg::Number(a.1[0]),
                Arg::Number(a.1[1]),
                Arg::At(layout.place(b.0)),
                Arg::Number(b.1[0]),
                Arg::Number(b.1[1]),
                Arg::Number(usize::from(*ta) | usize::from(*tb) << 1),
                Arg::At(layout.slot(*out, 0)),
            ],
        }),
        _ => return false,
    }
    true
}

/// A movement's runs as copies and zero fills from `sources` to `to`.
fn moves(runs: &[Run], sources: &[Place], to: Place, pieces: &mut Vec<Piece>) {
    for run in runs {
        let target = Place {
            base: to.base,
            offset: to.offset + run.to,
        };
        pieces.push(match run.from {
            Some((k, from)) if run.fill && run.len > 1 => Piece::Fill {
                to: target,
                from: Place {
                    base: sources[k as usize].base,
                    offset: sources[k as usize].offset + from,
                },
                len: run.len,
            },
            Some((k, from)) => Piece::Copy {
                to: target,
                from: Place {
                    base: sources[k as usize].base,
                    offset: sources[k as usize].offset + from,
                },
                len: run.len,
            },
            None => Piece::Zero {
                to: target,
                len: run.len,
            },
        });
    }
}

const REDUCE_OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

fn reduce_code(op: ReduceOp) -> usize {
    REDUCE_OPS
        .iter()
        .position(|o| *o == op)
        .expect("every fold is listed")
}

/// A reduction's source, seen as `[outer, reduced, inner]`, and its
/// result, `[outer, inner]`.
///
/// # Safety
/// `source` and `out` point to that many numbers, not overlapping.
unsafe fn middle<'a>(
    source: *const f64,
    out: *mut f64,
    (outer, reduced, inner): (usize, usize, usize),
) -> (&'a [f64], &'a mut [f64]) {
    // SAFETY: the caller's promise.
    unsafe {
        (
            std::slice::from_raw_parts(source, outer * reduced * inner),
            std::slice::from_raw_parts_mut(out, outer * inner),
        )
    }
}

/// `matmul_into` for generated code: `flags` bit 0 transposes `a`, bit 1
/// `b`.
#[allow(clippy::too_many_arguments)]
extern "C" fn gemm_call(
    a: *const f64,
    a_rows: usize,
    a_cols: usize,
    b: *const f64,
    b_rows: usize,
    b_cols: usize,
    flags: usize,
    out: *mut f64,
) {
    let (ta, tb) = (flags & 1 == 1, flags & 2 == 2);
    let rows = if ta { a_cols } else { a_rows };
    let cols = if tb { b_rows } else { b_cols };
    // SAFETY: the plan sized both operands and the slot for these shapes
    // (`Step::Gemm`), and the slot is neither operand.
    let (a, b, out) = unsafe {
        (
            std::slice::from_raw_parts(a, a_rows * a_cols),
            std::slice::from_raw_parts(b, b_rows * b_cols),
            std::slice::from_raw_parts_mut(out, rows * cols),
        )
    };
    matmul_into((a, [a_rows, a_cols], ta), (b, [b_rows, b_cols], tb), out);
}

/// `reduce_middle` for generated code.
extern "C" fn reduce_call(
    op: usize,
    source: *const f64,
    outer: usize,
    reduced: usize,
    inner: usize,
    out: *mut f64,
) {
    // SAFETY: the plan sized the source and the slot for these numbers
    // (`Step::Reduce`), and the slot is not the source.
    let (values, out) = unsafe { middle(source, out, (outer, reduced, inner)) };
    reduce_middle(REDUCE_OPS[op], values, (outer, reduced, inner), out);
}

/// `logsumexp_into` for generated code.
extern "C" fn logsumexp_call(
    source: *const f64,
    outer: usize,
    reduced: usize,
    inner: usize,
    out: *mut f64,
) {
    // SAFETY: the plan sized the source and the slot for these numbers
    // (`Step::LogSumExp`), and the slot is not the source.
    let (values, out) = unsafe { middle(source, out, (outer, reduced, inner)) };
    logsumexp_into(values, (reduced, inner), out);
}

//! Planning the device work of operations that are more than one kernel:
//! an operation's device solve (solver routines, products, kernels and
//! failure checks, `ir::ops::solver`) as commands, and the check of the
//! positions an indexing operation reads.

use super::{Buffer, Command, Operand, Place, Planner};
use crate::backends::cuda::launch;
use crate::ir::ops::solver::{DeviceSolve, Failure, Slot, Step as SolveStep};
use smallvec::SmallVec;

impl Planner {
    /// An operation as solver routines and kernels on the device
    /// (`DeviceSolve`): the result and scratch buffers taken, each step a
    /// command, the failure codes checked at the end of the run.
    pub(super) fn device_solve(
        &mut self,
        op: &crate::ir::ops::Op,
        solve: &DeviceSolve,
        args: &[Place],
        shape: &[usize],
    ) -> Place {
        let owned: Vec<Place> = args.iter().map(|a| self.on_device(a)).collect();
        let zeroed = |slot: Slot| {
            solve.steps.iter().any(|step| {
                matches!(step, SolveStep::Kernel { kernel, writes, .. } if kernel.zeroed && *writes == slot)
            })
        };
        let out = self.alloc(shape.iter().product::<usize>().max(1), zeroed(Slot::Out));
        let scratch: Vec<Buffer> = (0..solve.scratch.len())
            .map(|k| self.alloc(solve.scratch[k], zeroed(Slot::Scratch(k as u8))))
            .collect();
        let buffer = |slot: &Slot| match *slot {
            Slot::Operand(k) => owned[k as usize].buffer().unwrap_or(out),
            Slot::Out => out,
            Slot::Scratch(k) => scratch[k as usize],
        };
        for step in &solve.steps {
            let command = match step {
                SolveStep::Kernel {
                    kernel,
                    reads,
                    writes,
                } => {
                    if kernel.threads == 0 {
                        continue;
                    }
                    let mut operands: SmallVec<[Operand; 6]> =
                        SmallVec::from_elem(Operand::Int(kernel.threads as i64), 1);
                    operands.extend(reads.iter().map(|r| Operand::Buffer(buffer(r))));
                    Command::Launch {
                        launch: launch::table(kernel),
                        operands,
                        out: buffer(writes),
                    }
                }
                SolveStep::Product {
                    a,
                    b,
                    out,
                    n,
                    batch,
                } => Command::Gemm {
                    // Row-major `a b` is column-major `bᵀ aᵀ`.
                    call: launch::GemmCall {
                        transa: false,
                        transb: false,
                        m: *n,
                        n: *n,
                        k: *n,
                        lda: *n,
                        ldb: *n,
                        ldc: *n,
                        batch: *batch,
                        stride_a: n * n,
                        stride_b: n * n,
                        stride_c: n * n,
                        broadcast: [None, None],
                    },
                    operands: (buffer(b), buffer(a)),
                    out: buffer(out),
                    single: false,
                },
                SolveStep::Copy { from, at, to, len } => Command::Copy {
                    src: buffer(from),
                    from: *at,
                    dst: buffer(to),
                    to: 0,
                    len: *len,
                },
                SolveStep::Routine {
                    routine,
                    reads,
                    writes,
                } => Command::Routine {
                    routine: *routine,
                    reads: reads.iter().map(buffer).collect(),
                    writes: writes.iter().map(buffer).collect(),
                },
                SolveStep::Check {
                    codes,
                    count,
                    failure,
                } => Command::Check {
                    op: op.clone(),
                    codes: buffer(codes),
                    count: *count,
                    failure: *failure,
                },
            };
            self.commands.push(command);
        }
        let checked: Vec<Buffer> = solve
            .steps
            .iter()
            .filter_map(|step| match step {
                SolveStep::Check { codes, .. } => Some(buffer(codes)),
                _ => None,
            })
            .collect();
        for buffer in scratch {
            self.buffers[buffer as usize].users = 0;
            if checked.contains(&buffer) {
                self.held.push(buffer);
            } else {
                self.commands.push(Command::Release(buffer));
            }
        }
        for value in owned {
            self.drop_value(value);
        }
        Place::Device {
            buffer: out,
            shape: shape.into(),
        }
    }

    /// A check that every position in `positions` is whole and in range
    /// for an axis of `len` elements, read at the end of the run (the
    /// kernel reading them writes NaN or skips a bad one).
    pub(super) fn check_positions(
        &mut self,
        op: &crate::ir::ops::Op,
        positions: &Place,
        len: usize,
    ) {
        let count: usize = positions.shape().iter().product();
        let Some(source) = positions.buffer().filter(|_| count > 0) else {
            return;
        };
        if self.checked.contains(&(source, len)) {
            return;
        }
        self.checked.push((source, len));
        let failure = Failure::BadIndex { len };
        let codes = self.alloc(failure.slots(1), false);
        let kernel = crate::ir::ops::solver::position_check(count, len);
        self.commands.push(Command::Launch {
            launch: launch::table(&kernel),
            operands: SmallVec::from_slice(&[
                Operand::Int(kernel.threads as i64),
                Operand::Buffer(source),
            ]),
            out: codes,
        });
        self.commands.push(Command::Check {
            op: op.clone(),
            codes,
            count: 1,
            failure,
        });
        self.held.push(codes);
    }
}

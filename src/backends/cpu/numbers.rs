//! Tapes over numbers as register programs: a tape whose every value is
//! one number (a scalar function unrolled by tracing, its Taylor
//! coefficients, a loop body over numbers) flattened into one list of
//! register steps with a result per output.
//!
//! The general executor spends tens of nanoseconds per instruction on
//! bookkeeping made for tensors (operand views, slot storage, the memory
//! accounting); a register step costs a few. Loops over numbers
//! (`loops::scalar`) run their bodies from these programs, compiled to
//! native code; a tape called from outside runs its program interpreted
//! ([`run_tape`]), prepared at its first run and kept per thread: nothing
//! to compile, so a tape run once pays no more than the executor would.

use super::Buf;
use super::elementwise::apply_chunk;
use super::native;
use crate::backends::BackendError;
use crate::ir::TOp;
use crate::ir::math::language::Math;
use crate::tape::{FusedGroup, Kernel as TapeKernel, Tape};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;

/// A register: inputs first, then one per step.
type Register = u16;

/// One step as the interpreter runs it: the arithmetic inline, the rest
/// through the elementwise table (`apply_chunk`).
#[derive(Clone, Copy, Debug)]
enum Code {
    Add(Register, Register),
    Sub(Register, Register),
    Mul(Register, Register),
    Div(Register, Register),
    Neg(Register),
    Constant(f64),
    /// Step `k` of the group, run by its row.
    Row(u32),
}

/// A tape over numbers as one register program.
pub struct NumberProgram {
    /// The steps as an elementwise group over the tape's inputs (what
    /// native code compiles).
    pub group: FusedGroup,
    code: Vec<Code>,
    kernel: Option<native::FlatKernel>,
}

impl NumberProgram {
    /// The program of `tape`, when every value is a number and every
    /// instruction elementwise (a constant, an input, a fused group
    /// without a sum, or a view that changes nothing). Compiled to native
    /// code when `compile` and native kernels are on.
    pub fn from_tape(tape: &Tape, compile: bool) -> Option<NumberProgram> {
        if tape.input_shapes.iter().any(|s| !s.is_empty()) {
            return None;
        }
        let inputs = tape.input_shapes.len();
        let registers: usize = inputs
            + tape
                .instructions
                .iter()
                .map(|i| match &i.op {
                    TapeKernel::Fused(group) => group.steps.len(),
                    _ => 1,
                })
                .sum::<usize>();
        if registers > usize::from(Register::MAX) {
            return None;
        }
        let mut steps: Vec<(TOp, SmallVec<[Register; 3]>)> = Vec::new();
        let mut register_of: FxHashMap<u32, Register> = FxHashMap::default();
        let next = |steps: &Vec<(TOp, SmallVec<[Register; 3]>)>| (inputs + steps.len()) as Register;
        for instruction in &tape.instructions {
            if !instruction.shape.is_empty() {
                return None;
            }
            let args: SmallVec<[Register; 3]> = instruction
                .args
                .iter()
                .map(|s| register_of.get(s).copied())
                .collect::<Option<_>>()?;
            let out = match &instruction.op {
                TapeKernel::Op(TOp::Input { index, .. }) => *index as Register,
                TapeKernel::Op(TOp::Scalar(c)) => {
                    let r = next(&steps);
                    steps.push((TOp::Map(Math::Num(*c)), SmallVec::new()));
                    r
                }
                TapeKernel::Op(TOp::StopGradient | TOp::Tag(_) | TOp::Reshape(_)) => {
                    *args.first()?
                }
                TapeKernel::Op(op) if op.is_elementwise() => {
                    let r = next(&steps);
                    steps.push((op.clone(), args));
                    r
                }
                TapeKernel::Fused(group) if group.sum_over.is_none() => {
                    // The group's registers: its operands are `args`.
                    let mut map: Vec<Register> = args.to_vec();
                    for (op, operands) in &group.steps {
                        let operands = operands.iter().map(|&o| map[usize::from(o)]).collect();
                        map.push(next(&steps));
                        steps.push((op.clone(), operands));
                    }
                    map[usize::from(group.results[0])]
                }
                _ => return None,
            };
            register_of.insert(instruction.out, out);
        }
        let results = tape
            .outputs
            .iter()
            .map(|s| register_of.get(s).copied())
            .collect::<Option<_>>()?;
        let code = steps
            .iter()
            .enumerate()
            .map(|(k, (op, args))| code_of(k, op, args))
            .collect();
        let group = FusedGroup {
            inputs,
            steps,
            results,
            sum_over: None,
        };
        let kernel = (compile && native::native_kernels())
            .then(|| native::compile_flat(&group).ok())
            .flatten();
        Some(NumberProgram {
            group,
            code,
            kernel,
        })
    }

    /// The number of registers a run needs.
    fn registers(&self) -> usize {
        self.group.inputs + self.code.len()
    }

    /// Runs the program on numbers.
    pub fn run(&self, inputs: &[f64], outputs: &mut [f64]) {
        if let Some(kernel) = &self.kernel {
            kernel.run(inputs, outputs);
            return;
        }
        if self.registers() <= 64 {
            let mut registers = [0.0; 64];
            self.interpret(inputs, &mut registers);
            self.read(&registers, outputs);
        } else {
            let mut registers = vec![0.0; self.registers()];
            self.interpret(inputs, &mut registers);
            self.read(&registers, outputs);
        }
    }

    /// Every step in order, into `registers` (inputs first).
    fn interpret(&self, inputs: &[f64], registers: &mut [f64]) {
        let n = self.group.inputs;
        registers[..n].copy_from_slice(&inputs[..n]);
        for (k, code) in self.code.iter().enumerate() {
            let r = |i: Register| registers[usize::from(i)];
            let value = match *code {
                Code::Add(a, b) => r(a) + r(b),
                Code::Sub(a, b) => r(a) - r(b),
                Code::Mul(a, b) => r(a) * r(b),
                Code::Div(a, b) => r(a) / r(b),
                Code::Neg(a) => -r(a),
                Code::Constant(c) => c,
                Code::Row(step) => {
                    let (op, args) = &self.group.steps[step as usize];
                    let numbers: SmallVec<[[f64; 1]; 3]> = args.iter().map(|&a| [r(a)]).collect();
                    let ins: SmallVec<[&[f64]; 3]> = numbers.iter().map(|x| &x[..]).collect();
                    let mut out = [0.0];
                    apply_chunk(op, &ins, &mut out);
                    out[0]
                }
            };
            registers[n + k] = value;
        }
    }

    fn read(&self, registers: &[f64], outputs: &mut [f64]) {
        for (out, &r) in outputs.iter_mut().zip(&self.group.results) {
            *out = registers[usize::from(r)];
        }
    }
}

/// How the interpreter runs step `k`.
fn code_of(k: usize, op: &TOp, args: &[Register]) -> Code {
    match (op, args) {
        (TOp::Map(Math::Add(_)), &[a, b]) => Code::Add(a, b),
        (TOp::Map(Math::Sub(_)), &[a, b]) => Code::Sub(a, b),
        (TOp::Map(Math::Mul(_)), &[a, b]) => Code::Mul(a, b),
        (TOp::Map(Math::Div(_)), &[a, b]) => Code::Div(a, b),
        (TOp::Map(Math::Neg(_)), &[a]) => Code::Neg(a),
        (TOp::Map(Math::Num(c)), []) => Code::Constant(c.get()),
        _ => Code::Row(k as u32),
    }
}

/// Programs kept per thread (emptied when it grows past this).
const MAX_PROGRAMS: usize = 256;

thread_local! {
    static PROGRAMS: RefCell<FxHashMap<u64, Option<Rc<NumberProgram>>>> = RefCell::default();
}

/// Runs `tape` as a register program when it is one over numbers (see
/// the module's docs); `None` when it is not, for the general executor.
pub fn run_tape(tape: &Tape, inputs: &[Buf]) -> Option<Result<Vec<Buf>, BackendError>> {
    // A memory budget is the general executor's to keep (it frees and
    // recomputes as the tape was compiled to); every register lives
    // through a run.
    if tape.stats.memory_budget.is_some() || tape.output_shapes.iter().any(|s| !s.is_empty()) {
        return None;
    }
    let program = match PROGRAMS.with(|p| p.borrow().get(&tape.id).cloned()) {
        Some(found) => found?,
        None => {
            let made = NumberProgram::from_tape(tape, false).map(Rc::new);
            PROGRAMS.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() >= MAX_PROGRAMS {
                    p.clear();
                }
                p.insert(tape.id, made.clone());
            });
            made?
        }
    };
    if let Err(e) = crate::backends::check_inputs(tape, inputs.iter().map(Buf::shape)) {
        return Some(Err(e));
    }
    let numbers: SmallVec<[f64; 8]> = inputs
        .iter()
        .map(|b| match b {
            Buf::Scalar(x) => *x,
            Buf::Array(a) => a.iter().next().copied().unwrap_or(f64::NAN),
        })
        .collect();
    let mut outputs: SmallVec<[f64; 8]> = SmallVec::from_elem(0.0, tape.outputs.len());
    let bytes = 8 * program.registers();
    super::measure::alive(bytes);
    program.run(&numbers, &mut outputs);
    super::measure::dead(bytes);
    Some(Ok(outputs.into_iter().map(Buf::Scalar).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::execute::run;
    use crate::dtype::DType;
    use crate::ir::TensorGraph;
    use crate::ir::op::CmpOp;
    use crate::tape::compile::compile;
    use egg::{Id, RecExpr};

    fn unary(g: &mut TensorGraph, math: Math, x: Id) -> Id {
        g.map(math, &[x])
    }

    /// A program over two numbers with every kind of step: inline
    /// arithmetic, rows of the table, a comparison and a `where`,
    /// constants; three results.
    fn numbers_program() -> (TensorGraph, Vec<Id>) {
        let zero = Id::from(0);
        let mut g = TensorGraph::new();
        let x = g.input(0, &[], DType::F64);
        let y = g.input(1, &[], DType::F64);
        let half = g.scalar(0.5).unwrap();
        let s = unary(&mut g, Math::Sin([zero]), x);
        let e = unary(&mut g, Math::Exp([zero]), y);
        let p = g.map(Math::Mul([zero; 2]), &[s, e]);
        let q = g.map(Math::Div([zero; 2]), &[p, y]);
        let r = g.map(Math::Sub([zero; 2]), &[q, half]);
        let n = unary(&mut g, Math::Neg([zero]), r);
        let w = g.map(Math::Pow([zero; 2]), &[e, half]);
        let t = unary(&mut g, Math::Tanh([zero]), n);
        let c = g.add(TOp::Compare(CmpOp::Lt), &[x, y]).unwrap();
        let picked = g.add(TOp::Where, &[c, t, w]).unwrap();
        let total = g.map(Math::Add([zero; 2]), &[picked, n]);
        (g, vec![total, w, r])
    }

    fn tape_of(graph: &TensorGraph, roots: &[Id], shapes: &[Vec<usize>]) -> Tape {
        let program = RecExpr::from(graph.nodes().to_vec());
        let input_shapes: Vec<_> = shapes.iter().map(|s| s.as_slice().into()).collect();
        compile(&program, graph.shapes(), roots, &input_shapes)
    }

    #[test]
    fn register_programs_agree_with_the_executor_bit_for_bit() {
        let (graph, roots) = numbers_program();
        let tape = tape_of(&graph, &roots, &[vec![], vec![]]);
        for (x, y) in [(0.3, 1.7), (2.0, -0.4), (-1.5, 0.9), (0.0, 0.0)] {
            let inputs = [Buf::Scalar(x), Buf::Scalar(y)];
            let expected = run(&tape, &inputs).unwrap();
            let got = run_tape(&tape, &inputs)
                .expect("a tape over numbers")
                .unwrap();
            // Interpreted, then compiled to native code.
            let compiled = NumberProgram::from_tape(&tape, true).unwrap();
            let mut native = [0.0; 3];
            compiled.run(&[x, y], &mut native);
            for (k, e) in expected.iter().enumerate() {
                let Buf::Scalar(e) = e else {
                    panic!("numbers out")
                };
                let Buf::Scalar(g) = got[k] else {
                    panic!("numbers out")
                };
                assert_eq!(
                    g.to_bits(),
                    e.to_bits(),
                    "result {k} at ({x}, {y}): {g} vs {e}"
                );
                assert!(
                    (native[k] - e).abs() <= 1e-14 * (1.0 + e.abs())
                        || (native[k].is_nan() && e.is_nan()),
                    "native result {k} at ({x}, {y}): {} vs {e}",
                    native[k]
                );
            }
        }
    }

    #[test]
    fn tapes_with_arrays_are_left_to_the_executor() {
        let mut g = TensorGraph::new();
        let x = g.input(0, &[3], DType::F64);
        let s = g.map(Math::Sin([Id::from(0)]), &[x]);
        let tape = tape_of(&g, &[s], &[vec![3]]);
        let inputs = [Buf::Array(Rc::new(ndarray::ArrayD::zeros(ndarray::IxDyn(
            &[3],
        ))))];
        assert!(run_tape(&tape, &inputs).is_none());
    }

    #[test]
    fn wrong_inputs_are_refused_with_their_shapes() {
        let (graph, roots) = numbers_program();
        let tape = tape_of(&graph, &roots, &[vec![], vec![]]);
        let inputs = [Buf::Scalar(1.0)];
        let error = run_tape(&tape, &inputs)
            .expect("a tape over numbers")
            .unwrap_err();
        assert!(
            error.to_string().contains("takes 2 inputs, got 1"),
            "{error}"
        );
    }
}

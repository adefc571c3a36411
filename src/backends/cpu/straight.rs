//! Straight-line scalar programs: a traced program every value of which is
//! one number (a scalar loop written in Lisp and unrolled by tracing, such
//! as a time-stepping recurrence) kept as a flat list of scalar steps, its
//! gradient computed by one forward and one reverse pass over that list,
//! its directional derivative by one forward pass.
//!
//! Such a program gains nothing from the tensor pipeline: each of its
//! operations is one scalar, so a compiled tape would run one kernel call
//! per operation, after a symbolic reverse sweep that doubles the program
//! and a compiler that builds its tables node by node. Built here, the
//! program costs one pass over the trace (the operations it reaches, in
//! order, renumbered), and a gradient costs two passes over it: values
//! forward, cotangents backward, with each operator's local partial
//! derivatives taken from the one table of them (`ir::math::partials`,
//! evaluated on numbers by [`Numbers`]) and its value from the one
//! evaluator of scalar operators (`ir::math::eval::apply_op`). Nothing is
//! hashed or allocated per operation beyond the step itself.
//!
//! [`StraightLine::build`] says whether a program qualifies: what the
//! result reaches must be scalar inputs, constants, scalar operators
//! (`TOp::Map`) and stopped gradients, of the f64 or weak type (f32
//! rounding and user functions go through the tensor pipeline).

use super::Buf;
use crate::dtype::DType;
use crate::ir::TOp;
use crate::ir::TensorGraph;
use crate::ir::flat::{FLAT_BASE, FlatScalars, is_flat};
use crate::ir::math::eval::apply_op;
use crate::ir::math::functions::NO_FUNCTIONS;
use crate::ir::math::language::Math;
use crate::ir::math::partials::{PartialBuilder, local_partials};
use egg::{Id, Language};
use smallvec::SmallVec;

/// One step of a straight-line program; operands are earlier steps.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The run-time input of this index.
    Input(u32),
    /// A constant.
    Constant(f64),
    /// A scalar operator (an index into `StraightLine::operators`) over
    /// earlier steps (the second unused by a unary operator).
    Map { operator: u8, operands: [u32; 2] },
    /// The value of an earlier step, with derivative zero.
    StopGradient(u32),
}

/// A scalar straight-line program with one result, ready to give its value
/// and gradient with respect to chosen inputs.
#[derive(Clone, Debug)]
pub struct StraightLine {
    steps: Vec<Step>,
    /// The operators the steps apply, each with the operand positions as
    /// its children (`Id(0)`, `Id(1)`), so the value and partials tables
    /// read a step's operands through its `operands`.
    operators: Vec<Math>,
    /// The step of the result.
    output: u32,
    /// For each differentiated input node asked for, its step (`None`:
    /// the result does not reach it, so its gradient is zero).
    targets: Vec<Option<u32>>,
}

/// Why a run stopped before its end.
#[derive(Clone, Debug, PartialEq)]
pub enum StraightError {
    /// An input the program reads is not a number.
    NotScalarInput(u32),
    /// The interrupt flag was raised (`backends::cpu::cancel`).
    Interrupted,
}

/// How many steps run between two looks at the interrupt flag.
const CANCEL_EVERY: usize = 1 << 16;

impl StraightLine {
    /// The straight-line program computing `output` of a trace — graph
    /// nodes of `graph` and steps of its flat arena `flat` (`output` and
    /// the operands may be either) — differentiable with respect to
    /// `targets` (graph nodes); `None` when what `output` reaches is not
    /// all scalar operations of the f64 or weak type.
    pub fn build(
        graph: &TensorGraph,
        flat: &FlatScalars,
        output: Id,
        targets: &[Id],
    ) -> Option<StraightLine> {
        // What the output reaches: arena steps first (their operands are
        // earlier steps or graph nodes), then graph nodes (whose operands
        // are graph nodes).
        let flat_upto = match is_flat(output) {
            true => usize::from(output) - FLAT_BASE + 1,
            false => 0,
        };
        let graph_upto = match is_flat(output) {
            true => graph.len(),
            false => usize::from(output) + 1,
        };
        let mut flat_reached = vec![false; flat_upto];
        let mut graph_reached = vec![false; graph_upto];
        let reach =
            |id: Id, flat_reached: &mut [bool], graph_reached: &mut [bool]| match is_flat(id) {
                true => flat_reached[usize::from(id) - FLAT_BASE] = true,
                false => graph_reached[usize::from(id)] = true,
            };
        reach(output, &mut flat_reached, &mut graph_reached);
        for index in (0..flat_upto).rev() {
            if flat_reached[index] {
                for &child in flat.operands(index) {
                    reach(child, &mut flat_reached, &mut graph_reached);
                }
            }
        }
        let nodes = graph.nodes();
        for index in (0..graph_upto).rev() {
            if !graph_reached[index] {
                continue;
            }
            let id = Id::from(index);
            if !graph.shape(id).is_empty() || graph.dtype(id) == DType::F32 {
                return None;
            }
            let node = &nodes[index];
            match &node.op {
                TOp::Input { .. } | TOp::Scalar(_) | TOp::StopGradient => {}
                TOp::Map(Math::Call(..)) => return None,
                TOp::Map(_) => {}
                _ => return None,
            }
            for &child in &node.children {
                graph_reached[usize::from(child)] = true;
            }
        }
        // (Arena steps are f64 or weak scalar operators, never calls.)
        // Steps in order: the graph nodes reached, then the arena steps.
        const UNREACHED: u32 = u32::MAX;
        let mut graph_step = vec![UNREACHED; graph_upto];
        let mut flat_step = vec![UNREACHED; flat_upto];
        let count = graph_reached
            .iter()
            .chain(&flat_reached)
            .filter(|&&r| r)
            .count();
        let mut steps = Vec::new();
        steps.try_reserve_exact(count).ok()?;
        let mut operators = Operators::default();
        let step_of = |id: Id, graph_step: &[u32], flat_step: &[u32]| -> u32 {
            match is_flat(id) {
                true => flat_step[usize::from(id) - FLAT_BASE],
                false => graph_step[usize::from(id)],
            }
        };
        for (index, node) in nodes[..graph_upto].iter().enumerate() {
            if !graph_reached[index] {
                continue;
            }
            let step = match &node.op {
                TOp::Input { index, .. } => Step::Input(*index),
                TOp::Scalar(constant) => Step::Constant(constant.get()),
                TOp::StopGradient => Step::StopGradient(graph_step[usize::from(node.children[0])]),
                TOp::Map(math) => {
                    let operands = node.children.iter().map(|&c| graph_step[usize::from(c)]);
                    map_step(operators.index(math)?, operands)
                }
                _ => unreachable!("only scalar operations are reached"),
            };
            graph_step[index] = steps.len() as u32;
            steps.push(step);
        }
        // The arena's operators, each looked up here once.
        let mut remap: Vec<Option<u8>> = vec![None; flat.operators().len()];
        for (index, &reached) in flat_reached.iter().enumerate() {
            if !reached {
                continue;
            }
            let arena_operator = flat.operator(index);
            let operator = match remap[arena_operator] {
                Some(operator) => operator,
                None => {
                    let operator = operators.index(&flat.operators()[arena_operator])?;
                    remap[arena_operator] = Some(operator);
                    operator
                }
            };
            let operands = flat
                .operands(index)
                .iter()
                .map(|&c| step_of(c, &graph_step, &flat_step));
            let step = map_step(operator, operands);
            flat_step[index] = steps.len() as u32;
            steps.push(step);
        }
        let targets = targets
            .iter()
            .map(|&t| {
                let step = match is_flat(t) {
                    true => flat_step.get(usize::from(t) - FLAT_BASE),
                    false => graph_step.get(usize::from(t)),
                };
                step.copied().filter(|&s| s != UNREACHED)
            })
            .collect();
        Some(StraightLine {
            output: step_of(output, &graph_step, &flat_step),
            steps,
            operators: operators.0,
            targets,
        })
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there are no steps (never: the result is one).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The result and its gradient with respect to each target, at the
    /// run-time `inputs` (by input index).
    pub fn value_and_gradient(&self, inputs: &[Buf]) -> Result<(f64, Vec<f64>), StraightError> {
        let values = self.values(inputs)?;
        let mut cotangents = vec![0.0; self.steps.len()];
        cotangents[self.output as usize] = 1.0;
        for index in (0..=self.output as usize).rev() {
            if index % CANCEL_EVERY == 0 && crate::backends::cpu::cancel::requested() {
                return Err(StraightError::Interrupted);
            }
            let g = cotangents[index];
            self.for_each_partial(index, &values, |operand, partial| {
                cotangents[operand as usize] += g * partial;
            });
        }
        let gradient = self
            .targets
            .iter()
            .map(|t| t.map_or(0.0, |s| cotangents[s as usize]))
            .collect();
        Ok((values[self.output as usize], gradient))
    }

    /// The result and its directional derivative along `tangents` (one
    /// number per target), at the run-time `inputs`: one forward pass of
    /// values and tangents.
    pub fn value_and_tangent(
        &self,
        inputs: &[Buf],
        tangents: &[f64],
    ) -> Result<(f64, f64), StraightError> {
        let values = self.values(inputs)?;
        // Only steps that depend on a target carry a tangent (as in the
        // forward sweep): a constant's infinite partial never meets its
        // zero tangent.
        let mut dots: Vec<Option<f64>> = vec![None; self.steps.len()];
        for (target, &tangent) in self.targets.iter().zip(tangents) {
            if let Some(step) = target {
                *dots[*step as usize].get_or_insert(0.0) += tangent;
            }
        }
        for index in 0..=self.output as usize {
            if index % CANCEL_EVERY == 0 && crate::backends::cpu::cancel::requested() {
                return Err(StraightError::Interrupted);
            }
            if let Step::Map { .. } = self.steps[index] {
                let mut dot = None;
                self.for_each_partial(index, &values, |operand, partial| {
                    if let Some(tangent) = dots[operand as usize] {
                        *dot.get_or_insert(0.0) += partial * tangent;
                    }
                });
                dots[index] = dot;
            }
        }
        let output = self.output as usize;
        Ok((values[output], dots[output].unwrap_or(0.0)))
    }

    /// Calls `each(operand, partial)` for each operand of step `index` (an
    /// operator; nothing for another step) with a derivative, its partial
    /// evaluated at `values`.
    fn for_each_partial(&self, index: usize, values: &[f64], mut each: impl FnMut(u32, f64)) {
        let Step::Map { operator, operands } = self.steps[index] else {
            return;
        };
        let math = &self.operators[operator as usize];
        let mut numbers = Numbers {
            known: [
                values[operands[0] as usize],
                values[operands[1] as usize],
                values[index],
            ],
            made: SmallVec::new(),
        };
        let partials = local_partials(math, Id::from(2), &mut numbers, &NO_FUNCTIONS);
        for (&operand, partial) in operands.iter().zip(partials) {
            if let Some(partial) = partial {
                each(operand, numbers.value(partial));
            }
        }
    }

    /// Every step's value, in order.
    fn values(&self, inputs: &[Buf]) -> Result<Vec<f64>, StraightError> {
        let mut values: Vec<f64> = Vec::with_capacity(self.steps.len());
        for (index, step) in self.steps.iter().enumerate() {
            if index % CANCEL_EVERY == 0 && crate::backends::cpu::cancel::requested() {
                return Err(StraightError::Interrupted);
            }
            let value = match step {
                Step::Input(k) => match inputs.get(*k as usize) {
                    Some(Buf::Scalar(x)) => *x,
                    Some(Buf::Array(a)) if a.ndim() == 0 => a.iter().copied().next().unwrap_or(0.0),
                    _ => return Err(StraightError::NotScalarInput(*k)),
                },
                Step::Constant(c) => *c,
                Step::StopGradient(s) => values[*s as usize],
                Step::Map { operator, operands } => {
                    apply_op(&self.operators[*operator as usize], |position| {
                        values[operands[usize::from(position)] as usize]
                    })
                    .unwrap_or(f64::NAN)
                }
            };
            values.push(value);
        }
        Ok(values)
    }
}

/// The operators of a program being built, at most one per kind of
/// `Math`, with operand positions as children.
#[derive(Default)]
struct Operators(Vec<Math>);

impl Operators {
    /// The index of `math`'s operator, added if new; `None` past 256
    /// operators (there are fewer kinds).
    fn index(&mut self, math: &Math) -> Option<u8> {
        let kind = std::mem::discriminant(math);
        let operator = match self
            .0
            .iter()
            .position(|m| std::mem::discriminant(m) == kind)
        {
            Some(k) => k,
            None => {
                let mut template = math.clone();
                for (position, child) in template.children_mut().iter_mut().enumerate() {
                    *child = Id::from(position);
                }
                self.0.push(template);
                self.0.len() - 1
            }
        };
        u8::try_from(operator).ok()
    }
}

/// The step applying operator `operator` to the steps `operands` (at most
/// two).
fn map_step(operator: u8, operands: impl Iterator<Item = u32>) -> Step {
    let mut packed = [0; 2];
    for (slot, operand) in packed.iter_mut().zip(operands) {
        *slot = operand;
    }
    Step::Map {
        operator,
        operands: packed,
    }
}

/// The partial-derivative table's builder over numbers for one operation:
/// ids 0 and 1 are its operands' values, 2 its own value, and those past
/// it the numbers the table made.
struct Numbers {
    known: [f64; 3],
    made: SmallVec<[(f64, bool); 8]>,
}

impl Numbers {
    fn value(&self, id: Id) -> f64 {
        let index = usize::from(id);
        match index.checked_sub(self.known.len()) {
            None => self.known[index],
            Some(made) => self.made[made].0,
        }
    }

    fn push(&mut self, value: f64, constant: bool) -> Id {
        self.made.push((value, constant));
        Id::from(self.known.len() + self.made.len() - 1)
    }
}

impl PartialBuilder for Numbers {
    fn num(&mut self, value: f64) -> Id {
        self.push(value, true)
    }

    fn constant(&self, id: Id) -> Option<f64> {
        let made = usize::from(id).checked_sub(self.known.len())?;
        let (value, constant) = self.made[made];
        constant.then_some(value)
    }

    fn add(&mut self, node: Math) -> Id {
        let value = apply_op(&node, |id| self.value(id)).unwrap_or(f64::NAN);
        self.push(value, matches!(node, Math::Num(_)))
    }
}

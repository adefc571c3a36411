//! Straight-line scalar programs: a traced program every value of which is
//! one number (a scalar loop written in Lisp and unrolled by tracing, such
//! as a time-stepping recurrence) kept as a flat list of scalar steps, and
//! its gradient computed by one forward and one reverse pass over that
//! list.
//!
//! Such a program gains nothing from the tensor pipeline: each of its
//! operations is one scalar, so a compiled tape would run one kernel call
//! per operation, after a symbolic reverse sweep that doubles the program
//! and a compiler that builds its tables node by node. Built here, the
//! program costs one pass over the trace (the operations it reaches, in
//! order, renumbered), and a gradient costs two passes over it: values
//! forward, cotangents backward, with each operator's local partial
//! derivatives taken from the one table of them (`egraph::partials`,
//! evaluated on numbers by [`Numbers`]) and its value from the one
//! evaluator of scalar operators (`egraph::eval::apply_op`). Nothing is
//! hashed or allocated per operation beyond the step itself.
//!
//! [`StraightLine::build`] says whether a program qualifies: what the
//! result reaches must be scalar inputs, constants, scalar operators
//! (`TOp::Map`) and stopped gradients, of the f64 or weak type (f32
//! rounding and user functions go through the tensor pipeline).

use crate::backends::cpu::Buf;
use crate::dtype::DType;
use crate::egraph::eval::apply_op;
use crate::egraph::functions::NO_FUNCTIONS;
use crate::egraph::language::Math;
use crate::egraph::partials::{PartialBuilder, local_partials};
use crate::egraph::tensor::TOp;
use crate::egraph::tensor::TensorGraph;
use crate::egraph::tensor::flat::{FLAT_BASE, FlatScalars, is_flat};
use egg::{Id, Language};
use smallvec::SmallVec;

/// One step of a straight-line program; operands are earlier steps.
#[derive(Clone, Debug)]
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
                    operators.step(math, operands)?
                }
                _ => unreachable!("only scalar operations are reached"),
            };
            graph_step[index] = steps.len() as u32;
            steps.push(step);
        }
        for (index, &reached) in flat_reached.iter().enumerate() {
            if !reached {
                continue;
            }
            let math = flat.math(index);
            let operands = math
                .children()
                .iter()
                .map(|&c| step_of(c, &graph_step, &flat_step));
            let step = operators.step(&math, operands)?;
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
            let Step::Map { operator, operands } = self.steps[index] else {
                continue;
            };
            let math = &self.operators[operator as usize];
            let g = cotangents[index];
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
                    cotangents[operand as usize] += g * numbers.value(partial);
                }
            }
        }
        let gradient = self
            .targets
            .iter()
            .map(|t| t.map_or(0.0, |s| cotangents[s as usize]))
            .collect();
        Ok((values[self.output as usize], gradient))
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
    /// The step applying `math`'s operator to the steps `operands`;
    /// `None` past 256 operators (there are fewer kinds).
    fn step(&mut self, math: &Math, operands: impl Iterator<Item = u32>) -> Option<Step> {
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
        let mut packed = [0; 2];
        for (slot, operand) in packed.iter_mut().zip(operands) {
            *slot = operand;
        }
        Some(Step::Map {
            operator: u8::try_from(operator).ok()?,
            operands: packed,
        })
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

#[cfg(test)]
mod tests {
    //! The straight-line gradient against the tensor pipeline's (symbolic
    //! reverse sweep, tape compiler, CPU executor) on the same random
    //! programs, and against central finite differences of its own values.
    use super::*;
    use crate::egraph::tensor::optimize::optimize;
    use crate::egraph::tensor::{Shape, vjp};
    use proptest::prelude::*;

    /// Operators defined and smooth at every real point (`pow` only with
    /// the exponent 3).
    const UNARY: &[fn(Id) -> Math] = &[
        |x| Math::Neg([x]),
        |x| Math::Sin([x]),
        |x| Math::Cos([x]),
        |x| Math::Tanh([x]),
        |x| Math::Sigmoid([x]),
        |x| Math::Softplus([x]),
        |x| Math::Atan([x]),
        |x| Math::Erf([x]),
    ];
    const BINARY: &[fn(Id, Id) -> Math] = &[
        |a, b| Math::Add([a, b]),
        |a, b| Math::Sub([a, b]),
        |a, b| Math::Mul([a, b]),
        |a, b| Math::Atan2([a, b]),
    ];

    /// A random program: `inputs` scalar inputs, then steps choosing an
    /// operator and operands among the values so far; some steps go to
    /// the graph, the rest to the flat arena (as a trace records them).
    /// Returns the graph, the arena, the inputs' nodes and the last value.
    fn random_program(
        inputs: usize,
        steps: &[(u8, u16, u16, bool)],
    ) -> (TensorGraph, FlatScalars, Vec<Id>, Id) {
        let mut graph = TensorGraph::new();
        let mut flat = FlatScalars::default();
        let leaves: Vec<Id> = (0..inputs)
            .map(|k| graph.input(k as u32, &[], DType::F64))
            .collect();
        let mut values = leaves.clone();
        let three = graph.num(3.0);
        for &(op, a, b, in_graph) in steps {
            let a = values[a as usize % values.len()];
            let b = values[b as usize % values.len()];
            let kinds = UNARY.len() + BINARY.len() + 3;
            let math = match op as usize % kinds {
                k if k < UNARY.len() => UNARY[k](a),
                k if k < UNARY.len() + BINARY.len() => BINARY[k - UNARY.len()](a, b),
                k if k == kinds - 3 => Math::Pow([a, three]),
                k if k == kinds - 2 => Math::Mul([b, b]),
                _ => Math::Exp([a]),
            };
            let id = match in_graph {
                true => {
                    let operands: Vec<Id> = math
                        .children()
                        .iter()
                        .map(|&c| flat.materialize(&mut graph, c).unwrap())
                        .collect();
                    graph.map(math, &operands)
                }
                false => flat.push(&math, DType::F64).unwrap(),
            };
            // Keep values bounded: exp of a large value, a cube of one,
            // would make differences meaningless.
            let bounded = flat.push(&Math::Tanh([id]), DType::F64).unwrap();
            values.push(bounded);
        }
        let output = *values.last().unwrap();
        (graph, flat, leaves, output)
    }

    fn tape_gradient(
        graph: &TensorGraph,
        flat: &FlatScalars,
        output: Id,
        leaves: &[Id],
        inputs: &[Buf],
    ) -> Vec<f64> {
        let (mut graph, mut flat) = (graph.clone(), flat.clone());
        let output = flat.materialize(&mut graph, output).unwrap();
        let one = graph.num(1.0);
        let roots = vjp(&mut graph, &[(output, one)], leaves);
        let optimized = optimize(graph.nodes(), &roots, None);
        let input_shapes = vec![Shape::new(); inputs.len()];
        let tape = crate::tape::compile(
            &optimized.expr,
            &optimized.shapes,
            &optimized.roots,
            &input_shapes,
        );
        crate::backends::run(&tape, inputs)
            .unwrap()
            .into_iter()
            .map(|b| match b {
                Buf::Scalar(x) => x,
                Buf::Array(a) => a.iter().copied().next().unwrap(),
            })
            .collect()
    }

    fn scalars(xs: &[f64]) -> Vec<Buf> {
        xs.iter().map(|&x| Buf::Scalar(x)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn gradient_matches_the_tensor_pipeline_and_differences(
            steps in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<bool>()), 1..40),
            xs in proptest::collection::vec(-2.0f64..2.0, 3),
        ) {
            let (graph, flat, leaves, output) = random_program(3, &steps);
            let program = StraightLine::build(&graph, &flat, output, &leaves)
                .expect("a scalar program qualifies");
            let (value, gradient) = program.value_and_gradient(&scalars(&xs)).unwrap();
            prop_assert!(value.is_finite());
            let oracle = tape_gradient(&graph, &flat, output, &leaves, &scalars(&xs));
            for (k, (&got, &want)) in gradient.iter().zip(&oracle).enumerate() {
                prop_assert!(
                    (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                    "input {k}: straight line {got}, tape {want}"
                );
                let h = 1e-6;
                let at = |d: f64| {
                    let mut moved = xs.clone();
                    moved[k] += d;
                    program.value_and_gradient(&scalars(&moved)).unwrap().0
                };
                let difference = (at(h) - at(-h)) / (2.0 * h);
                prop_assert!(
                    (got - difference).abs() <= 1e-5 * (1.0 + got.abs()),
                    "input {k}: straight line {got}, central difference {difference}"
                );
            }
        }
    }

    #[test]
    fn an_input_the_result_does_not_reach_has_gradient_zero() {
        let mut graph = TensorGraph::new();
        let mut flat = FlatScalars::default();
        let x = graph.input(0, &[], DType::F64);
        let y = graph.input(1, &[], DType::F64);
        let square = flat.push(&Math::Mul([x, x]), DType::F64).unwrap();
        let program = StraightLine::build(&graph, &flat, square, &[x, y]).unwrap();
        let (value, gradient) = program.value_and_gradient(&scalars(&[3.0, 5.0])).unwrap();
        assert_eq!(value, 9.0);
        assert_eq!(gradient, vec![6.0, 0.0]);
    }

    #[test]
    fn a_stopped_gradient_passes_the_value_and_no_derivative() {
        let mut graph = TensorGraph::new();
        let flat = FlatScalars::default();
        let x = graph.input(0, &[], DType::F64);
        let stopped = graph.add(TOp::StopGradient, &[x]).unwrap();
        let product = graph.map(Math::Mul([Id::from(0); 2]), &[stopped, x]);
        let program = StraightLine::build(&graph, &flat, product, &[x]).unwrap();
        let (value, gradient) = program.value_and_gradient(&scalars(&[4.0])).unwrap();
        assert_eq!((value, gradient), (16.0, vec![4.0]));
    }

    #[test]
    fn tensors_and_f32_values_do_not_qualify() {
        let mut graph = TensorGraph::new();
        let flat = FlatScalars::default();
        let v = graph.input(0, &[3], DType::F64);
        let total = graph
            .add(
                TOp::Reduce {
                    op: crate::egraph::tensor::ReduceOp::Sum,
                    axes: smallvec::smallvec![0],
                    keepdims: false,
                },
                &[v],
            )
            .unwrap();
        assert!(StraightLine::build(&graph, &flat, total, &[v]).is_none());
        let s = graph.input(1, &[], DType::F32);
        let twice = graph.map(Math::Add([Id::from(0); 2]), &[s, s]);
        assert!(StraightLine::build(&graph, &flat, twice, &[s]).is_none());
    }

    #[test]
    fn a_step_materialized_late_enters_the_graph_after_its_operands() {
        let mut graph = TensorGraph::new();
        let mut flat = FlatScalars::default();
        let x = graph.input(0, &[], DType::F64);
        let mut last = x;
        for _ in 0..10_000 {
            last = flat.push(&Math::Sin([last]), DType::F64).unwrap();
        }
        let node = flat.materialize(&mut graph, last).unwrap();
        assert!(!is_flat(node));
        assert_eq!(graph.len(), 10_001);
        let children = &graph.node(node).children;
        assert!(usize::from(children[0]) < usize::from(node));
    }
}

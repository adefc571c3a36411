//! Tests of `backends::cpu::straight` and `ir::flat`: the
//! straight-line gradient against the tensor pipeline's (symbolic reverse
//! sweep, tape compiler, CPU executor) on the same random programs, and
//! against central finite differences of its own values. (Here, not in
//! the backend's folder, which knows nothing of the sweeps.)

use crate::ad::vjp;
use crate::backends::cpu::Buf;
use crate::backends::cpu::straight::StraightLine;
use crate::dtype::DType;
use crate::egraph::tensor::optimize::optimize;
use crate::ir::Shape;
use crate::ir::flat::{FlatScalars, is_flat};
use crate::ir::math::language::Math;
use crate::ir::{TOp, TensorGraph};
use egg::{Id, Language};
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
    |x| Math::Square([x]),
    |x| Math::Exp2([x]),
    |x| Math::Sinc([x]),
    |x| Math::Deg2rad([x]),
    |x| Math::Rad2deg([x]),
];
const BINARY: &[fn(Id, Id) -> Math] = &[
    |a, b| Math::Add([a, b]),
    |a, b| Math::Sub([a, b]),
    |a, b| Math::Mul([a, b]),
    |a, b| Math::Atan2([a, b]),
    |a, b| Math::Logaddexp([a, b]),
    |a, b| Math::Logaddexp2([a, b]),
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
            false => flat.push(&math, math.children(), DType::F64).unwrap(),
        };
        // Keep values bounded: exp of a large value, a cube of one,
        // would make differences meaningless.
        let bounded = flat.push(&Math::Tanh([id]), &[id], DType::F64).unwrap();
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
    fn gradient_matches_the_tensor_pipeline_differences_and_the_tangent(
        steps in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<bool>()), 1..40),
        xs in proptest::collection::vec(-2.0f64..2.0, 3),
    ) {
        let (graph, flat, leaves, output) = random_program(3, &steps);
        let program = StraightLine::build(&graph, &flat, output, &leaves)
            .expect("a scalar program qualifies");
        let (value, gradient) = program.value_and_gradient(&scalars(&xs)).unwrap();
        prop_assert!(value.is_finite());
        let direction = [0.3, -1.1, 0.7];
        let (same, tangent) = program.value_and_tangent(&scalars(&xs), &direction).unwrap();
        let along: f64 = gradient.iter().zip(direction).map(|(g, t)| g * t).sum();
        prop_assert_eq!(same, value);
        prop_assert!(
            (tangent - along).abs() <= 1e-12 * (1.0 + along.abs()),
            "forward {tangent}, reverse along the direction {along}"
        );
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
    let square = flat.push(&Math::Mul([x, x]), &[x, x], DType::F64).unwrap();
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
                op: crate::ir::ReduceOp::Sum,
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
        last = flat.push(&Math::Sin([last]), &[last], DType::F64).unwrap();
    }
    let node = flat.materialize(&mut graph, last).unwrap();
    assert!(!is_flat(node));
    assert_eq!(graph.len(), 10_001);
    let children = &graph.node(node).children;
    assert!(usize::from(children[0]) < usize::from(node));
}

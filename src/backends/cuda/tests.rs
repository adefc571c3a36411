//! The generated kernels run on the host (`host_run`): every elementwise
//! operation against the CPU backend's own evaluation (`apply_chunk`) on
//! special values, the special functions (`lgamma`, `erf`, ...) on many
//! points of their ranges, a multi-step group with every operand layout, and each
//! index-map kernel against ndarray. Skipped with a message where there is
//! no host C++ compiler.

use super::host_run::{HostRun, host_compiler, run_on_host};
use super::kernels::{Access, group_kernel};
use super::structural::index_kernel;
use crate::backends::cpu::apply_chunk;
use crate::backends::cpu::native::tests::operations;
use crate::ir::TOp;
use crate::ir::math::language::Math;
use crate::tape::FusedGroup;
use egg::Id;
use ndarray::{ArrayD, Axis, IxDyn, Slice};
use smallvec::smallvec;

const SPECIAL: [f64; 16] = [
    0.0,
    -0.0,
    1.5,
    -2.25,
    0.5,
    -0.5,
    3.0,
    1e-300,
    1e300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    7.25,
    -1.0,
    1.0,
    2.0,
];

/// Equal bits, or both NaN, or (for library functions) within a few units
/// in the last place: the host's libm and Epsilon's own `exp`/`tanh` may
/// round differently, as CUDA's will.
fn agree(op: &TOp, got: f64, want: f64) -> bool {
    if got.is_nan() && want.is_nan() || got.to_bits() == want.to_bits() {
        return true;
    }
    let exact = matches!(op, TOp::Compare(_) | TOp::Round(_) | TOp::Where)
        || matches!(
            op,
            TOp::Map(
                Math::Add(_)
                    | Math::Sub(_)
                    | Math::Mul(_)
                    | Math::Div(_)
                    | Math::Neg(_)
                    | Math::Abs(_)
                    | Math::Sqrt(_)
                    | Math::Sign(_)
                    | Math::Relu(_)
                    | Math::Min(_)
                    | Math::Max(_)
                    | Math::Heaviside(_)
            )
        );
    // The special functions take many steps, each rounded by the host's
    // libm (or CUDA's) where the CPU uses Epsilon's own `exp`.
    let tolerance = if is_special(op) {
        1e-12
    } else {
        4.0 * f64::EPSILON
    };
    !exact
        && got.is_finite()
        && want.is_finite()
        && (got - want).abs() <= tolerance * want.abs().max(f64::MIN_POSITIVE)
}

fn is_special(op: &TOp) -> bool {
    matches!(op, TOp::Map(math) if super::special::needs_prelude(math))
}

#[test]
fn every_operation_computes_what_the_cpu_backend_computes() {
    let Some(compiler) = host_compiler() else {
        eprintln!("skipped: no host C++ compiler to run generated kernels on");
        return;
    };
    // Every pair (and triple, for where) of special values.
    let n = SPECIAL.len() * SPECIAL.len();
    let column = |k: usize| -> Vec<f64> {
        (0..n)
            .map(|i| match k {
                0 => SPECIAL[i / SPECIAL.len()],
                1 => SPECIAL[i % SPECIAL.len()],
                _ => SPECIAL[(i * 7 + 3) % SPECIAL.len()],
            })
            .collect()
    };
    let ops = operations();
    let sources: Vec<(String, FusedGroup)> = ops
        .iter()
        .enumerate()
        .map(|(k, (op, arity))| {
            let inputs = (*arity).max(1);
            let group = FusedGroup {
                inputs,
                steps: vec![(op.clone(), (0..*arity as u16).collect())],
                results: smallvec![inputs as u16],
                sum_over: None,
            };
            let source = group_kernel(
                &group,
                &[n],
                &vec![Access::Elementwise; inputs],
                &format!("op{k}"),
            )
            .expect("elementwise");
            (source, group)
        })
        .collect();
    let names: Vec<String> = (0..ops.len()).map(|k| format!("op{k}")).collect();
    let runs: Vec<HostRun<'_>> = sources
        .iter()
        .zip(&names)
        .map(|((source, group), name)| HostRun {
            source,
            name,
            n,
            inputs: (0..group.inputs).map(column).collect(),
            outputs: 1,
        })
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let results = run_on_host(compiler, &runs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    for ((op, arity), result) in ops.iter().zip(&results) {
        let inputs: Vec<Vec<f64>> = (0..(*arity).max(1)).map(column).collect();
        let slices: Vec<&[f64]> = inputs.iter().take(*arity).map(Vec::as_slice).collect();
        let mut want = vec![0.0; n];
        apply_chunk(op, &slices, &mut want);
        for (i, (&got, &want)) in result[0].iter().zip(&want).enumerate() {
            let args: Vec<f64> = inputs.iter().map(|c| c[i]).collect();
            assert!(
                agree(op, got, want),
                "{op:?} at {args:?}: kernel {got:e}, CPU {want:e}"
            );
        }
    }
}

#[test]
fn a_group_reads_each_operand_layout_right() {
    let Some(compiler) = host_compiler() else {
        eprintln!("skipped: no host C++ compiler to run generated kernels on");
        return;
    };
    // (x * s + row) - transpose(m) over a 3x4 shape.
    let id = Id::from(0usize);
    let group = FusedGroup {
        inputs: 4,
        steps: vec![
            (TOp::Map(Math::Mul([id; 2])), smallvec![0, 1]),
            (TOp::Map(Math::Add([id; 2])), smallvec![4, 2]),
            (TOp::Map(Math::Sub([id; 2])), smallvec![5, 3]),
        ],
        results: smallvec![6],
        sum_over: None,
    };
    let access = [
        Access::Elementwise,
        Access::Uniform,
        Access::Strided(vec![0, 1]),
        Access::Strided(vec![1, 3]),
    ];
    let source = group_kernel(&group, &[3, 4], &access, "layout").expect("elementwise");
    // The uniform operand is a value parameter: pass it through a
    // one-element array the host program dereferences.
    let source = source
        .replace("const double a1,", "const double* a1p,")
        .replace("const double r1 = a1;", "const double r1 = a1p[0];");
    let x: Vec<f64> = (0..12).map(|v| v as f64).collect();
    let row = vec![10.0, 20.0, 30.0, 40.0];
    let m: Vec<f64> = (0..12).map(|v| 100.0 * v as f64).collect(); // 4x3, read transposed
    let dir = tempfile::tempdir().expect("a temporary directory");
    let runs = [HostRun {
        source: &source,
        name: "layout",
        n: 12,
        inputs: vec![x.clone(), vec![2.0], row.clone(), m.clone()],
        outputs: 1,
    }];
    let out = run_on_host(compiler, &runs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..3 {
        for j in 0..4 {
            let want = x[i * 4 + j] * 2.0 + row[j] - m[j * 3 + i];
            assert_eq!(out[0][0][i * 4 + j], want, "element ({i}, {j})");
        }
    }
}

/// A named index-map operation, its operands and the expected result.
type MoveCase = (&'static str, TOp, Vec<ArrayD<f64>>, ArrayD<f64>);

#[test]
fn index_map_kernels_move_elements_as_ndarray_does() {
    let Some(compiler) = host_compiler() else {
        eprintln!("skipped: no host C++ compiler to run generated kernels on");
        return;
    };
    let array = |shape: &[usize], start: f64| -> ArrayD<f64> {
        let len: usize = shape.iter().product();
        ArrayD::from_shape_vec(IxDyn(shape), (0..len).map(|v| start + v as f64).collect())
            .expect("sizes")
    };
    let a = array(&[2, 3, 4], 0.0);
    let b = array(&[2, 1, 4], 100.0);
    let mut cases: Vec<MoveCase> = vec![
        (
            "transpose",
            TOp::Transpose(smallvec![2, 0, 1]),
            vec![a.clone()],
            a.clone()
                .permuted_axes(IxDyn(&[2, 0, 1]))
                .as_standard_layout()
                .to_owned(),
        ),
        (
            "slice",
            TOp::Slice {
                axis: 2,
                start: 1,
                end: 3,
            },
            vec![a.clone()],
            a.slice_axis(Axis(2), Slice::from(1..3)).to_owned(),
        ),
        (
            "broadcast",
            TOp::Broadcast(smallvec![3, 2, 1, 4]),
            vec![b.clone()],
            b.broadcast(IxDyn(&[3, 2, 1, 4]))
                .expect("broadcasts")
                .to_owned(),
        ),
        (
            "concat",
            TOp::Concat(1),
            vec![a.clone(), b.clone()],
            ndarray::concatenate(Axis(1), &[a.view(), b.view()]).expect("joins"),
        ),
    ];
    // pad: two zeros before and one after along axis 1.
    let mut padded = ArrayD::zeros(IxDyn(&[2, 6, 4]));
    padded.slice_axis_mut(Axis(1), Slice::from(2..5)).assign(&a);
    cases.push((
        "pad",
        TOp::Pad {
            axis: 1,
            before: 2,
            after: 1,
        },
        vec![a.clone()],
        padded,
    ));
    // roll by 1 along axis 2: element k moves to k + 1.
    let rolled = ndarray::concatenate(
        Axis(2),
        &[
            a.slice_axis(Axis(2), Slice::from(3..)),
            a.slice_axis(Axis(2), Slice::from(..3)),
        ],
    )
    .expect("joins");
    cases.push((
        "roll",
        TOp::Roll { axis: 2, shift: 1 },
        vec![a.clone()],
        rolled,
    ));
    let sources: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(k, (_, op, inputs, want))| {
            let shapes: Vec<Vec<usize>> = inputs.iter().map(|x| x.shape().to_vec()).collect();
            index_kernel(op, &shapes, want.shape(), &format!("move{k}")).expect("structural")
        })
        .collect();
    let names: Vec<String> = (0..cases.len()).map(|k| format!("move{k}")).collect();
    let runs: Vec<HostRun<'_>> = cases
        .iter()
        .zip(&sources)
        .zip(&names)
        .map(|(((_, _, inputs, want), source), name)| HostRun {
            source,
            name,
            n: want.len(),
            inputs: inputs.iter().map(|x| x.iter().copied().collect()).collect(),
            outputs: 1,
        })
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let results = run_on_host(compiler, &runs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    for ((what, _, _, want), got) in cases.iter().zip(&results) {
        let want: Vec<f64> = want.iter().copied().collect();
        assert_eq!(got[0], want, "{what}");
    }
}

#[test]
fn special_functions_agree_with_the_cpu_across_their_ranges() {
    let Some(compiler) = host_compiler() else {
        eprintln!("skipped: no host C++ compiler to run generated kernels on");
        return;
    };
    // Points over [-30, 30], small and large magnitudes of either sign,
    // and the edges of each kernel's regions.
    let mut xs: Vec<f64> = (0..600).map(|k| -30.0 + 0.1 * k as f64 + 0.0371).collect();
    for e in -30..30 {
        let x = 1.37 * 10f64.powi(e);
        xs.extend([x, -x]);
    }
    xs.extend([0.5, 1.5, 2.5, 10.0, 1.2, 1.7, 27.0, 27.5, 1e-300, 3e305]);
    let id = Id::from(0usize);
    let mut cases: Vec<(TOp, Vec<Vec<f64>>)> = [
        Math::Lgamma([id]),
        Math::Digamma([id]),
        Math::Erf([id]),
        Math::Erfc([id]),
    ]
    .into_iter()
    .map(|m| (TOp::Map(m), vec![xs.clone()]))
    .collect();
    for n in [0.0, 1.0, 2.0, 3.0, 6.0] {
        cases.push((
            TOp::Map(Math::Polygamma([id; 2])),
            vec![vec![n; xs.len()], xs.clone()],
        ));
    }
    let sources: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(k, (op, inputs))| {
            let group = FusedGroup {
                inputs: inputs.len(),
                steps: vec![(op.clone(), (0..inputs.len() as u16).collect())],
                results: smallvec![inputs.len() as u16],
                sum_over: None,
            };
            let access = vec![Access::Elementwise; inputs.len()];
            group_kernel(&group, &[xs.len()], &access, &format!("special{k}")).expect("elementwise")
        })
        .collect();
    let names: Vec<String> = (0..cases.len()).map(|k| format!("special{k}")).collect();
    let runs: Vec<HostRun<'_>> = cases
        .iter()
        .zip(&sources)
        .zip(&names)
        .map(|(((_, inputs), source), name)| HostRun {
            source,
            name,
            n: xs.len(),
            inputs: inputs.clone(),
            outputs: 1,
        })
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let results = run_on_host(compiler, &runs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    for ((op, inputs), result) in cases.iter().zip(&results) {
        let slices: Vec<&[f64]> = inputs.iter().map(Vec::as_slice).collect();
        let mut want = vec![0.0; xs.len()];
        apply_chunk(op, &slices, &mut want);
        for (i, (&got, &want)) in result[0].iter().zip(&want).enumerate() {
            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
            let close = (got - want).abs() <= 1e-12 * want.abs() + 1e-14;
            assert!(
                same || close,
                "{op:?} at {:?}: kernel {got:e}, CPU {want:e}",
                inputs.iter().map(|c| c[i]).collect::<Vec<_>>()
            );
        }
    }
}

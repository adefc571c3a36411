//! The generated source of every elementwise operation and of whole
//! groups (golden and structural checks), and NVRTC compilation of each
//! where the NVRTC library can be loaded (skipped with a message where it
//! cannot; no GPU is needed for either).

use super::*;
use crate::backends::cuda::{
    CudaUnavailable, compile, compiles_if_nvrtc_is_present, nvrtc_available, oldest_arch,
};
use crate::ir::math::language::Constant;
use egg::Id;
use smallvec::smallvec;

fn id() -> Id {
    Id::from(0usize)
}

/// Every elementwise operation with its arity and the expression expected
/// over registers r0, r1, r2.
fn operations() -> Vec<(TOp, usize, &'static str)> {
    let m = |math: Math| TOp::Map(math);
    vec![
        (m(Math::Add([id(); 2])), 2, "r0 + r1"),
        (m(Math::Sub([id(); 2])), 2, "r0 - r1"),
        (m(Math::Mul([id(); 2])), 2, "r0 * r1"),
        (m(Math::Div([id(); 2])), 2, "r0 / r1"),
        (m(Math::Neg([id(); 1])), 1, "-r0"),
        (m(Math::Abs([id(); 1])), 1, "fabs(r0)"),
        (m(Math::Sqrt([id(); 1])), 1, "sqrt(r0)"),
        (m(Math::Pow([id(); 2])), 2, "eps_pow(r0, r1)"),
        (m(Math::Atan2([id(); 2])), 2, "atan2(r0, r1)"),
        (m(Math::Heaviside([id(); 2])), 2, "eps_heaviside(r0, r1)"),
        (m(Math::Xlogy([id(); 2])), 2, "eps_xlogy(r0, r1)"),
        (m(Math::Min([id(); 2])), 2, "eps_min(r0, r1)"),
        (m(Math::Max([id(); 2])), 2, "eps_max(r0, r1)"),
        (m(Math::Exp([id(); 1])), 1, "exp(r0)"),
        (m(Math::Log([id(); 1])), 1, "log(r0)"),
        (m(Math::Log1p([id(); 1])), 1, "log1p(r0)"),
        (m(Math::Expm1([id(); 1])), 1, "expm1(r0)"),
        (m(Math::Sin([id(); 1])), 1, "sin(r0)"),
        (m(Math::Cos([id(); 1])), 1, "cos(r0)"),
        (m(Math::Tan([id(); 1])), 1, "tan(r0)"),
        (m(Math::Asin([id(); 1])), 1, "asin(r0)"),
        (m(Math::Acos([id(); 1])), 1, "acos(r0)"),
        (m(Math::Atan([id(); 1])), 1, "atan(r0)"),
        (m(Math::Sinh([id(); 1])), 1, "sinh(r0)"),
        (m(Math::Cosh([id(); 1])), 1, "cosh(r0)"),
        (m(Math::Tanh([id(); 1])), 1, "tanh(r0)"),
        (m(Math::Sigmoid([id(); 1])), 1, "eps_sigmoid(r0)"),
        (m(Math::Relu([id(); 1])), 1, "eps_relu(r0)"),
        (m(Math::Softplus([id(); 1])), 1, "eps_softplus(r0)"),
        (m(Math::Sign([id(); 1])), 1, "eps_sign(r0)"),
        (m(Math::Lgamma([id(); 1])), 1, "eps_lgamma(r0)"),
        (m(Math::Digamma([id(); 1])), 1, "eps_digamma(r0)"),
        (m(Math::Polygamma([id(); 2])), 2, "eps_polygamma(r0, r1)"),
        (m(Math::Erf([id(); 1])), 1, "eps_erf(r0)"),
        (m(Math::Erfc([id(); 1])), 1, "eps_erfc(r0)"),
        (m(Math::Square([id(); 1])), 1, "r0 * r0"),
        (m(Math::Cbrt([id(); 1])), 1, "cbrt(r0)"),
        (m(Math::Exp2([id(); 1])), 1, "exp2(r0)"),
        (m(Math::Hypot([id(); 2])), 2, "hypot(r0, r1)"),
        (m(Math::Logaddexp([id(); 2])), 2, "eps_logaddexp(r0, r1)"),
        (m(Math::Logaddexp2([id(); 2])), 2, "eps_logaddexp2(r0, r1)"),
        (m(Math::Sinc([id(); 1])), 1, "eps_sinc(r0)"),
        (m(Math::Deg2rad([id(); 1])), 1, "r0 * 0.017453292519943295"),
        (m(Math::Rad2deg([id(); 1])), 1, "r0 * 57.29577951308232"),
        (m(Math::Num(Constant::new(0.1).expect("finite"))), 0, "0.1"),
        (
            m(Math::Num(Constant::new(-2.5e-300).expect("finite"))),
            0,
            "-2.5e-300",
        ),
        (TOp::Compare(CmpOp::Lt), 2, "(r0 < r1) ? 1.0 : 0.0"),
        (TOp::Compare(CmpOp::Le), 2, "(r0 <= r1) ? 1.0 : 0.0"),
        (TOp::Compare(CmpOp::Gt), 2, "(r0 > r1) ? 1.0 : 0.0"),
        (TOp::Compare(CmpOp::Ge), 2, "(r0 >= r1) ? 1.0 : 0.0"),
        (TOp::Compare(CmpOp::Eq), 2, "(r0 == r1) ? 1.0 : 0.0"),
        (TOp::Compare(CmpOp::Ne), 2, "(r0 != r1) ? 1.0 : 0.0"),
        (TOp::Round(RoundOp::Floor), 1, "floor(r0)"),
        (TOp::Round(RoundOp::Ceil), 1, "ceil(r0)"),
        (TOp::Round(RoundOp::Round), 1, "rint(r0)"),
        (TOp::Where, 3, "(r0 != 0.0) ? r1 : r2"),
    ]
}

/// A group of one step applying `op` to its operands.
fn single(op: TOp, arity: usize) -> FusedGroup {
    let inputs = arity.max(1);
    FusedGroup {
        inputs,
        steps: vec![(op, (0..arity as u16).collect())],
        results: smallvec![inputs as u16],
        sum_over: None,
    }
}

#[test]
fn every_operation_has_its_expression() {
    for (op, arity, expected) in operations() {
        let group = single(op.clone(), arity);
        let access = vec![Access::Elementwise; group.inputs];
        let source = group_kernel(&group, &[8], &access, "k").expect("elementwise");
        let register = group.inputs;
        let line = format!("const double r{register} = {expected};");
        assert!(
            source.contains(&line),
            "{op:?}: expected `{line}` in\n{source}"
        );
        assert!(
            source.contains("out0[i] = r"),
            "{op:?}: the result is stored"
        );
    }
}

#[test]
fn every_row_of_the_elementwise_table_is_an_operation_here() {
    // A new row's CUDA spelling is checked above, and compiled below.
    let listed: Vec<&str> = operations()
        .iter()
        .filter_map(|(op, _, _)| match op {
            TOp::Map(math) => crate::ir::math::elementwise::row(math).map(|row| row.name),
            _ => None,
        })
        .collect();
    for row in crate::ir::math::elementwise::ROWS {
        assert!(
            listed.contains(&row.name),
            "{} is not in operations()",
            row.name
        );
    }
}

#[test]
fn every_operation_compiles_with_nvrtc() {
    // One kernel holding every operation, then each alone: a failure names
    // the operation.
    for (k, (op, arity)) in operations()
        .into_iter()
        .map(|(op, a, _)| (op, a))
        .enumerate()
    {
        let group = single(op.clone(), arity);
        let access = vec![Access::Elementwise; group.inputs];
        let source = group_kernel(&group, &[8], &access, &format!("op{k}")).expect("elementwise");
        compiles_if_nvrtc_is_present(&source, &format!("{op:?}"));
        if !nvrtc_available() {
            return;
        }
    }
}

#[test]
fn operands_are_read_by_their_layout() {
    // r0: elementwise, r1: a number, r2: a row broadcast down a 3x4 shape
    // (stride 0 on axis 0), r3: the transpose of a 4x3 array.
    let group = FusedGroup {
        inputs: 4,
        steps: vec![
            (TOp::Map(Math::Mul([id(); 2])), smallvec![0, 1]),
            (TOp::Map(Math::Add([id(); 2])), smallvec![4, 2]),
            (TOp::Map(Math::Sub([id(); 2])), smallvec![5, 3]),
        ],
        results: smallvec![6],
        sum_over: None,
    };
    let access = vec![
        Access::Elementwise,
        Access::Uniform,
        Access::Strided(vec![0, 1]),
        Access::Strided(vec![1, 3]),
    ];
    let source = group_kernel(&group, &[3, 4], &access, "layout").expect("elementwise");
    for expected in [
        "extern \"C\" __global__ void layout(const long long n, const double* __restrict__ a0, const double a1, const double* __restrict__ a2, const double* __restrict__ a3, double* __restrict__ out0)",
        "const double r0 = a0[i];",
        "const double r1 = a1;",
        "const double r2 = a2[((i / 1LL) % 4LL) * 1LL];",
        "const double r3 = a3[((i / 1LL) % 4LL) * 3LL + ((i / 4LL) % 3LL) * 1LL];",
        "const double r4 = r0 * r1;",
        "const double r5 = r4 + r2;",
        "const double r6 = r5 - r3;",
        "out0[i] = r6;",
    ] {
        assert!(
            source.contains(expected),
            "expected `{expected}` in\n{source}"
        );
    }
    compiles_if_nvrtc_is_present(&source, "a group with every operand layout");
}

/// The group `sum((x - c)^2)` over `n` elements (operands `x`, `c`): the
/// shape of W1's fused sums.
pub(crate) fn squared_distance_sum(n: usize) -> FusedGroup {
    FusedGroup {
        inputs: 2,
        steps: vec![
            (TOp::Map(Math::Sub([id(); 2])), smallvec![0, 1]),
            (TOp::Map(Math::Mul([id(); 2])), smallvec![2, 2]),
        ],
        results: smallvec![3],
        sum_over: Some(smallvec![n]),
    }
}

/// The kernel `total` of [`squared_distance_sum`], `x` read elementwise
/// and `c` passed by value.
pub(crate) fn squared_distance_kernel(n: usize) -> String {
    group_kernel(
        &squared_distance_sum(n),
        &[n],
        &[Access::Elementwise, Access::Uniform],
        "total",
    )
    .expect("elementwise")
}

#[test]
fn a_summing_group_reduces_in_blocks() {
    // sum((x - 1)^2) over 1000 elements, the shape of W1's fused sums.
    let source = squared_distance_kernel(1000);
    assert!(source.contains("double acc = 0.0;"));
    assert!(source.contains("acc += r3;"));
    assert!(
        !source.contains("out0[i]"),
        "a summing group stores no elements"
    );
    assert!(source.contains("__shfl_down_sync") && source.contains("atomicAdd(out0, acc)"));
    compiles_if_nvrtc_is_present(&source, "a summing group");
}

#[test]
fn groups_that_are_not_elementwise_are_refused() {
    let group = FusedGroup {
        inputs: 1,
        steps: vec![(TOp::StopGradient, smallvec![0])],
        results: smallvec![1],
        sum_over: None,
    };
    let error = group_kernel(&group, &[4], &[Access::Elementwise], "k").expect_err("refused");
    assert!(error.to_string().contains("not elementwise"), "{error}");
    let error =
        group_kernel(&single(TOp::Where, 3), &[4], &[Access::Uniform], "k").expect_err("refused");
    assert!(error.to_string().contains("3 operands but 1"), "{error}");
    let error = group_kernel(
        &single(TOp::Round(RoundOp::Floor), 1),
        &[2, 2],
        &[Access::Strided(vec![1])],
        "k",
    )
    .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("1 strides for a group of rank 2"),
        "{error}"
    );
}

#[test]
fn literals_read_back_to_the_same_number() {
    for x in [0.1, 1.0 / 3.0, 1e300, -5e-324, 2.0f64.powi(60), 0.0] {
        let text = literal(x);
        assert_eq!(
            text.parse::<f64>().map(f64::to_bits),
            Ok(x.to_bits()),
            "{text}"
        );
    }
    assert_eq!(literal(f64::NAN), "eps_nan()");
    assert_eq!(literal(f64::NEG_INFINITY), "(-eps_inf())");
}

#[test]
fn nvrtc_reports_a_compile_error_with_its_log() {
    if !nvrtc_available() {
        eprintln!("skipped: {}", CudaUnavailable::NoNvrtc);
        return;
    }
    let error = compile(
        "extern \"C\" __global__ void k() { undefined_name(); }",
        oldest_arch().unwrap(),
    )
    .expect_err("an undefined function");
    assert!(error.to_string().contains("undefined_name"), "{error}");
}

#[test]
fn f32_steps_on_f32_numbers_are_computed_in_float() {
    // r0 from f32 storage, r1 a number: (r0 r0) and exp of it are f32
    // steps on f32 numbers; the sum with r1 (an f64 step) widens.
    let m = |math: Math| TOp::Map(math);
    let round = TOp::Cast(crate::dtype::DType::F32);
    let group = FusedGroup {
        inputs: 2,
        steps: vec![
            (m(Math::Mul([id(); 2])), smallvec![0, 0]),
            (round.clone(), smallvec![2]),
            (m(Math::Exp([id(); 1])), smallvec![3]),
            (round.clone(), smallvec![4]),
            (m(Math::Add([id(); 2])), smallvec![5, 1]),
            (m(Math::Tanh([id(); 1])), smallvec![6]),
            (round, smallvec![7]),
        ],
        results: smallvec![8],
        sum_over: None,
    };
    let storage = F32Storage {
        operands: vec![true, true],
        result: true,
    };
    let access = [Access::Elementwise, Access::Uniform];
    let source = group_kernel_stored(&group, &[8], &access, &storage, "k").expect("elementwise");
    for line in [
        "const float r0 = reinterpret_cast<const float*>(a0)[i];",
        "const double r1 = a1;",
        "const float r2 = r0 * r0;",
        "const float r3 = (float)r2;",
        "const float r4 = expf(r3);",
        "const float r5 = (float)r4;",
        "const double r6 = (double)r5 + r1;",
        "const double r7 = tanh(r6);",
        "const float r8 = (float)r7;",
        "reinterpret_cast<float*>(out0)[i] = (float)r8;",
    ] {
        assert!(source.contains(line), "expected `{line}` in\n{source}");
    }
    compiles_if_nvrtc_is_present(&source, "an f32 group");
    // Without f32 storage the operand is a double: nothing reads as float
    // before the first rounding.
    let wide = group_kernel(&group, &[8], &access, "k").expect("elementwise");
    assert!(wide.contains("const double r2 = r0 * r0;"), "{wide}");
    assert!(wide.contains("const float r4 = expf(r3);"), "{wide}");
    // A summing group's number cannot be f32 storage.
    let summing = FusedGroup {
        sum_over: Some(vec![8].into()),
        ..group
    };
    let refused = group_kernel_stored(&summing, &[], &access, &storage, "k");
    assert_eq!(refused, Err(KernelError::SummingF32));
}

#[test]
fn numpy_functions_have_float_forms_where_cuda_has_them() {
    // Computed in float when CUDA has the single-precision function (or,
    // for square, the product is exact); in double, then rounded, else.
    let a = ["r0".to_string(), "r1".to_string()];
    let m = |math: Math| TOp::Map(math);
    for (op, arity, expected) in [
        (m(Math::Square([id(); 1])), 1, Some("r0 * r0")),
        (m(Math::Cbrt([id(); 1])), 1, Some("cbrtf(r0)")),
        (m(Math::Exp2([id(); 1])), 1, Some("exp2f(r0)")),
        (m(Math::Hypot([id(); 2])), 2, Some("hypotf(r0, r1)")),
        (m(Math::Logaddexp([id(); 2])), 2, None),
        (m(Math::Logaddexp2([id(); 2])), 2, None),
        (m(Math::Sinc([id(); 1])), 1, None),
        (m(Math::Deg2rad([id(); 1])), 1, None),
        (m(Math::Rad2deg([id(); 1])), 1, None),
    ] {
        assert_eq!(
            f32_steps::expression(&op, &a[..arity]).as_deref(),
            expected,
            "{op:?}"
        );
    }
}

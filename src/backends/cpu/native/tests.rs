//! Native kernels against the interpreter: the same bits for every
//! operation, on random groups, over lengths with and without an odd tail.

use super::{Operand, compile};
use crate::backends::cpu::apply_chunk;
use crate::ir::math::language::{Constant, Math};
use crate::ir::{CmpOp, RoundOp, TOp};
use crate::tape::FusedGroup;
use egg::Id;
use proptest::prelude::*;
use smallvec::{SmallVec, smallvec};

/// Every elementwise operation with its arity (also used by the CUDA
/// kernels' host tests).
pub(crate) fn operations() -> Vec<(TOp, usize)> {
    let a = Id::from(0usize);
    let mut ops: Vec<(TOp, usize)> = [
        Math::Add([a; 2]),
        Math::Sub([a; 2]),
        Math::Mul([a; 2]),
        Math::Div([a; 2]),
        Math::Pow([a; 2]),
    ]
    .into_iter()
    .map(|m| (TOp::Map(m), 2))
    .collect();
    ops.push((TOp::Map(Math::Neg([a])), 1));
    // Every function of the elementwise table, new rows included.
    for row in crate::ir::math::elementwise::ROWS {
        let math = Math::from_op_name(row.name, &vec![a; row.arity]).expect("a row is an operator");
        ops.push((TOp::Map(math), row.arity));
    }
    for cmp in [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
    ] {
        ops.push((TOp::Compare(cmp), 2));
    }
    for round in [RoundOp::Floor, RoundOp::Ceil, RoundOp::Round] {
        ops.push((TOp::Round(round), 1));
    }
    ops.push((TOp::Where, 3));
    // The rounding after an f32 step, and the (identity) widening.
    ops.push((TOp::Cast(crate::dtype::DType::F32), 1));
    ops.push((TOp::Cast(crate::dtype::DType::F64), 1));
    for c in [2.0, -0.5, 0.0] {
        let c = Constant::new(c).expect("finite");
        ops.push((TOp::Map(Math::Num(c)), 0));
    }
    ops
}

/// The interpreter's answer: each step over the whole slices.
fn interpret(group: &FusedGroup, operands: &[Vec<f64>], len: usize) -> Vec<f64> {
    let mut registers: Vec<Vec<f64>> = operands.iter().map(|o| o[..len].to_vec()).collect();
    for (op, args) in &group.steps {
        let ins: Vec<&[f64]> = args
            .iter()
            .map(|&r| &registers[usize::from(r)][..])
            .collect();
        let mut out = vec![0.0; len];
        apply_chunk(op, &ins, &mut out);
        registers.push(out);
    }
    registers[usize::from(group.results[0])].clone()
}

/// The same bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check(group: &FusedGroup, operands: &[Vec<f64>], len: usize) {
    let kernel = compile(group, &vec![Operand::Streamed; group.inputs]).expect("compiles");
    let mut out = vec![f64::NAN; len];
    let slices: Vec<&[f64]> = operands.iter().map(|o| &o[..]).collect();
    kernel.handle().run(&slices, &mut out);
    let expected = interpret(group, operands, len);
    for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
        assert!(
            same(got, want),
            "element {i}: native {got:e}, interpreter {want:e} for {:?} on {:?}",
            group.steps,
            operands.iter().map(|o| o[i]).collect::<Vec<_>>()
        );
    }
}

/// Numbers that probe the edges of each operation.
const SPECIAL: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    2.0,
    3.0,
    1e300,
    -1e-300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    710.0,
    -745.5,
    0.75,
];

#[test]
fn every_operation_matches_the_interpreter_on_special_values() {
    for (op, arity) in operations() {
        // All combinations of special values for each argument position.
        let count = SPECIAL.len().pow(arity as u32);
        let operands: Vec<Vec<f64>> = (0..arity.max(1))
            .map(|k| {
                (0..count)
                    .map(|i| SPECIAL[(i / SPECIAL.len().pow(k as u32)) % SPECIAL.len()])
                    .collect()
            })
            .collect();
        let inputs = operands.len();
        let args: SmallVec<[u16; 3]> = (0..arity as u16).collect();
        let group = FusedGroup {
            inputs,
            steps: vec![(op, args)],
            results: smallvec![inputs as u16],
            sum_over: None,
        };
        check(&group, &operands, count);
        // An odd length exercises the scalar tail.
        check(&group, &operands, count - 1);
    }
}

/// A random group: `steps` over `inputs` operands, each step reading
/// earlier registers.
fn group_strategy() -> impl Strategy<Value = (FusedGroup, Vec<Vec<f64>>, usize)> {
    let ops = operations();
    (1usize..5, 1usize..14, 1usize..40).prop_flat_map(move |(inputs, steps, len)| {
        let ops = ops.clone();
        let picks = proptest::collection::vec((0..ops.len(), any::<[u16; 3]>()), steps);
        let value = prop_oneof![
            4 => -4.0f64..4.0,
            1 => proptest::sample::select(SPECIAL.to_vec()),
        ];
        let data = proptest::collection::vec(proptest::collection::vec(value, len), inputs);
        (picks, data).prop_map(move |(picks, data)| {
            let steps = picks
                .iter()
                .enumerate()
                .map(|(s, (o, raw))| {
                    let (op, arity) = ops[*o].clone();
                    let registers = (inputs + s) as u16;
                    let args = raw[..arity].iter().map(|r| r % registers).collect();
                    (op, args)
                })
                .collect::<Vec<_>>();
            let group = FusedGroup {
                inputs,
                results: smallvec![(inputs + steps.len() - 1) as u16],
                steps,
                sum_over: None,
            };
            (group, data, len)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_groups_match_the_interpreter((group, data, len) in group_strategy()) {
        check(&group, &data, len);
    }
}

#[test]
fn a_group_whose_result_is_an_operand_copies_it() {
    let group = FusedGroup {
        inputs: 2,
        steps: vec![(TOp::Map(Math::Exp([Id::from(0usize)])), smallvec![0])],
        results: smallvec![1],
        sum_over: None,
    };
    check(&group, &[vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]], 3);
}

/// `exp`, `tanh` and `sigmoid` inlined as instructions give the Rust
/// functions' bits across their whole range: overflow, underflow into
/// subnormals, the saturation of `tanh`, the two branches of `sigmoid`.
#[test]
fn inlined_transcendentals_match_the_rust_functions_across_their_range() {
    let mut values: Vec<f64> = SPECIAL.to_vec();
    let mut x = -760.0;
    while x < 760.0 {
        values.push(x);
        x += 0.373;
    }
    let mut tiny = 1e-320;
    while tiny < 1.0 {
        values.extend([tiny, -tiny]);
        tiny *= 3.7;
    }
    values.extend([
        709.78, 709.79, -708.4, -744.9, -745.2, 19.06, -40.0, 40.0, 41.0,
    ]);
    let a = Id::from(0usize);
    for op in [Math::Exp([a]), Math::Tanh([a]), Math::Sigmoid([a])] {
        let group = FusedGroup {
            inputs: 1,
            steps: vec![(TOp::Map(op), smallvec![0])],
            results: smallvec![1],
            sum_over: None,
        };
        check(&group, std::slice::from_ref(&values), values.len());
        check(&group, std::slice::from_ref(&values), values.len() - 1);
    }
}

/// A program's copies (short, long, odd), zero fills, groups over
/// streamed and uniform operands, and calls, against the same steps
/// written out in Rust.
#[test]
fn programs_copy_fill_compute_and_call_in_order() {
    use super::{Arg, Piece, Place, compile_program};
    extern "C" fn double_into(from: *const f64, len: usize, out: *mut f64) {
        // SAFETY: the program passes `len` numbers at each address.
        let (from, out) = unsafe {
            (
                std::slice::from_raw_parts(from, len),
                std::slice::from_raw_parts_mut(out, len),
            )
        };
        for (o, x) in out.iter_mut().zip(from) {
            *o = 2.0 * x;
        }
    }
    let at = |base, offset| Place { base, offset };
    let a = Id::from(0usize);
    let group = std::sync::Arc::new(FusedGroup {
        inputs: 2,
        steps: vec![
            (TOp::Map(Math::Mul([a; 2])), smallvec![0, 1]),
            (TOp::Map(Math::Tanh([a])), smallvec![2]),
        ],
        results: smallvec![3],
        sum_over: None,
    });
    let pieces = vec![
        Piece::Copy {
            to: at(1, 0),
            from: at(0, 3),
            len: 17,
        },
        Piece::Copy {
            to: at(1, 17),
            from: at(0, 0),
            len: 3,
        },
        Piece::Zero {
            to: at(1, 20),
            len: 11,
        },
        Piece::Group {
            group,
            operands: smallvec![(at(1, 0), false), (at(0, 40), true)],
            out: at(2, 1),
            n: 21,
        },
        Piece::Call {
            function: double_into as *const () as usize,
            args: smallvec![Arg::At(at(2, 1)), Arg::Number(21), Arg::At(at(2, 30))],
        },
    ];
    let program = compile_program(&pieces).expect("compiles");
    let mut source: Vec<f64> = (0..41).map(|i| (i as f64 * 0.3).sin()).collect();
    let mut middle = vec![f64::NAN; 31];
    let mut out = vec![f64::NAN; 51];
    let table = [source.as_mut_ptr(), middle.as_mut_ptr(), out.as_mut_ptr()];
    // SAFETY: every place above lies inside these buffers.
    unsafe { program.run(&table) };
    let mut want_middle: Vec<f64> = source[3..20].to_vec();
    want_middle.extend_from_slice(&source[0..3]);
    want_middle.extend([0.0; 11]);
    assert_eq!(middle, want_middle);
    for i in 0..21 {
        let value = crate::scalar::tanh(middle[i] * source[40]);
        assert!(same(out[1 + i], value), "element {i}");
        assert!(same(out[30 + i], 2.0 * value), "element {i}, doubled");
    }
    assert!(out[0].is_nan(), "nothing written before the output");
}

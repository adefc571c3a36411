//! Native kernels (src/backends/cpu/native) under adversarial input:
//! programs compared bit for bit with the interpreter (NaNs of any sign
//! or payload count as equal: the interpreter's own vectorized loops do
//! not keep one NaN's sign either), kernels with uniform and known
//! operands against an interpreter of the same layouts, wide groups, and
//! malformed groups. Written by the review of the native kernels.

use epsilon::backends::cpu::native;
use epsilon::{Engine, Value};
use ndarray::{ArrayD, IxDyn};

fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|error| panic!("{source}\n{}", error.render()))
}

fn parts(value: &Value) -> Vec<ArrayD<f64>> {
    match value {
        Value::Int(n) => vec![ArrayD::from_elem(IxDyn(&[]), *n as f64)],
        Value::Float(x) => vec![ArrayD::from_elem(IxDyn(&[]), *x)],
        Value::Tensor(t) => vec![t.as_ref().clone()],
        v if v.is_list() => v.list_to_vec().unwrap().iter().flat_map(parts).collect(),
        other => panic!("expected numbers, got {other}"),
    }
}

/// Differences between native and interpreted values of `form` (NaNs of
/// any sign or payload count as equal).
fn differences(engine: &mut Engine, form: &str) -> Vec<String> {
    native::set_native_kernels(true);
    let before = native::kernels_compiled();
    let on = parts(&eval(engine, form));
    let compiled = native::kernels_compiled() - before;
    native::set_native_kernels(false);
    let off = parts(&eval(engine, form));
    native::set_native_kernels(true);
    let mut found = Vec::new();
    for (p, (a, b)) in on.iter().zip(&off).enumerate() {
        assert_eq!(a.shape(), b.shape(), "{form}");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let same = x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
            if !same && found.len() < 5 {
                found.push(format!(
                    "{form}: part {p} element {i}: native {x:e} ({:#x}), interpreted {y:e} ({:#x}) [{compiled} kernels]",
                    x.to_bits(),
                    y.to_bits()
                ));
            }
        }
    }
    found
}

mod layouts {
    use epsilon::backends::cpu::apply_chunk;
    use epsilon::backends::cpu::native::{Operand, compile};
    use epsilon::egraph::{Constant, Math};
    use epsilon::ir::{CmpOp, RoundOp, TOp};
    use epsilon::tape::FusedGroup;
    use proptest::prelude::*;
    use smallvec::{SmallVec, smallvec};

    fn operations() -> Vec<(TOp, usize)> {
        let a = egg::Id::from(0usize);
        let mut ops: Vec<(TOp, usize)> = [
            Math::Add([a; 2]),
            Math::Sub([a; 2]),
            Math::Mul([a; 2]),
            Math::Div([a; 2]),
            Math::Pow([a; 2]),
            Math::Min([a; 2]),
            Math::Max([a; 2]),
            Math::Xlogy([a; 2]),
            Math::Heaviside([a; 2]),
            Math::Hypot([a; 2]),
            Math::Logaddexp([a; 2]),
        ]
        .into_iter()
        .map(|m| (TOp::Map(m), 2))
        .collect();
        ops.extend(
            [
                Math::Neg([a]),
                Math::Abs([a]),
                Math::Sqrt([a]),
                Math::Exp([a]),
                Math::Sign([a]),
                Math::Square([a]),
                Math::Sinc([a]),
            ]
            .into_iter()
            .map(|m| (TOp::Map(m), 1)),
        );
        for cmp in [CmpOp::Lt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne] {
            ops.push((TOp::Compare(cmp), 2));
        }
        ops.push((TOp::Round(RoundOp::Floor), 1));
        ops.push((TOp::Where, 3));
        ops.push((TOp::Where, 3));
        ops.push((TOp::Map(Math::Num(Constant::new(1.0).unwrap())), 0));
        ops.push((TOp::Map(Math::Num(Constant::new(-0.0).unwrap())), 0));
        ops
    }

    const SPECIAL: [f64; 10] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        0.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3.0,
    ];

    /// The interpreter's answer, reading uniform and known operands as
    /// their first element everywhere.
    fn interpret(
        group: &FusedGroup,
        operands: &[Vec<f64>],
        layout: &[Operand],
        len: usize,
    ) -> Vec<f64> {
        let mut registers: Vec<Vec<f64>> = operands
            .iter()
            .zip(layout)
            .map(|(o, l)| match l {
                Operand::Streamed => o[..len].to_vec(),
                Operand::Uniform => vec![o[0]; len],
                Operand::Known(x) => vec![*x; len],
            })
            .collect();
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

    fn strategy() -> impl Strategy<Value = (FusedGroup, Vec<Vec<f64>>, Vec<u8>, usize)> {
        let ops = operations();
        (1usize..6, 1usize..14, 0usize..21).prop_flat_map(move |(inputs, steps, len)| {
            let ops = ops.clone();
            let picks = proptest::collection::vec((0..ops.len(), any::<[u16; 3]>()), steps);
            let value = prop_oneof![
                2 => -3.0f64..3.0,
                3 => proptest::sample::select(SPECIAL.to_vec()),
            ];
            let data =
                proptest::collection::vec(proptest::collection::vec(value, len.max(1)), inputs);
            let kinds = proptest::collection::vec(0u8..3, inputs);
            (picks, data, kinds).prop_map(move |(picks, data, kinds)| {
                let steps = picks
                    .iter()
                    .enumerate()
                    .map(|(s, (o, raw))| {
                        let (op, arity) = ops[*o].clone();
                        let registers = (inputs + s) as u16;
                        (op, raw[..arity].iter().map(|r| r % registers).collect())
                    })
                    .collect::<Vec<_>>();
                let group = FusedGroup {
                    inputs,
                    results: smallvec![(inputs + steps.len() - 1) as u16],
                    steps,
                    sum_over: None,
                };
                (group, data, kinds, len)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        /// Uniform and known operands (folding, `where` on a known
        /// condition, products with 1) give the interpreter's bits.
        #[test]
        fn kernels_with_uniform_and_known_operands_match((group, data, kinds, len) in strategy()) {
            let layout: Vec<Operand> = kinds
                .iter()
                .zip(&data)
                .map(|(k, d)| match k {
                    0 => Operand::Streamed,
                    1 => Operand::Uniform,
                    _ => Operand::Known(d[0]),
                })
                .collect();
            let kernel = compile(&group, &layout).expect("compiles");
            let mut out = vec![f64::NAN; len];
            let slices: Vec<&[f64]> = data.iter().map(|d| &d[..]).collect();
            kernel.handle().run(&slices, &mut out);
            let want = interpret(&group, &data, &layout, len);
            for i in 0..len {
                prop_assert!(
                    out[i].to_bits() == want[i].to_bits() || (out[i].is_nan() && want[i].is_nan()),
                    "element {}: native {:e}, interpreter {:e}; {:?} {:?}", i, out[i], want[i], group.steps, layout
                );
            }
        }
    }

    /// More than 16 operands (the smallvec spills) and exactly 64 (the
    /// widest a kernel takes): one kernel, the interpreter's bits; 65 is
    /// refused.
    #[test]
    fn wide_groups() {
        for inputs in [17usize, 63, 64, 65] {
            let a = egg::Id::from(0usize);
            let mut steps: Vec<(TOp, SmallVec<[u16; 3]>)> =
                vec![(TOp::Map(Math::Mul([a; 2])), smallvec![0, 1])];
            for k in 2..inputs {
                let last = (inputs + steps.len() - 1) as u16;
                let op = if k % 3 == 0 {
                    Math::Sub([a; 2])
                } else {
                    Math::Add([a; 2])
                };
                steps.push((TOp::Map(op), smallvec![last, k as u16]));
            }
            let group = FusedGroup {
                inputs,
                results: smallvec![(inputs + steps.len() - 1) as u16],
                steps,
                sum_over: None,
            };
            let layout: Vec<Operand> = (0..inputs)
                .map(|k| match k % 3 {
                    0 => Operand::Streamed,
                    1 => Operand::Uniform,
                    _ => Operand::Known(k as f64 * 0.25),
                })
                .collect();
            let kernel = compile(&group, &layout);
            if inputs > 64 {
                assert!(kernel.is_err());
                continue;
            }
            let kernel = kernel.unwrap();
            let len = 37;
            let data: Vec<Vec<f64>> = (0..inputs)
                .map(|k| {
                    (0..len)
                        .map(|i| {
                            ((i * 7 + k * 13) % 11) as f64 - 5.5
                                + if k % 3 == 2 { 0.0 } else { 0.1 }
                        })
                        .collect::<Vec<f64>>()
                })
                .enumerate()
                .map(|(k, mut v)| {
                    if let Operand::Known(x) = layout[k] {
                        v[0] = x;
                    }
                    v
                })
                .collect();
            let slices: Vec<&[f64]> = data.iter().map(|d| &d[..]).collect();
            let mut out = vec![0.0; len];
            kernel.handle().run(&slices, &mut out);
            assert_eq!(
                out,
                interpret(&group, &data, &layout, len),
                "{inputs} operands"
            );
        }
    }
}

/// Inputs with NaN, ±inf and ±0 sprinkled in, odd lengths around the
/// native threshold (4,096) and the parallel one (32,768), matrices for
/// broadcasting and pads along the first axis, and lists of tensors for
/// wide groups.
const SETUP: &str = r"
(seed! 5)
(define (spiky n)
  (let* ((r (randn (list n))) (k (floor (* 12 (rand (list n))))))
    (where (= k 0) nan (where (= k 1) inf (where (= k 2) (- 0.0 inf)
      (where (= k 3) -0.0 (where (= k 4) 0.0 r)))))))
(define x (spiky 5001))
(define y (spiky 5001))
(define z (spiky 5001))
(define u (randn '(5001)))
(define w (randn '(5001)))
(define x4095 (randn '(4095)))
(define x4096 (randn '(4096)))
(define x4097 (randn '(4097)))
(define x32769 (randn '(32769)))
(define A (randn '(64 65)))
(define col (randn '(64 1)))
(define row (randn '(65)))
(define T (randn '(9 33 17)))
(define (many k n) (if (= k 0) '() (cons (randn (list n)) (many (- k 1) n))))
(define l90 (many 90 4099))
(define (firstn l n) (if (= n 0) '() (cons (car l) (firstn (cdr l) (- n 1)))))
(define (chain xs) (if (null? (cdr xs)) (car xs) (where (car xs) (car (cdr xs)) (chain (cdr (cdr xs))))))
(define (chain2 xs) (if (null? (cdr xs)) (car xs) (* (+ (car xs) (car (cdr xs))) (chain2 (cdr (cdr xs))))))
(define (ros x) (let ((a (slice x 0 -1)) (b (slice x 1)))
  (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))
(define (st2 M) (let ((d (+ (slice M 0 -2) (slice M 2) (* -2.0 (slice M 1 -1))))) (sum (* d d))))
(define (bc M c r) (sum (* (sin (+ (slice M 1) (slice c 1))) (slice (* M r) 0 -1)
                           (where (> (slice M 1) (slice c 0 -1)) 1.0 -0.0))))
(define specials (jit (lambda (a x y)
  (+ (* a x) (where a x y) (pow x a) (min a x) (max x a) (< x a) (/ a x) (* (- a a) y)))))
(define gst2 (grad st2))
";

/// Programs over large tensors: the native kernels give the interpreter's
/// bits (any NaN counts as NaN; see `nan_signs_differ` for why).
#[test]
fn adversarial_programs_match_the_interpreter() {
    let mut engine = Engine::new();
    eval(&mut engine, SETUP);
    let mut failures = Vec::new();
    for form in [
        // Special values through every kind of lowering.
        "((jit (lambda (x y) (list (+ x y) (- x y) (* x y) (/ x y)))) x y)",
        "((jit (lambda (x y) (where (> x y) (min x y) (max x y)))) x y)",
        "((jit (lambda (x y) (list (< x y) (<= x y) (= x y) (/= x y) (>= x y)))) x y)",
        "((jit (lambda (x y z) (where x y z))) x y z)",
        "((jit (lambda (x y) (list (pow x y) (pow x (floor (* 3 y))) (pow x 3) (pow x -2) (pow x 0.5)))) x y)",
        "((jit (lambda (x) (list (abs x) (neg x) (sqrt x) (sign x) (relu x) (floor x) (round x) (ceil x)))) x)",
        "((jit (lambda (x) (list (exp x) (log x) (tanh x) (sigmoid x) (softplus x) (atan2 x 1.0) (heaviside x 0.5) (xlogy x x)))) x)",
        "((jit (lambda (x y) (list (square x) (cbrt x) (exp2 x) (hypot x y) (logaddexp x y) (logaddexp2 x y) (sinc x) (deg2rad x) (rad2deg y)))) x y)",
        "((jit (lambda (x y) (sum (* x y)))) u w)",
        // Numbers passed at run time: known, then read after 4 variants.
        "(specials 0.0 x y)",
        "(specials -0.0 x y)",
        "(specials nan x y)",
        "(specials inf x y)",
        "(specials 1.0 x y)",
        "(specials 2.0 x y)",
        "(specials 0.5 x y)",
        "(specials -0.0 x y)",
        "(specials nan x y)",
        "(specials 1.0 x y)",
        // Padded operands, windows, rolls, concatenations.
        "((grad (lambda (x) (sum (* (slice x 1) (slice x 0 -1))))) u)",
        "((grad (lambda (x) (sum (sin (* (roll x 3) x))))) u)",
        "((grad (lambda (x y) (sum (* (concat (list x y)) (concat (list y x)))))) u w)",
        "((grad (lambda (x) (sum (* (concat (list (zeros 7) (slice x 7))) (concat (list (slice x 0 -5) (* 2.5 (ones 5)))))))) u)",
        "((grad (lambda (a x) (sum (* (slice (* a x) 1) (slice x 0 -1)))) :wrt '(0 1)) nan u)",
        "((grad (lambda (a x) (sum (* (slice (* a x) 1) (slice x 0 -1)))) :wrt '(0 1)) -0.0 u)",
        // Around the thresholds.
        "((grad ros) x4095)",
        "((grad ros) x4096)",
        "((grad ros) x4097)",
        "((grad ros) x32769)",
        "((value-and-grad ros) x32769)",
        // Matrices: pads along axis 0, broadcasting, keepdims, tapes over
        // several shapes.
        "(gst2 A)",
        "(gst2 T)",
        "(gst2 A)",
        "((grad bc :wrt '(0 1 2)) A col row)",
        "((grad (lambda (M) (sum (* M (sum M :axis 0 :keepdims #t) (mean M :axis 1 :keepdims #t))))) A)",
        "((jit (lambda (T) (sum (* T (exp T)) :axis '(0 2) :keepdims #t))) T)",
        "(hvp ros (list u) (list w))",
        // Wide groups: 17, 33, 63 and 89 operands (over 64: interpreted).
        "((jit chain) (firstn l90 17))",
        "((jit chain) (firstn l90 33))",
        "((jit chain2) (firstn l90 63))",
        "((jit chain) (firstn l90 89))",
        "((grad (lambda (xs) (sum (chain2 xs)))) (firstn l90 41))",
    ] {
        failures.extend(differences(&mut engine, form));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A malformed group (a step reading a register that does not exist yet,
/// or with the wrong number of arguments) is refused with an error, and
/// kernels compiled afterwards on the same thread work. (Found by review:
/// it used to panic half-way through building, leaving the thread's reused
/// builder state broken, so every later kernel silently fell back to the
/// interpreter.)
#[test]
fn a_malformed_group_is_refused_and_later_groups_compile() {
    use epsilon::backends::cpu::native::{Operand, compile};
    use epsilon::egraph::Math;
    use epsilon::ir::TOp;
    use epsilon::tape::FusedGroup;
    let id = egg::Id::from(0usize);
    let bad = FusedGroup {
        inputs: 1,
        steps: vec![
            (TOp::Map(Math::Exp([id])), smallvec::smallvec![0]),
            (TOp::Map(Math::Add([id; 2])), smallvec::smallvec![1]),
        ],
        results: smallvec::smallvec![2],
        sum_over: None,
    };
    let refused = compile(&bad, &[Operand::Streamed]);
    let good = FusedGroup {
        inputs: 2,
        steps: vec![(TOp::Map(Math::Mul([id; 2])), smallvec::smallvec![0, 1])],
        results: smallvec::smallvec![2],
        sum_over: None,
    };
    assert!(refused.is_err(), "the malformed group is refused");
    let kernel = compile(&good, &[Operand::Streamed, Operand::Streamed])
        .expect("a valid group compiles after an earlier panic");
    let (a, b) = (vec![2.0; 5], vec![3.0; 5]);
    let mut out = vec![0.0; 5];
    kernel.handle().run(&[&a, &b], &mut out);
    assert_eq!(out, vec![6.0; 5]);
}

//! The NumPy functions added as rows of the elementwise table (`square`,
//! `cbrt`, `exp2`, `hypot`, `logaddexp`, `logaddexp2`, `sinc`, `deg2rad`,
//! `rad2deg`): values against NumPy's at chosen points, edges included
//! (`sinc` at 0, `logaddexp` with infinities, `hypot` of huge and tiny
//! numbers, `cbrt` of negatives), the same bits from the scalar kernels,
//! the eager built-ins, symbolic `evaluate` and compiled tapes of every
//! size (interpreted, planned, native); derivatives at their edge points
//! (`cbrt` at 0, `hypot` at the origin, `sinc` at and near 0,
//! `logaddexp` at ties and infinities) in symbolic, reverse and forward
//! mode; and the printed symbolic derivatives. Finite-difference
//! properties are in `tests/derivatives.rs` and `tests/numeric/ops.rs`,
//! kernels in `tests/native_kernels.rs` and the CUDA tests, generated
//! code in `tests/formulas.rs`.

use epsilon::{Engine, Value, scalar, symbolic};

/// (function, arguments, NumPy's value), from NumPy 2.4 on x86-64 glibc.
const NUMPY: &[(&str, &[f64], f64)] = &[
    ("square", &[3.0], 9.0),
    ("square", &[-1.5], 2.25),
    ("square", &[1e-200], 0.0),
    ("square", &[1e200], f64::INFINITY),
    ("square", &[-0.0], 0.0),
    ("cbrt", &[-8.0], -2.0),
    ("cbrt", &[27.0], 3.0),
    ("cbrt", &[2.0], 1.259_921_049_894_873_2),
    ("cbrt", &[-0.0], -0.0),
    ("cbrt", &[1e-300], 1e-100),
    ("cbrt", &[-5e-324], -1.703_183_936_003_260_3e-108),
    ("exp2", &[10.0], 1024.0),
    ("exp2", &[-1.5], 0.353_553_390_593_273_8),
    ("exp2", &[0.5], std::f64::consts::SQRT_2),
    ("exp2", &[1024.0], f64::INFINITY),
    ("exp2", &[-1075.0], 0.0),
    ("exp2", &[-1074.0], 5e-324),
    ("hypot", &[3.0, 4.0], 5.0),
    ("hypot", &[1e300, 1e300], 1.414_213_562_373_095_2e300),
    ("hypot", &[1e-300, 1e-300], 1.414_213_562_373_095e-300),
    ("hypot", &[f64::INFINITY, f64::NAN], f64::INFINITY),
    ("hypot", &[-5.0, 0.0], 5.0),
    ("hypot", &[0.0, 0.0], 0.0),
    (
        "logaddexp",
        &[f64::NEG_INFINITY, f64::NEG_INFINITY],
        f64::NEG_INFINITY,
    ),
    ("logaddexp", &[f64::INFINITY, f64::INFINITY], f64::INFINITY),
    (
        "logaddexp",
        &[f64::INFINITY, f64::NEG_INFINITY],
        f64::INFINITY,
    ),
    ("logaddexp", &[1000.0, 1000.0], 1_000.693_147_180_559_9),
    ("logaddexp", &[1.0, 2.0], 2.313_261_687_518_223),
    ("logaddexp", &[-1000.0, -1001.0], -999.686_738_312_481_8),
    ("logaddexp", &[f64::NEG_INFINITY, 3.0], 3.0),
    ("logaddexp", &[0.0, f64::NAN], f64::NAN),
    (
        "logaddexp2",
        &[f64::NEG_INFINITY, f64::NEG_INFINITY],
        f64::NEG_INFINITY,
    ),
    ("logaddexp2", &[f64::INFINITY, f64::INFINITY], f64::INFINITY),
    ("logaddexp2", &[1.0, 2.0], 2.584_962_500_721_156),
    ("logaddexp2", &[1000.0, 1000.0], 1001.0),
    ("logaddexp2", &[-1074.0, -1075.0], -1_073.415_037_499_279),
    ("logaddexp2", &[f64::NEG_INFINITY, 3.0], 3.0),
    ("sinc", &[0.0], 1.0),
    ("sinc", &[0.5], std::f64::consts::FRAC_2_PI),
    ("sinc", &[1.0], 3.898_171_832_519_375_5e-17),
    ("sinc", &[-2.5], 0.127_323_954_473_516_27),
    ("sinc", &[1e-10], 1.0),
    ("sinc", &[1e300], -2.872_633_251_731_255e-301),
    ("sinc", &[3.25], -0.069_255_101_242_854_35),
    ("deg2rad", &[180.0], std::f64::consts::PI),
    ("deg2rad", &[-90.0], -std::f64::consts::FRAC_PI_2),
    ("deg2rad", &[1.0], 0.017_453_292_519_943_295),
    ("deg2rad", &[5e-324], 0.0),
    ("rad2deg", &[std::f64::consts::PI], 180.0),
    ("rad2deg", &[1.0], 57.295_779_513_082_32),
    ("rad2deg", &[-0.5], -28.647_889_756_541_16),
];

/// The functions this file checks, by their Lisp names.
const FUNCTIONS: [&str; 9] = [
    "square",
    "cbrt",
    "exp2",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "sinc",
    "deg2rad",
    "rad2deg",
];

/// The scalar kernel of `function`.
fn kernel(function: &str, args: &[f64]) -> f64 {
    match function {
        "square" => scalar::square(args[0]),
        "cbrt" => args[0].cbrt(),
        "exp2" => args[0].exp2(),
        "hypot" => args[0].hypot(args[1]),
        "logaddexp" => scalar::logaddexp(args[0], args[1]),
        "logaddexp2" => scalar::logaddexp2(args[0], args[1]),
        "sinc" => scalar::sinc(args[0]),
        "deg2rad" => scalar::deg2rad(args[0]),
        "rad2deg" => scalar::rad2deg(args[0]),
        other => panic!("no kernel {other}"),
    }
}

/// Equal (zeros of either sign equal, NaN equal to NaN), or within two
/// units in the last place: the C library and Epsilon's `exp` may round
/// differently from NumPy's.
fn close(got: f64, want: f64) -> bool {
    if got == want || (got.is_nan() && want.is_nan()) {
        return true;
    }
    got.is_finite() && want.is_finite() && (got - want).abs() <= 4.5e-16 * want.abs()
}

/// The same bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// `x` as Lisp source.
fn lisp(x: f64) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:?}")
    }
}

fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|error| panic!("{source}\n{}", error.render()))
}

fn numbers(value: &Value) -> Vec<f64> {
    match value {
        Value::Float(x) => vec![*x],
        Value::Int(n) => vec![*n as f64],
        Value::Tensor(t) => t.iter().copied().collect(),
        Value::Pair(_) | Value::Nil => value
            .list_to_vec()
            .expect("a proper list")
            .iter()
            .flat_map(numbers)
            .collect(),
        other => panic!("expected numbers, got {other}"),
    }
}

#[test]
fn kernels_give_numpys_values_at_chosen_points() {
    for &(function, args, want) in NUMPY {
        let got = kernel(function, args);
        assert!(
            close(got, want),
            "{function}{args:?}: {got:e}, NumPy {want:e}"
        );
    }
    // Signs NumPy keeps: cbrt of -0 is -0, square of -0 is +0.
    assert!(scalar::square(-0.0).is_sign_positive());
    assert!((-0.0f64).cbrt().is_sign_negative());
}

#[test]
fn builtins_evaluate_and_compiled_tapes_give_the_kernels_bits() {
    let mut engine = Engine::new();
    for function in FUNCTIONS {
        let rows: Vec<&(&str, &[f64], f64)> =
            NUMPY.iter().filter(|(f, _, _)| *f == function).collect();
        let arity = rows[0].1.len();
        let params = ["x", "y"][..arity].join(" ");
        for &&(_, args, _) in &rows {
            let want = kernel(function, args);
            let call = format!(
                "({function} {})",
                args.iter().map(|&a| lisp(a)).collect::<Vec<_>>().join(" ")
            );
            let eager = numbers(&eval(&mut engine, &call))[0];
            assert!(same(eager, want), "{call}: {eager:e}, kernel {want:e}");
            let bindings: Vec<String> = ["x", "y"][..arity]
                .iter()
                .zip(args)
                .map(|(name, &a)| format!("({name} {})", lisp(a)))
                .collect();
            let symbolic = numbers(&eval(
                &mut engine,
                &format!(
                    "(evaluate '({function} {params}) '({}))",
                    bindings.join(" ")
                ),
            ))[0];
            assert!(
                same(symbolic, want),
                "evaluate {call}: {symbolic:e}, kernel {want:e}"
            );
        }
        // Every row's point, repeated to sizes run by the interpreter, by
        // a plan and by native code.
        for size in [7usize, 600, 5003] {
            let columns: Vec<Vec<f64>> = (0..arity)
                .map(|k| (0..size).map(|i| rows[i % rows.len()].1[k]).collect())
                .collect();
            let tensors: Vec<String> = columns
                .iter()
                .map(|c| {
                    let items: Vec<String> = c.iter().map(|&v| lisp(v)).collect();
                    format!("(tensor (list {}))", items.join(" "))
                })
                .collect();
            let got = numbers(&eval(
                &mut engine,
                &format!(
                    "((jit (lambda ({params}) ({function} {params}))) {})",
                    tensors.join(" ")
                ),
            ));
            let eager = numbers(&eval(
                &mut engine,
                &format!("({function} {})", tensors.join(" ")),
            ));
            for i in 0..size {
                let args: Vec<f64> = columns.iter().map(|c| c[i]).collect();
                let want = kernel(function, &args);
                assert!(
                    same(got[i], want) && same(eager[i], want),
                    "{function}{args:?} in a tensor of {size}: jit {:e}, eager {:e}, kernel {want:e}",
                    got[i],
                    eager[i]
                );
            }
        }
    }
}

/// The value of Lisp `source` as numbers.
fn run(source: &str) -> Vec<f64> {
    numbers(&eval(&mut Engine::new(), source))
}

#[test]
fn derivatives_at_the_edges_follow_numpy_and_jax() {
    let cases: &[(&str, &[f64])] = &[
        // cbrt: infinite slope at 0, as NumPy's and JAX's.
        ("((grad cbrt) 0.0)", &[f64::INFINITY]),
        ("(evaluate (diff '(cbrt x) 'x) '((x 0)))", &[f64::INFINITY]),
        ("((grad cbrt) -8.0)", &[1.0 / 12.0]),
        // hypot: 1/2 each at the origin (JAX's convention), x/r elsewhere.
        ("((grad hypot :wrt '(0 1)) 0.0 0.0)", &[0.5, 0.5]),
        (
            "(evaluate (grad '(hypot x y) '(x y)) '((x 0) (y 0)))",
            &[0.5, 0.5],
        ),
        ("((grad hypot :wrt '(0 1)) 3.0 -4.0)", &[0.6, -0.8]),
        ("((grad hypot :wrt '(0 1)) 0.0 -2.0)", &[0.0, -1.0]),
        ("(second (jvp hypot '(0.0 0.0) '(1.0 1.0)))", &[1.0]),
        // logaddexp: sigmoid(x - y); 1/2 each at a tie, 0 and 1 beside -inf.
        ("((grad logaddexp :wrt '(0 1)) 1.0 1.0)", &[0.5, 0.5]),
        ("((grad logaddexp :wrt '(0 1)) -inf 1.0)", &[0.0, 1.0]),
        ("((grad logaddexp :wrt '(0 1)) 1000.0 -1000.0)", &[1.0, 0.0]),
        ("((grad logaddexp2 :wrt '(0 1)) 7.0 7.0)", &[0.5, 0.5]),
        (
            "((grad logaddexp2 :wrt '(0 1)) 1.0 0.0)",
            &[2.0 / 3.0, 1.0 / 3.0],
        ),
        // sinc: 0 at 0, in every mode.
        ("((grad sinc) 0.0)", &[0.0]),
        ("(second (jvp sinc '(0.0) '(1.0)))", &[0.0]),
        ("(evaluate (diff '(sinc x) 'x) '((x 0)))", &[0.0]),
        ("((grad sinc) 1.0)", &[-1.0]),
        ("((grad sinc) 0.5)", &[-4.0 / std::f64::consts::PI]),
        // The others.
        ("((grad square) -1.5)", &[-3.0]),
        ("((grad exp2) 3.0)", &[8.0 * std::f64::consts::LN_2]),
        ("((grad deg2rad) 2.0)", &[std::f64::consts::PI / 180.0]),
        ("((grad rad2deg) 2.0)", &[180.0 / std::f64::consts::PI]),
    ];
    for &(source, want) in cases {
        let got = run(source);
        assert_eq!(got.len(), want.len(), "{source}: {got:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                g == w || (g - w).abs() <= 1e-14 * w.abs().max(1.0),
                "{source}: {got:?}, expected {want:?}"
            );
        }
    }
}

#[test]
fn sinc_derivative_is_accurate_near_zero() {
    // sinc'(x) = -(pi^2/3) x + (pi^4/30) x^3 - ... ; the closed form loses
    // about 1e-16/|x| to cancellation, so 1e-3 keeps ten digits.
    let pi2 = std::f64::consts::PI * std::f64::consts::PI;
    for x in [1e-3, -2e-3, 5e-3] {
        let series =
            -pi2 / 3.0 * x + pi2 * pi2 / 30.0 * x.powi(3) - pi2.powi(3) / 840.0 * x.powi(5);
        for source in [
            format!("((grad sinc) {x:?})"),
            format!("(second (jvp sinc '({x:?}) '(1.0)))"),
            format!("(evaluate (diff '(sinc x) 'x) '((x {x:?})))"),
            format!("(item ((jit (grad (lambda (v) (sum (sinc v))))) (tensor (list {x:?}))))"),
        ] {
            let got = run(&source)[0];
            assert!(
                (got - series).abs() <= 1e-10 * series.abs(),
                "{source}: {got}, series {series}"
            );
        }
    }
}

#[test]
fn symbolic_derivatives_print_as_formulas() {
    for (expr, var, want) in [
        ("(square x)", "x", "(* 2 x)"),
        ("(cbrt x)", "x", "(/ (pow (cbrt x) -2) 3)"),
        ("(exp2 x)", "x", "(* 0.6931471805599453 (exp2 x))"),
        ("(logaddexp x y)", "x", "(sigmoid (- x y))"),
        ("(logaddexp x y)", "y", "(sigmoid (- y x))"),
        (
            "(logaddexp2 x y)",
            "x",
            "(sigmoid (* 0.6931471805599453 (- x y)))",
        ),
        ("(deg2rad x)", "x", "0.017453292519943295"),
        ("(rad2deg x)", "x", "57.29577951308232"),
        // Away from the origin (here: y is a nonzero number), hypot's
        // guard at the origin simplifies away.
        ("(hypot x 3)", "x", "(/ x (hypot x 3))"),
    ] {
        let got = symbolic::diff(expr, var).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(got.to_string(), want, "d/d{var} {expr}");
    }
    // sinc's and hypot's general derivatives keep their guards at 0.
    let sinc = symbolic::diff("(sinc x)", "x")
        .expect("differentiable")
        .to_string();
    assert!(
        sinc.contains("(cos (* 3.141592653589793 x))") && sinc.contains("(sinc x)"),
        "{sinc}"
    );
}

#[test]
fn docstrings_name_numpy() {
    let engine = Engine::new();
    for name in FUNCTIONS {
        let doc = engine
            .doc(name)
            .unwrap_or_else(|| panic!("(doc '{name}) finds nothing"));
        assert!(doc.contains(&format!("NumPy's {name}")), "{name}: {doc}");
    }
}

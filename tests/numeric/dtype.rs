//! Single precision (issue 19, item 2): every tape operation in f32
//! against f64 within f32 rounding, values and gradients, through the
//! tape (`vmap`, which also compiles) and eagerly (a Lisp loop over the
//! examples); `+ - * /` and `sqrt` bit for bit equal to Rust's f32
//! arithmetic, eager, compiled, fused, and with native kernels on and off;
//! NumPy's promotion; the types of derivatives; the tape cache and
//! replays keeping f32 and f64 apart; loops; errors.

use super::vmap::{CASES, SETUP};
use super::*;
use epsilon::backends::cpu::native;

/// Half an f32 unit in the last place.
const EPS32: f64 = f32::EPSILON as f64;

/// The arguments of the cases in f32 (index tensors stay as they are).
const TO_F32: &str = r"
(define xs (astype xs 'f32))
(define ys (astype ys 'f32))
(define ms (astype ms 'f32))
(define ss (astype ss 'f32))
(define w (astype w 'f32))
(define v (astype v 'f32))
";

/// An engine with the cases' arguments drawn from `seed`, in `dtype`.
fn case_engine(batch: usize, seed: u64, dtype: &str) -> Engine {
    let mut engine = engine();
    eval(&mut engine, &format!("(seed! {seed}) (define B {batch})"));
    eval(&mut engine, SETUP);
    if dtype == "f32" {
        eval(&mut engine, TO_F32);
    }
    eval(
        &mut engine,
        &format!("(define (weights n) (astype (sin (* 1.0 (arange n))) '{dtype}))"),
    );
    engine
}

/// Every tensor in `value` (a tree) is f32; numbers pass.
fn all_f32(value: &Value) -> Result<(), String> {
    match value {
        Value::TensorF32(_) | Value::Float(_) | Value::Int(_) => Ok(()),
        Value::Tensor(t) => Err(format!("an f64 tensor of shape {:?}", t.shape())),
        other if other.is_list() => items(other)?.iter().try_for_each(all_f32),
        other => Err(format!("unexpected {other}")),
    }
}

/// The largest difference between two values, relative to the f64
/// value's largest element (at least 1).
fn scaled_gap(f32_value: &Value, f64_value: &Value) -> Result<f64, String> {
    let (a, b) = (parts(f32_value)?, parts(f64_value)?);
    if a.len() != b.len() {
        return Err(format!("{} parts in f32, {} in f64", a.len(), b.len()));
    }
    let mut worst: f64 = 0.0;
    for (x, y) in a.iter().zip(&b) {
        if x.shape() != y.shape() {
            return Err(format!("shapes {:?} and {:?}", x.shape(), y.shape()));
        }
        let scale = y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (p, q) in x.iter().zip(y.iter()) {
            worst = worst.max((p - q).abs() / scale);
        }
    }
    Ok(worst)
}

/// How many f32 units a case may be off: the operations that sum many
/// terms, iterate or solve systems round more often.
fn allowance(name: &str) -> f64 {
    match name {
        "odeint" | "fixed-point" | "while-loop" => 1e5,
        "matrix-exp"
        | "inv-det"
        | "solve"
        | "solve-shared-matrix"
        | "solve-shared-rhs"
        | "triangular-solve"
        | "cumsum-cumprod"
        | "prod-max" => 2e3,
        _ => 300.0,
    }
}

/// How much the case's answer amplifies rounding in its input (never
/// less than one). Eigenvectors (and the derivatives of singular values, which are
/// outer products of singular vectors) move by about `|A| / gap` times
/// a perturbation of `A`, where `gap` is the smallest distance between
/// two eigenvalues (singular values): random matrices now and then have
/// two nearly equal ones, and then f32 is right only to that accuracy.
fn conditioning(double: &mut Engine, name: &str) -> Result<f64, String> {
    let spectrum = match name {
        "eigh" => "(first ((vmap (lambda (s) (eigh s)) :in-axes '(0)) ss))",
        "svd" => "((vmap (lambda (m) (second (svd m))) :in-axes '(0)) ms)",
        _ => return Ok(1.0),
    };
    let value = try_eval(double, spectrum)?;
    let spectra = parts(&value)?;
    let mut worst: f64 = 1.0;
    for row in spectra[0].rows() {
        let mut sorted: Vec<f64> = row.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let size = sorted.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for pair in sorted.windows(2) {
            worst = worst.max(size / (pair[1] - pair[0]).max(f64::MIN_POSITIVE));
        }
    }
    Ok(worst)
}

/// Each case in f32 and f64, batched (compiled) and looped (eager): the
/// f32 results are f32 tensors within the case's allowance of f32 units.
fn check_cases(batch: usize, seed: u64) -> Result<(), String> {
    let mut single = case_engine(batch, seed, "f32");
    let mut double = case_engine(batch, seed, "f64");
    for &(name, f, args, axes, gradient) in CASES {
        // Well separated spectra (|A| / gap below 10) keep the plain
        // allowance.
        let allowed = allowance(name) * (conditioning(&mut double, name)? / 10.0).max(1.0);
        let mut forms = vec![
            format!("((vmap {f} :in-axes '{axes}) {args})"),
            format!("(looped {f} '{axes} (list {args}))"),
        ];
        if gradient {
            // Per-example gradients of a weighted sum.
            let g = format!(
                "(grad (lambda (a . rest) (let ((r (apply {f} a rest))) (sum (* (weights (size r)) (reshape r (list (size r))))))))"
            );
            forms.push(format!("((vmap {g} :in-axes '{axes}) {args})"));
            forms.push(format!("(looped {g} '{axes} (list {args}))"));
        }
        for form in forms {
            let lo = try_eval(&mut single, &form).map_err(|e| format!("{name} f32: {e}"))?;
            let hi = try_eval(&mut double, &form).map_err(|e| format!("{name} f64: {e}"))?;
            // A bracket literal is an f64 tensor: with it the result is
            // f64, as NumPy promotes.
            if !f.contains('[') {
                all_f32(&lo).map_err(|e| format!("{name}: {form}: {e}"))?;
            }
            let gap = scaled_gap(&lo, &hi).map_err(|e| format!("{name}: {e}"))?;
            if gap > allowed * EPS32 {
                return Err(format!(
                    "{name}: {form}: f32 and f64 differ by {gap:e} ({:.0} f32 units)",
                    gap / EPS32
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_operation_in_f32_is_f64_rounded() {
    check_cases(3, 5).unwrap();
}

/// Seed 4307 draws a matrix with eigenvalues 4.2473 and 4.2493: its
/// eigenvectors are right in f32 only to about |A| / gap = 6,000 units,
/// and the check allows for that rather than failing.
#[test]
fn nearly_equal_eigenvalues_are_allowed_their_conditioning() {
    check_cases(2, 4307).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3))]

    /// The same on random batch sizes and values.
    #[test]
    fn f32_results_stay_near_f64_at_random(batch in 1usize..4, seed in 0u64..10_000) {
        check_cases(batch, seed).map_err(TestCaseError::fail)?;
    }
}

/// f32 numbers spanning magnitudes, subnormals and signs included.
fn f32_numbers(len: usize) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(
        prop_oneof![
            -1.0e3f32..1.0e3,
            -1.0f32..1.0,
            (-30i32..30, -1.0f32..1.0).prop_map(|(e, m)| m * 2f32.powi(e)),
            Just(1.0e-40f32),
            Just(-3.0e38f32),
        ],
        len,
    )
}

/// Rust's f32 arithmetic, element by element, as Epsilon should give it.
type Reference = fn(f32, f32) -> f32;

const EXACT: &[(&str, Reference)] = &[
    ("(+ a b)", |a, b| a + b),
    ("(- a b)", |a, b| a - b),
    ("(* a b)", |a, b| a * b),
    ("(/ a b)", |a, b| a / b),
    ("(sqrt (abs a))", |a, _| a.abs().sqrt()),
    ("(* a 0.1)", |a, _| a * 0.1f32),
    ("(+ (* a b) (- a 2.5))", |a, b| a * b + (a - 2.5)),
    ("(/ (- a b) (+ (* a a) 1.0))", |a, b| {
        (a - b) / (a * a + 1.0)
    }),
    ("(neg (max a b))", |a, b| -a.max(b)),
];

/// Evaluates each exact form eagerly, compiled (`jit`) and compiled with
/// native kernels off, and compares bits with Rust's f32 arithmetic. The
/// tensor optimizer may reassociate sums (as a compiler may),
/// so compiled forms run at level 0: what is checked is that the fused
/// kernels round each f32 step.
fn check_exact(a: &[f32], b: &[f32]) -> Result<(), String> {
    let mut engine = engine();
    eval(&mut engine, "(set-optimize! 0)");
    let tensor =
        |v: &[f32]| Value::from(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap());
    engine.set("a", tensor(a));
    engine.set("b", tensor(b));
    for &(form, reference) in EXACT {
        let compiled = format!("((jit (lambda (a b) {form})) a b)");
        for (how, source, native_on) in [
            ("eager", form.to_string(), true),
            ("compiled", compiled.clone(), true),
            ("interpreted", compiled, false),
        ] {
            native::set_native_kernels(native_on);
            let value = try_eval(&mut engine, &source);
            native::set_native_kernels(true);
            let value = value?;
            let Value::TensorF32(got) = &value else {
                return Err(format!("{how} {form}: not an f32 tensor: {value}"));
            };
            for (k, (&x, (&p, &q))) in got.iter().zip(a.iter().zip(b)).enumerate() {
                let want = reference(p, q);
                if x.to_bits() != want.to_bits() && !(x.is_nan() && want.is_nan()) {
                    return Err(format!(
                        "{how} {form} at {k} (a = {p:e}, b = {q:e}): got {x:e}, f32 arithmetic gives {want:e}"
                    ));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Exactly rounded operations give single precision's bits on every
    /// path (double rounding through f64 is innocuous for them).
    #[test]
    fn f32_arithmetic_is_ieee_single_precision(
        (a, b) in (1usize..40).prop_flat_map(|n| (f32_numbers(n), f32_numbers(n)))
    ) {
        check_exact(&a, &b).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn large_f32_groups_give_the_same_bits_natively_and_interpreted() {
    // Long enough for native kernels and parallel chunks.
    let n = 20_001;
    let a: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.37).sin() * 3.0).collect();
    let b: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.11).cos() + 1.5).collect();
    check_exact(&a, &b).unwrap();
    let mut engine = engine();
    engine.set(
        "x",
        Value::from(ArrayD::from_shape_vec(IxDyn(&[n]), a).unwrap()),
    );
    for form in [
        "((jit (lambda (x) (sum (* (atan x) (+ x 0.3) (log1p (abs x)))))) x)",
        "((grad (lambda (x) (sum (* (atan x) (+ x 0.3) (log1p (abs x)))))) x)",
        "((grad (lambda (x) (sum (where (> x 0.5) (* x x) (sin x))))) x)",
    ] {
        native::set_native_kernels(true);
        let on = eval(&mut engine, form);
        native::set_native_kernels(false);
        let off = eval(&mut engine, form);
        native::set_native_kernels(true);
        let (on, off) = (parts(&on).unwrap(), parts(&off).unwrap());
        for (x, y) in on.iter().zip(&off) {
            for (p, q) in x.iter().zip(y) {
                assert_eq!(p.to_bits(), q.to_bits(), "{form}");
            }
        }
    }
}

/// The type `form` evaluates to (`dtype` of it).
fn dtype(engine: &mut Engine, form: &str) -> String {
    eval(engine, &format!("(dtype {form})")).to_string()
}

/// An engine that has evaluated `setup`.
fn engine_with(setup: &str) -> Engine {
    let mut engine = engine();
    eval(&mut engine, setup);
    engine
}

#[test]
fn operations_promote_as_numpy_does() {
    let mut engine = engine_with(
        r"
(define a (astype [1.5 -2.25 3.0] 'f32))
(define d [0.5 0.25 2.0])
(define m (astype (reshape (arange 9.0) '(3 3)) 'f32))",
    );
    for (form, want) in [
        ("(+ a a)", "f32"),
        ("(+ a d)", "f64"),
        ("(* a 2)", "f32"),
        ("(* 0.1 a)", "f32"),
        ("(< a 0)", "f32"),
        ("(* (< d 0) a)", "f64"),
        ("(where (> d 1) a a)", "f32"),
        ("(where (> d 1) a d)", "f64"),
        ("(matmul m m)", "f32"),
        ("(matmul m (astype m 'f64))", "f64"),
        ("(sum a)", "f64"),
        ("(sum a :axis 0 :keepdims #t)", "f32"),
        ("(softmax a)", "f32"),
        ("(concat (list a a))", "f32"),
        ("(concat (list a d))", "f64"),
        ("(exp a)", "f32"),
        ("(inv (+ m (* 10 (eye 3))))", "f64"),
        ("(inv (+ m (astype (* 10 (eye 3)) 'f32)))", "f32"),
        ("(gather a (tensor '(0 2)))", "f32"),
        ("(astype d 'f32)", "f32"),
        ("(astype a 'f64)", "f64"),
        ("1.0", "f64"),
    ] {
        // A sum over everything is a number (numbers have no type: f64).
        assert_eq!(dtype(&mut engine, form), want, "{form}");
        let traced = format!("((jit (lambda (a) {form})) a)");
        assert_eq!(dtype(&mut engine, &traced), want, "traced {form}");
    }
    // Inside a traced function, `dtype` says what the value will be.
    eval(
        &mut engine,
        "(define seen #f) ((jit (lambda (x) (set! seen (list (dtype x) (dtype (* x 1.0)) (dtype (+ x d)))) x)) a)",
    );
    assert_eq!(eval(&mut engine, "seen").to_string(), "(f32 f32 f64)");
}

#[test]
fn derivatives_have_their_variables_types() {
    let mut engine = engine_with(
        r"
(define a (astype [0.5 -1.5 2.0] 'f32))
(define d [0.1 0.2 0.3])
(define (f x y) (sum (* (sin x) (exp y))))
(define (g x) (* x x))",
    );
    for (form, want) in [
        ("((grad f :wrt 'all) a a)", "(f32 f32)"),
        ("((grad f :wrt 'all) a d)", "(f32 f64)"),
        ("((grad f :wrt 'all) d a)", "(f64 f32)"),
        ("((grad (lambda (x) (sum x))) a)", "f32"),
        ("((grad (lambda (x) (sum (* x d)))) a)", "f32"),
        ("((jacobian g) a)", "f32"),
        ("((hessian (lambda (x) (f x x))) a)", "f32"),
        ("(second (jvp g (list a) (list a)))", "f32"),
        ("(second (vjp g (list a) a))", "f32"),
        ("((jacfwd g) a)", "f32"),
        ("((jacrev g) a)", "f32"),
    ] {
        let value = eval(&mut engine, form);
        let types: Vec<String> = match &value {
            v if v.is_list() => items(v)
                .unwrap()
                .iter()
                .map(|leaf| eval_dtype(&mut engine, leaf))
                .collect(),
            leaf => vec![eval_dtype(&mut engine, leaf)],
        };
        let got = match types.len() {
            1 => types[0].clone(),
            _ => format!("({})", types.join(" ")),
        };
        assert_eq!(got, want, "{form}");
    }
    // The f32 gradient is the f64 one within f32 rounding.
    let gap = scaled_gap(
        &eval(&mut engine, "((grad (lambda (x) (f x x))) a)"),
        &eval(&mut engine, "((grad (lambda (x) (f x x))) (astype a 'f64))"),
    )
    .unwrap();
    assert!(gap < 8.0 * EPS32, "{gap:e}");
    // check-grad works in f64 whatever the arguments' type.
    let error = number(&mut engine, "(check-grad f (list a a))");
    assert!(error < 1e-6, "check-grad: {error:e}");
}

/// `dtype` of a value already computed.
fn eval_dtype(engine: &mut Engine, value: &Value) -> String {
    match value {
        Value::TensorF32(_) => "f32".to_string(),
        Value::Tensor(_) | Value::Float(_) | Value::Int(_) => "f64".to_string(),
        other => {
            let _ = engine;
            format!("{other}")
        }
    }
}

#[test]
fn conversions_round_and_widen() {
    let mut engine = engine();
    // 0.1 is not an f32 number: astype rounds it, and widening back is exact.
    assert_eq!(
        eval(&mut engine, "(astype (astype [0.1 1e-50 1e39] 'f32) 'f64)").to_string(),
        format!("[{:?} 0.0 inf]", 0.1f32 as f64)
    );
    assert_eq!(
        eval(&mut engine, "(astype [0.1 2.5] 'f32)").to_string(),
        "#<tensor f32 [0.1 2.5]>"
    );
    assert_eq!(
        eval(&mut engine, "(astype 0.1 'f32)").as_f64().unwrap(),
        0.1f32 as f64
    );
    assert_eq!(
        eval(
            &mut engine,
            "(let ((l (astype (list [1.0] (list [2.0])) 'f32))) (list (dtype (first l)) (dtype (first (second l)))))"
        )
        .to_string(),
        "(f32 f32)"
    );
    // A 0-dimensional f32 result is a number, like an f64 one.
    assert!(matches!(
        eval(&mut engine, "(sum (astype [1.0 2.0] 'f32))"),
        Value::Float(3.0)
    ));
    assert_eq!(
        eval(
            &mut engine,
            "(equal? (astype [1.0 2.0] 'f32) (astype [1.0 2.0] 'f32))"
        )
        .to_string(),
        "#t"
    );
    assert_eq!(
        eval(&mut engine, "(tensor? (astype [1.0] 'f32))").to_string(),
        "#t"
    );
    assert_eq!(
        eval(&mut engine, "(shape (astype (zeros 2 3) 'f32))").to_string(),
        "(2 3)"
    );
    assert_eq!(
        eval(&mut engine, "(nth (astype [1.0 2.5] 'f32) 1)").to_string(),
        "2.5"
    );
}

#[test]
fn the_default_type_makes_tensors() {
    let mut engine = engine();
    eval(&mut engine, "(set-default-dtype! 'f32)");
    for form in [
        "(zeros 2)",
        "(ones 2 3)",
        "(full '(2) 0.5)",
        "(eye 3)",
        "(linspace 0 1 5)",
        "(arange 4.0)",
        "(rand '(3))",
        "(randn 2 2)",
        "(tensor '(1 2))",
    ] {
        assert_eq!(dtype(&mut engine, form), "f32", "{form}");
    }
    // Literals stay f64, as np.array([1.0]) does; :dtype overrides.
    assert_eq!(dtype(&mut engine, "[1.0 2.0]"), "f64");
    assert_eq!(dtype(&mut engine, "(zeros 2 :dtype 'f64)"), "f64");
    assert_eq!(eval(&mut engine, "(default-dtype)").to_string(), "f32");
    eval(&mut engine, "(set-default-dtype! 'f64)");
    assert_eq!(dtype(&mut engine, "(zeros 2)"), "f64");
    assert_eq!(dtype(&mut engine, "(zeros 2 :dtype 'f32)"), "f32");
    assert_eq!(dtype(&mut engine, "(tensor '(1 2) :dtype 'float32)"), "f32");
}

#[test]
fn compiled_tapes_and_replays_keep_the_types_apart() {
    let mut engine = engine_with(
        r"
(define g (jit (lambda (x) (* (sin x) 0.1))))
(define x64 [0.3 0.7])
(define x32 (astype x64 'f32))",
    );
    for _ in 0..2 {
        assert_eq!(dtype(&mut engine, "(g x32)"), "f32");
        assert_eq!(dtype(&mut engine, "(g x64)"), "f64");
    }
    let single = parts(&eval(&mut engine, "(g x32)")).unwrap();
    let double = parts(&eval(&mut engine, "(g x64)")).unwrap();
    for (s, d) in single[0].iter().zip(double[0].iter()) {
        // The f32 result is the f64 one's rounding (sin of the f32 input).
        assert_eq!(*s, ((0.1f32 as f64 * (*s / (0.1f32 as f64))) as f32) as f64);
        assert!((s - d).abs() < 1e-7, "{s} {d}");
    }
    let shown = eval(
        &mut engine,
        "(show-tape (lambda (x) (sum (* x x))) (list x32))",
    )
    .to_string();
    assert!(shown.contains("f32"), "{shown}");
}

#[test]
fn loops_carry_their_types() {
    let mut engine = engine();
    eval(&mut engine, "(define a (astype [1.1 2.2 3.3] 'f32))");
    for (form, want) in [
        ("(scan (lambda (s i) (* s 1.5)) a 3)", "f32"),
        (
            "(first (scan (lambda (s x) (list (* s x) (+ s 1))) 1.0 a))",
            "f64",
        ),
        (
            "(second (scan (lambda (s x) (list (* s x) (+ s 1))) 1.0 a))",
            "f32",
        ),
        (
            "(while-loop (lambda (s) (< (sum s) 100)) (lambda (s) (* s 2)) a)",
            "f32",
        ),
        (
            "((grad (lambda (x) (sum (scan (lambda (s i) (* s (sin s))) x 3)))) a)",
            "f32",
        ),
        (
            "((vmap (lambda (x) (* x 2.0))) (astype (randn 2 3) 'f32))",
            "f32",
        ),
    ] {
        assert_eq!(dtype(&mut engine, form), want, "{form}");
    }
    // A number as the state takes the step's type from the start: the
    // outputs computed from it are f32 too.
    let state = eval(
        &mut engine,
        "(first (scan (lambda (s x) (list (* s x) (+ s 1))) 1.0 a))",
    );
    assert_eq!(state.as_f64().unwrap(), f64::from(1.1f32 * 2.2f32 * 3.3f32));
    // The f32 loop's gradient is the f64 loop's within f32 rounding.
    let gap = scaled_gap(
        &eval(
            &mut engine,
            "((grad (lambda (x) (sum (scan (lambda (s i) (* s (sin s))) x 3)))) a)",
        ),
        &eval(
            &mut engine,
            "((grad (lambda (x) (sum (scan (lambda (s i) (* s (sin s))) x 3)))) (astype a 'f64))",
        ),
    )
    .unwrap();
    assert!(gap < 64.0 * EPS32, "{gap:e}");
}

#[test]
fn type_errors_are_clear() {
    let mut engine = engine();
    eval(&mut engine, "(define a (astype [1.0 2.0] 'f32))");
    for (form, needles) in [
        ("(astype a 'f16)", &["f16", "'f32 and 'f64"][..]),
        ("(astype a 3)", &["'f32 or 'f64"][..]),
        ("(zeros 2 :dtype 'int8)", &["int8"][..]),
        ("(set-default-dtype! 'half)", &["half"][..]),
        ("(dtype \"text\")", &["dtype", "string"][..]),
        (
            "(scan (lambda (s i) (* s [1.0 1.0])) a 2)",
            &["state part 0", "f64 from f32"][..],
        ),
        ("(+ a [1.0 2.0 3.0])", &["[2]", "[3]"][..]),
    ] {
        let error = try_eval(&mut engine, form).expect_err(form);
        for needle in needles {
            assert!(error.contains(needle), "{form}: {error}");
        }
    }
}

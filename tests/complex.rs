//! Complex numbers (SPEC section 8): every operation against NumPy and
//! JAX (`tests/data/complex.tsv`, made by
//! `bench/reference/complex_reference.py`: values, and derivatives under
//! JAX's convention), derivatives against central differences along the
//! real and the imaginary directions (reverse, forward, through `jit` and
//! `scan`), FFT round trips and Parseval, NumPy's promotion, printing and
//! reading back, and the errors bad input gets.

use epsilon::{Engine, Value};

/// Every number of a value, in order, complex numbers as (real,
/// imaginary) pairs.
fn numbers(value: &Value, into: &mut Vec<f64>) {
    match value {
        Value::Float(x) => into.push(*x),
        Value::Int(n) => into.push(*n as f64),
        Value::Tensor(t) => into.extend(t.iter()),
        Value::TensorF32(t) => into.extend(t.iter().map(|&x| f64::from(x))),
        Value::Complex(z) => {
            let (mut re, mut im) = (Vec::new(), Vec::new());
            numbers(&z.re, &mut re);
            numbers(&z.im, &mut im);
            assert_eq!(re.len(), im.len(), "parts of different sizes");
            for (r, i) in re.into_iter().zip(im) {
                into.push(r);
                into.push(i);
            }
        }
        Value::Pair(_) => value.iter().for_each(|(item, _)| numbers(item, into)),
        Value::Bool(b) => into.push(if *b { 1.0 } else { 0.0 }),
        other => panic!("not numbers: {other}"),
    }
}

fn eval(engine: &mut Engine, program: &str) -> Value {
    engine
        .eval(program)
        .unwrap_or_else(|e| panic!("{program}\nfails: {e}"))
}

fn eval_numbers(engine: &mut Engine, program: &str) -> Vec<f64> {
    let mut out = Vec::new();
    numbers(&eval(engine, program), &mut out);
    out
}

/// The message of the error `program` gives (a value is a failure).
fn error(engine: &mut Engine, program: &str) -> String {
    match engine.eval(program) {
        Ok(v) => panic!("{program} gave {v}"),
        Err(e) => e.to_string(),
    }
}

fn assert_close(got: &[f64], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * scale,
            "{what}: number {k} is {g}, expected {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

/// An engine with the reference points of `complex.tsv` defined.
fn reference_engine(table: &str) -> Engine {
    let mut engine = Engine::new();
    for line in table.lines().filter(|l| l.starts_with("#define")) {
        let fields: Vec<&str> = line.split('\t').collect();
        eval(
            &mut engine,
            &format!("(define {} {})", fields[1], fields[2]),
        );
    }
    engine
}

#[test]
fn every_operation_agrees_with_numpy_and_jax() {
    let table = include_str!("data/complex.tsv");
    let mut engine = reference_engine(table);
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (name, program) = (fields[0], fields[1]);
        let want: Vec<f64> = fields[2].split(' ').map(|x| x.parse().unwrap()).collect();
        let got = eval_numbers(&mut engine, program);
        assert_close(&got, &want, 1e-12, &format!("{name}: {program}"));
        rows += 1;
    }
    assert!(rows > 150, "only {rows} rows");
}

/// Every elementwise function with a complex rule, and the operators.
const FUNCTIONS: &[&str] = &[
    "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "tanh", "sigmoid", "square", "exp2", "log2", "log10", "abs", "angle", "conj", "real",
    "imag", "sign",
];

/// A deterministic complex point off the axes and branch cuts.
fn point(k: usize) -> (f64, f64) {
    let r = 0.4 + 0.5 * ((k as f64) * 0.77).sin().abs();
    let theta = 0.3 + 1.0 * ((k as f64) * 1.31).cos().abs();
    let sign = if k.is_multiple_of(2) { 1.0 } else { -1.0 };
    let theta = if k.is_multiple_of(3) {
        std::f64::consts::PI - theta
    } else {
        theta
    };
    (r * theta.cos(), sign * r * theta.sin())
}

/// The gradient of the real function `(real (* w (f z)))` at `z` under
/// JAX's convention, against central differences of the same function
/// along x and y: `grad = df/dx - i df/dy`.
#[test]
fn gradients_match_central_differences_along_both_directions() {
    let mut engine = Engine::new();
    for (k, name) in FUNCTIONS.iter().enumerate() {
        let (x, y) = point(k);
        let (wr, wi) = point(k + 7);
        let body = format!("(real (* #c({wr:?} {wi:?}) ({name} z)))");
        eval(
            &mut engine,
            &format!("(define (objective z) {body}) (define (at x y) (objective (complex x y)))"),
        );
        let h = 1e-6;
        let f = |engine: &mut Engine, x: f64, y: f64| {
            eval_numbers(engine, &format!("(at {x:?} {y:?})"))[0]
        };
        let dx = (f(&mut engine, x + h, y) - f(&mut engine, x - h, y)) / (2.0 * h);
        let dy = (f(&mut engine, x, y + h) - f(&mut engine, x, y - h)) / (2.0 * h);
        let want = [dx, -dy];
        let reverse = eval_numbers(&mut engine, &format!("((grad objective) #c({x:?} {y:?}))"));
        assert_close(&reverse, &want, 1e-6, &format!("grad of {name}"));
        let compiled = eval_numbers(
            &mut engine,
            &format!("((jit (grad objective)) #c({x:?} {y:?}))"),
        );
        assert_close(&compiled, &want, 1e-6, &format!("jit of grad of {name}"));
        // Forward mode: the directional derivative along 1 and along i.
        let along = |engine: &mut Engine, tangent: &str| {
            eval_numbers(
                engine,
                &format!("(jvp objective (list #c({x:?} {y:?})) (list {tangent}))"),
            )[1]
        };
        assert_close(
            &[
                along(&mut engine, "#c(1.0 0.0)"),
                along(&mut engine, "#c(0.0 1.0)"),
            ],
            &[dx, dy],
            1e-6,
            &format!("jvp of {name}"),
        );
    }
}

/// The holomorphic derivative of every holomorphic function against a
/// complex difference quotient `(f(z + h) - f(z - h)) / 2h`.
#[test]
fn holomorphic_derivatives_match_difference_quotients() {
    let mut engine = Engine::new();
    let holomorphic = &FUNCTIONS[..19];
    for (k, name) in holomorphic.iter().enumerate() {
        let (x, y) = point(k + 3);
        let h = 1e-6;
        let plus = eval_numbers(&mut engine, &format!("({name} #c({:?} {y:?}))", x + h));
        let minus = eval_numbers(&mut engine, &format!("({name} #c({:?} {y:?}))", x - h));
        let want = [
            (plus[0] - minus[0]) / (2.0 * h),
            (plus[1] - minus[1]) / (2.0 * h),
        ];
        let got = eval_numbers(
            &mut engine,
            &format!("((grad (lambda (z) ({name} z)) :holomorphic #t) #c({x:?} {y:?}))"),
        );
        assert_close(&got, &want, 1e-6, &format!("{name}'"));
    }
}

#[test]
fn value_and_grad_of_a_holomorphic_function_gives_the_complex_value() {
    let mut engine = Engine::new();
    let got = eval_numbers(
        &mut engine,
        "((value-and-grad (lambda (z) (* z z)) :holomorphic #t) #c(1.0 2.0))",
    );
    assert_close(&got, &[-3.0, 4.0, 2.0, 4.0], 1e-15, "value and f'(z) = 2z");
}

#[test]
fn derivatives_flow_through_scan_vmap_and_checkpoint() {
    let mut engine = Engine::new();
    eval(
        &mut engine,
        "(define (rotate z n) (scan (lambda (s i) (* s #c(0.8 0.6) (+ 1 (* 0.1 (sin s))))) z n :checkpoint 'revolve))
         (define (objective z) (real (* #c(0.3 -0.2) (rotate z 20))))
         (define (at x y) (objective (complex x y)))",
    );
    let (x, y, h) = (0.4, -0.3, 1e-6);
    let f =
        |engine: &mut Engine, x: f64, y: f64| eval_numbers(engine, &format!("(at {x:?} {y:?})"))[0];
    let dx = (f(&mut engine, x + h, y) - f(&mut engine, x - h, y)) / (2.0 * h);
    let dy = (f(&mut engine, x, y + h) - f(&mut engine, x, y - h)) / (2.0 * h);
    let got = eval_numbers(&mut engine, &format!("((grad objective) #c({x:?} {y:?}))"));
    assert_close(&got, &[dx, -dy], 1e-6, "grad through scan");
    // A while-loop with a complex state, differentiated in its factor.
    eval(
        &mut engine,
        "(define (grow z) (real (while-loop (lambda (s) (< (abs s) 10.0)) (lambda (s) (* s z)) #c(1.0 0.0))))
         (define (grow-at x y) (grow (complex x y)))",
    );
    let (x, y) = (1.1, 0.4);
    let g = |engine: &mut Engine, x: f64, y: f64| {
        eval_numbers(engine, &format!("(grow-at {x:?} {y:?})"))[0]
    };
    let dx = (g(&mut engine, x + h, y) - g(&mut engine, x - h, y)) / (2.0 * h);
    let dy = (g(&mut engine, x, y + h) - g(&mut engine, x, y - h)) / (2.0 * h);
    let got = eval_numbers(&mut engine, &format!("((grad grow) #c({x:?} {y:?}))"));
    assert_close(&got, &[dx, -dy], 1e-6, "grad through while-loop");
    // vmap over a batch of complex points gives each point's value.
    let batched = eval_numbers(
        &mut engine,
        "((vmap (lambda (z) (* z (exp z)))) [#c(0.1 0.2) #c(-0.3 0.5)])",
    );
    let single: Vec<f64> = ["#c(0.1 0.2)", "#c(-0.3 0.5)"]
        .iter()
        .flat_map(|z| eval_numbers(&mut engine, &format!("(* {z} (exp {z}))")))
        .collect();
    assert_close(&batched, &single, 1e-14, "vmap");
    let checkpointed = eval_numbers(
        &mut engine,
        "((grad (lambda (z) (real (sum ((checkpoint (lambda (w) (* w (sin w)))) z))))) [#c(0.1 0.2) #c(-0.3 0.5)])",
    );
    let plain = eval_numbers(
        &mut engine,
        "((grad (lambda (z) (real (sum (* z (sin z)))))) [#c(0.1 0.2) #c(-0.3 0.5)])",
    );
    assert_close(&checkpointed, &plain, 1e-14, "checkpoint");
}

#[test]
fn fourier_transforms_round_trip_and_keep_energy() {
    let mut engine = Engine::new();
    eval(
        &mut engine,
        "(define z (complex (randn '(6 10)) (randn '(6 10))))
         (define x (randn '(6 9)))",
    );
    let cases = [
        ("(ifft (fft z))", "z"),
        ("(fft (ifft z :axis 0) :axis 0)", "z"),
        ("(ifft2 (fft2 z))", "z"),
        ("(irfft (rfft x) :n 9)", "x"),
        ("(irfft (rfft x :axis 0) :n 6 :axis 0)", "x"),
        ("(ifft (fft z :norm 'ortho) :norm 'ortho)", "z"),
    ];
    for (round_trip, original) in cases {
        let got = eval_numbers(&mut engine, round_trip);
        let want = eval_numbers(&mut engine, original);
        assert_close(&got, &want, 1e-13, round_trip);
    }
    // Parseval: sum |x|^2 = sum |X|^2 / n along the transformed axis.
    let energy = eval_numbers(&mut engine, "(sum (square (abs z)))")[0];
    let spectrum = eval_numbers(&mut engine, "(/ (sum (square (abs (fft z)))) 10)")[0];
    assert_close(&[spectrum], &[energy], 1e-13, "Parseval");
    let ortho = eval_numbers(&mut engine, "(sum (square (abs (fft2 z :norm 'ortho))))")[0];
    assert_close(&[ortho], &[energy], 1e-13, "Parseval in two dimensions");
}

#[test]
fn numpy_promotion_and_types() {
    let mut engine = Engine::new();
    let cases = [
        ("(dtype #c(1.0 2.0))", "c128"),
        ("(dtype (complex [1.0 2.0] 0.0))", "c128"),
        ("(dtype (complex (astype [1.0 2.0] 'f32) 0.0))", "c64"),
        ("(dtype (* (astype (complex [1.0] 1.0) 'c64) 2.0))", "c64"),
        (
            "(dtype (+ (astype (complex [1.0] 1.0) 'c64) [1.0]))",
            "c128",
        ),
        ("(dtype (+ (astype [1.0] 'f32) #c(0.0 1.0)))", "c64"),
        ("(dtype (astype [1.0 2.0] 'c128))", "c128"),
        ("(type-of #c(1.0 2.0))", "complex"),
        ("(type-of (complex [1.0] 0.0))", "tensor"),
        ("(complex? #c(1.0 2.0))", "#t"),
        ("(complex? 1.0)", "#f"),
        ("(dtype (fft (astype [1.0 2.0 3.0] 'f32)))", "c64"),
    ];
    for (program, want) in cases {
        assert_eq!(eval(&mut engine, program).to_string(), want, "{program}");
    }
}

#[test]
fn complex_values_print_and_read_back() {
    let mut engine = Engine::new();
    for program in [
        "#c(1.0 2.0)",
        "#c(-0.5 1e-300)",
        "[#c(1.0 2.0) #c(3.0 -1.5)]",
        "[[#c(1.0 2.0) 3.0] [0.0 #c(0.0 -1.0)]]",
        "(fft [1.0 2.0 3.0])",
        "(list 1 #c(2.0 3.0))",
        "'(a #c(1 2))",
    ] {
        let first = eval(&mut engine, program);
        let printed = first.to_string();
        let again = eval(&mut engine, &format!("(quote {printed})"));
        let reread = match &again {
            Value::Pair(_) if printed.starts_with('[') => eval(&mut engine, &printed),
            _ => again,
        };
        assert_eq!(reread.to_string(), printed, "{program} printed {printed}");
    }
    assert_eq!(eval(&mut engine, "#c(1 2)").to_string(), "#c(1.0 2.0)");
    assert_eq!(
        eval(&mut engine, "(string->number \"#c(1 -2)\")").to_string(),
        "#c(1.0 -2.0)"
    );
    let f32 = eval(&mut engine, "(astype [#c(1.5 2.0)] 'c64)").to_string();
    assert_eq!(f32, "#<tensor c64 [#c(1.5 2.0)]>");
}

#[test]
fn npy_files_of_complex_kinds_read_and_write() {
    let mut engine = Engine::new();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    // Written by NumPy: complex128 in C order, complex64 in Fortran order.
    let wide = eval(
        &mut engine,
        &format!("(load-npy \"{data}/complex128.npy\")"),
    );
    assert_eq!(
        wide.to_string(),
        "[[#c(1.0 2.0) #c(3.0 -4.0)] [#c(0.0 0.5) #c(-1.0 0.0)]]"
    );
    let single = eval(
        &mut engine,
        &format!("(load-npy \"{data}/complex64_fortran.npy\")"),
    );
    assert_eq!(
        single.to_string(),
        "#<tensor c64 [[#c(1.0 2.0) #c(3.0 -4.0) #c(5.0 0.0)] [#c(0.0 0.5) #c(-1.0 0.0) #c(2.0 -2.0)]]>"
    );
    for (value, name) in [
        ("(fft [1.0 2.0 -0.5])", "wide.npy"),
        ("(astype (fft [1.0 2.0 -0.5]) 'c64)", "single.npy"),
    ] {
        let path = dir.path().join(name);
        let path = path.to_str().unwrap();
        let program =
            format!("(begin (save-npy {value} \"{path}\") (list {value} (load-npy \"{path}\")))");
        let both = eval(&mut engine, &program).list_to_vec().unwrap();
        assert_eq!(both[0].to_string(), both[1].to_string(), "{value}");
    }
}

#[test]
fn bad_input_gets_clear_errors() {
    let mut engine = Engine::new();
    let cases = [
        ("(< #c(1.0 2.0) 1.0)", "complex numbers have no order"),
        ("(max [#c(1.0 2.0)])", "max does not take complex numbers"),
        ("(sort (list #c(1.0 2.0)))", "complex"),
        (
            "(lgamma #c(1.0 2.0))",
            "lgamma does not take complex numbers",
        ),
        (
            "(irfft [#c(1.0 0.0) #c(2.0 0.0)] :n 0)",
            ":n must be a positive length, got 0",
        ),
        ("(irfft (zeros '(0)))", "no elements"),
        ("(rfft [#c(1.0 2.0)])", "rfft takes real input"),
        ("(fft 2.0)", "needs a tensor"),
        ("(fft2 [1.0 2.0])", "rank 2 or more"),
        (
            "(fft [1.0 2.0] :norm 'sideways)",
            ":norm is 'backward, 'ortho or 'forward",
        ),
        ("(astype #c(1.0 2.0) 'f64)", "would drop its imaginary part"),
        (
            "(complex #c(1.0 2.0) 1.0)",
            "real part must be a real number",
        ),
        ("(+ [#c(1.0 2.0) #c(1.0 2.0)] [1.0 2.0 3.0])", "[2]"),
        (
            "((grad (lambda (z) (* z z))) #c(1.0 2.0))",
            "pass :holomorphic #t",
        ),
        (
            "((jacobian (lambda (z) (sin z))) [#c(1.0 2.0)])",
            "needs :holomorphic #t",
        ),
        (
            "((hessian (lambda (z) (real (* z z)))) #c(1.0 2.0))",
            "hessian takes real arguments",
        ),
        (
            "(gather [1.0 2.0] (complex [0.0] 0.0))",
            "cannot be complex",
        ),
        ("#c(1.0)", "complex literal"),
        ("#c(1.0 x)", "complex literal"),
        (
            "(diff '(* x #c(1.0 2.0)) 'x)",
            "write the real and imaginary parts as two expressions",
        ),
    ];
    for (program, expected) in cases {
        let message = error(&mut engine, program);
        assert!(
            message.contains(expected),
            "{program}: {message} does not say {expected}"
        );
        assert!(!message.contains("panicked"), "{program}: {message}");
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn complex_point() -> impl Strategy<Value = (f64, f64)> {
        (0.2f64..1.5, 0.15f64..1.4, prop::bool::ANY, prop::bool::ANY).prop_map(
            |(r, theta, flip_x, flip_y)| {
                let x = r * theta.cos() * if flip_x { -1.0 } else { 1.0 };
                let y = r * theta.sin() * if flip_y { -1.0 } else { 1.0 };
                (x, y)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// exp and log, sqrt and square, sin and asin invert each other,
        /// and the product and quotient rules hold, at random points.
        #[test]
        fn identities_hold((x, y) in complex_point(), (u, v) in complex_point()) {
            let mut engine = Engine::new();
            let z = format!("#c({x:?} {y:?})");
            let w = format!("#c({u:?} {v:?})");
            let want = [x, y];
            for program in [
                format!("(exp (log {z}))"),
                format!("(square (sqrt {z}))"),
                format!("(sin (asin {z}))"),
                format!("(tan (atan {z}))"),
                format!("(cosh (log (+ {z} (sqrt (- (square {z}) 1)))))"),
                format!("(* (/ {z} {w}) {w})"),
                format!("(* (abs {z}) (exp (* #c(0.0 1.0) (angle {z}))))"),
            ] {
                let got = eval_numbers(&mut engine, &program);
                assert_close(&got, &want, 1e-12, &program);
            }
        }

        /// The gradient of |f(z)|^2 for a composition of complex
        /// operations against central differences, in reverse mode and
        /// compiled.
        #[test]
        fn composed_gradients((x, y) in complex_point(), (u, v) in complex_point()) {
            let mut engine = Engine::new();
            eval(&mut engine, &format!(
                "(define (objective z) (square (abs (/ (* (exp z) (sin #c({u:?} {v:?}))) (+ z (sqrt z) 2.0)))))
                 (define (at x y) (objective (complex x y)))"));
            let h = 1e-6;
            let f = |engine: &mut Engine, x: f64, y: f64| eval_numbers(engine, &format!("(at {x:?} {y:?})"))[0];
            let dx = (f(&mut engine, x + h, y) - f(&mut engine, x - h, y)) / (2.0 * h);
            let dy = (f(&mut engine, x, y + h) - f(&mut engine, x, y - h)) / (2.0 * h);
            let got = eval_numbers(&mut engine, &format!("((grad objective) #c({x:?} {y:?}))"));
            assert_close(&got, &[dx, -dy], 1e-5, "grad");
            let compiled = eval_numbers(&mut engine, &format!("((jit (grad objective)) #c({x:?} {y:?}))"));
            assert_close(&compiled, &[dx, -dy], 1e-5, "jit of grad");
        }
    }
}

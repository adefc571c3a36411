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

/// Branch cuts follow NumPy's (C99's) principal branches, signed zeros
/// included, and derivatives on a cut are the one-sided ones of the side
/// the value is taken from.
#[test]
fn branch_cuts_and_signed_zeros() {
    let mut engine = Engine::new();
    let cases: &[(&str, [f64; 2])] = &[
        ("(sqrt #c(-4.0 0.0))", [0.0, 2.0]),
        ("(sqrt #c(-4.0 -0.0))", [0.0, -2.0]),
        ("(log #c(-1.0 -0.0))", [0.0, -std::f64::consts::PI]),
        (
            "(asin #c(2.0 0.0))",
            [std::f64::consts::FRAC_PI_2, 1.316_957_896_924_816_6],
        ),
        (
            "(asin #c(2.0 -0.0))",
            [std::f64::consts::FRAC_PI_2, -1.316_957_896_924_816_6],
        ),
        ("(acos #c(2.0 0.0))", [0.0, -1.316_957_896_924_816_6]),
        ("(sqrt #c(0.0 0.0))", [0.0, 0.0]),
        ("((grad sqrt :holomorphic #t) #c(-4.0 0.0))", [0.0, -0.25]),
    ];
    for (program, want) in cases {
        let got = eval_numbers(&mut engine, program);
        assert_close(&got, want, 1e-15, program);
        // Signs of zero parts too.
        for (g, w) in got.iter().zip(want) {
            if *w == 0.0 {
                assert_eq!(g.abs(), 0.0, "{program}: {got:?}");
            }
        }
    }
    let f32_zero = eval_numbers(&mut engine, "(sqrt (astype (complex [0.0] [0.0]) 'c64))");
    assert_eq!(f32_zero, [0.0, 0.0]);
    // Overflow on the axes: an infinite factor times an exact zero is the
    // zero (signed as C99 and NumPy sign it), not NaN; and log1p near -1.
    let inf = f64::INFINITY;
    let overflow: &[(&str, [f64; 2])] = &[
        ("(exp #c(711.0 -0.0))", [inf, -0.0]),
        ("(expm1 #c(711.0 0.0))", [inf, 0.0]),
        ("(sinh #c(-711.0 -0.0))", [-inf, -0.0]),
        ("(cosh #c(-711.0 0.0))", [inf, -0.0]),
        ("(sin #c(-0.0 711.0))", [-0.0, inf]),
        ("(cos #c(0.0 711.0))", [inf, -0.0]),
        ("(cos #c(-0.0 -711.0))", [inf, -0.0]),
        (
            "(log1p #c(-1.0 1e-10))",
            [-23.025_850_929_940_457, std::f64::consts::FRAC_PI_2],
        ),
        (
            "(log1p #c(1e200 1e200))",
            [460.863_592_189_089_1, std::f64::consts::FRAC_PI_4],
        ),
        ("(log1p #c(1e-20 1e-20))", [1e-20, 1e-20]),
    ];
    for (program, want) in overflow {
        let got = eval_numbers(&mut engine, program);
        for (g, w) in got.iter().zip(want) {
            let same = match w.is_finite() && *w != 0.0 {
                true => (g - w).abs() <= 1e-15 * w.abs(),
                false => g.to_bits() == w.to_bits(),
            };
            assert!(same, "{program}: {got:?}, expected {want:?}");
        }
    }
    // Derivatives on the real axis keep the function's (the guards select
    // the product away from overflow).
    let slope = eval_numbers(&mut engine, "((grad exp :holomorphic #t) #c(1.5 0.0))");
    assert_close(&slope, &[1.5f64.exp(), 0.0], 1e-15, "exp' on the real axis");
    let slope = eval_numbers(&mut engine, "((grad sin :holomorphic #t) #c(0.0 0.7))");
    assert_close(
        &slope,
        &[0.7f64.cosh(), 0.0],
        1e-15,
        "sin' on the imaginary axis",
    );
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

/// Complex values inside a real function of real arguments, under
/// Taylor mode: the Laplacian of a harmonic function's real part is 0,
/// of |z|^2 it is 4.
#[test]
fn laplacians_through_complex_intermediates() {
    let mut engine = Engine::new();
    let harmonic = eval_numbers(
        &mut engine,
        "((laplacian (lambda (p) (real (* (exp (complex (index p 0) (index p 1))) (complex (index p 1) 0.5))))) [0.3 0.7])",
    );
    let by_hessian = eval_numbers(
        &mut engine,
        "(trace ((hessian (lambda (p) (real (* (exp (complex (index p 0) (index p 1))) (complex (index p 1) 0.5))))) [0.3 0.7]))",
    );
    assert_close(
        &harmonic,
        &by_hessian,
        1e-12,
        "Laplacian against the Hessian",
    );
    let zero = eval_numbers(
        &mut engine,
        "((laplacian (lambda (p) (imag (sin (complex (index p 0) (index p 1)))))) [0.3 0.7])",
    );
    assert!(zero[0].abs() < 1e-12, "{zero:?}");
    let four = eval_numbers(
        &mut engine,
        "((laplacian (lambda (p) (square (abs (complex (index p 0) (index p 1)))))) [0.3 0.7])",
    );
    assert_close(&four, &[4.0], 1e-12, "Laplacian of |z|^2");
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
        (
            "(dtype (det (astype (complex [[[1.0 2.0] [3.0 4.0]]] 1.0) 'c64)))",
            "c64",
        ),
        (
            "(dtype (second (eigh (astype (complex (eye 2) 0.0) 'c64))))",
            "c64",
        ),
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
        eval(&mut engine, "(equal? #c(1 2) #c(1.0 2.0))").to_string(),
        "#t"
    );
    assert_eq!(eval(&mut engine, "(not #c(0.0 0.0))").to_string(), "#f");
    assert_eq!(
        eval(&mut engine, "(tensor (list #c(1 2) 3.0))").to_string(),
        "[#c(1.0 2.0) #c(3.0 0.0)]"
    );
    assert_eq!(
        eval(
            &mut engine,
            "(sort (list #c(1 2) #c(0 1)) (lambda (a b) (< (abs a) (abs b))))"
        )
        .to_string(),
        "(#c(0.0 1.0) #c(1.0 2.0))"
    );
    assert_eq!(
        eval(&mut engine, "(string->number \"#c(1 -2)\")").to_string(),
        "#c(1.0 -2.0)"
    );
    let f32 = eval(&mut engine, "(astype [#c(1.5 2.0)] 'c64)").to_string();
    assert_eq!(f32, "#<tensor c64 [#c(1.5 2.0)]>");
}

/// The Hermitian eigendecomposition: reconstruction, orthonormality, the
/// phase convention, and derivatives of functions that depend on the
/// phases (which the convention makes functions of the matrix) against
/// central differences, in reverse and forward mode, jitted and batched.
#[test]
fn hermitian_eigendecomposition_and_its_derivatives() {
    let mut engine = Engine::new();
    eval(
        &mut engine,
        "(seed! 11)
         (define x0 (randn '(5 5))) (define y0 (randn '(5 5)))
         (define (hermitian x y) (let ((a (complex x y))) (+ a (transpose (conj a)))))
         (define h (hermitian x0 y0))
         (define e (eigh h)) (define w (first e)) (define v (second e))
         (define weights (complex (randn '(5 5)) (randn '(5 5))))
         (define (objective x y)
           (let* ((e (eigh (hermitian x y))) (v (second e)))
             (+ (sum (* [0.1 0.2 0.3 0.4 0.5] (first e))) (real (sum (* weights v))))))",
    );
    let residual = eval_numbers(
        &mut engine,
        "(max (abs (- (matmul (* v w) (transpose (conj v))) h)))",
    )[0];
    assert!(residual < 1e-12, "reconstruction {residual}");
    let orthonormal = eval_numbers(
        &mut engine,
        "(max (abs (- (matmul (transpose (conj v)) v) (eye 5))))",
    )[0];
    assert!(orthonormal < 1e-12, "orthonormality {orthonormal}");
    // Each column's largest entry is real and positive.
    let pivots = eval_numbers(
        &mut engine,
        "(let* ((m (abs v)) (p (argmax m :axis 0)))
           (list (take-along (imag v) (reshape p '(1 5)) :axis 0)
                 (take-along (real v) (reshape p '(1 5)) :axis 0)))",
    );
    assert!(pivots[..5].iter().all(|x| *x == 0.0), "{pivots:?}");
    assert!(pivots[5..].iter().all(|x| *x > 0.0), "{pivots:?}");
    // Reverse mode against central differences along random directions.
    let h = 1e-6;
    for seed in 0..3 {
        eval(
            &mut engine,
            &format!("(seed! {seed}) (define dx (randn '(5 5))) (define dy (randn '(5 5)))"),
        );
        let f = |engine: &mut Engine, t: f64| {
            eval_numbers(
                engine,
                &format!("(objective (+ x0 (* {t:?} dx)) (+ y0 (* {t:?} dy)))"),
            )[0]
        };
        let want = (f(&mut engine, h) - f(&mut engine, -h)) / (2.0 * h);
        let reverse = eval_numbers(
            &mut engine,
            "(let ((g ((grad objective :wrt '(0 1)) x0 y0)))
               (+ (sum (* (first g) dx)) (sum (* (second g) dy))))",
        )[0];
        assert_close(&[reverse], &[want], 1e-6, "eigh reverse");
        let forward = eval_numbers(
            &mut engine,
            "(second (jvp objective (list x0 y0) (list dx dy)))",
        )[0];
        assert_close(&[forward], &[want], 1e-6, "eigh forward");
        let compiled = eval_numbers(
            &mut engine,
            "(let ((g ((jit (grad objective :wrt '(0 1))) x0 y0)))
               (+ (sum (* (first g) dx)) (sum (* (second g) dy))))",
        )[0];
        assert_close(&[compiled], &[want], 1e-6, "eigh jitted");
    }
    // A stack of matrices, and vmap over one, give each matrix's result.
    let stacked = eval_numbers(&mut engine, "(first (eigh (stack (list h (* 2 h)))))");
    let one = eval_numbers(&mut engine, "w");
    let twice: Vec<f64> = one.iter().map(|x| 2.0 * x).collect();
    assert_close(
        &stacked,
        &[one.clone(), twice.clone()].concat(),
        1e-12,
        "stack",
    );
    let mapped = eval_numbers(
        &mut engine,
        "((vmap (lambda (m) (first (eigh m)))) (stack (list h (* 2 h))))",
    );
    assert_close(&mapped, &[one.clone(), twice].concat(), 1e-12, "vmap");
    // One part batched, the other shared.
    let half = eval_numbers(
        &mut engine,
        "((vmap (lambda (x) (first (eigh (+ (complex x 0.0) (complex 0.0 (imag h))))))) (stack (list (real h) (real h))))",
    );
    assert_close(
        &half,
        &[one.clone(), one].concat(),
        1e-12,
        "vmap of one part",
    );
    let dets = eval_numbers(
        &mut engine,
        "((vmap (lambda (x) (second (slogdet (complex x 0.0))))) (stack (list (real h) (* 2 (real h)))))",
    );
    let each = eval_numbers(
        &mut engine,
        "(list (second (slogdet (complex (real h) 0.0))) (second (slogdet (complex (* 2 (real h)) 0.0))))",
    );
    assert_close(&dets, &each, 1e-12, "vmap of slogdet with a shared part");
    let message = error(&mut engine, "(eigh (complex [[1.0 2.0] [0.0 1.0]] 0.0))");
    assert!(message.contains("not Hermitian"), "{message}");
}

/// The determinant of complex matrices: forward mode and vmap against
/// central differences and each matrix (JAX's gradients are in the
/// reference table), singular matrices, and the determinant of a
/// product.
#[test]
fn complex_determinants() {
    let mut engine = Engine::new();
    eval(
        &mut engine,
        "(seed! 5)
         (define a (complex (randn '(4 4)) (randn '(4 4))))
         (define b (complex (randn '(4 4)) (randn '(4 4))))
         (define da (complex (randn '(4 4)) (randn '(4 4))))
         (define (objective m) (det m))",
    );
    let h = 1e-6;
    let plus = eval_numbers(&mut engine, &format!("(det (+ a (* {h:?} da)))"));
    let minus = eval_numbers(&mut engine, &format!("(det (- a (* {h:?} da)))"));
    let want: Vec<f64> = plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| (p - m) / (2.0 * h))
        .collect();
    let forward = eval_numbers(&mut engine, "(second (jvp objective (list a) (list da)))");
    assert_close(&forward, &want, 1e-6, "det forward");
    let product = eval_numbers(&mut engine, "(det (matmul a b))");
    let separate = eval_numbers(&mut engine, "(* (det a) (det b))");
    assert_close(&product, &separate, 1e-12, "det of a product");
    let mapped = eval_numbers(&mut engine, "((vmap det) (stack (list a b)))");
    let each = eval_numbers(&mut engine, "(list (det a) (det b))");
    assert_close(&mapped, &each, 1e-12, "vmap");
    let singular = eval_numbers(&mut engine, "(slogdet (complex [[1.0 2.0] [1.0 2.0]] 0.0))");
    assert_eq!(singular, [0.0, 0.0, f64::NEG_INFINITY]);
}

/// Central differences of `loss` (a Lisp function of one complex
/// matrix) at `x` along `dx`, against its reverse-mode gradient (JAX's
/// convention: the directional derivative is `Re sum(g dx)`), forward
/// mode and the compiled gradient.
fn check_directional(engine: &mut Engine, loss: &str, x: &str, dx: &str, what: &str) {
    let h = 1e-6;
    let at = |engine: &mut Engine, t: f64| {
        eval_numbers(engine, &format!("({loss} (+ {x} (* {t:?} {dx})))"))[0]
    };
    let want = (at(engine, h) - at(engine, -h)) / (2.0 * h);
    let reverse = eval_numbers(
        engine,
        &format!("(real (sum (* ((grad {loss}) {x}) {dx})))"),
    )[0];
    assert_close(&[reverse], &[want], 1e-6, &format!("{what} reverse"));
    let forward = eval_numbers(
        engine,
        &format!("(second (jvp {loss} (list {x}) (list {dx})))"),
    )[0];
    assert_close(&[forward], &[want], 1e-6, &format!("{what} forward"));
    let compiled = eval_numbers(
        engine,
        &format!("(real (sum (* ((jit (grad {loss})) {x}) {dx})))"),
    )[0];
    assert_close(&[compiled], &[want], 1e-6, &format!("{what} jitted"));
}

/// Cholesky, QR and SVD of complex matrices: reconstructions,
/// orthonormality and the phase conventions; derivatives of losses that
/// depend on the phases (so the convention itself is differentiated)
/// against central differences in reverse and forward mode and through
/// `jit`, for square, tall and wide matrices; stacks, `vmap` and single
/// precision. JAX's gradients of phase-invariant losses are in the
/// reference table.
#[test]
fn complex_cholesky_qr_and_svd() {
    let mut engine = Engine::new();
    eval(
        &mut engine,
        "(seed! 21)
         (define (crandn shape) (complex (randn shape) (randn shape)))
         (define (adjoint x) (transpose (conj x)))
         (define (worst x) (max (abs x)))
         (define a (crandn '(4 4)))
         (define h (+ (matmul a (adjoint a)) (* 2 (eye 4))))
         (define tall (crandn '(5 3))) (define wide (crandn '(3 5)))",
    );
    for (what, program) in [
        (
            "cholesky reconstruction",
            "(let ((l (cholesky h))) (worst (- (matmul l (adjoint l)) h)))",
        ),
        ("cholesky triangle", "(worst (triu (cholesky h) 1))"),
        (
            "cholesky diagonal",
            "(worst (imag (diagonal (cholesky h))))",
        ),
        (
            "cholesky of the Hermitian part",
            "(let ((k (crandn '(4 4)))) (worst (- (cholesky (+ h (- k (adjoint k)))) (cholesky h))))",
        ),
    ] {
        let value = eval_numbers(&mut engine, program)[0];
        assert!(value < 1e-12, "{what}: {value}");
    }
    let diagonal = eval_numbers(&mut engine, "(real (diagonal (cholesky h)))");
    assert!(diagonal.iter().all(|d| *d > 0.0), "{diagonal:?}");
    for m in ["a", "tall", "wide"] {
        let checks = [
            format!("(let ((f (qr {m}))) (worst (- (matmul (first f) (second f)) {m})))"),
            format!(
                "(let* ((q (first (qr {m}))) (k (second (shape q)))) (worst (- (matmul (adjoint q) q) (eye k))))"
            ),
            format!("(worst (tril (second (qr {m})) -1))"),
            format!("(worst (imag (diagonal (second (qr {m})))))"),
            format!(
                "(let ((f (svd {m}))) (worst (- (matmul (* (first f) (second f)) (third f)) {m})))"
            ),
            format!(
                "(let* ((u (first (svd {m}))) (k (second (shape u)))) (worst (- (matmul (adjoint u) u) (eye k))))"
            ),
            format!(
                "(let* ((vh (third (svd {m}))) (k (first (shape vh)))) (worst (- (matmul vh (adjoint vh)) (eye k))))"
            ),
            // Each column of u: its largest entry is real and positive.
            format!(
                "(let* ((u (first (svd {m}))) (p (argmax (abs u) :axis 0)) (k (second (shape u))))
                   (worst (take-along (imag u) (reshape p (list 1 k)) :axis 0)))"
            ),
        ];
        for program in checks {
            let value = eval_numbers(&mut engine, &program)[0];
            assert!(value < 1e-12, "{program}: {value}");
        }
        let r_diagonal = eval_numbers(&mut engine, &format!("(real (diagonal (second (qr {m}))))"));
        assert!(r_diagonal.iter().all(|d| *d >= 0.0), "{m}: {r_diagonal:?}");
        let s = eval_numbers(&mut engine, &format!("(second (svd {m}))"));
        assert!(
            s.windows(2).all(|w| w[0] >= w[1]) && s[2] >= 0.0,
            "{m}: {s:?}"
        );
        let top = eval_numbers(
            &mut engine,
            &format!(
                "(let* ((u (first (svd {m}))) (p (argmax (abs u) :axis 0)) (k (second (shape u))))
                   (take-along (real u) (reshape p (list 1 k)) :axis 0))"
            ),
        );
        assert!(top.iter().all(|x| *x > 0.0), "{m}: {top:?}");
    }
    // Losses that read the phases, for every shape.
    for seed in 0..2 {
        eval(
            &mut engine,
            &format!(
                "(seed! {seed})
                 (define wq (crandn '(5 5))) (define wr (crandn '(5 5)))
                 (define (corner w rows cols) (slice (slice w 0 rows) 0 cols :axis 1))
                 (define (qr-loss x)
                   (let* ((f (qr x)) (q (first f)) (r (second f)))
                     (+ (real (sum (* (corner wq (first (shape q)) (second (shape q))) q)))
                        (imag (sum (* (corner wr (first (shape r)) (second (shape r))) r))))))
                 (define (svd-loss x)
                   (let* ((f (svd x)) (u (first f)) (vh (third f)))
                     (+ (real (sum (* (corner wq (first (shape u)) (second (shape u))) u)))
                        (sum (* (slice [1.0 -2.0 0.5 3.0] 0 (second (shape u))) (second f)))
                        (imag (sum (* (corner wr (first (shape vh)) (second (shape vh))) vh))))))
                 (define (cholesky-loss x)
                   (real (sum (* (corner wq 4 4)
                                 (cholesky (+ (matmul x (adjoint x)) (* 2 (eye 4))))))))
                 (define da (crandn '(4 4))) (define dt (crandn '(5 3))) (define dw (crandn '(3 5)))"
            ),
        );
        check_directional(&mut engine, "cholesky-loss", "a", "da", "cholesky");
        for (m, dm) in [("a", "da"), ("tall", "dt"), ("wide", "dw")] {
            check_directional(&mut engine, "qr-loss", m, dm, &format!("qr {m}"));
            check_directional(&mut engine, "svd-loss", m, dm, &format!("svd {m}"));
        }
    }
    // Stacks and vmap give each matrix's factorization.
    for f in ["cholesky", "qr", "svd"] {
        let arg = if f == "cholesky" { "h" } else { "a" };
        let stacked = eval_numbers(
            &mut engine,
            &format!("({f} (stack (list {arg} (* 2 {arg}))))"),
        );
        let mapped = eval_numbers(
            &mut engine,
            &format!("((vmap {f}) (stack (list {arg} (* 2 {arg}))))"),
        );
        assert_close(&mapped, &stacked, 1e-12, &format!("vmap of {f}"));
    }
    // An empty batch gives empty results of the examples' shapes.
    for (program, want) in [
        (
            "(shape (second ((vmap svd) (complex (zeros '(0 2 3)) 0.0))))",
            "(0 2)",
        ),
        ("(shape (second ((vmap qr) (zeros '(0 2 3)))))", "(0 2 3)"),
    ] {
        let value = eval(&mut engine, program).to_string();
        assert_eq!(value, want, "{program}");
    }
    let each = eval_numbers(&mut engine, "(list (cholesky h) (cholesky (* 2 h)))");
    let stacked = eval_numbers(
        &mut engine,
        "(let ((l (cholesky (stack (list h (* 2 h)))))) (list (index l 0) (index l 1)))",
    );
    assert_close(&stacked, &each, 1e-12, "a stack of Cholesky factors");
    // Single precision in, single precision out.
    for (program, dtype) in [
        ("(dtype (cholesky (astype h 'c64)))", "c64"),
        ("(dtype (first (qr (astype a 'c64))))", "c64"),
        ("(dtype (second (svd (astype a 'c64))))", "f32"),
    ] {
        let value = eval(&mut engine, program).to_string();
        assert!(value.ends_with(dtype), "{program}: {value}");
    }
    let message = error(
        &mut engine,
        "(cholesky (complex [[1.0 2.0] [2.0 1.0]] 0.0))",
    );
    assert!(message.contains("not positive definite"), "{message}");
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
        ("(sort (list #c(1.0 2.0) #c(0.0 1.0)))", "complex"),
        (
            "(jet (lambda (z) (* z z)) (list #c(1.0 2.0)) (list (list #c(1.0 0.0))))",
            "Taylor mode",
        ),
        (
            "((grad (lambda (x) (* #c(0.0 1.0) x)) :holomorphic #t) 2.0)",
            "needs complex arguments",
        ),
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
        ("(qr [#c(1.0 2.0)])", "qr needs a matrix"),
        (
            "(cholesky (complex [[1.0 2.0 3.0]] 0.0))",
            "cholesky needs square matrices, got shape [1 3]",
        ),
        (
            "(svd (complex [[1.0 2.0] [1.0 2.0]] (/ 0.0 0.0)))",
            "NaN or an infinite entry",
        ),
        (
            "((grad (lambda (m) (real (sum (second (qr m)))))) (complex [[1.0 2.0] [2.0 4.0]] 0.0))",
            "rank deficient",
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

        /// Every complex function at a random point: the gradient in
        /// reverse mode and the derivatives along 1 and i in forward mode
        /// against central differences.
        #[test]
        fn every_function_at_random_points(
            k in 0..FUNCTIONS.len(),
            (x, y) in complex_point(),
            (u, v) in complex_point(),
        ) {
            let name = FUNCTIONS[k];
            let mut engine = Engine::new();
            eval(&mut engine, &format!(
                "(define (objective z) (real (* #c({u:?} {v:?}) ({name} z))))
                 (define (at x y) (objective (complex x y)))"));
            let h = 1e-6;
            let f = |engine: &mut Engine, x: f64, y: f64| eval_numbers(engine, &format!("(at {x:?} {y:?})"))[0];
            let dx = (f(&mut engine, x + h, y) - f(&mut engine, x - h, y)) / (2.0 * h);
            let dy = (f(&mut engine, x, y + h) - f(&mut engine, x, y - h)) / (2.0 * h);
            let got = eval_numbers(&mut engine, &format!("((grad objective) #c({x:?} {y:?}))"));
            assert_close(&got, &[dx, -dy], 1e-5, name);
            let along = |engine: &mut Engine, t: &str| {
                eval_numbers(engine, &format!("(jvp objective (list #c({x:?} {y:?})) (list {t}))"))[1]
            };
            let forward = [along(&mut engine, "#c(1.0 0.0)"), along(&mut engine, "#c(0.0 1.0)")];
            assert_close(&forward, &[dx, dy], 1e-5, name);
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

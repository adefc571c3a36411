//! `check-grad` on composite functions (MLP, Rosenbrock, control flow,
//! closures, nested differentiation, ...), and the structure of results.

use super::*;

/// Definitions the composite functions use.
const COMPOSITE_SETUP: &str = r"
(seed! 3)
(define X (randn '(5 4)))
(define Y (tensor '((1 0 0) (0 1 0) (0 0 1) (1 0 0) (0 1 0))))
(define W1 (* 0.5 (randn '(4 6))))
(define b1 (* 0.1 (randn '(6))))
(define W2 (* 0.5 (randn '(6 3))))
(define b2 (* 0.1 (randn '(3))))
(define (mlp-loss W1 b1 W2 b2)
  (let* ((h (tanh (+ (matmul X W1) b1)))
         (logits (+ (matmul h W2) b2)))
    (neg (mean (sum (* Y (log-softmax logits :axis 1)) :axis 1)))))
(define (mlp-loss-on-data W1 b1 W2 b2 data)
  (let* ((h (tanh (+ (matmul data W1) b1)))
         (p (softmax (+ (matmul h W2) b2) :axis 1)))
    (neg (mean (sum (* Y (log p)) :axis 1)))))
(define (mlp-nested params)
  (let ((l1 (car params)) (l2 (second-of params)))
    (mlp-loss (car l1) (second-of l1) (car l2) (second-of l2))))
(define (rosenbrock x)
  (sum (+ (* 100 (pow (- (slice x 1) (slice x 0 -1)) 2))
          (pow (- 1 (slice x 0 -1)) 2))))
(define (xent z y) (neg (sum (* y (log (softmax z))))))
(define (power-sum x n) (if (= n 0) 0 (+ (/ (pow x n) n) (power-sum x (- n 1)))))
(define (horner cs x) (if (null? cs) 0 (+ (car cs) (* x (horner (cdr cs) x)))))
(define (halve-until x) (if (< (sum (* x x)) 1) (sum (sin x)) (halve-until (* x 0.5))))
(define (logistic r)
  (let ((x 0.3) (i 0))
    (while (< i 20) (set! x (* r x (- 1 x))) (set! i (+ i 1)))
    (sum x)))
(define (shrink x)
  (let ((y x))
    (while (> (sum (* y y)) 0.5) (set! y (* 0.7 (tanh y))))
    (sum (exp y))))
(define (branchy x) (if (> (sum x) 0) (sum (* x x x)) (sum (exp x))))
(define (piecewise t) (cond ((< t -1) (* t t)) ((< t 1) (sin t)) (else (log t))))
(define (make-model A) (lambda (x) (sum (tanh (matmul A x)))))
(define model (make-model (randn '(3 4))))
(define (stable-lse x)
  (let ((m (stop-gradient (max x)))) (+ m (log (sum (exp (- x m)))))))
(define (energy x) (sum (* (sin x) x)))
(define (sin-iterate i acc) (if (< i 4) (sin-iterate (+ i 1) (sin (+ acc 0.5))) acc))
(define v3 [0.3 -0.7 0.5])
(define jit-energy (jit energy))
(define yb [1 0 0 1 1])
(define (logreg w b)
  (let ((z (+ (matmul X w) b))) (mean (- (softplus z) (* yb z)))))
(define G (randn '(3 4)))
(define (layer-norm x)
  (let* ((mu (mean x :axis 1 :keepdims #t))
         (var (mean (pow (- x mu) 2) :axis 1 :keepdims #t)))
    (sum (* G (/ (- x mu) (sqrt (+ var 1e-5)))))))
(define G2 (randn '(3 2)))
(define (attention Q K V)
  (sum (* G2 (matmul (softmax (/ (matmul Q (transpose K)) 2) :axis 1) V))))
(define (smoothness x) (sum (pow (+ (roll x 1) (roll x -1) (* -2 x)) 2)))
(define M (randn '(3 3)))
(define z3 [0.5 -1 2])
(define (gaussian-nll m L)
  (let ((r (- z3 m))) (* 0.5 (dot r (matmul (matmul L (transpose L)) r)))))
(define x3 [0.4 -1.2 2.0])
(define x4 [0.7 -0.3 1.1 0.2])
(define x6 [-1.2 0.9 0.4 1.5 -0.8 1.0])
(define pos3 [0.5 1.2 2.0])
(define neg3 [-0.5 -1.2 0.3])
(define Q (randn '(3 4)))
(define K (randn '(5 4)))
(define V (randn '(5 2)))
(define L3 (+ (eye 3) (* 0.3 (randn '(3 3)))))
";

/// Composite functions: a name and a `(check-grad f args)` form.
#[rustfmt::skip]
const COMPOSITES: &[(&str, &str)] = &[
    ("MLP loss, 2 layers, tanh, softmax cross-entropy", "(check-grad mlp-loss (list W1 b1 W2 b2))"),
    ("MLP loss with the data differentiated too", "(check-grad mlp-loss-on-data (list W1 b1 W2 b2 X))"),
    ("Rosenbrock", "(check-grad rosenbrock (list x6))"),
    ("softmax cross-entropy", "(check-grad xent (list x3 [0.2 0.5 0.3]))"),
    ("recursive power sum", "(check-grad (lambda (x) (sum (power-sum x 6))) (list x3))"),
    ("recursive Horner evaluation", "(check-grad (lambda (x) (sum (horner (list 1 -2 0.5 0.3) x))) (list x4))"),
    ("recursion depth set by a traced value", "(check-grad halve-until (list [3 4]))"),
    ("while loop, fixed count", "(check-grad logistic (list 2.5))"),
    ("while loop, tensor parameter", "(check-grad logistic (list [2.5 3.1 1.5]))"),
    ("while loop, count set by a traced value", "(check-grad shrink (list [2 -1.5]))"),
    ("if on a traced value, then-branch", "(check-grad branchy (list pos3))"),
    ("if on a traced value, else-branch", "(check-grad branchy (list neg3))"),
    ("cond, all three branches", "(check-grad (lambda (a b c) (+ (piecewise a) (piecewise b) (piecewise c))) (list -2.0 0.3 2.5))"),
    ("closure over a captured tensor", "(check-grad model (list x4))"),
    ("stop-gradient in the logsumexp shift", "(check-grad stable-lse (list x4))"),
    ("nested grad (squared gradient norm)", "(check-grad (lambda (x) (sum (pow ((grad energy) x) 2))) (list x3))"),
    ("value-and-grad inside", "(check-grad (lambda (x) (let ((vg ((value-and-grad energy) x))) (+ (car vg) (sum (second-of vg))))) (list x3))"),
    ("hvp inside", "(check-grad (lambda (x) (sum (hvp energy (list x) v3))) (list x3))"),
    ("jvp inside", "(check-grad (lambda (x) (second-of (jvp energy (list x) (list v3)))) (list x3))"),
    ("a jit-compiled function", "(check-grad jit-energy (list x3))"),
    ("logistic regression with softplus", "(check-grad logreg (list x4 0.3))"),
    ("layer norm", "(check-grad layer-norm (list (randn '(3 4))))"),
    ("attention", "(check-grad attention (list Q K V))"),
    ("stencil through roll", "(check-grad smoothness (list x6))"),
    ("to-list, map and apply", "(check-grad (lambda (x) (apply + (map (lambda (r) (* r (cos r))) (to-list x)))) (list x4))"),
    ("foldl over a list of tensors", "(check-grad (lambda (a b c) (sum (foldl (lambda (acc t) (tanh (+ acc t))) a (list b c)))) (list x3 pos3 neg3))"),
    ("tensor built from traced numbers", "(check-grad (lambda (a b) (sum (* (tensor a b (* a b)) [1 2 3]))) (list 0.7 -1.3))"),
    ("tail-recursive loop", "(check-grad (lambda (x) (sum (sin-iterate 0 x))) (list x3))"),
    ("stack, reshape and concat", "(check-grad (lambda (x y) (sum (* (reshape (stack (list x y) :axis 1) '(-1)) (concat (list y (sin x)))))) (list x3 pos3))"),
    ("where, clamp and mod", "(check-grad (lambda (x) (sum (+ (where (> x 0) (sqrt (+ x 1)) (exp x)) (clamp x -0.5 0.5) (mod x 1.3)))) (list [-1.7 -0.3 0.25 0.9 2.1]))"),
    ("a quotient of sums", "(check-grad (lambda (x) (/ (sum (* x x)) (+ 1 (pow (sum x) 2)))) (list x4))"),
    ("Gaussian negative log-likelihood", "(check-grad gaussian-nll (list x3 L3))"),
    ("trace of an outer product", "(check-grad (lambda (a b) (trace (matmul (outer a b) M))) (list x3 pos3))"),
    ("scalar arguments only", "(check-grad (lambda (a b) (* (sin a) (exp (* a b)))) (list 0.4 -0.9))"),
];

#[test]
fn check_grad_is_small_on_composite_functions() {
    assert!(COMPOSITES.len() >= 20, "issue 4 asks for at least 20");
    let mut engine = engine();
    eval(&mut engine, COMPOSITE_SETUP);
    let mut failures = String::new();
    for (name, form) in COMPOSITES {
        match engine.eval(form).map(|v| v.as_f64()) {
            Ok(Ok(error)) if error < 1e-6 => {}
            Ok(Ok(error)) => {
                let _ = writeln!(failures, "{name}: check-grad gives {error}\n    {form}");
            }
            Ok(Err(error)) => {
                let _ = writeln!(failures, "{name}: not a number: {error}\n    {form}");
            }
            Err(error) => {
                let _ = writeln!(failures, "{name}: {}\n    {form}", error.render());
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

/// `check-grad` is an oracle only if it notices a wrong gradient:
/// `stop-gradient` makes `grad` differ from the finite difference on purpose.
#[test]
fn check_grad_notices_a_gradient_that_differs_from_finite_differences() {
    let mut engine = engine();
    let error = eval(
        &mut engine,
        "(check-grad (lambda (x) (* x (stop-gradient x))) (list 3.0))",
    )
    .as_f64()
    .expect("a number");
    assert!(error > 0.1, "check-grad gives {error}");
}

#[test]
fn stop_gradient_treats_its_argument_as_a_constant() {
    let mut engine = engine();
    let cases = [
        // (source, argument, expected gradient as a function of x)
        ("(lambda (x) (* x (stop-gradient x)))", 3.0, 3.0),
        ("(lambda (x) (stop-gradient (* x x)))", 3.0, 0.0),
        ("(lambda (x) (+ (* 2 x) (stop-gradient (sin x))))", 3.0, 2.0),
    ];
    for (source, x, want) in cases {
        let got = eval(&mut engine, &format!("((grad {source}) {x})"))
            .as_f64()
            .unwrap();
        assert!(
            close(got, want, EXACT_TOL),
            "{source}: gradient {got}, expected {want}"
        );
    }
    // Outside a trace it is the identity.
    let same = eval(&mut engine, "(stop-gradient [1 2])");
    assert_eq!(
        array(&same).unwrap(),
        array(&eval(&mut engine, "[1 2]")).unwrap()
    );
}

/// Arguments may be nested lists of tensors: the gradients are the
/// gradients of the flat function, through `grad`, `vjp` and
/// `value-and-grad`. (Their nesting: `bugs::gradient_of_a_nested_list_is_flattened`.)
#[test]
fn gradients_of_nested_parameter_lists_match_the_flat_function() {
    let mut engine = engine();
    eval(&mut engine, COMPOSITE_SETUP);
    let flat = parts(&eval(
        &mut engine,
        "((grad mlp-loss :wrt 'all) W1 b1 W2 b2)",
    ))
    .unwrap();
    let nested = eval(
        &mut engine,
        "((grad mlp-nested) (list (list W1 b1) (list W2 b2)))",
    );
    let out = eval(
        &mut engine,
        "(vjp mlp-nested (list (list (list W1 b1) (list W2 b2))) 1.0)",
    );
    let from_vjp = items(&out).unwrap()[1].clone();
    let out = eval(
        &mut engine,
        "((value-and-grad mlp-nested) (list (list W1 b1) (list W2 b2)))",
    );
    let out = items(&out).unwrap();
    let value = eval(&mut engine, "(mlp-loss W1 b1 W2 b2)")
        .as_f64()
        .unwrap();
    assert!(
        close(out[0].as_f64().unwrap(), value, EXACT_TOL),
        "value-and-grad value"
    );
    for (what, result) in [
        ("grad", &nested),
        ("vjp", &from_vjp),
        ("value-and-grad", &out[1]),
    ] {
        let leaves = parts(result).unwrap();
        assert_eq!(leaves.len(), 4, "{what}: four parameters");
        for (k, (a, b)) in leaves.iter().zip(&flat).enumerate() {
            compare(&format!("{what}, parameter {k}"), a, b, EXACT_TOL).unwrap();
        }
    }
}

/// The shapes of results: `grad` gives the argument's shape (a number for
/// a number), `:wrt` with a list gives a list, `value-and-grad` a pair.
#[test]
fn results_have_the_documented_structure() {
    let mut engine = engine();
    eval(&mut engine, "(define (f x y) (* (sum (* x x)) y))");
    let cases: &[(&str, &str)] = &[
        // (form, the printed structure: shapes of the parts)
        ("((grad f) [1 2 3] 2.0)", "[3]"),
        ("((grad f :wrt 1) [1 2 3] 2.0)", "[]"),
        ("((grad f :wrt '(1 0)) [1 2 3] 2.0)", "([] [3])"),
        ("((grad f :wrt 'all) [[1 2] [3 4]] 2.0)", "([2 2] [])"),
        ("((value-and-grad f) [1 2 3] 2.0)", "([] [3])"),
        (
            "((value-and-grad f :wrt 'all) [1 2 3] 2.0)",
            "([] ([3] []))",
        ),
        ("(vjp f (list [1 2 3] 2.0) 1.0)", "([] ([3] []))"),
        ("(jvp f (list [1 2 3] 2.0) (list [1 0 0] 0.0))", "([] [])"),
        ("(hvp f (list [1 2 3] 2.0) [1 0 0])", "[3]"),
        ("((jacobian (lambda (x) (* x x))) [1 2 3])", "[3 3]"),
        ("((jacobian (lambda (x) (sum x))) [[1 2] [3 4]])", "[2 2]"),
        ("((hessian f) [[1 2] [3 4]] 2.0)", "[2 2 2 2]"),
        ("((hessian (lambda (x) (* x x x))) 2.0)", "[]"),
    ];
    fn structure(value: &Value) -> String {
        if value.is_list() {
            let inner: Vec<String> = items(value).unwrap().iter().map(structure).collect();
            format!("({})", inner.join(" "))
        } else {
            format!("{:?}", array(value).unwrap().shape()).replace(',', "")
        }
    }
    for (form, want) in cases {
        let got = structure(&eval(&mut engine, form));
        assert_eq!(&got, want, "{form}");
    }
}

/// Every way to get a second derivative of a scalar function agrees:
/// reverse over reverse, forward over forward, forward over reverse
/// (`hvp`, `hessian`), reverse over forward, `jacobian` of `grad`; and they
/// agree with finite differences of the first derivative.
#[test]
fn second_derivatives_agree_across_nesting_orders() {
    let mut engine = engine();
    eval(&mut engine, "(define (g x) (* (sin x) (* x x x)))");
    let forms = [
        "((grad (grad g)) {x})",
        "(second-of (jvp (lambda (t) (second-of (jvp g (list t) (list 1.0)))) (list {x}) (list 1.0)))",
        "(hvp g (list {x}) 1.0)",
        "((hessian g) {x})",
        "((grad (lambda (t) (second-of (jvp g (list t) (list 1.0))))) {x})",
        "((jacobian (grad g)) {x})",
        "(second-of (jvp (grad g) (list {x}) (list 1.0)))",
        "(car (second-of (vjp (grad g) (list {x}) 1.0)))",
    ];
    let first = eval(&mut engine, "(grad g)");
    let mut rng = Rng(8);
    for _ in 0..8 {
        let x = rng.uniform(-2.0, 2.0);
        let h = 1e-6 * x.abs().max(1.0);
        let slope = |engine: &mut Engine, at: f64| {
            call(engine, &first, &[Value::Float(at)])
                .and_then(|v| v.as_f64().map_err(|e| e.to_string()))
                .unwrap()
        };
        let fd = (slope(&mut engine, x + h) - slope(&mut engine, x - h)) / (2.0 * h);
        let reference = eval(&mut engine, &forms[0].replace("{x}", &x.to_string()))
            .as_f64()
            .unwrap();
        assert!(
            close(reference, fd, FD_TOL),
            "at {x}: {reference} against finite differences {fd}"
        );
        for form in &forms[1..] {
            let form = form.replace("{x}", &x.to_string());
            let got = eval(&mut engine, &form).as_f64().unwrap();
            assert!(
                close(got, reference, EXACT_TOL),
                "{form} gives {got}, (grad (grad g)) {reference}"
            );
        }
    }
}

/// `logsumexp`, `softmax` and `log-softmax` and their derivatives do not
/// overflow: shifting the input by 1000 leaves the gradient unchanged.
#[test]
fn softmax_family_gradients_are_shift_invariant_and_finite() {
    let mut engine = engine();
    let mut rng = Rng(9);
    for source in [
        "(lambda (x) (logsumexp x))",
        "(lambda (x) (sum (* [1 -2 0.5 3] (softmax x))))",
        "(lambda (x) (sum (* [1 -2 0.5 3] (log-softmax x))))",
    ] {
        let grad = eval(&mut engine, &format!("(grad {source})"));
        for _ in 0..4 {
            let x = rng.array(&[4], R3);
            let base = array(&call(&mut engine, &grad, &[value_of(&x)]).unwrap()).unwrap();
            for shift in [1000.0, -1000.0] {
                let moved =
                    array(&call(&mut engine, &grad, &[value_of(&(&x + shift))]).unwrap()).unwrap();
                compare(&format!("{source} shifted by {shift}"), &moved, &base, 1e-9).unwrap();
            }
        }
    }
}

//! The differentiable functions of the standard library (stdlib/nn.lisp and
//! stdlib/losses.lisp): gradients from `grad` against central finite
//! differences computed here, at random points (proptest). The values and
//! errors of the whole stdlib are in tests/lisp/stdlib.lisp.

use epsilon::Engine;
use ndarray::ArrayD;
use proptest::prelude::*;

/// A function of one vector argument, as Lisp source, with a description.
struct Case {
    name: &'static str,
    /// `(lambda (x) ...)` giving a number; `x` is a vector of `len` values.
    function: &'static str,
    len: usize,
    /// Points closer than this to a kink (|x| or a residual) are skipped.
    kinks: fn(&[f64]) -> bool,
}

fn smooth(_: &[f64]) -> bool {
    true
}

fn away_from_zero(x: &[f64]) -> bool {
    x.iter().all(|v| v.abs() > 1e-3)
}

/// Huber's kinks are at |pred - target| = delta, with targets [0.5 -1 2 0] and delta 1.
fn away_from_huber_kinks(x: &[f64]) -> bool {
    let targets = [0.5, -1.0, 2.0, 0.0];
    x.iter()
        .zip(targets)
        .all(|(p, t)| ((p - t).abs() - 1.0).abs() > 1e-3)
}

const CASES: &[Case] = &[
    Case {
        name: "squeeze",
        function: "(lambda (x) (sum (* [0.3 -1.2 2.0 0.7] (sin (squeeze (reshape x '(4 1)))))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "expand-dims",
        function: "(lambda (x) (sum (* [[0.3] [-1.2] [2.0] [0.7]] (sin (expand-dims x -1)))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "column",
        function: "(lambda (x) (sum (* [0.3 -1.2] (sin (column (reshape x '(2 3)) -2)))))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "gelu",
        function: "(lambda (x) (sum (* [0.3 -1.2 2.0 0.7] (gelu x))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "silu",
        function: "(lambda (x) (sum (* [0.3 -1.2 2.0 0.7] (silu x))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "leaky-relu",
        function: "(lambda (x) (sum (* [0.3 -1.2 2.0 0.7] (leaky-relu x :slope 0.1))))",
        len: 4,
        kinks: away_from_zero,
    },
    Case {
        name: "layer-norm",
        function: "(lambda (x) (sum (* [[0.3 -1.2 2.0] [0.7 1.1 -0.4]] (layer-norm (reshape x '(2 3))))))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "attention (queries)",
        function: "(lambda (x) (sum (* [[1 2] [3 -1]] (attention (reshape x '(2 3)) [[1 0 2] [0 1 -1] [2 1 0]] [[1 2] [0 -1] [3 1]]))))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "attention (keys)",
        function: "(lambda (x) (sum (* [[1 2] [3 -1]] (attention [[1 0 2] [0 1 -1]] (reshape x '(2 3)) [[1 2] [0 -1]]))))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "attention (values)",
        function: "(lambda (x) (sum (* [[1 2] [3 -1]] (attention [[1 0 2] [0 1 -1]] [[1 0 2] [0 1 -1]] (reshape x '(2 2))))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "mse",
        function: "(lambda (x) (mse x [0.5 -1 2 0]))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "huber",
        function: "(lambda (x) (huber x [0.5 -1 2 0]))",
        len: 4,
        kinks: away_from_huber_kinks,
    },
    Case {
        name: "softmax-cross-entropy (classes)",
        function: "(lambda (x) (softmax-cross-entropy (reshape x '(2 3)) [2 0]))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "softmax-cross-entropy (probabilities)",
        function: "(lambda (x) (softmax-cross-entropy (reshape x '(2 3)) [[0.2 0.3 0.5] [1 0 0]]))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "sigmoid-cross-entropy",
        function: "(lambda (x) (sigmoid-cross-entropy x [1 0 0.3 1]))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "dense",
        function: "(lambda (x) (sum (* [1 -2] (tanh (dense (list (reshape x '(2 2)) [0.1 -0.3]) [0.7 1.4])))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "mlp",
        function: "(lambda (x) (sum (mlp (list (list (reshape x '(2 3)) [0.1 0.2 0.3]) (list [[1] [-1] [2]] [0.5])) [[0.3 -0.8] [1.0 0.2]])))",
        len: 6,
        kinks: smooth,
    },
    Case {
        name: "l2-penalty",
        function: "(lambda (x) (l2-penalty (list (slice x 0 2) (list (index x 2) (slice x 3 4)))))",
        len: 4,
        kinks: smooth,
    },
    Case {
        name: "one-hot cross-entropy",
        function: "(lambda (x) (neg (sum (* (one-hot [1 0] 2) (log-softmax (reshape x '(2 2)) :axis -1)))))",
        len: 4,
        kinks: smooth,
    },
];

fn tensor_source(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", parts.join(" "))
}

fn value_at(engine: &mut Engine, x: &[f64]) -> f64 {
    let value = engine
        .eval(&format!("(f {})", tensor_source(x)))
        .expect("f evaluates");
    f64::try_from(value).expect("f gives a number")
}

/// Compares `((grad f) x)` with central differences of `f` around `x`.
fn check(case: &Case, x: &[f64]) -> Result<(), TestCaseError> {
    let mut engine = Engine::new();
    engine
        .eval(&format!("(define f {})", case.function))
        .expect("the function is defined");
    let gradient = engine
        .eval(&format!("((grad f) {})", tensor_source(x)))
        .unwrap_or_else(|e| panic!("{}: grad fails: {e}", case.name));
    let gradient = ArrayD::<f64>::try_from(gradient).expect("the gradient is a tensor");
    prop_assert_eq!(gradient.len(), x.len());
    let h = 1e-6;
    for (i, analytic) in gradient.iter().enumerate() {
        let mut plus = x.to_vec();
        let mut minus = x.to_vec();
        plus[i] += h;
        minus[i] -= h;
        let numeric = (value_at(&mut engine, &plus) - value_at(&mut engine, &minus)) / (2.0 * h);
        let scale = 1.0_f64.max(analytic.abs()).max(numeric.abs());
        prop_assert!(
            (analytic - numeric).abs() <= 1e-5 * scale,
            "{}: d/dx{} at {:?}: grad {} vs finite difference {}",
            case.name,
            i,
            x,
            analytic,
            numeric
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn stdlib_gradients_match_finite_differences(
        which in 0..CASES.len(),
        values in proptest::collection::vec(-2.5f64..2.5, 6),
    ) {
        let case = &CASES[which];
        let x = &values[..case.len];
        prop_assume!((case.kinks)(x));
        check(case, x)?;
    }
}

/// Every case at one fixed point, so each function is checked on every run
/// whatever proptest draws.
#[test]
fn every_case_at_a_fixed_point() {
    let point = [0.7, -1.3, 0.4, 2.1, -0.6, 1.7];
    for case in CASES {
        check(case, &point[..case.len]).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// L-BFGS minimizes smooth functions of several shapes to their known
/// minima, and its gradient-norm report is true.
#[test]
fn lbfgs_finds_known_minima() {
    let mut engine = Engine::new();
    let cases = [
        // Rosenbrock in 4 dimensions: minimum at all ones.
        (
            "(lambda (v) (let ((a (slice v 0 -1)) (b (slice v 1 ()))) (sum (+ (* 100 (pow (- b (* a a)) 2)) (pow (- 1 a) 2)))))",
            "[-1.2 1.0 -0.5 0.3]",
            vec![1.0, 1.0, 1.0, 1.0],
        ),
        // An ill-conditioned quadratic (condition number 10^4).
        (
            "(lambda (v) (sum (* [1 100 10000] (pow (- v [3 -2 0.5]) 2))))",
            "[0 0 0]",
            vec![3.0, -2.0, 0.5],
        ),
        // A log-sum-exp plus a quadratic: the minimum solves softmax(v) + v = 0,
        // whose solution is symmetric: every entry -1/3.
        (
            "(lambda (v) (+ (logsumexp v) (* 0.5 (sum (* v v)))))",
            "[1 2 3]",
            vec![-1.0 / 3.0; 3],
        ),
    ];
    for (f, start, expected) in cases {
        let result = engine
            .eval(&format!("(define r (lbfgs {f} {start})) (list (lookup r 'converged) (to-list (lookup r 'x)) (lookup r 'gradient-norm))"))
            .expect("lbfgs runs");
        let parts = Vec::<epsilon::Value>::try_from(result).expect("a list");
        assert_eq!(
            bool::try_from(parts[0].clone()).ok(),
            Some(true),
            "{f} did not converge"
        );
        let x: Vec<f64> = Vec::<epsilon::Value>::try_from(parts[1].clone())
            .expect("a list")
            .into_iter()
            .map(|v| f64::try_from(v).expect("a number"))
            .collect();
        let gnorm = f64::try_from(parts[2].clone()).expect("a number");
        assert!(gnorm <= 1e-10, "{f}: reported gradient norm {gnorm}");
        // The reported norm is the gradient's at the reported point.
        let actual = f64::try_from(
            engine
                .eval(&format!("(tree-norm ((grad {f}) (lookup r 'x)))"))
                .expect("grad runs"),
        )
        .expect("a number");
        assert!(actual <= 1e-10, "{f}: gradient norm at the result {actual}");
        for (got, want) in x.iter().zip(&expected) {
            assert!(
                (got - want).abs() < 1e-6,
                "{f}: x = {x:?}, expected {expected:?}"
            );
        }
    }
}

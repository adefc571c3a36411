//! Second derivatives of the linear-algebra operations at structured
//! points — the identity, repeated and zero singular values, diagonal and
//! triangular matrices, singular ones — where rules built on a
//! factorization can lose terms (the determinant's Hessian at the
//! identity once dropped its cross terms). Each Hessian, taken in reverse
//! over reverse (`hessian`) and forward over reverse (`jacfwd` of `grad`),
//! is compared with central differences of the gradient, itself checked
//! against differences of the values elsewhere.

use super::*;

/// A function of one square matrix `x` and the points to take its
/// Hessian at.
struct Case {
    name: &'static str,
    function: &'static str,
    points: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "det",
        function: "(lambda (x) (det x))",
        points: &[
            "(eye 2)",
            "(eye 3)",
            "(zeros '(3 3))",
            "[[0 0] [0 1]]",
            "[[1 2 3] [1 2 3] [1 2 3]]",
            "(diag [1.0 1e-3 1e-3])",
            "[[2.0 1.0 0.5] [0.0 0.0 3.0] [0.0 0.0 1.0]]",
            "[[1.0 0.0 0.0] [0.5 2.0 0.0] [0.3 -1.0 2.0]]",
        ],
    },
    Case {
        name: "det squared",
        function: "(lambda (x) (pow (det x) 2))",
        points: &["(* 2 (eye 2))", "(eye 3)", "(diag [3.0 1.0 1.0])"],
    },
    Case {
        name: "log |det|",
        function: "(lambda (x) (second (slogdet x)))",
        points: &[
            "(eye 3)",
            "(diag [2.0 2.0 0.5])",
            "[[2.0 1.0 0.5] [0.0 1.5 3.0] [0.0 0.0 1.0]]",
        ],
    },
    Case {
        name: "inv",
        function: "(lambda (x) (sum (* [[1.0 -0.5 0.3] [0.2 0.7 -1.1] [0.4 0.1 0.9]] (inv x))))",
        points: &[
            "(eye 3)",
            "(diag [2.0 2.0 0.5])",
            "[[2.0 1.0 0.5] [0.0 1.5 3.0] [0.0 0.0 1.0]]",
        ],
    },
    Case {
        name: "solve",
        function: "(lambda (x) (sum (* [1.0 -2.0 0.5] (solve x [0.3 1.0 -0.7]))))",
        points: &["(eye 3)", "[[1.0 0.0 0.0] [0.5 2.0 0.0] [0.3 -1.0 2.0]]"],
    },
    Case {
        name: "cholesky",
        function: "(lambda (x) (sum (* [[1.0 0.0 0.0] [0.5 2.0 0.0] [0.3 -1.0 2.0]] (cholesky (+ (eye 3) (matmul x (transpose x)))))))",
        points: &["(eye 3)", "(zeros '(3 3))", "(diag [1.0 1.0 2.0])"],
    },
    Case {
        name: "triangular-solve",
        function: "(lambda (x) (sum (* [1.0 -2.0 0.5] (triangular-solve (+ (eye 3) (tril x)) [0.3 1.0 -0.7] :lower #t))))",
        points: &["(zeros '(3 3))", "(eye 3)"],
    },
    Case {
        name: "matrix-exp",
        function: "(lambda (x) (sum (* [[1.0 -0.5 0.3] [0.2 0.7 -1.1] [0.4 0.1 0.9]] (matrix-exp x))))",
        points: &[
            "(zeros '(3 3))",
            "(eye 3)",
            "[[0.0 1.0 0.0] [0.0 0.0 1.0] [0.0 0.0 0.0]]",
        ],
    },
    Case {
        name: "qr",
        function: "(lambda (x) (let ((f (qr x))) (+ (sum (* [[1.0 -0.5 0.3] [0.2 0.7 -1.1] [0.4 0.1 0.9]] (first f))) (sum (* [[0.3 1.0 -2.0] [0.0 0.5 1.5] [0.0 0.0 -0.7]] (second f))))))",
        points: &[
            "(eye 3)",
            "(diag [2.0 2.0 0.5])",
            "[[2.0 1.0 0.5] [0.0 1.5 3.0] [0.0 0.0 1.0]]",
        ],
    },
    Case {
        name: "lstsq",
        function: "(lambda (x) (sum (* [1.0 -2.0 0.5] (lstsq x [0.3 1.0 -0.7]))))",
        points: &["(eye 3)", "[[1.0 0.0 0.0] [0.5 2.0 0.0] [0.3 -1.0 2.0]]"],
    },
    Case {
        name: "eigh eigenvalues",
        function: "(lambda (x) (sum (* [1.0 -2.0 3.0] (first (eigh (* 0.5 (+ x (transpose x))))))))",
        points: &[
            "(diag [1.0 2.0 4.0])",
            "[[1.0 0.0 0.0] [0.5 2.0 0.0] [0.3 -1.0 4.0]]",
        ],
    },
    Case {
        name: "svd singular values",
        function: "(lambda (x) (sum (* [1.0 -2.0 3.0] (second (svd x)))))",
        points: &[
            "(diag [4.0 2.0 1.0])",
            "[[4.0 1.0 0.5] [0.0 2.0 1.0] [0.0 0.0 1.0]]",
        ],
    },
];

/// The gradient of `f` at the matrix `x`, flattened.
fn gradient_at(engine: &mut Engine, x: &ArrayD<f64>) -> Vec<f64> {
    let g = call_named(engine, "gradient-of-f", &[value_of(x)]).unwrap();
    array(&g).unwrap().iter().copied().collect()
}

#[test]
fn linalg_hessians_match_differences_of_the_gradient_at_structured_points() {
    for case in CASES {
        let mut engine = engine();
        eval(&mut engine, &format!("(define f {})", case.function));
        eval(&mut engine, "(define gradient-of-f (grad f))");
        for point in case.points {
            let x = array(&eval(&mut engine, &format!("(* 1.0 {point})"))).unwrap();
            let len = x.len();
            let mut want = vec![0.0; len * len];
            let h = 1e-5;
            for j in 0..len {
                let mut plus = x.clone();
                let mut minus = x.clone();
                plus.as_slice_mut().unwrap()[j] += h;
                minus.as_slice_mut().unwrap()[j] -= h;
                let (gp, gm) = (
                    gradient_at(&mut engine, &plus),
                    gradient_at(&mut engine, &minus),
                );
                for i in 0..len {
                    want[i * len + j] = (gp[i] - gm[i]) / (2.0 * h);
                }
            }
            for how in ["(hessian f)", "(jacfwd (grad f))"] {
                let derivative = eval(&mut engine, how);
                let got = call(&mut engine, &derivative, &[value_of(&x)])
                    .unwrap_or_else(|e| panic!("{}: {how} at {point}: {e}", case.name));
                let got = array(&got).unwrap();
                assert_eq!(got.len(), len * len, "{}: {how} at {point}", case.name);
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{}: {how} at {point}: entry {k} ({} {}) is {g}, differences of the gradient give {w}",
                        case.name,
                        k / len,
                        k % len,
                    );
                }
            }
        }
    }
}

/// The determinant of an exactly singular matrix whose factorization meets
/// a zero pivot is 0, not NaN: in plain calls, compiled, batched, in f32
/// and under both modes of differentiation.
#[test]
fn det_of_singular_matrices_is_zero() {
    let mut engine = engine();
    for matrix in [
        "(zeros '(2 2))",
        "[[0 0] [0 1]]",
        "[[1 2 3] [1 2 3] [1 2 3]]",
        "[[1 2] [2 4]]",
    ] {
        for form in [
            format!("(det {matrix})"),
            format!("((jit det) (* 1.0 {matrix}))"),
            format!("(det (astype {matrix} 'f32))"),
            format!("(index (det (stack (list {matrix} {matrix}))) 1)"),
            format!(
                "(index ((vmap det) (stack (list (eye (first (shape {matrix}))) {matrix}))) 1)"
            ),
            format!("(first ((value-and-grad det) (* 1.0 {matrix})))"),
            format!("(first (jvp det (list (* 1.0 {matrix})) (list (ones (shape {matrix})))))"),
        ] {
            let value = number(&mut engine, &form);
            assert_eq!(value, 0.0, "{form}");
        }
    }
    // The gradient there is the adjugate, transposed: 0 for a matrix of
    // rank 1 (to the SVD's rounding).
    let g = array(&eval(
        &mut engine,
        "((grad det) [[1.0 2.0 3.0] [1.0 2.0 3.0] [1.0 2.0 3.0]])",
    ))
    .unwrap();
    assert!(g.iter().all(|v| v.abs() < 1e-13), "{g:?}");
    let g = array(&eval(&mut engine, "((grad det) [[0.0 0.0] [0.0 1.0]])")).unwrap();
    assert_eq!(
        g.iter().copied().collect::<Vec<_>>(),
        vec![1.0, 0.0, 0.0, 0.0]
    );
}

/// Exact Hessian entries: at the 2 x 2 identity the cross term of det is
/// -1, and for det² at the 3 x 3 2I it is 2 det · (-2) = -32.
#[test]
fn det_hessians_keep_their_cross_terms() {
    let mut engine = engine();
    let h = array(&eval(&mut engine, "((hessian det) (eye 2))")).unwrap();
    assert_eq!(h[[0, 1, 1, 0]], -1.0, "{h}");
    assert_eq!(h[[0, 0, 1, 1]], 1.0, "{h}");
    let h = array(&eval(
        &mut engine,
        "((hessian (lambda (x) (pow (det x) 2))) (* 2.0 (eye 3)))",
    ))
    .unwrap();
    assert!((h[[0, 1, 1, 0]] + 32.0).abs() < 1e-9, "{h}");
}

//! Hessians: symmetric, equal to the Jacobian of the gradient and to
//! finite differences of the gradient; `hvp` equal to `H v`.

use super::*;

/// Scalar functions whose Hessians are checked, and their arguments' shapes.
const HESSIAN_SETUP: &str = r"
(seed! 11)
(define A (randn '(4 3)))
(define W (randn '(3 3)))
(define c (randn '(3)))
(define (lse-quadratic x) (+ (logsumexp (matmul A x)) (* 0.5 (sum (* x x)))))
(define (rosenbrock x)
  (sum (+ (* 100 (pow (- (slice x 1) (slice x 0 -1)) 2))
          (pow (- 1 (slice x 0 -1)) 2))))
(define (tanh-net x) (sum (* c (tanh (matmul W (tanh (matmul W x)))))))
(define (scalar-fn x) (* (sin x) (exp (* 0.5 x))))
(define (matrix-fn m) (sum (tanh (matmul m (transpose m)))))
(define (softmax-entropy x) (let ((p (softmax x))) (neg (sum (* p (log p))))))
(define (numpy-fn x)
  (sum (+ (logaddexp x (* 2 x)) (logaddexp2 x 0.5) (hypot x 1.5) (sinc x) (exp2 x) (square x)
          (cbrt (+ 3 x)))))
";

const HESSIAN_CASES: &[(&str, &[usize], Domain)] = &[
    ("lse-quadratic", &[3], R2),
    ("rosenbrock", &[4], R2),
    ("tanh-net", &[3], R2),
    ("scalar-fn", &[], R2),
    ("matrix-fn", &[2, 2], R1),
    ("softmax-entropy", &[4], R2),
    ("numpy-fn", &[3], R2),
];

/// Property cases per Hessian function.
const HESSIAN_CASES_PER_FUNCTION: u32 = 12;

/// An n x n view of a Hessian-shaped array.
fn square(h: &ArrayD<f64>, n: usize) -> Result<ndarray::Array2<f64>, String> {
    h.as_standard_layout()
        .into_owned()
        .into_shape_with_order((n, n))
        .map_err(|e| format!("a Hessian of {} elements is not {n} x {n}: {e}", h.len()))
}

fn check_symmetric(what: &str, m: &ndarray::Array2<f64>, tol: f64) -> Result<(), String> {
    let n = m.nrows();
    for i in 0..n {
        for j in 0..i {
            if !close(m[[i, j]], m[[j, i]], tol) {
                return Err(format!(
                    "{what} is not symmetric: [{i} {j}] = {} but [{j} {i}] = {}\n{m}",
                    m[[i, j]],
                    m[[j, i]]
                ));
            }
        }
    }
    Ok(())
}

/// `(hessian f)` at x: symmetric, equal to `(jacobian (grad f))` (itself
/// symmetric), to central finite differences of `(grad f)`, and `hvp`
/// equal to `H v`.
pub(crate) fn check_hessian(
    engine: &mut Engine,
    name: &str,
    x: &ArrayD<f64>,
    v: &ArrayD<f64>,
) -> Result<(), String> {
    let n = x.len();
    let args = [value_of(x)];
    let mut full_shape = x.shape().to_vec();
    full_shape.extend_from_slice(x.shape());
    let hessian = try_eval(engine, &format!("(hessian {name})"))?;
    let h = array(&call(engine, &hessian, &args)?)?;
    if h.shape() != full_shape.as_slice() {
        return Err(format!(
            "hessian shape {:?}, expected {full_shape:?}",
            h.shape()
        ));
    }
    let h = square(&h, n)?;
    check_symmetric("hessian", &h, 1e-12)?;

    let jacobian = try_eval(engine, &format!("(jacobian (grad {name}))"))?;
    let j = array(&call(engine, &jacobian, &args)?)?;
    if j.shape() != full_shape.as_slice() {
        return Err(format!(
            "jacobian of grad shape {:?}, expected {full_shape:?}",
            j.shape()
        ));
    }
    let j = square(&j, n)?;
    check_symmetric("jacobian of grad", &j, EXACT_TOL)?;
    compare(
        "hessian against jacobian of grad",
        &h.clone().into_dyn(),
        &j.into_dyn(),
        EXACT_TOL,
    )?;

    let grad = try_eval(engine, &format!("(grad {name})"))?;
    for col in 0..n {
        let x0 = x.iter().nth(col).copied().unwrap_or(f64::NAN);
        let step = 1e-6 * x0.abs().max(1.0);
        let mut at = |delta: f64| -> Result<ArrayD<f64>, String> {
            let mut moved = x.clone();
            if let Some(slot) = moved.iter_mut().nth(col) {
                *slot += delta;
            }
            let g = array(&call(engine, &grad, &[value_of(&moved)])?)?;
            // A tape may return a transposed layout.
            Ok(g.as_standard_layout()
                .into_owned()
                .into_shape_with_order(n)
                .map_err(|e| e.to_string())?
                .into_dyn())
        };
        let fd = (at(step)? - at(-step)?) / (2.0 * step);
        let column = h.column(col).to_owned().into_dyn();
        compare(
            &format!("hessian column {col} against finite differences of grad"),
            &column,
            &fd,
            FD_TOL,
        )?;
    }

    let f = try_eval(engine, name)?;
    let hv = array(&call_named(
        engine,
        "hvp",
        &[f, list_of(args.to_vec()), value_of(v)],
    )?)?;
    let flat_v = v
        .clone()
        .into_shape_with_order(n)
        .map_err(|e| e.to_string())?;
    let want = h
        .dot(&flat_v)
        .into_shape_with_order(x.raw_dim())
        .map_err(|e| e.to_string())?;
    compare("hvp against H v", &hv, &want, EXACT_TOL)
}

#[test]
fn hessians_are_symmetric_and_match_the_jacobian_of_the_gradient() {
    let mut engine = engine();
    eval(&mut engine, HESSIAN_SETUP);
    let engine = RefCell::new(engine);
    let mut failures = String::new();
    for &(name, shape, domain) in HESSIAN_CASES {
        let mut runner = TestRunner::new(op_config(HESSIAN_CASES_PER_FUNCTION));
        let result = runner.run(&any::<u64>(), |seed| {
            let mut rng = Rng(seed);
            let x = rng.array(shape, domain);
            let v = rng.array(shape, R1);
            check_hessian(&mut engine.borrow_mut(), name, &x, &v)
                .map_err(|m| TestCaseError::fail(format!("{name} at {x}: {m}")))
        });
        if let Err(error) = result {
            let _ = writeln!(failures, "{name}: {error}");
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

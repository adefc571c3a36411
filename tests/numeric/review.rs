//! Bugs found in review of issue 4 (numeric reverse mode). Each test fails
//! on 27f6fb7; the comment names the responsible code.

use super::*;

fn eval_array(engine: &mut Engine, source: &str) -> ArrayD<f64> {
    array(&eval(engine, source)).unwrap()
}

/// `Source::Shifted::fill` (src/backends/cpu/elementwise.rs) slices
/// `data[lo - start..hi - start]` even when the chunk lies wholly after the
/// padded data (lo == hi > start + len), which panics: any stencil gradient
/// whose trailing pad crosses a 256-element chunk boundary.
#[test]
fn padded_operand_past_its_data_does_not_panic() {
    let mut engine = engine();
    let got = eval_array(
        &mut engine,
        "((grad (lambda (x) (sum (* (slice x 100 300) (slice x 0 200))))) (arange 300.0))",
    );
    let x: Vec<f64> = (0..300).map(f64::from).collect();
    let want: Vec<f64> = (0..300)
        .map(|i| {
            let from_first = if i >= 100 { x[i - 100] } else { 0.0 };
            let from_second = if i < 200 { x[i + 100] } else { 0.0 };
            from_first + from_second
        })
        .collect();
    compare(
        "stencil gradient",
        &got,
        &ndarray::arr1(&want).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    // The 2-D form: rows of 200, pad of one row.
    let got = eval_array(
        &mut engine,
        "(sum ((grad (lambda (x) (sum (* (slice x 1 3) (slice x 0 2))))) (ones '(3 200))))",
    );
    assert!(close(got.iter().next().copied().unwrap(), 800.0, EXACT_TOL));
}

/// `run_compiled` (src/lisp/builtins/symbolic.rs) reads traced arguments
/// with `value_to_buf`, i.e. as constants: a lambdified function (and
/// `evaluate`) inside `grad` silently has derivative 0.
#[test]
fn lambdify_and_evaluate_are_not_constants_under_grad() {
    let mut engine = engine();
    let got = eval(&mut engine, "((grad (lambdify '(x) '(* x x))) 3.0)");
    assert!(
        close(got.as_f64().unwrap(), 6.0, EXACT_TOL),
        "lambdify: {got}"
    );
    let got = eval(
        &mut engine,
        "((grad (lambda (x) (evaluate '(* x x) (list (list 'x x))))) 3.0)",
    );
    assert!(
        close(got.as_f64().unwrap(), 6.0, EXACT_TOL),
        "evaluate: {got}"
    );
}

/// `RoundOp::Round` (src/egraph/tensor/op.rs) uses `f64::round` (ties away
/// from zero); the eager `round` rounds ties to even, as NumPy.
#[test]
fn traced_round_rounds_ties_to_even() {
    let mut engine = engine();
    let eager = eval_array(&mut engine, "(round [0.5 1.5 2.5 -2.5])");
    let jitted = eval_array(
        &mut engine,
        "((jit (lambda (x) (round x))) [0.5 1.5 2.5 -2.5])",
    );
    compare("jit round", &jitted, &eager, 0.0).unwrap();
}

/// `equal?`/`eq?` (src/lisp/builtins/compare.rs) fall back to identity on
/// `Value::Traced`, so `(equal? x x)` is #f under tracing and a branch on
/// `(equal? x 2.0)` takes the other path than the plain call.
#[test]
fn equal_on_traced_values_follows_the_values() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (f x) (if (equal? x 2.0) 1.0 (* x x)))",
    );
    let plain = eval(&mut engine, "(f 2.0)").as_f64().unwrap();
    let jitted = eval(&mut engine, "((jit f) 2.0)").as_f64().unwrap();
    assert_eq!(plain, jitted);
}

/// The derivative of `product_of_others` (src/egraph/tensor/graph.rs) is
/// wrong where x has exactly one zero: others_i for i != k (the zero) is
/// `is_zero_i * prod(where(is_zero, 1, x))`, whose derivative in x_k is 0,
/// while d/dx_k prod_{j != i} x_j is prod_{j != i, k} x_j. `hessian`
/// symmetrizes the half-wrong matrix and returns 1.5 instead of 3.
#[test]
fn second_derivative_of_prod_at_a_zero() {
    let mut engine = engine();
    let want = ndarray::arr2(&[[0.0, 3.0, 2.0], [3.0, 0.0, 0.0], [2.0, 0.0, 0.0]]).into_dyn();
    let jac = eval_array(
        &mut engine,
        "((jacobian (grad (lambda (x) (prod x)))) [0.0 2.0 3.0])",
    );
    compare("jacobian of grad of prod", &jac, &want, EXACT_TOL).unwrap();
    let hessian = eval_array(
        &mut engine,
        "((hessian (lambda (x) (prod x))) [0.0 2.0 3.0])",
    );
    compare("hessian of prod", &hessian, &want, EXACT_TOL).unwrap();
}

/// The `div-div` rule (src/egraph/tensor/rules.rs) rewrites (a/b)/c to
/// a/(b*c), which overflows where the original does not; the module says
/// every rule "holds for every value".
#[test]
fn optimizer_does_not_overflow_a_quotient() {
    let mut engine = engine();
    eval(&mut engine, "(define (f x y z) (/ (/ x y) z))");
    let plain = eval(&mut engine, "(f 1e300 1e200 1e200)").as_f64().unwrap();
    let jitted = eval(&mut engine, "((jit f) 1e300 1e200 1e200)")
        .as_f64()
        .unwrap();
    assert!(
        (jitted - plain).abs() <= 1e-9 * plain.abs(),
        "plain {plain}, jit {jitted}"
    );
}

/// `argmax` under tracing (src/lisp/trace/ops.rs) gives a traced float,
/// not the integer the eager built-in gives, so its result cannot index.
#[test]
fn argmax_under_tracing_is_an_integer() {
    let mut engine = engine();
    let got = eval(
        &mut engine,
        "((grad (lambda (x) (index x (argmax x)))) [1.0 3.0 2.0])",
    );
    compare(
        "grad of x[argmax x]",
        &array(&got).unwrap(),
        &ndarray::arr1(&[0.0, 1.0, 0.0]).into_dyn(),
        0.0,
    )
    .unwrap();
}

/// Batched matmul works eagerly but not under tracing ("differentiable
/// matmul takes ranks 1 and 2"); the issue asks every SPEC section 3
/// built-in to be traceable, and docs/numeric.md does not list this limit.
#[test]
fn batched_matmul_is_traceable() {
    let mut engine = engine();
    eval(&mut engine, "(define A (reshape (arange 24.0) '(2 3 4)))");
    let eager = eval_array(&mut engine, "(matmul A (transpose A '(0 2 1)))");
    let jitted = eval_array(
        &mut engine,
        "((jit (lambda (a) (matmul a (transpose a '(0 2 1))))) A)",
    );
    compare("batched matmul", &jitted, &eager, EXACT_TOL).unwrap();
}

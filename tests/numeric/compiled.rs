//! The Rust API: `Engine::compile_grad` and `compile_grad_at`.

use super::*;

/// A Lisp function, the shapes of its arguments and their domain.
const COMPILED_CASES: &[(&str, &[&[usize]], Domain)] = &[
    ("(lambda (w) (sum (* w w)))", &[&[3]], R2),
    ("(lambda (a b) (* (sin a) (exp (* a b))))", &[&[], &[]], R1),
    (
        "(lambda (W x) (sum (tanh (matmul W x))))",
        &[&[3, 4], &[4]],
        R2,
    ),
    (
        "(lambda (x) (sum (+ (* 100 (pow (- (slice x 1) (slice x 0 -1)) 2)) (pow (- 1 (slice x 0 -1)) 2))))",
        &[&[5]],
        R2,
    ),
    (
        "(lambda (z y) (neg (sum (* y (log-softmax z :axis 1)))))",
        &[&[2, 3], &[2, 3]],
        R2,
    ),
    (
        "(lambda (x y) (sum (+ (logaddexp x y) (hypot x y) (sinc x) (square (cbrt (+ 3 y))) (exp2 x))))",
        &[&[7], &[7]],
        R2,
    ),
];

/// The compiled gradient, rerun on random inputs with no interpreter in
/// the loop, equals `grad :wrt 'all` and finite differences; its value
/// equals the function's.
#[test]
fn compiled_gradients_match_grad_and_finite_differences() {
    let mut engine = engine();
    let mut rng = Rng(21);
    for &(source, shapes, domain) in COMPILED_CASES {
        let compiled = engine
            .compile_grad(source, shapes)
            .unwrap_or_else(|e| panic!("{source}: {}", e.render()));
        assert!(compiled.stats().instructions > 0, "{source}: an empty tape");
        let f = eval(&mut engine, source);
        let grad = eval(&mut engine, &format!("(grad {source} :wrt 'all)"));
        for _ in 0..4 {
            let xs: Vec<ArrayD<f64>> = shapes.iter().map(|s| rng.array(s, domain)).collect();
            let args: Vec<Value> = xs.iter().map(value_of).collect();
            let (value, grads) = compiled
                .run_with_value(&xs)
                .unwrap_or_else(|e| panic!("{source}: {}", e.render()));
            let want = call(&mut engine, &f, &args).unwrap().as_f64().unwrap();
            assert!(
                close(value, want, EXACT_TOL),
                "{source}: value {value}, f gives {want}"
            );
            let from_lisp = parts(&call(&mut engine, &grad, &args).unwrap()).unwrap();
            assert_eq!(grads.len(), xs.len(), "{source}: one gradient per argument");
            for k in 0..xs.len() {
                compare(
                    &format!("{source}: argument {k} against grad"),
                    &grads[k],
                    &from_lisp[k],
                    EXACT_TOL,
                )
                .unwrap();
                let fd = fd_gradient(&mut engine, &f, &xs, k).unwrap();
                compare(
                    &format!("{source}: argument {k} against finite differences"),
                    &grads[k],
                    &fd,
                    FD_TOL,
                )
                .unwrap();
            }
        }
    }
}

/// Control flow is decided where the function is traced: at zeros by
/// `compile_grad`, at the given point by `compile_grad_at`.
#[test]
fn compiled_gradients_replay_the_traced_branch() {
    let mut engine = engine();
    let source = "(lambda (x) (if (> (sum x) 0) (sum (* x x)) (sum (* 3 x))))";
    let positive = ndarray::arr1(&[1.0, 2.0]).into_dyn();
    let at_zero = engine.compile_grad(source, &[&[2]]).unwrap();
    let grads = at_zero.run(std::slice::from_ref(&positive)).unwrap();
    compare(
        "traced at zeros",
        &grads[0],
        &ndarray::arr1(&[3.0, 3.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    let at_point = engine
        .compile_grad_at(source, std::slice::from_ref(&positive))
        .unwrap();
    let grads = at_point
        .run(&[ndarray::arr1(&[0.5, 4.0]).into_dyn()])
        .unwrap();
    compare(
        "traced at a positive point",
        &grads[0],
        &ndarray::arr1(&[1.0, 8.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
}

/// Bad input to the compiled gradient is an `Err`, never a panic in the
/// host program.
#[test]
fn compiled_gradients_reject_bad_input() {
    let mut engine = engine();
    let not_scalar = engine.compile_grad("(lambda (x) (* x 2))", &[&[2]]);
    let error = not_scalar
        .err()
        .expect("the gradient of a vector function is an error");
    assert!(
        error.message().contains("returning a number"),
        "{}",
        error.render()
    );
    let unreadable = engine.compile_grad("(lambda (x) (* x 2)", &[&[2]]);
    assert!(unreadable.is_err(), "an unclosed parenthesis");
    let not_function = engine.compile_grad("42", &[&[2]]);
    assert!(not_function.is_err(), "a number is not a function");

    let compiled = engine
        .compile_grad("(lambda (w) (sum (* w w)))", &[&[3]])
        .unwrap();
    let error = match compiled.run(&[]) {
        Ok(_) => panic!("no arguments must be an error"),
        Err(error) => error,
    };
    assert!(
        error.message().contains("takes 1 arguments, got 0"),
        "{}",
        error.message()
    );
    let two = [ArrayD::zeros(IxDyn(&[3])), ArrayD::zeros(IxDyn(&[3]))];
    assert!(compiled.run(&two).is_err(), "two arguments");
    let wrong_shape = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        compiled.run(&[ArrayD::zeros(IxDyn(&[4]))]).is_err()
    }));
    assert!(
        matches!(wrong_shape, Ok(true)),
        "an argument of shape [4] for a tape compiled for [3] must be an Err, got {wrong_shape:?}"
    );
}

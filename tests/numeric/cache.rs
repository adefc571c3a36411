//! The tape cache: `tape-stats` reports hits and misses by shape and branch;
//! cached tapes see new values; `jit` compiles once per shape signature.

use super::*;

/// The value of `key` in `(tape-stats f args)`.
fn stat(engine: &mut Engine, f: &str, args: &str, key: &str) -> Value {
    eval(
        engine,
        &format!("(second-of (assoc '{key} (tape-stats {f} (list {args}))))"),
    )
}

fn cached(engine: &mut Engine, f: &str, args: &str) -> bool {
    match stat(engine, f, args, "cached") {
        Value::Bool(b) => b,
        other => panic!("cached is {other}"),
    }
}

#[test]
fn tape_stats_reports_what_spec_lists() {
    let mut engine = engine();
    eval(&mut engine, "(define (f x) (sum (* (sin x) x)))");
    for key in [
        "instructions",
        "stored-values",
        "recomputed-values",
        "peak-bytes",
        "flops",
        "cached",
    ] {
        let value = stat(&mut engine, "f", "[1 2 3]", key);
        assert!(
            matches!(value, Value::Int(n) if n >= 0) || matches!(value, Value::Bool(_)),
            "{key} is {value}"
        );
    }
    assert!(matches!(stat(&mut engine, "f", "[1 2 3]", "instructions"), Value::Int(n) if n > 0));
    let text = eval(&mut engine, "(show-tape f (list [1 2 3]))");
    let text = text.as_str().expect("show-tape gives a string");
    assert!(text.lines().count() > 1, "show-tape: {text}");
}

#[test]
fn a_second_call_with_equal_shapes_hits_the_cache() {
    let mut engine = engine();
    eval(&mut engine, "(define (f x) (sum (* (sin x) x)))");
    assert!(!cached(&mut engine, "f", "[1 2 3]"), "first call");
    assert!(
        cached(&mut engine, "f", "[4 5 6]"),
        "same shape, other values"
    );
    assert!(!cached(&mut engine, "f", "[1 2 3 4]"), "a new shape");
    assert!(!cached(&mut engine, "f", "[[1 2] [3 4]]"), "a new rank");
    assert!(
        cached(&mut engine, "f", "[-1 -2 -3]"),
        "the first shape again"
    );
    // The cached tape computes with the new values.
    let f = eval(&mut engine, "f");
    let x = ndarray::arr1(&[0.3, -1.1, 2.0]).into_dyn();
    let got = array(&eval(&mut engine, "((grad f) [0.3 -1.1 2.0])")).unwrap();
    let want = fd_gradient(&mut engine, &f, &[x], 0).unwrap();
    compare("gradient from the cached tape", &got, &want, FD_TOL).unwrap();
}

#[test]
fn a_changed_branch_misses_the_cache() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (f x) (if (> (sum x) 0) (sum (* x x x)) (sum (exp x))))",
    );
    assert!(
        !cached(&mut engine, "f", "[1 2]"),
        "first call, then-branch"
    );
    assert!(cached(&mut engine, "f", "[3 4]"), "then-branch again");
    assert!(!cached(&mut engine, "f", "[-3 -4]"), "the else-branch");
    assert!(cached(&mut engine, "f", "[-1 -2]"), "else-branch again");
    assert!(
        cached(&mut engine, "f", "[5 6]"),
        "the then-branch's tape is kept"
    );
    let f = eval(&mut engine, "f");
    for data in [[0.5, 1.5], [-0.5, -1.5]] {
        let x = ndarray::arr1(&data).into_dyn();
        let got = array(
            &call_named(&mut engine, "grad", std::slice::from_ref(&f))
                .and_then(|g| call(&mut engine, &g, &[value_of(&x)]))
                .unwrap(),
        )
        .unwrap();
        let want = fd_gradient(&mut engine, &f, &[x], 0).unwrap();
        compare(&format!("gradient at {data:?}"), &got, &want, FD_TOL).unwrap();
    }
}

/// Captured tensors are tape inputs and captured numbers are constants:
/// either way a later call must see their new values.
#[test]
fn cached_tapes_see_new_values_of_captured_variables() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define A [[1 2] [3 4]]) (define k 2.0) (define (f x) (* k (sum (matmul A x))))",
    );
    let first = array(&eval(&mut engine, "((grad f) [1 1])")).unwrap();
    compare(
        "first",
        &first,
        &ndarray::arr1(&[8.0, 12.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    eval(&mut engine, "(set! A [[0 1] [1 0]])");
    let second = array(&eval(&mut engine, "((grad f) [1 1])")).unwrap();
    compare(
        "after changing A",
        &second,
        &ndarray::arr1(&[2.0, 2.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    eval(&mut engine, "(set! k 3.0)");
    let third = array(&eval(&mut engine, "((grad f) [1 1])")).unwrap();
    compare(
        "after changing k",
        &third,
        &ndarray::arr1(&[3.0, 3.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
}

#[test]
fn jit_compiles_once_per_shape_signature_and_keeps_values() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (f x y) (if (> (sum x) 0) (sum (* (tanh x) y)) (sum (exp (* x y)))))
         (define jf (jit f))
         (define (g x) (* x x))",
    );
    let misses = |engine: &mut Engine| match stat(engine, "g", "2.0", "cache-misses") {
        Value::Int(n) => n,
        other => panic!("cache-misses is {other}"),
    };
    let start = misses(&mut engine);
    let f = eval(&mut engine, "f");
    let jf = eval(&mut engine, "jf");
    let mut rng = Rng(5);
    for _ in 0..3 {
        let (x, y) = (rng.array(&[2, 3], R2), rng.array(&[3], R2));
        let args = [value_of(&x), value_of(&y)];
        let want = call(&mut engine, &f, &args).unwrap().as_f64().unwrap();
        let got = call(&mut engine, &jf, &args).unwrap().as_f64().unwrap();
        assert!(
            close(got, want, EXACT_TOL),
            "jit gives {got}, f gives {want}"
        );
    }
    // Three calls, at most two branches: at most two compilations.
    let after = misses(&mut engine);
    assert!(
        after - start <= 2,
        "{} compilations for one shape",
        after - start
    );
    call(
        &mut engine,
        &jf,
        &[
            value_of(&ArrayD::ones(IxDyn(&[2, 3]))),
            value_of(&ArrayD::ones(IxDyn(&[3]))),
        ],
    )
    .unwrap();
    call(
        &mut engine,
        &jf,
        &[
            value_of(&ArrayD::ones(IxDyn(&[2, 3]))),
            value_of(&ArrayD::ones(IxDyn(&[3]))),
        ],
    )
    .unwrap();
    let positive = misses(&mut engine);
    call(
        &mut engine,
        &jf,
        &[
            value_of(&ArrayD::ones(IxDyn(&[4, 3]))),
            value_of(&ArrayD::ones(IxDyn(&[3]))),
        ],
    )
    .unwrap();
    assert_eq!(
        misses(&mut engine),
        positive + 1,
        "a new shape compiles once"
    );
    call(
        &mut engine,
        &jf,
        &[
            value_of(&ArrayD::ones(IxDyn(&[4, 3]))),
            value_of(&ArrayD::ones(IxDyn(&[3]))),
        ],
    )
    .unwrap();
    assert_eq!(misses(&mut engine), positive + 1, "and only once");
}

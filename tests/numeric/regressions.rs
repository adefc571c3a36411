//! Bugs the numeric tests found, one test each, kept as regression tests.
//! The comment on each test says what was wrong.

use super::*;

/// The tape cache (`compiled_for` in src/lisp/autodiff/mod.rs) is keyed by
/// the graph's nodes up to the last root and the roots, not by the trace's
/// inputs. When the result does not depend on the argument, the
/// derivative roots are constant zeros, so the cotangent input that `vjp`
/// adds (after the last root) is invisible to the key: the `vjp` finds the
/// one-input tape compiled for `grad` and fails with "the tape takes 1
/// inputs, got 2".
#[test]
fn cache_ignores_the_number_of_inputs() {
    let mut engine = engine();
    eval(&mut engine, "((grad (lambda (x) 0.0)) 1.5)");
    let result = engine.eval("(vjp (lambda (x) 0.0) (list 1.5) 0.3)");
    assert!(result.is_ok(), "{}", result.unwrap_err().render());
    // The same through log-softmax of a number (a constant 0).
    let mut engine = self::engine();
    eval(&mut engine, "((grad (lambda (x) (log-softmax x))) 1.5)");
    let result = engine.eval("(vjp (lambda (x) (log-softmax x)) (list 1.5) 0.3)");
    assert!(result.is_ok(), "{}", result.unwrap_err().render());
}

/// The adjoint of `prod` is `prod / x`, NaN where an element is 0; the
/// product of the other elements is finite (JAX gives [0 3 0] here).
#[test]
fn prod_gradient_is_nan_at_a_zero_element() {
    let mut engine = engine();
    let got = array(&eval(&mut engine, "((grad (lambda (x) (prod x))) [1 0 3])")).unwrap();
    compare(
        "grad of prod",
        &got,
        &ndarray::arr1(&[0.0, 3.0, 0.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    let out = items(&eval(
        &mut engine,
        "(jvp (lambda (x) (prod x)) (list [1 0 3]) (list [1 1 1]))",
    ))
    .unwrap();
    let tangent = out[1].as_f64().unwrap();
    assert!(
        close(tangent, 3.0, EXACT_TOL),
        "jvp of prod gives {tangent}"
    );
}

/// `jacobian` and `hessian` called inside a traced function assemble
/// their rows with concrete values (`assemble` reads each traced row with
/// `value_to_buf`), so the result is a constant and the outer derivative
/// silently loses it: d/dx sum(diag(2x)) should be [2 2], and
/// d/dx sum(diag(6x)) should be [6 6]; both come back [0 0].
#[test]
fn jacobian_inside_a_traced_function_is_a_constant() {
    let mut engine = engine();
    let got = array(&eval(
        &mut engine,
        "((grad (lambda (x) (sum ((jacobian (lambda (y) (* y y))) x)))) [1.0 3.0])",
    ))
    .unwrap();
    compare(
        "grad of a jacobian",
        &got,
        &ndarray::arr1(&[2.0, 2.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
    let got = array(&eval(
        &mut engine,
        "((grad (lambda (x) (sum ((hessian (lambda (y) (sum (* y y y)))) x)))) [1.0 3.0])",
    ))
    .unwrap();
    compare(
        "grad of a hessian",
        &got,
        &ndarray::arr1(&[6.0, 6.0]).into_dyn(),
        EXACT_TOL,
    )
    .unwrap();
}

/// `(tensor x y)` with traced numbers is recorded, but the list form SPEC
/// shows, `(tensor '(...))`, and the literal `[x y]` are not: both fail on
/// a traced element.
#[test]
fn tensor_of_a_list_of_traced_numbers() {
    let mut engine = engine();
    for source in [
        "((grad (lambda (x) (sum (tensor (list x (* 2 x)))))) 3.5)",
        "((grad (lambda (x) (sum [x (* 2 x)]))) 3.5)",
    ] {
        let got = engine
            .eval(source)
            .unwrap_or_else(|e| panic!("{source}: {}", e.render()));
        assert!(
            close(got.as_f64().unwrap(), 3.0, EXACT_TOL),
            "{source} gives {got}"
        );
    }
}

/// Not numeric, found while writing a loop for check-grad: inside a
/// lambda, a named let's initial values are evaluated in the wrong frame.
/// `((lambda (x) (let loop ((acc x)) acc)) 1.0)` gives the procedure
/// `loop` instead of 1.0, and `((lambda (x y) (let loop ((acc y)) acc)) 1.0 2.0)`
/// fails with "no slot for y". At top level the same named let works.
#[test]
fn named_let_inside_a_lambda_reads_the_wrong_slot() {
    let mut engine = engine();
    let got = eval(&mut engine, "((lambda (x) (let loop ((acc x)) acc)) 1.0)");
    assert_eq!(got.as_f64().ok(), Some(1.0), "got {got}");
    let got = engine.eval("((lambda (x y) (let loop ((acc y)) acc)) 1.0 2.0)");
    assert_eq!(got.ok().and_then(|v| v.as_f64().ok()), Some(2.0));
}

/// SPEC: "Gradients have the shape of their argument". The gradient of
/// `((W1 b1) (W2 b2))` comes back as the flat `(gW1 gb1 gW2 gb2)`: the
/// argument's leaves are regrouped with one level of list only
/// (`tree_of` in `derivative_roots`, src/lisp/autodiff/mod.rs).
#[test]
fn gradient_of_a_nested_list_is_flattened() {
    let mut engine = engine();
    let g = eval(
        &mut engine,
        "((grad (lambda (p) (* (car (car p)) (car (cdr p))))) (list (list 2.0) 3.0))",
    );
    // Expected ((3.0) 2.0), got (3.0 2.0).
    let outer = items(&g).unwrap();
    assert_eq!(outer.len(), 2, "{g}");
    assert!(
        outer[0].is_list(),
        "the first part of {g} should be a list, like the argument's"
    );
}

/// Found by the benchmarks: a gradient taken inside a `jit`ted function
/// (a training step) tagged its variables with a counter that kept growing
/// across calls, so every call traced a new program and missed the tape
/// cache, paying the optimizer each step.
#[test]
fn a_gradient_inside_jit_hits_the_cache() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (loss w) (sum (tanh (* w w))))
         (define vg (value-and-grad loss))
         (define step (jit (lambda (w) (- w (* 0.1 (second (vg w)))))))
         (define (misses) (second (assoc 'cache-misses (tape-stats loss (list [1.0 2.0])))))
         (step [1.0 2.0])",
    );
    let before = eval(&mut engine, "(misses)").as_f64().unwrap();
    eval(&mut engine, "(step [1.0 2.0]) (step [3.0 4.0])");
    let after = eval(&mut engine, "(misses)").as_f64().unwrap();
    assert_eq!(before, after, "the step recompiled");
}

/// Rolls along the first axis are read in place by the elementwise
/// groups that use them (in two runs, the interior of a compiled group
/// inside the longer one): any shift, both signs, short and long arrays
/// (interpreted and compiled groups), matrices, and rolls of rolls give
/// the eager built-ins' numbers; the same through a gradient.
#[test]
fn rolled_operands_read_in_place_match_the_eager_rolls() {
    let mut engine = engine();
    for (size, shape) in [
        ("5", "'(5)"),
        ("10007", "'(10007)"),
        ("6000", "'(1000 6)"),
        ("12", "'(4 3)"),
    ] {
        eval(
            &mut engine,
            &format!("(define u (reshape (sin (arange {size})) {shape}))"),
        );
        for (a, b) in [(1, -1), (3, 2), (-2, 0), (7, -7), (999, -1000)] {
            let f = format!(
                "(lambda (u) (+ (* 2 (roll u {a} :axis 0)) (roll u {b} :axis 0) (* u (roll (roll u {b} :axis 0) {a} :axis 0))))"
            );
            let got = array(&eval(&mut engine, &format!("((jit {f}) u)"))).unwrap();
            let want = array(&eval(&mut engine, &format!("({f} u)"))).unwrap();
            compare(&format!("{f} on shape {shape}"), &got, &want, 1e-14).unwrap();
            let got = array(&eval(
                &mut engine,
                &format!("((grad (lambda (u) (sum (* (cos u) ({f} u))))) u)"),
            ))
            .unwrap();
            let error = eval(
                &mut engine,
                &format!("(check-grad (lambda (u) (sum (* (cos u) ({f} u)))) (list u))"),
            )
            .as_f64()
            .unwrap();
            assert!(error < 1e-6, "{f} on {shape}: check-grad {error}");
            assert_eq!(got.shape(), want.shape());
        }
    }
}

/// A forward-mode Jacobian (`checkpoint` bodies take it by columns) with
/// respect to an empty tensor has no tangent columns to join: shape
/// inference indexed the first of none (an internal error, found by
/// tests/grammar_fuzz.rs). The Jacobian is empty, of the shape JAX gives.
#[test]
fn a_jacobian_with_respect_to_an_empty_tensor_is_empty() {
    let mut engine = engine();
    for (form, want) in [
        (
            "(shape ((jacobian (checkpoint (lambda (x) (sum x)))) (zeros 2 0)))",
            "(2 0)",
        ),
        (
            "(shape ((jacobian (checkpoint (lambda (x) x))) (zeros 0)))",
            "(0 0)",
        ),
        (
            "(shape ((jacobian (lambda (x) (* 2 x))) (zeros 3 0)))",
            "(3 0 3 0)",
        ),
    ] {
        let got = engine
            .eval(form)
            .unwrap_or_else(|e| panic!("{form}: {}", e.render()));
        assert_eq!(got.to_string(), want, "{form}");
    }
}

/// The forward rule of the solves multiplied the tangent of `a` (its
/// direction axis first) by the solution, a stack: with `a` one matrix
/// and `b` a stack of two, a batched Jacobian's 4 directions met the
/// stack's 2 ("shapes [4] and [2] do not broadcast", an internal error
/// found by tests/grammar_fuzz.rs). Tangents of operands with fewer stack
/// axes now get ones after the direction axis. Checked against `jacrev`
/// and central differences.
#[test]
fn forward_jacobians_of_solves_with_a_broadcast_operand_match_reverse_and_differences() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define b (+ 1.0 (reshape (arange 8.0) '(2 2 2))))
         (define a [[2.0 0.3] [0.7 2.5]])
         (define (fd f x h)
           (let ((n (size x)))
             (stack (map (lambda (k)
                           (let ((e (reshape (index (eye n) k) (shape x))))
                             (/ (- (f (+ x (* h e))) (f (- x (* h e)))) (* 2 h))))
                         (range n))
                    :axis -1)))",
    );
    for f in [
        "(lambda (x) (triangular-solve x b :lower #t))",
        "(lambda (x) (triangular-solve x b :lower #f :transpose #t))",
        "(lambda (x) (solve x b))",
        "(lambda (x) (solve (stack (list x (* 2.0 x))) [1.0 -2.0]))",
        "(lambda (x) (solve [[3.0 1.0] [0.5 2.0]] (* x b)))",
        "(lambda (x) (solve x (* x b)))",
    ] {
        let forward = eval(&mut engine, &format!("((jacfwd {f}) a)"));
        let reverse = eval(&mut engine, &format!("((jacrev {f}) a)"));
        let fd = eval(
            &mut engine,
            &format!("(reshape (fd {f} a 1e-6) (shape ((jacrev {f}) a)))"),
        );
        let (forward, reverse, fd) = (
            array(&forward).unwrap(),
            array(&reverse).unwrap(),
            array(&fd).unwrap(),
        );
        compare(
            &format!("jacfwd vs jacrev of {f}"),
            &forward,
            &reverse,
            1e-12,
        )
        .unwrap();
        compare(
            &format!("jacfwd vs differences of {f}"),
            &forward,
            &fd,
            1e-6,
        )
        .unwrap();
    }
}

//! Review of `scan` and `checkpoint` (issue 5): bugs found by comparing
//! against the same computation written as a plain (traced, unrolled) Lisp
//! loop, one test each (all fixed), and the errors that replaced silent
//! surprises.

use super::*;

const LOOP: &str = r"
(define (loop-scan step init n)
  (let loop ((s init) (i 0)) (if (= i n) s (loop (step s i) (+ i 1)))))
";

fn review_engine() -> Engine {
    let mut engine = engine();
    eval(&mut engine, LOOP);
    engine
}

fn num(engine: &mut Engine, form: &str) -> f64 {
    eval(engine, form)
        .as_f64()
        .unwrap_or_else(|e| panic!("{form}: {e}"))
}

/// A gradient taken inside a loop body (or a checkpointed function) that
/// itself goes through a `scan` puts a `ScanVjp` node into the body; the
/// outer reverse sweep treats it as a constant (its pullback is `None`)
/// and `refusal` only looks at the top-level program, so the derivative
/// is silently 0 instead of being refused (or computed).
#[test]
fn a_gradient_of_a_scan_inside_a_loop_body_is_not_silently_zero() {
    let mut engine = review_engine();
    eval(
        &mut engine,
        "(define (cube y) (scan (lambda (z j) (* z y)) 1.0 3))
         (define (F a) (scan (lambda (x i) ((grad cube) (* a x))) 1.0 1))
         (define cc (checkpoint (lambda (x) (* x x x))))
         (define (H a) ((checkpoint (lambda (x) ((grad cc) (* a x)))) 1.0))",
    );
    // F(a) = 3 a^2, F'(2) = 12; H likewise.
    assert_eq!(num(&mut engine, "(F 2.0)"), 12.0);
    for form in ["((grad F) 2.0)", "((grad H) 2.0)"] {
        match engine.eval(form) {
            Ok(v) => {
                let g = v.as_f64().unwrap();
                assert!(close(g, 12.0, 1e-9), "{form} = {g}, want 12 (or an error)");
            }
            Err(e) => assert!(e.to_string().contains("not supported"), "{form}: {e}"),
        }
    }
}

/// The numbers-only fast path (`scalar_loop::Program::from_tape`) numbers
/// registers with `u16`: a step of more than 65,535 registers wraps and
/// reads the wrong registers. With the state as a one-element tensor (the
/// generic path) the value is right.
#[test]
fn a_large_numbers_only_step_computes_what_the_loop_computes() {
    let mut engine = review_engine();
    eval(
        &mut engine,
        "(define (step s i)
           (let loop ((x s) (k 0))
             (if (= k 22000) x (loop (+ (* x 0.9999) (* 0.0001 (+ k 1))) (+ k 1)))))",
    );
    let want = num(&mut engine, "(loop-scan step 0.5 2)");
    let tensor = num(&mut engine, "(item (scan step [0.5] 2))");
    assert!(
        close(tensor, want, 1e-12),
        "tensor state: {tensor} vs {want}"
    );
    let numbers = num(&mut engine, "(scan step 0.5 2)");
    assert!(
        close(numbers, want, 1e-12),
        "number state: {numbers} vs {want}"
    );
}

/// A state leaf (or a checkpointed function's result) that the caller
/// ignores gets a zero cotangent, and the reverse body multiplies it by the
/// leaf's partials: 0 * inf = NaN where a partial is infinite (sqrt at 0),
/// which poisons the gradient of the other arguments. The unrolled loop and
/// the plain function never differentiate the unused value.
#[test]
fn unused_state_leaves_and_results_do_not_poison_gradients() {
    let mut engine = review_engine();
    eval(
        &mut engine,
        "(define (st s i) (list (* (car s) 2) (sqrt (second s))))
         (define (f x y) (list (* x y) (sqrt y)))
         (define cf (checkpoint f))",
    );
    for (form, want) in [
        (
            "((grad (lambda (a b) (car (loop-scan st (list a b) 3))) :wrt 1) 1.5 0.0)",
            0.0,
        ),
        (
            "((grad (lambda (a b) (car (scan st (list a b) 3))) :wrt 1) 1.5 0.0)",
            0.0,
        ),
        ("((grad (lambda (a b) (car (f a b))) :wrt 1) 1.5 0.0)", 1.5),
        ("((grad (lambda (a b) (car (cf a b))) :wrt 1) 1.5 0.0)", 1.5),
    ] {
        let got = num(&mut engine, form);
        assert!(close(got, want, 1e-12), "{form} = {got}, want {want}");
    }
}

/// The step is traced once, so `randn` inside it would draw once and add
/// the same numbers at every step (a Lisp loop draws at every step): it is
/// refused with a message saying so.
#[test]
fn random_numbers_in_a_step_are_refused() {
    let mut engine = review_engine();
    let got = try_eval(
        &mut engine,
        "(scan (lambda (s i) (list (randn '()) (car s))) (list 0.0 0.0) 2)",
    );
    assert!(
        matches!(&got, Err(e) if e.contains("drawn once")),
        "{got:?}"
    );
}

/// `(checkpoint f)` turns every argument into a traced placeholder, so an
/// integer argument (a count, an index, a flag) cannot be used as one —
/// unlike `jit` and `grad`, which keep non-differentiated integers static —
/// and the error shows the placeholder (0.0), not the caller's value.
#[test]
fn checkpoint_keeps_integer_arguments_usable() {
    let mut engine = review_engine();
    eval(
        &mut engine,
        "(define pick (checkpoint (lambda (v k) (index v k))))
         (define repeat (checkpoint (lambda (x n) (loop-scan (lambda (s i) (sin s)) x n))))",
    );
    let got = try_eval(
        &mut engine,
        "((grad (lambda (a) (pick (* a [1 2 3]) 1))) 1.0)",
    );
    assert!(
        matches!(got, Ok(ref v) if v.as_f64().ok() == Some(2.0)),
        "{got:?}"
    );
    let got = try_eval(&mut engine, "((grad (lambda (a) (repeat a 3))) 1.0)");
    assert!(got.is_ok(), "{got:?}");
}

/// The scan step's index is a traced number: it indexes tensors (`index`
/// becomes a gather), but where a real integer is needed (a shape) the
/// error says why instead of showing the tracing placeholder.
#[test]
fn the_step_index_as_an_integer_is_a_clear_error() {
    let mut engine = review_engine();
    let got = try_eval(
        &mut engine,
        "(scan (lambda (s i) (+ s (index [1.0 2.0 3.0] i))) 0.0 3)",
    );
    assert!(
        matches!(&got, Ok(v) if v.as_f64().ok() == Some(6.0)),
        "{got:?}"
    );
    let got = try_eval(
        &mut engine,
        "(scan (lambda (s i) (+ s (sum (ones (list i 2))))) 0.0 3)",
    );
    assert!(
        matches!(&got, Err(e) if e.contains("cannot be used as an integer")),
        "{got:?}"
    );
}

/// A comparison of a number state is a Lisp comparison (it looks at the
/// value) and is refused; the message points at a one-element tensor
/// state, with which `where` works.
#[test]
fn where_on_a_one_element_state_works_as_the_error_advises() {
    let mut engine = review_engine();
    let got = try_eval(
        &mut engine,
        "(scan (lambda (s i) (where (> s 2) s (+ s 1))) 0.0 5)",
    );
    assert!(
        matches!(&got, Err(e) if e.contains("one-element tensor")),
        "{got:?}"
    );
    let got = try_eval(
        &mut engine,
        "(sum (scan (lambda (s i) (where (> s 2) s (+ s 1))) [0.0] 5))",
    );
    assert!(
        matches!(got, Ok(ref v) if v.as_f64().ok() == Some(3.0)),
        "{got:?}"
    );
}

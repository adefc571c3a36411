//! `(while-loop cond body init)` (issue 17, item 5): a loop whose number
//! of steps depends on the data. Its values against a Lisp loop; its
//! gradients (online checkpointing with any number of snapshots) against
//! the traced Lisp loop (which differentiates the path taken), finite
//! differences, the implicit derivative of a Newton iteration, and each
//! other; forward mode; the snapshots held, counted; and the errors.

use super::*;

const SETUP: &str = r"
(seed! 5)
(define (newton-sqrt a)
  (while-loop (lambda (x) (> (abs (- (* x x) a)) 1e-12))
              (lambda (x) (* 0.5 (+ x (/ a x))))
              a))
;; A damped oscillator stepped until its energy falls below a threshold:
;; the number of steps depends on the parameters.
(define (energy s) (+ (* (first s) (first s)) (* (second s) (second s))))
(define (oscillate k c x0 snapshots)
  (let ((s (while-loop (lambda (s) (> (energy s) 0.05))
                       (lambda (s) (let ((x (first s)) (v (second s)))
                                     (list (+ x (* 0.05 v)) (- v (* 0.05 (+ (* k x) (* c v)))))))
                       (list x0 0.0) :snapshots snapshots)))
    (+ (* 3 (first s)) (second s))))
(define (oscillate-loop k c x0)
  (let loop ((x x0) (v 0.0))
    (if (> (+ (* x x) (* v v)) 0.05)
        (loop (+ x (* 0.05 v)) (- v (* 0.05 (+ (* k x) (* c v)))))
        (+ (* 3 x) v))))
;; A tensor state with closed-over weights.
(define W (* 0.3 (randn '(4 4))))
(define (grow W u0 snapshots)
  (sum (while-loop (lambda (u) (< (sum (* u u)) 50.0))
                   (lambda (u) (+ u (* 0.1 (tanh (matmul W u))) 0.05))
                   u0 :snapshots snapshots)))
(define (grow-loop W u0)
  (let loop ((u u0))
    (if (< (sum (* u u)) 50.0) (loop (+ u (* 0.1 (tanh (matmul W u))) 0.05)) (sum u))))
";

fn setup() -> Engine {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    engine
}

#[test]
fn while_loop_computes_what_a_lisp_loop_computes() {
    let mut engine = setup();
    let root = number(&mut engine, "(newton-sqrt 2.0)");
    assert!(close(root, 2f64.sqrt(), 1e-15), "{root}");
    for (looped, plain) in [
        ("(oscillate 2.0 0.3 1.0 4)", "(oscillate-loop 2.0 0.3 1.0)"),
        ("(oscillate 1.0 0.5 0.8 64)", "(oscillate-loop 1.0 0.5 0.8)"),
        (
            "(grow W (* 0.1 (ones '(4))) 3)",
            "(grow-loop W (* 0.1 (ones '(4))))",
        ),
        (
            "((jit (lambda (W u) (grow W u 3))) W (* 0.1 (ones '(4))))",
            "(grow-loop W (* 0.1 (ones '(4))))",
        ),
    ] {
        let (got, want) = (number(&mut engine, looped), number(&mut engine, plain));
        assert!(close(got, want, 1e-13), "{looped}: {got} vs {want}");
    }
    // A condition false at the start: no step, the initial state.
    assert_eq!(
        number(
            &mut engine,
            "(while-loop (lambda (x) (> x 10)) (lambda (x) (* 2 x)) 3.0)"
        ),
        3.0
    );
    // Counting steps in the state.
    assert_eq!(
        number(
            &mut engine,
            "(second (while-loop (lambda (s) (> (first s) 1.0)) (lambda (s) (list (* 0.5 (first s)) (+ 1 (second s)))) (list 100.0 0.0)))"
        ),
        7.0
    );
}

/// The gradient is the same whatever the snapshots (the online schedule
/// reverses the same steps from the same states), equal to the traced
/// Lisp loop's and to finite differences.
#[test]
fn gradients_agree_for_any_number_of_snapshots() {
    let mut engine = setup();
    let cases = [
        (
            "(lambda (k c x0) (oscillate k c x0 {k}))",
            "(list 2.0 0.3 1.0)",
            "oscillate-loop",
        ),
        (
            "(lambda (W u0) (grow W u0 {k}))",
            "(list W (* 0.1 (ones '(4))))",
            "grow-loop",
        ),
    ];
    for (template, args, unrolled) in cases {
        let reference = parts(&eval(
            &mut engine,
            &format!("(apply (grad {unrolled} :wrt 'all) {args})"),
        ))
        .unwrap();
        for k in [1, 2, 3, 5, 8, 64, 100000] {
            let f = template.replace("{k}", &k.to_string());
            let got = parts(&eval(
                &mut engine,
                &format!("(apply (grad {f} :wrt 'all) {args})"),
            ))
            .unwrap();
            for (g, want) in got.iter().zip(&reference) {
                compare(&format!("{f} vs the traced loop"), g, want, 1e-11).unwrap();
            }
            let error = number(&mut engine, &format!("(check-grad {f} {args})"));
            assert!(error < 1e-6, "{f}: check-grad {error}");
        }
    }
}

/// Newton's iteration converges to sqrt(a); differentiating through its
/// steps (and its stopping test) gives the derivative of sqrt, 1/(2
/// sqrt(a)), in reverse and forward mode.
#[test]
fn newton_iteration_differentiates_to_the_implicit_derivative() {
    let mut engine = setup();
    for a in [0.5, 2.0, 9.0, 1234.5] {
        let want = 0.5 / f64::sqrt(a);
        let reverse = number(&mut engine, &format!("((grad newton-sqrt) {a})"));
        assert!(close(reverse, want, 1e-10), "a = {a}: {reverse} vs {want}");
        let forward = items(&eval(
            &mut engine,
            &format!("(jvp newton-sqrt (list {a}) (list 1.0))"),
        ))
        .unwrap();
        let forward = forward[1].as_f64().unwrap();
        assert!(close(forward, want, 1e-10), "a = {a}: {forward} vs {want}");
    }
}

#[test]
fn jvp_through_while_loop_matches_the_traced_loop() {
    let mut engine = setup();
    for (looped, unrolled, args, tangents) in [
        (
            "(lambda (k c x0) (oscillate k c x0 3))",
            "oscillate-loop",
            "(list 2.0 0.3 1.0)",
            "(list 1.0 -0.5 2.0)",
        ),
        (
            "(lambda (W u0) (grow W u0 2))",
            "grow-loop",
            "(list W (* 0.1 (ones '(4))))",
            "(list (cos W) [1.0 0.0 -1.0 2.0])",
        ),
    ] {
        let got = parts(&eval(
            &mut engine,
            &format!("(jvp {looped} {args} {tangents})"),
        ))
        .unwrap();
        let want = parts(&eval(
            &mut engine,
            &format!("(jvp {unrolled} {args} {tangents})"),
        ))
        .unwrap();
        for (g, w) in got.iter().zip(&want) {
            compare(&format!("jvp of {looped}"), g, w, 1e-11).unwrap();
        }
    }
}

/// However many steps run, the reverse holds at most its snapshots: the
/// held snapshot bytes `tape-stats` counts stay within `k` states.
#[test]
fn reverse_holds_at_most_its_snapshots() {
    let mut engine = setup();
    eval(
        &mut engine,
        "(define (drift k) (lambda (u) (sum (while-loop (lambda (u) (< (sum u) 40.0)) (lambda (u) (+ u 0.001 (* 0.0001 (sin u)))) u :snapshots k))))
         (define u0 (zeros '(100)))",
    );
    let state_bytes = 100.0 * 8.0;
    for k in [1, 2, 4, 16] {
        let stats = format!("(tape-stats (drift {k}) (list u0))");
        let held = number(
            &mut engine,
            &format!("(second (assoc 'snapshot-bytes {stats}))"),
        );
        assert!(
            held <= k as f64 * state_bytes && held >= state_bytes,
            "k = {k}: {held} bytes held"
        );
        let error = number(
            &mut engine,
            &format!("(check-grad (drift {k}) (list (* 0.1 (ones '(100)))))"),
        );
        assert!(error < 1e-6, "k = {k}: check-grad {error}");
    }
}

#[test]
fn while_loop_errors_are_clear() {
    let mut engine = setup();
    for (form, expected) in [
        (
            "(while-loop (lambda (x) (> x 0)) (lambda (x) (+ x 1)) 1.0 :max-steps 50)",
            "reached :max-steps 50",
        ),
        (
            "((grad (lambda (a) (while-loop (lambda (x) (> x 0)) (lambda (x) (+ x a)) 1.0 :max-steps 20))) 1.0)",
            "reached :max-steps 20",
        ),
        (
            "(while-loop (lambda (x) (> x 0)) (lambda (x) (list x x)) 1.0)",
            "same structure",
        ),
        (
            "(while-loop (lambda (x) (> (sum x) 0)) (lambda (x) [1.0 2.0]) [1.0 2.0 3.0])",
            "returned shape [2] for state part 0, which has shape [3]",
        ),
        (
            "(while-loop (lambda (x) (> x [0.0 1.0])) (lambda (x) x) [1.0 2.0])",
            "one number",
        ),
        (
            "(while-loop (lambda (x) (and (> x 0) (< x 10))) (lambda (x) (- x 1)) 5.0)",
            "(* a b) for and",
        ),
        (
            "(while-loop (lambda (x) (> x 0)) (lambda (x) (if (> x 2) (- x 1) (- x 2))) 5.0)",
            "looks at the values",
        ),
        (
            "(while-loop (lambda (x) (> x 0)) (lambda (x) (- x 1)) 5.0 :snapshots 0)",
            "positive integer",
        ),
        (
            "(while-loop (lambda (x) (> x 0)) (lambda (x) (- x 1)) 5.0 :max-steps -3)",
            "positive integer",
        ),
    ] {
        let error = engine.eval(form).expect_err(form);
        assert!(
            error.to_string().contains(expected),
            "{form}: {}",
            error.render()
        );
    }
    // Conditions combined with * and max work.
    assert_eq!(
        number(
            &mut engine,
            "(while-loop (lambda (x) (* (> x 0) (< x 10))) (lambda (x) (- x 1)) 5.0)"
        ),
        0.0
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On random thresholds, widths, parameters and snapshot counts, the
    /// while-loop gives the traced Lisp loop's value, gradient and
    /// tangent.
    #[test]
    fn while_loop_matches_the_traced_loop(
        width in 1usize..5,
        threshold in 2.0f64..40.0,
        k in 1usize..9,
        seed in 0u64..1000,
    ) {
        let mut engine = engine();
        let source = format!(
            "(seed! {seed})
             (define a (+ 0.5 (rand '({width}))))
             (define u0 (* 0.1 (rand '({width}))))
             (define (looped a u0)
               (sum (* u0 (while-loop (lambda (u) (< (sum (* u u)) {threshold}))
                                      (lambda (u) (+ u (* 0.1 a (+ 1.5 (sin u)))))
                                      u0 :snapshots {k}))))
             (define (unrolled a u0)
               (let loop ((u u0))
                 (if (< (sum (* u u)) {threshold}) (loop (+ u (* 0.1 a (+ 1.5 (sin u))))) (sum (* u0 u)))))
             (list (looped a u0) (unrolled a u0)
                   ((grad looped :wrt 'all) a u0) ((grad unrolled :wrt 'all) a u0)
                   (second (jvp looped (list a u0) (list (cos a) (sin u0))))
                   (second (jvp unrolled (list a u0) (list (cos a) (sin u0)))))"
        );
        let all = items(&eval(&mut engine, &source)).unwrap();
        let (got, want) = (array(&all[0]).unwrap(), array(&all[1]).unwrap());
        compare("value", &got, &want, 1e-12).map_err(TestCaseError::fail)?;
        for (g, w) in parts(&all[2]).unwrap().iter().zip(&parts(&all[3]).unwrap()) {
            compare("gradient", g, w, 1e-10).map_err(TestCaseError::fail)?;
        }
        let (got, want) = (array(&all[4]).unwrap(), array(&all[5]).unwrap());
        compare("tangent", &got, &want, 1e-10).map_err(TestCaseError::fail)?;
    }
}

//! Long scalar loops written in Lisp (issue 23, item 2): their trace goes
//! to the flat arena and their gradient to a straight-line program
//! (`backends::cpu::straight`). Each gradient is checked against the same map as a
//! `scan` (a different path: a loop node, its own reverse sweep and tape)
//! and against central differences of the eager function; the cases that
//! must leave the straight line (a branch on a traced value, a tensor, a
//! nested derivative, `tape-stats`) are checked the same way; `jvp` of
//! such a loop runs the straight line's forward pass.

use super::*;

/// Steps of the loops below: past the optimizer's saturation size, so the
/// straight line serves.
const STEPS: usize = 6000;

fn loops(engine: &mut Engine) {
    eval(
        engine,
        &format!(
            "(define K {STEPS})
             (define (logistic r)
               (let ((x 0.3) (i 0))
                 (while (< i K)
                   (set! x (* r x (- 1.0 x)))
                   (set! i (+ i 1)))
                 x))
             (define (logistic-scan r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 K))"
        ),
    );
}

/// Tapes compiled so far: `tape-stats` of a small function whose tape
/// is cached after its first call, so reading the count compiles nothing.
fn tapes_compiled(engine: &mut Engine) -> f64 {
    eval(engine, "(define (probe-tape p) (* p p))");
    number(
        engine,
        "(second-of (assoc 'cache-misses (tape-stats probe-tape (list 1.0))))",
    )
}

/// The central difference of the global function `f` at `x` (eager).
fn difference(engine: &mut Engine, f: &str, x: f64, h: f64) -> f64 {
    let up = number(engine, &format!("({f} {})", x + h));
    let down = number(engine, &format!("({f} {})", x - h));
    (up - down) / (2.0 * h)
}

#[test]
fn a_long_loop_gradient_matches_scan_and_differences() {
    let mut engine = engine();
    loops(&mut engine);
    tapes_compiled(&mut engine);
    let before = tapes_compiled(&mut engine);
    number(&mut engine, "((grad logistic) 2.9)");
    assert_eq!(
        tapes_compiled(&mut engine),
        before,
        "the straight line compiles no tape"
    );
    for r in [2.5, 2.9, 3.1] {
        let looped = number(&mut engine, &format!("((grad logistic) {r})"));
        let scanned = number(&mut engine, &format!("((grad logistic-scan) {r})"));
        assert!(
            close(looped, scanned, 1e-9),
            "r = {r}: loop {looped}, scan {scanned}"
        );
        let fd = difference(&mut engine, "logistic", r, 1e-6);
        assert!(close(looped, fd, 1e-5), "r = {r}: loop {looped}, fd {fd}");
    }
}

#[test]
fn later_calls_replay_the_straight_line_on_new_values() {
    let mut engine = engine();
    loops(&mut engine);
    eval(&mut engine, "(define g (grad logistic))");
    let first = number(&mut engine, "(g 2.9)");
    let replayed = number(&mut engine, "(g 3.1)");
    let fresh = number(&mut engine, "((grad logistic) 3.1)");
    assert_eq!(replayed, fresh, "a replay computes what a new trace does");
    assert_ne!(first, replayed);
    assert!(
        number(&mut engine, "(g 3)").is_finite(),
        "an integer argument"
    );
}

#[test]
fn value_and_grad_and_several_arguments() {
    let mut engine = engine();
    eval(
        &mut engine,
        &format!(
            "(define (damped a b)
               (let ((x 1.0) (i 0))
                 (while (< i {STEPS})
                   (set! x (+ (* a (sin x)) (* b 0.001)))
                   (set! i (+ i 1)))
                 x))
             (define (damped-b b) (damped 0.9 b))"
        ),
    );
    let pair = eval(&mut engine, "((value-and-grad damped) 0.9 0.5)");
    let [value, slope] = &items(&pair).unwrap()[..] else {
        panic!("value-and-grad gives two values: {pair}")
    };
    let eager = number(&mut engine, "(damped 0.9 0.5)");
    assert!(close(value.as_f64().unwrap(), eager, 1e-12));
    let fd = difference(&mut engine, "(lambda (a) (damped a 0.5))", 0.9, 1e-6);
    assert!(close(slope.as_f64().unwrap(), fd, 1e-5), "{slope} vs {fd}");
    let both = parts(&eval(&mut engine, "((grad damped :wrt '(0 1)) 0.9 0.5)")).unwrap();
    let along = parts(&eval(
        &mut engine,
        "(jvp damped (list 0.9 0.5) (list 2 -3.0))",
    ))
    .unwrap();
    let want = 2.0 * both[0][[]] - 3.0 * both[1][[]];
    assert!(
        close(along[1][[]], want, 1e-9),
        "{} vs {want}",
        along[1][[]]
    );
    let refused = try_eval(&mut engine, "(jvp damped (list 0.9 0.5) (list [1.0] 0.0))");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("tangent has shape [1]")),
        "{refused:?}"
    );
    let fd_b = difference(&mut engine, "damped-b", 0.5, 1e-6);
    assert!(close(both[0][[]], fd, 1e-5));
    assert!(close(both[1][[]], fd_b, 1e-5), "{} vs {fd_b}", both[1][[]]);
}

#[test]
fn an_argument_the_result_ignores_has_gradient_zero() {
    let mut engine = engine();
    eval(
        &mut engine,
        &format!(
            "(define (ignores a b)
               (let ((x b) (i 0))
                 (while (< i {STEPS}) (set! x (sin x)) (set! i (+ i 1)))
                 x))"
        ),
    );
    let both = parts(&eval(&mut engine, "((grad ignores :wrt 'all) 0.4 0.7)")).unwrap();
    assert_eq!(both[0][[]], 0.0);
    let fd = difference(&mut engine, "(lambda (b) (ignores 0.4 b))", 0.7, 1e-6);
    assert!(close(both[1][[]], fd, 1e-5));
}

#[test]
fn a_branch_on_a_traced_value_brings_the_steps_into_the_graph() {
    let mut engine = engine();
    eval(
        &mut engine,
        &format!(
            "(define (tent r)
               (let ((x 0.3) (i 0))
                 (while (< i {STEPS})
                   (set! x (if (< x 0.5) (* r x) (* r (- 1.0 x))))
                   (set! i (+ i 1)))
                 x))"
        ),
    );
    // A slope below 2 keeps the tent map contracting toward 0.
    let slope = number(&mut engine, "((grad tent) 0.7)");
    let fd = difference(&mut engine, "tent", 0.7, 1e-7);
    assert!(close(slope, fd, 1e-4), "{slope} vs {fd}");
}

#[test]
fn a_loop_over_a_tensor_result_takes_the_tensor_pipeline() {
    let mut engine = engine();
    eval(
        &mut engine,
        &format!(
            "(define (spring w)
               (let ((x (sum (* w w))) (i 0))
                 (while (< i {STEPS})
                   (set! x (* 0.9999 (+ x (* 0.0001 (cos x)))))
                   (set! i (+ i 1)))
                 x))"
        ),
    );
    tapes_compiled(&mut engine);
    let before = tapes_compiled(&mut engine);
    let gradient = parts(&eval(&mut engine, "((grad spring) [0.3 -0.2])")).unwrap();
    assert_eq!(
        tapes_compiled(&mut engine),
        before + 1.0,
        "a tape is compiled"
    );
    for (k, w) in [0.3, -0.2].into_iter().enumerate() {
        let at = |engine: &mut Engine, d: f64| {
            let mut ws = [0.3, -0.2];
            ws[k] = w + d;
            number(engine, &format!("(spring [{} {}])", ws[0], ws[1]))
        };
        let fd = (at(&mut engine, 1e-6) - at(&mut engine, -1e-6)) / 2e-6;
        assert!(
            close(gradient[0][[k]], fd, 1e-5),
            "{k}: {} vs {fd}",
            gradient[0][[k]]
        );
    }
}

#[test]
fn nested_and_forward_derivatives_of_a_scalar_loop() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (short r)
           (let ((x 0.3) (i 0))
             (while (< i 300) (set! x (* r x (- 1.0 x))) (set! i (+ i 1)))
             x))
         (define (slope r) ((grad short) r))",
    );
    let second = number(&mut engine, "((grad (grad short)) 2.9)");
    let fd = difference(&mut engine, "slope", 2.9, 1e-5);
    assert!(close(second, fd, 1e-4), "{second} vs {fd}");
    loops(&mut engine);
    tapes_compiled(&mut engine);
    let before = tapes_compiled(&mut engine);
    let forward = parts(&eval(&mut engine, "(jvp logistic (list 2.9) (list 1.0))")).unwrap();
    assert_eq!(
        tapes_compiled(&mut engine),
        before,
        "a long scalar loop's jvp compiles no tape"
    );
    let reverse = number(&mut engine, "((grad logistic) 2.9)");
    assert!(
        close(forward[1][[]], reverse, 1e-9),
        "{} vs {reverse}",
        forward[1][[]]
    );
    let eager = number(&mut engine, "(logistic 2.9)");
    assert!(close(forward[0][[]], eager, 1e-12));
}

#[test]
fn tape_stats_of_a_long_loop_still_compile_a_tape() {
    let mut engine = engine();
    loops(&mut engine);
    let instructions = number(
        &mut engine,
        "(second-of (assoc 'instructions (tape-stats logistic (list 2.9))))",
    );
    assert!(instructions > STEPS as f64, "{instructions} instructions");
}

#[test]
fn debug_nans_and_a_memory_budget_keep_their_paths() {
    let mut engine = engine();
    loops(&mut engine);
    let plain = number(&mut engine, "((grad logistic) 2.9)");
    eval(&mut engine, "(debug-nans #t)");
    let checked = number(&mut engine, "((grad logistic) 2.9)");
    eval(&mut engine, "(debug-nans #f)");
    assert!(close(checked, plain, 1e-9), "{checked} vs {plain}");
    eval(&mut engine, "(set-memory-budget! 100000)");
    let budgeted = number(&mut engine, "((grad logistic) 2.9)");
    assert!(close(budgeted, plain, 1e-9), "{budgeted} vs {plain}");
}

//! `scan` (issue 5): the loop's values against a plain Lisp loop, its
//! gradients against the traced (unrolled) loop, finite differences and
//! each other across checkpoint strategies, and its errors.

use super::*;

/// Definitions the tests share: the logistic map, a heat equation step
/// with a closed-over coefficient, a small recurrent network, and a state
/// that is a list.
const SCAN_SETUP: &str = r"
(seed! 7)
(define (logistic-step r) (lambda (x i) (* r x (- 1.0 x))))
(define (logistic r n strategy k)
  (scan (logistic-step r) 0.3 n :checkpoint strategy :snapshots k))
(define (logistic-loop r n)
  (let loop ((x 0.3) (i 0)) (if (= i n) x (loop (* r x (- 1.0 x)) (+ i 1)))))
(define (heat-step alpha)
  (lambda (u i) (+ u (* alpha (- (+ (roll u 1) (roll u -1)) (* 2 u))))))
(define (heat alpha u0 n strategy k)
  (let ((u (scan (heat-step alpha) u0 n :checkpoint strategy :snapshots k)))
    (sum (* u u))))
(define (heat-loop alpha u0 n)
  (let loop ((u u0) (i 0))
    (if (= i n) (sum (* u u)) (loop ((heat-step alpha) u i) (+ i 1)))))
(define u0 (sin (linspace 0 3 24)))
(define W (* 0.4 (randn '(5 5))))
(define V (* 0.4 (randn '(5 5))))
(define h0 (* 0.5 (randn '(5))))
(define (rnn W V h0 n strategy k)
  (let ((state (scan (lambda (s i)
                       (let ((h (tanh (+ (matmul W (car s)) (* 0.05 i)))))
                         (list h (+ (second s) (sum (matmul V h))))))
                     (list h0 0.0) n :checkpoint strategy :snapshots k)))
    (+ (second state) (sum (car state)))))
(define (rnn-loop W V h0 n)
  (let loop ((h h0) (acc 0.0) (i 0))
    (if (= i n) (+ acc (sum h))
        (let ((h (tanh (+ (matmul W h) (* 0.05 i)))))
          (loop h (+ acc (sum (matmul V h))) (+ i 1))))))
;; A step too large for a plan (1,200 numbers), through a product the
;; reverse under store-all keeps rather than recomputes.
(define W2 (* 0.15 (randn '(40 40))))
(define H2 (* 0.5 (randn '(40 30))))
(define (wide-step W) (lambda (h i) (tanh (+ (matmul W h) (* 0.01 i)))))
(define (wide W h0 n strategy k)
  (let ((h (scan (wide-step W) h0 n :checkpoint strategy :snapshots k)))
    (sum (* h h))))
(define (wide-loop W h0 n)
  (let loop ((h h0) (i 0))
    (if (= i n) (sum (* h h)) (loop ((wide-step W) h i) (+ i 1)))))
";

fn scan_engine() -> Engine {
    let mut engine = engine();
    eval(&mut engine, SCAN_SETUP);
    engine
}

#[test]
fn scan_computes_what_a_lisp_loop_computes() {
    let mut engine = scan_engine();
    for n in [1, 2, 7, 50] {
        let got = number(&mut engine, &format!("(logistic 2.9 {n} 'revolve 2)"));
        let want = number(&mut engine, &format!("(logistic-loop 2.9 {n})"));
        assert!(close(got, want, 1e-14), "logistic n = {n}: {got} vs {want}");
        let got = number(&mut engine, &format!("(heat 0.2 u0 {n} 'revolve 2)"));
        let want = number(&mut engine, &format!("(heat-loop 0.2 u0 {n})"));
        assert!(close(got, want, 1e-13), "heat n = {n}: {got} vs {want}");
        let got = number(&mut engine, &format!("(rnn W V h0 {n} 'revolve 2)"));
        let want = number(&mut engine, &format!("(rnn-loop W V h0 {n})"));
        assert!(close(got, want, 1e-13), "rnn n = {n}: {got} vs {want}");
    }
    // No steps: the initial state; a list state with an integer leaf.
    assert_eq!(
        number(&mut engine, "(scan (lambda (x i) (* 2 x)) 0.5 0)"),
        0.5
    );
    let parts = parts(&eval(
        &mut engine,
        "(scan (lambda (s i) (list (+ (car s) i) (* 2 (second s)))) (list 0 [1 2]) 5)",
    ))
    .unwrap();
    assert_eq!(parts[0].iter().copied().collect::<Vec<_>>(), [10.0]);
    assert_eq!(parts[1].iter().copied().collect::<Vec<_>>(), [32.0, 64.0]);
}

/// Every strategy reverses the same steps from the same states: the
/// gradients agree to rounding, with each other and with the traced loop,
/// and with finite differences.
#[test]
fn gradients_agree_across_checkpoint_strategies() {
    let mut engine = scan_engine();
    let strategies = [
        "'store-all 1",
        "'recompute 1",
        "'revolve 1",
        "'revolve 2",
        "'revolve 3",
        "'revolve 7",
        "'revolve 1000",
    ];
    let cases: [(&str, &str, &str); 4] = [
        (
            "(lambda (r) (logistic r 40 {s}))",
            "(list 2.9)",
            "(lambda (r) (logistic-loop r 40))",
        ),
        (
            "(lambda (alpha u0) (heat alpha u0 30 {s}))",
            "(list 0.2 u0)",
            "(lambda (alpha u0) (heat-loop alpha u0 30))",
        ),
        (
            "(lambda (W V h0) (rnn W V h0 12 {s}))",
            "(list W V h0)",
            "(lambda (W V h0) (rnn-loop W V h0 12))",
        ),
        (
            "(lambda (W h0) (wide W h0 10 {s}))",
            "(list W2 H2)",
            "(lambda (W h0) (wide-loop W h0 10))",
        ),
    ];
    for (template, args, unrolled) in cases {
        let grad_of = |engine: &mut Engine, f: &str| -> Vec<ArrayD<f64>> {
            parts(&eval(
                engine,
                &format!("(apply (grad {f} :wrt 'all) {args})"),
            ))
            .unwrap()
        };
        let reference = grad_of(&mut engine, unrolled);
        for strategy in strategies {
            let f = template.replace("{s}", strategy);
            let got = grad_of(&mut engine, &f);
            for (g, want) in got.iter().zip(&reference) {
                compare(&format!("{f} vs the traced loop"), g, want, 1e-12).unwrap();
            }
            let error = number(&mut engine, &format!("(check-grad {f} {args})"));
            assert!(error < 1e-6, "{f}: check-grad {error}");
        }
    }
}

/// Under store-all a step's products are kept for its reverse step (not
/// computed again there): `tape-stats` counts them with the states.
#[test]
fn store_all_keeps_each_steps_products_for_its_reverse() {
    let mut engine = scan_engine();
    let held = number(
        &mut engine,
        "(second (assoc 'snapshot-bytes (tape-stats (lambda (W h0) (wide W h0 10 'store-all 1)) (list W2 H2))))",
    );
    // Nine states of 1,200 numbers (the last lives in the working state),
    // and the products of the nine steps the forward sweep runs (the last
    // step's is computed in its reverse).
    assert_eq!(held, (9.0 + 9.0) * 1200.0 * 8.0);
    let held = number(
        &mut engine,
        "(second (assoc 'snapshot-bytes (tape-stats (lambda (W h0) (wide W h0 10 'revolve 3)) (list W2 H2))))",
    );
    assert!(
        held <= 3.0 * 1200.0 * 8.0,
        "revolve keeps states only: {held}"
    );
}

#[test]
fn auto_checkpointing_fits_the_memory_budget() {
    let mut engine = scan_engine();
    // A state of 24 numbers is 192 bytes: a 1,000-byte budget holds 5.
    let f = "(lambda (alpha) (sum (scan (heat-step alpha) u0 40 :checkpoint 'auto :memory-budget 1000)))";
    let error = number(&mut engine, &format!("(check-grad {f} (list 0.2))"));
    assert!(error < 1e-6, "check-grad {error}");
    let shown = eval(&mut engine, &format!("(show-tape {f} (list 0.2))"));
    assert!(shown.to_string().contains("Revolve(5)"), "{shown}");
    // Without a budget, the memory the process can get holds every state
    // of so small a loop: store-all, and the gradient store-all gives.
    let unbudgeted = "(lambda (alpha) (sum (scan (heat-step alpha) u0 40 :checkpoint 'auto)))";
    let shown = eval(&mut engine, &format!("(show-tape {unbudgeted} (list 0.2))"));
    assert!(shown.to_string().contains("StoreAll"), "{shown}");
    let stored = "(lambda (alpha) (sum (scan (heat-step alpha) u0 40 :checkpoint 'store-all)))";
    assert_eq!(
        number(&mut engine, &format!("((grad {unbudgeted}) 0.2)")),
        number(&mut engine, &format!("((grad {stored}) 0.2)")),
    );
}

#[test]
fn closed_over_values_nested_loops_and_jit() {
    let mut engine = scan_engine();
    // d/da of a^6 through a loop inside a loop, both capturing a.
    let nested = "(lambda (a) (scan (lambda (x i) (scan (lambda (y j) (* a y)) x 3)) 1.0 2))";
    let g = number(&mut engine, &format!("((grad {nested}) 1.1)"));
    assert!(close(g, 6.0 * 1.1f64.powi(5), 1e-13), "{g}");
    let jitted = number(
        &mut engine,
        "((jit (lambda (a) (scan (lambda (x i) (* a x)) 1.0 10))) 2.0)",
    );
    assert_eq!(jitted, 1024.0);
    let vg = parts(&eval(
        &mut engine,
        "((value-and-grad (lambda (a) (scan (lambda (x i) (* a x)) 1.0 10))) 1.5)",
    ))
    .unwrap();
    assert!(close(vg[0].sum(), 1.5f64.powi(10), 1e-13));
    assert!(close(vg[1].sum(), 10.0 * 1.5f64.powi(9), 1e-13));
    // The cotangent of a tensor state, through vjp.
    let v = parts(&eval(
        &mut engine,
        "(vjp (lambda (a) (scan (lambda (x i) (* a x)) [1.0 2.0] 3)) (list 1.5) [1 1])",
    ))
    .unwrap();
    assert!(close(v[1].sum(), 3.0 * 2.25 * 3.0, 1e-13), "{v:?}");
}

#[test]
fn scan_errors_are_clear() {
    let mut engine = scan_engine();
    for (form, expected) in [
        (
            "(scan (lambda (x i) (if (> x 1) x (* 2 x))) 0.3 5)",
            "looks at the values",
        ),
        (
            "(scan (lambda (x i) [1 2]) 0.3 5)",
            "shape [2] for state part 0",
        ),
        ("(scan (lambda (x i) (list x x)) 0.3 5)", "same structure"),
        ("(scan (lambda (x i) x) 0.3 -1)", "non-negative integer"),
        ("(scan (lambda (x i) x) 0.3 2.5)", "non-negative integer"),
        (
            "(scan (lambda (x i) x) 0.3 5 :checkpoint 'bogus)",
            "unknown :checkpoint",
        ),
        (
            "(scan (lambda (x i) x) 0.3 5 :snapshots 0)",
            "positive integer",
        ),
        ("(scan (lambda (x) x) 0.3 5)", "argument"),
        (
            "(scan (lambda (x i) x) \"s\" 5)",
            "numbers, tensors or lists",
        ),
    ] {
        let error = engine.eval(form).expect_err(form);
        assert!(
            error.to_string().contains(expected),
            "{form}: {}",
            error.render()
        );
    }
    // The engine carries on.
    assert_eq!(
        number(&mut engine, "(scan (lambda (x i) (+ x 1)) 0 3)"),
        3.0
    );
}

/// `(checkpoint f)` computes what `f` computes, and its gradients equal
/// `f`'s (the backward pass recomputes `f`'s intermediates instead of
/// reading stored ones).
#[test]
fn checkpointed_functions_have_the_same_values_and_gradients() {
    let mut engine = scan_engine();
    eval(
        &mut engine,
        r"
(define (layer W b x) (tanh (+ (matmul W x) b)))
(define clayer (checkpoint layer))
(define (net f W b x) (sum (f W b (f W b x))))
(define b5 (* 0.1 (randn '(5))))
(define (pair a b) (list (* a (sin b)) (+ a (exp b))))
(define cpair (checkpoint pair))
(define (use-pair p a b) (let ((r (p a b))) (+ (sum (car r)) (sum (second r)))))
",
    );
    for (plain, checkpointed, args) in [
        (
            "(lambda (W b x) (net layer W b x))",
            "(lambda (W b x) (net clayer W b x))",
            "(list W b5 h0)",
        ),
        (
            "(lambda (a b) (use-pair pair a b))",
            "(lambda (a b) (use-pair cpair a b))",
            "(list [0.5 -1.0 2.0] [0.1 0.2 0.3])",
        ),
    ] {
        let want = parts(&eval(
            &mut engine,
            &format!("(apply (grad {plain} :wrt 'all) {args})"),
        ))
        .unwrap();
        let got = parts(&eval(
            &mut engine,
            &format!("(apply (grad {checkpointed} :wrt 'all) {args})"),
        ))
        .unwrap();
        for (g, w) in got.iter().zip(&want) {
            compare(checkpointed, g, w, 1e-13).unwrap();
        }
        let error = number(&mut engine, &format!("(check-grad {checkpointed} {args})"));
        assert!(error < 1e-6, "{checkpointed}: check-grad {error}");
        let value = number(&mut engine, &format!("(apply {checkpointed} {args})"));
        let plain_value = number(&mut engine, &format!("(apply {plain} {args})"));
        assert!(close(value, plain_value, 1e-14));
    }
    // Outside differentiation it is a plain call; results keep their
    // structure.
    let result = parts(&eval(&mut engine, "(cpair 2 3)")).unwrap();
    assert_eq!(result.len(), 2);
    // The tape holds f's results and the loop, not f's intermediates.
    let shown = eval(
        &mut engine,
        "(show-tape (lambda (W b x) (net clayer W b x)) (list W b5 h0))",
    );
    assert!(
        shown.to_string().contains("scan-vjp[1 steps Recompute]"),
        "{shown}"
    );
    let error = engine
        .eval("((grad (checkpoint (lambda (x) (if (> x 0) x (- x))))) 1.5)")
        .expect_err("branches on its argument");
    assert!(
        error
            .to_string()
            .contains("recomputed in the backward pass"),
        "{}",
        error.render()
    );
}

/// `tape-stats` reports what the executor measured: snapshots within the
/// strategy's count (and the memory budget), values recomputed by the
/// reverse, and peak bytes.
#[test]
fn tape_stats_measure_snapshots_and_recomputation() {
    let mut engine = scan_engine();
    eval(
        &mut engine,
        r"
(define field (sin (linspace 0 3 1000)))
(define (heat-loss strategy k)
  (lambda (u) (sum (scan (heat-step 0.2) u 200 :checkpoint strategy :snapshots k))))
(define (stat f key) (second (assoc key (tape-stats f (list field)))))
",
    );
    let state_bytes = 1000.0 * 8.0;
    let stat = |engine: &mut Engine, f: &str, key: &str| -> f64 {
        number(engine, &format!("(stat {f} '{key})"))
    };
    // Store-all keeps every state but the last (which the working state
    // holds) and recomputes no step (only each step's intermediates,
    // inside its reverse step).
    let f = "(heat-loss 'store-all 1)";
    assert_eq!(stat(&mut engine, f, "snapshot-bytes"), 199.0 * state_bytes);
    let per_step = stat(&mut engine, f, "recomputed-values") / 200.0;
    assert!(per_step >= 1.0, "{per_step}");
    // Revolve keeps at most k states and recomputes the binomial count.
    for k in [1usize, 3, 10] {
        let f = format!("(heat-loss 'revolve {k})");
        let held = stat(&mut engine, &f, "snapshot-bytes");
        assert!(held <= k as f64 * state_bytes, "k = {k}: {held} bytes");
        let steps = epsilon::tape::checkpoint::binomial_recomputations(200, k) as f64;
        let recomputed = stat(&mut engine, &f, "recomputed-values");
        assert_eq!(recomputed, (steps + 200.0) * per_step, "k = {k}");
        assert!(stat(&mut engine, &f, "measured-peak-bytes") >= held);
    }
    // A state part the step leaves unchanged is one buffer in every
    // snapshot: counted once, as the memory it keeps alive.
    eval(
        &mut engine,
        r"
(define (two-part strategy k)
  (lambda (u) (sum (first (scan (lambda (s i) (list (* (second s) (first s)) (second s)))
                                (list u (cos u)) 200 :checkpoint strategy :snapshots k)))))
",
    );
    let held = stat(&mut engine, "(two-part 'store-all 1)", "snapshot-bytes");
    assert_eq!(held, 200.0 * state_bytes, "199 states of u, one of (cos u)");
    let held = stat(&mut engine, "(two-part 'revolve 10)", "snapshot-bytes");
    assert!(held <= 11.0 * state_bytes, "{held}");
    // 'auto fits its snapshots in the memory budget.
    for budget in [8_000, 30_000, 100_000] {
        let f = format!(
            "(lambda (u) (sum (scan (heat-step 0.2) u 200 :checkpoint 'auto :memory-budget {budget})))"
        );
        let held = stat(&mut engine, &f, "snapshot-bytes");
        assert!(held <= budget as f64, "budget {budget}: {held} bytes");
        let error = number(&mut engine, &format!("(check-grad {f} (list field))"));
        assert!(error < 1e-6, "budget {budget}: check-grad {error}");
    }
}

/// `(set-memory-budget! bytes)`: tapes compiled afterwards recompute cheap
/// elementwise values instead of keeping them alive, when that lowers the
/// peak; the gradient is the same; `tape-stats` says whether the tape fits.
#[test]
fn a_memory_budget_rematerializes_cheap_values() {
    let mut engine = scan_engine();
    eval(
        &mut engine,
        r"
(define x (linspace -1 1 100000))
(define (f x)
  (let* ((a (exp (sin x)))
         (c (matmul (reshape (* a a) '(1 100000)) (reshape x '(100000 1)))))
    (+ (sum (* (tanh c) 2)) (sum (* a (cos x))))))
(define (stat key) (second (assoc key (tape-stats f (list x)))))
(define plain ((grad f) x))
",
    );
    let unlimited = number(&mut engine, "(stat 'peak-bytes)");
    for (budget, fits) in [(4_000_100usize, true), (1_000, false)] {
        eval(&mut engine, &format!("(set-memory-budget! {budget})"));
        let peak = number(&mut engine, "(stat 'peak-bytes)");
        let measured = number(&mut engine, "(stat 'measured-peak-bytes)");
        assert!(
            peak < unlimited,
            "budget {budget}: {peak} not under {unlimited}"
        );
        assert_eq!(
            measured, peak,
            "the executor measures what the compiler planned"
        );
        assert!(number(&mut engine, "(stat 'rematerialized-values)") >= 1.0);
        let within = eval(&mut engine, "(stat 'within-budget)");
        assert_eq!(
            within.to_string(),
            if fits { "#t" } else { "#f" },
            "budget {budget}"
        );
        let difference = number(&mut engine, "(max (abs (- plain ((grad f) x))))");
        assert_eq!(difference, 0.0, "the same gradient under budget {budget}");
    }
    eval(&mut engine, "(set-memory-budget! #f)");
    assert_eq!(number(&mut engine, "(stat 'peak-bytes)"), unlimited);
    for bad in ["(set-memory-budget! -5)", "(set-memory-budget! \"big\")"] {
        let error = engine.eval(bad).expect_err(bad);
        assert!(
            error.to_string().contains("positive number of bytes"),
            "{}",
            error.render()
        );
    }
}

/// Forward mode through a loop: `jvp` runs the loop over the state and its
/// tangent, and agrees with `jvp` of the traced loop; `jacobian` (which
/// would use a batched forward sweep) goes row by row in reverse instead.
#[test]
fn jvp_through_scan_matches_the_traced_loop() {
    let mut engine = scan_engine();
    for (looped, unrolled, args, tangents) in [
        (
            "(lambda (r) (logistic r 40 'revolve 3))",
            "(lambda (r) (logistic-loop r 40))",
            "(list 2.9)",
            "(list 1.0)",
        ),
        (
            "(lambda (alpha u0) (heat alpha u0 30 'store-all 1))",
            "(lambda (alpha u0) (heat-loop alpha u0 30))",
            "(list 0.2 u0)",
            "(list 1.0 (cos u0))",
        ),
        (
            "(lambda (W V h0) (rnn W V h0 12 'revolve 4))",
            "(lambda (W V h0) (rnn-loop W V h0 12))",
            "(list W V h0)",
            "(list V W (* 2 h0))",
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
            compare(&format!("jvp of {looped}"), g, w, 1e-12).unwrap();
        }
    }
    let got = parts(&eval(
        &mut engine,
        "((jacobian (lambda (v) (scan (lambda (x i) (sin x)) v 3))) [0.1 0.2])",
    ))
    .unwrap();
    let want = parts(&eval(
        &mut engine,
        "((jacobian (lambda (v) (sin (sin (sin v))))) [0.1 0.2])",
    ))
    .unwrap();
    compare("jacobian through scan", &got[0], &want[0], 1e-14).unwrap();
}

/// 10^8 steps of the logistic map differentiate with the default revolve
/// schedule: its snapshots counted by `tape-stats` (the default
/// ceil(sqrt n) = 10^4 numbers, no schedule entry per step), the process's
/// peak memory under 50 MB. Ignored by default (about 16 s);
/// `cargo test --release --test numeric -- --ignored hundred_million`
/// runs it.
#[test]
#[ignore]
fn hundred_million_logistic_steps_differentiate_in_bounded_memory() {
    let mut engine = scan_engine();
    eval(
        &mut engine,
        "(define (logistic-revolve r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 100000000))",
    );
    let gradient = number(&mut engine, "((grad logistic-revolve) 2.9)");
    // The map converges to its fixed point, and the derivative with it.
    assert!(
        (gradient - 0.118_906_064_209_277_95).abs() < 1e-12,
        "{gradient}"
    );
    let held = number(
        &mut engine,
        "(second (assoc 'snapshot-bytes (tape-stats logistic-revolve (list 2.9))))",
    );
    // The default revolve keeps ceil(sqrt n) = 10^4 snapshots of the one
    // number; the schedule itself is generated as it runs.
    assert!(held <= 10_000.0 * 8.0, "{held} bytes of snapshots");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) {
        let kb: f64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        assert!(kb < 50.0 * 1024.0, "peak resident memory {kb} kB");
    }
}

/// Values a step computes from its captures alone are computed once,
/// outside the loop (loop-invariant code motion): the loop with the
/// invariant inside costs what it costs with the invariant written
/// outside, for its value and its gradient, and both agree.
#[test]
fn invariants_of_a_step_are_computed_once() {
    let mut engine = scan_engine();
    eval(
        &mut engine,
        "(define W0 (* 0.1 (reshape (arange 16.0) '(4 4))))
         (define x0 (tensor 0.1 0.2 0.3 0.4))
         (define (inside W) (sum (scan (lambda (x i) (tanh (matmul (exp (* 0.1 W)) x))) x0 50)))
         (define (outside W)
           (let ((E (exp (* 0.1 W)))) (sum (scan (lambda (x i) (tanh (matmul E x))) x0 50))))
         (define (flops f) (second (assoc 'flops (tape-stats f (list W0)))))
         (define (while-inside W)
           (first (while-loop (lambda (s) (< (second s) 30))
                              (lambda (s) (list (tanh (matmul (exp (* 0.1 W)) (first s))) (+ 1 (second s))))
                              (list x0 0))))",
    );
    for f in ["inside", "(grad inside)", "(jit while-inside)"] {
        let with_invariant = number(&mut engine, &format!("(flops {f})"));
        let written_outside = number(
            &mut engine,
            &format!(
                "(flops {})",
                f.replace("inside", "outside")
                    .replace("while-outside", "while-inside")
            ),
        );
        if f.contains("while") {
            // 30 steps of a 4 x 4 product and tanh, the exponential once.
            assert!(
                with_invariant < 30.0 * 4.0 * 16.0,
                "{f}: {with_invariant} flops"
            );
        } else {
            // Within a few elementwise operations of 16 numbers; once per
            // step would be 50 times that.
            assert!(
                (with_invariant - written_outside).abs() <= 64.0,
                "{f}: {with_invariant} flops, {written_outside} with the invariant outside"
            );
        }
    }
    let a = array(&eval(&mut engine, "((grad inside) W0)")).unwrap();
    let b = array(&eval(&mut engine, "((grad outside) W0)")).unwrap();
    compare("gradient", &a, &b, 1e-12).unwrap();
}

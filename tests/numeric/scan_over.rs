//! `(scan step init xs)` (issue 17, item 2): a loop over the rows of
//! tensors that returns `(list carry ys)`. Its values against a Lisp loop,
//! its gradients (with respect to the initial carry, the sequences and
//! closed-over values) against the unrolled loop, finite differences and
//! each other across checkpoint strategies, forward mode, `jit`; the step
//! index of the counted form reading tensors through `index`, `slice` and
//! `gather`; and the errors.

use super::*;

/// A recurrent cell over the rows of a sequence, written as a scan and as
/// a Lisp loop that stacks the same outputs.
const SETUP: &str = r"
(seed! 11)
(define xs (randn '(9 4)))
(define ts (linspace 0 1 9))
(define W (* 0.4 (randn '(3 3))))
(define U (* 0.4 (randn '(3 4))))
(define h0 (* 0.5 (randn '(3))))
(define (cell W U h x t) (tanh (+ (matmul W h) (matmul U x) t)))
(define (rnn W U h0 xs strategy k)
  (let ((r (scan (lambda (h row)
                   (let ((h (cell W U h (first row) (second row))))
                     (list h (list (sum (* h h)) h))))
                 h0 (list xs ts) :checkpoint strategy :snapshots k)))
    (+ (sum (first r)) (sum (first (second r))) (sum (* (second (second r)) (second (second r)))))))
(define (rnn-loop W U h0 xs)
  (let loop ((h h0) (i 0) (ys1 '()) (ys2 '()))
    (if (= i (first (shape xs)))
        (+ (sum h) (sum (tensor (reverse ys1))) (sum (* (stack (reverse ys2)) (stack (reverse ys2)))))
        (let ((h (cell W U h (index xs i) (index ts i))))
          (loop h (+ i 1) (cons (sum (* h h)) ys1) (cons h ys2))))))
";

fn setup() -> Engine {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    engine
}

fn flat(value: &Value) -> Vec<f64> {
    parts(value)
        .unwrap()
        .iter()
        .flat_map(|a| a.iter().copied().collect::<Vec<_>>())
        .collect()
}

#[test]
fn scan_over_rows_returns_the_carry_and_the_stacked_outputs() {
    let mut engine = setup();
    // A running sum and the products of the carry with each row.
    let result = eval(
        &mut engine,
        "(scan (lambda (c x) (list (+ c x) (* c x))) 0.0 (tensor 1.0 2.0 3.0 4.0))",
    );
    assert_eq!(flat(&result), [10.0, 0.0, 2.0, 9.0, 24.0]);
    // Rows of a matrix, a list of outputs (the row and twice it).
    let result = eval(
        &mut engine,
        "(let ((r (scan (lambda (c x) (list (+ c (sum x)) (list x (* 2 x)))) 0.0 (reshape (tensor (range 6)) '(3 2)))))
           (list (first r) (shape (first (second r))) (second r)))",
    );
    assert_eq!(
        flat(&result),
        [
            15.0, 3.0, 2.0, 0., 1., 2., 3., 4., 5., 0., 2., 4., 6., 8., 10.
        ]
    );
    // Several sequences of one length, rows of different shapes.
    let result = eval(
        &mut engine,
        "(scan (lambda (c xy) (list (* c (first xy)) (second xy))) 1.0 (list [1.0 2.0 3.0] (reshape (tensor (range 6)) '(3 2))))",
    );
    assert_eq!(flat(&result), [6.0, 0., 1., 2., 3., 4., 5.]);
    // Zero rows: the carry as it was, outputs with no rows.
    let result = eval(
        &mut engine,
        "(let ((r (scan (lambda (c x) (list (+ c (sum x)) (* 2 x))) 1.5 (zeros '(0 3)))))
           (list (first r) (shape (second r))))",
    );
    assert_eq!(flat(&result), [1.5, 0.0, 3.0]);
    // Against a Lisp loop, inside and outside jit.
    let want = eval(&mut engine, "(rnn-loop W U h0 xs)").as_f64().unwrap();
    for form in [
        "(rnn W U h0 xs 'revolve 3)",
        "((jit (lambda (W U h0 xs) (rnn W U h0 xs 'store-all 1))) W U h0 xs)",
    ] {
        let got = eval(&mut engine, form).as_f64().unwrap();
        assert!(close(got, want, 1e-13), "{form}: {got} vs {want}");
    }
}

/// Every strategy reverses the same steps: the gradients with respect to
/// the weights, the initial carry and the sequence agree with each other,
/// with the unrolled Lisp loop and with finite differences.
#[test]
fn gradients_over_rows_agree_across_strategies() {
    let mut engine = setup();
    let reference = parts(&eval(&mut engine, "((grad rnn-loop :wrt 'all) W U h0 xs)")).unwrap();
    for strategy in [
        "'store-all 1",
        "'recompute 1",
        "'revolve 1",
        "'revolve 2",
        "'revolve 4",
        "'revolve 100",
    ] {
        let f = format!("(lambda (W U h0 xs) (rnn W U h0 xs {strategy}))");
        let got = parts(&eval(
            &mut engine,
            &format!("((grad {f} :wrt 'all) W U h0 xs)"),
        ))
        .unwrap();
        assert_eq!(got.len(), reference.len());
        for (g, want) in got.iter().zip(&reference) {
            compare(&format!("{strategy} vs the unrolled loop"), g, want, 1e-12).unwrap();
        }
        let error = eval(&mut engine, &format!("(check-grad {f} (list W U h0 xs))"))
            .as_f64()
            .unwrap();
        assert!(error < 1e-6, "{strategy}: check-grad {error}");
    }
    // Through jit, the same numbers.
    let jitted = parts(&eval(
        &mut engine,
        "((jit (grad (lambda (W U h0 xs) (rnn W U h0 xs 'revolve 2)) :wrt 'all)) W U h0 xs)",
    ))
    .unwrap();
    for (g, want) in jitted.iter().zip(&reference) {
        compare("jit of the gradient", g, want, 1e-12).unwrap();
    }
}

/// A sequence no differentiated value flows from gets no cotangent: the
/// reverse step leaves out the products that would compute it (fewer
/// flops), and the gradients it does compute (reverse, through `jit`, and
/// a Hessian-vector product through the loop) are those of the full
/// reverse.
#[test]
fn sequences_not_differentiated_get_no_cotangent() {
    let mut engine = setup();
    let all = parts(&eval(&mut engine, "((grad rnn-loop :wrt 'all) W U h0 xs)")).unwrap();
    for strategy in ["'store-all 1", "'revolve 2"] {
        let f = format!("(lambda (W U h0 xs) (rnn W U h0 xs {strategy}))");
        for form in [
            format!("((grad {f} :wrt '(0 1 2)) W U h0 xs)"),
            format!("((jit (grad {f} :wrt '(0 1 2))) W U h0 xs)"),
        ] {
            let got = parts(&eval(&mut engine, &form)).unwrap();
            assert_eq!(got.len(), 3, "{form}");
            for (g, want) in got.iter().zip(&all) {
                compare(&form, g, want, 1e-12).unwrap();
            }
        }
        // Each sweep is one loop: leaving the sequence out costs less.
        let flops = |engine: &mut Engine, wrt: &str| {
            number(
                engine,
                &format!(
                    "(second (assoc 'flops (tape-stats (grad {f} :wrt {wrt}) (list W U h0 xs))))"
                ),
            )
        };
        let (some, every) = (flops(&mut engine, "'(0 1 2)"), flops(&mut engine, "'all"));
        assert!(
            some < every,
            "{strategy}: {some} flops without the sequence, {every} with"
        );
    }
    // Second order through the reverse that leaves the sequence out.
    let with_fd = eval(
        &mut engine,
        "(let* ((V (* 0.3 (cos (reshape (arange 9) '(3 3)))))
                (g (lambda (W) ((grad (lambda (W) (rnn W U h0 xs 'store-all 1))) W)))
                (e 1e-5))
           (list (hvp (lambda (W) (rnn W U h0 xs 'store-all 1)) (list W) V)
                 (/ (- (g (+ W (* e V))) (g (- W (* e V)))) (* 2 e))))",
    );
    let pair = parts(&with_fd).unwrap();
    compare(
        "hvp through the loop vs differences of its gradient",
        &pair[0],
        &pair[1],
        1e-7,
    )
    .unwrap();
}

/// Forward mode: `jvp` runs the loop over the carry, the rows and their
/// tangents, and agrees with `jvp` of the unrolled loop (a tangent on the
/// sequence, on the weights, on both).
#[test]
fn jvp_over_rows_matches_the_unrolled_loop() {
    let mut engine = setup();
    for tangents in [
        "(list (zeros '(3 3)) (zeros '(3 4)) (zeros '(3)) (cos xs))",
        "(list U2 (zeros '(3 4)) h0 (zeros '(9 4)))",
        "(list U2 U h0 (sin xs))",
    ] {
        eval(&mut engine, "(define U2 (* 0.1 (randn '(3 3))))");
        let got = parts(&eval(
            &mut engine,
            &format!(
                "(jvp (lambda (W U h0 xs) (rnn W U h0 xs 'revolve 3)) (list W U h0 xs) {tangents})"
            ),
        ))
        .unwrap();
        let want = parts(&eval(
            &mut engine,
            &format!("(jvp rnn-loop (list W U h0 xs) {tangents})"),
        ))
        .unwrap();
        for (g, w) in got.iter().zip(&want) {
            compare(&format!("jvp with tangents {tangents}"), g, w, 1e-12).unwrap();
        }
    }
}

/// The counted form's step index reads tensors: `index`, `slice` (with a
/// length known when traced) and `gather` give the values and gradients
/// of the unrolled loop.
#[test]
fn the_step_index_indexes_tensors() {
    let mut engine = setup();
    let cases = [
        (
            "(lambda (xs) (scan (lambda (s i) (+ (* 0.9 s) (sin (index xs i 1)))) 0.0 9))",
            "(lambda (xs) (let loop ((s 0.0) (i 0)) (if (= i 9) s (loop (+ (* 0.9 s) (sin (index xs i 1))) (+ i 1)))))",
        ),
        (
            "(lambda (xs) (sum (scan (lambda (s i) (* s (cos (slice xs i (+ i 2) :axis 0)))) (ones '(2 4)) 7)))",
            "(lambda (xs) (sum (let loop ((s (ones '(2 4))) (i 0)) (if (= i 7) s (loop (* s (cos (slice xs i (+ i 2) :axis 0))) (+ i 1))))))",
        ),
        (
            "(lambda (xs) (sum (scan (lambda (s i) (+ s (* (gather xs i) (index xs (- 8 i))))) (zeros '(4)) 9)))",
            "(lambda (xs) (sum (let loop ((s (zeros '(4))) (i 0)) (if (= i 9) s (loop (+ s (* (gather xs i) (index xs (- 8 i)))) (+ i 1))))))",
        ),
    ];
    for (looped, unrolled) in cases {
        let got = eval(&mut engine, &format!("({looped} xs)"))
            .as_f64()
            .unwrap();
        let want = eval(&mut engine, &format!("({unrolled} xs)"))
            .as_f64()
            .unwrap();
        assert!(close(got, want, 1e-13), "{looped}: {got} vs {want}");
        let got = parts(&eval(&mut engine, &format!("((grad {looped}) xs)"))).unwrap();
        let want = parts(&eval(&mut engine, &format!("((grad {unrolled}) xs)"))).unwrap();
        compare(looped, &got[0], &want[0], 1e-12).unwrap();
        let got = parts(&eval(
            &mut engine,
            &format!("(jvp {looped} (list xs) (list (cos xs)))"),
        ))
        .unwrap();
        let want = parts(&eval(
            &mut engine,
            &format!("(jvp {unrolled} (list xs) (list (cos xs)))"),
        ))
        .unwrap();
        for (g, w) in got.iter().zip(&want) {
            compare(&format!("jvp of {looped}"), g, w, 1e-12).unwrap();
        }
    }
}

#[test]
fn scan_over_rows_errors_name_the_shapes() {
    let mut engine = setup();
    for (form, expected) in [
        (
            "(scan (lambda (c x) (list c x)) 0.0 (list (zeros '(3 2)) (zeros '(4))))",
            "shape [3 2] has 3 rows, shape [4] has 4",
        ),
        (
            "(scan (lambda (c x) (+ c x)) 0.0 [1.0 2.0])",
            "returns (list carry y)",
        ),
        (
            "(scan (lambda (c x) (list (* c x) x)) 0.0 (zeros '(3 2)))",
            "shape [2] for state part 0, which has shape []",
        ),
        (
            "(scan (lambda (c x) (list (list c c) x)) 0.0 [1.0 2.0])",
            "same structure",
        ),
        (
            "(scan (lambda (c x) (list c x)) 0.0 2.5)",
            "number of steps",
        ),
        (
            "(scan (lambda (c x) (list c x)) 0.0 (list 1.0 2.0))",
            "rank 0 has no rows",
        ),
        (
            "(scan (lambda (s i) (+ s (sum (slice [1.0 2.0 3.0] i 2)))) 0.0 2)",
            "(slice t i (+ i 3))",
        ),
        (
            "(scan (lambda (s i) (+ s (index [1.0 2.0 3.0] i))) 0.0 4)",
            "index 3 is out of range for an axis of length 3",
        ),
        // Outputs the machine cannot hold: an error before the loop runs,
        // not an abort (10^9 empty rows in, 10^14 numbers out).
        (
            "(scan (lambda (c x) (list c (ones '(100000)))) 0.0 (zeros '(1000000000 0)))",
            "not enough memory: a scan of 1000000000 steps needs",
        ),
        (
            "((grad (lambda (a) (sum (second (scan (lambda (c x) (list c (* a (ones '(100000))))) 0.0 (zeros '(1000000000 0))))))) 1.0)",
            "not enough memory",
        ),
    ] {
        let error = engine.eval(form).expect_err(form);
        assert!(
            error.to_string().contains(expected),
            "{form}: {}",
            error.render()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// On random lengths, row widths, values and strategies, the scan over
    /// rows gives the unrolled loop's value and gradients.
    #[test]
    fn scan_over_rows_matches_the_unrolled_loop(
        n in 1usize..12,
        width in 1usize..5,
        k in 1usize..6,
        strategy in 0usize..3,
        seed in 0u64..1000,
    ) {
        let mut engine = engine();
        let strategy = ["'store-all", "'recompute", "'revolve"][strategy];
        let source = format!(
            "(seed! {seed})
             (define xs (randn '({n} {width})))
             (define a (randn '({width})))
             (define (looped a xs)
               (let ((r (scan (lambda (c x) (list (+ (* 0.7 c) (sin (* a x))) (* c (sum x))))
                              (zeros '({width})) xs :checkpoint {strategy} :snapshots {k})))
                 (+ (sum (first r)) (sum (* (second r) (second r))))))
             (define (unrolled a xs)
               (let loop ((c (zeros '({width}))) (i 0) (ys '()))
                 (if (= i {n})
                     (+ (sum c) (sum (* (tensor (reverse ys)) (tensor (reverse ys)))))
                     (loop (+ (* 0.7 c) (sin (* a (index xs i)))) (+ i 1) (cons (* c (sum (index xs i))) ys)))))
             (list (looped a xs) (unrolled a xs) ((grad looped :wrt 'all) a xs) ((grad unrolled :wrt 'all) a xs))"
        );
        let all = items(&eval(&mut engine, &source)).unwrap();
        let (got, want) = (array(&all[0]).unwrap(), array(&all[1]).unwrap());
        compare("value", &got, &want, 1e-12).map_err(TestCaseError::fail)?;
        for (g, w) in parts(&all[2]).unwrap().iter().zip(&parts(&all[3]).unwrap()) {
            compare("gradient", g, w, 1e-11).map_err(TestCaseError::fail)?;
        }
    }
}

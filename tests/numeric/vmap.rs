//! `vmap`, `jacfwd` and `jacrev` (issue 19, item 1): every tape operation
//! batched against the function applied example by example (a Lisp loop
//! over the batch), on random batch sizes and values (proptest); the
//! gradient of each example against the batched gradient; composition
//! with `grad`, `jit`, `jacobian` and nesting; axes; errors.

use super::*;

/// Arguments drawn for a batch of `B` examples (`B` is defined before).
pub(super) const SETUP: &str = r"
(define (spd n) (let ((m (randn (list B n n)))) (+ (matmul m (transpose m '(0 2 1))) (* 4.0 (eye n)))))
(define xs (randn (list B 4)))
(define ys (randn (list B 4)))
(define ms (randn (list B 4 4)))
(define ss (spd 4))
(define w (randn '(3 4)))
(define v (randn '(4)))
(define idx (reshape (* 1.0 (mod (arange (* 2.0 B)) 4.0)) (list B 2)))
(define rows (reshape (* 1.0 (mod (arange (* 8.0 B)) 4.0)) (list B 2 4)))
(define (looped f axes args)
  (let ((n (first (shape (first (first (filter (lambda (p) (second p)) (map list args axes))))))))
    (map (lambda (k) (apply f (map (lambda (a ax) (if ax (index a k) a)) args axes)))
         (range n))))
";

/// Each operation of the tape as a function, its arguments and which are
/// mapped (`#t`: along axis 0), and whether its gradient is checked too.
pub(super) const CASES: &[(&str, &str, &str, &str, bool)] = &[
    (
        "map",
        "(lambda (x y) (+ (* x (sin y)) (exp (* 0.1 x)) (tanh y)))",
        "xs ys",
        "(0 0)",
        true,
    ),
    (
        "numpy-functions",
        "(lambda (x y) (+ (hypot x y) (logaddexp x y) (logaddexp2 y x) (sinc x) (cbrt (+ 3 y))
                          (square x) (exp2 y) (deg2rad x) (rad2deg y)))",
        "xs ys",
        "(0 0)",
        true,
    ),
    (
        "broadcast-shared",
        "(lambda (x) (* x v))",
        "xs",
        "(0)",
        true,
    ),
    (
        "broadcast-rank",
        "(lambda (x) (+ (reshape x '(4 1)) v))",
        "xs",
        "(0)",
        true,
    ),
    (
        "compare-where",
        "(lambda (x y) (where (> x y) (* x x) (- y)))",
        "xs ys",
        "(0 0)",
        true,
    ),
    (
        "round",
        "(lambda (x) (+ x (floor (* 3.0 x))))",
        "xs",
        "(0)",
        true,
    ),
    (
        "max-min",
        "(lambda (x y) (+ (max x y) (min x 0.3)))",
        "xs ys",
        "(0 0)",
        true,
    ),
    ("sum", "(lambda (m) (sum m :axis 1))", "ms", "(0)", true),
    ("sum-all", "(lambda (m) (sum m))", "ms", "(0)", true),
    (
        "prod-max",
        "(lambda (m) (+ (prod m :axis 0) (max m :axis 1)))",
        "ms",
        "(0)",
        true,
    ),
    (
        "mean-keep",
        "(lambda (m) (mean m :axis 1 :keepdims #t))",
        "ms",
        "(0)",
        true,
    ),
    (
        "matmul-shared-right",
        "(lambda (m) (matmul m (transpose w)))",
        "ms",
        "(0)",
        false,
    ),
    ("matmul-mv", "(lambda (x) (matmul w x))", "xs", "(0)", true),
    (
        "matmul-vm",
        "(lambda (x) (matmul x (transpose w)))",
        "xs",
        "(0)",
        true,
    ),
    ("matmul-dot", "(lambda (x) (matmul v x))", "xs", "(0)", true),
    (
        "matmul-left-shared",
        "(lambda (m) (matmul w m))",
        "ms",
        "(0)",
        true,
    ),
    (
        "matmul-both",
        "(lambda (m x) (matmul m x))",
        "ms xs",
        "(0 0)",
        true,
    ),
    (
        "matmul-both-mm",
        "(lambda (m s) (matmul m s))",
        "ms ss",
        "(0 0)",
        true,
    ),
    (
        "matmul-vec-left",
        "(lambda (x m) (matmul x m))",
        "xs ms",
        "(0 0)",
        true,
    ),
    (
        "reshape-transpose",
        "(lambda (m) (transpose (reshape m '(2 8))))",
        "ms",
        "(0)",
        true,
    ),
    (
        "slice-concat",
        "(lambda (x) (concat (list (slice x 1 4) (slice x 0 1) v)))",
        "xs",
        "(0)",
        true,
    ),
    (
        "concat-axis",
        "(lambda (m) (concat (list m (* 2.0 m)) :axis 1))",
        "ms",
        "(0)",
        true,
    ),
    ("roll", "(lambda (m) (roll m 1 :axis 1))", "ms", "(0)", true),
    ("index", "(lambda (m) (index m 2))", "ms", "(0)", true),
    (
        "gather",
        "(lambda (x) (gather x [0 2 2] :axis 0))",
        "xs",
        "(0)",
        true,
    ),
    (
        "gather-positions",
        "(lambda (i) (gather (sin w) i :axis 1))",
        "idx",
        "(0)",
        false,
    ),
    (
        "gather-both",
        "(lambda (x i) (gather x i :axis 0))",
        "xs idx",
        "(0 0)",
        true,
    ),
    (
        "scatter-add",
        "(lambda (x) (scatter-add x [0 1 1] [1.0 2.0 3.0] :axis 0))",
        "xs",
        "(0)",
        true,
    ),
    (
        "scatter-add-both",
        "(lambda (x i) (scatter-add x i (* 2.0 (slice x 0 2)) :axis 0))",
        "xs idx",
        "(0 0)",
        true,
    ),
    (
        "index-set",
        "(lambda (x) (index-set x [1 3] (slice x 0 2) :axis 0))",
        "xs",
        "(0)",
        true,
    ),
    (
        "take-along",
        "(lambda (m) (take-along m [[0 1 2 3] [3 2 1 0]] :axis 0))",
        "ms",
        "(0)",
        true,
    ),
    (
        "take-along-positions",
        "(lambda (m r) (take-along m r :axis 0))",
        "ms rows",
        "(0 0)",
        true,
    ),
    (
        "cumsum-cumprod",
        "(lambda (m) (+ (cumsum m :axis 1) (cumprod (* 0.5 m) :axis 0)))",
        "ms",
        "(0)",
        true,
    ),
    ("flip", "(lambda (m) (flip m :axis 1))", "ms", "(0)", true),
    (
        "logsumexp-softmax",
        "(lambda (m) (+ (logsumexp m :axis 1) (sum (softmax m) :axis 0)))",
        "ms",
        "(0)",
        true,
    ),
    (
        "tril-diagonal",
        "(lambda (m) (+ (sum (tril m)) (diagonal m)))",
        "ms",
        "(0)",
        true,
    ),
    ("diag", "(lambda (x) (diag x))", "xs", "(0)", true),
    ("cholesky", "(lambda (s) (cholesky s))", "ss", "(0)", true),
    (
        "solve",
        "(lambda (s x) (solve s x))",
        "ss xs",
        "(0 0)",
        true,
    ),
    (
        "solve-shared-matrix",
        "(lambda (x) (solve (index ss 0) x))",
        "xs",
        "(0)",
        true,
    ),
    (
        "solve-shared-rhs",
        "(lambda (s) (solve s v))",
        "ss",
        "(0)",
        true,
    ),
    (
        "triangular-solve",
        "(lambda (s x) (triangular-solve (cholesky s) x))",
        "ss xs",
        "(0 0)",
        true,
    ),
    (
        "inv-det",
        "(lambda (s) (* (det s) (inv s)))",
        "ss",
        "(0)",
        true,
    ),
    ("slogdet", "(lambda (s) (slogdet s))", "ss", "(0)", false),
    ("eigh", "(lambda (s) (eigh s))", "ss", "(0)", false),
    ("svd", "(lambda (m) (second (svd m)))", "ms", "(0)", true),
    ("qr", "(lambda (m) (second (qr m)))", "ms", "(0)", false),
    (
        "matrix-exp",
        "(lambda (m) (matrix-exp (* 0.2 m)))",
        "ms",
        "(0)",
        true,
    ),
    (
        "einsum",
        "(lambda (m x) (einsum \"ij,j->i\" m x))",
        "ms xs",
        "(0 0)",
        true,
    ),
    (
        "norms",
        "(lambda (x) (+ (norm x) (var x) (std x)))",
        "xs",
        "(0)",
        true,
    ),
    (
        "stop-gradient",
        "(lambda (x) (* x (stop-gradient (sin x))))",
        "xs",
        "(0)",
        true,
    ),
    (
        "shared-argument",
        "(lambda (a x) (* a (sum x)))",
        "w xs",
        "(#f 0)",
        true,
    ),
    (
        "scan",
        "(lambda (x) (scan (lambda (s i) (+ (* 0.5 s) (sin s))) x 5))",
        "xs",
        "(0)",
        true,
    ),
    (
        "scan-shared-state",
        "(lambda (x) (scan (lambda (s i) (+ (* 0.5 s) (sin x))) v 3))",
        "xs",
        "(0)",
        true,
    ),
    (
        "scan-over-rows",
        "(lambda (m) (let ((r (scan (lambda (c row) (list (+ c (tanh row)) (* c row))) v m))) (+ (first r) (sum (second r) :axis 0))))",
        "ms",
        "(0)",
        true,
    ),
    (
        "scan-captures",
        "(lambda (a x) (scan (lambda (s i) (tanh (+ (* a s) x))) x 4))",
        "v xs",
        "(#f 0)",
        true,
    ),
    (
        "while-loop",
        "(lambda (x) (while-loop (lambda (s) (< (sum (* s s)) 50.0)) (lambda (s) (* 1.3 s)) x))",
        "xs",
        "(0)",
        true,
    ),
    (
        "fixed-point",
        "(lambda (x) (fixed-point (lambda (y a) (* 0.5 (+ y (/ a y)))) (+ 1.0 (* x x)) (+ 1.0 (* x x))))",
        "xs",
        "(0)",
        true,
    ),
    (
        "index-set-positions",
        "(lambda (x i) (index-set x (concat (list i [-1.0 1.0])) (* 3.0 (slice x 0 4)) :axis 0))",
        "xs idx",
        "(0 0)",
        true,
    ),
    (
        "odeint",
        "(lambda (y) (odeint (lambda (y t k) (* (- k) (sin y))) y [0.0 0.5 1.0] 0.7))",
        "xs",
        "(0)",
        true,
    ),
];

/// The largest difference between the batched result and the looped one,
/// example by example.
fn batched_gap(engine: &mut Engine, f: &str, args: &str, axes: &str) -> Result<f64, String> {
    let batched = try_eval(engine, &format!("((vmap {f} :in-axes '{axes}) {args})"))?;
    let looped = try_eval(engine, &format!("(looped {f} '{axes} (list {args}))"))?;
    let batched = parts(&batched)?;
    let mut worst: f64 = 0.0;
    for (k, example) in items(&looped)?.iter().enumerate() {
        let example = parts(example)?;
        if example.len() != batched.len() {
            return Err(format!(
                "{} results batched, {} looped",
                batched.len(),
                example.len()
            ));
        }
        for (whole, one) in batched.iter().zip(&example) {
            let row = whole.index_axis(ndarray::Axis(0), k);
            if row.shape() != one.shape() {
                return Err(format!(
                    "example {k}: batched shape {:?}, looped {:?}",
                    row.shape(),
                    one.shape()
                ));
            }
            for (a, b) in row.iter().zip(one.iter()) {
                worst = worst.max((a - b).abs() / b.abs().max(1.0));
            }
        }
    }
    Ok(worst)
}

/// Each case batched and looped (and its per-example gradient) on a
/// batch of `batch` examples drawn from `seed`.
fn check_all(batch: usize, seed: u64) -> Result<(), String> {
    let mut engine = engine();
    eval(&mut engine, &format!("(seed! {seed}) (define B {batch})"));
    eval(&mut engine, SETUP);
    for &(name, f, args, axes, gradient) in CASES {
        let gap = batched_gap(&mut engine, f, args, axes).map_err(|e| format!("{name}: {e}"))?;
        if gap > 1e-12 {
            return Err(format!("{name}: batched and looped differ by {gap:e}"));
        }
        if gradient {
            // Per-example gradients of a weighted sum, batched and looped.
            let g = format!(
                "(grad (lambda (a . rest) (sum (* (sin (* 1.0 (arange (size (apply {f} a rest))))) (reshape (apply {f} a rest) (list (size (apply {f} a rest))))))))"
            );
            let gap = batched_gap(&mut engine, &g, args, axes)
                .map_err(|e| format!("{name} gradient: {e}"))?;
            if gap > 1e-10 {
                return Err(format!(
                    "{name}: batched and looped gradients differ by {gap:e}"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_operation_batches_as_a_loop_over_the_examples() {
    check_all(3, 7).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// The same on random batch sizes (one example included) and values.
    #[test]
    fn batching_matches_the_loop_at_random(batch in 1usize..6, seed in 0u64..10_000) {
        check_all(batch, seed).map_err(TestCaseError::fail)?;
    }
}

/// The largest relative difference between two values' numbers.
fn gap(engine: &mut Engine, a: &str, b: &str) -> f64 {
    let (a, b) = (
        parts(&eval(engine, a)).unwrap(),
        parts(&eval(engine, b)).unwrap(),
    );
    assert_eq!(a.len(), b.len(), "parts");
    let mut worst: f64 = 0.0;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.shape(), y.shape());
        for (p, q) in x.iter().zip(y.iter()) {
            worst = worst.max((p - q).abs() / q.abs().max(1.0));
        }
    }
    worst
}

#[test]
fn vmap_composes_with_grad_jit_jacobian_and_itself() {
    let mut engine = engine();
    eval(&mut engine, "(seed! 5) (define B 4)");
    eval(&mut engine, SETUP);
    eval(
        &mut engine,
        "(define (loss p x) (sum (tanh (matmul p x))))
         (define batched (vmap loss :in-axes '(#f 0)))",
    );
    for (a, b) in [
        // The gradient of a batched sum is the sum of per-example ones.
        (
            "((grad (lambda (p) (sum (batched p xs)))) w)",
            "(reduce + (map (lambda (k) ((grad loss) w (index xs k))) (range B)))",
        ),
        // jit of vmap, vmap of jit.
        ("((jit batched) w xs)", "(batched w xs)"),
        (
            "((vmap (jit loss) :in-axes '(#f 0)) w xs)",
            "(batched w xs)",
        ),
        // Nested: a batch of batches.
        (
            "((vmap (vmap (lambda (a b) (* a (sin b))))) ms ms)",
            "(* ms (sin ms))",
        ),
        // The Jacobian of a batched function is block diagonal.
        (
            "(sum ((jacobian (lambda (x) ((vmap (lambda (r) (* r r))) x))) xs) :axis '(2 3))",
            "(* 2.0 xs)",
        ),
        // vmap inside a loop's step.
        (
            "(scan (lambda (s i) ((vmap (lambda (r) (* r (sin r)))) s)) ms 2)",
            "(let ((a (* ms (sin ms)))) (* a (sin a)))",
        ),
        // Per-example Hessian-vector products: vmap of hvp.
        (
            "((vmap (lambda (x) (hvp (lambda (y) (sum (* y y y))) (list x) (list v)))) xs)",
            "(* 6.0 (* xs v))",
        ),
    ] {
        let worst = gap(&mut engine, a, b);
        assert!(worst < 1e-12, "{a} against {b}: {worst:e}");
    }
}

#[test]
fn jacfwd_and_jacrev_equal_the_jacobian() {
    let mut engine = engine();
    eval(&mut engine, "(seed! 9) (define B 2)");
    eval(&mut engine, SETUP);
    eval(
        &mut engine,
        "(define (f m) (matmul (tanh m) (sin m)))
         (define (g x) (* (sum x) (exp (* 0.1 x))))
         (define m (index ms 0))",
    );
    for (a, b) in [
        ("((jacfwd f) m)", "((jacobian f) m)"),
        ("((jacrev f) m)", "((jacobian f) m)"),
        ("((jacrev g) v)", "((jacfwd g) v)"),
        // A number in or out.
        ("((jacrev (lambda (x) (sum (* x x)))) v)", "(* 2.0 v)"),
        ("((jacfwd (lambda (t) (* t v))) 2.0)", "v"),
        // Composed with grad and vmap: per-example Jacobians.
        (
            "((vmap (jacrev g)) xs)",
            "(stack (map (lambda (k) ((jacobian g) (index xs k))) (range B)))",
        ),
    ] {
        let worst = gap(&mut engine, a, b);
        assert!(worst < 1e-12, "{a} against {b}: {worst:e}");
    }
    // Shapes: result ++ argument.
    let shape = eval(&mut engine, "(shape ((jacrev f) m))");
    assert_eq!(shape.to_string(), "(4 4 4 4)");
}

#[test]
fn axes_go_where_they_are_asked() {
    let mut engine = engine();
    eval(&mut engine, "(seed! 3) (define B 3)");
    eval(&mut engine, SETUP);
    for (a, b) in [
        // Mapping the columns, results stacked as columns.
        (
            "((vmap (lambda (c) (* c (sum c))) :in-axes 1 :out-axes 1) ms)",
            "(* ms (sum ms :axis '(0 2) :keepdims #t))",
        ),
        // Negative axes count from the end.
        (
            "((vmap (lambda (r) (sum r)) :in-axes -1) ms)",
            "(sum ms :axis '(0 1))",
        ),
        // A list of results with an axis each, a shared result broadcast.
        (
            "((vmap (lambda (x) (list (* 2.0 x) v)) :out-axes '(1 0)) xs)",
            "(list (transpose (* 2.0 xs)) (broadcast-to v (list B 4)))",
        ),
        // A shared result left unbatched.
        (
            "((vmap (lambda (x) (list x v)) :out-axes '(0 #f)) xs)",
            "(list xs v)",
        ),
        // Lists of tensors as arguments, each leaf mapped.
        (
            "((vmap (lambda (pair) (* (first pair) (second pair)))) (list xs ys))",
            "(* xs ys)",
        ),
    ] {
        let worst = gap(&mut engine, a, b);
        assert!(worst < 1e-12, "{a} against {b}: {worst:e}");
    }
}

#[test]
fn vmap_errors_are_clear() {
    let mut engine = engine();
    eval(&mut engine, "(seed! 3) (define B 3)");
    eval(&mut engine, SETUP);
    for (form, expected) in [
        ("(vmap 3)", "expected a function"),
        (
            "((vmap (lambda (a b) a) :in-axes '(0)) xs ys)",
            ":in-axes has 1 entries, the function was called with 2 arguments",
        ),
        (
            "((vmap (lambda (a b) a)) xs (randn '(5 4)))",
            "argument 0 of shape [3 4] has 3 along axis 0, argument 1 of shape [5 4] has 5",
        ),
        (
            "((vmap (lambda (a) a) :in-axes 2) xs)",
            "maps axis 2 of argument 0, which has shape [3 4]",
        ),
        (
            "((vmap (lambda (a) a) :in-axes #f) xs)",
            "at least one mapped argument",
        ),
        (
            "((vmap (lambda (a) (if (> (sum a) 0) a (- a)))) xs)",
            "looks at the values of its mapped arguments",
        ),
        (
            "((vmap (lambda (a) a) :out-axes #f) xs)",
            ":out-axes is #f for result 0",
        ),
        (
            "((vmap (lambda (a) (* a 2.0)) :out-axes 3) xs)",
            "puts the batch at axis 3 of result 0, whose batched shape is [3 4]",
        ),
        (
            "((vmap (lambda (a) a) :in-axes '(x)) xs)",
            "integer axis or #f",
        ),
        (
            "((vmap (lambda (x) (+ x (rand '(4))))) xs)",
            "a vmapped function would be drawn once",
        ),
        ("((vmap (lambda (x) x)) 3.0)", "which has shape []"),
        (
            "((jacrev (lambda (x) (list x x))) v)",
            "must be a number or tensor",
        ),
    ] {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} gave {}", value.short()),
            Err(message) => assert!(message.contains(expected), "{form}: {message}"),
        }
    }
}

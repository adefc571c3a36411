//! Replays (`lisp/autodiff/replay.rs`): `jit`, `grad` and `value-and-grad`
//! functions called again with the same argument signature run the kept
//! tape without tracing, and give what a fresh trace gives; a trace that
//! branched on a value, had an effect, or read something changed since is
//! traced again.

use super::*;
use std::rc::Rc;

/// Evaluates `form` and says how many calls it replayed.
fn replays_in(engine: &mut Engine, form: &str) -> (Value, u64) {
    let before = engine.replayed_calls();
    let value = eval(engine, form);
    (value, engine.replayed_calls() - before)
}

/// Evaluates `form` to a number and says how many calls it replayed.
fn number_replays(engine: &mut Engine, form: &str) -> (f64, u64) {
    let (value, count) = replays_in(engine, form);
    (
        value.as_f64().unwrap_or_else(|e| panic!("{form}: {e}")),
        count,
    )
}

#[test]
fn a_pure_function_is_replayed_on_new_values_and_agrees_with_the_eager_call() {
    let engine = RefCell::new(engine());
    eval(
        &mut engine.borrow_mut(),
        "(define (f x y) (sum (* (sin x) (exp (* 0.1 y)))))
         (define jf (jit f))",
    );
    let mut runner = TestRunner::new(ProptestConfig::with_cases(24));
    let first = RefCell::new(true);
    runner
        .run(
            &(
                prop::collection::vec(-3.0f64..3.0, 3),
                prop::collection::vec(-3.0f64..3.0, 3),
            ),
            |(x, y)| {
                let args = format!(
                    "(tensor {} {} {}) (tensor {} {} {})",
                    x[0], x[1], x[2], y[0], y[1], y[2]
                );
                let engine = &mut engine.borrow_mut();
                let (jitted, replayed) = number_replays(engine, &format!("(jf {args})"));
                let eager = number(engine, &format!("(f {args})"));
                prop_assert!((jitted - eager).abs() <= 1e-12 * (1.0 + eager.abs()));
                prop_assert_eq!(replayed, if first.replace(false) { 0 } else { 1 });
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn replayed_gradients_match_fresh_traces_and_finite_differences() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (loss w x) (sum (pow (- (tanh (matmul x w)) 0.5) 2)))
         (define g (grad loss))
         (define vg (value-and-grad loss :wrt '(0 1)))
         (define x (tensor [[0.1 0.2] [0.3 -0.4] [0.5 0.6]]))",
    );
    for (k, w) in ["[0.3 -0.2]", "[1.5 0.25]", "[-0.7 0.9]", "[0.0 2.0]"]
        .iter()
        .enumerate()
    {
        let (replayed, count) = replays_in(&mut engine, &format!("(g (tensor {w}) x)"));
        assert_eq!(count, u64::from(k > 0), "call {k}");
        // A new grad closure has no kept trace: it traces afresh.
        let fresh = eval(&mut engine, &format!("((grad loss) (tensor {w}) x)"));
        assert_eq!(replayed.to_string(), fresh.to_string(), "w = {w}");
        for j in 0..2 {
            let h = 1e-6;
            let at = |d: f64| {
                let mut parts: Vec<f64> = w
                    .trim_matches(|c| c == '[' || c == ']')
                    .split_whitespace()
                    .map(|p| p.parse().unwrap())
                    .collect();
                parts[j] += d;
                format!("(loss (tensor {} {}) x)", parts[0], parts[1])
            };
            let difference =
                (number(&mut engine, &at(h)) - number(&mut engine, &at(-h))) / (2.0 * h);
            let derivative = number(&mut engine, &format!("(index (g (tensor {w}) x) {j})"));
            assert!(
                (derivative - difference).abs() < 1e-7,
                "w = {w}, j = {j}: {derivative} vs {difference}"
            );
        }
        let both = eval(&mut engine, &format!("(vg (tensor {w}) x)"));
        let fresh = eval(
            &mut engine,
            &format!("((value-and-grad loss :wrt '(0 1)) (tensor {w}) x)"),
        );
        assert_eq!(both.to_string(), fresh.to_string());
    }
}

#[test]
fn a_branch_on_a_value_is_traced_again_at_every_call() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define f (jit (lambda (x) (if (> x 0) (* 2 x) (neg x)))))",
    );
    for (x, want) in [(1.0, 2.0), (-3.0, 3.0), (2.5, 5.0), (-0.5, 0.5)] {
        let (value, replayed) = replays_in(&mut engine, &format!("(f {x})"));
        assert_eq!(value.as_f64().unwrap(), want, "x = {x}");
        assert_eq!(replayed, 0, "x = {x}");
    }
}

#[test]
fn a_changed_global_closure_variable_or_captured_tensor_is_seen() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define a 2.0)
         (define w (tensor 1.0 2.0))
         (define f (jit (lambda (x) (* a (sum (* w x))))))
         (define scaler (let ((k 1.0)) (list (lambda (x) (* k x)) (lambda (v) (set! k v)))))
         (define g (jit (first scaler)))",
    );
    assert_eq!(number(&mut engine, "(f (tensor 1.0 1.0))"), 6.0);
    assert_eq!(replays_in(&mut engine, "(f (tensor 1.0 1.0))").1, 1);
    eval(&mut engine, "(define a 3.0)");
    assert_eq!(number(&mut engine, "(f (tensor 1.0 1.0))"), 9.0);
    eval(&mut engine, "(set! w (tensor 10.0 20.0))");
    assert_eq!(number(&mut engine, "(f (tensor 1.0 1.0))"), 90.0);
    assert_eq!(number(&mut engine, "(g 2.0)"), 2.0);
    eval(&mut engine, "((second scaler) 5.0)");
    assert_eq!(number(&mut engine, "(g 2.0)"), 10.0);
    assert_eq!(number_replays(&mut engine, "(g 3.0)"), (15.0, 1));
}

#[test]
fn effects_are_not_skipped() {
    let mut engine = engine();
    let output = Rc::new(RefCell::new(Vec::<u8>::new()));
    struct Shared(Rc<RefCell<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    engine.set_output(Box::new(Shared(Rc::clone(&output))));
    let calls = Rc::new(std::cell::Cell::new(0));
    let counter = Rc::clone(&calls);
    engine
        .register_fn("count-call", move |_| {
            counter.set(counter.get() + 1);
            Ok(Value::Nil)
        })
        .unwrap();
    eval(
        &mut engine,
        "(define printing (jit (lambda (x) (println \"traced\") (* 2 x))))
         (define random (jit (lambda (x) (+ x (sum (rand '(4)))))))
         (define counting (jit (lambda (x) (count-call) (* 3 x))))",
    );
    for _ in 0..3 {
        eval(&mut engine, "(printing 1.0)");
        eval(&mut engine, "(counting 1.0)");
    }
    let printed = String::from_utf8(output.borrow().clone()).unwrap();
    assert_eq!(printed.matches("traced").count(), 3, "{printed}");
    assert_eq!(calls.get(), 3);
    let draws: Vec<f64> = (0..3)
        .map(|_| number(&mut engine, "(random 0.0)"))
        .collect();
    assert!(draws[0] != draws[1] && draws[1] != draws[2], "{draws:?}");
}

#[test]
fn static_integers_shapes_and_settings_are_part_of_the_signature() {
    let mut engine = engine();
    eval(&mut engine, "(define f (jit (lambda (x n) (* (sum x) n))))");
    assert_eq!(number(&mut engine, "(f (tensor 1.0 2.0) 3)"), 9.0);
    assert_eq!(
        number_replays(&mut engine, "(f (tensor 1.0 2.0) 4)"),
        (12.0, 0)
    );
    assert_eq!(
        number_replays(&mut engine, "(f (tensor 1.0 2.0 3.0) 4)"),
        (24.0, 0)
    );
    assert_eq!(
        number_replays(&mut engine, "(f (tensor 5.0 5.0) 3)"),
        (30.0, 1)
    );
    eval(&mut engine, "(set-optimize! 0)");
    assert_eq!(
        number_replays(&mut engine, "(f (tensor 5.0 6.0) 3)"),
        (33.0, 0)
    );
    eval(&mut engine, "(set-optimize! 1)");
}

#[test]
fn a_function_assigning_its_own_locals_and_running_loops_is_replayed() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(define (body x)
           (define y (* 2 x))
           (let ((z 0.0))
             (set! z (+ y 1.0))
             (while-loop (lambda (s) (< (first s) 10.0))
                         (lambda (s) (list (+ (first s) 1.0) (* (second s) 1.1)))
                         (list 0.0 z))))
         (define f (jit body))",
    );
    for (k, x) in [0.5, 1.5, -2.5].iter().enumerate() {
        let (value, replayed) = replays_in(&mut engine, &format!("(second (f {x}))"));
        let eager = number(&mut engine, &format!("(second (body {x}))"));
        assert!((value.as_f64().unwrap() - eager).abs() < 1e-12 * (1.0 + eager.abs()));
        assert_eq!(replayed, u64::from(k > 0), "call {k}");
    }
}

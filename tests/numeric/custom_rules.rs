//! Custom derivative rules for tensor functions (`defvjp`, `defjvp`,
//! issue 18 item 1). Each function with a rule is checked at random points
//! against central finite differences of its body run eagerly (outside any
//! trace), in reverse mode (`grad`, `jit`, `value-and-grad`, `vjp`) and in
//! forward mode (`jvp`), and against the same function written without a
//! rule; Hessians (forward over reverse, through the rule and its
//! transpose) against those of the plain function. Rules that differ from
//! their body show that the rule, not the body, is differentiated; the
//! errors name the rule and what was expected.

use super::*;

const DEFINITIONS: &str = r"
;; A linear solve with its adjoint written by hand; the pullback reads the
;; value y.
(defvjp my-solve (A b) (solve A b)
  (lambda (g y)
    (let ((lam (solve (transpose A) g)))
      (list (- (outer lam y)) lam))))
;; Two results.
(defvjp polar (x y) (list (sqrt (+ (* x x) (* y y))) (atan2 y x))
  (lambda (gs)
    (let ((gr (first gs)) (gt (second gs)) (r2 (+ (* x x) (* y y))))
      (list (- (* gr (/ x (sqrt r2))) (* gt (/ y r2)))
            (+ (* gr (/ y (sqrt r2))) (* gt (/ x r2)))))))
;; A forward rule only: reverse mode transposes it.
(defjvp exp-matvec (A x) (exp (matmul A x))
  (lambda (A x tA tx) (* (exp (matmul A x)) (+ (matmul tA x) (matmul A tx)))))
;; A pullback that calls its own function.
(defvjp my-exp (x) (exp x) (lambda (g) (list (* g (my-exp x)))))
;; A parameter that is not differentiated.
(defvjp scaled-tanh (x mode k)
  (tanh (* k x))
  (lambda (g) (list (* g k (- 1 (pow (tanh (* k x)) 2))) nil nil)))

(define w3 (tensor 0.3 -1.2 0.7))
(define (f-solve A b) (sum (* w3 (sin (my-solve A b)))))
(define (g-solve A b) (sum (* w3 (sin (solve A b)))))
(define (f-polar p)
  (let ((rt (polar (index p 0) (index p 1))))
    (+ (* 2 (first rt)) (* (second rt) (first rt)))))
(define (g-polar p)
  (let* ((x (index p 0)) (y (index p 1)) (r (sqrt (+ (* x x) (* y y)))))
    (+ (* 2 r) (* (atan2 y x) r))))
(define (f-expmv A x) (sum (sin (exp-matvec A x))))
(define (g-expmv A x) (sum (sin (exp (matmul A x)))))
(define (f-exp x) (sum (* w3 (my-exp (* x x)))))
(define (g-exp x) (sum (* w3 (exp (* x x)))))
(define (f-tanh x) (sum (* x (scaled-tanh x 'plain 1.7))))
(define (g-tanh x) (sum (* x (tanh (* 1.7 x)))))
(define (f-loop x)
  (sum (scan (lambda (s i) (* 0.9 (my-exp (* 0.1 (sin s))))) x 4 :checkpoint 'store-all)))
(define (f-revolve x)
  (sum (scan (lambda (s i) (* 0.9 (my-exp (* 0.1 (sin s))))) x 4 :checkpoint 'revolve :snapshots 2)))
(define (g-loop x)
  (sum (scan (lambda (s i) (* 0.9 (exp (* 0.1 (sin s))))) x 4)))
";

/// `(with-rule, without, argument shapes, Hessian checked)`.
const CASES: &[(&str, &str, &[&[usize]], bool)] = &[
    ("f-solve", "g-solve", &[&[3, 3], &[3]], false),
    ("f-polar", "g-polar", &[&[2]], true),
    ("f-expmv", "g-expmv", &[&[3, 3], &[3]], false),
    ("f-exp", "g-exp", &[&[3]], true),
    ("f-tanh", "g-tanh", &[&[3]], true),
    ("f-loop", "g-loop", &[&[3]], true),
    ("f-revolve", "g-loop", &[&[3]], false),
];

fn rule_engine() -> Engine {
    let mut engine = engine();
    eval(&mut engine, DEFINITIONS);
    engine
}

/// Random arguments: square matrices well conditioned (3 I plus noise),
/// other values in [-1, 1] away from the origin's kink of `polar`.
fn arguments(rng: &mut Rng, shapes: &[&[usize]]) -> Vec<ArrayD<f64>> {
    shapes
        .iter()
        .map(|shape| {
            let mut a = rng.array(shape, R1);
            if shape.len() == 2 {
                for i in 0..shape[0] {
                    a[[i, i]] += 3.0;
                }
            } else if shape == &[2] {
                a[0] += 1.5;
            }
            a
        })
        .collect()
}

fn wrt_all(arity: usize) -> String {
    let positions: Vec<String> = (0..arity).map(|k| k.to_string()).collect();
    format!("'({})", positions.join(" "))
}

/// The gradient of `name` with respect to every argument, as arrays.
fn gradients(engine: &mut Engine, form: &str, args: &[Value]) -> Result<Vec<ArrayD<f64>>, String> {
    let f = try_eval(engine, form)?;
    parts(&call(engine, &f, args)?)
}

fn check_case(
    engine: &mut Engine,
    (with_rule, without, shapes, hessian): (&str, &str, &[&[usize]], bool),
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng(seed);
    let xs = arguments(&mut rng, shapes);
    let args: Vec<Value> = xs.iter().map(value_of).collect();
    let f = try_eval(engine, with_rule)?;
    let wrt = wrt_all(shapes.len());
    let fd: Vec<ArrayD<f64>> = (0..xs.len())
        .map(|k| fd_gradient(engine, &f, &xs, k))
        .collect::<Result<_, _>>()?;
    let plain = gradients(engine, &format!("(grad {without} :wrt {wrt})"), &args)?;
    for form in [
        format!("(grad {with_rule} :wrt {wrt})"),
        format!("(jit (grad {with_rule} :wrt {wrt}))"),
        format!("(lambda args (second (apply (value-and-grad {with_rule} :wrt {wrt}) args)))"),
        format!("(lambda args (second (vjp {with_rule} args 1.0)))"),
    ] {
        let got = gradients(engine, &form, &args)?;
        for (k, (g, want)) in got.iter().zip(&fd).enumerate() {
            compare(
                &format!("{form} argument {k} vs differences"),
                g,
                want,
                FD_TOL,
            )?;
            compare(
                &format!("{form} argument {k} vs no rule"),
                g,
                &plain[k],
                EXACT_TOL,
            )?;
        }
    }
    // Forward mode.
    let tangents: Vec<ArrayD<f64>> = xs.iter().map(|x| rng.array(x.shape(), R1)).collect();
    let fd_tangent = fd_directional(engine, &f, &xs, &tangents)?;
    let jvp = try_eval(
        engine,
        &format!("(lambda (xs ts) (second (jvp {with_rule} xs ts)))"),
    )?;
    let t_args: Vec<Value> = tangents.iter().map(value_of).collect();
    let got = parts(&call(
        engine,
        &jvp,
        &[list_of(args.clone()), list_of(t_args)],
    )?)?;
    compare("jvp vs differences", &got[0], &fd_tangent[0], FD_TOL)?;
    if hessian {
        let h = gradients(engine, &format!("(hessian {with_rule})"), &args)?;
        let want = gradients(engine, &format!("(hessian {without})"), &args)?;
        compare("hessian vs no rule", &h[0], &want[0], EXACT_TOL)?;
    }
    Ok(())
}

#[test]
fn rules_match_finite_differences_and_plain_code_in_both_modes() {
    let engine = RefCell::new(rule_engine());
    let mut runner = TestRunner::new(op_config(6));
    for &case in CASES {
        let result = runner.run(&any::<u64>(), |seed| {
            check_case(&mut engine.borrow_mut(), case, seed)
                .map_err(|e| TestCaseError::fail(format!("{}: {e}", case.0)))
        });
        if let Err(error) = result {
            panic!("{error}");
        }
    }
}

/// The rule is what is differentiated, not the body: a gradient clipped
/// by its pullback, and a forward rule scaled on purpose (its transpose,
/// the reverse rule, is scaled the same way).
#[test]
fn the_rule_not_the_body_is_differentiated() {
    let mut engine = rule_engine();
    eval(
        &mut engine,
        "(defvjp clip-gradient (x) x (lambda (g) (list (clamp g -1 1))))
         (defjvp doubled-sin (x) (sin x) (lambda (x t) (* 2 (cos x) t)))",
    );
    let got = array(&eval(
        &mut engine,
        "((grad (lambda (x) (sum (* (tensor 5.0 0.5) (clip-gradient x))))) (tensor 1.0 2.0))",
    ))
    .unwrap();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), [1.0, 0.5]);
    let got = number(&mut engine, "((grad doubled-sin) 0.3)");
    assert!(close(got, 2.0 * 0.3f64.cos(), 1e-15), "{got}");
    let got = number(
        &mut engine,
        "(second (jvp doubled-sin (list 0.3) (list 1.0)))",
    );
    assert!(close(got, 2.0 * 0.3f64.cos(), 1e-15), "{got}");
    // Outside a trace the function is its body.
    assert!(close(
        number(&mut engine, "(doubled-sin 0.3)"),
        0.3f64.sin(),
        0.0
    ));
}

/// A function with a rule made by `custom-vjp` inside a traced function,
/// closing over a traced value: the rule gives the argument's cotangent,
/// the body gives the closed-over value's.
#[test]
fn closures_over_traced_values_are_differentiated_through_the_body() {
    let mut engine = rule_engine();
    eval(
        &mut engine,
        "(define (scaled w)
           (custom-vjp (lambda (x) (* w (sin x)))
                       (lambda (x) (lambda (g) (list (* w (cos x) g))))))
         (define (loss w) (sum ((scaled w) (* w (tensor 1.0 2.0 3.0)))))
         (define (plain w) (sum (* w (sin (* w (tensor 1.0 2.0 3.0))))))",
    );
    for w in [0.3, -1.1, 2.0] {
        let got = number(&mut engine, &format!("((grad loss) {w})"));
        let want = number(&mut engine, &format!("((grad plain) {w})"));
        assert!(close(got, want, 1e-12), "w = {w}: {got} vs {want}");
        let got = number(
            &mut engine,
            &format!("(second (jvp loss (list {w}) (list 1.0)))"),
        );
        assert!(close(got, want, 1e-12), "jvp at w = {w}: {got} vs {want}");
    }
}

#[test]
fn bad_rules_are_errors_naming_the_rule() {
    let mut engine = rule_engine();
    eval(
        &mut engine,
        "(defvjp one-short (x y) (* x y) (lambda (g) (list g)))
         (defvjp wrong-shape (x y) (* x y) (lambda (g) (list (tensor 1.0 2.0) g)))
         (defvjp looks (x) (* x x) (lambda (g) (if (> (sum g) 0) (list g) (list (- g)))))
         (defvjp not-a-list (x) (* x x) (lambda (g) g))
         (defjvp two-tangents (x) (* x x) (lambda (x t) (list t t)))
         (defjvp squares-tangent (x) (* x x) (lambda (x t) (* t t)))
         (defvjp squares-cotangent (x) (* x x) (lambda (g) (list (* g g))))",
    );
    let cases = [
        (
            "((grad (lambda (x) (one-short x 2.0))) 1.0)",
            "one-short: the pullback returned 1 cotangent for 2 arguments",
        ),
        (
            "((grad (lambda (x) (wrong-shape x 2.0))) 1.0)",
            "wrong-shape: the pullback's cotangent for argument 1 has shape [2], the argument has shape []",
        ),
        (
            "((grad looks) 1.0)",
            "a derivative rule looked at the values of its cotangent",
        ),
        (
            "((grad not-a-list) 1.0)",
            "not-a-list: the pullback must return a list of cotangents, one per argument, got a number",
        ),
        (
            "(jvp two-tangents (list 1.0) (list 1.0))",
            "two-tangents: the pushforward returned 2 tangents for 1 result",
        ),
        (
            "((grad squares-tangent) 2.0)",
            "squares-tangent: its defjvp rule is not linear in the tangents",
        ),
        (
            "(jvp squares-cotangent (list 2.0) (list 1.0))",
            "squares-cotangent: its defvjp pullback is not linear in the cotangent",
        ),
    ];
    for (form, want) in cases {
        match try_eval(&mut engine, form) {
            Ok(value) => panic!("{form} should fail, gave {value}"),
            Err(message) => assert!(message.contains(want), "{form}: {message}"),
        }
    }
    // The modes that exist still work.
    let got = parts(&eval(
        &mut engine,
        "(jvp squares-tangent (list 2.0) (list 3.0))",
    ))
    .unwrap();
    assert_eq!(got[1].iter().copied().collect::<Vec<_>>(), [9.0]);
    assert_eq!(number(&mut engine, "((grad squares-cotangent) 2.0)"), 1.0);
}

/// A rule is traced only for the sweeps that may use it: compiling the
/// function alone (`jit`) never runs its pullback, a gradient does, and a
/// gradient taken inside a compiled function does too.
#[test]
fn rules_are_traced_only_when_a_sweep_may_need_them() {
    let mut engine = rule_engine();
    eval(
        &mut engine,
        "(define pullbacks 0)
         (defvjp counted (x) (* 2 x) (lambda (g) (set! pullbacks (+ pullbacks 1)) (list (* 2 g))))",
    );
    assert_eq!(
        number(
            &mut engine,
            "((jit (lambda (x) (sum (counted x)))) (tensor 1.0 2.0))"
        ),
        6.0
    );
    assert_eq!(number(&mut engine, "pullbacks"), 0.0);
    let g = array(&eval(
        &mut engine,
        "((grad (lambda (x) (sum (counted x)))) (tensor 1.0 2.0))",
    ))
    .unwrap();
    assert_eq!(g.iter().copied().collect::<Vec<_>>(), [2.0, 2.0]);
    assert_eq!(number(&mut engine, "pullbacks"), 1.0);
    let g = array(&eval(
        &mut engine,
        "((jit (lambda (x) ((grad (lambda (y) (sum (counted y)))) (* 3 x)))) (tensor 1.0 2.0))",
    ))
    .unwrap();
    assert_eq!(g.iter().copied().collect::<Vec<_>>(), [2.0, 2.0]);
    assert_eq!(number(&mut engine, "pullbacks"), 2.0);
}

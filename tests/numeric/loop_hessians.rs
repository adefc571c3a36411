//! Second derivatives through loops (issue 17, item 4): `hessian`, `hvp`,
//! `jvp` of `grad` and `grad` of `grad` through `scan` (counted and over
//! rows), `checkpoint` and `while-loop`, against the same derivatives of
//! the unrolled Lisp loop (traced) and against central differences of the
//! gradient, under several checkpoint strategies.

use super::*;

const SETUP: &str = r"
(seed! 3)
(define W (* 0.4 (randn '(3 3))))
(define xs (randn '(6 3)))
(define p0 [0.3 -0.2 0.5])
;; A recurrence in p: counted, over rows, and as a Lisp loop.
(define (counted p strategy)
  (sum (scan (lambda (h i) (tanh (+ (matmul W h) (* p (index xs i)))))
             (* 0.5 p) 6 :checkpoint strategy :snapshots 2)))
(define (over-rows p strategy)
  (let ((r (scan (lambda (h x) (let ((h (tanh (+ (matmul W h) (* p x))))) (list h (sum (* h h)))))
                 (* 0.5 p) xs :checkpoint strategy :snapshots 2)))
    (+ (sum (first r)) (sum (second r)))))
(define (unrolled p)
  (let loop ((h (* 0.5 p)) (i 0))
    (if (= i 6) (sum h) (loop (tanh (+ (matmul W h) (* p (index xs i)))) (+ i 1)))))
(define (unrolled-rows p)
  (let loop ((h (* 0.5 p)) (i 0) (acc 0.0))
    (if (= i 6) (+ (sum h) acc)
        (let ((h (tanh (+ (matmul W h) (* p (index xs i))))))
          (loop h (+ i 1) (+ acc (sum (* h h))))))))
;; A checkpointed block.
(define block (checkpoint (lambda (p h) (sin (+ (matmul W h) (* p p))))))
(define (checkpointed p) (sum (* p (block p (block p p)))))
(define (plain p) (sum (* p (sin (+ (matmul W (sin (+ (matmul W p) (* p p)))) (* p p))))))
;; A while-loop whose length depends on p.
(define (grow p snapshots)
  (sum (while-loop (lambda (u) (< (sum (* u u)) 30.0))
                   (lambda (u) (+ u (* 0.1 (tanh (* p u))) (* 0.02 p)))
                   (* 0.1 (ones '(3))) :snapshots snapshots)))
(define (grow-loop p)
  (let loop ((u (* 0.1 (ones '(3)))))
    (if (< (sum (* u u)) 30.0) (loop (+ u (* 0.1 (tanh (* p u))) (* 0.02 p))) (sum u))))
";

fn setup() -> Engine {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    engine
}

fn matrix(engine: &mut Engine, form: &str) -> ArrayD<f64> {
    parts(&eval(engine, form)).unwrap().remove(0)
}

/// The looped function and its unrolled twin, for each kind of loop.
const CASES: [(&str, &str); 7] = [
    ("(lambda (p) (counted p 'revolve))", "unrolled"),
    ("(lambda (p) (counted p 'store-all))", "unrolled"),
    ("(lambda (p) (counted p 'recompute))", "unrolled"),
    ("(lambda (p) (over-rows p 'revolve))", "unrolled-rows"),
    ("checkpointed", "plain"),
    ("(lambda (p) (grow p 2))", "grow-loop"),
    ("(lambda (p) (grow p 64))", "grow-loop"),
];

#[test]
fn hessians_through_loops_match_the_unrolled_loop_and_differences() {
    let mut engine = setup();
    for (looped, unrolled) in CASES {
        let got = matrix(&mut engine, &format!("((hessian {looped}) p0)"));
        let want = matrix(&mut engine, &format!("((hessian {unrolled}) p0)"));
        compare(&format!("hessian of {looped}"), &got, &want, 1e-10).unwrap();
        // Central differences of the (reverse) gradient, column by column.
        let h = 1e-5;
        for k in 0..3 {
            let e = format!("(* {h} (tensor (map (lambda (j) (if (= j {k}) 1.0 0.0)) (range 3))))");
            let column = matrix(
                &mut engine,
                &format!(
                    "(/ (- ((grad {looped}) (+ p0 {e})) ((grad {looped}) (- p0 {e}))) {})",
                    2.0 * h
                ),
            );
            let from_hessian = got.index_axis(ndarray::Axis(1), k).to_owned().into_dyn();
            compare(
                &format!("hessian column {k} of {looped} vs differences"),
                &from_hessian,
                &column,
                1e-6,
            )
            .unwrap();
        }
    }
}

#[test]
fn hvp_and_jvp_of_grad_through_loops() {
    let mut engine = setup();
    let v = "[1.0 -2.0 0.5]";
    for (looped, unrolled) in CASES {
        let want = matrix(&mut engine, &format!("(hvp {unrolled} (list p0) {v})"));
        let got = matrix(&mut engine, &format!("(hvp {looped} (list p0) {v})"));
        compare(&format!("hvp of {looped}"), &got, &want, 1e-10).unwrap();
        let forward_over_reverse = items(&eval(
            &mut engine,
            &format!("(jvp (grad {looped}) (list p0) (list {v}))"),
        ))
        .unwrap();
        let got = array(&forward_over_reverse[1]).unwrap();
        compare(&format!("jvp of grad of {looped}"), &got, &want, 1e-10).unwrap();
    }
}

/// Reverse over reverse: the gradient of a gradient's component, and
/// `(grad (grad f))` of a function of one number.
#[test]
fn grad_of_grad_through_loops() {
    let mut engine = setup();
    for (looped, unrolled) in CASES {
        let got = matrix(
            &mut engine,
            &format!("((grad (lambda (p) (sum (* [1.0 2.0 3.0] ((grad {looped}) p))))) p0)"),
        );
        let want = matrix(
            &mut engine,
            &format!("((grad (lambda (p) (sum (* [1.0 2.0 3.0] ((grad {unrolled}) p))))) p0)"),
        );
        compare(&format!("grad of grad of {looped}"), &got, &want, 1e-10).unwrap();
    }
    let second = eval(
        &mut engine,
        "((grad (grad (lambda (a) (scan (lambda (x i) (* a x (- 1.0 x))) 0.3 20)))) 2.9)",
    )
    .as_f64()
    .unwrap();
    let want = eval(
        &mut engine,
        "((grad (grad (lambda (a) (let loop ((x 0.3) (i 0)) (if (= i 20) x (loop (* a x (- 1.0 x)) (+ i 1))))))) 2.9)",
    )
    .as_f64()
    .unwrap();
    assert!(close(second, want, 1e-9), "{second} vs {want}");
    let newton = eval(
        &mut engine,
        "((grad (grad (lambda (a) (while-loop (lambda (x) (> (abs (- (* x x) a)) 1e-13)) (lambda (x) (* 0.5 (+ x (/ a x)))) a)))) 2.0)",
    )
    .as_f64()
    .unwrap();
    // d2/da2 sqrt(a) = -1/4 a^(-3/2).
    let want = -0.25 * 2f64.powf(-1.5);
    assert!(close(newton, want, 1e-8), "{newton} vs {want}");
}

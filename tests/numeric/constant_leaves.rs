//! Loop state that carries no derivative (a step size, a time, a
//! counter): the reverse of a loop treats a leaf as a constant when its
//! initial value does not depend on what is differentiated and the step
//! makes it only from such values, also through an inner loop's packed
//! result. Its gradients against finite differences, and the reverse's
//! flops below those of the same loop with that leaf differentiated
//! (for scans, whose flops count all steps).

use super::*;

const SETUP: &str = r"
(seed! 11)
(define x0 (randn '(200)))
;; x grows at a rate set by c; c only counts the steps.
(define (step s)
  (let ((x (first s)) (c (second s)))
    (list (* x (+ 1.0 (* 0.01 (sin c)))) (+ c 0.1))))
(define (scanned x0 c0) (sum (* (first (scan (lambda (s i) (step s)) (list x0 c0) 40)) x0)))
(define (looped x0 c0)
  (sum (* (first (while-loop (lambda (s) (< (second s) 4.0)) step (list x0 c0))) x0)))
;; A scan whose step is a while-loop of two steps (its counter t a leaf of
;; both): t leaves the inner loop through a slice of its packed result.
(define (nested x0 t0)
  (let ((s (scan (lambda (s i)
                   (while-loop (lambda (s) (< (second s) (+ 0.15 (* 0.2 (+ i 1)))))
                               step s))
                 (list x0 t0) 5)))
    (sum (* (first s) x0))))
";

fn flops(engine: &mut Engine, f: &str, args: &str) -> f64 {
    number(
        engine,
        &format!("(second-of (assoc 'flops (tape-stats {f} (list {args}))))"),
    )
}

#[test]
fn leaves_without_derivatives_are_constants_to_the_reverse() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for f in ["scanned", "looped", "nested"] {
        // The counter a constant: only x0 differentiated.
        let only_x = format!("(lambda (x0) ({f} x0 0.02))");
        let fun = eval(&mut engine, &only_x);
        let x0 = array(&eval(&mut engine, "x0")).unwrap();
        let gradient = eval(&mut engine, &format!("(grad {only_x})"));
        let got = array(&call(&mut engine, &gradient, &[value_of(&x0)]).unwrap()).unwrap();
        let want = fd_gradient(&mut engine, &fun, std::slice::from_ref(&x0), 0).unwrap();
        compare(&format!("{f}: gradient in x0"), &got, &want, 1e-6).unwrap();
        // Both differentiated: the counter's cotangent is followed, and
        // its derivative matches finite differences too.
        let both = eval(&mut engine, f);
        let gradient = eval(&mut engine, &format!("(grad {f} :wrt '(0 1))"));
        let args = [value_of(&x0), Value::Float(0.02)];
        let pair = parts(&call(&mut engine, &gradient, &args).unwrap()).unwrap();
        compare(&format!("{f}: gradient in x0, both"), &pair[0], &want, 1e-6).unwrap();
        let dc = fd_gradient(
            &mut engine,
            &both,
            &[x0.clone(), ndarray::arr0(0.02).into_dyn()],
            1,
        )
        .unwrap();
        compare(&format!("{f}: gradient in c0"), &pair[1], &dc, 1e-5).unwrap();
        if f == "looped" {
            // (A while-loop's flops count one step of each of the tape's
            // loops, whichever they are.)
            continue;
        }
        let constant = flops(&mut engine, &only_x, "x0");
        // (tape-stats differentiates in its first argument.)
        let followed = flops(
            &mut engine,
            &format!("(lambda (c0 x0) ({f} x0 c0))"),
            "0.02 x0",
        );
        assert!(
            constant < followed,
            "{f}: the reverse with the counter constant counts {constant} flops, with it differentiated {followed}"
        );
    }
}

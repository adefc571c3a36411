//! Native kernels (`backends/cpu/native`) against the interpreter on whole
//! programs over tensors large enough to be compiled: the same bits for
//! values and gradients, with padded operands (slices), windows, fused
//! sums, broadcasting, comparisons, `where`, calls to transcendental
//! functions, and runtime numbers that change from call to call. The
//! gradients are also checked against finite differences.

use super::*;
use epsilon::backends::cpu::native;

/// Large inputs (odd lengths, so the kernels' scalar tails run) and the
/// functions under test. (Groups with `exp`, `tanh` or `sigmoid` run
/// interpreted, whose loops of those are vectorized, so the programs that
/// must compile call other transcendental functions.)
const SETUP: &str = r"
(seed! 11)
(define x (* 0.8 (randn '(20001))))
(define y (* 0.5 (randn '(20001))))
(define A (randn '(64 129)))
(define labels (softmax (randn '(64 129)) :axis 1))
(define (rosenbrock x)
  (let ((a (slice x 0 -1)) (b (slice x 1)))
    (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))
(define (heat-energy u)
  (let ((lap (+ (slice u 0 -2) (* -2 (slice u 1 -1)) (slice u 2))))
    (sum (+ (* 0.5 (square lap)) (* 0.1 (sin (atan (slice u 1 -1))))))))
(define (square v) (* v v))
(define (branches x y)
  (sum (+ (where (> x 0.3) (sin x) (* x y))
          (relu (- y 0.1)) (abs x) (max x -0.2) (min y 0.4)
          (pow (abs x) 1.5) (pow y 3) (floor (* 3 x)) (sigmoid (* x y)))))
(define (xent Z) (neg (sum (* labels (log-softmax Z :axis 1)))))
(define (scaled a x) (sum (* a (exp (* a (sin x))))))
";

/// The values of `form` with native kernels on and off: the same bits.
fn same_with_and_without_native(engine: &mut Engine, form: &str) -> Vec<ArrayD<f64>> {
    let flatten =
        |v: &Value| -> Vec<ArrayD<f64>> { parts(v).unwrap_or_else(|e| panic!("{form}: {e}")) };
    native::set_native_kernels(true);
    let before = native::kernels_compiled();
    let native_result = flatten(&eval(engine, form));
    native::set_native_kernels(false);
    let interpreted = flatten(&eval(engine, form));
    native::set_native_kernels(true);
    assert!(
        native::kernels_compiled() > before || form.contains("cached"),
        "{form}: no native kernel was compiled"
    );
    assert_eq!(native_result.len(), interpreted.len());
    for (got, want) in native_result.iter().zip(&interpreted) {
        assert_eq!(got.shape(), want.shape(), "{form}");
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{form}: element {i}: native {a:e}, interpreted {b:e}"
            );
        }
    }
    native_result
}

#[test]
fn native_kernels_match_the_interpreter_bit_for_bit() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    for form in [
        "((grad rosenbrock) x)",
        "((value-and-grad rosenbrock) x)",
        "((jit rosenbrock) x)",
        "((grad heat-energy) x)",
        "((value-and-grad heat-energy) y)",
        "((grad branches :wrt '(0 1)) x y)",
        // Groups with exp, tanh or sigmoid run interpreted (vectorized
        // loops beat a call per number), so transcendental calls are
        // compiled here with other functions.
        "((jit (lambda (x y) (* (sin x) (atan y)))) x y)",
        // (`xent` has exp in every group since logsumexp is one
        // operation; its log and products are compiled here.)
        "((grad (lambda (Z) (sum (* labels (log (+ 1.5 (sin Z))))))) A)",
        "(jvp rosenbrock (list x) (list y))",
    ] {
        same_with_and_without_native(&mut engine, form);
    }
}

/// A runtime number inside a fused group is compiled into a few kernels,
/// then read at run time: every value still gives the interpreter's bits.
#[test]
fn a_number_that_changes_between_calls_gives_the_same_bits() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    eval(
        &mut engine,
        "(define scaled-grad (grad scaled :wrt '(0 1)))",
    );
    let mut compiled = Vec::new();
    for k in 0..10 {
        let before = native::kernels_compiled();
        let a = 0.3 + 0.1 * f64::from(k);
        let form = format!("(scaled-grad {a} x) ; cached after the first values");
        same_with_and_without_native(&mut engine, &form);
        compiled.push(native::kernels_compiled() - before);
    }
    // A few kernels with the number built in, then one that reads it:
    // the last calls compile nothing.
    assert!(compiled[0] > 0, "{compiled:?}");
    assert!(
        compiled[6..].iter().all(|&c| c == 0),
        "kernels compiled per call: {compiled:?}"
    );
}

/// The native gradients of large functions agree with central finite
/// differences (`check-grad` compares up to 200 elements per argument).
/// The tolerance is 1e-5, not 1e-6: over 20,000 summed terms the finite
/// difference itself is off by a few 1e-6 (the interpreter gives the same
/// figure).
#[test]
fn native_gradients_agree_with_finite_differences() {
    let mut engine = engine();
    eval(&mut engine, SETUP);
    native::set_native_kernels(true);
    for form in [
        "(check-grad rosenbrock (list (* 0.1 x)))",
        "(check-grad heat-energy (list x))",
        "(check-grad (lambda (x y) (sum (* (sin x) (exp (* 0.1 y))))) (list x y))",
        "(check-grad xent (list A))",
    ] {
        let error = eval(&mut engine, form).as_f64().unwrap();
        assert!(error < 1e-5, "{form}: check-grad gives {error}");
    }
}

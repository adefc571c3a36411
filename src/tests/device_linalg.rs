//! Dense linear algebra on the simulated device: every factorization and
//! solve runs as solver routines and kernels on the device (no operand
//! goes to the host and back), its values and gradients agree with the
//! CPU backend at random matrices, batched and single, and its failures
//! read as the CPU's. Skipped with a message without a host C++ compiler.

use super::simulated_device::errors_after;
use crate::backends::cuda::sim::SimMachine;
use crate::backends::override_backend;
use crate::{Engine, Value};
use std::rc::Rc;

fn simulated() -> Option<Rc<SimMachine>> {
    let machine = SimMachine::new().map(Rc::new);
    if machine.is_none() {
        eprintln!("skipped: no host C++ compiler to simulate the device with");
    }
    machine
}

/// Every number of a value, in order.
fn numbers(value: &Value, into: &mut Vec<f64>) {
    match value {
        Value::Int(n) => into.push(*n as f64),
        Value::Float(x) => into.push(*x),
        Value::Tensor(t) => into.extend(t.iter().copied()),
        Value::Pair(_) => {
            let mut rest = value.clone();
            while let Value::Pair(pair) = rest {
                numbers(&pair.car, into);
                rest = pair.cdr.clone();
            }
        }
        _ => {}
    }
}

/// `f` and its gradient on the CPU and on the simulated device: the
/// numbers agree, and `(tape-stats f args)` says the gradient's device
/// program runs no operation on the host. The solver routines it ran.
fn agrees(machine: &Rc<SimMachine>, setup: &str, f: &str, args: &str, wrt: &str) -> usize {
    let mut engine = Engine::new();
    engine.eval("(seed! 11)").unwrap();
    engine.eval(setup).unwrap();
    let host_ops = engine
        .eval(&format!(
            "(second (assoc 'device-host-ops (tape-stats {f} (list {args}))))"
        ))
        .unwrap();
    assert_eq!(
        format!("{host_ops}"),
        "0",
        "{f} runs operations on the host"
    );
    let call = format!("(list ({f} {args}) ((grad {f} :wrt '{wrt}) {args}))");
    override_backend(None);
    let mut want = Vec::new();
    numbers(&engine.eval(&call).unwrap(), &mut want);
    let routines = machine.routines.get();
    override_backend(Some(machine.clone()));
    let got = engine.eval(&call);
    override_backend(None);
    let mut got_numbers = Vec::new();
    numbers(&got.unwrap(), &mut got_numbers);
    assert_eq!(got_numbers.len(), want.len());
    for (k, (g, w)) in got_numbers.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-8 * w.abs().max(1.0),
            "{f}: number {k} is {g} on the device, {w} on the CPU"
        );
    }
    machine.routines.get() - routines
}

const SETUP: &str = "
    (define a (randn '(3 4 4))) (define b (randn '(3 4 2))) (define v (randn '(4)))
    (define m (randn '(4 4))) (define t (randn '(5 3))) (define y (randn '(5)))
    (define (spd a) (+ (matmul a (transpose a '(0 2 1))) (* 4 (eye 4))))
    (define (spd1 m) (+ (matmul m (transpose m)) (* 4 (eye 4))))";

#[test]
fn factorizations_and_solves_run_on_the_device() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        &format!(
            "{SETUP}
             (define (f a b m v)
               (let* ((l (cholesky (spd a))) (lm (cholesky (spd1 m))))
                 (+ (sum (* b (triangular-solve l b)))
                    (sum (triangular-solve l b :transpose #t :lower #t))
                    (sum (triangular-solve (transpose lm) v :lower #f))
                    (sum (triangular-solve lm b))
                    (sum (solve (spd a) b)) (sum (solve (+ m (* 3 (eye 4))) b))
                    (sum (solve (+ m (* 3 (eye 4))) v)) (sum (inv (spd1 m)))
                    (sum (solve (spd a) v)) (sum (solve (spd a) m)) (sum (triangular-solve l m)))))"
        ),
        "f",
        "a b m v",
        "(0 1 2 3)",
    );
    assert!(routines > 0, "no solver routine ran");
}

#[test]
fn determinants_and_their_adjugates_run_on_the_device() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        &format!(
            "{SETUP}
             (define (f a m) (+ (sum (det a)) (det m) (* (det m) (det m))
                                (sum (second (slogdet (spd a)))) (sum (first (slogdet (spd1 m))))))"
        ),
        "f",
        "a m",
        "(0 1)",
    );
    assert!(routines > 0, "no solver routine ran");
}

#[test]
fn spectral_and_orthogonal_factorizations_run_on_the_device() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        &format!(
            "{SETUP}
             (define (f a t y m)
               (let ((e (eigh (spd a))) (tall (svd t)) (wide (svd (transpose t)))
                     (q (qr t)) (qw (qr (transpose t))))
                 (+ (sum (* (first e) (first e))) (sum (* (second e) (second e) (tanh (second e))))
                    (sum (second tall)) (sum (* (first tall) (sin (first tall))))
                    (sum (* (third wide) (cos (third wide)))) (sum (second wide))
                    (sum (* (first q) (exp (first q)))) (sum (second q)) (sum (* (second qw) (second qw)))
                    (sum (lstsq t y)) (sum (matrix-exp (* 0.3 a))) (sum (* m (matrix-exp (* 3 m)))))))"
        ),
        "f",
        "a t y m",
        "(0 1 2 3)",
    );
    assert!(routines > 0, "no solver routine ran");
}

#[test]
fn failures_on_the_device_read_as_on_the_cpu() {
    let Some(machine) = simulated() else { return };
    let setup = "(define bad (reshape (tensor '(4 1 0 1 4 1 0 1 4 4 1 0 1 1 0 0 0 -1)) '(2 3 3)))
                 (define singular (tensor '((1 2) (2 4))))
                 (define with-nan (tensor (list (list 1.0 0.0) (list 0.0 (/ 0.0 0.0)))))
                 (define (chol x) (sum (cholesky x)))
                 (define (sol x) (sum (solve x (tensor '(1 2)))))
                 (define (eig x) (sum (first (eigh x))))";
    for call in [
        "(chol bad)",
        "((grad chol) bad)",
        "(sol singular)",
        "(eig with-nan)",
    ] {
        let (cpu, device) = errors_after(&machine, setup, "", call);
        assert_eq!(device, cpu, "{call}");
    }
    let (cpu, device) = errors_after(&machine, setup, "", "(chol bad)");
    assert!(
        cpu.contains("not positive definite") && cpu.contains("matrix 1 of the batch"),
        "{cpu}"
    );
    assert!(device.contains("cholesky"), "{device}");
}

#[test]
fn sequences_triangles_and_index_set_run_on_the_device() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        "(define x (randn '(4 6))) (define idx (tensor '(2 0 2 -1)))
         (define (f x)
           (let ((m (matmul x (transpose x))))
             (+ (sum (* x (cumsum x :axis 1))) (sum (cumprod (* 0.5 x) :axis 0))
                (sum (* x (flip x :axis 1))) (sum (* (tril m) (triu m 1)))
                (sum (* (diag (diagonal m)) m)) (trace m)
                (sum (* x (index-set x idx (* 2 (slice x 0 4 :axis 1)) :axis 1))))))",
        "f",
        "x",
        "(0)",
    );
    assert_eq!(routines, 0);
}

#[test]
fn stacks_and_square_matrices_factor_on_the_device_too() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        "(define s (randn '(2 3 4 3))) (define w (randn '(2 3 5)))
         (define q (randn '(5 5))) (define rhs (randn '(3)))
         (define (f s w q rhs)
           (let ((tall (svd s)) (wide (qr w)) (square (svd q)) (e (eigh (+ q (transpose q)))))
             (+ (sum (* (first tall) (sin (first tall)))) (sum (second tall))
                (sum (* (third tall) (third tall) (cos (third tall))))
                (sum (* (first wide) (exp (first wide)))) (sum (second wide))
                (sum (second square)) (sum (* (first square) (tanh (third square))))
                (sum (first e)) (sum (* (second e) (exp (second e))))
                (sum (lstsq (index w 0) rhs)) (second (slogdet (+ (* 5 (eye 5)) q))))))",
        "f",
        "s w q rhs",
        "(0 1 2 3)",
    );
    assert!(routines > 0, "no solver routine ran");
}

#[test]
fn solves_whose_batches_broadcast_run_on_the_device() {
    let Some(machine) = simulated() else { return };
    let routines = agrees(
        &machine,
        "(define a (randn '(3 1 4 4))) (define b (randn '(1 2 4 2))) (define v (randn '(4)))
         (define (f a b v)
           (let* ((m (+ a (* 5 (eye 4)))) (l (tril (+ (* 0.2 a) (* 3 (eye 4))))))
             (+ (sum (* b (solve m b))) (sum (solve m v))
                (sum (sin (triangular-solve l b :lower #t)))
                (sum (triangular-solve l v :lower #t :transpose #t)))))",
        "f",
        "a b v",
        "(0 1 2)",
    );
    assert!(routines > 0, "no solver routine ran");
}

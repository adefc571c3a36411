//! `logsumexp` as one operation of the table (`ops::reduction`): the
//! table harness (derivatives in both modes against finite differences,
//! `jit`, `scan`, Hessians, batching) over single, several and all axes,
//! with and without `:keepdims`, and through `softmax` and `log-softmax`;
//! values against closed forms, lanes of infinities, and eager calls
//! against compiled ones.

use super::ops::{arg, instance};
use super::table::run_table;
use super::*;

#[test]
fn logsumexp_over_any_axes() {
    run_table("logsumexp", false, |p| {
        let [a, b, c] = p.dims;
        let (source, shape) = match p.variant % 6 {
            0 => ("(lambda (x) (logsumexp x))", vec![a + 1, b]),
            1 => ("(lambda (x) (logsumexp x :axis 0))", vec![a + 1, b + 1]),
            2 => (
                "(lambda (x) (logsumexp x :axis 1 :keepdims #t))",
                vec![a + 1, b + 1],
            ),
            // Reduced axes that are not neighbours.
            3 => (
                "(lambda (x) (logsumexp x :axis '(0 2)))",
                vec![a, b + 1, c + 1],
            ),
            4 => ("(lambda (x) (logsumexp x :axis 1))", vec![a, b + 1, c + 1]),
            _ => (
                "(lambda (x) (sum (* (softmax x :axis 0) x)))",
                vec![a + 1, b + 1],
            ),
        };
        instance(source, vec![arg(shape, R3)])
    });
}

#[test]
fn logsumexp_along_trailing_axes_batches() {
    run_table("logsumexp", true, |p| {
        let [a, b, c] = p.dims;
        let (source, shape) = match p.variant % 3 {
            0 => ("(lambda (x) (logsumexp x :axis -1))", vec![a + 1, b + 1]),
            1 => ("(lambda (x) (log-softmax x :axis -1))", vec![a + 1, b + 1]),
            _ => (
                "(lambda (x) (logsumexp x :axis '(-2 -1)))",
                vec![a, b + 1, c + 1],
            ),
        };
        instance(source, vec![arg(shape, R3)])
    });
}

#[test]
fn logsumexp_values_and_infinite_lanes() {
    let mut engine = engine();
    for (form, want) in [
        ("(logsumexp [1000 1000])", 1000.0 + 2f64.ln()),
        (
            "((jit (lambda (x) (logsumexp x))) [1000 1000])",
            1000.0 + 2f64.ln(),
        ),
        ("(logsumexp [-1000 -1000 -1000])", -1000.0 + 3f64.ln()),
        ("(logsumexp (log [0 0]))", f64::NEG_INFINITY),
        (
            "((jit (lambda (x) (logsumexp x))) (log [0 0]))",
            f64::NEG_INFINITY,
        ),
        ("(logsumexp (exp [1000 1]))", f64::INFINITY),
        (
            "((jit (lambda (x) (logsumexp x))) (exp [1000 1]))",
            f64::INFINITY,
        ),
        ("(logsumexp (zeros '(0)))", f64::NEG_INFINITY),
    ] {
        let got = array(&eval(&mut engine, form)).unwrap()[[]];
        assert!(
            got == want || close(got, want, 1e-15),
            "{form} gives {got}, expected {want}"
        );
    }
    let nan = array(&eval(&mut engine, "(logsumexp (log [-1 0]))")).unwrap()[[]];
    assert!(nan.is_nan(), "a NaN in the lane gives NaN, got {nan}");
}

#[test]
fn eager_and_compiled_logsumexp_give_the_same_bits() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 5) (define x (* 4 (randn '(30 40 50))))
         (define (f x) (list (logsumexp x :axis 1) (logsumexp x :axis '(0 2)) (logsumexp x :axis 2)))",
    );
    let eager = parts(&eval(&mut engine, "(f x)")).unwrap();
    let compiled = parts(&eval(&mut engine, "((jit f) x)")).unwrap();
    for (e, c) in eager.iter().zip(&compiled) {
        assert_eq!(e.shape(), c.shape());
        assert!(e.iter().zip(c).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// A sum of squares over some axes (the collapsed Laplacian's sum over
/// directions) is summed as the squares are read, never stored: the same
/// bits as the eager square-then-sum, and the measured peak is the
/// operand's, not the operand's and its squares'.
#[test]
fn squares_summed_over_axes_are_not_stored() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 9) (define x (randn '(16 64 32)))
         (define (f x) (list (sum (* x x) :axis 1) (sum (square x) :axis '(0 2)) (sum (* x x) :axis 2)))
         (define (g x) (* 2.0 (sum (* x x) :axis 1)))
         (define (stat key) (second (assoc key (tape-stats g (list x)))))",
    );
    let eager = parts(&eval(&mut engine, "(f x)")).unwrap();
    let compiled = parts(&eval(&mut engine, "((jit f) x)")).unwrap();
    for (e, c) in eager.iter().zip(&compiled) {
        assert_eq!(e.shape(), c.shape());
        assert!(e.iter().zip(c).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    let planned = number(&mut engine, "(stat 'peak-bytes)");
    let measured = number(&mut engine, "(stat 'measured-peak-bytes)");
    let operand = 16.0 * 64.0 * 32.0 * 8.0;
    assert!(
        measured < planned && measured < 1.5 * operand,
        "measured {measured}, planned {planned}"
    );
}

/// The gradient of a `logsumexp` takes each exponential once: its tape
/// holds one `logsumexp-softmax` (the softmax and the logsumexp packed)
/// and no separate `logsumexp`; the value beside the gradient has the
/// bits of the value alone; and the second derivatives through the packed
/// operation's own rules, reverse over reverse and forward over reverse,
/// match finite differences of the gradient.
#[test]
fn a_logsumexp_gradient_takes_the_exponentials_once() {
    let mut engine = engine();
    eval(
        &mut engine,
        "(seed! 11) (define x (* 3 (randn '(7 9))))
         (define (f x) (sum (pow (logsumexp x :axis 1) 2)))
         (define (g x) (* 1.0 ((grad f) x)))
         (define w (randn '(7 9)))
         (define (gw x) (sum (* w ((grad f) x))))",
    );
    let tape = eval(&mut engine, "(show-tape (grad f) (list x))").to_string();
    assert_eq!(tape.matches("logsumexp-softmax[1]").count(), 1, "{tape}");
    assert!(!tape.contains("logsumexp[1]"), "{tape}");
    let both = parts(&eval(&mut engine, "((jit (value-and-grad f)) x)")).unwrap();
    let alone = array(&eval(&mut engine, "((jit f) x)")).unwrap();
    assert_eq!(both[0][[]].to_bits(), alone[[]].to_bits());
    let x = array(&eval(&mut engine, "x")).unwrap();
    let gw = eval(&mut engine, "gw");
    let fd = fd_gradient(&mut engine, &gw, &[x], 0).unwrap();
    for how in ["(grad gw)", "(jit (grad gw))"] {
        let got = array(&eval(&mut engine, &format!("({how} x)"))).unwrap();
        compare(how, &got, &fd, 1e-6).unwrap();
    }
    // Forward over reverse: the Hessian's product with w.
    let got = array(&eval(
        &mut engine,
        "(let ((h (reshape ((hessian f) x) '(63 63)))) (reshape (matmul h (reshape w '(63))) '(7 9)))",
    ))
    .unwrap();
    compare("hessian w", &got, &fd, 1e-6).unwrap();
}

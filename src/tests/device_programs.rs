//! Device programs on the simulated device: a replay gives the first
//! run's bits and plans nothing; from the second run a program runs as a
//! captured graph, with the same bits and results in memory of their own;
//! a loop's steps replay its body's program; `device-stats` counts what
//! happened. Skipped with a message without a host C++ compiler.

use crate::backends::cpu::{Buf, Cpu};
use crate::backends::cuda::sim::SimMachine;
use crate::backends::{Backend, device_stats, override_backend};
use crate::{Engine, Value};
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

fn simulated() -> Option<Rc<SimMachine>> {
    let machine = SimMachine::new().map(Rc::new);
    if machine.is_none() {
        eprintln!("skipped: no host C++ compiler to simulate the device with");
    }
    machine
}

fn array(shape: &[usize], seed: f64) -> Buf {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|i| (seed + i as f64 * 0.37).sin()).collect();
    Buf::from_array(Rc::new(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()))
}

fn bits(outputs: &[Buf]) -> Vec<Vec<u64>> {
    outputs
        .iter()
        .map(|b| b.to_array().iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn a_replay_gives_the_first_runs_bits_and_plans_nothing() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    let compiled = engine
        .compile_grad(
            "(lambda (w x) (sum (tanh (+ (matmul x w) (* 0.5 (sum w :axis 0))))))",
            &[&[3, 4], &[5, 3]],
        )
        .unwrap();
    let tape = compiled.tape();
    let inputs = [array(&[3, 4], 0.1), array(&[5, 3], 0.7)];
    device_stats::take();
    let first = machine.run(tape, &inputs).unwrap();
    let planned = device_stats::take();
    assert_eq!(planned.programs_planned, 1);
    assert!(planned.kernel_launches > 0 && planned.library_calls > 0);
    // The second run captures the program as a graph and launches it; the
    // third launches it again: no kernel is launched one by one.
    for _ in 0..2 {
        let again = machine.run(tape, &inputs).unwrap();
        assert_eq!(bits(&again), bits(&first), "a replay equals the first run");
        let replayed = device_stats::take();
        assert_eq!(replayed.programs_planned, 0);
        assert_eq!(replayed.planning, std::time::Duration::ZERO);
        assert_eq!((replayed.kernel_launches, replayed.library_calls), (0, 0));
        assert_eq!(replayed.graph_launches, 1);
        assert_eq!(replayed.bytes_to_device, planned.bytes_to_device);
    }
    let cpu = Cpu.run(tape, &inputs).unwrap();
    for (got, want) in first.iter().zip(&cpu) {
        for (g, w) in got.to_array().iter().zip(want.to_array().iter()) {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{g} vs {w}");
        }
    }
}

#[test]
fn a_loops_steps_replay_its_body_and_device_stats_says_so() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    engine
        .eval(
            "(define u0 (sin (linspace 0 3 40)))
             (define (loss u0 a) (sum (* u0 (scan (lambda (u i) (+ u (* a (- (roll u 1) u)))) u0 12))))
             (define g (grad loss :wrt '(0 1)))",
        )
        .unwrap();
    override_backend(None);
    let want = engine.eval("(g u0 0.3)").unwrap();
    override_backend(Some(machine.clone()));
    engine.eval("(device-stats)").unwrap();
    let first = engine.eval("(g u0 0.3)");
    let stats = engine.eval("(device-stats)");
    let again = engine.eval("(g u0 0.3)");
    let replayed = engine.eval("(device-stats)");
    override_backend(None);
    let (first, stats, again, replayed) = (
        first.unwrap(),
        stats.unwrap(),
        again.unwrap(),
        replayed.unwrap(),
    );
    eprintln!("first call: {stats}\nsecond call: {replayed}");
    assert_eq!(format!("{first}"), format!("{again}"));
    // The numbers printed agree with the CPU's to rounding.
    let numbers = |v: &Value| -> Vec<f64> {
        format!("{v}")
            .split(|c: char| !(c.is_ascii_digit() || "-.e".contains(c)))
            .filter_map(|t| t.parse().ok())
            .collect()
    };
    let (got, expected) = (numbers(&first), numbers(&want));
    assert!(
        got.len() > 40 && got.len() == expected.len(),
        "{first} vs {want}"
    );
    for (g, w) in got.iter().zip(&expected) {
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{g} vs {w}");
    }
    let entry = |stats: &Value, name: &str| -> f64 {
        let text = format!("{stats}");
        let start = text
            .find(&format!("({name} "))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            + name.len()
            + 2;
        let end = start + text[start..].find(')').unwrap();
        text[start..end].parse().unwrap()
    };
    // The tape, the loop's step and the step's reverse: a few programs,
    // not one per step.
    let planned = entry(&stats, "programs-planned");
    assert!(
        (2.0..=6.0).contains(&planned),
        "{planned} programs: {stats}"
    );
    assert!(entry(&stats, "kernel-launches") >= 24.0, "{stats}");
    assert_eq!(entry(&replayed, "programs-planned"), 0.0, "{replayed}");
    assert_eq!(entry(&replayed, "planning-ms"), 0.0, "{replayed}");
    assert_eq!(
        entry(&replayed, "kernel-launches"),
        entry(&stats, "kernel-launches")
    );
}

#[test]
fn tape_stats_counts_the_kernels_a_replay_launches() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    engine
        .eval(
            "(define x (linspace -1 1 50))
             (define (f x) (sum (* (tanh x) (exp (* 0.5 x)))))
             (define g (grad f))",
        )
        .unwrap();
    let planned = engine
        .eval("(second (assoc 'device-kernels (tape-stats f (list x))))")
        .unwrap();
    let Value::Int(planned) = planned else {
        panic!("device-kernels is {planned}")
    };
    let graph = engine
        .eval("(second (assoc 'device-graph (tape-stats f (list x))))")
        .unwrap();
    assert_eq!(format!("{graph}"), if planned >= 4 { "#t" } else { "#f" });
    override_backend(Some(machine.clone()));
    // The first run launches every kernel one by one (later runs launch
    // a graph).
    let ran = engine.eval("(device-stats) (g x) (device-stats)");
    override_backend(None);
    let ran = format!("{}", ran.unwrap());
    let count = |name: &str| -> i64 {
        let start = ran.find(&format!("({name} ")).unwrap() + name.len() + 2;
        ran[start..start + ran[start..].find(')').unwrap()]
            .parse()
            .unwrap()
    };
    assert!(planned > 0);
    assert_eq!(
        count("kernel-launches") + count("library-calls"),
        planned,
        "{ran}"
    );
}

#[test]
fn a_graph_keeps_its_memory_and_hands_out_results_of_their_own() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    let compiled = engine
        .compile_grad(
            "(lambda (x y) (sum (* (sin (slice x 1)) (exp (* y (slice x 0 -1))))))",
            &[&[30], &[29]],
        )
        .unwrap();
    let tape = compiled.tape();
    let at = |seed: f64| [array(&[30], seed), array(&[29], seed + 0.5)];
    let want = |seed: f64| Cpu.run(tape, &at(seed)).unwrap();
    device_stats::take();
    // First run plain, second captured (and launched), third launched.
    let first = machine.run(tape, &at(0.1)).unwrap();
    let second = machine.run(tape, &at(0.2)).unwrap();
    let third = machine.run(tape, &at(0.3)).unwrap();
    let stats = device_stats::take();
    assert_eq!(stats.graph_launches, 2, "{stats:?}");
    for (got, seed) in [(&first, 0.1), (&second, 0.2), (&third, 0.3)] {
        for (g, w) in got.iter().zip(&want(seed)) {
            for (g, w) in g.to_array().iter().zip(w.to_array().iter()) {
                assert!(
                    (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                    "{g} vs {w} at {seed}"
                );
            }
        }
    }
    // The second run's results were not overwritten by the third.
    assert_ne!(bits(&second), bits(&third));
    let again = machine.run(tape, &at(0.2)).unwrap();
    assert_eq!(bits(&again), bits(&second));
}

#[test]
fn groups_of_loop_steps_run_as_one_graph_each() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    engine
        .eval(
            "(define u0 (sin (linspace 0 3 24)))
             (define (heat u0 a) (scan (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2 u))))) u0 70))
             (define (loss u0 a)
               (sum (* u0 (scan (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2 u))))) u0 70
                                :checkpoint 'revolve :snapshots 2))))
             (define g (grad loss :wrt '(0 1)))",
        )
        .unwrap();
    override_backend(None);
    let want = engine
        .eval("(list (heat u0 0.2) (g u0 0.2) (heat u0 0.35))")
        .unwrap();
    override_backend(Some(machine.clone()));
    device_stats::take();
    let got = engine.eval("(list (heat u0 0.2) (g u0 0.2) (heat u0 0.35))");
    let stats = device_stats::take();
    override_backend(None);
    let got = got.unwrap();
    let numbers = |v: &Value| -> Vec<f64> {
        format!("{v}")
            .split(|c: char| !(c.is_ascii_digit() || "-.e".contains(c)))
            .filter_map(|t| t.parse().ok())
            .collect()
    };
    let (got, want) = (numbers(&got), numbers(&want));
    assert!(got.len() > 2 * 24 && got.len() == want.len(), "{got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{g} vs {w}");
    }
    // 70 steps forward: two graphs of 32 steps and 6 steps one by one;
    // the gradient's sweeps from its two snapshots advance by groups too;
    // the loop called again with another number captures again.
    assert!(stats.graph_launches >= 3, "{stats:?}");
}

#[test]
fn loops_over_sequences_run_groups_of_steps_as_one_graph_each() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    engine
        .eval(
            "(define xs (sin (reshape (linspace 0 5 (* 70 6)) '(70 6))))
             (define u0 (cos (linspace 0 2 6)))
             (define (run u0 a)
               (scan (lambda (u x) (let ((v (+ (* a u) (tanh x) (* 0.1 (roll u 1)))))
                                     (list v (* v x))))
                     u0 xs))
             (define (loss u0 a) (let ((r (run u0 a))) (+ (sum (first r)) (sum (* (second r) (second r))))))
             (define g (grad loss :wrt '(0 1)))
             (define jrun (jit run))",
        )
        .unwrap();
    override_backend(None);
    let want = engine.eval("(list (jrun u0 0.5) (g u0 0.5))").unwrap();
    override_backend(Some(machine.clone()));
    device_stats::take();
    let value = engine.eval("(jrun u0 0.5)");
    let stats = device_stats::take();
    let gradient = engine.eval("(g u0 0.5)");
    override_backend(None);
    let got = Value::list(vec![value.unwrap(), gradient.unwrap()]);
    fn numbers(value: &Value, into: &mut Vec<f64>) {
        match value {
            Value::Float(x) => into.push(*x),
            Value::Tensor(t) => into.extend(t.iter().copied()),
            Value::Pair(pair) => {
                numbers(&pair.car, into);
                numbers(&pair.cdr, into);
            }
            _ => {}
        }
    }
    let (mut got_numbers, mut want_numbers) = (Vec::new(), Vec::new());
    numbers(&got, &mut got_numbers);
    numbers(&want, &mut want_numbers);
    let (got, want) = (got_numbers, want_numbers);
    assert!(got.len() > 70 * 6 && got.len() == want.len(), "{got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{g} vs {w}");
    }
    // 70 steps reading a row and stacking an output each: two graphs of
    // 32 steps, then 6 steps one by one. (The gradient's revolve sweeps
    // advance fewer than 32 steps at a time.)
    assert_eq!(stats.graph_launches, 2, "{stats:?}");
}

#[test]
fn a_graph_takes_empty_arrays_in_and_out() {
    let Some(machine) = simulated() else { return };
    let mut engine = Engine::new();
    // Four kernels or more, one input and one result of no elements.
    let compiled = engine
        .compile_grad(
            "(lambda (x e) (+ (sum (exp (sin x))) (sum (* (cos x) (tanh x))) (sum (* 2 e))))",
            &[&[5], &[0]],
        )
        .unwrap();
    let tape = compiled.tape();
    let inputs = [array(&[5], 0.3), array(&[0], 0.0)];
    device_stats::take();
    let runs: Vec<_> = (0..3)
        .map(|_| machine.run(tape, &inputs).unwrap())
        .collect();
    assert_eq!(device_stats::take().graph_launches, 2);
    assert_eq!(bits(&runs[1]), bits(&runs[0]));
    assert_eq!(bits(&runs[2]), bits(&runs[0]));
    assert!(runs[2].iter().any(|b| b.to_array().is_empty()));
}

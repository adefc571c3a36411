//! The CUDA executor on the simulated device (`backends::cuda::sim`): every case of the
//! CUDA integration suite (`tests/common/device_cases.rs`) agrees with the
//! CPU backend, and host-device transfers happen only at tape boundaries,
//! loops included. Skipped with a message without a host C++ compiler.

use crate::backends::cpu::Cpu;
use crate::backends::cuda::sim::SimMachine;
use crate::backends::{Backend, override_backend};
use crate::{Engine, Value};
use std::rc::Rc;

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/common/device_cases.rs"
));

fn simulated() -> Option<Rc<SimMachine>> {
    let machine = SimMachine::new().map(Rc::new);
    if machine.is_none() {
        eprintln!("skipped: no host C++ compiler to simulate the device with");
    }
    machine
}

#[test]
fn every_device_case_agrees_with_the_cpu_on_the_simulated_device() {
    let Some(machine) = simulated() else { return };
    let compared = compare_all(machine.clone(), 1e-9);
    eprintln!(
        "{compared} numbers agree over {} cases: {} launches, {} matrix products; {} distinct kernels compiled by NVRTC",
        DEVICE_CASES.len(),
        machine.launches.get(),
        machine.gemms.get(),
        machine.nvrtc_compiled()
    );
    assert!(machine.launches.get() > 0 && machine.gemms.get() > 0);
}

/// Runs `program` (which must leave a gradient call for `g` to make) on
/// the simulated device; the uploads and downloads it took.
fn transfers(machine: &Rc<SimMachine>, setup: &str, call: &str) -> (usize, usize, Vec<f64>) {
    let mut engine = Engine::new();
    engine.eval(setup).unwrap();
    override_backend(None);
    let mut want = Vec::new();
    numbers_of(&engine.eval(call).unwrap(), &mut want);
    override_backend(Some(machine.clone()));
    let (up, down) = (machine.uploads.get(), machine.downloads.get());
    let value = engine.eval(call);
    override_backend(None);
    let mut got = Vec::new();
    numbers_of(&value.unwrap(), &mut got);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{g} vs {w}");
    }
    (
        machine.uploads.get() - up,
        machine.downloads.get() - down,
        got,
    )
}

#[test]
fn transfers_happen_only_at_tape_boundaries() {
    let Some(machine) = simulated() else { return };
    // W1-like: one array in, the value and the gradient out.
    let (up, down, _) = transfers(
        &machine,
        "(define x (linspace -1 1 3000))
         (define (f x) (let ((a (slice x 0 -1)) (b (slice x 1)))
                         (sum (+ (* 100 (pow (- b (* a a)) 2)) (pow (- 1 a) 2)))))
         (define vg (value-and-grad f))",
        "(vg x)",
    );
    assert_eq!((up, down), (1, 2), "x up; the value and the gradient down");
    // A checkpointed loop: 60 steps forward, the reverse from snapshots,
    // with the state on the device throughout.
    let (up, down, _) = transfers(
        &machine,
        "(define u0 (sin (linspace 0 3 100)))
         (define (loss u0 a) (sum (* 1 (scan (lambda (u i) (+ u (* a (- (roll u 1) u)))) u0 60
                                             :checkpoint 'revolve :snapshots 3))))
         (define g (grad loss :wrt '(0 1)))",
        "(g u0 0.3)",
    );
    assert_eq!(
        up, 1,
        "only u0 goes to the device (a and the step index are numbers)"
    );
    assert_eq!(down, 2, "the two gradients come back");
}

#[test]
fn fourier_transforms_run_on_the_device_as_the_fft_librarys_routine() {
    let Some(machine) = simulated() else { return };
    let before = machine.routines.get();
    // Lines next to each other (the last axis) and strided ones (axis 1
    // of three), forward and backward, in the value and the gradient.
    let (up, down, _) = transfers(
        &machine,
        "(define x (randn '(3 6 5)))
         (define (f x)
           (let ((w (fft (complex x (* 0.5 (sin x))) :axis 1)))
             (+ (sum (square (abs (ifft w :axis 2)))) (sum (real (fft2 (* w w)))))))
         (define vg (value-and-grad f))",
        "(vg x)",
    );
    assert_eq!((up, down), (1, 2), "x up; the value and the gradient down");
    // fft, ifft and fft2 (two transforms) forward; their adjoints back.
    let transforms = machine.routines.get() - before;
    assert!(transforms >= 8, "{transforms} routines");
}

#[test]
fn f32_storage_on_the_device_gives_the_bits_of_f64_storage() {
    use crate::backends::Backend as _;
    use crate::backends::cpu::storage::tests::{attention, bits, compiled, input};
    let Some(machine) = simulated() else { return };
    // An attention block and its gradient: f32 products (sgemm) reading
    // and writing f32 storage, head views moved in f32, groups reading
    // and writing it, and reductions that get it widened.
    let (graph, roots) = attention(2, 8, 16, 2);
    let tape = compiled(&graph, &roots, 5);
    let kept = tape.instructions.iter().filter(|i| i.single).count();
    assert!(kept >= 8, "{kept} values in f32 storage\n{tape}");
    let mut wide = tape.clone();
    wide.instructions.iter_mut().for_each(|i| i.single = false);
    let inputs: Vec<_> = (0..5)
        .map(|k| input(graph.shape(egg::Id::from(k)), k as f64))
        .collect();
    let launches = |tape| {
        let before = machine.launches.get();
        let outputs = machine
            .run(tape, &inputs)
            .expect("runs on the simulated device");
        (outputs, machine.launches.get() - before)
    };
    let (single, single_launches) = launches(&tape);
    let (double, double_launches) = launches(&wide);
    // Equal but for the f32 functions (`expf`, `tanhf`) that reading f32
    // storage lets a kernel call where f64 storage gets the rounded double
    // ones: a packing error would be far off.
    assert_ne!(bits(&single), bits(&double), "the float functions ran");
    agree(&single, &double, 1e-6);
    // With f64 storage every f32 product narrows both operands and widens
    // its result; with f32 storage most of those conversions go.
    assert!(
        single_launches < double_launches,
        "{single_launches} launches with f32 storage, {double_launches} without"
    );
    // And with the CPU backend to f32 accumulation.
    let cpu = crate::backends::cpu::Cpu.run(&tape, &inputs).unwrap();
    agree(&single, &cpu, 1e-5);
}

/// Each output of `got` within `tolerance` of the largest number of the
/// same output of `want`, and every number an f32 one.
fn agree(got: &[crate::backends::cpu::Buf], want: &[crate::backends::cpu::Buf], tolerance: f64) {
    assert_eq!(got.len(), want.len());
    for (got, want) in got.iter().zip(want) {
        let (got, want) = (got.to_array(), want.to_array());
        assert_eq!(got.shape(), want.shape());
        let scale = want.iter().fold(1e-30f64, |m, x| m.max(x.abs()));
        for (g, w) in got.iter().zip(want.iter()) {
            assert!((g - w).abs() <= tolerance * scale, "{g} against {w}");
            assert_eq!(crate::dtype::round32(*g), *g, "{g} is not an f32 number");
        }
    }
}

/// The error `call` gives on the CPU and on the simulated device (after
/// `warm`, calls that run the same tape without error, so that the
/// failing run replays its program or launches its graph).
pub(super) fn errors_after(
    machine: &Rc<SimMachine>,
    setup: &str,
    warm: &str,
    call: &str,
) -> (String, String) {
    let mut engine = Engine::new();
    engine.eval(setup).unwrap();
    override_backend(None);
    let cpu = engine.eval(call).map(|v| v.to_string());
    override_backend(Some(machine.clone()));
    engine.eval(warm).unwrap();
    let device = engine.eval(call).map(|v| v.to_string());
    override_backend(None);
    match (cpu, device) {
        (Err(c), Err(d)) => (c.to_string(), d.to_string()),
        (c, d) => panic!("{call}: expected errors, got {c:?} on the CPU and {d:?} on the device"),
    }
}

#[test]
fn bad_positions_are_the_cpus_errors_on_the_device_in_graphs_too() {
    let Some(machine) = simulated() else { return };
    let setup = "(define x (randn '(5 3)))
                 (define good (tensor '(0 4 -1 2)))
                 (define (f x idx) (sum (* (gather x idx) (tanh (gather x idx)) (exp (gather x idx)))))
                 (define g (grad f))
                 (define (h x idx) (sum (index-set x idx (zeros '(4 3)))))
                 (define (t x idx) (sum (take-along x (reshape idx '(4 1)) :axis 0)))";
    let warm = "(g x good) (g x good) (g x good) (h x good) (h x good) (t x good)";
    let graphs = machine.graph_launches.get();
    for call in [
        "(g x (tensor '(0 5 1 2)))",
        "(g x (tensor '(0 1.5 1 2)))",
        "(g x (tensor '(0 -6 1 2)))",
        "(h x (tensor '(0 1 7 2)))",
        "(t x (tensor '(0 1 9 2)))",
    ] {
        let (cpu, device) = errors_after(&machine, setup, warm, call);
        assert_eq!(device, cpu, "{call}");
        assert!(cpu.contains("index "), "{cpu}");
    }
    assert!(
        machine.graph_launches.get() > graphs,
        "no run launched a graph"
    );
}

#[test]
fn a_while_loop_reads_its_conditions_once_per_group_of_steps() {
    let Some(machine) = simulated() else { return };
    // 17 steps: groups of 1, 2, 4, 8 and 16 steps, the last one stopping
    // within; then the state. Far fewer copies than one per step.
    let (up, down, _) = transfers(
        &machine,
        "(define s0 (tensor '(0.5 1.0 1.5)))
         (define (f s0) (while-loop (lambda (s) (< (sum s) 54)) (lambda (s) (+ s 1)) s0))",
        "((jit f) s0)",
    );
    assert_eq!(up, 1, "the state goes up once");
    assert_eq!(down, 6, "copies to the host for 17 steps");
    // A step run past the stop fails (the Cholesky factor of 0), but the
    // loop had stopped: the CPU's state, no error. The gradient goes
    // through the reverse, which reads the condition at every step.
    for call in ["((jit g) s0)", "((grad (lambda (s0) (sum (g s0)))) s0)"] {
        transfers(
            &machine,
            "(define s0 (tensor '(0.0 1.0)))
             (define (g s0)
               (while-loop (lambda (s) (< (index s 0) 3))
                           (lambda (s) (+ s 1 (* 0 (sum (cholesky (* (- 3 (index s 0)) (eye 2)))))))
                           s0))",
            call,
        );
    }
    // Stopping at once, and reaching :max-steps with the condition true.
    transfers(
        &machine,
        "(define s0 (tensor '(5.0)))
         (define (f s0) (while-loop (lambda (s) (< (sum s) 3)) (lambda (s) (* 2 s)) s0))",
        "((jit f) s0)",
    );
    let (cpu, device) = errors_after(
        &machine,
        "(define s0 (tensor '(1.0)))
         (define (f s0) (while-loop (lambda (s) (> (sum s) 0)) (lambda (s) (+ s 1)) s0 :max-steps 40))",
        "",
        "((jit f) s0)",
    );
    assert_eq!(device, cpu);
}

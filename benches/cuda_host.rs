//! The CUDA backend's host-side cost, measured without a GPU: the
//! executor runs tapes on a machine that does nothing (no memory, no
//! kernels), so what is timed is the work the host does on a GPU, which
//! the device's own time adds to.
//!
//! - the first run of a tape plans its device program (kernel sources,
//!   their hashes, launch parameters, buffers): `plan`;
//! - every later run replays it (inputs bound, one call per kernel, the
//!   bookkeeping of buffers): `replay`; or, on a device that captures
//!   graphs, copies the inputs in, launches the graph and copies the
//!   results out: `graph replay`;
//! - a loop replays its body's program once per step, or launches one
//!   graph per 32 steps where it can: a W4 heat step (forward, and the
//!   revolve gradient's steps).
//!
//! The GP negative log-likelihood's value and gradient (n = 1000: a
//! Cholesky factor, triangular solves, a log-determinant) is planned and
//! replayed the same way, its linear algebra as solver routines. The CPU
//! backend's whole run of the same tape is timed beside the W1 and W2
//! gradients. Run: `cargo bench --bench cuda_host`; per-step figures
//! are printed to stderr.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::Engine;
use epsilon::backends::cpu::{Buf, Cpu};
use epsilon::backends::cuda::launch::{GemmCall, Launch};
use epsilon::backends::cuda::machine::{Arg, Datum, Machine};
use epsilon::backends::cuda::program::{self, Kind, Programs};
use epsilon::backends::{Backend, BackendError, override_backend};
use epsilon::ir::ops::solver::Routine;
use epsilon::tape::Tape;
use ndarray::{ArrayD, IxDyn};
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Instant;

/// A device that does nothing: memory is its length. It keeps programs,
/// as a device does.
#[derive(Default)]
struct Null {
    programs: Programs<Null>,
    /// Whether it captures graphs (as a CUDA device does).
    graphs: bool,
}

impl Machine for Null {
    type Mem = usize;
    type Graph = ();

    fn alloc(&self, len: usize) -> Result<usize, BackendError> {
        Ok(len)
    }
    fn zeros(&self, len: usize) -> Result<usize, BackendError> {
        Ok(len)
    }
    fn upload(&self, data: &[f64]) -> Result<usize, BackendError> {
        Ok(data.len())
    }
    fn download(&self, _: &usize, len: usize) -> Result<Vec<f64>, BackendError> {
        Ok(vec![0.0; len])
    }
    fn launch(
        &self,
        launch: &Launch,
        args: &[Arg<'_, usize>],
        _: &mut usize,
    ) -> Result<(), BackendError> {
        black_box((launch.key, args.len()));
        Ok(())
    }
    fn gemm(
        &self,
        call: &GemmCall,
        _: (&usize, &usize),
        _: &mut usize,
        _: bool,
    ) -> Result<(), BackendError> {
        black_box(call.m);
        Ok(())
    }
    fn copy(
        &self,
        _: &usize,
        _: usize,
        _: &mut usize,
        _: usize,
        _: usize,
    ) -> Result<(), BackendError> {
        Ok(())
    }
    fn routine(
        &self,
        routine: &Routine,
        _: &[&usize],
        _: &mut [&mut usize],
    ) -> Result<(), BackendError> {
        black_box(routine);
        Ok(())
    }
    fn programs(&self) -> Option<&Programs<Null>> {
        Some(&self.programs)
    }
    fn clear(&self, _: &mut usize) -> Result<(), BackendError> {
        Ok(())
    }
    fn begin_capture(&self) -> Result<bool, BackendError> {
        Ok(self.graphs)
    }
    fn end_capture(&self) -> Result<Option<()>, BackendError> {
        Ok(Some(()))
    }
    fn launch_graph(&self, graph: &()) -> Result<(), BackendError> {
        black_box(graph);
        Ok(())
    }
}

/// A backend that keeps every tape it is asked to run (and runs it on
/// the CPU).
#[derive(Default)]
struct Capture {
    tapes: RefCell<Vec<(Tape, Vec<Buf>)>>,
}

impl Backend for Capture {
    fn name(&self) -> &'static str {
        "capture"
    }
    fn run(&self, tape: &Tape, inputs: &[Buf]) -> Result<Vec<Buf>, BackendError> {
        self.tapes
            .borrow_mut()
            .push((tape.clone(), inputs.to_vec()));
        Cpu.run(tape, inputs)
    }
}

/// The largest tape (by instructions) `call` runs after `setup`, and its
/// inputs.
fn captured(setup: &str, call: &str) -> (Tape, Vec<Buf>) {
    let mut eps = Engine::new();
    eps.eval(setup).expect("the setup runs");
    let capture = Rc::new(Capture::default());
    override_backend(Some(capture.clone()));
    let result = eps.eval(call);
    override_backend(None);
    result.expect("the call runs");
    let mut tapes = capture.tapes.take();
    tapes.sort_by_key(|(tape, _)| tape.instructions.len());
    tapes.pop().expect("the call ran a tape")
}

/// Host inputs as device values on the null device.
fn on_null(inputs: &[Buf]) -> Vec<Datum<usize>> {
    inputs
        .iter()
        .map(|input| match input {
            Buf::Scalar(x) => Datum::Host(*x),
            Buf::Array(array) => Datum::device(array.len(), array.shape()),
        })
        .collect()
}

fn inputs(shapes: &[&[usize]]) -> Vec<Buf> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let n: usize = shape.iter().product();
            let data = (0..n)
                .map(|i| ((i * 31 + k) % 17) as f64 / 17.0 - 0.5)
                .collect();
            Buf::from_array(Rc::new(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()))
        })
        .collect()
}

/// Planning and replaying `tape` on the null device.
fn plan_and_replay(c: &mut Criterion, name: &str, tape: &Tape, args: &[Buf], cpu: bool) {
    let null = Null::default();
    let values = on_null(args);
    let signature: Vec<Kind> = values.iter().map(Kind::of).collect();
    let program = program::plan(tape, &signature).expect("the tape plans");
    eprintln!(
        "{name}: {} instructions, {} fused groups; its device program: {} commands, {} kernels",
        tape.stats.instructions,
        tape.stats.fused_groups,
        program.commands.len(),
        program.kernels()
    );
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    group.bench_function("plan (first run on a device)", |b| {
        b.iter(|| program::plan(black_box(tape), &signature).unwrap())
    });
    group.bench_function("replay (later runs), host side only", |b| {
        b.iter(|| program::run(&null, black_box(tape), &values).unwrap())
    });
    let graphs = Null {
        graphs: true,
        ..Null::default()
    };
    group.bench_function("graph replay (later runs), host side only", |b| {
        b.iter(|| program::run(&graphs, black_box(tape), &values).unwrap())
    });
    if cpu {
        group.bench_function("cpu backend, whole run", |b| {
            b.iter(|| Cpu.run(tape, black_box(args)).unwrap())
        });
    }
    group.finish();
}

/// A loop's host time per step on the null device: the median of five
/// runs of `tape`, over `steps`.
fn per_step(name: &str, tape: &Tape, args: &[Buf], steps: usize, graphs: bool) {
    let null = Null {
        graphs,
        ..Null::default()
    };
    let values = on_null(args);
    program::run(&null, tape, &values).expect("runs");
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            program::run(&null, tape, &values).unwrap();
            started.elapsed().as_secs_f64() / steps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    eprintln!(
        "{name}{}: {:.3} µs of host time per step (median of 5 runs of {steps} steps)",
        if graphs { ", steps in graphs" } else { "" },
        times[2] * 1e6
    );
}

fn benches(c: &mut Criterion) {
    let mut eps = Engine::new();
    let w1 = eps
        .compile_grad(
            "(lambda (x) (let ((a (slice x 0 -1)) (b (slice x 1)))
               (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))",
            &[&[1_000_000]],
        )
        .expect("W1 compiles");
    plan_and_replay(
        c,
        "w1_rosenbrock_1e6_grad",
        w1.tape(),
        &inputs(&[&[1_000_000]]),
        true,
    );
    let w2_shapes: &[&[usize]] = &[
        &[784, 512],
        &[512],
        &[512, 512],
        &[512],
        &[512, 10],
        &[10],
        &[256, 784],
        &[256, 10],
    ];
    let w2 = eps
        .compile_grad(
            "(lambda (w1 b1 w2 b2 w3 b3 x y)
               (let* ((h1 (tanh (+ (matmul x w1) b1)))
                      (h2 (tanh (+ (matmul h1 w2) b2)))
                      (logits (+ (matmul h2 w3) b3)))
                 (neg (mean (sum (* y (log-softmax logits :axis 1)) :axis 1)))))",
            w2_shapes,
        )
        .expect("W2 compiles");
    plan_and_replay(c, "w2_mlp_step_grad", w2.tape(), &inputs(w2_shapes), true);
    let ba = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/linalg/ba.lisp"))
        .expect("bench/linalg/ba.lisp");
    let (ba_jacobian, ba_inputs) = captured(&ba, "(ba-jacobian cams points)");
    plan_and_replay(c, "ba_jacobian", &ba_jacobian, &ba_inputs, false);
    let gp = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/linalg/gp.lisp"))
        .expect("bench/linalg/gp.lisp");
    let gp = format!("(define *args* '()) {gp}");
    let (gp_tape, gp_inputs) = captured(&gp, "(gp-vgrad theta)");
    plan_and_replay(c, "gp_value_and_grad", &gp_tape, &gp_inputs, false);
    let heat = "(define N 10000) (define T 1000) (define alpha 0.25)
        (define u0 (sin (* 3.0 (linspace 0.0 1.0 N))))
        (define (heat-step a) (lambda (u i) (+ u (* a (- (+ (roll u 1) (roll u -1)) (* 2.0 u))))))
        (define (forward u0 a) (sum (pow (scan (heat-step a) u0 T :checkpoint 'store-all) 2)))
        (define (loss u0 a) (sum (pow (scan (heat-step a) u0 T :checkpoint 'revolve :snapshots 100) 2)))
        (define g (grad loss :wrt '(0 1)))";
    let (forward, forward_inputs) = captured(heat, "((jit forward) u0 alpha)");
    for graphs in [false, true] {
        per_step(
            "w4_heat_forward_step",
            &forward,
            &forward_inputs,
            1000,
            graphs,
        );
    }
    let (gradient, gradient_inputs) = captured(heat, "(g u0 alpha)");
    // Revolve with 100 snapshots over 1000 steps: about 2 forward steps
    // and one reverse step per step.
    for graphs in [false, true] {
        per_step(
            "w4_heat_revolve_gradient_step",
            &gradient,
            &gradient_inputs,
            1000,
            graphs,
        );
    }
}

criterion_group!(cuda_host, benches);
criterion_main!(cuda_host);

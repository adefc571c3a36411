//! The CUDA backend's host-side cost per tape run, measured without a GPU:
//! the executor runs W1's and W2's gradient tapes on a machine that does
//! nothing (no memory, no kernels), so what is timed is the work the host
//! does on every run on a GPU: copying inputs out of their arrays, planning
//! each instruction (kernel source, its hash, the launch parameters), and
//! the bookkeeping of values. A GPU run costs at least this plus the
//! device's own time. The CPU backend's full run of the same tape is timed
//! beside it.
//!
//! Run: `cargo bench --bench cuda_host`.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::Engine;
use epsilon::backends::Backend;
use epsilon::backends::BackendError;
use epsilon::backends::cpu::{Buf, Cpu};
use epsilon::backends::cuda::launch::{GemmCall, Launch};
use epsilon::backends::cuda::machine::{Arg, Machine};
use epsilon::backends::cuda::run_on_machine;
use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;
use std::rc::Rc;

/// A device that does nothing: memory is its length.
struct Null;

impl Machine for Null {
    type Mem = usize;

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

fn workload(c: &mut Criterion, name: &str, source: &str, shapes: &[&[usize]]) {
    let mut eps = Engine::new();
    let compiled = eps
        .compile_grad(source, shapes)
        .expect("the workload compiles");
    let tape = compiled.tape();
    let args = inputs(shapes);
    eprintln!(
        "{name}: {} instructions, {} fused groups",
        tape.stats.instructions, tape.stats.fused_groups
    );
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    group.bench_function("cuda executor, host side only", |b| {
        b.iter(|| run_on_machine(&Null, tape, black_box(&args)).unwrap())
    });
    group.bench_function("cpu backend, whole run", |b| {
        b.iter(|| Cpu.run(tape, black_box(&args)).unwrap())
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    workload(
        c,
        "w1_rosenbrock_1e6_grad",
        "(lambda (x) (let ((a (slice x 0 -1)) (b (slice x 1)))
           (sum (+ (* 100.0 (pow (- b (* a a)) 2)) (pow (- 1.0 a) 2)))))",
        &[&[1_000_000]],
    );
    workload(
        c,
        "w2_mlp_step_grad",
        "(lambda (w1 b1 w2 b2 w3 b3 x y)
           (let* ((h1 (tanh (+ (matmul x w1) b1)))
                  (h2 (tanh (+ (matmul h1 w2) b2)))
                  (logits (+ (matmul h2 w3) b3)))
             (neg (mean (sum (* y (log-softmax logits :axis 1)) :axis 1)))))",
        &[
            &[784, 512],
            &[512],
            &[512, 512],
            &[512],
            &[512, 10],
            &[10],
            &[256, 784],
            &[256, 10],
        ],
    );
}

criterion_group!(cuda_host, benches);
criterion_main!(cuda_host);

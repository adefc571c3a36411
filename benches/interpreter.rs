//! Interpreter benchmarks: engine start-up (built-ins and prelude), a tiny
//! evaluation, naive recursive fib (call overhead), a tail-recursive loop,
//! and tensor arithmetic through the interpreter.
//!
//! Run: `cargo bench --bench interpreter`.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::Engine;
use std::hint::black_box;

const FIB: &str = "(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))";

fn start_up(c: &mut Criterion) {
    c.bench_function("start_up/engine_new", |b| {
        b.iter(|| black_box(Engine::new()))
    });
    c.bench_function("start_up/new_then_eval_add", |b| {
        b.iter(|| {
            let mut eps = Engine::new();
            black_box(eps.eval("(+ 1 2)").expect("evaluates"))
        })
    });
}

fn calls(c: &mut Criterion) {
    let mut eps = Engine::new();
    eps.eval(FIB).expect("defines fib");
    eps.eval("(define (count-up i n) (if (= i n) i (count-up (+ i 1) n)))")
        .expect("defines count-up");
    let mut group = c.benchmark_group("calls");
    group.sample_size(20);
    group.bench_function("fib_25", |b| {
        b.iter(|| black_box(eps.eval("(fib 25)").expect("runs")))
    });
    group.bench_function("tail_loop_1e6", |b| {
        b.iter(|| black_box(eps.eval("(count-up 0 1000000)").expect("runs")))
    });
    group.finish();
}

fn tensors(c: &mut Criterion) {
    let mut eps = Engine::new();
    eps.eval("(seed! 0) (define a (randn '(1000 1000))) (define v (randn 1000))")
        .expect("defines inputs");
    let mut group = c.benchmark_group("tensors");
    group.sample_size(20);
    group.bench_function("elementwise_1e6", |b| {
        b.iter(|| black_box(eps.eval("(sum (* (exp a) (+ a 1)))").expect("runs")))
    });
    group.bench_function("matvec_1000", |b| {
        b.iter(|| black_box(eps.eval("(matmul a v)").expect("runs")))
    });
    group.finish();
}

criterion_group!(benches, start_up, calls, tensors);
criterion_main!(benches);

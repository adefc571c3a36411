//! W3, symbolic gradients: the four `bench/w3/*.lisp` workloads (Neo-Hookean
//! gradient with 9 partials, `sin(cos(exp(xy)))^3/(1+x^2+y^2)` gradient and
//! Hessian, the 8-term cyclic product gradient), each timed from the quoted
//! expression to the simplified result, at the default level (bounded
//! saturation). The SymPy reference is `bench/reference/symbolic_w3.py`.
//!
//! Run: `cargo bench --bench symbolic`.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilon::Engine;
use std::hint::black_box;

/// The workloads: name and the file defining `f` and `vars`.
const WORKLOADS: &[(&str, &str, &str)] = &[
    (
        "neo_hookean_grad",
        include_str!("../bench/w3/neo-hookean.lisp"),
        "(grad f vars)",
    ),
    (
        "sincos_grad",
        include_str!("../bench/w3/sincos-grad.lisp"),
        "(grad f vars)",
    ),
    (
        "sincos_hessian",
        include_str!("../bench/w3/sincos-hessian.lisp"),
        "(hessian f vars)",
    ),
    (
        "cyclic_product_grad",
        include_str!("../bench/w3/cyclic-product.lisp"),
        "(grad f vars)",
    ),
];

/// The definitions of a workload file: every form before the timed call.
fn definitions(script: &str) -> String {
    script
        .lines()
        .take_while(|line| !line.starts_with("(define g"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn w3(c: &mut Criterion) {
    let mut group = c.benchmark_group("w3_symbolic");
    group.sample_size(10);
    for (name, script, call) in WORKLOADS {
        let mut eps = Engine::new();
        eps.eval(&definitions(script))
            .expect("the workload defines f and vars");
        let size = eps
            .eval(&format!("(expr-size {call})"))
            .expect("differentiates");
        eprintln!(
            "{name}: expr-size {}",
            epsilon::lisp::printer::write_string(&size)
        );
        group.bench_function(*name, |b| {
            b.iter(|| black_box(eps.eval(call).expect("differentiates")))
        });
    }
    group.finish();
}

criterion_group!(benches, w3);
criterion_main!(benches);

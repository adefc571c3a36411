//! Arrays and linear algebra (issue 16, item 4): reductions along any axis,
//! batched `matmul`, `gather` and `scatter-add`, the Epsilon side of
//! `bench/reference/array_workloads.py` (JAX and NumPy), case for case and
//! with the same data (x = 1 + 0.001 sin(i) over the row-major index i;
//! the random rows of `gather` come from another generator than NumPy's,
//! with the same distribution).
//!
//! Each case is a Lisp function defined in one engine and called through
//! `Engine::call`: in the group `arrays_jit` through `jit` (so a call
//! traces the function, finds its tape in the cache and runs it; `grad` for
//! the `*_grad` cases), in `arrays_eager` as a plain call (the built-in runs
//! at once on its arguments). Case names are those of the reference script.
//!
//! Run: `cargo bench --bench arrays -- --warm-up-time 1 --measurement-time 3`
//! (a subset: add a filter such as `reduce/sum` or `matmul`), then
//! `python3 bench/reference/array_workloads.py --compare target/criterion <jax output>`
//! for the ratio table.

use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use epsilon::{Engine, Value};
use ndarray::{ArrayD, IxDyn};
use std::hint::black_box;

const REDUCE_SHAPES: &[(&[usize], &[&[usize]])] = &[
    (&[1000, 1000], &[&[0], &[1]]),
    (
        &[100, 100, 100],
        &[&[0], &[1], &[2], &[0, 1], &[1, 2], &[0, 2]],
    ),
    (&[1_000_000, 8], &[&[0], &[1]]),
    (&[8, 1_000_000], &[&[0], &[1]]),
    (&[4096, 256], &[&[0], &[1]]),
];
const REDUCE_OPS: &[&str] = &["sum", "mean", "max", "min", "prod", "logsumexp"];
const GRAD_CASES: &[(&str, &[usize], &[usize])] = &[
    ("sum", &[1000, 1000], &[0]),
    ("sum", &[1000, 1000], &[1]),
    ("sum", &[100, 100, 100], &[1]),
    ("sum", &[1_000_000, 8], &[1]),
    ("sum", &[8, 1_000_000], &[1]),
    ("sum", &[4096, 256], &[1]),
    ("logsumexp", &[4096, 256], &[1]),
];
/// Operand shapes, and whether the first is transposed inside the function.
const MATMUL_CASES: &[(&[usize], &[usize], bool)] = &[
    (&[64, 128, 128], &[64, 128, 128], false),
    (&[1000, 10, 10], &[1000, 10, 10], false),
    (&[32, 256, 64], &[64, 32], false),
    (&[8, 512, 512], &[8, 512, 512], false),
    (&[512, 512], &[512, 512], false),
    (&[1000, 1000], &[1000, 1000], false),
    (&[512, 512], &[512, 512], true),
];
const MATMUL_GRAD_CASES: &[(&[usize], &[usize])] = &[
    (&[64, 128, 128], &[64, 128, 128]),
    (&[1000, 10, 10], &[1000, 10, 10]),
];
const INDEX_SHAPES: &[[usize; 2]] = &[[1_000_000, 8], [1_000_000, 3]];

fn shape_name(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(usize::to_string).collect();
    parts.join("x")
}

fn axes_name(axes: &[usize]) -> String {
    let parts: Vec<String> = axes.iter().map(usize::to_string).collect();
    parts.join("+")
}

/// The `:axis` argument in Lisp.
fn axes_lisp(axes: &[usize]) -> String {
    match axes {
        [one] => one.to_string(),
        many => format!("'({})", axes_name(many).replace('+', " ")),
    }
}

/// 1 + 0.001 sin(i) over the row-major index i, as the reference builds it.
fn data(shape: &[usize]) -> Value {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|i| 1.0 + 0.001 * (i as f64).sin()).collect();
    Value::tensor(ArrayD::from_shape_vec(IxDyn(shape), values).expect("sizes agree"))
}

/// `n` positions below `len`, from a seeded xorshift generator, as floats.
fn random_rows(n: usize, len: usize) -> Value {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let values: Vec<f64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % len as u64) as f64
        })
        .collect();
    Value::tensor(ArrayD::from_shape_vec(IxDyn(&[n]), values).expect("sizes agree"))
}

/// The engine with every case's function defined.
struct Cases {
    eps: Engine,
    count: usize,
}

impl Cases {
    /// Defines `(lambda params body)` and its jitted form (`wrap`, e.g.
    /// `jit`), returning (plain, wrapped).
    fn define(&mut self, params: &str, body: &str, wrap: &str) -> (Value, Value) {
        self.count += 1;
        let name = format!("case-{}", self.count);
        let source = format!("(define ({name} {params}) {body}) (define {name}-w ({wrap} {name}))");
        self.eps
            .eval(&source)
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        let get = |n: &str| self.eps.get(n).expect("defined above");
        (get(&name), get(&format!("{name}-w")))
    }
}

fn group<'a>(c: &'a mut Criterion, kind: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(format!("arrays_{kind}"));
    group.sample_size(20);
    group
}

/// Times `f` on `args` under `case` in `group`.
fn time(
    group: &mut BenchmarkGroup<'_, WallTime>,
    eps: &mut Engine,
    case: &str,
    f: &Value,
    args: &[Value],
) {
    group.bench_function(case, |b| {
        b.iter(|| {
            let result = eps.call(f, args);
            black_box(result.unwrap_or_else(|e| panic!("{case} runs: {e}")))
        })
    });
}

fn arrays(c: &mut Criterion) {
    let mut cases = Cases {
        eps: Engine::new(),
        count: 0,
    };
    // (case, plain, jitted, arguments)
    let mut all: Vec<(String, Value, Value, Vec<Value>)> = Vec::new();
    for &(shape, axes_list) in REDUCE_SHAPES {
        let x = data(shape);
        for &axes in axes_list {
            for op in REDUCE_OPS {
                let body = format!("({op} x :axis {})", axes_lisp(axes));
                let (plain, jitted) = cases.define("x", &body, "jit");
                let case = format!("reduce/{op}/{}/{}", shape_name(shape), axes_name(axes));
                all.push((case, plain, jitted, vec![x.clone()]));
            }
        }
    }
    for &(op, shape, axes) in GRAD_CASES {
        let body = format!(
            "(let ((s ({op} x :axis {}))) (sum (* s s)))",
            axes_lisp(axes)
        );
        let (plain, grad) = cases.define("x", &body, "grad");
        let case = format!("reduce_grad/{op}/{}/{}", shape_name(shape), axes_name(axes));
        let _ = plain;
        all.push((case, Value::Nil, grad, vec![data(shape)]));
    }
    for &(a, b, transposed) in MATMUL_CASES {
        let body = if transposed {
            "(matmul (transpose a) b)"
        } else {
            "(matmul a b)"
        };
        let (plain, jitted) = cases.define("a b", body, "jit");
        let t = if transposed { "t" } else { "" };
        let case = format!("matmul/{t}{}@{}", shape_name(a), shape_name(b));
        all.push((case, plain, jitted, vec![data(a), data(b)]));
    }
    for &(a, b) in MATMUL_GRAD_CASES {
        let (_, grad) = cases.define(
            "a b",
            "(sum (matmul a b))",
            "(lambda (f) (grad f :wrt 'all))",
        );
        let case = format!("matmul_grad/{}@{}", shape_name(a), shape_name(b));
        all.push((case, Value::Nil, grad, vec![data(a), data(b)]));
    }
    for shape in INDEX_SHAPES {
        let (t, u) = (data(shape), data(shape));
        let idx = random_rows(shape[0], shape[0]);
        let (plain, jitted) = cases.define("t idx", "(gather t idx)", "jit");
        let case = format!("gather/{}", shape_name(shape));
        all.push((case, plain, jitted, vec![t.clone(), idx.clone()]));
        let (plain, jitted) = cases.define("t idx u", "(scatter-add t idx u)", "jit");
        let case = format!("scatter_add/{}", shape_name(shape));
        all.push((case, plain, jitted, vec![t, idx, u]));
    }
    let eps = &mut cases.eps;
    let mut jit = group(c, "jit");
    for (case, _, jitted, args) in &all {
        time(&mut jit, eps, case, jitted, args);
    }
    jit.finish();
    let mut eager = group(c, "eager");
    for (case, plain, _, args) in &all {
        if !matches!(plain, Value::Nil) {
            time(&mut eager, eps, case, plain, args);
        }
    }
    eager.finish();
}

criterion_group!(benches, arrays);
criterion_main!(benches);

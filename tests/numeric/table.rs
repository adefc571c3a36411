//! The operations of the table (`epsilon::ir::ops`: indexing, sequences,
//! linear algebra), each checked at random points (proptest) by one
//! harness, `check_table`:
//!
//! 1. `grad` and `vjp` against central finite differences of the eager
//!    function, `jvp` against a directional finite difference
//!    (`ops::check_instance`);
//! 2. `jit` gives the eager values;
//! 3. the gradient through a `scan` of two steps is twice the gradient;
//! 4. second derivatives: `hessian` of the scalar `sum(w * f)` in the first
//!    differentiated argument is symmetric, equals `jacobian (grad)` and
//!    finite differences of `grad` (`hessians::check_hessian`);
//! 5. for batched operations, `f` on a stack of inputs equals the stack of
//!    `f` on each (`check_batched`).
//!
//! Matrix arguments are drawn freely and made well posed by the function
//! itself (`(+ (matmul b (transpose b)) (* 3 (eye n)))` for a symmetric
//! positive definite matrix), so finite differences see every direction.

use super::hessians::check_hessian;
use super::ops::{Instance, arg, check_instance, fixed, instance};
use super::*;

/// Property cases per operation.
const TABLE_CASES: u32 = 12;

/// Hessians are checked when the differentiated argument has at most this
/// many elements (each column costs two gradients).
const HESSIAN_MAX: usize = 16;

/// The random choices of one case: sizes and a seed.
#[derive(Clone, Debug)]
pub(crate) struct Pick {
    /// Sizes of axes, each in 1..=4.
    pub(crate) dims: [usize; 3],
    /// Picks a variant of the case (an axis, a flag).
    pub(crate) variant: usize,
    pub(crate) seed: u64,
}

fn picks() -> impl Strategy<Value = Pick> {
    (
        proptest::array::uniform3(1..=4usize),
        0..24usize,
        any::<u64>(),
    )
        .prop_map(|(dims, variant, seed)| Pick {
            dims,
            variant,
            seed,
        })
}

/// The arguments of `inst` drawn from `seed`.
fn draw_args(inst: &Instance, seed: u64) -> Vec<ArrayD<f64>> {
    let mut rng = Rng(seed);
    inst.args
        .iter()
        .map(|a| rng.array(&a.shape, a.domain))
        .collect()
}

/// The checks 1-4 above for one instance.
pub(crate) fn check_table(engine: &mut Engine, inst: &Instance, seed: u64) -> Result<(), String> {
    check_instance(engine, inst, seed)?;
    let xs = draw_args(inst, seed);
    let args: Vec<Value> = xs.iter().map(value_of).collect();
    let f = try_eval(engine, &inst.source)?;
    let y = array(&call(engine, &f, &args)?)?;

    // jit gives the eager values.
    let jitted = call_named(engine, "jit", std::slice::from_ref(&f))?;
    let yj = array(&call(engine, &jitted, &args)?)?;
    compare("jit value", &yj, &y, EXACT_TOL)?;

    let n = inst.args.len();
    let Some(first) = (0..n).find(|&k| inst.args[k].diff) else {
        return Ok(());
    };
    let mut rng = Rng(seed ^ 0x5eed);
    let w = rng.array(y.shape(), R1);
    engine.set("*w*", value_of(&w));
    engine.set("*f*", f.clone());
    for (k, x) in xs.iter().enumerate() {
        engine.set(&format!("*a{k}*"), value_of(x));
    }
    // The loss as a function of the first differentiated argument alone.
    let call_args: Vec<String> = (0..n)
        .map(|k| {
            if k == first {
                "x".to_string()
            } else {
                format!("*a{k}*")
            }
        })
        .collect();
    let call_args = call_args.join(" ");
    let loss = format!("(lambda (x) (sum (* *w* (*f* {call_args}))))");
    let loss = try_eval(engine, &loss)?;
    engine.set("*loss1*", loss);

    // Through a scan of two steps: twice the gradient.
    let grad = try_eval(engine, "(grad *loss1*)")?;
    let g = array(&call(engine, &grad, &[args[first].clone()])?)?;
    let looped = try_eval(
        engine,
        "(grad (lambda (x) (scan (lambda (s i) (+ s (*loss1* x))) 0.0 2)))",
    )?;
    let g2 = array(&call(engine, &looped, &[args[first].clone()])?)?;
    compare("gradient through scan", &g2, &(&g * 2.0), 1e-8)?;

    // Second derivatives.
    if xs[first].len() <= HESSIAN_MAX {
        let v = rng.array(xs[first].shape(), R1);
        check_hessian(engine, "*loss1*", &xs[first], &v)?;
    }
    Ok(())
}

/// `f` on a stack of two draws of the arguments (a new leading axis on
/// every argument) equals the stack of `f` on each draw.
pub(crate) fn check_batched(engine: &mut Engine, inst: &Instance, seed: u64) -> Result<(), String> {
    let f = try_eval(engine, &inst.source)?;
    let first = draw_args(inst, seed);
    let second = draw_args(inst, seed.wrapping_add(1));
    let stacked: Vec<ArrayD<f64>> = first
        .iter()
        .zip(&second)
        .map(|(a, b)| {
            ndarray::stack(ndarray::Axis(0), &[a.view(), b.view()]).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let run = |engine: &mut Engine, xs: &[ArrayD<f64>]| -> Result<ArrayD<f64>, String> {
        let args: Vec<Value> = xs.iter().map(value_of).collect();
        array(&call(engine, &f, &args)?)
    };
    let both = run(engine, &stacked)?;
    let (a, b) = (run(engine, &first)?, run(engine, &second)?);
    let want =
        ndarray::stack(ndarray::Axis(0), &[a.view(), b.view()]).map_err(|e| e.to_string())?;
    compare("batched against each", &both, &want, EXACT_TOL)
}

/// Helpers the cases' sources use: `mT` swaps the last two axes, `spd`
/// makes a symmetric positive definite matrix (or stack) from any `b`.
const TABLE_PRELUDE: &str = "
(define (mT x) (transpose x (append (range (- (rank x) 2)) (list (- (rank x) 1) (- (rank x) 2)))))
(define (spd b) (+ (matmul b (mT b)) (* 3 (eye (nth (shape b) (- (rank b) 1))))))
";

/// Runs `build` on `TABLE_CASES` random picks through [`check_table`]
/// (and [`check_batched`] when `batched`).
pub(crate) fn run_table(name: &str, batched: bool, build: impl Fn(&Pick) -> Instance) {
    let mut fresh = engine();
    eval(&mut fresh, TABLE_PRELUDE);
    let engine = RefCell::new(fresh);
    let mut runner = TestRunner::new(op_config(TABLE_CASES));
    let result = runner.run(&picks(), |pick| {
        let inst = build(&pick);
        let mut engine = engine.borrow_mut();
        let shapes: Vec<&Vec<usize>> = inst.args.iter().map(|a| &a.shape).collect();
        let fail = |message: String| {
            TestCaseError::fail(format!(
                "{}\n  argument shapes {shapes:?}\n  {message}",
                inst.source
            ))
        };
        check_table(&mut engine, &inst, pick.seed).map_err(fail)?;
        if batched {
            check_batched(&mut engine, &inst, pick.seed).map_err(fail)?;
        }
        Ok(())
    });
    if let Err(error) = result {
        panic!("{name}: {error}");
    }
}

// ------------------------------------------------------------ indexing

#[test]
fn gather_any_axis_and_index_shape() {
    run_table("gather", false, |p| {
        let [a, b, c] = p.dims;
        let (shape, axis, idx_shape) = match p.variant % 3 {
            0 => (vec![a + 1], 0, vec![b + 1]),
            1 => (vec![a, b + 1], 1, vec![c, 2]),
            _ => (vec![a + 1, b, 2], 0, vec![c]),
        };
        let len = shape[axis] as i64;
        instance(
            format!("(lambda (t idx) (gather t idx :axis {axis}))"),
            vec![
                arg(shape, R2),
                fixed(idx_shape, Domain::Whole(-len, len - 1)),
            ],
        )
    });
}

#[test]
fn scatter_add_with_repeated_positions() {
    run_table("scatter-add", false, |p| {
        let [a, b, _] = p.dims;
        let len = a as i64 + 1;
        instance(
            "(lambda (t idx u) (scatter-add t idx u :axis 0))",
            vec![
                arg(vec![a + 1, b], R2),
                fixed(vec![3], Domain::Whole(-len, len - 1)),
                arg(vec![3, b], R2),
            ],
        )
    });
}

#[test]
fn index_set_keeps_the_last_of_repeated_positions() {
    run_table("index-set", false, |p| {
        let [a, b, _] = p.dims;
        let len = b as i64 + 1;
        instance(
            "(lambda (t idx v) (index-set t idx v :axis 1))",
            vec![
                arg(vec![a, b + 1], R2),
                fixed(vec![3], Domain::Whole(0, len - 1)),
                arg(vec![a, 3], R2),
            ],
        )
    });
}

// ------------------------------------------------------------ sequences

#[test]
fn cumsum_along_an_axis() {
    run_table("cumsum", true, |p| {
        let [a, b, _] = p.dims;
        let axis = -1 - (p.variant % 2) as i64;
        instance(
            format!("(lambda (x) (cumsum x :axis {axis}))"),
            vec![arg(vec![a + 1, b + 1], R2)],
        )
    });
}

#[test]
fn cumprod_along_an_axis() {
    run_table("cumprod", true, |p| {
        let [a, b, _] = p.dims;
        let axis = -1 - (p.variant % 2) as i64;
        instance(
            format!("(lambda (x) (cumprod x :axis {axis}))"),
            vec![arg(vec![a + 1, b + 1], R2)],
        )
    });
}

#[test]
fn flip_along_an_axis() {
    run_table("flip", true, |p| {
        let [a, b, _] = p.dims;
        let axis = -1 - (p.variant % 2) as i64;
        instance(
            format!("(lambda (x) (* x (flip x :axis {axis})))"),
            vec![arg(vec![a, b], R2)],
        )
    });
}

// ------------------------------------------------------------ triangles

#[test]
fn tril_and_triu_with_offsets() {
    run_table("tril/triu", true, |p| {
        let [a, b, _] = p.dims;
        let k = (p.variant % 5) as i64 - 2;
        let op = if p.variant.is_multiple_of(2) {
            "tril"
        } else {
            "triu"
        };
        instance(
            format!("(lambda (x) (* x ({op} x {k})))"),
            vec![arg(vec![a + 1, b + 1], R2)],
        )
    });
}

#[test]
fn diag_and_diagonal() {
    run_table("diag/diagonal", true, |p| {
        let [a, b, _] = p.dims;
        if p.variant.is_multiple_of(2) {
            instance(
                "(lambda (v) (* (diag v) (diag v)))",
                vec![arg(vec![a + 1], R2)],
            )
        } else {
            instance(
                "(lambda (m) (* (diagonal m) (diagonal m)))",
                vec![arg(vec![a + 1, b + 1], R2)],
            )
        }
    });
}

// ------------------------------------------------------------ linear algebra

#[test]
fn cholesky_of_spd_matrices() {
    run_table("cholesky", true, |p| {
        let n = p.dims[0];
        let shape = if p.variant.is_multiple_of(2) {
            vec![n, n]
        } else {
            vec![2, n, n]
        };
        instance("(lambda (b) (cholesky (spd b)))", vec![arg(shape, R1)])
    });
}

/// `(triangular-solve a b ...)` with every flag, `b` a vector or a
/// matrix.
fn triangular_case(p: &Pick, vector: bool) -> Instance {
    let [n, k, _] = p.dims;
    let lower = p.variant.is_multiple_of(2);
    let transpose = (p.variant / 2).is_multiple_of(2);
    let b_shape = if vector { vec![n] } else { vec![n, k] };
    let flags = format!(
        ":lower {} :transpose {}",
        if lower { "#t" } else { "#f" },
        if transpose { "#t" } else { "#f" }
    );
    instance(
        format!("(lambda (a b) (triangular-solve (+ a (* 3 (eye {n}))) b {flags}))"),
        vec![arg(vec![n, n], R1), arg(b_shape, R2)],
    )
}

#[test]
fn triangular_solve_matrices_every_variant() {
    run_table("triangular-solve", true, |p| triangular_case(p, false));
}

#[test]
fn triangular_solve_vectors_every_variant() {
    run_table("triangular-solve vector", false, |p| {
        triangular_case(p, true)
    });
}

#[test]
fn solve_matrices() {
    run_table("solve", true, |p| {
        let [n, k, _] = p.dims;
        instance(
            format!("(lambda (a b) (solve (+ a (* 3 (eye {n}))) b))"),
            vec![arg(vec![n, n], R1), arg(vec![n, k], R2)],
        )
    });
}

#[test]
fn solve_vectors() {
    run_table("solve vector", false, |p| {
        let n = p.dims[0];
        instance(
            format!("(lambda (a b) (solve (+ a (* 3 (eye {n}))) b))"),
            vec![arg(vec![n, n], R1), arg(vec![n], R2)],
        )
    });
}

#[test]
fn inv_of_well_conditioned_matrices() {
    run_table("inv", true, |p| {
        let n = p.dims[0];
        instance(
            format!("(lambda (a) (inv (+ a (* 3 (eye {n})))))"),
            vec![arg(vec![n, n], R1)],
        )
    });
}

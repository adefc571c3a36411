//! Every differentiable built-in's reverse rule (`grad`, `vjp`) and forward
//! rule (`jvp`) against central finite differences of the eager built-ins,
//! on random shapes with broadcasting: one proptest per op (`ops::sin`,
//! `ops::matmul`, ...).

use super::*;

/// The random choices of one property case: a shape, broadcasting
/// patterns, a variant of the op and a seed for the values.
#[derive(Clone, Debug)]
struct Draw {
    rank: usize,
    dims: [usize; 4],
    /// Picks the op's variant (which axis option, which matmul kind, ...).
    variant: usize,
    /// Further choices (axes, offsets, shifts).
    picks: [usize; 4],
    /// Per operand: how many trailing axes of the output it has.
    subranks: [usize; 3],
    /// Per operand and axis: whether that axis is 1 (broadcast).
    ones: [[bool; 4]; 3],
    seed: u64,
}

impl Draw {
    fn shape(&self) -> Vec<usize> {
        self.dims[..self.rank].to_vec()
    }

    /// The shape, with rank at least `min`.
    fn shape_min(&self, min: usize) -> Vec<usize> {
        self.dims[..self.rank.max(min)].to_vec()
    }

    /// An axis of a rank-`rank` tensor in [-rank, rank) (negative from the end).
    fn axis(&self, pick: usize, rank: usize) -> i64 {
        (self.picks[pick] % (2 * rank)) as i64 - rank as i64
    }

    /// Shapes of `n` operands that broadcast together to (at most) `shape()`:
    /// each is a suffix of it with some axes set to 1.
    fn broadcast(&self, n: usize) -> Vec<Vec<usize>> {
        let out = self.shape();
        (0..n)
            .map(|j| {
                let rank = self.subranks[j].min(out.len());
                let start = out.len() - rank;
                (start..out.len())
                    .map(|axis| if self.ones[j][axis] { 1 } else { out[axis] })
                    .collect()
            })
            .collect()
    }
}

fn draws() -> impl Strategy<Value = Draw> {
    (
        0..=3usize,
        proptest::array::uniform4(1..=4usize),
        0..12usize,
        proptest::array::uniform4(0..24usize),
        proptest::array::uniform3(0..=3usize),
        proptest::array::uniform3(proptest::array::uniform4(proptest::bool::weighted(0.3))),
        any::<u64>(),
    )
        .prop_map(|(rank, dims, variant, picks, subranks, ones, seed)| Draw {
            rank,
            dims,
            variant,
            picks,
            subranks,
            ones,
            seed,
        })
}

/// One argument of an op under test.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub(crate) shape: Vec<usize>,
    pub(crate) domain: Domain,
    /// Differentiated (and perturbed by finite differences); otherwise a
    /// fixed input whose cotangent must be zero.
    pub(crate) diff: bool,
}

pub(crate) fn arg(shape: Vec<usize>, domain: Domain) -> Arg {
    Arg {
        shape,
        domain,
        diff: true,
    }
}

pub(crate) fn fixed(shape: Vec<usize>, domain: Domain) -> Arg {
    Arg {
        shape,
        domain,
        diff: false,
    }
}

/// One concrete test of an op: a Lisp function and its arguments.
#[derive(Clone, Debug)]
pub(crate) struct Instance {
    /// `(lambda (a b ...) ...)` returning a number or tensor.
    pub(crate) source: String,
    pub(crate) args: Vec<Arg>,
    /// Functions of the same arguments whose values (elementwise) must stay
    /// more than 1e-3 away from 0: the op's kinks and jumps.
    kinks: Vec<String>,
}

pub(crate) fn instance(source: impl Into<String>, args: Vec<Arg>) -> Instance {
    Instance {
        source: source.into(),
        args,
        kinks: Vec::new(),
    }
}

impl Instance {
    fn kinked(mut self, kinks: &[&str]) -> Self {
        self.kinks = kinks.iter().map(|k| k.to_string()).collect();
        self
    }
}

/// Checks one instance: `grad` and `vjp` against finite differences of
/// `sum(w * f)` for a random weight `w`, `jvp` against a directional
/// finite difference, and the values they return against `f`'s.
pub(crate) fn check_instance(
    engine: &mut Engine,
    inst: &Instance,
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng(seed);
    let xs: Vec<ArrayD<f64>> = inst
        .args
        .iter()
        .map(|a| rng.array(&a.shape, a.domain))
        .collect();
    let args: Vec<Value> = xs.iter().map(value_of).collect();
    let f = try_eval(engine, &inst.source)?;
    let y = array(&call(engine, &f, &args)?)?;
    let w = rng.array(y.shape(), R1);
    let n = inst.args.len();
    let diff: Vec<usize> = (0..n).filter(|&i| inst.args[i].diff).collect();

    // sum(w * f), the scalar that grad differentiates.
    engine.set("*w*", value_of(&w));
    engine.set("*f*", f.clone());
    let params: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    let params = params.join(" ");
    let loss = try_eval(
        engine,
        &format!("(lambda ({params}) (sum (* *w* (*f* {params}))))"),
    )?;
    engine.set("*loss*", loss.clone());
    let mut expected = Vec::new();
    for &k in &diff {
        expected.push(fd_gradient(engine, &loss, &xs, k)?);
    }

    // Reverse mode through grad :wrt.
    let grad = try_eval(engine, &format!("(grad *loss* :wrt {})", show_list(&diff)))?;
    let grads = items(&call(engine, &grad, &args)?)?;
    if grads.len() != diff.len() {
        return Err(format!(
            "grad gave {} gradients for {:?}",
            grads.len(),
            diff
        ));
    }
    for ((g, want), &k) in grads.iter().zip(&expected).zip(&diff) {
        compare(&format!("grad, argument {k}"), &array(g)?, want, FD_TOL)?;
    }

    // Reverse mode through vjp with the cotangent w.
    let out = items(&call_named(
        engine,
        "vjp",
        &[f.clone(), list_of(args.clone()), value_of(&w)],
    )?)?;
    compare("vjp value", &array(&out[0])?, &y, EXACT_TOL)?;
    let cotangents = items(&out[1])?;
    if cotangents.len() != n {
        return Err(format!(
            "vjp gave {} cotangents for {n} arguments",
            cotangents.len()
        ));
    }
    for k in 0..n {
        let ct = array(&cotangents[k])?;
        match diff.iter().position(|&d| d == k) {
            Some(slot) => compare(&format!("vjp, argument {k}"), &ct, &expected[slot], FD_TOL)?,
            None => compare(
                &format!("vjp, fixed argument {k}"),
                &ct,
                &ArrayD::zeros(xs[k].raw_dim()),
                0.0,
            )?,
        }
    }

    // Forward mode through jvp.
    let tangents: Vec<ArrayD<f64>> = inst
        .args
        .iter()
        .zip(&xs)
        .map(|(a, x)| {
            if a.diff {
                rng.array(x.shape(), R1)
            } else {
                ArrayD::zeros(x.raw_dim())
            }
        })
        .collect();
    let out = items(&call_named(
        engine,
        "jvp",
        &[
            f.clone(),
            list_of(args.clone()),
            list_of(tangents.iter().map(value_of).collect()),
        ],
    )?)?;
    compare("jvp value", &array(&out[0])?, &y, EXACT_TOL)?;
    let want = fd_directional(engine, &f, &xs, &tangents)?;
    compare("jvp tangent", &array(&out[1])?, &want[0], FD_TOL)?;
    Ok(())
}

/// Property cases per op.
const OP_CASES: u32 = 32;

/// Runs `build` on `OP_CASES` random draws through [`check_instance`],
/// skipping draws whose values sit near one of the instance's kinks.
fn run_op(name: &str, build: impl Fn(&Draw) -> Instance) {
    let engine = RefCell::new(engine());
    let mut runner = TestRunner::new(op_config(OP_CASES));
    let result = runner.run(&draws(), |draw| {
        let inst = build(&draw);
        let mut engine = engine.borrow_mut();
        let mut rng = Rng(draw.seed);
        let xs: Vec<ArrayD<f64>> = inst
            .args
            .iter()
            .map(|a| rng.array(&a.shape, a.domain))
            .collect();
        let args: Vec<Value> = xs.iter().map(value_of).collect();
        for kink in &inst.kinks {
            let k = try_eval(&mut engine, kink).map_err(TestCaseError::fail)?;
            let distance = call(&mut engine, &k, &args)
                .and_then(|v| array(&v))
                .map_err(TestCaseError::fail)?;
            prop_assume!(distance.iter().all(|d| d.abs() > 1e-3), "near a kink");
        }
        let shapes: Vec<&Vec<usize>> = inst.args.iter().map(|a| &a.shape).collect();
        check_instance(&mut engine, &inst, draw.seed).map_err(|message| {
            TestCaseError::fail(format!(
                "{}\n  argument shapes {shapes:?}\n  {message}",
                inst.source
            ))
        })
    });
    if let Err(error) = result {
        panic!("{name}: {error}");
    }
}

/// A test per op: `name: |draw| instance`.
macro_rules! op_tests {
    ($($name:ident: |$d:ident| $build:expr,)*) => {
        $(
            #[test]
            fn $name() {
                run_op(stringify!($name), |$d: &Draw| $build);
            }
        )*
    };
}

/// `(lambda (x) (op x))` on a tensor of any rank (0 to 3).
fn unary(op: &str, domain: Domain, d: &Draw) -> Instance {
    instance(
        format!("(lambda (x) ({op} x))"),
        vec![arg(d.shape(), domain)],
    )
}

/// `source`, a function of one argument of any rank.
fn unary_source(source: &str, domain: Domain, d: &Draw) -> Instance {
    instance(source, vec![arg(d.shape(), domain)])
}

/// `(lambda (x y) (op x y))` with broadcasting shapes.
fn binary(op: &str, dx: Domain, dy: Domain, d: &Draw) -> Instance {
    binary_source(&format!("(lambda (x y) ({op} x y))"), dx, dy, d)
}

fn binary_source(source: &str, dx: Domain, dy: Domain, d: &Draw) -> Instance {
    let shapes = d.broadcast(2);
    instance(
        source,
        vec![arg(shapes[0].clone(), dx), arg(shapes[1].clone(), dy)],
    )
}

/// `(lambda (x y z) (op x y z))` with broadcasting shapes.
fn ternary(op: &str, domain: Domain, d: &Draw) -> Instance {
    let shapes = d.broadcast(3);
    instance(
        format!("(lambda (x y z) ({op} x y z))"),
        shapes.into_iter().map(|s| arg(s, domain)).collect(),
    )
}

/// A reduction with no axis, `:axis k`, `:axis k :keepdims #t`, or a list
/// of axes.
fn reduction(op: &str, domain: Domain, d: &Draw) -> Instance {
    let rank = d.rank;
    let options = match (rank, d.variant % 5) {
        (0, _) | (_, 0) => String::new(),
        (_, 1) => format!(":axis {}", d.axis(0, rank)),
        (_, 2) => format!(":axis {} :keepdims #t", d.axis(0, rank)),
        (_, 3) => ":keepdims #t".to_string(),
        _ => {
            let (a, b) = (d.axis(0, rank), d.axis(1, rank));
            format!(
                ":axis (list {a} {b}) :keepdims {}",
                if d.picks[2].is_multiple_of(2) {
                    "#t"
                } else {
                    "#f"
                }
            )
        }
    };
    instance(
        format!("(lambda (x) ({op} x {options}))"),
        vec![arg(d.shape(), domain)],
    )
}

/// `softmax` or `log-softmax`, on the last axis or a chosen one.
/// (Rank 1 or more: the softmax of a number is a constant, whose tape the
/// cache confuses with another one; see
/// `bugs::cache_ignores_the_number_of_inputs`.)
fn softmax_like(op: &str, d: &Draw) -> Instance {
    let shape = d.shape_min(1);
    let options = if d.variant % 2 == 1 {
        format!(":axis {}", d.axis(0, shape.len()))
    } else {
        String::new()
    };
    instance(
        format!("(lambda (x) ({op} x {options}))"),
        vec![arg(shape, R3)],
    )
}

/// `matmul` or `dot`: matrix-matrix, matrix-vector, vector-matrix,
/// vector-vector (and, for dot, a number times a tensor).
fn product(op: &str, d: &Draw) -> Instance {
    let [m, k, n, _] = d.dims;
    let kinds = if op == "dot" { 5 } else { 4 };
    let (a, b) = match d.variant % kinds {
        0 => (vec![m, k], vec![k, n]),
        1 => (vec![m, k], vec![k]),
        2 => (vec![k], vec![k, n]),
        3 => (vec![k], vec![k]),
        _ => (vec![], vec![m, n]),
    };
    instance(
        format!("(lambda (a b) ({op} a b))"),
        vec![arg(a, R2), arg(b, R2)],
    )
}

/// A random permutation of `0..rank`, some axes written negative.
fn permutation(d: &Draw, rank: usize) -> Vec<i64> {
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    for i in (1..rank).rev() {
        perm.swap(i, d.picks[i] % (i + 1));
    }
    if d.picks[0] % 2 == 1 {
        perm[0] -= rank as i64;
    }
    perm
}

fn transpose_case(d: &Draw) -> Instance {
    let shape = d.shape();
    if d.variant.is_multiple_of(2) || d.rank < 2 {
        return instance("(lambda (x) (transpose x))", vec![arg(shape, R2)]);
    }
    let perm = permutation(d, d.rank);
    instance(
        format!("(lambda (x) (transpose x {}))", show_list(&perm)),
        vec![arg(shape, R2)],
    )
}

fn reshape_case(d: &Draw) -> Instance {
    let shape = d.shape_min(1);
    let n: usize = shape.iter().product();
    let mut reversed: Vec<i64> = shape.iter().rev().map(|&s| s as i64).collect();
    let target = match d.variant % 4 {
        0 => vec![n as i64],
        1 => reversed,
        2 => {
            let at = d.picks[0] % reversed.len();
            reversed[at] = -1;
            reversed
        }
        _ => vec![1, n as i64, 1],
    };
    instance(
        format!("(lambda (x) (reshape x {}))", show_list(&target)),
        vec![arg(shape, R2)],
    )
}

fn broadcast_to_case(d: &Draw) -> Instance {
    let target = d.shape();
    let from = d.broadcast(1).remove(0);
    instance(
        format!("(lambda (x) (broadcast-to x {}))", show_list(&target)),
        vec![arg(from, R2)],
    )
}

fn slice_case(d: &Draw) -> Instance {
    let shape = d.shape_min(1);
    let rank = shape.len();
    let axis = d.axis(0, rank);
    let len = shape[axis.rem_euclid(rank as i64) as usize];
    let start = d.picks[1] % len;
    let end = start + 1 + d.picks[2] % (len - start);
    let source = match d.variant % 4 {
        0 => format!("(lambda (x) (slice x {start} {end} :axis {axis}))"),
        1 => format!("(lambda (x) (slice x {start}))"),
        2 => format!("(lambda (x) (slice x -{} :axis {axis}))", len - start),
        _ => format!("(lambda (x) (slice x {start} {} :axis {axis}))", len + 3),
    };
    instance(source, vec![arg(shape, R2)])
}

fn index_case(d: &Draw) -> Instance {
    let shape = d.shape_min(1);
    let count = 1 + d.variant % shape.len();
    let indices: Vec<String> = (0..count)
        .map(|axis| {
            let len = shape[axis] as i64;
            let k = (d.picks[axis] as i64) % (2 * len) - len;
            k.to_string()
        })
        .collect();
    instance(
        format!("(lambda (x) (index x {}))", indices.join(" ")),
        vec![arg(shape, R2)],
    )
}

fn concat_case(d: &Draw) -> Instance {
    let shape = d.shape_min(1);
    let rank = shape.len();
    let count = 2 + d.variant % 2;
    let default_axis = d.picks[3].is_multiple_of(3);
    let axis = if default_axis { 0 } else { d.axis(0, rank) };
    let at = axis.rem_euclid(rank as i64) as usize;
    let args: Vec<Arg> = (0..count)
        .map(|j| {
            let mut s = shape.clone();
            s[at] = 1 + d.picks[j] % 3;
            arg(s, R2)
        })
        .collect();
    let names: Vec<String> = (0..count).map(|j| format!("x{j}")).collect();
    let option = if default_axis {
        String::new()
    } else {
        format!(":axis {axis}")
    };
    instance(
        format!(
            "(lambda ({0}) (concat (list {0}) {option}))",
            names.join(" ")
        ),
        args,
    )
}

fn stack_case(d: &Draw) -> Instance {
    let shape = d.shape();
    let count = 2 + d.variant % 2;
    let option = if d.picks[3].is_multiple_of(3) {
        String::new()
    } else {
        format!(":axis {}", d.axis(0, shape.len() + 1))
    };
    let names: Vec<String> = (0..count).map(|j| format!("x{j}")).collect();
    instance(
        format!(
            "(lambda ({0}) (stack (list {0}) {option}))",
            names.join(" ")
        ),
        (0..count).map(|_| arg(shape.clone(), R2)).collect(),
    )
}

fn roll_case(d: &Draw) -> Instance {
    let shift = d.picks[1] as i64 % 11 - 5;
    if d.variant.is_multiple_of(2) || d.rank == 0 {
        return instance(
            format!("(lambda (x) (roll x {shift}))"),
            vec![arg(d.shape(), R2)],
        );
    }
    instance(
        format!("(lambda (x) (roll x {shift} :axis {}))", d.axis(0, d.rank)),
        vec![arg(d.shape(), R2)],
    )
}

fn outer_case(d: &Draw) -> Instance {
    let [_, _, _, m] = d.dims;
    instance(
        "(lambda (a b) (outer a b))",
        vec![arg(d.shape_min(1), R2), arg(vec![m], R2)],
    )
}

fn item_case(d: &Draw) -> Instance {
    instance(
        "(lambda (x) (* (item x) (exp (item x))))",
        vec![arg(vec![1; d.rank], R2)],
    )
}

/// `tensor` built from traced numbers, or stacking traced tensors.
fn tensor_of(d: &Draw) -> Instance {
    if d.variant.is_multiple_of(2) {
        return instance(
            "(lambda (a b c) (tensor (* a b) (sin c) a (/ b 2)))",
            vec![arg(vec![], R2), arg(vec![], R2), arg(vec![], R2)],
        );
    }
    let shape = d.shape_min(1);
    instance(
        "(lambda (a b) (tensor a (* a b) b))",
        vec![arg(shape.clone(), R2), arg(shape, R2)],
    )
}

/// `clamp` with constant bounds, or with differentiated bounds that
/// broadcast against x.
fn clamp_case(d: &Draw) -> Instance {
    if d.variant.is_multiple_of(2) {
        return unary_source("(lambda (x) (clamp x -0.5 0.7))", R1, d)
            .kinked(&["(lambda (x) (+ x 0.5))", "(lambda (x) (- x 0.7))"]);
    }
    let shapes = d.broadcast(3);
    instance(
        "(lambda (x lo hi) (clamp x lo hi))",
        vec![
            arg(shapes[0].clone(), R2),
            arg(shapes[1].clone(), Domain::Range(-1.0, -0.2)),
            arg(shapes[2].clone(), Domain::Range(0.2, 1.0)),
        ],
    )
    .kinked(&["(lambda (x lo hi) (- x lo))", "(lambda (x lo hi) (- x hi))"])
}

/// `where` with a fixed mask and broadcasting branches, or with a mask
/// computed from the differentiated argument.
fn where_op(d: &Draw) -> Instance {
    if d.variant.is_multiple_of(2) {
        return unary_source("(lambda (x) (where (> x 0) (* x x) (sin x)))", AWAY, d);
    }
    let shapes = d.broadcast(3);
    instance(
        "(lambda (c a b) (where c a b))",
        vec![
            fixed(shapes[0].clone(), Domain::Mask),
            arg(shapes[1].clone(), R2),
            arg(shapes[2].clone(), R2),
        ],
    )
}

/// Binary `min`/`max` (and the variadic form), away from ties.
fn extremum(op: &str, d: &Draw) -> Instance {
    if d.variant % 3 == 2 {
        return ternary(op, R2, d).kinked(&[
            "(lambda (x y z) (- x y))",
            "(lambda (x y z) (- y z))",
            "(lambda (x y z) (- x z))",
        ]);
    }
    binary(op, R2, R2, d).kinked(&["(lambda (x y) (- x y))"])
}

/// Rounding functions have derivative 0 away from their jumps; multiplied
/// by a smooth function they test the product rule with a zero partial.
fn rounding(op: &str, d: &Draw) -> Instance {
    let jump = if op == "round" {
        "(lambda (x) (- (- x (floor x)) 0.5))"
    } else {
        "(lambda (x) (- x (round x)))"
    };
    unary_source(&format!("(lambda (x) (* (sin x) ({op} x)))"), R3, d).kinked(&[jump])
}

op_tests! {
    // elementwise, one argument
    neg: |d| unary("neg", R2, d),
    minus_one_argument: |d| unary("-", R2, d),
    reciprocal_one_argument: |d| unary("/", AWAY, d),
    abs: |d| unary("abs", AWAY, d),
    sqrt: |d| unary("sqrt", POS, d),
    exp: |d| unary("exp", R2, d),
    log: |d| unary("log", POS, d),
    log1p: |d| unary("log1p", Domain::Range(-0.9, 3.0), d),
    expm1: |d| unary("expm1", R2, d),
    sin: |d| unary("sin", R3, d),
    cos: |d| unary("cos", R3, d),
    tan: |d| unary("tan", Domain::Range(-1.2, 1.2), d),
    asin: |d| unary("asin", Domain::Range(-0.9, 0.9), d),
    acos: |d| unary("acos", Domain::Range(-0.9, 0.9), d),
    atan: |d| unary("atan", R3, d),
    sinh: |d| unary("sinh", R2, d),
    cosh: |d| unary("cosh", R2, d),
    tanh: |d| unary("tanh", R2, d),
    sigmoid: |d| unary("sigmoid", Domain::Range(-4.0, 4.0), d),
    relu: |d| unary("relu", AWAY, d),
    softplus: |d| unary("softplus", R3, d),
    log2: |d| unary("log2", POS, d),
    log10: |d| unary("log10", POS, d),
    sign: |d| unary_source("(lambda (x) (* x (sign x)))", AWAY, d),
    heaviside: |d| unary_source("(lambda (x) (* (exp x) (heaviside x)))", AWAY, d),
    floor: |d| rounding("floor", d),
    ceil: |d| rounding("ceil", d),
    round: |d| rounding("round", d),
    // elementwise, broadcasting
    add: |d| binary("+", R2, R2, d),
    add_three: |d| ternary("+", R2, d),
    sub: |d| binary("-", R2, R2, d),
    sub_three: |d| ternary("-", R2, d),
    mul: |d| binary("*", R2, R2, d),
    mul_three: |d| ternary("*", R2, d),
    div: |d| binary("/", R2, Domain::Away(0.3, 2.0), d),
    div_three: |d| ternary("/", Domain::Away(0.3, 2.0), d),
    pow: |d| binary("pow", Domain::Range(0.2, 3.0), R2, d),
    pow_integer_exponent: |d| unary_source("(lambda (x) (pow x 3))", R2, d),
    pow_square: |d| unary_source("(lambda (x) (pow x 2))", R2, d),
    pow_half: |d| unary_source("(lambda (x) (pow x 0.5))", POS, d),
    pow_constant_base: |d| unary_source("(lambda (x) (pow 2 x))", R2, d),
    atan2: |d| binary("atan2", R2, Domain::Away(0.2, 2.0), d),
    xlogy: |d| binary("xlogy", R2, POS, d),
    min: |d| extremum("min", d),
    max: |d| extremum("max", d),
    mod_op: |d| binary("mod", R3, Domain::Away(0.5, 2.0), d)
        .kinked(&["(lambda (x y) (let ((q (/ x y))) (- q (round q))))"]),
    clamp: |d| clamp_case(d),
    where_mask: |d| where_op(d),
    // reductions
    sum: |d| reduction("sum", R2, d),
    mean: |d| reduction("mean", R2, d),
    prod: |d| reduction("prod", Domain::Away(0.5, 1.5), d),
    max_reduction: |d| reduction("max", R2, d),
    min_reduction: |d| reduction("min", R2, d),
    logsumexp: |d| reduction("logsumexp", R3, d),
    softmax: |d| softmax_like("softmax", d),
    log_softmax: |d| softmax_like("log-softmax", d),
    // products
    matmul: |d| product("matmul", d),
    dot: |d| product("dot", d),
    outer: |d| outer_case(d),
    trace: |d| instance("(lambda (m) (trace m))", vec![arg(vec![d.dims[0], d.dims[1]], R2)]),
    // structure
    transpose: |d| transpose_case(d),
    reshape: |d| reshape_case(d),
    flatten: |d| unary("flatten", R2, d),
    broadcast_to: |d| broadcast_to_case(d),
    slice: |d| slice_case(d),
    index: |d| index_case(d),
    concat: |d| concat_case(d),
    stack: |d| stack_case(d),
    roll: |d| roll_case(d),
    to_list: |d| unary_source("(lambda (x) (tree-sum (to-list x)))", R2, d),
    item: |d| item_case(d),
    tensor: |d| tensor_of(d),
    // special functions, away from the poles of the gamma family
    lgamma: |d| unary("lgamma", Domain::Range(0.3, 6.0), d),
    lgamma_negative: |d| unary("lgamma", Domain::Range(-2.9, -2.1), d),
    digamma: |d| unary("digamma", Domain::Range(0.3, 6.0), d),
    trigamma: |d| unary_source("(lambda (x) (polygamma 1 x))", Domain::Range(0.5, 5.0), d),
    erf: |d| unary("erf", R2, d),
    erfc: |d| unary("erfc", R3, d),
    multigammaln: |d| unary_source("(lambda (x) (multigammaln x 3))", Domain::Range(1.3, 6.0), d),
    // the NumPy functions of the elementwise table
    square: |d| unary("square", R2, d),
    cbrt: |d| unary("cbrt", AWAY, d),
    exp2: |d| unary("exp2", R2, d),
    hypot: |d| binary("hypot", R2, R2, d).kinked(&["(lambda (x y) (hypot x y))"]),
    logaddexp: |d| binary("logaddexp", R3, R3, d),
    logaddexp2: |d| binary("logaddexp2", R3, R3, d),
    sinc: |d| unary("sinc", R3, d),
    sinc_near_zero: |d| unary("sinc", Domain::Range(-0.01, 0.01), d),
    deg2rad: |d| unary("deg2rad", R3, d),
    rad2deg: |d| unary("rad2deg", R3, d),
}

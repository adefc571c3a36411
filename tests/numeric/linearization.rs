//! `jvp` against `vjp` (the dot-product test), against finite differences
//! and against the dense `jacobian`.

use super::*;

/// Functions with tensor (or list) results, and their arguments' shapes.
const LINEARIZATION_SETUP: &str = r"
(seed! 12)
(define B (randn '(3 4)))
(define (softmax-of-linear x) (softmax (matmul B x)))
(define (broadcast-product x y) (* (sin x) (exp y)))
(define (gram m) (matmul (transpose m) (tanh m)))
(define (shifted x) (concat (list (roll x 1) (* x x) (slice x 1)) :axis 0))
(define (row-log-softmax x) (log-softmax (reshape x '(2 -1)) :axis 1))
(define (several x y) (list (sum (* x y)) (* x (cos y)) (max (outer x y) :axis 0)))
(define (stacked x y) (stack (list (* x y) (atan2 x (+ 2 (* y y))) (logsumexp (outer x y) :axis 1)) :axis 1))
(define (normalized x) (/ x (sqrt (sum (* x x)))))
";

const LINEARIZATION_CASES: &[(&str, &[&[usize]])] = &[
    ("softmax-of-linear", &[&[4]]),
    ("broadcast-product", &[&[2, 3], &[3]]),
    ("gram", &[&[3, 2]]),
    ("shifted", &[&[4]]),
    ("row-log-softmax", &[&[6]]),
    ("several", &[&[3], &[3]]),
    ("stacked", &[&[3], &[3]]),
    ("normalized", &[&[5]]),
];

/// A random value with the structure and shapes of `like`.
fn random_like(like: &Value, rng: &mut Rng) -> Result<Value, String> {
    if like.is_list() {
        let parts: Result<Vec<Value>, String> = items(like)?
            .iter()
            .map(|item| random_like(item, rng))
            .collect();
        return Ok(list_of(parts?));
    }
    Ok(value_of(&rng.array(array(like)?.shape(), R1)))
}

/// The dot-product test `<u, J v> = <Jᵀ u, v>`; `jvp` against a directional
/// finite difference; and for one argument and one tensor result, `J v`
/// and `uᵀ J` against the dense `(jacobian f)`.
fn check_linearization(
    engine: &mut Engine,
    name: &str,
    xs: &[ArrayD<f64>],
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng(seed);
    let f = try_eval(engine, name)?;
    let args: Vec<Value> = xs.iter().map(value_of).collect();
    let y = call(engine, &f, &args)?;
    let u = random_like(&y, &mut rng)?;
    let vs: Vec<ArrayD<f64>> = xs.iter().map(|x| rng.array(x.shape(), R1)).collect();

    let out = items(&call_named(
        engine,
        "jvp",
        &[
            f.clone(),
            list_of(args.clone()),
            list_of(vs.iter().map(value_of).collect()),
        ],
    )?)?;
    let jv = parts(&out[1])?;
    let out = items(&call_named(
        engine,
        "vjp",
        &[f.clone(), list_of(args.clone()), u.clone()],
    )?)?;
    let cotangents: Vec<ArrayD<f64>> = items(&out[1])?
        .iter()
        .map(array)
        .collect::<Result<_, _>>()?;
    let u_parts = parts(&u)?;
    if jv.len() != u_parts.len() {
        return Err(format!(
            "jvp gave {} parts, the function {}",
            jv.len(),
            u_parts.len()
        ));
    }
    let forward: f64 = u_parts.iter().zip(&jv).map(|(u, t)| dot(u, t)).sum();
    let reverse: f64 = cotangents.iter().zip(&vs).map(|(c, v)| dot(c, v)).sum();
    if !close(forward, reverse, EXACT_TOL) {
        return Err(format!("<u, J v> = {forward} but <J^T u, v> = {reverse}"));
    }

    let fd = fd_directional(engine, &f, xs, &vs)?;
    for (k, (t, want)) in jv.iter().zip(&fd).enumerate() {
        compare(
            &format!("jvp part {k} against finite differences"),
            t,
            want,
            FD_TOL,
        )?;
    }

    if let ([x], Value::Tensor(_)) = (xs, &y) {
        let jacobian = try_eval(engine, &format!("(jacobian {name})"))?;
        let j = array(&call(engine, &jacobian, &args)?)?;
        let (m, n) = (u_parts[0].len(), x.len());
        let j = square_rect(&j, m, n)?;
        let v = vs[0]
            .clone()
            .into_shape_with_order(n)
            .map_err(|e| e.to_string())?;
        let u = u_parts[0]
            .clone()
            .into_shape_with_order(m)
            .map_err(|e| e.to_string())?;
        let jv_dense = j
            .dot(&v)
            .into_shape_with_order(jv[0].raw_dim())
            .map_err(|e| e.to_string())?;
        compare("jacobian times v against jvp", &jv_dense, &jv[0], EXACT_TOL)?;
        let uj = u
            .dot(&j)
            .into_shape_with_order(x.raw_dim())
            .map_err(|e| e.to_string())?;
        compare(
            "u times jacobian against vjp",
            &uj,
            &cotangents[0],
            EXACT_TOL,
        )?;
    }
    Ok(())
}

fn square_rect(j: &ArrayD<f64>, m: usize, n: usize) -> Result<ndarray::Array2<f64>, String> {
    j.clone()
        .into_shape_with_order((m, n))
        .map_err(|e| format!("a Jacobian of shape {:?} is not {m} x {n}: {e}", j.shape()))
}

#[test]
fn jvp_agrees_with_vjp_and_the_dense_jacobian() {
    let mut engine = engine();
    eval(&mut engine, LINEARIZATION_SETUP);
    let engine = RefCell::new(engine);
    let mut failures = String::new();
    for &(name, shapes) in LINEARIZATION_CASES {
        let mut runner = TestRunner::new(op_config(16));
        let result = runner.run(&any::<u64>(), |seed| {
            let mut rng = Rng(seed);
            let xs: Vec<ArrayD<f64>> = shapes.iter().map(|s| rng.array(s, R2)).collect();
            check_linearization(&mut engine.borrow_mut(), name, &xs, rng.next_u64())
                .map_err(|m| TestCaseError::fail(format!("{name}: {m}")))
        });
        if let Err(error) = result {
            let _ = writeln!(failures, "{name}: {error}");
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

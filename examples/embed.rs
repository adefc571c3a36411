//! Embedding Epsilon in a Rust program: evaluate code, call Lisp functions,
//! register Rust functions, exchange numbers, strings, lists and ndarray
//! tensors, and compile a gradient to run on ndarray inputs. Run with `cargo run --release --example embed`.

use epsilon::{Engine, Value};
use ndarray::{ArrayD, arr1};

fn main() -> anyhow::Result<()> {
    let mut eps = Engine::new();

    // Evaluate source text; the value of the last form comes back.
    let three = eps.eval("(+ 1 2)")?;
    println!("(+ 1 2) = {three}");

    // Register a Rust function and use it from Lisp.
    eps.register_fn("square", |args: &[Value]| {
        let x = args[0].as_f64()?;
        Ok((x * x).into())
    })?;
    println!("(square 1.5) = {}", eps.eval("(square 1.5)")?);

    // Define a Lisp function, then call it from Rust with Rust values.
    let f = eps.eval("(lambda (x y) (* x (sin y)))")?;
    let value = eps.call(&f, &[2.0.into(), 0.5.into()])?;
    println!("f(2, 0.5) = {}", value.as_f64()?);

    // Tensors go both ways as ndarray::ArrayD<f64>.
    eps.eval("(define (normalise v) (/ v (sqrt (sum (* v v)))))")?;
    let v = arr1(&[3.0, 4.0]).into_dyn();
    let unit: ArrayD<f64> = eps.call_named("normalise", &[v.into()])?.try_into()?;
    println!("normalise([3, 4]) = {unit}");

    // Lists convert from and to Vec.
    let list: Value = vec![1i64, 2, 3].into();
    let total = eps.call_named("apply", &[eps.get("+").expect("+ is a builtin"), list])?;
    println!("(apply + '(1 2 3)) = {total}");

    // Numeric derivatives: `grad` on a Lisp function gives a function.
    let grad = eps.call_named("grad", std::slice::from_ref(&f))?;
    let d = eps.call(&grad, &[2.0.into(), 0.5.into()])?;
    println!("d f / d x at (2, 0.5) = {}", d.as_f64()?);

    // A gradient compiled once for fixed shapes, then run on ndarray inputs
    // with no interpreter in the loop.
    let tape = eps.compile_grad("(lambda (w) (sum (* w w)))", &[&[3]])?;
    let grads = tape.run(&[arr1(&[1.0, 2.0, 3.0]).into_dyn()])?;
    println!(
        "gradient of sum(w^2) at [1 2 3] = {} ({} tape instructions)",
        grads[0],
        tape.stats().instructions
    );

    // Symbolic derivatives: an `Expr` that prints as an s-expression.
    let derivative = epsilon::symbolic::diff("(* x (sin x))", "x")?;
    println!("d/dx x sin x = {derivative}");

    // The standard library comes with the engine: fit y = a exp(b t) to
    // three points of 2 exp(t) with L-BFGS.
    eps.eval(
        "(define (misfit p)
           (let ((model (* (index p 0) (exp (* (index p 1) [0 1 2])))))
             (sum (pow (- model [2.0 5.43656365691809 14.7781121978613]) 2))))",
    )?;
    let fitted: ArrayD<f64> = eps
        .eval("(lookup (minimize misfit [1.0 0.5]) 'x)")?
        .try_into()?;
    println!("fitted a = {:.6}, b = {:.6}", fitted[0], fitted[1]);

    // Errors are values with a location, never panics.
    match eps.eval("(car 5)") {
        Ok(v) => println!("unexpected: {v}"),
        Err(error) => println!("error as expected:\n{}", error.render()),
    }
    Ok(())
}

//! The array vocabulary of issue 16 that is not linear algebra:
//! `take-along` (an operation of the table with its adjoint
//! `put-along-add`), `cross`, `var`, `std`, `norm` (compositions of
//! existing operations) and `length`/`shape` of traced tensors. Each goes
//! through the table harness (`run_table`: reverse and forward mode
//! against finite differences, jit, scan, Hessians, batching), then
//! values against closed forms and numbers computed with NumPy, then bad
//! input (errors naming the shapes or the index, never a panic).
//! `einsum` has its own file, `table_einsum.rs`.

use super::ops::{arg, fixed, instance};
use super::table::run_table;
use super::*;

// ------------------------------------------------------------ take-along

#[test]
fn take_along_any_axis_with_broadcasting_positions() {
    run_table("take-along", true, |p| {
        let [a, b, c] = p.dims;
        // (t shape, idx shape, axis, length of the axis)
        let (t, idx, axis, len) = match p.variant % 4 {
            0 => (vec![a, b + 1], vec![a, c], -1, b + 1),
            1 => (vec![a + 1, b], vec![c, b], -2, a + 1),
            // The positions' first axis has length 1: shared by every row.
            2 => (vec![a + 1, b + 1, 2], vec![1, c, 2], -2, b + 1),
            // The tensor's first axis has length 1: broadcast to the
            // positions' rows.
            _ => (vec![1, b + 1], vec![a, c], -1, b + 1),
        };
        let len = len as i64;
        instance(
            format!("(lambda (t idx) (let ((y (take-along t idx :axis {axis}))) (* y (+ 1 y))))"),
            vec![arg(t, R2), fixed(idx, Domain::Whole(-len, len - 1))],
        )
    });
}

#[test]
fn take_along_values_as_numpy_gives_them() {
    let mut e = engine();
    // np.take_along_axis(a, np.array([[0, 2], [1, 1]]), axis=1)
    let picked = eval(
        &mut e,
        "(take-along [[10 11 12] [20 21 22]] [[0 2] [1 1]] :axis 1)",
    );
    assert_eq!(picked.to_string(), "[[10.0 12.0] [21.0 21.0]]");
    // The default axis is the last (NumPy 2.3); negative positions count
    // from the end.
    let last = eval(&mut e, "(take-along [[10 11 12] [20 21 22]] [[-1] [0]])");
    assert_eq!(last.to_string(), "[[12.0] [20.0]]");
    // Along axis 0 with positions broadcast over the columns.
    let rows = eval(&mut e, "(take-along [[1 2 3] [4 5 6]] [[1] [0]] :axis 0)");
    assert_eq!(rows.to_string(), "[[4.0 5.0 6.0] [1.0 2.0 3.0]]");
    // The row maxima, picked with argmax.
    let maxima = eval(
        &mut e,
        "(let ((x [[3 9 1] [7 2 8]])) (take-along x (argmax x :axis 1 :keepdims #t) :axis 1))",
    );
    assert_eq!(maxima.to_string(), "[[9.0] [8.0]]");
    // Its reverse adds the cotangent at repeated positions.
    let g = eval(
        &mut e,
        "((grad (lambda (x) (sum (take-along x [[0 0 2]] :axis 1)))) [[1.0 2.0 3.0]])",
    );
    assert_eq!(g.to_string(), "[[2.0 0.0 1.0]]");
    // Inside jit with the positions an argument, and in forward mode.
    let jitted = eval(
        &mut e,
        "((jit (lambda (x i) (take-along x i :axis 0))) [[1 2] [3 4]] [[1 0]])",
    );
    assert_eq!(jitted.to_string(), "[[3.0 2.0]]");
    let tangent = eval(
        &mut e,
        "(second (jvp (lambda (x) (take-along x [[1 1]] :axis 1)) (list [[1.0 2.0]]) (list [[10.0 20.0]])))",
    );
    assert_eq!(tangent.to_string(), "[[20.0 20.0]]");
}

#[test]
fn take_along_of_many_rows_runs_on_threads_and_agrees_with_a_loop() {
    // Sizes past the kernels' threshold for threads, against loops here.
    let (rows, len, m) = (20_000, 7, 3);
    let mut rng = Rng(5);
    let t = rng.array(&[rows, len], R2);
    let idx = rng.array(&[rows, m], Domain::Whole(-(len as i64), len as i64 - 1));
    let w = rng.array(&[rows, m], R1);
    let mut e = engine();
    e.set("*t*", value_of(&t));
    e.set("*idx*", value_of(&idx));
    e.set("*w*", value_of(&w));
    let at = |i: usize, j: usize| {
        let k = idx[[i, j]];
        if k < 0.0 {
            (k + len as f64) as usize
        } else {
            k as usize
        }
    };
    let picked = array(&eval(&mut e, "(take-along *t* *idx* :axis 1)")).unwrap();
    let want = ArrayD::from_shape_fn(IxDyn(&[rows, m]), |i| t[[i[0], at(i[0], i[1])]]);
    compare("take-along", &picked, &want, 0.0).unwrap();
    let g = array(&eval(
        &mut e,
        "((grad (lambda (t) (sum (* *w* (take-along t *idx* :axis 1))))) *t*)",
    ))
    .unwrap();
    let mut want = ArrayD::zeros(IxDyn(&[rows, len]));
    for i in 0..rows {
        for j in 0..m {
            want[[i, at(i, j)]] += w[[i, j]];
        }
    }
    compare("put-along-add", &g, &want, 1e-15).unwrap();
    // Along the first axis: rows of 20,000 numbers at each position.
    let columns = array(&eval(
        &mut e,
        "(take-along (transpose *t*) (transpose *idx*) :axis 0)",
    ))
    .unwrap();
    let want = ArrayD::from_shape_fn(IxDyn(&[m, rows]), |i| t[[i[1], at(i[1], i[0])]]);
    compare("take-along axis 0", &columns, &want, 0.0).unwrap();
}

#[test]
fn take_along_errors_name_the_index_and_the_shapes() {
    let mut e = engine();
    let cases = [
        ("(take-along [[1 2] [3 4]] [[0 2]] :axis 1)", "index 2"),
        ("(take-along [[1 2] [3 4]] [[0.5 1]] :axis 1)", "0.5"),
        ("(take-along [[1 2] [3 4]] [0 1])", "[2]"),
        (
            "(take-along [[1 2] [3 4]] [[0 1 0] [1 0 1] [0 0 0]] :axis 1)",
            "[2 2]",
        ),
        ("(take-along [[1 2] [3 4]] [[0]] :axis 2)", "axis 2"),
        ("(take-along 3 [0])", "number"),
        // Positions known only when the compiled function runs: the
        // kernel names the index.
        (
            "((jit (lambda (x i) (take-along x i))) [[1 2]] [[7]])",
            "index 7",
        ),
        (
            "((grad (lambda (x i) (sum (take-along x i)))) [[1 2]] [[-3]])",
            "index -3",
        ),
    ];
    for (source, needle) in cases {
        match e.eval(source) {
            Ok(value) => panic!("{source} gave {value}"),
            Err(error) => {
                let message = error.to_string();
                assert!(message.contains(needle), "{source}: {message}");
                // (The reverse's own kernel may be the one that finds it.)
                assert!(message.contains("along"), "{source}: {message}");
            }
        }
    }
}

// ------------------------------------------------------------ cross

#[test]
fn cross_of_vectors_and_broadcast_stacks() {
    run_table("cross", true, |p| {
        let n = p.dims[0];
        let (a, b) = match p.variant % 2 {
            0 => (vec![3], vec![3]),
            _ => (vec![n, 3], vec![n, 3]),
        };
        instance("(lambda (a b) (cross a b))", vec![arg(a, R2), arg(b, R2)])
    });
    // One vector against a stack (not batched: the ranks differ).
    run_table("cross broadcast", false, |p| {
        let n = p.dims[0];
        instance(
            "(lambda (a b) (cross a b))",
            vec![arg(vec![n, 3], R2), arg(vec![3], R2)],
        )
    });
}

#[test]
fn cross_values_follow_the_right_hand_rule() {
    let mut e = engine();
    assert_eq!(
        eval(&mut e, "(cross [1 0 0] [0 1 0])").to_string(),
        "[0.0 0.0 1.0]"
    );
    assert_eq!(
        eval(&mut e, "(cross [0 1 0] [1 0 0])").to_string(),
        "[0.0 0.0 -1.0]"
    );
    // np.cross([[1, 2, 3], [4, 5, 6]], [7, 8, 10])
    assert_eq!(
        eval(&mut e, "(cross [[1 2 3] [4 5 6]] [7 8 10])").to_string(),
        "[[-4.0 11.0 -6.0] [2.0 2.0 -3.0]]"
    );
    // a . (a x b) = 0 for random a, b.
    let dot = eval(
        &mut e,
        "(seed! 3) (let ((a (randn '(5 3))) (b (randn '(5 3)))) (max (abs (sum (* a (cross a b)) :axis 1))))",
    );
    assert!(dot.as_f64().unwrap() < 1e-12, "{dot}");
    for (source, needle) in [
        ("(cross [1 2] [3 4])", "[2] and [2]"),
        (
            "(cross [[1 2 3] [4 5 6]] [[1 2 3] [4 5 6] [7 8 9]])",
            "[2 3] and [3 3]",
        ),
        ("(cross 1 [1 2 3])", "[] and [3]"),
    ] {
        let message = e.eval(source).unwrap_err().to_string();
        assert!(message.contains(needle), "{source}: {message}");
    }
}

// ------------------------------------------------------------ var and std

/// `(op x :axis ... :ddof ... :keepdims ...)` for a variant.
fn spread_source(op: &str, variant: usize) -> String {
    let axis = match variant % 4 {
        0 => "",
        1 => " :axis 0",
        2 => " :axis -1",
        _ => " :axis '(0 1)",
    };
    let ddof = if (variant / 4).is_multiple_of(2) {
        ""
    } else {
        " :ddof 1"
    };
    let keep = if (variant / 8).is_multiple_of(2) {
        ""
    } else {
        " :keepdims #t"
    };
    format!("(lambda (x) ({op} x{axis}{ddof}{keep}))")
}

#[test]
fn var_every_axis_ddof_and_keepdims() {
    run_table("var", false, |p| {
        let [a, b, _] = p.dims;
        instance(
            spread_source("var", p.variant),
            vec![arg(vec![a + 1, b + 1], R2)],
        )
    });
}

#[test]
fn std_every_axis_ddof_and_keepdims() {
    run_table("std", false, |p| {
        let [a, b, _] = p.dims;
        instance(
            spread_source("std", p.variant),
            vec![arg(vec![a + 1, b + 1], R2)],
        )
    });
}

#[test]
fn var_and_std_values_as_numpy_gives_them() {
    let mut e = engine();
    let x = "[[1 2 4] [3 5 9]]";
    // Numbers from np.var / np.std with the same arguments.
    let cases = [
        (format!("(var {x})"), "6.666666666666667"),
        (format!("(var {x} :ddof 1)"), "8.0"),
        (format!("(var {x} :axis 0)"), "[1.0 2.25 6.25]"),
        (
            format!("(var {x} :axis 1 :ddof 1)"),
            "[2.333333333333333 9.333333333333334]",
        ),
        (
            format!("(var {x} :axis 1 :keepdims #t)"),
            "[[1.5555555555555556] [6.222222222222221]]",
        ),
        (format!("(std {x} :axis 0)"), "[1.0 1.5 2.5]"),
        (format!("(std {x})"), "2.581988897471611"),
        ("(var 3.0)".to_string(), "0.0"),
    ];
    for (source, want) in cases {
        let got = parts(&eval(&mut e, &source)).unwrap();
        let want = parts(&eval(&mut e, want)).unwrap();
        compare(&source, &got[0], &want[0], 1e-12).unwrap();
    }
    // The gradient of std where all elements are equal is 0, not NaN, in
    // both modes and compiled.
    for source in [
        "((grad (lambda (x) (std x))) [2.0 2.0 2.0])",
        "((jit (grad (lambda (x) (sum (std x :axis 1))))) [[1.0 1.0] [3.0 3.0]])",
        "(second (jvp (lambda (x) (std x)) (list [2.0 2.0]) (list [1.0 -1.0])))",
    ] {
        let g = parts(&eval(&mut e, source)).unwrap();
        assert!(g[0].iter().all(|v| *v == 0.0), "{source}: {}", g[0]);
    }
}

// ------------------------------------------------------------ norm

#[test]
fn vector_norms_of_every_order() {
    run_table("norm (vector)", true, |p| {
        let [a, b, _] = p.dims;
        let ord = ["2", "1", "inf", "-inf", "3", "0.5", "-1", "0"][p.variant % 8];
        let shape = if (p.variant / 8).is_multiple_of(2) {
            vec![a + 1]
        } else {
            vec![a + 1, b + 1]
        };
        instance(
            format!("(lambda (x) (norm x :ord {ord} :axis -1))"),
            vec![arg(shape, AWAY)],
        )
    });
}

#[test]
fn matrix_norms_of_every_order() {
    run_table("norm (matrix)", true, |p| {
        let [a, b, _] = p.dims;
        let ord = ["'fro", "1", "-1", "inf", "-inf"][p.variant % 5];
        instance(
            format!("(lambda (x) (norm x :ord {ord} :axis '(-2 -1)))"),
            vec![arg(vec![a + 1, b + 1], AWAY)],
        )
    });
}

#[test]
fn norm_values_as_numpy_gives_them() {
    let mut e = engine();
    let m = "[[1 -2 3] [-4 5 -6]]";
    // Numbers from np.linalg.norm with the same arguments.
    let cases = [
        ("(norm [3 4])".to_string(), "5.0"),
        (format!("(norm {m})"), "9.539392014169456"),
        (format!("(norm {m} :ord 'fro)"), "9.539392014169456"),
        (format!("(norm {m} :ord 1)"), "9.0"),
        (format!("(norm {m} :ord -1)"), "5.0"),
        (format!("(norm {m} :ord inf)"), "15.0"),
        (format!("(norm {m} :ord -inf)"), "6.0"),
        (
            format!("(norm {m} :axis 1)"),
            "[3.7416573867739413 8.774964387392123]",
        ),
        (format!("(norm {m} :axis 0 :ord 1)"), "[5.0 7.0 9.0]"),
        (format!("(norm {m} :axis 1 :ord inf)"), "[3.0 6.0]"),
        (format!("(norm {m} :axis 1 :ord -inf)"), "[1.0 4.0]"),
        (
            format!("(norm {m} :axis 1 :ord 3)"),
            "[3.3019272488946263 7.398636222991409]",
        ),
        (
            format!("(norm {m} :axis 1 :ord 0.5)"),
            "[17.191508225450303 44.69668203123519]",
        ),
        (
            format!("(norm {m} :axis 1 :ord -1)"),
            "[0.5454545454545455 1.6216216216216215]",
        ),
        ("(norm [0 2 0 3] :ord 0)".to_string(), "2.0"),
        ("(norm [0 2 0 3] :ord -1)".to_string(), "0.0"),
        (
            format!("(norm {m} :axis 1 :keepdims #t)"),
            "[[3.7416573867739413] [8.774964387392123]]",
        ),
        (
            format!("(norm (reshape (tensor {m} {m}) '(2 2 3)) :ord 1 :axis '(1 2))"),
            "[9.0 9.0]",
        ),
    ];
    for (source, want) in cases {
        let got = parts(&eval(&mut e, &source)).unwrap();
        let want = parts(&eval(&mut e, want)).unwrap();
        compare(&source, &got[0], &want[0], 1e-12).unwrap();
    }
}

#[test]
fn norm_gradients_at_the_origin_are_finite() {
    let mut e = engine();
    for ord in ["2", "1", "inf", "3", "0.5", "-1", "0"] {
        for (mode, source) in [
            (
                "grad",
                format!("((grad (lambda (x) (norm x :ord {ord}))) [0.0 0.0 0.0])"),
            ),
            (
                "jit",
                format!("((jit (grad (lambda (x) (norm x :ord {ord})))) [0.0 0.0])"),
            ),
            (
                "jvp",
                format!(
                    "(second (jvp (lambda (x) (norm x :ord {ord})) (list [0.0 0.0]) (list [1.0 2.0])))"
                ),
            ),
            (
                "grad of a matrix",
                "((grad (lambda (x) (norm x :ord 'fro))) [[0.0 0.0] [0.0 0.0]])".to_string(),
            ),
        ] {
            let g = parts(&eval(&mut e, &source)).unwrap();
            assert!(
                g[0].iter().all(|v| v.is_finite()),
                "{mode} {source}: {}",
                g[0]
            );
        }
    }
    // Away from the origin the 2-norm's gradient is x / |x|, one zero
    // element included.
    let g = array(&eval(
        &mut e,
        "((grad (lambda (x) (norm x))) [3.0 0.0 -4.0])",
    ))
    .unwrap();
    let want = ndarray::arr1(&[0.6, 0.0, -0.8]).into_dyn();
    compare("gradient of the 2-norm", &g, &want, 1e-15).unwrap();
}

#[test]
fn norm_errors_are_clear() {
    let mut e = engine();
    for (source, needle) in [
        ("(norm [[1 2] [3 4]] :ord 2)", "singular values"),
        ("(norm [[1 2] [3 4]] :ord 'nuc)", "singular values"),
        ("(norm [1 2] :ord 'spectral)", ":ord"),
        ("(norm (zeros '(2 2 2)) :ord 1)", "[2 2 2]"),
        ("(norm [1 2] :ord 'fro :axis 0)", "matrix norms"),
        ("(norm [[1 2] [3 4]] :axis '(0 0))", "two different axes"),
        ("(norm [[1 2] [3 4]] :axis 2)", "axis 2"),
    ] {
        let message = e.eval(source).unwrap_err().to_string();
        assert!(message.contains(needle), "{source}: {message}");
        assert!(message.contains("norm"), "{source}: {message}");
    }
}

// ------------------------------------------------------------ length, shape

#[test]
fn length_and_shape_of_traced_tensors_are_static() {
    let mut e = engine();
    let cases = [
        (
            "((grad (lambda (x) (* (length x) (sum x)))) [1.0 2.0 3.0])",
            "[3.0 3.0 3.0]",
        ),
        (
            "((jit (lambda (x) (/ (sum x :axis 0) (length x)))) [[1.0 2.0] [3.0 4.0]])",
            "[2.0 3.0]",
        ),
        (
            "((grad (lambda (x) (* (apply * (shape x)) (sum x)))) [[1.0 2.0]])",
            "[[2.0 2.0]]",
        ),
        (
            "((jit (lambda (x) (reshape x (list (length x) (/ (size x) (length x)))))) [1 2 3 4])",
            "[[1.0] [2.0] [3.0] [4.0]]",
        ),
        (
            "((grad (lambda (x) (scan (lambda (s i) (+ s (* (length x) (sum x)))) 0.0 2))) [1.0 1.0])",
            "[4.0 4.0]",
        ),
        (
            "(second (jvp (lambda (x) (* (length x) x)) (list [1.0 2.0]) (list [1.0 1.0])))",
            "[2.0 2.0]",
        ),
    ];
    for (source, want) in cases {
        assert_eq!(eval(&mut e, source).to_string(), want, "{source}");
    }
    // A traced number has no length, as an untraced one has none.
    let message = e
        .eval("((grad (lambda (x) (* x (length x)))) 2.0)")
        .unwrap_err()
        .to_string();
    assert!(message.contains("length"), "{message}");
}

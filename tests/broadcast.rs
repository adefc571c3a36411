//! NumPy broadcasting of the elementwise built-ins, checked against arrays
//! computed by hand.

use epsilon::{Engine, Value};
use ndarray::{ArrayD, IxDyn, arr1, arr2, arr3};

fn eval(engine: &mut Engine, text: &str) -> Value {
    engine
        .eval(text)
        .unwrap_or_else(|e| panic!("{text}: {}", e.render()))
}

fn tensor(engine: &mut Engine, text: &str) -> ArrayD<f64> {
    ArrayD::<f64>::try_from(eval(engine, text)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn column_plus_row_gives_the_outer_sum() {
    let mut eps = Engine::new();
    let got = tensor(&mut eps, "(+ [[1] [2]] [10 20 30])");
    assert_eq!(
        got,
        arr2(&[[11.0, 21.0, 31.0], [12.0, 22.0, 32.0]]).into_dyn()
    );
}

#[test]
fn scalars_broadcast_against_every_element() {
    let mut eps = Engine::new();
    assert_eq!(
        tensor(&mut eps, "(* 2 [1 2 3])"),
        arr1(&[2.0, 4.0, 6.0]).into_dyn()
    );
    assert_eq!(
        tensor(&mut eps, "(- [1 2 3] 1.5)"),
        arr1(&[-0.5, 0.5, 1.5]).into_dyn()
    );
    assert_eq!(
        tensor(&mut eps, "(/ [1 2] 4)"),
        arr1(&[0.25, 0.5]).into_dyn()
    );
    assert_eq!(
        tensor(&mut eps, "(pow [1 2 3] 2)"),
        arr1(&[1.0, 4.0, 9.0]).into_dyn()
    );
}

#[test]
fn leading_axes_are_added_on_the_left() {
    let mut eps = Engine::new();
    let got = tensor(&mut eps, "(+ (reshape (arange 12) '(2 2 3)) [100 200 300])");
    let expected = arr3(&[
        [[100.0, 201.0, 302.0], [103.0, 204.0, 305.0]],
        [[106.0, 207.0, 308.0], [109.0, 210.0, 311.0]],
    ]);
    assert_eq!(got, expected.into_dyn());
}

#[test]
fn unit_axes_stretch_in_the_middle() {
    let mut eps = Engine::new();
    // shape (2 1 2) times shape (3 1) -> (2 3 2)
    let got = tensor(
        &mut eps,
        "(* (reshape [1 2 3 4] '(2 1 2)) (reshape [1 10 100] '(3 1)))",
    );
    let expected = arr3(&[
        [[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]],
        [[3.0, 4.0], [30.0, 40.0], [300.0, 400.0]],
    ]);
    assert_eq!(got, expected.into_dyn());
}

#[test]
fn binary_math_functions_broadcast() {
    let mut eps = Engine::new();
    let got = tensor(&mut eps, "(max [[1 5] [7 2]] [3 4])");
    assert_eq!(got, arr2(&[[3.0, 5.0], [7.0, 4.0]]).into_dyn());
    let got = tensor(&mut eps, "(atan2 [1 -1] [[1] [-1]])");
    let q = std::f64::consts::FRAC_PI_4;
    assert_eq!(got, arr2(&[[q, -q], [3.0 * q, -3.0 * q]]).into_dyn());
    let got = tensor(&mut eps, "(clamp [[-5 0.5] [2 9]] [0 0] [1 3])");
    assert_eq!(got, arr2(&[[0.0, 0.5], [1.0, 3.0]]).into_dyn());
    let got = tensor(&mut eps, "(mod [5 -5] [[3] [-3]])");
    assert_eq!(got, arr2(&[[2.0, 1.0], [-1.0, -2.0]]).into_dyn());
}

#[test]
fn comparisons_broadcast_to_masks_that_where_accepts() {
    let mut eps = Engine::new();
    let mask = tensor(&mut eps, "(< [[1] [4]] [2 3 4])");
    assert_eq!(mask, arr2(&[[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]).into_dyn());
    let chosen = tensor(&mut eps, "(where (< [[1] [4]] [2 3 4]) 1 [7 8 9])");
    assert_eq!(chosen, arr2(&[[1.0, 1.0, 1.0], [7.0, 8.0, 9.0]]).into_dyn());
}

#[test]
fn broadcast_to_and_zero_size_axes() {
    let mut eps = Engine::new();
    assert_eq!(
        tensor(&mut eps, "(broadcast-to [[1] [2]] '(2 3))"),
        arr2(&[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]).into_dyn()
    );
    let empty = tensor(&mut eps, "(+ (zeros '(0 3)) [1 2 3])");
    assert_eq!(empty.shape(), &[0, 3]);
    let empty = tensor(&mut eps, "(+ (zeros '(2 0)) (ones '(2 1)))");
    assert_eq!(empty, ArrayD::<f64>::zeros(IxDyn(&[2, 0])));
}

#[test]
fn incompatible_shapes_are_a_shape_error_naming_both() {
    let mut eps = Engine::new();
    for (text, shapes) in [
        ("(+ [1 2] [1 2 3])", "[2] and [3]"),
        ("(* (ones '(2 3)) (ones '(3 2)))", "[2 3] and [3 2]"),
        ("(where [1 0] [1 2 3] 0)", "[2] and [3]"),
    ] {
        let error = eps.eval(text).unwrap_err();
        assert_eq!(error.kind(), epsilon::EvalErrorKind::Shape, "{text}");
        assert!(
            error.message().contains(shapes),
            "{text}: {}",
            error.message()
        );
        assert!(error.render().starts_with("<eval>:1:1: error:"), "{error}");
    }
    let error = eps.eval("(broadcast-to [1 2] '(3))").unwrap_err();
    assert!(
        error
            .message()
            .contains("cannot broadcast shape [2] to [3]"),
        "{}",
        error.message()
    );
}

#[test]
fn large_tensors_take_the_parallel_path_with_the_same_result() {
    let mut eps = Engine::new();
    let got = tensor(
        &mut eps,
        "(+ (reshape (arange 200000) '(1000 200)) (arange 200))",
    );
    let expected =
        ArrayD::from_shape_fn(IxDyn(&[1000, 200]), |i| (i[0] * 200 + i[1] + i[1]) as f64);
    assert_eq!(got, expected);
}

//! Property: printing any value and reading the text back gives the same
//! value (for every printable kind: numbers, strings, symbols, keywords,
//! booleans, nested lists, dotted pairs and tensors up to 100 elements).

use epsilon::lisp::Value;
use epsilon::lisp::builtins::compare::equal;
use epsilon::lisp::convert::sexp_to_value;
use epsilon::lisp::printer::write_string;
use epsilon::reader::{FileId, read_all};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(0.0),
        Just(-0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::NAN),
        (-1e6..1e6f64),
    ]
}

fn symbol() -> impl Strategy<Value = String> {
    "[a-zA-Z*+!?<>=/_-][a-zA-Z0-9*+!?<>=/_.-]{0,8}".prop_filter("reads as another datum", |s| {
        let reserved = [
            "nil", "true", "false", "inf", "+inf", "-inf", "nan", "+nan", "-nan",
        ];
        let sign_then_number = s.starts_with(['+', '-'])
            && s[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.');
        !reserved.contains(&s.as_str()) && !sign_then_number
    })
}

fn tensor() -> impl Strategy<Value = Value> {
    prop::collection::vec(1usize..5, 1..4).prop_flat_map(|shape| {
        let len: usize = shape.iter().product();
        prop::collection::vec(float(), len).prop_map(move |values| {
            Value::tensor(ArrayD::from_shape_vec(IxDyn(&shape), values).expect("shape matches"))
        })
    })
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        float().prop_map(Value::Float),
        any::<bool>().prop_map(Value::Bool),
        any::<String>().prop_map(Value::string),
        symbol().prop_map(|s| Value::symbol(&s)),
        symbol().prop_map(|s| Value::Keyword(epsilon::lisp::Symbol::intern(&s))),
        Just(Value::Nil),
        tensor(),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
            (prop::collection::vec(inner.clone(), 1..4), inner)
                .prop_filter("a dotted tail must not be a list", |(_, tail)| !tail
                    .is_list())
                .prop_map(|(items, tail)| Value::list_with_tail(items, tail)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn printing_then_reading_gives_the_same_value(original in value()) {
        let text = write_string(&original);
        let data = read_all(&text, FileId(0)).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(data.len(), 1, "{}", text);
        let back = sexp_to_value(&data[0]);
        prop_assert!(equal(&original, &back), "{} read back as {}", text, write_string(&back));
        if let (Value::Float(a), Value::Float(b)) = (&original, &back) {
            prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{}", text);
        }
    }
}

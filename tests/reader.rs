//! The reader: every datum of SPEC section 1, spans, round trips through the
//! printer, and every read error with the place it points at.

use epsilon::lisp::convert::sexp_to_value;
use epsilon::lisp::printer::write_string;
use epsilon::reader::{FileId, MAX_NESTING, ReadError, ReadErrorKind, Sexp, SexpKind, read_all};

fn read_one(text: &str) -> Sexp {
    let mut data = read_all(text, FileId(0)).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(data.len(), 1, "{text:?} should hold one datum");
    data.remove(0)
}

fn read_error(text: &str) -> ReadError {
    match read_all(text, FileId(0)) {
        Ok(data) => panic!("{text:?} should not read, got {} data", data.len()),
        Err(error) => error,
    }
}

/// Reads `text`, prints the value, and returns the printed form.
fn printed(text: &str) -> String {
    write_string(&sexp_to_value(&read_one(text)))
}

#[test]
fn numbers_read_as_integers_or_floats() {
    let cases: &[(&str, SexpKind)] = &[
        ("42", SexpKind::Int(42)),
        ("-7", SexpKind::Int(-7)),
        ("+5", SexpKind::Int(5)),
        ("1.5", SexpKind::Float(1.5)),
        ("-2e-3", SexpKind::Float(-2e-3)),
        ("3.", SexpKind::Float(3.0)),
        (".5", SexpKind::Float(0.5)),
        ("1e16", SexpKind::Float(1e16)),
        ("inf", SexpKind::Float(f64::INFINITY)),
        ("-inf", SexpKind::Float(f64::NEG_INFINITY)),
        ("9223372036854775807", SexpKind::Int(i64::MAX)),
        ("-9223372036854775808", SexpKind::Int(i64::MIN)),
    ];
    for (text, expected) in cases {
        assert_eq!(&read_one(text).kind, expected, "{text}");
    }
    assert!(matches!(read_one("nan").kind, SexpKind::Float(x) if x.is_nan()));
}

#[test]
fn atoms_of_every_kind() {
    assert_eq!(read_one("#t").kind, SexpKind::Bool(true));
    assert_eq!(read_one("#f").kind, SexpKind::Bool(false));
    assert_eq!(read_one("true").kind, SexpKind::Bool(true));
    assert_eq!(read_one("false").kind, SexpKind::Bool(false));
    assert_eq!(read_one("nil").kind, SexpKind::List(vec![], None));
    assert_eq!(read_one("()").kind, SexpKind::List(vec![], None));
    assert_eq!(
        read_one(r#""a\n\"b\"""#).kind,
        SexpKind::Str("a\n\"b\"".into())
    );
    assert_eq!(
        read_one(r#""\t\\\u{3b5}""#).kind,
        SexpKind::Str("\t\\ε".into())
    );
    for symbol in ["foo", "+", "set!", "->", "x1", "-", "...", "<=", "a.b", "ε"] {
        assert_eq!(
            read_one(symbol).kind,
            SexpKind::Symbol(symbol.into()),
            "{symbol}"
        );
    }
    assert_eq!(read_one(":wrt").kind, SexpKind::Keyword("wrt".into()));
}

#[test]
fn quote_marks_expand_to_lists() {
    assert_eq!(printed("'x"), "(quote x)");
    assert_eq!(
        printed("`(a ,b ,@c)"),
        "(quasiquote (a (unquote b) (unquote-splicing c)))"
    );
    assert_eq!(printed("''x"), "(quote (quote x))");
}

#[test]
fn brackets_of_literals_are_tensors_and_others_stay_forms() {
    assert_eq!(printed("[1 2 3]"), "[1.0 2.0 3.0]");
    assert_eq!(printed("[[1 2] [3 4]]"), "[[1.0 2.0] [3.0 4.0]]");
    assert_eq!(printed("[]"), "[]");
    assert_eq!(printed("[x (+ y 1)]"), "[x (+ y 1)]");
    assert_eq!(
        printed("[[1 2] [3]]"),
        "[[1.0 2.0] [3.0]]",
        "a ragged literal stays a form"
    );
}

#[test]
fn comments_are_skipped() {
    let data = read_all(
        "; line\n1 #| block #| nested |# |# 2 #;(skipped datum) 3",
        FileId(0),
    )
    .unwrap();
    let values: Vec<_> = data.iter().map(|d| d.kind.clone()).collect();
    assert_eq!(
        values,
        vec![SexpKind::Int(1), SexpKind::Int(2), SexpKind::Int(3)]
    );
}

#[test]
fn dotted_lists() {
    assert_eq!(printed("(a . b)"), "(a . b)");
    assert_eq!(printed("(a b . (c d))"), "(a b c d)");
    assert_eq!(
        printed("(lambda (x . rest) rest)"),
        "(lambda (x . rest) rest)"
    );
}

#[test]
fn printing_then_reading_gives_the_same_text() {
    let texts = [
        "(define (f x y) (* x (sin y)))",
        "(1 2.5 -0.0 1e-10 1e16 inf -inf nan \"s\\n\" #t #f :k ())",
        "[[1.0 2.0] [3.0 4.0]]",
        "(quasiquote (a (unquote b)))",
        "(a . b)",
        "\"quote \\\" and backslash \\\\\"",
    ];
    for text in texts {
        let once = printed(text);
        assert_eq!(printed(&once), once, "{text}");
    }
}

#[test]
fn spans_give_line_and_column_of_each_datum() {
    let text = "(define x\n  (+ 1\n     foo))\n\"two\" 3";
    let data = read_all(text, FileId(7)).unwrap();
    assert_eq!(data.len(), 3);
    let define = &data[0];
    assert_eq!(
        (define.span.file, define.span.line, define.span.col),
        (FileId(7), 1, 1)
    );
    assert_eq!(define.span.len as usize, text.find("))").unwrap() + 2);
    let SexpKind::List(items, _) = &define.kind else {
        panic!("a list")
    };
    assert_eq!((items[1].span.line, items[1].span.col), (1, 9));
    let SexpKind::List(inner, _) = &items[2].kind else {
        panic!("a list")
    };
    assert_eq!((items[2].span.line, items[2].span.col), (2, 3));
    assert_eq!(
        (inner[2].span.line, inner[2].span.col, inner[2].span.len),
        (3, 6, 3)
    );
    assert_eq!(
        (data[1].span.line, data[1].span.col, data[1].span.len),
        (4, 1, 5)
    );
    assert_eq!((data[2].span.line, data[2].span.col), (4, 7));
}

#[test]
fn columns_count_characters_not_bytes() {
    let data = read_all("(\"εε\" x)", FileId(0)).unwrap();
    let SexpKind::List(items, _) = &data[0].kind else {
        panic!("a list")
    };
    assert_eq!(items[1].span.col, 7);
}

/// (text, expected kind, line, col, incomplete?)
#[test]
fn every_read_error_points_at_its_place() {
    let cases: Vec<(&str, ReadErrorKind, u32, u32, bool)> = vec![
        (
            "(+ 1\n (* 2 3)",
            ReadErrorKind::Unclosed('(', ')'),
            1,
            1,
            true,
        ),
        ("[1 2", ReadErrorKind::Unclosed('[', ']'), 1, 1, true),
        ("(a))", ReadErrorKind::UnexpectedClose(')'), 1, 4, false),
        ("x ]", ReadErrorKind::UnexpectedClose(']'), 1, 3, false),
        (
            "(a]",
            ReadErrorKind::MismatchedClose {
                open: '(',
                found: ']',
                open_at: "1:1".into(),
            },
            1,
            3,
            false,
        ),
        ("\"abc", ReadErrorKind::UnterminatedString, 1, 1, true),
        (
            "x\n  #| never closed",
            ReadErrorKind::UnterminatedComment,
            2,
            3,
            true,
        ),
        ("'", ReadErrorKind::EndAfterPrefix("'".into()), 1, 1, true),
        (
            "(f #;",
            ReadErrorKind::EndAfterPrefix("#;".into()),
            1,
            4,
            true,
        ),
        (
            "(a ,)",
            ReadErrorKind::MissingDatum(",".into()),
            1,
            4,
            false,
        ),
        (
            "12abc",
            ReadErrorKind::BadNumber("12abc".into()),
            1,
            1,
            false,
        ),
        ("(f 1e)", ReadErrorKind::BadNumber("1e".into()), 1, 4, false),
        (
            "1.2.3",
            ReadErrorKind::BadNumber("1.2.3".into()),
            1,
            1,
            false,
        ),
        (
            "99999999999999999999",
            ReadErrorKind::IntegerOverflow("99999999999999999999".into()),
            1,
            1,
            false,
        ),
        (
            "\"a\\qb\"",
            ReadErrorKind::BadEscape("q".into()),
            1,
            3,
            false,
        ),
        (
            "\"\\u{110000}\"",
            ReadErrorKind::BadEscape("u{110000}".into()),
            1,
            2,
            false,
        ),
        ("(. a)", ReadErrorKind::BadDot, 1, 2, false),
        ("(a . b c)", ReadErrorKind::BadDot, 1, 8, false),
        ("(a .)", ReadErrorKind::BadDot, 1, 4, false),
        ("[a . b]", ReadErrorKind::BadDot, 1, 4, false),
        ("{1}", ReadErrorKind::UnexpectedChar('{'), 1, 1, false),
        ("#x", ReadErrorKind::BadHash("x".into()), 1, 1, false),
    ];
    for (text, kind, line, col, incomplete) in cases {
        let error = read_error(text);
        assert_eq!(error.kind, kind, "{text:?}");
        assert_eq!(
            (error.span.line, error.span.col),
            (line, col),
            "{text:?}: {}",
            error.kind
        );
        assert_eq!(error.is_incomplete(), incomplete, "{text:?}");
        assert!(!error.kind.to_string().is_empty());
    }
}

#[test]
fn nesting_beyond_the_limit_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let error = read_error(&deep);
    assert_eq!(error.kind, ReadErrorKind::TooDeep(MAX_NESTING));
    assert_eq!(
        (error.span.line, error.span.col),
        (1, MAX_NESTING as u32 + 1)
    );
    let quotes = format!("{}x", "'".repeat(100_000));
    assert_eq!(
        read_error(&quotes).kind,
        ReadErrorKind::TooDeep(MAX_NESTING)
    );
}

#[test]
fn nesting_just_under_the_limit_reads_and_drops_without_overflow() {
    let depth = MAX_NESTING - 1;
    let text = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    let datum = read_one(&text);
    let value = sexp_to_value(&datum);
    assert!(write_string(&value).starts_with("(((("));
}

#[test]
fn a_long_single_line_reads_in_linear_time() {
    let text = format!("(+ {})", "1 ".repeat(2_000_000));
    let datum = read_one(&text);
    let SexpKind::List(items, _) = &datum.kind else {
        panic!("a list")
    };
    assert_eq!(items.len(), 2_000_001);
}

//! Malformed and extreme programs: random character mutations of a
//! well-formed program, truncations, unbalanced brackets, special forms
//! of the wrong shape, and nesting thousands of levels deep, both in the
//! source text (up to the reader's limit and past it) and in data built
//! at run time (deeper than any source can be).

use super::generator::Gen;
use super::rng::Rng;

/// Characters a mutation inserts: the syntax, and a few that are not.
const NOISE: &[&str] = &[
    "(", ")", "[", "]", "'", "`", ",", ",@", "\"", "#", ";", ":", ".", " . ", "#|", "|#", "#;",
    "\\", "0", "-", "9", "e", "x", " ", "\n", "é", "\u{0}", "\u{feff}", "🦀", "#t", "nan",
];

/// `text` with one to four random edits: a character replaced, deleted
/// or inserted, or a slice duplicated.
pub fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..rng.between(1, 4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(4) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 if at < chars.len() => {
                let noise: Vec<char> = rng.pick(NOISE).chars().collect();
                chars.splice(at..at + 1, noise);
            }
            2 if at < chars.len() => {
                let end = rng.between(at, chars.len());
                let copy: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, copy);
            }
            _ => {
                let noise: Vec<char> = rng.pick(NOISE).chars().collect();
                chars.splice(at..at, noise);
            }
        }
    }
    chars.into_iter().collect()
}

/// The first part of `text`, cut anywhere.
pub fn truncate(rng: &mut Rng, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars[..rng.below(chars.len() + 1)].iter().collect()
}

/// `text` with brackets added or removed.
pub fn unbalance(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..rng.between(1, 3) {
        let brackets: Vec<usize> = (0..chars.len())
            .filter(|&i| "()[]".contains(chars[i]))
            .collect();
        if !brackets.is_empty() && rng.chance(0.5) {
            chars.remove(*rng.pick(&brackets));
        } else {
            let at = rng.below(chars.len() + 1);
            chars.insert(at, *rng.pick(&['(', ')', '[', ']']));
        }
    }
    chars.into_iter().collect()
}

/// Heads of special forms (and the prelude's macros) given shapes they
/// do not take.
const FORMS: &[&str] = &[
    "define",
    "set!",
    "lambda",
    "fn",
    "let",
    "let*",
    "letrec",
    "if",
    "cond",
    "when",
    "unless",
    "and",
    "or",
    "begin",
    "while",
    "defmacro",
    "try",
    "time",
    "quote",
    "quasiquote",
    "unquote",
    "unquote-splicing",
    "dotimes",
    "dolist",
    "->",
    "assert",
    "defderiv",
    "defrule",
    "catch",
];

/// Fixed wrong shapes, each a classic.
const WRONG_SHAPES: &[&str] = &[
    "(define)",
    "(define 1 2)",
    "(define (1 x) x)",
    "(define (f . 1) 1)",
    "(define (f x) )",
    "(lambda)",
    "(lambda x)",
    "(lambda (1) 1)",
    "((lambda (x x) x) 1 2)",
    "((lambda (x . ) x) 1)",
    "((lambda (&rest) 1))",
    "(let)",
    "(let x)",
    "(let ((x)) x)",
    "(let ((1 2)) 1)",
    "(let ((x 1 2)) x)",
    "(let loop)",
    "(let loop ((i)) i)",
    "(let loop ((i 0)))",
    "(let* x 1)",
    "(letrec ((f)) f)",
    "(letrec (f 1) f)",
    "(if)",
    "(if 1 2 3 4)",
    "(cond)",
    "(cond 1)",
    "(cond (else))",
    "(cond (1 =>))",
    "(cond (else 1) (2 3))",
    "(set!)",
    "(set! 1 2)",
    "(set! never-defined 1)",
    "(set! car 1 2)",
    "(while)",
    "(try)",
    "(try 1)",
    "(try 1 (catch))",
    "(try 1 (catch (e f) e))",
    "(try 1 (catch e e))",
    "(try (catch (e) e))",
    "(try (error \"x\") (catch (e) e) (catch (e) e))",
    "(defmacro)",
    "(defmacro m)",
    "(defmacro m (1) 1)",
    "(defmacro m (a) a) (m)",
    "(defmacro m (a) (car a)) (m 1)",
    "(quasiquote)",
    "(quote)",
    "(quote 1 2)",
    ",x",
    ",@x",
    "`(,@1)",
    "`(1 ,@2 3)",
    "`(1 . ,@(list 2))",
    "(unquote 1)",
    "(dotimes)",
    "(dotimes (i))",
    "(dotimes (i -5) i)",
    "(dolist (x 5) x)",
    "(-> )",
    "(define-with-derivatives! 'dq '(x) 'x '() 1 2)",
    "(1 2 3)",
    "(() 1)",
    "(:axis 1)",
    "(\"f\" 1)",
    "([1 2] 0)",
];

/// A special form with random operands, or a classic wrong shape.
pub fn wrong_shape(maker: &mut Gen) -> String {
    if maker.rng.chance(0.5) {
        return maker.rng.pick(WRONG_SHAPES).to_string();
    }
    let head = maker.rng.pick(FORMS);
    let count = maker.rng.between(0, 4);
    let operands: Vec<String> = (0..count)
        .map(|_| match maker.rng.below(4) {
            0 => maker.literal(),
            1 => "(x)".to_string(),
            2 => "((x 1) y 2)".to_string(),
            _ => maker.expr(2),
        })
        .collect();
    format!("({head} {})", operands.join(" "))
}

/// A program nested `depth` levels deep in its source text.
pub fn deep_source(rng: &mut Rng, depth: usize) -> String {
    let open_close = |open: &str, inner: &str, close: &str| {
        format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
    };
    match rng.below(12) {
        0 => open_close("(+ 1 ", "1", ")"),
        1 => format!("(length '{})", open_close("(", "", ")")),
        2 => format!("(equal? '{} 1)", open_close("(", "1", ")")),
        3 => format!("(tensor '{})", open_close("(", "1", ")")),
        4 => open_close("[", "1", "]"),
        5 => open_close("((lambda (x) ", "x", ") 1)"),
        6 => open_close("(let ((x ", "1", ")) x)"),
        7 => format!("`{}", open_close("(a ,", "1", ")")),
        8 => open_close("(if #t ", "1", " 0)"),
        9 => format!("(diff '{} 'x)", open_close("(sin ", "x", ")")),
        10 => format!(
            "((grad (lambda (x) {})) 0.5)",
            open_close("(sin ", "x", ")")
        ),
        _ => format!("(str '{})", open_close("(", "x", ")")),
    }
}

/// Consumers of deep data that walk it as plain data.
const DATA_CONSUMERS: &[&str] = &[
    "(equal? d d)",
    "(str d)",
    "(length (str d))",
    "(tensor d)",
    "(eval d)",
    "(sort (list d d))",
    "(to-list d)",
    "(reverse d)",
    "(read (str d))",
    "d",
];

/// Consumers that read deep data as a formula (or a list of them).
const FORMULA_CONSUMERS: &[&str] = &[
    "(simplify d)",
    "(diff d 'x)",
    "(grad d '(x))",
    "(hessian d '(x))",
    "(expr-size d)",
    "(evaluate d '((x 0.5)))",
    "(lambdify '(x) d)",
    "(cse d)",
    "(latex d)",
    "(infix d)",
    "(codegen d '(x) :lang 'c)",
    "(subs d '((x y)))",
    "(sparsity (list d) '(x))",
    "(explain d)",
];

/// A program building data levels deep while it runs (no reader limit
/// applies) and handing it to a built-in. The symbolic functions run
/// without checking for an interrupt, so formulas stay as deep as they
/// handle in a second or so: 20,000 levels, but the derivatives of deep
/// products and the Hessian of a deep chain only 200 (they take half a
/// minute at 10,000).
pub fn deep_data(rng: &mut Rng) -> String {
    let (build, start) = *rng.pick(&[
        ("(list acc)", "'()"),
        ("(list acc)", "'x"),
        ("(list 'sin acc)", "'x"),
        ("(list '* 'x acc)", "'x"),
        ("(list '+ acc 1)", "'x"),
        ("(cons acc 1)", "1"),
    ]);
    let (consumer, depth) = if rng.chance(0.5) {
        let depth = *rng.pick(&[1_000, 10_000, 100_000, 300_000]);
        (*rng.pick(DATA_CONSUMERS), depth)
    } else {
        let consumer = *rng.pick(FORMULA_CONSUMERS);
        let slow = consumer.starts_with("(hessian")
            || (build.contains("'*") && ["(diff", "(grad"].iter().any(|d| consumer.starts_with(d)));
        let depth = if slow {
            200
        } else {
            *rng.pick(&[5_000, 20_000])
        };
        (consumer, depth)
    };
    format!(
        "(define d (let build ((i 0) (acc {start})) (if (< i {depth}) (build (+ i 1) {build}) acc)))\n{consumer}"
    )
}

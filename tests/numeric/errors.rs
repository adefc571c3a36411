//! Errors of the numeric forms: a message, a kind, a location (in the
//! function's own source for errors inside it), and no panic.

use super::*;

/// Definitions the bad uses call (evaluated under another source name).
const ERROR_SETUP: &str = r"
(define (f x y) (* x y))
(define leaked 0)
((grad (lambda (x) (set! leaked x) (* x x))) 2.0)
";

/// One bad use: its source (named `bad.lisp`), a substring of the
/// message, and the file, line and column the error must point at.
struct Bad {
    source: &'static str,
    message: &'static str,
    file: &'static str,
    line: u32,
    col: u32,
}

/// An error located in the bad use itself.
const fn bad(source: &'static str, message: &'static str, line: u32, col: u32) -> Bad {
    Bad {
        source,
        message,
        file: "bad.lisp",
        line,
        col,
    }
}

/// An error located inside `g` ([`MISMATCH`]), at `(+ y [1 2 3])`.
const fn in_g(source: &'static str, message: &'static str) -> Bad {
    Bad {
        source,
        message,
        file: "mismatch.lisp",
        line: 3,
        col: 10,
    }
}

/// A function whose body has a shape error on line 3, column 10
/// (evaluated as `mismatch.lisp`).
const MISMATCH: &str = "(define (g x)
  (let ((y (* x 2)))
    (sum (+ y [1 2 3]))))
";

#[rustfmt::skip]
const BAD_USES: &[Bad] = &[
    // a result that is not a number
    bad("((grad (lambda (x) (* x 2))) [1 2])", "grad needs a function returning a number, this one returned shape [2]", 1, 1),
    bad("((grad (lambda (x) (list x x))) 1.0)", "returned a list", 1, 1),
    bad("((value-and-grad (lambda (x) (* x 2))) [1 2])", "returning a number", 1, 1),
    bad("(check-grad (lambda (x) (* x 2)) (list [1 2]))", "returning a number", 1, 1),
    bad("(hvp (lambda (x) (* x x)) (list [1 2]) [1 2])", "returning a number", 1, 1),
    bad("((hessian (lambda (x) (* x x))) [1 2])", "returning a number", 1, 1),
    // :wrt
    bad("((grad f :wrt 2) 1.0 2.0)", "unknown :wrt position 2: the function was called with 2 arguments", 1, 1),
    bad("((grad f :wrt '(0 5)) 1.0 2.0)", "unknown :wrt position 5", 1, 1),
    bad("((value-and-grad f :wrt 3) 1.0 2.0)", "unknown :wrt position 3", 1, 1),
    bad("((grad f :wrt -1) 1.0 2.0)", "a :wrt position cannot be negative, got -1", 1, 2),
    bad("((grad f :wrt \"a\") 1.0 2.0)", ":wrt takes a position, a list of positions or 'all", 1, 2),
    bad("(grad (lambda (x) x) 1.0)", "(grad f) takes the function only; choose arguments with :wrt", 1, 1),
    // shape errors inside f point at the offending call in f
    in_g("((grad g) [1 2])", "shapes [2] and [3] do not broadcast"),
    in_g("((value-and-grad g) [1 2])", "do not broadcast"),
    in_g("(vjp g (list [1 2]) 1.0)", "do not broadcast"),
    in_g("(jvp g (list [1 2]) (list [1 0]))", "do not broadcast"),
    in_g("(hvp g (list [1 2]) [1 0])", "do not broadcast"),
    in_g("((jacobian g) [1 2])", "do not broadcast"),
    in_g("((hessian g) [1 2])", "do not broadcast"),
    in_g("((jit g) [1 2])", "do not broadcast"),
    in_g("(check-grad g (list [1 2]))", "do not broadcast"),
    in_g("(tape-stats g (list [1 2]))", "do not broadcast"),
    bad("((grad (lambda (w)\n  (sum (matmul w [1 2 3])))) [[1 2] [3 4]])", "shapes [2 2] and [3] do not align", 2, 8),
    // built-ins without a derivative
    bad("((grad (lambda (x)\n  (sum (sort x)))) [3 1 2])", "sort has no derivative", 2, 8),
    bad("((grad (lambda (x) (remainder x 2.0))) 3.5)", "remainder has no derivative", 1, 20),
    bad("((grad (lambda (x) (sum (slice x 0 2 :step 2)))) [1 2 3])", "slice with :step is not differentiable yet", 1, 25),
    // arguments of the wrong kind
    bad("((grad (lambda (x) 1.0)) \"a\")", "must be numbers, tensors or lists of them, got string", 1, 1),
    bad("(vjp 1 (list 1.0) 1.0)", "vjp: expected a function, got integer 1", 1, 1),
    bad("(vjp f 1.0 1.0)", "must be a list of arguments, such as (list x)", 1, 1),
    bad("(vjp (lambda (x) (* 2 x)) (list [1 2]) [1 2 3])", "the cotangent has shape [3], the result has shape [2]", 1, 1),
    bad("(vjp (lambda (x) (list x x)) (list 1.0) 1.0)", "the cotangent has 1 parts, the function returned 2", 1, 1),
    bad("(vjp (lambda (x) x) (list 1.0) \"a\")", "the cotangent must be numbers, tensors or lists of them", 1, 1),
    bad("(jvp 1 (list 1.0) (list 1.0))", "jvp: expected a function", 1, 1),
    bad("(jvp (lambda (x) (* 2 x)) (list [1 2]) [1 2])", "must be a list", 1, 1),
    bad("(jvp f (list 1.0 2.0) (list 1.0))", "1 tangents for 2 arguments", 1, 1),
    bad("(jvp (lambda (x) (* 2 x)) (list [1 2]) (list [1 2 3]))", "a tangent has shape [3], the argument has shape [2]", 1, 1),
    bad("(hvp 1 (list 1.0) 1.0)", "hvp: expected a function", 1, 1),
    bad("(hvp (lambda (x) x) 1.0 1.0)", "must be a list of arguments", 1, 1),
    bad("(hvp (lambda () 1.0) (list) 1.0)", "hvp needs at least one argument", 1, 1),
    bad("(hvp (lambda (x) (sum (* x x))) (list [1 2]) [1 2 3])", "the vector has shape [3], the argument has shape [2]", 1, 1),
    bad("(hvp (lambda (x) (sum (* x x))) (list [1 2]) \"a\")", "must be numbers, tensors or lists of them", 1, 1),
    bad("((jacobian (lambda (x) x)))", "a Jacobian needs at least one argument", 1, 1),
    bad("((hessian (lambda (x) x)))", "a Hessian needs at least one argument", 1, 1),
    bad("(check-grad f 1.0)", "must be a list of arguments", 1, 1),
    bad("(check-grad (lambda (p) (car p)) (list \"text\"))", "must be numbers, tensors or lists of them", 1, 1),
    bad("(tape-stats 1 (list 1))", "tape-stats: expected a function", 1, 1),
    bad("(jit 1)", "jit: expected a function", 1, 1),
    // operations of the table: bad indices, shapes and matrices, eagerly
    // and when a tape runs (pointing at the call inside the function)
    bad("(gather [1 2 3] [5])", "index 5 is out of range for an axis of length 3", 1, 1),
    bad("(gather [1 2 3] [1.5])", "index 1.5 is not a whole number", 1, 1),
    bad("(gather [1 2 3] [-4])", "index -4 is out of range", 1, 1),
    bad("(gather [[1 2] [3 4]] [0] :axis 2)", "axis 2", 1, 1),
    bad("(gather 1.0 [0])", "cannot gather from a number", 1, 1),
    bad("(scatter-add [1 2 3] [0 1] [1 2 3])", "the values have shape [3], the positions select [2] from a tensor of shape [3]", 1, 1),
    bad("(index-set [1 2 3] [9] 0.0)", "index 9 is out of range", 1, 1),
    bad("(cholesky [[1 2] [2 1]])", "the matrix is not positive definite (pivot 1", 1, 1),
    bad("(cholesky [1 2 3])", "cholesky needs a matrix (or a stack of them), got shape [3]", 1, 1),
    bad("(cholesky [[1 2 3] [4 5 6]])", "cholesky needs square matrices, got shape [2 3]", 1, 1),
    bad("(solve [[1 2] [2 4]] [1 1])", "the matrix is singular (pivot 1", 1, 1),
    bad("(solve (eye 2) [1 2 3])", "a matrix of shape [2 2] and a right-hand side of shape [3] do not fit", 1, 1),
    bad("(solve (eye 2) 1.0)", "the right-hand side must be a vector or a matrix", 1, 1),
    bad("(triangular-solve [[0 0] [1 1]] [1 1])", "singular (diagonal entry 0 is zero)", 1, 1),
    bad("(inv [[1 2] [2 4]])", "singular", 1, 1),
    bad("(cumsum 1.0)", "cumsum needs a tensor", 1, 1),
    bad("(tril [1 2 3])", "tril needs a matrix", 1, 1),
    bad("((grad (lambda (a)\n  (sum (cholesky a)))) [[1.0 2] [2 1]])", "cholesky: the matrix is not positive definite", 2, 8),
    bad("((grad (lambda (a)\n  (sum (solve a [1 1])))) [[1.0 2] [2 4]])", "solve: the matrix is singular", 2, 8),
    bad("((jit (lambda (t i)\n  (sum (gather t i)))) [1.0 2 3] [0 7])", "gather: index 7 is out of range", 2, 8),
    // a traced value kept after its trace ended
    bad("((grad (lambda (y) (* y leaked))) 1.0)", "a traced value escaped the function being differentiated", 1, 20),
    bad("(+ leaked 1)", "traced", 1, 1),
];

/// The file and text of line `line` of the source an error points into:
/// the shape errors inside `g` point into `mismatch.lisp`.
fn quoted_line(case: &Bad, file: &str) -> Option<String> {
    let text = match file {
        "bad.lisp" => case.source,
        "mismatch.lisp" => MISMATCH,
        _ => return None,
    };
    text.lines().nth(case.line as usize - 1).map(str::to_string)
}

/// Each bad use is an error (never a caught panic) with its message and
/// location, the rendered report quotes the offending line, and the
/// engine keeps working.
#[test]
fn numeric_errors_are_clear_located_and_recoverable() {
    let mut engine = engine();
    eval(&mut engine, ERROR_SETUP);
    engine
        .eval_named(MISMATCH, "mismatch.lisp")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let mut failures = String::new();
    for case in BAD_USES {
        let mut problems = Vec::new();
        match engine.eval_named(case.source, "bad.lisp") {
            Ok(value) => problems.push(format!("no error, the value {value}")),
            Err(error) => {
                if error.kind() == EvalErrorKind::Internal {
                    problems.push("an internal error (a caught panic)".to_string());
                }
                if !error.message().contains(case.message) {
                    problems.push(format!("the message does not contain {:?}", case.message));
                }
                let want_file = case.file;
                match error.location() {
                    Some(at)
                        if at.file == want_file && at.line == case.line && at.col == case.col =>
                    {
                        let line = quoted_line(case, &at.file).unwrap_or_default();
                        if !error.render().contains(&line) {
                            problems.push(format!("the report does not quote {line:?}"));
                        }
                    }
                    other => problems.push(format!(
                        "located at {other:?}, expected {want_file}:{}:{}",
                        case.line, case.col
                    )),
                }
                if !problems.is_empty() {
                    problems.push(format!("the error was:\n{}", error.render()));
                }
            }
        }
        if !problems.is_empty() {
            let _ = writeln!(failures, "{}\n    {}", case.source, problems.join("\n    "));
        }
        let sane = engine.eval("(+ 1 2)").map(|v| v.as_i64().ok());
        assert!(
            matches!(sane, Ok(Some(3))),
            "the engine is unusable after {}",
            case.source
        );
    }
    assert!(failures.is_empty(), "{failures}");
}

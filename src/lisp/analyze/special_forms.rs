//! The table of special forms: names, usage and documentation (for `doc`,
//! completion and the generated reference).

/// Special forms with their usage and documentation, for `doc` and completion.
pub const SPECIAL_FORMS: &[(&str, &str, &str)] = &[
    (
        "quote",
        "(quote datum) or 'datum",
        "The datum itself, unevaluated.",
    ),
    (
        "quasiquote",
        "`template",
        "A template: ,x inserts the value of x and ,@xs splices the list xs.",
    ),
    (
        "define",
        "(define name value) or (define (name params...) \"doc\" body...)",
        "Binds a variable, or defines a function with an optional docstring.",
    ),
    (
        "set!",
        "(set! name value)",
        "Assigns to an existing variable.",
    ),
    (
        "lambda",
        "(lambda (params... [. rest]) body...)",
        "A function; a dotted last parameter (or &rest) collects the remaining arguments.",
    ),
    ("fn", "(fn (params...) body...)", "Same as lambda."),
    (
        "let",
        "(let ((name value)...) body...) or (let loop ((name init)...) body...)",
        "Binds variables for a body; the named form defines a local loop function.",
    ),
    (
        "let*",
        "(let* ((name value)...) body...)",
        "Like let, each binding seeing the ones before it.",
    ),
    (
        "letrec",
        "(letrec ((name value)...) body...)",
        "Like let, every binding seeing all of them (for mutually recursive functions).",
    ),
    (
        "if",
        "(if test then [else])",
        "Evaluates then when test is true (anything but #f and ()), else otherwise.",
    ),
    (
        "cond",
        "(cond (test body...)... (else body...))",
        "The body of the first clause whose test is true; (test => f) calls f on the test value.",
    ),
    (
        "when",
        "(when test body...)",
        "Evaluates the body when test is true; () otherwise.",
    ),
    (
        "unless",
        "(unless test body...)",
        "Evaluates the body when test is false; () otherwise.",
    ),
    (
        "and",
        "(and x...)",
        "The first false value, or the last value (#t with none).",
    ),
    (
        "or",
        "(or x...)",
        "The first true value, or the last value (#f with none).",
    ),
    (
        "begin",
        "(begin x...)",
        "Evaluates in order, giving the last value.",
    ),
    (
        "while",
        "(while test body...)",
        "Repeats the body while test is true.",
    ),
    (
        "defmacro",
        "(defmacro name (params...) \"doc\" body...)",
        "Defines a macro: its body computes the code that replaces each use.",
    ),
    (
        "try",
        "(try body... (catch (e) handler...))",
        "Evaluates the body; on an error, binds its message to e and evaluates the handler.",
    ),
    (
        "time",
        "(time expr)",
        "Evaluates expr, prints the elapsed wall time to stderr, and gives its value.",
    ),
];

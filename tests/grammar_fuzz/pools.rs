//! What programs are made of: the built-ins taken from the builtin tables
//! (less those that touch files or the process), the standard library's
//! functions, and pools of literal source text chosen to sit on the edges
//! (extreme integers, NaN, empty and rank-3 tensors, improper lists).

use epsilon::lisp::builtins::TABLES;

/// Built-ins never generated, and why: they reach outside the process's
/// memory (files, the process itself) or set process-wide state that
/// would outlive the engine that set it.
pub const SKIPPED: &[&str] = &[
    // ends the process
    "exit",
    // waits for a line of standard input
    "read-line",
    // read files named by their arguments
    "load",
    "load-npy",
    "load-tree",
    "read-csv",
    "read-file",
    // write files named by their arguments
    "write-csv",
    "save-npy",
    "save-dot",
    "save",
    "write-file",
    "append-file",
    "plot",
    "plot-lines",
    "histogram",
    "heatmap",
    "contour",
    // chooses the backend for the whole process
    "set-backend!",
];

/// Built-ins that change the engine's settings for every later case of
/// its batch (a recursion limit of 3, saturation to a fixed point): they
/// are generated, but rarely.
pub const RARE: &[&str] = &[
    "set-optimize!",
    "set-simplify-limits!",
    "set-recursion-limit!",
    "set-memory-budget!",
    "set-default-dtype!",
    "debug-nans",
    "add-rule!",
    "define-with-derivatives!",
    "seed!",
    "eval",
];

/// Built-ins with derivatives and tensor kernels, preferred inside the
/// bodies of differentiated and compiled functions.
pub const MATH: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "pow",
    "neg",
    "abs",
    "sign",
    "sqrt",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "sigmoid",
    "relu",
    "softplus",
    "min",
    "max",
    "clamp",
    "floor",
    "round",
    "sum",
    "mean",
    "prod",
    "logsumexp",
    "softmax",
    "log-softmax",
    "where",
    "<",
    ">",
    "=",
    "matmul",
    "dot",
    "outer",
    "transpose",
    "reshape",
    "concat",
    "stack",
    "slice",
    "index",
    "roll",
    "broadcast-to",
    "cumsum",
    "cumprod",
    "flip",
    "var",
    "std",
    "norm",
    "einsum",
    "gather",
    "take-along",
    "scatter-add",
    "index-set",
    "tril",
    "triu",
    "diag",
    "diagonal",
    "cross",
    "det",
    "inv",
    "solve",
    "cholesky",
    "slogdet",
    "eigh",
    "svd",
    "qr",
    "lstsq",
    "matrix-exp",
    "triangular-solve",
    "lgamma",
    "digamma",
    "polygamma",
    "erf",
    "erfc",
    "multigammaln",
    "xlogy",
    "heaviside",
    "square",
    "cbrt",
    "exp2",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "sinc",
    "deg2rad",
    "rad2deg",
    "stop-gradient",
    "astype",
    "trace",
    "flatten",
    "shape",
    "length",
    "opaque",
    "argmax",
    "sort",
    "list",
    "car",
    "nth",
];

/// Standard-library functions (written in Epsilon) with the fewest and
/// most positional arguments they take; slow trainers (`fit`) are left out.
pub const STDLIB: &[(&str, usize, usize)] = &[
    ("squeeze", 1, 1),
    ("expand-dims", 2, 2),
    ("column", 2, 2),
    ("leaky-relu", 1, 1),
    ("silu", 1, 1),
    ("gelu", 1, 1),
    ("layer-norm", 1, 1),
    ("attention", 3, 3),
    ("one-hot", 2, 2),
    ("dense-init", 2, 2),
    ("dense", 2, 2),
    ("mlp-init", 1, 1),
    ("mlp", 2, 2),
    ("mse", 2, 2),
    ("huber", 2, 2),
    ("softmax-cross-entropy", 2, 2),
    ("sigmoid-cross-entropy", 2, 2),
    ("accuracy", 2, 2),
    ("l2-penalty", 1, 1),
    ("tree-map", 2, 3),
    ("tree-leaves", 1, 1),
    ("tree-from-leaves", 2, 2),
    ("tree-flatten", 1, 1),
    ("tree-unflatten", 2, 2),
    ("tree-dot", 2, 2),
    ("tree-norm", 1, 1),
    ("compose", 0, 3),
    ("identity", 1, 1),
    ("lookup", 2, 2),
    ("options", 3, 3),
    ("safe-ratio", 2, 2),
    ("inner", 2, 2),
    ("cg", 2, 2),
    ("bicgstab", 2, 2),
    ("fixed-point", 2, 3),
    ("root", 2, 3),
    ("odeint", 3, 4),
    ("minimize", 2, 3),
    ("lbfgs", 2, 2),
    ("sgd", 0, 0),
    ("adam", 0, 0),
    ("learning-rate", 2, 2),
    ("exponential-decay", 3, 3),
    ("shuffle", 1, 1),
    ("batches", 2, 2),
    ("train-test-split", 1, 1),
    ("standardize", 1, 2),
    ("take-examples", 2, 2),
    ("glorot-uniform", 2, 2),
    ("flat-jacobian", 2, 2),
    ("finite?", 1, 1),
    ("rms", 1, 1),
];

/// Integer literals: small ones (sizes, axes, indices) and the extremes.
pub const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "0",
    "1",
    "2",
    "4",
    "7",
    "64",
    "65",
    "100",
    "9223372036854775807",
    "-9223372036854775808",
    "100000000000",
    "9007199254740993",
];

/// Float literals, non-finite and subnormal ones included.
pub const FLOATS: &[&str] = &[
    "0.5", "-0.0", "0.0", "1.0", "2.5", "-3.75", "1e308", "-1e308", "5e-324", "1e-10", "nan",
    "inf", "-inf", "3.", ".5", "1e16", "pi",
];

/// String literals: format templates, einsum subscripts, source text.
pub const STRINGS: &[&str] = &[
    "\"x\"",
    "\"\"",
    "\"{} {:.2}\"",
    "\"{:>10.3e} {:<8} {{}}\"",
    "\"{\"",
    "\"ij,jk->ik\"",
    "\"ii->\"",
    "\"i,j->ij\"",
    "\"...i->...\"",
    "\"(+ 1 2)\"",
    "\"((\"",
    "\"a b  c\"",
    "\"\\u{3b5}\\n\\t\\\"\"",
    "\"12.5e3\"",
    "\"-9223372036854775809\"",
];

/// Quoted symbols: the names options and modes take, and variables.
pub const SYMBOLS: &[&str] = &[
    "'x",
    "'y",
    "'z",
    "'a",
    "'f32",
    "'f64",
    "'sum",
    "'mean",
    "'max",
    "'min",
    "'fro",
    "'all",
    "'store-all",
    "'recompute",
    "'revolve",
    "'auto",
    "'positive",
    "'negative",
    "'integer",
    "'nonnegative",
    "'c",
    "'rust",
    "'python",
    "'tape",
    "'program",
    "'dopri5",
    "'rk4",
    "'backsolve",
    "'direct",
    "'lbfgs",
    "'nope",
];

/// Other constants: booleans, empty lists, quoted lists and pairs.
pub const DATA: &[&str] = &[
    "#t",
    "#f",
    "()",
    "nil",
    "'()",
    "'(1 2 3)",
    "'((1 2) (3 4))",
    "'(1 . 2)",
    "'((a 1) (b 2))",
    "'(x y)",
    "'((x 1.0) (y 2.0))",
    "'((x positive) (y integer))",
    "'(0 2)",
    "'(2 3)",
    "'(-1)",
    "'(2 -1)",
    "'(0 #f)",
    "'(#f 0)",
    "'(1 (2 (3 (4))))",
    "'(sin x)",
    "'(* x (sin y))",
    "(list 1.0 [1.0 2.0] (list 3.0))",
    "(void)",
];

/// Tensor-valued source text of awkward shapes: empty, 0-d, rank 3,
/// non-finite, singular and positive definite.
pub const TENSORS: &[&str] = &[
    "[]",
    "[[]]",
    "[1 2 3]",
    "[0]",
    "[[1 2 3] [4 5 6]]",
    "[[1] [2] [3]]",
    "[[1 2 3]]",
    "[[2 1] [1 2]]",
    "[[1 2] [2 4]]",
    "[[0 0] [0 0]]",
    "[[[1 2] [3 4]] [[5 6] [7 8]]]",
    "[nan 1 -inf]",
    "[1e308 1e308]",
    "(tensor 5)",
    "(zeros 0)",
    "(zeros 2 0)",
    "(zeros 0 3 2)",
    "(ones 3 3)",
    "(eye 3)",
    "(reshape (arange 8.0) '(2 2 2))",
    "(arange 6.0)",
    "(linspace 0 1 5)",
    "(tensor 1 2 3 :dtype 'f32)",
    "(astype [[1 2] [3 4]] 'f32)",
];

/// Values a differentiated or compiled function is called at.
pub const POINTS: &[&str] = &[
    "0.5",
    "-0.0",
    "2",
    "nan",
    "[1.0 2.0 3.0]",
    "[[1.0 2.0 3.0] [4.0 5.0 6.0]]",
    "[[2.0 1.0] [1.0 2.0]]",
    "[[1.0] [2.0] [3.0]]",
    "(zeros 2 0)",
    "(zeros 0)",
    "(reshape (arange 8.0) '(2 2 2))",
    "[nan 1.0 -inf]",
    "(list 1.0 [2.0 3.0])",
    "(astype [1 2] 'f32)",
];

/// A built-in or library function and the arity the generator aims at.
pub struct Callable {
    pub name: &'static str,
    pub min: usize,
    /// `None`: any number.
    pub max: Option<usize>,
    /// Keyword options, without colons.
    pub options: &'static [&'static str],
}

/// Everything the generator calls.
pub struct Catalog {
    /// Every built-in but the skipped and the rare ones.
    pub builtins: Vec<Callable>,
    /// The rare ones.
    pub rare: Vec<Callable>,
    /// Built-ins of `MATH`.
    pub math: Vec<Callable>,
    /// Standard-library functions.
    pub stdlib: Vec<Callable>,
    /// Every option name of every built-in.
    pub options: Vec<&'static str>,
}

impl Catalog {
    /// The catalog read from the builtin tables.
    pub fn new() -> Self {
        let all: Vec<_> = TABLES
            .iter()
            .flat_map(|table| table.iter())
            .filter(|b| !SKIPPED.contains(&b.name))
            .collect();
        let callable = |b: &&epsilon::lisp::Builtin| Callable {
            name: b.name,
            min: b.min,
            max: b.max,
            options: b.options,
        };
        let mut options: Vec<&'static str> =
            all.iter().flat_map(|b| b.options.iter().copied()).collect();
        options.sort_unstable();
        options.dedup();
        Catalog {
            builtins: all
                .iter()
                .filter(|b| !RARE.contains(&b.name))
                .map(callable)
                .collect(),
            rare: all
                .iter()
                .filter(|b| RARE.contains(&b.name))
                .map(callable)
                .collect(),
            math: all
                .iter()
                .filter(|b| MATH.contains(&b.name))
                .map(callable)
                .collect(),
            stdlib: STDLIB
                .iter()
                .map(|&(name, min, max)| Callable {
                    name,
                    min,
                    max: Some(max),
                    options: &[],
                })
                .collect(),
            options,
        }
    }
}

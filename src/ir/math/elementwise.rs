//! The elementwise functions of the `Math` language, one row each.
//!
//! A row gives everything Epsilon knows about a function: its `Math`
//! variant and Lisp name (the arity is the number of children the row
//! names), its value (a scalar function over `f64`, from `crate::scalar`
//! or the standard library), its local partial derivatives (written with
//! the `PartialBuilder` over the children and the node itself, `None` for
//! no dependence: one rule serves symbolic `diff`, numeric reverse and
//! forward mode), its cost class, what the e-graph's analysis may assume
//! of it (signs, domain, zeros), how CUDA (double and float), C, Rust and
//! Python spell it, and its Lisp built-in with the docstring, when the
//! built-in is a plain elementwise map over numbers and tensors (floats
//! out; integers convert).
//!
//! The macro generates the `Math` language itself (`define_language!`:
//! the arithmetic operators `+ - * / pow neg`, written out below because
//! every layer special-cases them, then one variant per row, then `Num`,
//! `Var` and `Call`), `OPERATORS`, and what the other layers call in
//! their fallback arms: [`value`], [`partials`], [`row`] (cost, facts,
//! spellings), [`apply_slices`] (the CPU's loop over slices), the
//! `extern "C"` wrappers native code calls ([`NativeFn`]), the CUDA device
//! functions ([`device_functions`]) and `plain_builtins!` (the Lisp
//! built-ins). A layer that treats a function specially (an instruction in
//! Cranelift, a vectorized loop, an inline `exp`, the sign analysis of
//! `relu`) keeps an explicit arm before its fallback; everything else
//! comes from here, so a new function is one row plus its tests.
//!
//! A row may also say how the function is computed at complex operands
//! (`complex:`, a [`ComplexRule`]; rows without one are real functions).
//!
//! Growing a column: add a field to the row pattern of `elementwise!`
//! (optional, as `$(complex: $complex:expr,)?` is) and to `Row` or a
//! generated function, as `partials` is.

use super::language::Constant;
use super::partials::PartialBuilder;
use crate::scalar;
use egg::{Id, Symbol, define_language};
use smallvec::SmallVec;
use std::f64::consts::{FRAC_2_SQRT_PI, LN_2, PI};

/// What a function costs beyond reading and writing its operands (the
/// e-graph's and the tape's cost models; `fuse` recomputes the free ones
/// rather than storing them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Picks an operand or a constant (`abs`, `min`, `relu`): free, and
    /// exact in any precision (an f32 operand gives an f32 number).
    Select,
    /// A multiplication or two (`square`, `deg2rad`): free, but rounded.
    Arithmetic,
    /// A square root: a division's price.
    Cheap,
    /// A libm function (`exp`, `sin`, ...).
    Elementary,
    /// A rational approximation with several branches (`erf`).
    Special,
    /// A series or recurrence (`lgamma`, `digamma`, `polygamma`).
    Series,
}

impl Cost {
    /// The extra cost of a node in the e-graph's extraction
    /// (`egraph::cost`): an addition is 0, a division 2.
    pub const fn egraph(self) -> u64 {
        match self {
            Cost::Select | Cost::Arithmetic => 0,
            Cost::Cheap => 2,
            Cost::Elementary => 6,
            Cost::Special => 8,
            Cost::Series => 12,
        }
    }

    /// The extra cost per element on a tape (`tensor::optimize`).
    pub const fn tape(self) -> u64 {
        match self {
            Cost::Select | Cost::Arithmetic => 0,
            Cost::Cheap => 2,
            Cost::Elementary | Cost::Special | Cost::Series => 6,
        }
    }

    /// Whether the function costs about as much as reading its operands.
    pub const fn free(self) -> bool {
        matches!(self, Cost::Select | Cost::Arithmetic)
    }
}

/// The signs a function's value may take, from its first operand's
/// (`analysis::signs_of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignRule {
    /// Any sign.
    Any,
    /// Positive everywhere.
    Positive,
    /// Never negative.
    NonNegative,
    /// The sign of the first operand (odd, increasing functions).
    Same,
    /// A negative operand gives a positive value; zero and positive stay
    /// (`abs`, `square`).
    Magnitude,
    /// The analysis has an arm of its own for it.
    Custom,
}

/// Where a function is defined (`analysis::total_of`, the builder's
/// identities).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// Every number (overflow aside): defined wherever its operands are.
    All,
    /// Not everywhere (`log`, `sqrt`, `tan`); the analysis may know where.
    Restricted,
}

/// What a zero result means when constant folding (`analysis::fold_numbers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zero {
    /// A zero result is exact: it folds.
    Exact,
    /// The function is zero only where an operand is: a zero from other
    /// operands is an underflow (`exp -1000`, `square 1e-200`), not
    /// folded.
    Underflows,
}

/// How a language spells a function. Templates name operand k as `{k}`
/// (its text as shown) or `{(k)}` (parenthesized unless an atom, ready
/// for an operator or a method call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// `name(a, b)`.
    Call(&'static str),
    /// Rust: `a.name(b)`.
    Method(&'static str),
    /// A template that reads as one atom (`fmax({0}, 0.0)`).
    Template(&'static str),
    /// A template put in parentheses (`{(0)}*{(0)}`).
    Inline(&'static str),
    /// CUDA: a call of a device function defined by the given source,
    /// part of every kernel's prelude.
    Device(&'static str, &'static str),
    /// CUDA: a call of a function of the special-function prelude
    /// (`backends/cuda/special.rs`), added to the kernels that call it.
    Special(&'static str),
    /// The language has no form of it: code generation fails, naming the
    /// function and the language.
    Missing,
}

impl Spelling {
    /// The text of this spelling over operands `args` (the text of each as
    /// shown, and parenthesized unless an atom); `None` for a spelling
    /// with no text of its own (`Method`, `Missing`).
    pub fn apply(&self, args: &[String], wrapped: &[String]) -> Option<String> {
        Some(match self {
            Spelling::Call(name) | Spelling::Device(name, _) | Spelling::Special(name) => {
                format!("{name}({})", args.join(", "))
            }
            Spelling::Template(template) => fill(template, args, wrapped),
            Spelling::Inline(template) => format!("({})", fill(template, args, wrapped)),
            Spelling::Method(_) | Spelling::Missing => return None,
        })
    }
}

/// `template` with `{k}` and `{(k)}` replaced.
fn fill(template: &str, args: &[String], wrapped: &[String]) -> String {
    let mut text = template.to_string();
    for (k, (arg, wrapped)) in args.iter().zip(wrapped).enumerate() {
        text = text.replace(&format!("{{({k})}}"), wrapped);
        text = text.replace(&format!("{{{k}}}"), arg);
    }
    text
}

/// A row's value as a function pointer.
#[derive(Clone, Copy, Debug)]
pub enum ScalarFn {
    /// A function of one number.
    Unary(fn(f64) -> f64),
    /// A function of two numbers.
    Binary(fn(f64, f64) -> f64),
}

/// A row's value as a function native code can call (the same function,
/// so native code gives the interpreter's bits).
#[derive(Clone, Copy, Debug)]
pub enum NativeFn {
    /// A function of one number.
    Unary(extern "C" fn(f64) -> f64),
    /// A function of two numbers.
    Binary(extern "C" fn(f64, f64) -> f64),
}

/// A Lisp built-in's usage line and docstring.
#[derive(Clone, Copy, Debug)]
pub struct Doc {
    /// How to call it, e.g. `(exp x)`.
    pub usage: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// One function's data.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Its Lisp name.
    pub name: &'static str,
    /// Its number of operands.
    pub arity: usize,
    /// Its value.
    pub value: ScalarFn,
    /// Its value, callable from native code.
    pub native: NativeFn,
    /// Its cost class.
    pub cost: Cost,
    /// The signs of its values.
    pub signs: SignRule,
    /// Where it is defined.
    pub domain: Domain,
    /// Whether a zero result folds.
    pub zero: Zero,
    /// CUDA C, in double.
    pub cuda: Spelling,
    /// CUDA C, in float (`Missing`: computed in double and rounded).
    pub cuda_f32: Spelling,
    /// C99 with `<math.h>`.
    pub c: Spelling,
    /// Rust (`f64` methods).
    pub rust: Spelling,
    /// Python with NumPy (`scipy.special.` names import SciPy).
    pub python: Spelling,
    /// The Lisp built-in, when it is a plain elementwise map (else it is
    /// written by hand: `abs` keeps integers, `heaviside` has a default).
    pub builtin: Option<Doc>,
    /// Its value at complex operands (`None`: defined on real numbers
    /// only).
    pub complex: Option<ComplexRule>,
}

/// How a function is computed at a complex operand `z = x + iy`: as Lisp
/// formulas over real or complex values, evaluated by the Lisp layer with
/// the built-ins they name (`lisp::complex`). Complex numbers are pairs of
/// real values there, so the formulas are also the function's derivatives
/// (forward and reverse, through the real operations they use), and they
/// are written to stay accurate and finite where the function is:
/// `hypot` for moduli, `log1p`/`expm1` near zero, no `inf / inf` at large
/// operands.
#[derive(Clone, Copy, Debug)]
pub enum ComplexRule {
    /// The real and the imaginary part of `f(x + iy)` as formulas of the
    /// real values `x` and `y`.
    Parts(&'static str, &'static str),
    /// `f(z)` as a formula of the complex value `z`, through other
    /// complex operations (`#c(0.0 1.0)` is `i`).
    Composed(&'static str),
}

/// The table's macro. A row is
///
/// ```text
/// Variant "lisp-name" (x, y) {
///     value: <fn(f64, f64) -> f64>,
///     partials: |b, this| <[Option<Id>; 2], built with the builder b over
///                          the children x, y and the node this>,
///     cost: <Cost>, signs: <SignRule>, domain: <Domain>, zero: <Zero>,
///     cuda: <Spelling>, cuda_f32: <Spelling>,
///     c: <Spelling>, rust: <Spelling>, python: <Spelling>,
///     builtin: ("(lisp-name x y)", "docstring") | elsewhere,
///     complex: <ComplexRule>,    (optional: complex operands)
/// }
/// ```
///
/// with one or two operands (`ScalarFn`, `NativeFn` and the slice loops
/// have those two shapes).
macro_rules! elementwise {
    (@arity $($arg:ident)+) => { 0 $(+ elementwise!(@one $arg))+ };
    (@one $arg:ident) => { 1 };
    (@scalar ($x:ident) $f:expr) => { ScalarFn::Unary($f) };
    (@scalar ($x:ident, $y:ident) $f:expr) => { ScalarFn::Binary($f) };
    (@native $variant:ident ($x:ident)) => { NativeFn::Unary(native_fns::$variant) };
    (@native $variant:ident ($x:ident, $y:ident)) => { NativeFn::Binary(native_fns::$variant) };
    (@slices ($x:ident) $f:expr, $ins:ident, $out:ident) => {{
        let f = $f;
        for (o, &$x) in $out.iter_mut().zip($ins[0]) {
            *o = f($x);
        }
    }};
    (@slices ($x:ident, $y:ident) $f:expr, $ins:ident, $out:ident) => {{
        let f = $f;
        for ((o, &$x), &$y) in $out.iter_mut().zip($ins[0]).zip($ins[1]) {
            *o = f($x, $y);
        }
    }};
    (@complex) => { None };
    (@complex $rule:expr) => { Some($rule) };
    (@doc) => { None };
    (@doc $usage:literal $doc:literal) => { Some(Doc { usage: $usage, doc: $doc }) };
    ($(
        $variant:ident $name:literal ($($arg:ident),+) {
            value: $value:expr,
            partials: |$b:ident, $this:ident| $partials:expr,
            cost: $cost:ident,
            signs: $signs:ident,
            domain: $domain:ident,
            zero: $zero:ident,
            cuda: $cuda:expr,
            cuda_f32: $cuda_f32:expr,
            c: $c:expr,
            rust: $rust:expr,
            python: $python:expr,
            builtin: $(($usage:literal, $doc:literal))? $(elsewhere)?,
            $(complex: $complex:expr,)?
        }
    )*) => {
        define_language! {
            /// A scalar expression node. Operators take their Lisp names; `+`, `-`
            /// and `*` are binary here (n-ary input folds to the left). Each variant
            /// is the operator of the same Lisp name (see `OPERATORS`), but `Call`,
            /// a user function (`defderiv`) by name, whose value and partial
            /// derivatives come from a `Functions` table.
            #[allow(missing_docs)]
            pub enum Math {
                "+" = Add([Id; 2]),
                "-" = Sub([Id; 2]),
                "*" = Mul([Id; 2]),
                "/" = Div([Id; 2]),
                "pow" = Pow([Id; 2]),
                "neg" = Neg([Id; 1]),
                $($name = $variant([Id; elementwise!(@arity $($arg)+)]),)*
                Num(Constant),
                Var(Symbol),
                // A call of a user function (`defderiv`) by name: its value and
                // partial derivatives come from a `Functions` table.
                Call(Symbol, Box<[Id]>),
            }
        }

        /// The operator names of `Math` with their arities, for converters and
        /// error messages.
        pub const OPERATORS: &[(&str, usize)] = &[
            ("+", 2),
            ("-", 2),
            ("*", 2),
            ("/", 2),
            ("pow", 2),
            ("neg", 1),
            $(($name, elementwise!(@arity $($arg)+)),)*
        ];

        /// `extern "C"` wrappers of the rows' values, for native code.
        #[allow(non_snake_case)]
        mod native_fns {
            use super::*;
            $(pub(super) extern "C" fn $variant($($arg: f64),+) -> f64 {
                ($value)($($arg),+)
            })*
        }

        /// Each row by its variant's name.
        #[allow(non_upper_case_globals)]
        pub mod rows {
            use super::*;
            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $variant: Row = Row {
                    name: $name,
                    arity: elementwise!(@arity $($arg)+),
                    value: elementwise!(@scalar ($($arg),+) $value),
                    native: elementwise!(@native $variant ($($arg),+)),
                    cost: Cost::$cost,
                    signs: SignRule::$signs,
                    domain: Domain::$domain,
                    zero: Zero::$zero,
                    cuda: $cuda,
                    cuda_f32: $cuda_f32,
                    c: $c,
                    rust: $rust,
                    python: $python,
                    builtin: elementwise!(@doc $($usage $doc)?),
                    complex: elementwise!(@complex $($complex)?),
                };
            )*
        }

        /// Every row, in the language's order.
        pub const ROWS: &[&Row] = &[$(&rows::$variant),*];

        /// The row of `node`; `None` for an arithmetic operator, a number,
        /// a variable or a call.
        pub fn row(node: &Math) -> Option<&'static Row> {
            match node {
                $(Math::$variant(_) => Some(&rows::$variant),)*
                _ => None,
            }
        }

        /// The value of a row's node given its children's values; `None`
        /// for a node that is no row.
        pub fn value(node: &Math, value_of: impl Fn(Id) -> f64) -> Option<f64> {
            Some(match *node {
                $(Math::$variant([$($arg),+]) => ($value)($(value_of($arg)),+),)*
                _ => return None,
            })
        }

        /// The partial derivatives of a row's node (stored at `this`) with
        /// respect to each child, in child order (`None`: no dependence);
        /// `None` for a node that is no row.
        #[allow(unused_variables)]
        pub fn partials<B: PartialBuilder>(
            node: &Math,
            this: Id,
            builder: &mut B,
        ) -> Option<SmallVec<[Option<Id>; 2]>> {
            Some(match *node {
                $(Math::$variant([$($arg),+]) => {
                    let $this = this;
                    let $b = &mut *builder;
                    SmallVec::from_slice(&$partials)
                })*
                _ => return None,
            })
        }

        /// `out[i] = f(ins[0][i], ...)` for a row's node `f` (a tight loop
        /// per function); false for a node that is no row.
        pub fn apply_slices(node: &Math, ins: &[&[f64]], out: &mut [f64]) -> bool {
            match node {
                $(Math::$variant(_) => elementwise!(@slices ($($arg),+) $value, ins, out),)*
                _ => return false,
            }
            true
        }

        /// The Lisp built-ins of the rows that have one, as an array of
        /// `builtin_row(&row, usage, doc, function)` calls: the invoking
        /// module defines `builtin_row` (making its built-in) and `plain`
        /// (`plain(interp, args, &row)`, the row's value over its
        /// arguments).
        macro_rules! plain_builtins {
            () => {
                [$($(
                    builtin_row(
                        &$crate::ir::math::elementwise::rows::$variant,
                        $usage,
                        $doc,
                        |interp, args| plain(interp, args, &$crate::ir::math::elementwise::rows::$variant),
                    ),
                )?)*]
            };
        }
        pub(crate) use plain_builtins;
    };
}

/// The row named `name` (a Lisp name).
pub fn row_named(name: &str) -> Option<&'static Row> {
    ROWS.iter().copied().find(|row| row.name == name)
}

/// The node of the row named `name` with every child `Id` 0, for a row
/// whose Lisp built-in is a plain map (the tracer records those).
pub fn builtin_node(name: &str) -> Option<Math> {
    let row = row_named(name).filter(|row| row.builtin.is_some())?;
    Math::from_op_name(name, &vec![Id::from(0usize); row.arity])
}

/// The CUDA device functions the rows define (`Spelling::Device`), in the
/// rows' order.
pub fn device_functions() -> impl Iterator<Item = &'static str> {
    ROWS.iter().filter_map(|row| match row.cuda {
        Spelling::Device(_, source) => Some(source),
        _ => None,
    })
}

elementwise! {
    Exp "exp" (x) {
        value: scalar::exp,
        partials: |b, this| [Some(this)],
        cost: Elementary,
        signs: Positive,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Call("exp"),
        cuda_f32: Spelling::Call("expf"),
        c: Spelling::Call("exp"),
        rust: Spelling::Method("exp"),
        python: Spelling::Call("np.exp"),
        builtin: ("(exp x)", "e to the power x."),
        complex: ComplexRule::Parts("(* (exp x) (cos y))", "(let* ((e (exp x)) (p (* e (sin y)))) (where (* (heaviside (neg (abs y)) 1) (heaviside (- e 1.7976931348623157e308) 0)) y p))"),
    }
    Log "log" (x) {
        value: f64::ln,
        partials: |b, this| {
            let one = b.num(1.0);
            [Some(b.div(one, x))]
        },
        cost: Elementary,
        signs: Any,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("log"),
        cuda_f32: Spelling::Call("logf"),
        c: Spelling::Call("log"),
        rust: Spelling::Method("ln"),
        python: Spelling::Call("np.log"),
        builtin: ("(log x)", "Natural logarithm (-inf at 0, NaN below)."),
        complex: ComplexRule::Parts("(log (hypot x y))", "(atan2 y x)"),
    }
    Log1p "log1p" (x) {
        value: f64::ln_1p,
        partials: |b, this| {
            let one = b.num(1.0);
            let one_plus_x = b.add2(one, x);
            [Some(b.div(one, one_plus_x))]
        },
        cost: Elementary,
        signs: Same,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("log1p"),
        cuda_f32: Spelling::Call("log1pf"),
        c: Spelling::Call("log1p"),
        rust: Spelling::Method("ln_1p"),
        python: Spelling::Call("np.log1p"),
        builtin: ("(log1p x)", "log(1 + x), accurate for small x."),
        complex: ComplexRule::Parts("(where (heaviside (- 0.5 (hypot x y)) 0) (* 0.5 (log1p (+ (* x (+ 2 x)) (* y y)))) (log (hypot (+ 1 x) y)))", "(atan2 y (+ 1 x))"),
    }
    Expm1 "expm1" (x) {
        value: f64::exp_m1,
        partials: |b, this| [Some(b.add(Math::Exp([x])))],
        cost: Elementary,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("expm1"),
        cuda_f32: Spelling::Call("expm1f"),
        c: Spelling::Call("expm1"),
        rust: Spelling::Method("exp_m1"),
        python: Spelling::Call("np.expm1"),
        builtin: ("(expm1 x)", "exp(x) - 1, accurate for small x."),
        complex: ComplexRule::Parts("(- (* (expm1 x) (cos y)) (* 2 (square (sin (* 0.5 y)))))", "(let* ((e (exp x)) (p (* e (sin y)))) (where (* (heaviside (neg (abs y)) 1) (heaviside (- e 1.7976931348623157e308) 0)) y p))"),
    }
    Sqrt "sqrt" (x) {
        value: f64::sqrt,
        partials: |b, this| {
            let half = b.num(0.5);
            [Some(b.div(half, this))]
        },
        cost: Cheap,
        signs: Custom,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("sqrt"),
        cuda_f32: Spelling::Call("sqrtf"),
        c: Spelling::Call("sqrt"),
        rust: Spelling::Method("sqrt"),
        python: Spelling::Call("np.sqrt"),
        builtin: ("(sqrt x)", "Square root (NaN for negative x)."),
        // t = sqrt((|z| + |x|) / 2); x >= 0: (t, y / 2t); x < 0:
        // (s y / 2t, s t) with s the sign of y, read from atan2(y, -1)
        // so that -0 counts as negative (the cut's lower side, as in
        // NumPy) and s y's derivative is s. d is 2t, or 1 where t is 0
        // (z = 0), which keeps 0 / d exact in f32 as in f64.
        complex: ComplexRule::Parts("(let* ((t (sqrt (* 0.5 (+ (hypot x y) (abs x))))) (h (heaviside x 1)) (d (+ (* 2 t) (heaviside (neg t) 1))) (s (- (* 2 (heaviside (atan2 y -1) 1)) 1))) (+ (* h t) (* (- 1 h) (/ (* s y) d))))", "(let* ((t (sqrt (* 0.5 (+ (hypot x y) (abs x))))) (h (heaviside x 1)) (d (+ (* 2 t) (heaviside (neg t) 1))) (s (- (* 2 (heaviside (atan2 y -1) 1)) 1))) (+ (* h (/ y d)) (* (- 1 h) s t)))"),
    }
    Sin "sin" (x) {
        value: f64::sin,
        partials: |b, this| [Some(b.add(Math::Cos([x])))],
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("sin"),
        cuda_f32: Spelling::Call("sinf"),
        c: Spelling::Call("sin"),
        rust: Spelling::Method("sin"),
        python: Spelling::Call("np.sin"),
        builtin: ("(sin x)", "Sine of x (radians)."),
        complex: ComplexRule::Parts("(let* ((c (cosh y)) (p (* (sin x) c))) (where (* (heaviside (neg (abs x)) 1) (heaviside (- c 1.7976931348623157e308) 0)) x p))", "(* (cos x) (sinh y))"),
    }
    Cos "cos" (x) {
        value: f64::cos,
        partials: |b, this| {
            let sin = b.add(Math::Sin([x]));
            [Some(b.neg(sin))]
        },
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("cos"),
        cuda_f32: Spelling::Call("cosf"),
        c: Spelling::Call("cos"),
        rust: Spelling::Method("cos"),
        python: Spelling::Call("np.cos"),
        builtin: ("(cos x)", "Cosine of x (radians)."),
        complex: ComplexRule::Parts("(* (cos x) (cosh y))", "(let* ((s (sinh y)) (p (neg (* (sin x) s)))) (where (* (heaviside (neg (abs x)) 1) (heaviside (- (abs s) 1.7976931348623157e308) 0)) (neg (* x (sign s))) p))"),
    }
    Tan "tan" (x) {
        value: f64::tan,
        partials: |b, this| {
            // 1 + tan^2, reusing the node.
            let one = b.num(1.0);
            let square = b.mul(this, this);
            [Some(b.add2(one, square))]
        },
        cost: Elementary,
        signs: Any,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("tan"),
        cuda_f32: Spelling::Call("tanf"),
        c: Spelling::Call("tan"),
        rust: Spelling::Method("tan"),
        python: Spelling::Call("np.tan"),
        builtin: ("(tan x)", "Tangent of x (radians)."),
        complex: ComplexRule::Parts("(/ (/ (sin (* 2 x)) (cosh (* 2 y))) (+ 1 (/ (cos (* 2 x)) (cosh (* 2 y)))))", "(/ (tanh (* 2 y)) (+ 1 (/ (cos (* 2 x)) (cosh (* 2 y)))))"),
    }
    Asin "asin" (x) {
        value: f64::asin,
        partials: |b, this| {
            let one = b.num(1.0);
            let square = b.mul(x, x);
            let rest = b.sub(one, square);
            let root = b.add(Math::Sqrt([rest]));
            [Some(b.div(one, root))]
        },
        cost: Elementary,
        signs: Same,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("asin"),
        cuda_f32: Spelling::Call("asinf"),
        c: Spelling::Call("asin"),
        rust: Spelling::Method("asin"),
        python: Spelling::Call("np.arcsin"),
        builtin: ("(asin x)", "Arc sine, in [-pi/2, pi/2]."),
        complex: ComplexRule::Composed("(* #c(0.0 -1.0) (log (+ (* #c(0.0 1.0) z) (sqrt (- 1 (square z))))))"),
    }
    Acos "acos" (x) {
        value: f64::acos,
        partials: |b, this| {
            let one = b.num(1.0);
            let square = b.mul(x, x);
            let rest = b.sub(one, square);
            let root = b.add(Math::Sqrt([rest]));
            let d = b.div(one, root);
            [Some(b.neg(d))]
        },
        cost: Elementary,
        signs: NonNegative,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Call("acos"),
        cuda_f32: Spelling::Call("acosf"),
        c: Spelling::Call("acos"),
        rust: Spelling::Method("acos"),
        python: Spelling::Call("np.arccos"),
        builtin: ("(acos x)", "Arc cosine, in [0, pi]."),
        complex: ComplexRule::Composed("(- 1.5707963267948966 (* #c(0.0 -1.0) (log (+ (* #c(0.0 1.0) z) (sqrt (- 1 (square z)))))))"),
    }
    Atan "atan" (x) {
        value: f64::atan,
        partials: |b, this| {
            let one = b.num(1.0);
            let square = b.mul(x, x);
            let denominator = b.add2(one, square);
            [Some(b.div(one, denominator))]
        },
        cost: Elementary,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("atan"),
        cuda_f32: Spelling::Call("atanf"),
        c: Spelling::Call("atan"),
        rust: Spelling::Method("atan"),
        python: Spelling::Call("np.arctan"),
        builtin: ("(atan x)", "Arc tangent, in (-pi/2, pi/2)."),
        complex: ComplexRule::Composed("(* #c(0.0 0.5) (- (log1p (* #c(0.0 -1.0) z)) (log1p (* #c(0.0 1.0) z))))"),
    }
    Atan2 "atan2" (y, x) {
        value: f64::atan2,
        partials: |b, this| {
            let (x2, y2) = (b.mul(x, x), b.mul(y, y));
            let r2 = b.add2(x2, y2);
            let d_y = b.div(x, r2);
            let y_over_r2 = b.div(y, r2);
            [Some(d_y), Some(b.neg(y_over_r2))]
        },
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("atan2"),
        cuda_f32: Spelling::Call("atan2f"),
        c: Spelling::Call("atan2"),
        rust: Spelling::Method("atan2"),
        python: Spelling::Call("np.arctan2"),
        builtin: ("(atan2 y x)", "The angle of the point (x, y), in (-pi, pi]."),
    }
    Sinh "sinh" (x) {
        value: f64::sinh,
        partials: |b, this| [Some(b.add(Math::Cosh([x])))],
        cost: Elementary,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("sinh"),
        cuda_f32: Spelling::Call("sinhf"),
        c: Spelling::Call("sinh"),
        rust: Spelling::Method("sinh"),
        python: Spelling::Call("np.sinh"),
        builtin: ("(sinh x)", "Hyperbolic sine."),
        complex: ComplexRule::Parts("(* (sinh x) (cos y))", "(let* ((c (cosh x)) (p (* c (sin y)))) (where (* (heaviside (neg (abs y)) 1) (heaviside (- c 1.7976931348623157e308) 0)) y p))"),
    }
    Cosh "cosh" (x) {
        value: f64::cosh,
        partials: |b, this| [Some(b.add(Math::Sinh([x])))],
        cost: Elementary,
        signs: Positive,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("cosh"),
        cuda_f32: Spelling::Call("coshf"),
        c: Spelling::Call("cosh"),
        rust: Spelling::Method("cosh"),
        python: Spelling::Call("np.cosh"),
        builtin: ("(cosh x)", "Hyperbolic cosine."),
        complex: ComplexRule::Parts("(* (cosh x) (cos y))", "(let* ((s (sinh x)) (p (* s (sin y)))) (where (* (heaviside (neg (abs y)) 1) (heaviside (- (abs s) 1.7976931348623157e308) 0)) (* y (sign s)) p))"),
    }
    Tanh "tanh" (x) {
        value: scalar::tanh,
        partials: |b, this| {
            let one = b.num(1.0);
            let square = b.mul(this, this);
            [Some(b.sub(one, square))]
        },
        cost: Elementary,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("tanh"),
        cuda_f32: Spelling::Call("tanhf"),
        c: Spelling::Call("tanh"),
        rust: Spelling::Method("tanh"),
        python: Spelling::Call("np.tanh"),
        builtin: ("(tanh x)", "Hyperbolic tangent."),
        complex: ComplexRule::Parts("(/ (tanh (* 2 x)) (+ 1 (/ (cos (* 2 y)) (cosh (* 2 x)))))", "(/ (/ (sin (* 2 y)) (cosh (* 2 x))) (+ 1 (/ (cos (* 2 y)) (cosh (* 2 x)))))"),
    }
    Sigmoid "sigmoid" (x) {
        value: scalar::sigmoid,
        partials: |b, this| {
            let one = b.num(1.0);
            let complement = b.sub(one, this);
            [Some(b.mul(this, complement))]
        },
        cost: Elementary,
        signs: Positive,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Device("eps_sigmoid", r#"__device__ __forceinline__ double eps_sigmoid(double x) {
    double e = exp(-fabs(x));
    return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("1.0/(1.0 + exp(-({0})))"),
        rust: Spelling::Inline("1.0/(1.0 + (-({0})).exp())"),
        python: Spelling::Call("scipy.special.expit"),
        builtin: ("(sigmoid x)", "The logistic function 1 / (1 + exp(-x)), computed without overflow."),
        complex: ComplexRule::Composed("(/ 1 (+ 1 (exp (neg z))))"),
    }
    Relu "relu" (x) {
        value: scalar::relu,
        partials: |b, this| {
            let zero = b.num(0.0);
            [Some(b.add(Math::Heaviside([x, zero])))]
        },
        cost: Select,
        signs: Custom,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_relu", "__device__ __forceinline__ double eps_relu(double x) { return (x > 0.0 || isnan(x)) ? x : 0.0; }\n"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Template("fmax({0}, 0.0)"),
        rust: Spelling::Template("{(0)}.max(0.0)"),
        python: Spelling::Template("np.maximum({0}, 0.0)"),
        builtin: elsewhere,
    }
    Softplus "softplus" (x) {
        value: scalar::softplus,
        partials: |b, this| [Some(b.add(Math::Sigmoid([x])))],
        cost: Elementary,
        signs: Positive,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Device("eps_softplus", "__device__ __forceinline__ double eps_softplus(double x) { return fmax(x, 0.0) + log1p(exp(-fabs(x))); }\n"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("fmax({0}, 0.0) + log1p(exp(-fabs({0})))"),
        rust: Spelling::Inline("{(0)}.max(0.0) + (-({(0)}).abs()).exp().ln_1p()"),
        python: Spelling::Template("np.logaddexp(0.0, {0})"),
        builtin: ("(softplus x)", "log(1 + exp(x)), computed without overflow."),
    }
    Abs "abs" (x) {
        value: f64::abs,
        partials: |b, this| [Some(b.add(Math::Sign([x])))],
        cost: Select,
        signs: Magnitude,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("fabs"),
        cuda_f32: Spelling::Call("fabsf"),
        c: Spelling::Call("fabs"),
        rust: Spelling::Method("abs"),
        python: Spelling::Call("np.abs"),
        builtin: elsewhere,
    }
    Sign "sign" (x) {
        value: scalar::sign,
        partials: |b, this| [None],
        cost: Select,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_sign", "__device__ __forceinline__ double eps_sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x); }\n"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("({0} > 0.0) - ({0} < 0.0)"),
        rust: Spelling::Inline("if {0} > 0.0 { 1.0 } else if {0} < 0.0 { -1.0 } else { {0} }"),
        python: Spelling::Call("np.sign"),
        builtin: elsewhere,
    }
    Heaviside "heaviside" (x, at_zero) {
        value: scalar::heaviside,
        partials: |b, this| [None, None],
        cost: Select,
        signs: Custom,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_heaviside", r#"__device__ __forceinline__ double eps_heaviside(double x, double at_zero) {
    return x > 0.0 ? 1.0 : (x < 0.0 ? 0.0 : (x == 0.0 ? at_zero : eps_nan()));
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{0} > 0.0 ? 1.0 : ({0} < 0.0 ? 0.0 : {1})"),
        rust: Spelling::Inline("if {0} > 0.0 { 1.0 } else if {0} < 0.0 { 0.0 } else { {1} }"),
        python: Spelling::Call("np.heaviside"),
        builtin: elsewhere,
    }
    Xlogy "xlogy" (x, y) {
        value: scalar::xlogy,
        partials: |b, this| {
            let log_y = b.add(Math::Log([y]));
            [Some(log_y), Some(b.div(x, y))]
        },
        cost: Elementary,
        signs: Any,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Device("eps_xlogy", r#"__device__ __forceinline__ double eps_xlogy(double x, double y) {
    return (x == 0.0 && !isnan(y)) ? 0.0 : x * log(y);
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{0} == 0.0 ? 0.0 : {0}*log({1})"),
        rust: Spelling::Inline("if {0} == 0.0 { 0.0 } else { {0}*{(1)}.ln() }"),
        python: Spelling::Call("scipy.special.xlogy"),
        builtin: ("(xlogy x y)", "x * log(y), and 0 where x is 0 (SciPy's xlogy), elementwise."),
    }
    Min "min" (x, y) {
        value: scalar::nan_min,
        partials: |b, this| {
            // Ties split evenly (1/2 each), so (min x x) still has
            // derivative 1.
            let half = b.num(0.5);
            let (x_minus_y, y_minus_x) = (b.sub(x, y), b.sub(y, x));
            let d_x = b.add(Math::Heaviside([y_minus_x, half]));
            let d_y = b.add(Math::Heaviside([x_minus_y, half]));
            [Some(d_x), Some(d_y)]
        },
        cost: Select,
        signs: Custom,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_min", r#"__device__ __forceinline__ double eps_min(double a, double b) {
    if (isnan(a) || isnan(b)) return eps_nan();
    if (a == b) return signbit(a) ? a : b;
    return b < a ? b : a;
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Call("fmin"),
        rust: Spelling::Method("min"),
        python: Spelling::Call("np.minimum"),
        builtin: elsewhere,
    }
    Max "max" (x, y) {
        value: scalar::nan_max,
        partials: |b, this| {
            let half = b.num(0.5);
            let (x_minus_y, y_minus_x) = (b.sub(x, y), b.sub(y, x));
            let d_x = b.add(Math::Heaviside([x_minus_y, half]));
            let d_y = b.add(Math::Heaviside([y_minus_x, half]));
            [Some(d_x), Some(d_y)]
        },
        cost: Select,
        signs: Custom,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_max", r#"// NaN-propagating, -0 below +0 (as on the CPU).
__device__ __forceinline__ double eps_max(double a, double b) {
    if (isnan(a) || isnan(b)) return eps_nan();
    if (a == b) return signbit(a) ? b : a;
    return b > a ? b : a;
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Call("fmax"),
        rust: Spelling::Method("max"),
        python: Spelling::Call("np.maximum"),
        builtin: elsewhere,
    }
    Lgamma "lgamma" (x) {
        value: scalar::gamma::lgamma,
        partials: |b, this| [Some(b.add(Math::Digamma([x])))],
        cost: Series,
        signs: Any,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Special("eps_lgamma"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Call("lgamma"),
        rust: Spelling::Missing,
        python: Spelling::Call("scipy.special.gammaln"),
        builtin: ("(lgamma x)", "The logarithm of the absolute value of the gamma function, ln |Γ(x)|, elementwise: +inf at the poles 0, -1, -2, ... (and at ±inf). Accurate to a few units in the last place for x > 0 (also near its zeros 1 and 2); for x < 0 it loses relative accuracy only near its zeros there. Its derivative is (digamma x); works in symbolic expressions too."),
    }
    Digamma "digamma" (x) {
        value: scalar::gamma::digamma,
        partials: |b, this| {
            let order = b.num(1.0);
            [Some(b.add(Math::Polygamma([order, x])))]
        },
        cost: Series,
        signs: Any,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Special("eps_digamma"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Missing,
        rust: Spelling::Missing,
        python: Spelling::Call("scipy.special.digamma"),
        builtin: ("(digamma x)", "The digamma function ψ(x) = d/dx ln Γ(x), elementwise: -inf at +0, +inf at -0, NaN at -1, -2, ... (as SciPy's psi). Accurate to about 1e-15 relative for x > 0, its zero 1.4616... included; for x < 0 near its zeros there, about 1e-15 absolute. Its derivative is (polygamma 1 x)."),
    }
    Polygamma "polygamma" (n, x) {
        value: scalar::gamma::polygamma,
        partials: |b, this| {
            // The order is a whole number: no derivative in it.
            let one = b.num(1.0);
            let next = b.add2(n, one);
            [None, Some(b.add(Math::Polygamma([next, x])))]
        },
        cost: Series,
        signs: Custom,
        domain: Restricted,
        zero: Exact,
        cuda: Spelling::Special("eps_polygamma"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Missing,
        rust: Spelling::Missing,
        python: Spelling::Call("scipy.special.polygamma"),
        builtin: elsewhere,
    }
    Erf "erf" (x) {
        value: scalar::erf::erf,
        partials: |b, this| {
            // 2/sqrt(pi) exp(-x^2).
            let square = b.mul(x, x);
            let minus_square = b.neg(square);
            let gauss = b.add(Math::Exp([minus_square]));
            let scale = b.num(FRAC_2_SQRT_PI);
            [Some(b.mul(scale, gauss))]
        },
        cost: Special,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Special("eps_erf"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Call("erf"),
        rust: Spelling::Missing,
        python: Spelling::Call("scipy.special.erf"),
        builtin: ("(erf x)", "The error function 2/sqrt(pi) ∫_0^x exp(-t²) dt, elementwise; ±1 at ±inf. Accurate to a few units in the last place. Its derivative is 2/sqrt(pi) exp(-x²)."),
    }
    Erfc "erfc" (x) {
        value: scalar::erf::erfc,
        partials: |b, this| {
            // -2/sqrt(pi) exp(-x^2).
            let square = b.mul(x, x);
            let minus_square = b.neg(square);
            let gauss = b.add(Math::Exp([minus_square]));
            let scale = b.num(-FRAC_2_SQRT_PI);
            [Some(b.mul(scale, gauss))]
        },
        cost: Special,
        signs: Positive,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Special("eps_erfc"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Call("erfc"),
        rust: Spelling::Missing,
        python: Spelling::Call("scipy.special.erfc"),
        builtin: ("(erfc x)", "The complementary error function 1 - erf(x), elementwise, with full relative accuracy in the tail ((erfc 10) is 2.088e-45; it underflows to 0 beyond x = 27.2); 2 at -inf."),
    }
    Square "square" (x) {
        value: scalar::square,
        partials: |b, this| {
            let two = b.num(2.0);
            [Some(b.mul(two, x))]
        },
        cost: Arithmetic,
        signs: Magnitude,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Template("{0} * {0}"),
        // Exact: a product of two floats fits in a double.
        cuda_f32: Spelling::Template("{0} * {0}"),
        c: Spelling::Inline("{(0)}*{(0)}"),
        rust: Spelling::Inline("{(0)}*{(0)}"),
        python: Spelling::Call("np.square"),
        builtin: ("(square x)", "x * x, elementwise (NumPy's square). Its derivative is 2x."),
        complex: ComplexRule::Parts("(* (- x y) (+ x y))", "(* 2 x y)"),
    }
    Cbrt "cbrt" (x) {
        value: f64::cbrt,
        partials: |b, this| {
            // 1 / (3 cbrt(x)^2): +inf at 0, as in NumPy and JAX.
            let one = b.num(1.0);
            let square = b.mul(this, this);
            let three = b.num(3.0);
            let denominator = b.mul(three, square);
            [Some(b.div(one, denominator))]
        },
        cost: Elementary,
        signs: Same,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("cbrt"),
        cuda_f32: Spelling::Call("cbrtf"),
        c: Spelling::Call("cbrt"),
        rust: Spelling::Method("cbrt"),
        python: Spelling::Call("np.cbrt"),
        builtin: ("(cbrt x)", "The real cube root, negative for negative x (NumPy's cbrt), elementwise. Its derivative 1/(3 cbrt(x)²) is +inf at 0, as in NumPy and JAX."),
    }
    Exp2 "exp2" (x) {
        value: f64::exp2,
        partials: |b, this| {
            let ln2 = b.num(LN_2);
            [Some(b.mul(ln2, this))]
        },
        cost: Elementary,
        signs: Positive,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Call("exp2"),
        cuda_f32: Spelling::Call("exp2f"),
        c: Spelling::Call("exp2"),
        rust: Spelling::Method("exp2"),
        python: Spelling::Call("np.exp2"),
        builtin: ("(exp2 x)", "2 to the power x (NumPy's exp2), elementwise. Its derivative is log(2) 2^x."),
        complex: ComplexRule::Composed("(exp (* 0.6931471805599453 z))"),
    }
    Hypot "hypot" (x, y) {
        value: f64::hypot,
        partials: |b, this| {
            // x / hypot and y / hypot; at the origin 1/2 each, as JAX's
            // hypot gives: h = heaviside(-hypot, 1/2) is 1/2 there and 0
            // elsewhere, so (x + h) / (hypot + 2h) is 1/2 there.
            let minus = b.neg(this);
            let half = b.num(0.5);
            let h = b.add(Math::Heaviside([minus, half]));
            let two = b.num(2.0);
            let twice = b.mul(two, h);
            let denominator = b.add2(this, twice);
            let (x_plus, y_plus) = (b.add2(x, h), b.add2(y, h));
            let d_x = b.div(x_plus, denominator);
            [Some(d_x), Some(b.div(y_plus, denominator))]
        },
        cost: Elementary,
        signs: NonNegative,
        domain: All,
        zero: Exact,
        cuda: Spelling::Call("hypot"),
        cuda_f32: Spelling::Call("hypotf"),
        c: Spelling::Call("hypot"),
        rust: Spelling::Method("hypot"),
        python: Spelling::Call("np.hypot"),
        builtin: ("(hypot x y)", "sqrt(x² + y²) without overflow or underflow in the squares (NumPy's hypot), elementwise with broadcasting; +inf when either is infinite, even with a NaN. Its partials are x/hypot and y/hypot, and 1/2 each at the origin (JAX's convention)."),
    }
    Logaddexp "logaddexp" (x, y) {
        value: scalar::logaddexp,
        partials: |b, this| {
            // exp(x - this) = sigmoid(x - y), finite everywhere (NaN where
            // x - y is: both arguments the same infinity).
            let (x_minus_y, y_minus_x) = (b.sub(x, y), b.sub(y, x));
            let d_x = b.add(Math::Sigmoid([x_minus_y]));
            [Some(d_x), Some(b.add(Math::Sigmoid([y_minus_x])))]
        },
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_logaddexp", r#"// NumPy's logaddexp: equal arguments (infinities included) give x + log 2.
__device__ __forceinline__ double eps_logaddexp(double x, double y) {
    if (x == y) return x + 0.6931471805599453;
    double d = x - y;
    if (d > 0.0) return x + log1p(exp(-d));
    if (d <= 0.0) return y + log1p(exp(d));
    return d;
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{0} == {1} ? {0} + 0.6931471805599453 : fmax({0}, {1}) + log1p(exp(-fabs({0} - {(1)})))"),
        rust: Spelling::Inline("if {0} == {1} { {0} + std::f64::consts::LN_2 } else { {(0)}.max({1}) + (-({0} - {(1)}).abs()).exp().ln_1p() }"),
        python: Spelling::Call("np.logaddexp"),
        builtin: ("(logaddexp x y)", "log(exp(x) + exp(y)) without overflow (NumPy's logaddexp), elementwise with broadcasting: max(x, y) + log1p(exp(-|x - y|)), and x + log(2) where x = y, so -inf with -inf is -inf and inf with inf is inf. Its partials are (sigmoid (- x y)) and (sigmoid (- y x))."),
    }
    Logaddexp2 "logaddexp2" (x, y) {
        value: scalar::logaddexp2,
        partials: |b, this| {
            // 2^(x - this) = sigmoid(log(2) (x - y)).
            let ln2 = b.num(LN_2);
            let (x_minus_y, y_minus_x) = (b.sub(x, y), b.sub(y, x));
            let (scaled_x, scaled_y) = (b.mul(ln2, x_minus_y), b.mul(ln2, y_minus_x));
            let d_x = b.add(Math::Sigmoid([scaled_x]));
            [Some(d_x), Some(b.add(Math::Sigmoid([scaled_y])))]
        },
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_logaddexp2", r#"// NumPy's logaddexp2: equal arguments (infinities included) give x + 1.
__device__ __forceinline__ double eps_logaddexp2(double x, double y) {
    if (x == y) return x + 1.0;
    double d = x - y;
    if (d > 0.0) return x + log1p(exp2(-d)) * 1.4426950408889634;
    if (d <= 0.0) return y + log1p(exp2(d)) * 1.4426950408889634;
    return d;
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{0} == {1} ? {0} + 1.0 : fmax({0}, {1}) + log1p(exp2(-fabs({0} - {(1)})))*1.4426950408889634"),
        rust: Spelling::Inline("if {0} == {1} { {0} + 1.0 } else { {(0)}.max({1}) + (-({0} - {(1)}).abs()).exp2().ln_1p()*std::f64::consts::LOG2_E }"),
        python: Spelling::Call("np.logaddexp2"),
        builtin: ("(logaddexp2 x y)", "log2(2^x + 2^y) without overflow (NumPy's logaddexp2), elementwise with broadcasting; x + 1 where x = y, so -inf with -inf is -inf. Its partials are (sigmoid (* (log 2) (- x y))) and the same with x and y swapped."),
    }
    Sinc "sinc" (x) {
        value: scalar::sinc,
        partials: |b, this| {
            // (cos(pi x) - sinc(x)) / x, and 0 at 0: there the numerator
            // is 0 and the denominator x + heaviside(-|x|, 1) is 1 (NumPy
            // and JAX give 0 too). Near 0 the difference loses digits to
            // cancellation (an absolute error of about 1e-16 / |x|), as
            // theirs do.
            let pi = b.num(PI);
            let pi_x = b.mul(pi, x);
            let cos = b.add(Math::Cos([pi_x]));
            let numerator = b.sub(cos, this);
            let magnitude = b.add(Math::Abs([x]));
            let minus = b.neg(magnitude);
            let one = b.num(1.0);
            let at_zero = b.add(Math::Heaviside([minus, one]));
            let denominator = b.add2(x, at_zero);
            [Some(b.div(numerator, denominator))]
        },
        cost: Elementary,
        signs: Any,
        domain: All,
        zero: Exact,
        cuda: Spelling::Device("eps_sinc", r#"__device__ __forceinline__ double eps_sinc(double x) {
    if (x == 0.0) return 1.0;
    double t = 3.141592653589793 * x;
    return sin(t) / t;
}
"#),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{0} == 0.0 ? 1.0 : sin(3.141592653589793*{(0)})/(3.141592653589793*{(0)})"),
        rust: Spelling::Inline("if {0} == 0.0 { 1.0 } else { (std::f64::consts::PI*{(0)}).sin()/(std::f64::consts::PI*{(0)}) }"),
        python: Spelling::Call("np.sinc"),
        builtin: ("(sinc x)", "The normalized sinc function sin(pi x)/(pi x), and 1 at 0 (NumPy's sinc), elementwise. Its derivative (cos(pi x) - sinc(x))/x is 0 at 0."),
    }
    Deg2rad "deg2rad" (x) {
        value: scalar::deg2rad,
        partials: |b, this| [Some(b.num(PI / 180.0))],
        cost: Arithmetic,
        signs: Same,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Template("{0} * 0.017453292519943295"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{(0)}*0.017453292519943295"),
        rust: Spelling::Inline("{(0)}*0.017453292519943295"),
        python: Spelling::Call("np.deg2rad"),
        builtin: ("(deg2rad x)", "x degrees in radians, x * (pi/180) (NumPy's deg2rad), elementwise."),
    }
    Rad2deg "rad2deg" (x) {
        value: scalar::rad2deg,
        partials: |b, this| [Some(b.num(180.0 / PI))],
        cost: Arithmetic,
        signs: Same,
        domain: All,
        zero: Underflows,
        cuda: Spelling::Template("{0} * 57.29577951308232"),
        cuda_f32: Spelling::Missing,
        c: Spelling::Inline("{(0)}*57.29577951308232"),
        rust: Spelling::Inline("{(0)}*57.29577951308232"),
        python: Spelling::Call("np.rad2deg"),
        builtin: ("(rad2deg x)", "x radians in degrees, x * (180/pi) (NumPy's rad2deg), elementwise."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_agree_with_the_language() {
        for row in ROWS {
            let children = vec![Id::from(0usize); row.arity];
            let node = Math::from_op_name(row.name, &children).expect("a row is an operator");
            assert_eq!(super::row(&node).map(|r| r.name), Some(row.name));
            assert_eq!(row_named(row.name).map(|r| r.arity), Some(row.arity));
            let arity = match row.value {
                ScalarFn::Unary(_) => 1,
                ScalarFn::Binary(_) => 2,
            };
            assert_eq!(arity, row.arity, "{}", row.name);
        }
        assert!(row_named("+").is_none());
    }

    #[test]
    fn templates_fill_operands() {
        let args = ["x".to_string(), "a + b".to_string()];
        let wrapped = ["x".to_string(), "(a + b)".to_string()];
        let spelled = Spelling::Inline("{0} - {(1)}").apply(&args, &wrapped);
        assert_eq!(spelled.as_deref(), Some("(x - (a + b))"));
        let spelled = Spelling::Template("f({1}, {0})").apply(&args, &wrapped);
        assert_eq!(spelled.as_deref(), Some("f(a + b, x)"));
        assert_eq!(Spelling::Missing.apply(&args, &wrapped), None);
    }

    #[test]
    fn every_device_function_is_named_in_its_source() {
        for row in ROWS {
            if let Spelling::Device(name, source) = row.cuda {
                assert!(source.contains(&format!("double {name}(")), "{}", row.name);
                assert!(source.ends_with('\n'), "{}", row.name);
            }
        }
    }
}

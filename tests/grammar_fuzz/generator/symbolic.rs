//! Symbolic differentiation and the formula tools on generated quoted
//! formulas: `diff` (n-th derivatives included), `grad`, `jacobian` and
//! `hessian` of expressions, `simplify` (with assumptions), `evaluate`,
//! `lambdify`, `cse`, `latex`, `infix`, `codegen`, `subs`, `explain`,
//! `sparsity`, and `defderiv` / `defrule`. Formulas mix the usual
//! functions with wrong arities, unknown heads and odd constants.

use super::Gen;

const UNARY: &[&str] = &[
    "sin",
    "cos",
    "tan",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "abs",
    "neg",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "log1p",
    "expm1",
    "relu",
    "softplus",
    "lgamma",
    "digamma",
    "erf",
    "erfc",
    "sign",
    "floor",
    "heaviside",
    "log2",
    "log10",
    "square",
    "cbrt",
    "exp2",
    "sinc",
    "deg2rad",
    "rad2deg",
];

const BINARY: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "pow",
    "atan2",
    "max",
    "min",
    "xlogy",
    "polygamma",
    "multigammaln",
    "hypot",
    "logaddexp",
    "logaddexp2",
];

const VARIABLES: &[&str] = &["x", "y", "z"];

const CONSTANTS: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "0.5",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "5e-324",
    "pi",
    "9223372036854775807",
    "-9223372036854775808",
];

/// Leaves that are not numbers or variables.
const ODD_LEAVES: &[&str] = &["\"s\"", "#t", "()", "[1 2]", ":k", "(1 2)", "nil"];

/// Variable lists for the multivariate forms.
const VARIABLE_LISTS: &[&str] = &["'(x y)", "'(x)", "'()", "'(x x)", "'(y z x)", "'(1)", "'x"];

const BINDINGS: &[&str] = &[
    "'((x 1.0) (y 2.0) (z 0.5))",
    "'((x 0) (y -1) (z nan))",
    "'((x [1 2 3]) (y 2.0) (z 0.0))",
    "'((x 1.0))",
    "'()",
    "'((x \"s\"))",
];

impl Gen<'_> {
    pub(super) fn symbolic(&mut self, depth: u32) -> String {
        let d = (depth - 1).min(4);
        let e = self.formula(d);
        match self.rng.below(18) {
            0 | 1 => format!("(diff '{e} '{})", self.variable()),
            2 => format!("(diff '{e} '{} {})", self.variable(), self.order()),
            3 => format!("(grad '{e} {})", self.rng.pick(VARIABLE_LISTS)),
            4 => format!(
                "(jacobian '({e} {}) {})",
                self.formula(d),
                self.rng.pick(VARIABLE_LISTS)
            ),
            5 => format!("(hessian '{e} {})", self.rng.pick(VARIABLE_LISTS)),
            6 => self.simplify(e),
            7 => format!("(evaluate '{e} {})", self.rng.pick(BINDINGS)),
            8 => format!(
                "((lambdify '(x y z) '{e}) {} 2.0 0.5)",
                self.point_or_number()
            ),
            9 => format!(
                "({} '{e})",
                self.rng
                    .pick(&["expr-size", "cse", "latex", "infix", "explain"])
            ),
            10 => format!(
                "(codegen '{e} '(x y z) :lang {})",
                self.rng.pick(&["'c", "'rust", "'python", "'fortran"])
            ),
            11 => format!("(subs '{e} '((x (sin y)) (y {})))", self.formula(1)),
            12 => format!("(sparsity '({e} {}) '(x y z))", self.formula(d)),
            13 => self.derived_chain(e),
            14 => format!("(explain '{e} :wrt 'x :assume '((x positive)))"),
            15 => self.defderiv(d),
            16 if self.rng.chance(0.2) => self.defrule(),
            _ => format!("(diff '{e} 'x)"),
        }
    }

    /// A formula over x, y and z, `depth` deep.
    fn formula(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.chance(0.25) {
            return self.formula_leaf();
        }
        let d = depth - 1;
        match self.rng.below(20) {
            0..=6 => {
                let op = self.rng.pick(UNARY);
                format!("({op} {})", self.formula(d))
            }
            7..=13 => {
                let op = self.rng.pick(BINARY);
                format!("({op} {} {})", self.formula(d), self.formula(d))
            }
            14 | 15 => {
                let op = self.rng.pick(&["+", "*", "-", "max"]);
                let count = self.rng.between(0, 4);
                let args: Vec<String> = (0..count).map(|_| self.formula(d)).collect();
                format!("({op} {})", args.join(" "))
            }
            16 => {
                // A wrong number of arguments.
                let op = self.rng.pick(UNARY);
                format!("({op} {} {})", self.formula(d), self.formula(d))
            }
            17 => format!("(unknown-f {})", self.formula(d)),
            18 => format!(
                "(let* ((t1 {})) (* t1 {}))",
                self.formula(d),
                self.formula(d)
            ),
            _ => format!("(if (> x 0) {} {})", self.formula(d), self.formula(d)),
        }
    }

    fn formula_leaf(&mut self) -> String {
        match self.rng.below(20) {
            0..=10 => self.variable(),
            11..=18 => self.rng.pick(CONSTANTS).to_string(),
            _ => self.rng.pick(ODD_LEAVES).to_string(),
        }
    }

    fn variable(&mut self) -> String {
        self.rng.pick(VARIABLES).to_string()
    }

    fn order(&mut self) -> &'static str {
        const ORDERS: &[&str] = &["0", "1", "2", "3", "-1", "1.5", "'x", "9223372036854775807"];
        ORDERS[self.rng.below(ORDERS.len())]
    }

    fn point_or_number(&mut self) -> String {
        self.rng
            .pick(&["1.0", "[1 2 3]", "(zeros 0)", "nan", "\"s\""])
            .to_string()
    }

    fn simplify(&mut self, e: String) -> String {
        match self.rng.below(3) {
            0 => format!("(simplify '{e})"),
            1 => format!(
                "(simplify '{e} :assume '((x {}) (y integer)))",
                self.rng
                    .pick(&["positive", "negative", "nonnegative", "integer", "bogus"])
            ),
            _ => format!("(simplify '({e} {}))", self.formula(2)),
        }
    }

    /// The output of one symbolic function fed to another.
    fn derived_chain(&mut self, e: String) -> String {
        match self.rng.below(4) {
            0 => format!("(simplify (diff '{e} 'x))"),
            1 => format!("((lambdify '(x y) (hessian '{e} '(x y))) 1.0 2.0)"),
            2 => format!("(evaluate (cse (grad '{e} '(x y))) '((x 0.5) (y 2.0) (z 1.0)))"),
            _ => format!("(latex (diff (diff '{e} 'y) 'x))"),
        }
    }

    /// `defderiv` of a fresh name, then used symbolically and numerically.
    fn defderiv(&mut self, d: u32) -> String {
        let name = self.fresh_name("dd");
        let body = self.formula(d);
        let partial = self.formula(d);
        format!(
            "(begin (defderiv {name} (x) {body} ({partial})) (list (diff '({name} (* x x)) 'x) ((grad (lambda (x) ({name} x))) 0.5)))"
        )
    }

    /// A simplifier rule (kept rare: it stays for the engine's batch).
    fn defrule(&mut self) -> String {
        let name = self.fresh_name("rule");
        let (lhs, rhs) = *self.rng.pick(&[
            ("'(+ ?a 0)", "'?a"),
            ("'(* ?a 1)", "'(* 1 (* ?a 1))"),
            ("'?a", "'(+ ?a 0)"),
            ("'(sin ?a)", "'?b"),
            ("'(f ?a)", "'?a"),
            ("1", "2"),
        ]);
        format!("(begin (defrule {name} {lhs} {rhs}) (simplify '(+ (* x 1) 0)))")
    }
}

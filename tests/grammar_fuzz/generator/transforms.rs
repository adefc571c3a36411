//! Numeric transformations of generated lambdas: `grad` (with `:wrt`),
//! `value-and-grad`, `jit` (called again to replay its tape), `jvp`,
//! `vjp`, `vmap`, the Jacobians and Hessians, `scan` in both forms,
//! `while-loop`, `checkpoint`, custom rules, the implicit solvers, and
//! nestings of them. The lambdas' bodies favour built-ins that have
//! derivatives, over the traced parameters.

use super::super::pools::POINTS;
use super::Gen;

/// Checkpointing strategies of `scan`, a wrong one included.
const STRATEGIES: &[&str] = &[
    "",
    " :checkpoint 'store-all",
    " :checkpoint 'recompute",
    " :checkpoint 'revolve :snapshots 1",
    " :checkpoint 'revolve :snapshots 0",
    " :checkpoint 'auto :memory-budget 100",
    " :checkpoint 'nope",
];

/// What `:wrt` may say.
const WRT: &[&str] = &["'(0 1)", "'all", "1", "'(1)", "5", "'(0 0)", "'()", "-1"];

/// Transformations that turn a function into a function of the same
/// arguments.
const WRAPPERS: &[&str] = &[
    "grad",
    "jit",
    "vmap",
    "jacobian",
    "hessian",
    "jacfwd",
    "jacrev",
    "checkpoint",
    "value-and-grad",
];

impl Gen<'_> {
    pub(super) fn transform(&mut self, depth: u32) -> String {
        let d = (depth - 1).min(3);
        match self.rng.below(21) {
            0 => format!("((grad {}) {})", self.traced(1, true, d), self.point()),
            1 => self.grad_wrt(d),
            2 => format!(
                "((value-and-grad {}) {})",
                self.traced(1, true, d),
                self.point()
            ),
            3 => format!("((jit {}) {})", self.traced(1, false, d), self.point()),
            4 => self.jit_replay(d),
            5 => self.forward_mode(d),
            6 => self.vjp(d),
            7 => self.vmap(d),
            8 => self.dense_derivative(d),
            9 => format!(
                "(hvp {} (list {}) {})",
                self.traced(1, true, d),
                self.point(),
                self.point()
            ),
            10 => self.scan_count(d),
            11 => self.scan_over(d),
            12 => self.while_loop_form(d),
            13 => self.inspection(d),
            14 => self.sparse(d),
            15 => self.nested(d),
            16 => self.custom_rule(d),
            17 => self.solver(d),
            18 => self.grad_through_scan(d),
            19 => self.long_loop(d),
            _ => format!(
                "(dynamic-wind (lambda () (debug-nans #t)) (lambda () ((grad {}) {})) (lambda () (debug-nans #f)))",
                self.traced(1, true, d),
                self.point()
            ),
        }
    }

    /// A lambda of `arity` parameters whose body is built mostly from
    /// differentiable built-ins; `scalar` sums its result.
    fn traced(&mut self, arity: usize, scalar: bool, d: u32) -> String {
        let params: Vec<String> = (0..arity).map(|_| self.fresh_name("x")).collect();
        let body = self.with_bindings(&params, |g| g.traced_body(d));
        let body = if scalar && self.rng.chance(0.8) {
            format!("(sum {body})")
        } else {
            body
        };
        format!("(lambda ({}) {body})", params.join(" "))
    }

    fn traced_body(&mut self, d: u32) -> String {
        if d == 0 || self.rng.chance(0.15) {
            return self.numeric_atom();
        }
        match self.rng.below(10) {
            0 => self.expr(d),
            1 => format!(
                "(if (> (sum {}) 0) {} {})",
                self.atom(),
                self.traced_body(d - 1),
                self.traced_body(d - 1)
            ),
            _ => self.builtin_call(d, true),
        }
    }

    /// A value to call a transformed function at: an awkward point or
    /// any expression.
    fn point(&mut self) -> String {
        if self.rng.chance(0.85) {
            self.rng.pick(POINTS).to_string()
        } else {
            self.expr(2)
        }
    }

    fn grad_wrt(&mut self, d: u32) -> String {
        let f = self.traced(2, true, d);
        let wrt = self.rng.pick(WRT);
        let head = if self.rng.chance(0.5) {
            "grad"
        } else {
            "value-and-grad"
        };
        format!(
            "(({head} {f} :wrt {wrt}) {} {})",
            self.point(),
            self.point()
        )
    }

    /// A jitted function called at one point twice (the second call
    /// replays the tape) and at another shape.
    fn jit_replay(&mut self, d: u32) -> String {
        let scalar = self.rng.chance(0.5);
        let f = self.traced(1, scalar, d);
        let (p, q) = (self.point(), self.point());
        let head = if self.rng.chance(0.7) { "jit" } else { "grad" };
        format!("(let ((jf ({head} {f}))) (list (jf {p}) (jf {p}) (jf {q})))")
    }

    fn forward_mode(&mut self, d: u32) -> String {
        let f = self.traced(1, false, d);
        format!("(jvp {f} (list {}) (list {}))", self.point(), self.point())
    }

    fn vjp(&mut self, d: u32) -> String {
        let f = self.traced(1, false, d);
        format!("(vjp {f} (list {}) {})", self.point(), self.point())
    }

    fn vmap(&mut self, d: u32) -> String {
        if self.rng.chance(0.5) {
            let f = self.traced(1, false, d);
            return format!("((vmap {f}) {})", self.point());
        }
        let f = self.traced(2, false, d);
        let axes = self
            .rng
            .pick(&["'(0 #f)", "'(#f 0)", "'(0 0)", "'(1 0)", "'(#f #f)", "0"]);
        let out = self
            .rng
            .pick(&["", " :out-axes 0", " :out-axes 1", " :out-axes -1"]);
        format!(
            "((vmap {f} :in-axes {axes}{out}) {} {})",
            self.point(),
            self.point()
        )
    }

    fn dense_derivative(&mut self, d: u32) -> String {
        let head = self
            .rng
            .pick(&["jacobian", "hessian", "jacfwd", "jacrev"])
            .to_string();
        let scalar = head == "hessian";
        format!("(({head} {}) {})", self.traced(1, scalar, d), self.point())
    }

    /// `(scan step init n)`: the step sees the state and the index.
    fn scan_count(&mut self, d: u32) -> String {
        let (s, i) = (self.fresh_name("st"), self.fresh_name("i"));
        let body = self.with_bindings(&[s.clone(), i.clone()], |g| g.traced_body(d));
        let count = self.rng.pick(&["0", "1", "3", "-1", "7"]);
        let strategy = self.rng.pick(STRATEGIES);
        format!(
            "(scan (lambda ({s} {i}) {body}) {} {count}{strategy})",
            self.point()
        )
    }

    /// `(scan step init xs)`: the step returns `(list carry y)`.
    fn scan_over(&mut self, d: u32) -> String {
        let (c, x) = (self.fresh_name("c"), self.fresh_name("xt"));
        let names = [c.clone(), x.clone()];
        let carry = self.with_bindings(&names, |g| g.traced_body(d));
        let out = self.with_bindings(&names, |g| g.traced_body(d));
        let strategy = self.rng.pick(STRATEGIES);
        format!(
            "(scan (lambda ({c} {x}) (list {carry} {out})) {} {}{strategy})",
            self.point(),
            self.point()
        )
    }

    fn while_loop_form(&mut self, d: u32) -> String {
        let s = self.fresh_name("ws");
        let body = self.with_bindings(std::slice::from_ref(&s), |g| g.traced_body(d));
        let steps = self.rng.pick(&[
            "",
            " :max-steps 5",
            " :max-steps 0",
            " :snapshots 1 :max-steps 9",
        ]);
        let call = |init: &str| {
            format!(
                "(while-loop (lambda ({s}) (< (sum {s}) 10)) (lambda ({s}) {body}) {init}{steps})"
            )
        };
        let point = self.point();
        if self.rng.chance(0.4) {
            format!("((grad (lambda (w0) (sum {}))) {point})", call("w0"))
        } else {
            call(&point)
        }
    }

    fn inspection(&mut self, d: u32) -> String {
        let head = self
            .rng
            .pick(&["check-grad", "tape-stats", "show-tape", "opaque"]);
        let f = self.traced(1, true, d);
        if *head == "opaque" {
            return format!("((jit (lambda (y0) (opaque {f} y0))) {})", self.point());
        }
        format!("({head} {f} (list {}))", self.point())
    }

    fn sparse(&mut self, d: u32) -> String {
        let head = if self.rng.chance(0.5) {
            "sparse-jacobian"
        } else {
            "sparse-hessian"
        };
        let f = self.traced(1, head == "sparse-hessian", d);
        format!("({head} {f} {})", self.point())
    }

    /// Transformations of transformations.
    fn nested(&mut self, d: u32) -> String {
        let outer = self.rng.pick(WRAPPERS);
        let inner = self.rng.pick(WRAPPERS);
        let f = self.traced(1, true, d);
        match self.rng.below(3) {
            0 => format!("(({outer} ({inner} {f})) {})", self.point()),
            1 => format!(
                "((grad (lambda (y0) (sum (({inner} {f}) y0)))) {})",
                self.point()
            ),
            _ => format!("((vmap (lambda (y0) (({outer} {f}) y0))) {})", self.point()),
        }
    }

    fn custom_rule(&mut self, d: u32) -> String {
        let f = self.traced(1, false, d);
        let rule = if self.rng.chance(0.5) {
            format!(
                "(custom-vjp {f} (lambda (a) (lambda (g) (list {}))))",
                self.rng.pick(&["g", "(* g 2)", "1", "(list g)", "[1 2]"])
            )
        } else {
            format!(
                "(custom-jvp {f} (lambda (a t) {}))",
                self.rng.pick(&["t", "(* t a)", "0", "\"no\""])
            )
        };
        format!("((grad (lambda (y0) (sum ({rule} y0)))) {})", self.point())
    }

    fn solver(&mut self, d: u32) -> String {
        match self.rng.below(3) {
            0 => format!(
                "(fixed-point {} {} :max-iter 20)",
                self.traced(1, false, d),
                self.point()
            ),
            1 => format!(
                "(root {} {} :max-iter 20)",
                self.traced(1, false, d),
                self.point()
            ),
            _ => {
                let (y, t) = (self.fresh_name("y"), self.fresh_name("t"));
                let body = self.with_bindings(&[y.clone(), t.clone()], |g| g.traced_body(d));
                format!(
                    "(odeint (lambda ({y} {t}) {body}) {} (linspace 0 1 3) :max-steps 200)",
                    self.point()
                )
            }
        }
    }

    /// A Lisp loop of thousands of steps over a number under `grad`,
    /// `value-and-grad` or `jit`, called twice (the second call replays):
    /// past the optimizer's size, a scalar trace's gradient runs as a
    /// straight-line program from the flat arena; a step that makes a
    /// tensor or looks at its state takes the tensor pipeline instead.
    fn long_loop(&mut self, d: u32) -> String {
        let (p, x, k) = (
            self.fresh_name("p"),
            self.fresh_name("x"),
            self.fresh_name("k"),
        );
        let step = self.with_bindings(&[p.clone(), x.clone()], |g| g.traced_body(d.min(2)));
        let steps = self.rng.pick(&["5001", "6000", "1", "0"]);
        let head = self.rng.pick(&["grad", "value-and-grad", "jit"]);
        format!(
            "(let ((g ({head} (lambda ({p}) (let loop (({x} {p}) ({k} 0)) (if (< {k} {steps}) (loop (* 0.5 (tanh (sum {step}))) (+ {k} 1)) {x})))))) (list (g {}) (g {})))",
            self.point(),
            self.point()
        )
    }

    fn grad_through_scan(&mut self, d: u32) -> String {
        let (s, i) = (self.fresh_name("st"), self.fresh_name("i"));
        let body = self.with_bindings(&[s.clone(), i.clone()], |g| g.traced_body(d));
        let strategy = self.rng.pick(STRATEGIES);
        let head = self.rng.pick(&["grad", "jacfwd", "jit", "value-and-grad"]);
        format!(
            "(({head} (lambda (y0) (sum (scan (lambda ({s} {i}) {body}) y0 4{strategy})))) {})",
            self.point()
        )
    }
}

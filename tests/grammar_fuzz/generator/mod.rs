//! Well-formed programs: top-level definitions and macros followed by
//! nested expressions made of built-in calls (arities mostly inside the
//! table's bounds, sometimes outside), special forms, calls of local
//! functions, numeric transformations (`grad`, `jit`, `vmap`, `scan`, ...)
//! of generated lambdas, and symbolic differentiation of generated
//! formulas. "Well-formed" means it reads; most programs still end in an
//! ordinary error somewhere, which is fine: the property is only that
//! nothing crashes.

use super::pools::{Callable, Catalog, DATA, FLOATS, INTS, STRINGS, SYMBOLS, TENSORS};
use super::rng::Rng;

/// Nesting depth of generated expressions.
const MAX_DEPTH: u32 = 4;

/// Most compound forms in one program, so cases stay small and fast.
const MAX_NODES: usize = 24;

/// Counts loops and recursions run (bounded so cases end quickly).
const LOOP_COUNTS: &[&str] = &["0", "1", "2", "3", "5", "-1"];

/// The generator of one program.
pub struct Gen<'a> {
    pub rng: Rng,
    catalog: &'a Catalog,
    /// Variables in scope.
    scope: Vec<String>,
    /// Functions in scope, with their number of parameters.
    functions: Vec<(String, usize)>,
    /// Counter for fresh names.
    fresh: usize,
    /// Compound forms still allowed.
    budget: usize,
}

impl<'a> Gen<'a> {
    pub fn new(seed: u64, catalog: &'a Catalog) -> Self {
        Gen {
            rng: Rng::new(seed),
            catalog,
            scope: Vec::new(),
            functions: Vec::new(),
            fresh: 0,
            budget: MAX_NODES,
        }
    }

    /// A whole program: one to four top-level forms.
    pub fn program(&mut self) -> String {
        let forms = self.rng.between(1, 4);
        (0..forms)
            .map(|_| self.top_level_form())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn top_level_form(&mut self) -> String {
        match self.rng.below(100) {
            0..=14 => self.global_variable(),
            15..=29 => self.global_function(),
            30..=34 => self.macro_definition(),
            35..=64 => format!("(try {} (catch (e) e))", self.expr(MAX_DEPTH)),
            _ => self.expr(MAX_DEPTH),
        }
    }

    fn fresh_name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// `(define gN expr)`: a global (never a built-in's name, so later
    /// cases on the same engine still see every built-in).
    fn global_variable(&mut self) -> String {
        let value = self.expr(MAX_DEPTH - 1);
        let name = self.fresh_name("g");
        self.scope.push(name.clone());
        format!("(define {name} {value})")
    }

    /// `(define (fN params...) "doc" body...)`, sometimes recursive.
    fn global_function(&mut self) -> String {
        let name = self.fresh_name("f");
        let count = self.rng.between(0, 3);
        let params = self.params(count);
        let doc = if self.rng.chance(0.2) { " \"doc\"" } else { "" };
        let arity = params.len();
        let body = self.with_bindings(&params, |g| {
            if arity > 0 && g.rng.chance(0.3) {
                g.recursive_body(&name, &params[0], arity)
            } else {
                g.body(MAX_DEPTH - 1)
            }
        });
        self.functions.push((name.clone(), arity));
        format!("(define ({name} {}){doc} {body})", params.join(" "))
    }

    /// A body that calls `name` on a smaller first argument until it is
    /// not positive (a counter, so the recursion ends).
    fn recursive_body(&mut self, name: &str, counter: &str, arity: usize) -> String {
        let base = self.expr(2);
        let step = self.expr(2);
        let rest = " 1".repeat(arity - 1);
        format!(
            "(if (or (not (number? {counter})) (<= {counter} 0)) {base} (list {step} ({name} (- {counter} 1){rest})))"
        )
    }

    /// A macro definition, remembered as a function of its arity.
    fn macro_definition(&mut self) -> String {
        let name = self.fresh_name("m");
        let (text, arity) = match self.rng.below(4) {
            0 => (format!("(defmacro {name} (a b) `(list ,a ,b ',a))"), 2),
            1 => (format!("(defmacro {name} (a . rest) `(+ ,a ,@rest))"), 2),
            2 => (
                format!(
                    "(defmacro {name} (n) (if (and (integer? n) (> n 0)) `(list {name} ({name} ,(- n 1))) 0))"
                ),
                1,
            ),
            _ => (
                format!("(defmacro {name} (x) \"doc\" `(let ((tmp ,x)) (if tmp tmp ,x)))"),
                1,
            ),
        };
        self.functions.push((name, arity));
        text
    }

    /// Parameter names: fresh ones, now and then a built-in's name
    /// (shadowed locally).
    fn params(&mut self, count: usize) -> Vec<String> {
        (0..count)
            .map(|_| {
                if self.rng.chance(0.1) {
                    self.rng.pick(&self.catalog.builtins).name.to_string()
                } else {
                    self.fresh_name("v")
                }
            })
            .collect()
    }

    /// Runs `generate` with `names` in scope.
    fn with_bindings(
        &mut self,
        names: &[String],
        generate: impl FnOnce(&mut Self) -> String,
    ) -> String {
        let before = self.scope.len();
        self.scope.extend(names.iter().cloned());
        let text = generate(self);
        self.scope.truncate(before);
        text
    }

    /// One to three expressions.
    fn body(&mut self, depth: u32) -> String {
        let count = self.rng.between(1, 3);
        (0..count)
            .map(|_| self.expr(depth))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// An expression nested at most `depth` deep.
    pub fn expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.budget == 0 || self.rng.chance(0.25) {
            return self.atom();
        }
        self.budget -= 1;
        match self.rng.below(100) {
            0..=39 => self.builtin_call(depth, false),
            40..=61 => self.special_form(depth),
            62..=67 => self.local_call(depth),
            68..=79 => self.transform(depth),
            80..=87 => self.symbolic(depth),
            88..=93 => self.stdlib_call(depth),
            _ => self.tensor_literal(depth),
        }
    }

    /// A variable in scope or a literal.
    fn atom(&mut self) -> String {
        if !self.scope.is_empty() && self.rng.chance(0.45) {
            return self.rng.pick(&self.scope).clone();
        }
        self.literal()
    }

    pub fn literal(&mut self) -> String {
        let pool: &[&str] = match self.rng.below(100) {
            0..=24 => INTS,
            25..=39 => FLOATS,
            40..=46 => STRINGS,
            47..=54 => SYMBOLS,
            55..=66 => DATA,
            67..=89 => TENSORS,
            90..=94 => return self.keyword(&[]),
            _ => return self.procedure_value(),
        };
        self.rng.pick(pool).to_string()
    }

    /// A keyword: one of `options` (the called built-in's), or any.
    fn keyword(&mut self, options: &[&str]) -> String {
        if !options.is_empty() && self.rng.chance(0.8) {
            format!(":{}", self.rng.pick(options))
        } else {
            format!(":{}", self.rng.pick(&self.catalog.options))
        }
    }

    /// A procedure as a value: a built-in's name or a small lambda.
    fn procedure_value(&mut self) -> String {
        const LAMBDAS: &[&str] = &[
            "(lambda (x) x)",
            "(lambda (a b) (< a b))",
            "(lambda (a b) (+ a b))",
            "(lambda () (error \"boom\"))",
            "(lambda args args)",
            "(fn (x) (* x x))",
        ];
        if self.rng.chance(0.5) {
            self.rng.pick(LAMBDAS).to_string()
        } else if !self.functions.is_empty() && self.rng.chance(0.3) {
            let (name, _) = self.rng.pick(&self.functions);
            name.clone()
        } else {
            self.rng.pick(&self.catalog.builtins).name.to_string()
        }
    }

    /// How many arguments to pass: mostly inside `[min, max]`, sometimes
    /// one too few or more than allowed.
    fn arity(&mut self, min: usize, max: Option<usize>) -> usize {
        let high = max.unwrap_or(min + 2).min(min + 3);
        match self.rng.below(100) {
            0..=91 => self.rng.between(min, high),
            92..=95 if min > 0 => min - 1,
            _ => high + self.rng.between(1, 2),
        }
    }

    /// A call of a built-in from the table (a rare one now and then),
    /// with keyword options it takes.
    fn builtin_call(&mut self, depth: u32, math: bool) -> String {
        let callable = if math && !self.catalog.math.is_empty() {
            self.rng.pick(&self.catalog.math)
        } else if self.rng.chance(0.01) {
            self.rng.pick(&self.catalog.rare)
        } else {
            self.rng.pick(&self.catalog.builtins)
        };
        self.call(callable, depth, math)
    }

    fn call(&mut self, callable: &Callable, depth: u32, math: bool) -> String {
        let count = self.arity(callable.min, callable.max);
        let mut parts = vec![callable.name.to_string()];
        for _ in 0..count {
            parts.push(self.argument(depth - 1, math));
        }
        if self.rng.chance(if callable.options.is_empty() {
            0.03
        } else {
            0.35
        }) {
            parts.push(self.keyword(callable.options));
            parts.push(self.option_value(depth - 1));
        }
        format!("({})", parts.join(" "))
    }

    /// An argument: inside math, mostly numbers, tensors and nested
    /// math; elsewhere anything.
    fn argument(&mut self, depth: u32, math: bool) -> String {
        if !math {
            return self.expr(depth);
        }
        match self.rng.below(10) {
            0..=3 if depth > 0 => self.builtin_call(depth, true),
            0..=6 => self.numeric_atom(),
            _ => self.expr(depth),
        }
    }

    /// A variable in scope (most likely the innermost), or a number or
    /// tensor.
    pub fn numeric_atom(&mut self) -> String {
        const NUMBERS: &[&str] = &[
            "0.5",
            "2.0",
            "-1.0",
            "0",
            "1",
            "2",
            "[1.0 2.0 3.0]",
            "[[1.0 2.0] [3.0 4.0]]",
            "[[2.0 1.0] [1.0 2.0]]",
            "(zeros 0)",
            "nan",
            "inf",
        ];
        if !self.scope.is_empty() && self.rng.chance(0.6) {
            let recent = self.scope.len().saturating_sub(2);
            let index = self.rng.between(recent, self.scope.len() - 1);
            return self.scope[index].clone();
        }
        self.rng.pick(NUMBERS).to_string()
    }

    fn option_value(&mut self, depth: u32) -> String {
        match self.rng.below(5) {
            0 => self.rng.pick(INTS).to_string(),
            1 => self
                .rng
                .pick(&["#t", "#f", "'(0 1)", "'(-1)", "()"])
                .to_string(),
            2 => self.rng.pick(SYMBOLS).to_string(),
            3 => self.rng.pick(FLOATS).to_string(),
            _ => self.expr(depth),
        }
    }

    fn stdlib_call(&mut self, depth: u32) -> String {
        let callable = self.rng.pick(&self.catalog.stdlib);
        self.call(callable, depth, false)
    }

    /// A call of a function in scope (global, local or macro), or a
    /// lambda bound by `let` and called.
    fn local_call(&mut self, depth: u32) -> String {
        if !self.functions.is_empty() && self.rng.chance(0.6) {
            let (name, arity) = self.rng.pick(&self.functions).clone();
            let count = self.arity(arity, Some(arity));
            let args: Vec<String> = (0..count).map(|_| self.expr(depth - 1)).collect();
            return format!("({name} {})", args.join(" "));
        }
        let name = self.fresh_name("h");
        let arity = self.rng.between(0, 2);
        let params = self.params(arity);
        let body = self.with_bindings(&params, |g| g.body(depth - 1));
        let count = self.arity(arity, Some(arity));
        let args: Vec<String> = (0..count).map(|_| self.expr(depth - 1)).collect();
        format!(
            "(let (({name} (lambda ({}) {body}))) ({name} {}))",
            params.join(" "),
            args.join(" ")
        )
    }

    /// A tensor literal whose elements are expressions, nested one to
    /// three deep, sometimes ragged.
    fn tensor_literal(&mut self, depth: u32) -> String {
        let rank = self.rng.between(1, 3);
        let width = self.rng.between(0, 3);
        self.tensor_level(rank, width, depth)
    }

    fn tensor_level(&mut self, rank: usize, width: usize, depth: u32) -> String {
        let width = if self.rng.chance(0.1) {
            self.rng.between(0, 3)
        } else {
            width
        };
        let items: Vec<String> = (0..width)
            .map(|_| {
                if rank > 1 {
                    self.tensor_level(rank - 1, width, depth)
                } else if self.rng.chance(0.7) {
                    self.rng.pick(&["1", "2.5", "-0.0", "nan", "0"]).to_string()
                } else {
                    self.expr(depth - 1)
                }
            })
            .collect();
        format!("[{}]", items.join(" "))
    }
}

mod forms;
mod symbolic;
mod transforms;

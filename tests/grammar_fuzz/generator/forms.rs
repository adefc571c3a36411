//! Special forms, each in its usual shapes: conditionals, the binding
//! forms (named `let` and `letrec` loops included, with counters so they
//! end), assignment, bounded `while` loops, `try`, quasiquote, local
//! `define`, and the prelude's macros (`dotimes`, `dolist`, `->`).

use super::{Gen, LOOP_COUNTS, MAX_DEPTH};

impl Gen<'_> {
    pub(super) fn special_form(&mut self, depth: u32) -> String {
        let d = depth - 1;
        match self.rng.below(22) {
            0 => format!("(if {} {} {})", self.expr(d), self.expr(d), self.expr(d)),
            1 => format!("(if {} {})", self.expr(d), self.expr(d)),
            2 => self.cond(d),
            3 => format!("(when {} {})", self.expr(d), self.body(d)),
            4 => format!("(unless {} {})", self.expr(d), self.body(d)),
            5 => self.logic(d),
            6 => format!("(begin {})", self.body(d)),
            7 => self.let_form("let", d),
            8 => self.let_form("let*", d),
            9 => self.letrec(d),
            10 => self.named_let(d),
            11 => self.applied_lambda(d),
            12 => self.assignment(d),
            13 => self.while_loop(d),
            14 => self.try_form(d),
            15 => self.quasiquote(d),
            16 => self.dotimes(d),
            17 => self.threading(d),
            18 => self.local_define(d),
            19 => format!("(time {})", self.expr(d)),
            20 => format!("(assert {})", self.expr(d)),
            _ => format!("(quote {})", self.quoted_datum(2)),
        }
    }

    fn cond(&mut self, d: u32) -> String {
        let clauses = self.rng.between(1, 3);
        let mut text = String::from("(cond");
        for _ in 0..clauses {
            let test = self.expr(d);
            if self.rng.chance(0.15) {
                let procedure = self.procedure_value();
                text += &format!(" ({test} => {procedure})");
            } else {
                text += &format!(" ({test} {})", self.body(d));
            }
        }
        if self.rng.chance(0.5) {
            text += &format!(" (else {})", self.body(d));
        }
        text + ")"
    }

    fn logic(&mut self, d: u32) -> String {
        let head = if self.rng.chance(0.5) { "and" } else { "or" };
        let count = self.rng.between(0, 3);
        let args: Vec<String> = (0..count).map(|_| self.expr(d)).collect();
        format!("({head} {})", args.join(" "))
    }

    fn let_form(&mut self, head: &str, d: u32) -> String {
        let count = self.rng.between(0, 3);
        let names = self.params(count);
        let mut bindings = Vec::new();
        for (i, name) in names.iter().enumerate() {
            // let* sees the earlier bindings.
            let visible = if head == "let*" { &names[..i] } else { &[][..] };
            let value = self.with_bindings(visible, |g| g.expr(d));
            bindings.push(format!("({name} {value})"));
        }
        let body = self.with_bindings(&names, |g| g.body(d));
        format!("({head} ({}) {body})", bindings.join(" "))
    }

    /// Mutually visible functions, called with a counter that ends them.
    fn letrec(&mut self, d: u32) -> String {
        let f = self.fresh_name("r");
        let n = self.fresh_name("n");
        let names = [f.clone()];
        let base = self.with_bindings(std::slice::from_ref(&n), |g| g.expr(d));
        let step = self.with_bindings(&[n.clone(), f.clone()], |g| g.expr(d.min(2)));
        let count = self.rng.pick(LOOP_COUNTS);
        let body = self.with_bindings(&names, |g| g.expr(d.min(2)));
        format!(
            "(letrec (({f} (lambda ({n}) (if (<= {n} 0) {base} (cons {step} ({f} (- {n} 1))))))) (list ({f} {count}) {body}))"
        )
    }

    /// `(let loop ((i 0) (acc e)) ...)` running a few times.
    fn named_let(&mut self, d: u32) -> String {
        let lp = self.fresh_name("loop");
        let i = self.fresh_name("i");
        let acc = self.fresh_name("acc");
        let init = self.expr(d);
        let count = self.rng.pick(LOOP_COUNTS);
        let step = self.with_bindings(&[i.clone(), acc.clone()], |g| g.expr(d));
        format!(
            "(let {lp} (({i} 0) ({acc} {init})) (if (< {i} {count}) ({lp} (+ {i} 1) {step}) {acc}))"
        )
    }

    /// `((lambda params body) args)`, with rest parameters now and then
    /// and a wrong number of arguments sometimes.
    fn applied_lambda(&mut self, d: u32) -> String {
        let count = self.rng.between(0, 2);
        let fixed = self.params(count);
        let rest = match self.rng.below(4) {
            0 => Some((". ", self.fresh_name("rest"))),
            1 => Some(("&rest ", self.fresh_name("rest"))),
            _ => None,
        };
        let mut names = fixed.clone();
        let mut list = fixed.join(" ");
        if let Some((marker, name)) = &rest {
            list += &format!(" {marker}{name}");
            names.push(name.clone());
        }
        let head = if self.rng.chance(0.2) { "fn" } else { "lambda" };
        let body = self.with_bindings(&names, |g| g.body(d));
        let count = self.arity(fixed.len(), rest.is_none().then_some(fixed.len()));
        let args: Vec<String> = (0..count).map(|_| self.expr(d)).collect();
        format!("(({head} ({list}) {body}) {})", args.join(" "))
    }

    /// `set!` of a variable in scope (never a built-in), then its value.
    fn assignment(&mut self, d: u32) -> String {
        let Some(name) = self.assignable() else {
            let name = self.fresh_name("s");
            let value = self.expr(d);
            return format!("(let (({name} 0)) (set! {name} {value}) {name})");
        };
        format!("(begin (set! {name} {}) {name})", self.expr(d))
    }

    /// A variable of the program's own (not a shadowed built-in).
    fn assignable(&mut self) -> Option<String> {
        let own: Vec<String> = self
            .scope
            .iter()
            .filter(|name| {
                !self
                    .catalog
                    .builtins
                    .iter()
                    .any(|b| b.name == name.as_str())
            })
            .cloned()
            .collect();
        (!own.is_empty()).then(|| self.rng.pick(&own).clone())
    }

    /// A `while` loop with a counter, so it ends.
    fn while_loop(&mut self, d: u32) -> String {
        let i = self.fresh_name("w");
        let count = self.rng.pick(LOOP_COUNTS);
        let body = self.with_bindings(std::slice::from_ref(&i), |g| g.body(d));
        format!("(let (({i} 0)) (while (< {i} {count}) {body} (set! {i} (+ {i} 1))) {i})")
    }

    fn try_form(&mut self, d: u32) -> String {
        let body = if self.rng.chance(0.3) {
            format!("(error \"boom\" {})", self.expr(d))
        } else {
            self.body(d)
        };
        let e = self.fresh_name("e");
        let handler = self.with_bindings(std::slice::from_ref(&e), |g| g.expr(d));
        format!("(try {body} (catch ({e}) {handler}))")
    }

    /// A quasiquote template with unquotes and splices (a splice of a
    /// non-list now and then); nested one level sometimes.
    fn quasiquote(&mut self, d: u32) -> String {
        let count = self.rng.between(0, 4);
        let mut items = Vec::new();
        for _ in 0..count {
            items.push(match self.rng.below(5) {
                0 => format!(",{}", self.expr(d)),
                1 => format!(",@{}", self.splice(d)),
                2 => format!("(a ,{})", self.expr(d)),
                3 => format!("`(b ,(c ,{}))", self.expr(d)),
                _ => self.quoted_datum(1),
            });
        }
        let dotted = if self.rng.chance(0.1) { " . tail" } else { "" };
        format!("`({}{dotted})", items.join(" "))
    }

    fn splice(&mut self, d: u32) -> String {
        if self.rng.chance(0.7) {
            format!("(list {} {})", self.expr(d), self.expr(d))
        } else {
            self.expr(d)
        }
    }

    /// A datum for `quote`: atoms, nested lists, dotted pairs.
    pub(super) fn quoted_datum(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.chance(0.3) {
            return match self.rng.below(4) {
                0 => self.rng.pick(super::super::pools::INTS).to_string(),
                1 => self
                    .rng
                    .pick(&["x", "y", "sin", "+", "lambda", "quote", "nil"])
                    .to_string(),
                2 => self.rng.pick(super::super::pools::FLOATS).to_string(),
                _ => self
                    .rng
                    .pick(&["\"s\"", "#t", ":axis", "()", "[1 2]"])
                    .to_string(),
            };
        }
        let count = self.rng.between(0, 3);
        let items: Vec<String> = (0..count).map(|_| self.quoted_datum(depth - 1)).collect();
        if count > 0 && self.rng.chance(0.1) {
            format!("({} . {})", items.join(" "), self.quoted_datum(0))
        } else {
            format!("({})", items.join(" "))
        }
    }

    fn dotimes(&mut self, d: u32) -> String {
        let i = self.fresh_name("k");
        if self.rng.chance(0.5) {
            let count = self.rng.pick(LOOP_COUNTS);
            let body = self.with_bindings(std::slice::from_ref(&i), |g| g.body(d));
            format!("(dotimes ({i} {count}) {body})")
        } else {
            let list = self.expr(d);
            let body = self.with_bindings(std::slice::from_ref(&i), |g| g.body(d));
            format!("(dolist ({i} {list}) {body})")
        }
    }

    /// `->` / `->>` threading through built-ins.
    fn threading(&mut self, d: u32) -> String {
        let head = if self.rng.chance(0.5) { "->" } else { "->>" };
        let start = self.expr(d);
        let steps = self.rng.between(1, 3);
        let mut text = format!("({head} {start}");
        for _ in 0..steps {
            let name = self.rng.pick(&self.catalog.math).name;
            if self.rng.chance(0.5) {
                text += &format!(" {name}");
            } else {
                text += &format!(" ({name} {})", self.expr(d.min(1)));
            }
        }
        text + ")"
    }

    /// Internal `define`s at the start of a `let` body (mutually
    /// visible), or one in a place that does not allow it.
    fn local_define(&mut self, d: u32) -> String {
        let v = self.fresh_name("l");
        let f = self.fresh_name("lf");
        let p = self.fresh_name("p");
        let value = self.expr(d);
        let fbody = self.with_bindings(&[p.clone(), v.clone()], |g| g.expr(d));
        let body = self.with_bindings(std::slice::from_ref(&v), |g| g.expr(d.min(MAX_DEPTH - 2)));
        if self.rng.chance(0.2) {
            return format!("(let () (when #t (define {v} {value})) {v})");
        }
        format!("(let () (define {v} {value}) (define ({f} {p}) {fbody}) ({f} {v}) {body})")
    }
}

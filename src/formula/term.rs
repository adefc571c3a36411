//! Expressions as they are shown: a tree whose sums and products take any
//! number of operands. [`terms`] turns e-graph expressions into it with the
//! printing rules every output shares (s-expressions, `cse`, `infix`,
//! `latex`, `codegen`):
//!
//! - a sum or product used only as an operand of the same operator is
//!   spliced into its users (`(+ (+ a b) c)` shows `(+ a b c)`);
//! - a product's factors are ordered numbers first, then variables by
//!   name, then the rest in their order (`(* 2 x y (sin z))`);
//! - the numbers of a sum or product are folded into one when the result
//!   has a short form, and a product by 1 or a sum with 0 drops it.
//!
//! - signs are tidied: no product by 1, a product by -1 is a negation,
//!   no double negation, a negated number or product's number carries
//!   the sign, `(neg (- a b))` is `(- b a)`, `(+ a (neg b))` is
//!   `(- a b)` and `(- a (neg b))` is `(+ a b)`;
//! - a difference has one orientation in one output: where `(- a b)` and
//!   `(- b a)` both would be shown, the later is shown as the earlier
//!   negated, its sign taken into the product, sum or negation that uses
//!   it.
//!
//! Subterms are shared (`Rc`): a node reached twice is one `Term`.

use crate::egraph::Math;
use crate::ir::math::language::Constant;
use egg::{Id, Language, RecExpr, Symbol};
use std::rc::Rc;

/// An expression as shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// A number.
    Num(Constant),
    /// A variable (or the name `cse` gives a shared subterm).
    Var(Symbol),
    /// An operator by its name (`+`, `-`, `*`, `/`, `pow`, `neg`, `sin`,
    /// ..., or a user function) on its operands; `+` and `*` take any
    /// number.
    Apply(Symbol, Vec<Rc<Term>>),
}

/// A term as deep as the data it came from (a formula built by a loop)
/// would otherwise be dropped recursively, one Rust frame per level; this
/// unlinks uniquely owned operands iteratively.
impl Drop for Term {
    fn drop(&mut self) {
        let Term::Apply(_, args) = self else {
            return;
        };
        let mut pending: Vec<Rc<Term>> = std::mem::take(args);
        while let Some(operand) = pending.pop() {
            if let Ok(mut term) = Rc::try_unwrap(operand)
                && let Term::Apply(_, args) = &mut term
            {
                pending.append(args);
            }
        }
    }
}

impl Term {
    /// The operator's name, for an application.
    pub fn operator(&self) -> Option<&str> {
        match self {
            Term::Apply(op, _) => Some(op.as_str()),
            _ => None,
        }
    }

    /// The number, for a number.
    pub fn number(&self) -> Option<f64> {
        match self {
            Term::Num(c) => Some(c.get()),
            _ => None,
        }
    }
}

/// The most operands a sum or product used more than once may have and
/// still be spliced into its users (see `terms`).
const SHARED_SPLICE_LIMIT: usize = 8;

/// The terms of `roots` of `expr`. `names[i]`, where given, is how node
/// `i` is referred to by the nodes that use it (its own term is still
/// built: `cse` shows it once, by its name, where it is defined); named
/// nodes are never spliced. Gives each node's term (`None` for spliced
/// ones) and the roots' references.
pub fn terms(
    expr: &RecExpr<Math>,
    roots: &[Id],
    names: &[Option<Symbol>],
) -> (Vec<Option<Rc<Term>>>, Vec<Rc<Term>>) {
    let nodes = expr.as_ref();
    let named = |i: usize| names.get(i).is_some_and(Option::is_some);
    let same_op = |a: &Math, b: &Math| std::mem::discriminant(a) == std::mem::discriminant(b);
    let mut splice: Vec<bool> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| matches!(node, Math::Add(_) | Math::Mul(_)) && !named(i))
        .collect();
    for &root in roots {
        splice[usize::from(root)] = false;
    }
    let mut users = vec![0u32; nodes.len()];
    for node in nodes {
        for &child in node.children() {
            users[usize::from(child)] += 1;
            if !same_op(node, &nodes[usize::from(child)]) {
                splice[usize::from(child)] = false;
            }
        }
    }
    // A shared sum or product is spliced into each of its users: past a
    // few operands it is shown nested instead, so that a deep expression
    // whose partial products are shared (derivatives of nested functions)
    // is shown in size linear in its program, not quadratic.
    let mut operands = vec![1usize; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        if !matches!(node, Math::Add(_) | Math::Mul(_)) {
            continue;
        }
        operands[index] = node
            .children()
            .iter()
            .map(|&c| match splice[usize::from(c)] {
                true => operands[usize::from(c)],
                false => 1,
            })
            .sum();
        if users[index] > 1 && operands[index] > SHARED_SPLICE_LIMIT {
            splice[index] = false;
        }
    }
    let mut orientation = Orientation::default();
    let mut own: Vec<Option<Rc<Term>>> = Vec::with_capacity(nodes.len());
    let mut reference: Vec<Option<Rc<Term>>> = Vec::with_capacity(nodes.len());
    for (index, node) in nodes.iter().enumerate() {
        let term = match node {
            _ if splice[index] => None,
            Math::Num(constant) => Some(Rc::new(Term::Num(*constant))),
            Math::Var(name) => Some(Rc::new(Term::Var(*name))),
            Math::Add(_) | Math::Mul(_) => {
                // Operands in order, looking through spliced children.
                let mut flat = Vec::new();
                let mut pending: Vec<Id> = node.children().iter().rev().copied().collect();
                while let Some(child) = pending.pop() {
                    let child = usize::from(child);
                    if splice[child] {
                        pending.extend(nodes[child].children().iter().rev());
                    } else {
                        let operand = reference[child].clone().expect("children come first");
                        flat.push(orientation.operand(operand));
                    }
                }
                let is_product = matches!(node, Math::Mul(_));
                if is_product {
                    orientation.pull_signs(&mut flat);
                    flat.sort_by(|a, b| factor_rank(a).cmp(&factor_rank(b)));
                }
                fold_numbers(&mut flat, is_product);
                Some(Rc::new(tidy(Term::Apply(
                    Symbol::from(node.to_string()),
                    flat,
                ))))
            }
            op => {
                let args = op
                    .children()
                    .iter()
                    .map(|&child| {
                        let operand = reference[usize::from(child)]
                            .clone()
                            .expect("children first");
                        // A negated difference is shown reversed: not shown
                        // as it is, so not recorded.
                        if matches!(op, Math::Neg(_)) {
                            orientation.result(operand)
                        } else {
                            orientation.operand(operand)
                        }
                    })
                    .collect();
                Some(Rc::new(tidy(Term::Apply(
                    Symbol::from(op.to_string()),
                    args,
                ))))
            }
        };
        let term = term.map(|term| orientation.result(term));
        let by_name = names
            .get(index)
            .copied()
            .flatten()
            .map(|name| Rc::new(Term::Var(name)));
        if let Some(term) = &term {
            // A root is shown where it is built; a named difference is
            // shown by its name.
            if let Some(name) = &by_name {
                orientation.name(term, name);
            } else if roots.contains(&Id::from(index)) {
                orientation.operand(term.clone());
            }
        }
        reference.push(by_name.or_else(|| term.clone()));
        own.push(term);
    }
    let roots = roots
        .iter()
        .map(|&root| {
            let shown = reference[usize::from(root)]
                .clone()
                .expect("roots are not spliced");
            orientation.operand(shown)
        })
        .collect();
    (own, roots)
}

/// A product's factors with runs of equal neighbours counted: `x x y` is
/// `[(x, 2), (y, 1)]` (factors are ordered, so equal variables are
/// neighbours), for showing them as powers.
pub fn powers(factors: &[Rc<Term>]) -> Vec<(Rc<Term>, usize)> {
    let mut groups: Vec<(Rc<Term>, usize)> = Vec::new();
    for factor in factors {
        match groups.last_mut() {
            Some((base, count)) if **base == **factor => *count += 1,
            _ => groups.push((factor.clone(), 1)),
        }
    }
    groups
}

/// Folds the numbers among the operands of a flattened sum or product into
/// one (`(* 2 3 x)` shows `(* 6 x)`), in place of the first, when the
/// result has a short form; a product by 1 or a sum with 0 drops it.
fn fold_numbers(operands: &mut Vec<Rc<Term>>, is_product: bool) {
    let numbers: Vec<f64> = operands.iter().filter_map(|t| t.number()).collect();
    if numbers.len() < 2 {
        return;
    }
    // Folded pairwise as the e-graph folds: a sum that would drop an
    // operand's digits (`1e308 + 1`) is left as written.
    let (first_id, second_id) = (Id::from(0usize), Id::from(1usize));
    let node = if is_product {
        Math::Mul([first_id, second_id])
    } else {
        Math::Add([first_id, second_id])
    };
    let mut folded = Constant::new(numbers[0]);
    for &number in &numbers[1..] {
        folded = folded
            .and_then(|sum| crate::egraph::analysis::fold_numbers(&node, &[sum.get(), number]));
    }
    let Some(constant) = folded else {
        return;
    };
    let first = operands
        .iter()
        .position(|t| t.number().is_some())
        .unwrap_or(0);
    let mut index = 0;
    operands.retain(|t| {
        let keep = index == first || t.number().is_none();
        index += 1;
        keep
    });
    let identity = if is_product { 1.0 } else { 0.0 };
    if constant.get() == identity && operands.len() > 2 {
        operands.remove(first);
    } else {
        operands[first] = Rc::new(Term::Num(constant));
    }
}

/// How a subterm is identified when differences are compared: the same
/// node's term is one `Rc`, and numbers and variables by their value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Shared(*const Term),
    Num(u64),
    Var(Symbol),
}

fn key(term: &Rc<Term>) -> Key {
    match &**term {
        Term::Num(c) => Key::Num(c.get().to_bits()),
        Term::Var(name) => Key::Var(*name),
        Term::Apply(..) => Key::Shared(Rc::as_ptr(term)),
    }
}

/// The differences shown so far, each in the orientation it was first
/// shown in: a later `(- b a)` is shown as `(neg (- a b))`, so one output
/// has one orientation of each difference and shares it.
#[derive(Default)]
struct Orientation {
    shown: std::collections::HashMap<(Key, Key), Rc<Term>>,
    /// The negations made here, whose sign a product takes out.
    made: std::collections::HashSet<*const Term>,
    /// Every term whose address is a key above, kept alive so the address
    /// is never reused by another term while this lives (a freed
    /// negation's address taken by `(sqrt 2)` made a product show `-2`).
    kept: Vec<Rc<Term>>,
}

impl Orientation {
    /// The other orientation of `term`, a difference, when that one is
    /// shown: as `(neg (- a b))`, not through `tidy`, which would turn it
    /// back.
    fn reversed(&mut self, term: &Rc<Term>) -> Option<Rc<Term>> {
        let (a, b) = difference(term)?;
        let other = self.shown.get(&(b, a))?.clone();
        let negated = Rc::new(apply("neg", vec![other]));
        self.made.insert(Rc::as_ptr(&negated));
        self.kept.push(negated.clone());
        Some(negated)
    }

    /// A term about to be shown as an operand (or a result): a difference
    /// takes the orientation shown first, and is recorded.
    fn operand(&mut self, term: Rc<Term>) -> Rc<Term> {
        if let Some(reversed) = self.reversed(&term) {
            return reversed;
        }
        match difference(&term) {
            Some(keys) => self.shown.entry(keys).or_insert(term).clone(),
            None => term,
        }
    }

    /// A node's own term: the other orientation when that one is shown
    /// (nothing is recorded until the term is used).
    fn result(&mut self, term: Rc<Term>) -> Rc<Term> {
        self.reversed(&term).unwrap_or(term)
    }

    /// `term`, when a difference not yet shown the other way, is shown as
    /// `name` (`cse`'s temporaries).
    fn name(&mut self, term: &Rc<Term>, name: &Rc<Term>) {
        if let Some(keys) = difference(term)
            && !self.shown.contains_key(&(keys.1, keys.0))
        {
            self.shown.entry(keys).or_insert_with(|| name.clone());
            // The keys are the addresses of `term`'s operands.
            self.kept.push(term.clone());
        }
    }

    /// Takes the sign out of a product's factors that are negations made
    /// here: `(* 2 (neg (- a b)))` shows as `(* -2 (- a b))`.
    fn pull_signs(&self, factors: &mut Vec<Rc<Term>>) {
        let mut negative = false;
        for factor in factors.iter_mut() {
            if self.made.contains(&Rc::as_ptr(factor))
                && let Term::Apply(_, xs) = &**factor
            {
                *factor = xs[0].clone();
                negative = !negative;
            }
        }
        if negative {
            factors.insert(0, Rc::new(Term::Num(Constant::new(-1.0).expect("finite"))));
        }
    }
}

/// The keys of a difference's operands.
fn difference(term: &Rc<Term>) -> Option<(Key, Key)> {
    match &**term {
        Term::Apply(op, xs) if op.as_str() == "-" && xs.len() == 2 => {
            Some((key(&xs[0]), key(&xs[1])))
        }
        _ => None,
    }
}

/// The showing order of a product's factors.
fn factor_rank(factor: &Term) -> (u8, &str) {
    match factor {
        Term::Num(_) => (0, ""),
        Term::Var(name) => (1, name.as_str()),
        Term::Apply(..) => (2, ""),
    }
}

fn apply(op: &str, args: Vec<Rc<Term>>) -> Term {
    Term::Apply(Symbol::from(op), args)
}

/// A product of `factors` (one factor is itself).
fn product_of(mut factors: Vec<Rc<Term>>) -> Term {
    match factors.len() {
        1 => (*factors.pop().expect("one factor")).clone(),
        _ => apply("*", factors),
    }
}

/// The sign rules of the module doc, on a term whose operands are tidy.
fn tidy(term: Term) -> Term {
    let Term::Apply(op, args) = &term else {
        return term;
    };
    let number = |t: &Rc<Term>| t.number();
    match (op.as_str(), args.as_slice()) {
        ("neg", [a]) => match &**a {
            Term::Num(c) => Constant::new(-c.get()).map_or(term.clone(), Term::Num),
            Term::Apply(inner, xs) if inner.as_str() == "neg" => (*xs[0]).clone(),
            Term::Apply(inner, xs) if inner.as_str() == "-" && xs.len() == 2 => {
                apply("-", vec![xs[1].clone(), xs[0].clone()])
            }
            Term::Apply(inner, xs) if inner.as_str() == "*" && xs.len() >= 2 => {
                match number(&xs[0]).and_then(|c| Constant::new(-c)) {
                    Some(c) => tidy(apply(
                        "*",
                        std::iter::once(Rc::new(Term::Num(c)))
                            .chain(xs[1..].iter().cloned())
                            .collect(),
                    )),
                    None => term.clone(),
                }
            }
            _ => term.clone(),
        },
        ("*", [first, rest @ ..]) if !rest.is_empty() => match number(first) {
            Some(1.0) => product_of(rest.to_vec()),
            Some(-1.0) => apply("neg", vec![Rc::new(product_of(rest.to_vec()))]),
            _ => term.clone(),
        },
        ("+", [a, b]) => match (&**b, number(b)) {
            (Term::Apply(inner, xs), _) if inner.as_str() == "neg" => {
                apply("-", vec![a.clone(), xs[0].clone()])
            }
            (_, Some(c)) if c < 0.0 => match Constant::new(-c) {
                Some(c) => apply("-", vec![a.clone(), Rc::new(Term::Num(c))]),
                None => term.clone(),
            },
            _ => term.clone(),
        },
        ("-", [a, b]) => match &**b {
            Term::Apply(inner, xs) if inner.as_str() == "neg" => {
                apply("+", vec![a.clone(), xs[0].clone()])
            }
            _ => term.clone(),
        },
        _ => term.clone(),
    }
}

impl std::fmt::Display for Term {
    /// As an s-expression, numbers as `infix` writes them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Term::Num(c) => f.write_str(&super::infix::number(c.get())),
            Term::Var(name) => f.write_str(name.as_str()),
            Term::Apply(op, args) => {
                write!(f, "({op}")?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shown form of egg-syntax text (binary operators, no builder
    /// identities applied first).
    fn shown(text: &str) -> String {
        let expr: RecExpr<Math> = text.parse().expect("egg syntax");
        let root = Id::from(expr.as_ref().len() - 1);
        terms(&expr, &[root], &[]).1[0].to_string()
    }

    #[test]
    fn a_difference_has_one_orientation_in_one_output() {
        // The operands of a top node, shown together as roots.
        let shown_together = |text: &str| {
            let expr: RecExpr<Math> = text.parse().expect("egg syntax");
            let top = &expr[Id::from(expr.as_ref().len() - 1)];
            let roots = top.children().to_vec();
            let shown: Vec<String> = terms(&expr, &roots, &[])
                .1
                .iter()
                .map(|t| t.to_string())
                .collect();
            shown.join(" ")
        };
        assert_eq!(
            shown_together("(+ (- a b) (* 2 (- b a)))"),
            "(- a b) (* -2 (- a b))"
        );
        assert_eq!(
            shown_together("(+ (* x (- b a)) (- a b))"),
            "(* x (- b a)) (neg (- b a))"
        );
        assert_eq!(
            shown_together("(+ (- a b) (- c (- b a)))"),
            "(- a b) (+ c (- a b))"
        );
        assert_eq!(
            shown_together("(+ (- a b) (neg (- b a)))"),
            "(- a b) (- a b)"
        );
        // Alone, a negated difference is still shown reversed.
        assert_eq!(shown("(neg (- a b))"), "(- b a)");
    }

    #[test]
    fn signs_units_and_numbers_are_tidied() {
        for (text, want) in [
            ("(* 1 (* a b))", "(* a b)"),
            ("(* -1 (* a b))", "(neg (* a b))"),
            ("(* -1 a)", "(neg a)"),
            ("(neg (neg x))", "x"),
            ("(neg (- a b))", "(- b a)"),
            ("(+ a (neg b))", "(- a b)"),
            ("(- a (neg b))", "(+ a b)"),
            ("(neg (* 3 x))", "(* -3 x)"),
            ("(neg 2.5)", "-2.5"),
            ("(+ x -2)", "(- x 2)"),
            ("(* 2 (* 3 x))", "(* 6 x)"),
            ("(* (* y 2) (* x 3))", "(* 6 x y)"),
            ("(+ (+ a 0) (+ 0 b))", "(+ a b)"),
            ("(neg (* -1 x))", "x"),
        ] {
            assert_eq!(shown(text), want, "{text}");
        }
    }

    #[test]
    fn shared_subterms_stay_shared_and_output_is_stable() {
        // (+ (sin (* x y)) (cos (* x y))) with one (* x y).
        let mut expr = RecExpr::default();
        let x = expr.add(Math::Var(Symbol::from("x")));
        let y = expr.add(Math::Var(Symbol::from("y")));
        let product = expr.add(Math::Mul([x, y]));
        let sin = expr.add(Math::Sin([product]));
        let cos = expr.add(Math::Cos([product]));
        let root = expr.add(Math::Add([sin, cos]));
        let (own, roots) = terms(&expr, &[root], &[]);
        let Term::Apply(_, args) = &*roots[0] else {
            panic!("a sum")
        };
        let (Term::Apply(_, a), Term::Apply(_, b)) = (&*args[0], &*args[1]) else {
            panic!("two calls")
        };
        assert!(Rc::ptr_eq(&a[0], &b[0]), "(* x y) is one term");
        let again = terms(&expr, &[root], &[]);
        assert_eq!(format!("{own:?}"), format!("{:?}", again.0));
    }
}

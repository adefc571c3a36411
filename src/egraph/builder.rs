//! `ExprBuilder`: builds `Math` expressions with sharing (hash-consing) and
//! the identities that hold everywhere (`a + 0`, `a * 1`, `a / 1`, `-(-a)`,
//! `a ^ 1`, `a + a`, constant folding). The reverse sweep builds adjoints
//! with it, so the e-graph starts from a small program.
//!
//! Numbers lead products. Further normalization (floating divisions and
//! negations up, `a * (1 / b)` as `a / b`) was measured on the W3 workloads
//! and made results larger: it breaks the sharing of the primal quotient
//! that the reverse sweep reuses. That work is left to the e-graph, which
//! keeps both forms.
//!
//! None of these identities changes where an expression is defined: `a * 0`
//! and `a - a` fold to 0 only when `a` is built from operations defined
//! everywhere.

use super::analysis::fold_numbers;
use crate::ir::math::language::{Constant, Math};
use crate::ir::math::partials::PartialBuilder;
use egg::{Id, Language, RecExpr, Symbol};
use rustc_hash::FxHashMap;

/// A growing expression DAG; every node is stored once.
#[derive(Default, Clone, Debug)]
pub struct ExprBuilder {
    expr: RecExpr<Math>,
    memo: FxHashMap<Math, Id>,
    /// Per node: built only from operations defined everywhere (no
    /// division, pow, nor a function whose row's domain is restricted:
    /// log, sqrt, tan, asin, acos, log1p, xlogy, lgamma, digamma,
    /// polygamma), so `a * 0` and `a - a` may fold to 0 without widening a
    /// domain.
    total: Vec<bool>,
    /// Nodes are stored as given: sharing only, no identities (`explain`
    /// starts from what the user wrote).
    verbatim: bool,
}

impl ExprBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that stores nodes as given, sharing equal ones but
    /// applying no identity and folding no constant.
    pub fn verbatim() -> Self {
        ExprBuilder {
            verbatim: true,
            ..Self::default()
        }
    }

    /// The node stored at `id`.
    pub fn node(&self, id: Id) -> &Math {
        &self.expr[id]
    }

    /// The number of stored nodes.
    pub fn len(&self) -> usize {
        self.expr.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.expr.is_empty()
    }

    /// The constant at `id`, if it is one.
    pub fn constant(&self, id: Id) -> Option<f64> {
        self.expr[id].constant()
    }

    /// The id of variable `name` if it has been added.
    pub fn lookup_var(&self, name: Symbol) -> Option<Id> {
        self.memo.get(&Math::Var(name)).copied()
    }

    /// The expression built so far (children always precede parents).
    pub fn expr(&self) -> &RecExpr<Math> {
        &self.expr
    }

    /// Gives up the expression.
    pub fn into_expr(self) -> RecExpr<Math> {
        self.expr
    }

    /// Copies `roots` of `expr` in, returning their new ids.
    pub fn add_expr(&mut self, expr: &RecExpr<Math>, roots: &[Id]) -> Vec<Id> {
        let mut map = Vec::with_capacity(expr.len());
        for node in expr.as_ref() {
            let id = self.add(node.clone().map_children(|child| map[usize::from(child)]));
            map.push(id);
        }
        roots.iter().map(|&root| map[usize::from(root)]).collect()
    }

    /// A number. Only finite numbers are constants: callers converting
    /// user input check this first (see `Constant::new`).
    pub fn num(&mut self, value: f64) -> Id {
        let constant = Constant::new(value).expect("ExprBuilder::num takes finite numbers");
        self.insert(Math::Num(constant))
    }

    /// A constant.
    pub fn constant_node(&mut self, value: Constant) -> Id {
        self.insert(Math::Num(value))
    }

    /// A variable.
    pub fn var(&mut self, name: Symbol) -> Id {
        self.insert(Math::Var(name))
    }

    /// `a + b`.
    pub fn add2(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Add([a, b]))
    }

    /// `a - b`.
    pub fn sub(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Sub([a, b]))
    }

    /// `a * b`.
    pub fn mul(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Mul([a, b]))
    }

    /// `a / b`.
    pub fn div(&mut self, a: Id, b: Id) -> Id {
        self.add(Math::Div([a, b]))
    }

    /// `-a`.
    pub fn neg(&mut self, a: Id) -> Id {
        self.add(Math::Neg([a]))
    }

    /// The sum of `terms` (0 when empty), added left to right.
    pub fn sum(&mut self, terms: &[Id]) -> Id {
        match terms.split_first() {
            None => self.num(0.0),
            Some((&first, rest)) => rest.iter().fold(first, |acc, &term| self.add2(acc, term)),
        }
    }

    /// Adds `node`, applying the everywhere-true identities first.
    pub fn add(&mut self, node: Math) -> Id {
        if self.verbatim {
            return self.insert(node);
        }
        if let Some(id) = self.simplified(&node) {
            return id;
        }
        self.insert(node)
    }

    fn insert(&mut self, node: Math) -> Id {
        if let Some(&id) = self.memo.get(&node) {
            return id;
        }
        let total = match &node {
            Math::Div(_) | Math::Pow(_) => false,
            // A user function's domain is not known.
            Math::Call(..) => false,
            // A function not defined everywhere (`log`, `sqrt`, `tan`, ...).
            other
                if crate::ir::math::elementwise::row(other).is_some_and(|row| {
                    row.domain == crate::ir::math::elementwise::Domain::Restricted
                }) =>
            {
                false
            }
            other => other
                .children()
                .iter()
                .all(|&child| self.total[usize::from(child)]),
        };
        let id = self.expr.add(node.clone());
        self.memo.insert(node, id);
        self.total.push(total);
        id
    }

    fn simplified(&mut self, node: &Math) -> Option<Id> {
        if !node.is_leaf() && node.children().iter().all(|&c| self.constant(c).is_some()) {
            let operands: Vec<f64> = node
                .children()
                .iter()
                .map(|&child| self.constant(child).unwrap_or(f64::NAN))
                .collect();
            if let Some(constant) = fold_numbers(node, &operands) {
                return Some(self.insert(Math::Num(constant)));
            }
        }
        let is = |id: Id, value: f64| self.constant(id) == Some(value);
        let is_num = |id: Id| self.constant(id).is_some();
        let node_at = |id: Id| self.expr[id].clone();
        match *node {
            Math::Add([a, b]) if is(b, 0.0) => Some(a),
            Math::Add([a, b]) if is(a, 0.0) => Some(b),
            Math::Add([a, b]) if a == b => {
                let two = self.num(2.0);
                Some(self.mul(two, a))
            }
            // Sound only where `a` is defined everywhere (see `total`). This
            // also keeps derivatives of constants in disguise finite:
            // d/dx sqrt(0 * x) is 0, not 0.5/sqrt(0) * 0 = NaN.
            Math::Mul([a, b])
                if (is(a, 0.0) && self.total[usize::from(b)])
                    || (is(b, 0.0) && self.total[usize::from(a)]) =>
            {
                Some(self.num(0.0))
            }
            Math::Sub([a, b]) if a == b && self.total[usize::from(a)] => Some(self.num(0.0)),
            Math::Sub([a, b]) if is(b, 0.0) => Some(a),
            Math::Sub([a, b]) if is(a, 0.0) => Some(self.neg(b)),
            Math::Mul([a, b]) if is(b, 1.0) => Some(a),
            Math::Mul([a, b]) if is(a, 1.0) => Some(b),
            Math::Mul([a, b]) if is(a, -1.0) => Some(self.neg(b)),
            Math::Mul([a, b]) if is(b, -1.0) => Some(self.neg(a)),
            Math::Mul([a, b]) if is_num(b) && !is_num(a) => Some(self.mul(b, a)),
            Math::Div([a, b]) if is(b, 1.0) => Some(a),
            Math::Pow([a, b]) if is(b, 1.0) => Some(a),
            Math::Neg([a]) => match node_at(a) {
                Math::Neg([inner]) => Some(inner),
                Math::Sub([x, y]) => Some(self.sub(y, x)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The nodes of `expr` that `roots` reach, as a new expression (children
/// still before parents), and the roots' new ids.
pub fn compact(expr: &RecExpr<Math>, roots: &[Id]) -> (RecExpr<Math>, Vec<Id>) {
    let nodes = expr.as_ref();
    let mut reachable = vec![false; nodes.len()];
    for &root in roots {
        reachable[usize::from(root)] = true;
    }
    for index in (0..nodes.len()).rev() {
        if reachable[index] {
            for &child in nodes[index].children() {
                reachable[usize::from(child)] = true;
            }
        }
    }
    let mut map = vec![Id::from(0usize); nodes.len()];
    let mut out = RecExpr::default();
    for (index, node) in nodes.iter().enumerate() {
        if reachable[index] {
            map[index] = out.add(node.clone().map_children(|child| map[usize::from(child)]));
        }
    }
    (
        out,
        roots.iter().map(|&root| map[usize::from(root)]).collect(),
    )
}

/// The table of partials builds symbolic derivatives with this builder.
impl PartialBuilder for ExprBuilder {
    fn num(&mut self, value: f64) -> Id {
        ExprBuilder::num(self, value)
    }
    fn constant(&self, id: Id) -> Option<f64> {
        ExprBuilder::constant(self, id)
    }
    fn add(&mut self, node: Math) -> Id {
        ExprBuilder::add(self, node)
    }
    fn add2(&mut self, a: Id, b: Id) -> Id {
        ExprBuilder::add2(self, a, b)
    }
    fn sub(&mut self, a: Id, b: Id) -> Id {
        ExprBuilder::sub(self, a, b)
    }
    fn mul(&mut self, a: Id, b: Id) -> Id {
        ExprBuilder::mul(self, a, b)
    }
    fn div(&mut self, a: Id, b: Id) -> Id {
        ExprBuilder::div(self, a, b)
    }
    fn neg(&mut self, a: Id) -> Id {
        ExprBuilder::neg(self, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_and_sharing() {
        let mut b = ExprBuilder::new();
        let x = b.var(Symbol::from("x"));
        let zero = b.num(0.0);
        let one = b.num(1.0);
        assert_eq!(b.add2(x, zero), x);
        assert_eq!(b.mul(one, x), x);
        let negated = b.neg(x);
        assert_eq!(b.neg(negated), x);
        let doubled = b.add2(x, x);
        assert_eq!(b.expr()[doubled].to_string(), "*");
        let sin_x = b.add(Math::Sin([x]));
        assert_eq!(b.add(Math::Sin([x])), sin_x);
        let two = b.num(2.0);
        let three = b.num(3.0);
        let six = b.mul(two, three);
        assert_eq!(b.constant(six), Some(6.0));
        let third = b.div(one, three);
        assert_eq!(b.constant(third), None, "1/3 has no short decimal form");
        assert_eq!(
            b.mul(x, zero),
            zero,
            "x is defined everywhere, so x * 0 is 0"
        );
        let log_x = b.add(Math::Log([x]));
        let product = b.mul(log_x, zero);
        assert_ne!(
            product, zero,
            "log(x) * 0 is kept: it is undefined for x <= 0"
        );
    }
}

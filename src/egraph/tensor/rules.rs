//! Rewrites of tensor programs. Each one holds for every real value and
//! keeps where a program is defined (`x / x` is not 1 at 0); none moves a
//! division or product where it could overflow (`(a / b) / c` is not
//! rewritten to `a / (b c)`). Reassociating sums and products may change
//! the last bits of a result, as any compiler's reassociation does. Each
//! rule is applied only where its result has the shape of the class it
//! joins (`ShapeSafe`): `x * 1` is `x` only when the 1 does not broadcast
//! `x` to a larger shape.

use super::egraph::{Shapes, TensorEGraph};
use crate::ir::op::{Shape, TNode};
use crate::ir::shape::infer;
use egg::{Applier, ENodeOrVar, Id, Pattern, PatternAst, Rewrite, Subst, Symbol};
use smallvec::SmallVec;
use std::sync::OnceLock;

/// A rewrite of tensor programs.
pub type TensorRewrite = Rewrite<TNode, Shapes>;

/// Applies `rhs` only where its shape equals the matched class's shape.
#[derive(Debug)]
pub struct ShapeSafe {
    rhs: Pattern<TNode>,
}

/// The shape `ast` would have with `subst`'s classes, if it fits.
fn pattern_shape(ast: &PatternAst<TNode>, egraph: &TensorEGraph, subst: &Subst) -> Option<Shape> {
    let mut shapes: Vec<Shape> = Vec::with_capacity(ast.as_ref().len());
    for node in ast.as_ref() {
        let shape = match node {
            ENodeOrVar::Var(v) => egraph[*subst.get(*v)?].data.shape.clone(),
            ENodeOrVar::ENode(node) => {
                let children: SmallVec<[&[usize]; 3]> = node
                    .children
                    .iter()
                    .map(|&c| &shapes[usize::from(c)][..])
                    .collect();
                infer(&node.op, &children).ok()?
            }
        };
        shapes.push(shape);
    }
    shapes.pop()
}

impl Applier<TNode, Shapes> for ShapeSafe {
    fn apply_one(
        &self,
        egraph: &mut TensorEGraph,
        eclass: Id,
        subst: &Subst,
        searcher_ast: Option<&PatternAst<TNode>>,
        rule_name: Symbol,
    ) -> Vec<Id> {
        let target = &egraph[eclass].data.shape;
        match pattern_shape(&self.rhs.ast, egraph, subst) {
            Some(shape) if shape == *target => {
                self.rhs
                    .apply_one(egraph, eclass, subst, searcher_ast, rule_name)
            }
            _ => Vec::new(),
        }
    }

    fn vars(&self) -> Vec<egg::Var> {
        self.rhs.vars()
    }
}

fn rule(name: &str, lhs: &str, rhs: &str) -> TensorRewrite {
    let lhs: Pattern<TNode> = lhs.parse().expect("built-in tensor rule patterns parse");
    let rhs: Pattern<TNode> = rhs.parse().expect("built-in tensor rule patterns parse");
    Rewrite::new(name, lhs, ShapeSafe { rhs }).expect("built-in tensor rules are well formed")
}

/// The built-in tensor rules.
pub fn tensor_rules() -> &'static [TensorRewrite] {
    static RULES: OnceLock<Vec<TensorRewrite>> = OnceLock::new();
    RULES.get_or_init(|| {
        [
            ("add-commute", "(+ ?a ?b)", "(+ ?b ?a)"),
            ("mul-commute", "(* ?a ?b)", "(* ?b ?a)"),
            ("add-assoc", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"),
            ("add-assoc-back", "(+ (+ ?a ?b) ?c)", "(+ ?a (+ ?b ?c))"),
            ("mul-assoc", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"),
            ("mul-assoc-back", "(* (* ?a ?b) ?c)", "(* ?a (* ?b ?c))"),
            ("add-zero", "(+ ?a 0)", "?a"),
            ("sub-zero", "(- ?a 0)", "?a"),
            ("mul-one", "(* ?a 1)", "?a"),
            ("div-one", "(/ ?a 1)", "?a"),
            ("add-self", "(+ ?a ?a)", "(* 2 ?a)"),
            ("neg-neg", "(neg (neg ?a))", "?a"),
            ("mul-minus-one", "(* -1 ?a)", "(neg ?a)"),
            ("sub-as-add", "(- ?a ?b)", "(+ ?a (neg ?b))"),
            ("add-neg", "(+ ?a (neg ?b))", "(- ?a ?b)"),
            ("neg-out-of-mul", "(* (neg ?a) ?b)", "(neg (* ?a ?b))"),
            ("neg-into-mul", "(neg (* ?a ?b))", "(* (neg ?a) ?b)"),
            ("factor", "(+ (* ?a ?b) (* ?a ?c))", "(* ?a (+ ?b ?c))"),
            ("factor-sub", "(- (* ?a ?b) (* ?a ?c))", "(* ?a (- ?b ?c))"),
            ("factor-self", "(+ (* ?a ?b) ?a)", "(* ?a (+ ?b 1))"),
            ("transpose-transpose", "(transpose (transpose ?a))", "?a"),
        ]
        .iter()
        .map(|(name, lhs, rhs)| rule(name, lhs, rhs))
        .collect()
    })
}

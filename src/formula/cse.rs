//! Common subexpressions: each subterm used more than once (a call or
//! operation, not a number or variable) is named once (`t1`, `t2`, ... in
//! the order they can be computed) and referred to by its name.

use super::term::{Term, terms};
use crate::egraph::Math;
use crate::egraph::builder::compact;
use egg::{Id, Language, RecExpr, Symbol};
use std::collections::HashSet;
use std::rc::Rc;

/// Shared subterms named, then the results in terms of them.
#[derive(Clone, Debug)]
pub struct Shared {
    /// Definitions in order: each reads only variables and earlier names.
    pub definitions: Vec<(Symbol, Rc<Term>)>,
    /// The roots' terms.
    pub results: Vec<Rc<Term>>,
}

/// The common subexpressions of `roots` of `expr` (a DAG: equal subterms
/// are one node, as `ExprBuilder` and extraction make them). Names skip any
/// variable's name.
pub fn cse(expr: &RecExpr<Math>, roots: &[Id]) -> Shared {
    // Only nodes the roots reach: a RecExpr may hold others.
    let (expr, roots) = compact(expr, roots);
    let (expr, roots) = (&expr, &roots[..]);
    let nodes = expr.as_ref();
    let mut uses = vec![0usize; nodes.len()];
    for node in nodes {
        for &child in node.children() {
            uses[usize::from(child)] += 1;
        }
    }
    for &root in roots {
        uses[usize::from(root)] += 1;
    }
    let taken: HashSet<&str> = nodes
        .iter()
        .filter_map(|node| match node {
            Math::Var(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let mut next = 0usize;
    let mut fresh = || loop {
        next += 1;
        let name = format!("t{next}");
        if !taken.contains(name.as_str()) {
            return Symbol::from(name);
        }
    };
    let names: Vec<Option<Symbol>> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (!node.is_leaf() && uses[i] >= 2).then(&mut fresh))
        .collect();
    let (own, results) = terms(expr, roots, &names);
    let definitions = names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| Some((*name.as_ref()?, own[i].clone()?)))
        .collect();
    Shared {
        definitions,
        results,
    }
}

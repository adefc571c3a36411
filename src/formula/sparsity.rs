//! The non-zero pattern of a Jacobian read from its formulas: entry
//! `(i, j)` may be non-zero when expression `i` depends on variable `j`
//! through operations whose derivative is not zero everywhere (`sign`
//! passes nothing on, `heaviside` only its value at zero). Expressions
//! are read as built (a DAG with the builder's identities applied:
//! `(* 0 x)` holds no `x`).

use crate::egraph::Math;
use egg::{Id, Language, RecExpr, Symbol};

/// The `(row, column)` pairs of the Jacobian of `roots` with respect to
/// `vars` that may be non-zero, row by row, columns ascending.
pub fn sparsity(expr: &RecExpr<Math>, roots: &[Id], vars: &[Symbol]) -> Vec<(usize, usize)> {
    let words = vars.len().div_ceil(64).max(1);
    let nodes = expr.as_ref();
    let mut deps: Vec<u64> = vec![0; nodes.len() * words];
    for (index, node) in nodes.iter().enumerate() {
        let (before, rest) = deps.split_at_mut(index * words);
        let own = &mut rest[..words];
        match node {
            Math::Var(name) => {
                if let Some(j) = vars.iter().position(|v| v == name) {
                    own[j / 64] |= 1 << (j % 64);
                }
            }
            // Derivative zero almost everywhere.
            Math::Sign(_) => {}
            Math::Heaviside([_, at_zero]) => {
                let child = usize::from(*at_zero) * words;
                for (o, c) in own.iter_mut().zip(&before[child..child + words]) {
                    *o |= c;
                }
            }
            other => {
                for &child in other.children() {
                    let child = usize::from(child) * words;
                    for (o, c) in own.iter_mut().zip(&before[child..child + words]) {
                        *o |= c;
                    }
                }
            }
        }
    }
    let mut pattern = Vec::new();
    for (row, &root) in roots.iter().enumerate() {
        let bits = &deps[usize::from(root) * words..(usize::from(root) + 1) * words];
        for col in 0..vars.len() {
            if bits[col / 64] >> (col % 64) & 1 == 1 {
                pattern.push((row, col));
            }
        }
    }
    pattern
}

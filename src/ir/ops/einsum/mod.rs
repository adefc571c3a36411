//! `einsum` planned onto existing operations: the subscripts (NumPy's
//! notation: letters, `...` for broadcast leading axes, an implicit or an
//! explicit `->` output) are parsed and turned into a [`Plan`], a short
//! list of tensor-language operations over the operands: diagonals for a
//! letter repeated in one operand, sums for indices no one else needs, and
//! for each pair of operands one transpose and reshape each, one (batched)
//! matrix product and a reshape back, or a broadcasting product when
//! nothing is contracted. The plan is then run like any other sequence of
//! operations (recorded in a trace or computed at once), so `einsum` is as
//! fast as those operations and differentiable through their rules.
//!
//! `subscripts` reads the notation into labelled axes; `planner` turns
//! labelled operands into steps. This folder knows shapes and the tensor
//! language; it knows nothing of Lisp values or of how the plan is run.

mod planner;
mod subscripts;

use crate::ir::{Shape, TOp};
use planner::{Planner, Term, next_pair};
use smallvec::SmallVec;
use std::fmt;
use subscripts::{Label, expand, label_sizes, output_labels, parse};

/// A bad call of `einsum`: subscripts that cannot be read or do not fit
/// the operands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EinsumError(pub String);

impl fmt::Display for EinsumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One operation of a plan over earlier values: the operands are values
/// `0..n`, and step `k` makes value `n + k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The operation.
    pub op: TOp,
    /// The values it takes.
    pub operands: SmallVec<[usize; 2]>,
}

/// The operations that compute an `einsum`, and which value is the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The operations, in order.
    pub steps: Vec<Step>,
    /// The value holding the result.
    pub result: usize,
    /// The result's shape.
    pub shape: Shape,
}

/// Plans `einsum` with `subscripts` over operands of `shapes`.
pub fn plan(subscripts: &str, shapes: &[&[usize]]) -> Result<Plan, EinsumError> {
    let parsed = parse(subscripts)?;
    if parsed.inputs.len() != shapes.len() {
        return Err(EinsumError(format!(
            "\"{subscripts}\" has {} input terms but {} operands were given",
            parsed.inputs.len(),
            shapes.len()
        )));
    }
    let (labels, width) = expand(&parsed, shapes, subscripts)?;
    let output = output_labels(&parsed, &labels, width, subscripts)?;
    let sizes = label_sizes(&labels, shapes, subscripts)?;
    let mut planner = Planner {
        steps: Vec::new(),
        operands: shapes.len(),
    };
    let mut terms = Vec::with_capacity(shapes.len());
    for (k, (term_labels, shape)) in labels.into_iter().zip(shapes).enumerate() {
        let term = Term {
            value: k,
            labels: term_labels,
            dims: shape.to_vec(),
        };
        let term = planner.diagonals(term, subscripts)?;
        terms.push(planner.squeeze(term, &sizes));
    }
    // Indices that only one term has and the output lacks are summed
    // first, before any product is formed.
    for k in 0..terms.len() {
        let others: Vec<Label> = terms
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .flat_map(|(_, t)| t.labels.iter().copied())
            .collect();
        let term = terms[k].clone();
        terms[k] = planner.sum_out(term, |l| !output.contains(&l) && !others.contains(&l));
    }
    while terms.len() > 1 {
        let (i, j) = next_pair(&terms);
        let b = terms.remove(j);
        let a = terms.remove(i);
        let mut keep: Vec<Label> = output.clone();
        keep.extend(terms.iter().flat_map(|t| t.labels.iter().copied()));
        let joined = planner.contract(a, b, &keep);
        terms.insert(i, joined);
    }
    let last = terms
        .pop()
        .ok_or_else(|| EinsumError(format!("\"{subscripts}\" needs at least one operand")))?;
    let last = planner.sum_out(last, |l| !output.contains(&l));
    let last = planner.transpose(&last, &output);
    Ok(Plan {
        steps: planner.steps,
        result: last.value,
        shape: last.dims.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(subscripts: &str, shapes: &[&[usize]]) -> Result<Vec<usize>, String> {
        plan(subscripts, shapes)
            .map(|p| p.shape.to_vec())
            .map_err(|e| e.0)
    }

    #[test]
    fn shapes_of_common_subscripts() {
        assert_eq!(shape_of("ij,jk->ik", &[&[2, 3], &[3, 4]]), Ok(vec![2, 4]));
        assert_eq!(shape_of("ij,jk", &[&[2, 3], &[3, 4]]), Ok(vec![2, 4]));
        assert_eq!(shape_of("ii", &[&[3, 3]]), Ok(vec![]));
        assert_eq!(shape_of("ii->i", &[&[3, 3]]), Ok(vec![3]));
        assert_eq!(shape_of("ij->ji", &[&[2, 3]]), Ok(vec![3, 2]));
        assert_eq!(shape_of("i,j", &[&[2], &[3]]), Ok(vec![2, 3]));
        assert_eq!(shape_of("Ab,aB", &[&[2, 3], &[4, 5]]), Ok(vec![2, 5, 4, 3]));
        assert_eq!(
            shape_of("...ij,...jk->...ik", &[&[5, 1, 2, 3], &[4, 3, 6]]),
            Ok(vec![5, 4, 2, 6])
        );
        assert_eq!(
            shape_of("ij,jk,kl->il", &[&[2, 3], &[3, 4], &[4, 5]]),
            Ok(vec![2, 5])
        );
    }

    #[test]
    fn a_plan_is_one_product_for_a_matrix_product() {
        let p = plan("ij,jk->ik", &[&[2, 3], &[3, 4]]).unwrap();
        assert_eq!(p.steps.len(), 1);
        assert_eq!(p.steps[0].op, TOp::MatMul);
        assert_eq!(p.result, 2);
    }

    #[test]
    fn bad_subscripts_are_errors_naming_them() {
        let err = |s: &str, shapes: &[&[usize]]| plan(s, shapes).unwrap_err().0;
        assert!(err("ij,jk->ik", &[&[2, 3]]).contains("2 input terms but 1"));
        assert!(err("ij,jk->ik", &[&[2, 3], &[4, 5]]).contains("[2 3]"));
        assert!(err("ij,jk->ik", &[&[2, 3], &[4, 5]]).contains("[4 5]"));
        assert!(err("ij", &[&[2]]).contains("\"ij\""));
        assert!(err("i1", &[&[2, 2]]).contains("'1'"));
        assert!(err("ij->k", &[&[2, 2]]).contains("'k'"));
        assert!(err("ij->ii", &[&[2, 2]]).contains("repeats"));
        assert!(err("ij->i->j", &[&[2, 2]]).contains("two '->'"));
        assert!(err("ii", &[&[2, 3]]).contains("sizes 2 and 3"));
        assert!(err("...i->", &[&[2, 3]]).contains("'...'"));
        assert!(err("......i", &[&[2, 3]]).contains("two ellipses"));
    }
}

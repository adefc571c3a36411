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
//! This file knows shapes and the tensor language; it knows nothing of
//! Lisp values or of how the plan is run.

use super::Op;
use super::linalg::Diagonal;
use crate::egraph::language::Math;
use crate::egraph::tensor::op::map_op;
use crate::egraph::tensor::shape::show;
use crate::egraph::tensor::{ReduceOp, Shape, TOp};
use egg::Id;
use smallvec::SmallVec;
use std::fmt;

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

/// An index: letters `A..Z` are 0..26 and `a..z` 26..52 (so sorting
/// labels sorts letters as NumPy does); broadcast axes under `...` are 52
/// and up, outermost first.
type Label = usize;

const ELLIPSIS: Label = 52;

/// One item of a term's subscripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Letter(Label),
    Ellipsis,
}

/// The parsed subscripts.
struct Parsed {
    inputs: Vec<Vec<Item>>,
    output: Option<Vec<Item>>,
}

fn letter_label(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        _ => None,
    }
}

fn label_name(label: Label) -> String {
    match label {
        0..26 => char::from(b'A' + label as u8).to_string(),
        26..52 => char::from(b'a' + (label - 26) as u8).to_string(),
        _ => format!("... axis {}", label - ELLIPSIS),
    }
}

fn parse_term(term: &str, subscripts: &str) -> Result<Vec<Item>, EinsumError> {
    let mut items = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if items.contains(&Item::Ellipsis) {
                return Err(EinsumError(format!(
                    "\"{subscripts}\" has two ellipses in one term"
                )));
            }
            items.push(Item::Ellipsis);
            rest = after;
            continue;
        }
        let Some(label) = letter_label(c) else {
            return Err(EinsumError(format!(
                "\"{subscripts}\" has the character '{c}': subscripts are letters, ',', '->' and '...'"
            )));
        };
        items.push(Item::Letter(label));
        rest = &rest[c.len_utf8()..];
    }
    Ok(items)
}

fn parse(subscripts: &str) -> Result<Parsed, EinsumError> {
    let compact: String = subscripts.chars().filter(|c| !c.is_whitespace()).collect();
    let (left, right) = match compact.split_once("->") {
        Some((_, right)) if right.contains("->") => {
            return Err(EinsumError(format!("\"{subscripts}\" has two '->'")));
        }
        Some((left, right)) => (left, Some(right)),
        None => (compact.as_str(), None),
    };
    let inputs = left
        .split(',')
        .map(|term| parse_term(term, subscripts))
        .collect::<Result<Vec<_>, _>>()?;
    let output = match right {
        Some(right) if right.contains(',') => {
            return Err(EinsumError(format!(
                "\"{subscripts}\" has more than one output term"
            )));
        }
        Some(right) => Some(parse_term(right, subscripts)?),
        None => None,
    };
    Ok(Parsed { inputs, output })
}

/// The labels of each operand's axes (`...` expanded, right-aligned over
/// `width` broadcast axes), after checking each term against its rank.
fn expand(
    parsed: &Parsed,
    shapes: &[&[usize]],
    subscripts: &str,
) -> Result<(Vec<Vec<Label>>, usize), EinsumError> {
    let mut widths = Vec::with_capacity(shapes.len());
    for (k, (term, shape)) in parsed.inputs.iter().zip(shapes).enumerate() {
        let letters = term.iter().filter(|i| **i != Item::Ellipsis).count();
        let has_ellipsis = term.contains(&Item::Ellipsis);
        if letters > shape.len() || (!has_ellipsis && letters != shape.len()) {
            return Err(EinsumError(format!(
                "\"{subscripts}\": operand {k} has shape {} but its subscripts name {letters} axes",
                show(shape)
            )));
        }
        widths.push(shape.len() - letters);
    }
    let width = widths.iter().copied().max().unwrap_or(0);
    let labels = parsed
        .inputs
        .iter()
        .zip(&widths)
        .map(|(term, &w)| {
            let mut labels = Vec::new();
            for item in term {
                match item {
                    Item::Letter(l) => labels.push(*l),
                    Item::Ellipsis => labels.extend((width - w..width).map(|q| ELLIPSIS + q)),
                }
            }
            labels
        })
        .collect();
    Ok((labels, width))
}

/// The output's labels: as written, or NumPy's implicit output (the
/// broadcast axes, then the letters used once, in alphabetical order).
fn output_labels(
    parsed: &Parsed,
    labels: &[Vec<Label>],
    width: usize,
    subscripts: &str,
) -> Result<Vec<Label>, EinsumError> {
    let Some(output) = &parsed.output else {
        let mut counts = [0usize; ELLIPSIS];
        for &l in labels.iter().flatten().filter(|&&l| l < ELLIPSIS) {
            counts[l] += 1;
        }
        let mut out: Vec<Label> = (ELLIPSIS..ELLIPSIS + width).collect();
        out.extend((0..ELLIPSIS).filter(|&l| counts[l] == 1));
        return Ok(out);
    };
    let mut out = Vec::new();
    for item in output {
        match item {
            Item::Ellipsis => out.extend(ELLIPSIS..ELLIPSIS + width),
            Item::Letter(l) => {
                if out.contains(l) {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\" repeats '{}' in the output",
                        label_name(*l)
                    )));
                }
                if !labels.iter().flatten().any(|x| x == l) {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": the output index '{}' is in no input",
                        label_name(*l)
                    )));
                }
                out.push(*l);
            }
        }
    }
    if width > 0 && !output.contains(&Item::Ellipsis) {
        return Err(EinsumError(format!(
            "\"{subscripts}\": the operands have broadcast axes ('...') but the output does not say where they go"
        )));
    }
    Ok(out)
}

/// The size of every label over all operands: equal, or 1 (which
/// broadcasts).
fn label_sizes(
    labels: &[Vec<Label>],
    shapes: &[&[usize]],
    subscripts: &str,
) -> Result<Vec<usize>, EinsumError> {
    let mut sizes = vec![1usize; ELLIPSIS + 64];
    let mut seen: Vec<Option<usize>> = vec![None; sizes.len()];
    for (k, (term, shape)) in labels.iter().zip(shapes).enumerate() {
        for (&l, &n) in term.iter().zip(shape.iter()) {
            if l >= sizes.len() {
                return Err(EinsumError(format!(
                    "\"{subscripts}\": too many broadcast axes"
                )));
            }
            match seen[l] {
                Some(j) if j == k && sizes[l] != n => {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": the repeated index '{}' has sizes {} and {n} in operand {k} (shape {})",
                        label_name(l),
                        sizes[l],
                        show(shape)
                    )));
                }
                Some(j) if sizes[l] != n && sizes[l] != 1 && n != 1 => {
                    return Err(EinsumError(format!(
                        "\"{subscripts}\": index '{}' has size {} in operand {j} (shape {}) and {n} in operand {k} (shape {})",
                        label_name(l),
                        sizes[l],
                        show(shapes[j]),
                        show(shape)
                    )));
                }
                Some(_) if n == 1 => {}
                _ => {
                    sizes[l] = n;
                    seen[l] = Some(k);
                }
            }
        }
    }
    Ok(sizes)
}

/// A value of the plan with the labels of its axes.
#[derive(Clone, Debug)]
struct Term {
    value: usize,
    labels: Vec<Label>,
    dims: Vec<usize>,
}

/// Builds the steps of a plan.
struct Planner {
    steps: Vec<Step>,
    operands: usize,
}

impl Planner {
    fn push(&mut self, op: TOp, operands: &[usize]) -> usize {
        self.steps.push(Step {
            op,
            operands: SmallVec::from_slice(operands),
        });
        self.operands + self.steps.len() - 1
    }

    fn reshape(&mut self, term: &Term, dims: &[usize]) -> usize {
        if term.dims == dims {
            return term.value;
        }
        self.push(TOp::Reshape(Shape::from_slice(dims)), &[term.value])
    }

    /// `term` with its axes in the order of `order` (a permutation of its
    /// labels).
    fn transpose(&mut self, term: &Term, order: &[Label]) -> Term {
        let perm: SmallVec<[u8; 4]> = order
            .iter()
            .map(|l| term.labels.iter().position(|x| x == l).unwrap_or(0) as u8)
            .collect();
        let dims: Vec<usize> = perm.iter().map(|&p| term.dims[usize::from(p)]).collect();
        let identity = perm.iter().enumerate().all(|(i, &p)| usize::from(p) == i);
        let value = if identity {
            term.value
        } else {
            self.push(TOp::Transpose(perm), &[term.value])
        };
        Term {
            value,
            labels: order.to_vec(),
            dims,
        }
    }

    /// `term` summed over the labels `drop` says to drop.
    fn sum_out(&mut self, term: Term, drop: impl Fn(Label) -> bool) -> Term {
        let axes: SmallVec<[u8; 4]> = (0..term.labels.len())
            .filter(|&a| drop(term.labels[a]))
            .map(|a| a as u8)
            .collect();
        if axes.is_empty() {
            return term;
        }
        let kept: Vec<usize> = (0..term.labels.len())
            .filter(|&a| !drop(term.labels[a]))
            .collect();
        let value = self.push(
            TOp::Reduce {
                op: ReduceOp::Sum,
                axes,
                keepdims: false,
            },
            &[term.value],
        );
        Term {
            value,
            labels: kept.iter().map(|&a| term.labels[a]).collect(),
            dims: kept.iter().map(|&a| term.dims[a]).collect(),
        }
    }

    /// `term` with each repeated label reduced to its diagonal.
    fn diagonals(&mut self, mut term: Term, subscripts: &str) -> Result<Term, EinsumError> {
        while let Some((p, q)) = repeated(&term.labels) {
            let label = term.labels[p];
            if term.dims[p] != term.dims[q] {
                return Err(EinsumError(format!(
                    "\"{subscripts}\": the repeated index '{}' has sizes {} and {} in one operand",
                    label_name(label),
                    term.dims[p],
                    term.dims[q]
                )));
            }
            let mut order: Vec<Label> = Vec::new();
            let mut positions: Vec<usize> = Vec::new();
            for (a, &l) in term.labels.iter().enumerate() {
                if a != p && a != q {
                    order.push(l);
                    positions.push(a);
                }
            }
            positions.extend([p, q]);
            let perm: SmallVec<[u8; 4]> = positions.iter().map(|&a| a as u8).collect();
            let identity = perm.iter().enumerate().all(|(i, &a)| usize::from(a) == i);
            let moved = if identity {
                term.value
            } else {
                self.push(TOp::Transpose(perm), &[term.value])
            };
            let value = self.push(TOp::Op(Op::Diagonal(Diagonal)), &[moved]);
            let mut dims: Vec<usize> = positions[..order.len()]
                .iter()
                .map(|&a| term.dims[a])
                .collect();
            dims.push(term.dims[p]);
            order.push(label);
            term = Term {
                value,
                labels: order,
                dims,
            };
        }
        Ok(term)
    }

    /// `term` without the size-1 axes of labels that are longer elsewhere
    /// (they broadcast).
    fn squeeze(&mut self, term: Term, sizes: &[usize]) -> Term {
        let kept: Vec<usize> = (0..term.labels.len())
            .filter(|&a| term.dims[a] == sizes[term.labels[a]])
            .collect();
        if kept.len() == term.labels.len() {
            return term;
        }
        let dims: Vec<usize> = kept.iter().map(|&a| term.dims[a]).collect();
        let value = self.reshape(&term, &dims);
        Term {
            value,
            labels: kept.iter().map(|&a| term.labels[a]).collect(),
            dims,
        }
    }

    /// The product of `a` and `b` summed over their shared labels that
    /// `keep` does not hold.
    fn contract(&mut self, a: Term, b: Term, keep: &[Label]) -> Term {
        let a = self.sum_out(a, |l| !keep.contains(&l) && !b.labels.contains(&l));
        let b = self.sum_out(b, |l| !keep.contains(&l) && !a.labels.contains(&l));
        let shared = |l: &Label| b.labels.contains(l);
        let batch: Vec<Label> = a
            .labels
            .iter()
            .copied()
            .filter(|l| shared(l) && keep.contains(l))
            .collect();
        let summed: Vec<Label> = a
            .labels
            .iter()
            .copied()
            .filter(|l| shared(l) && !keep.contains(l))
            .collect();
        let a_free: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
        let b_free: Vec<Label> = b
            .labels
            .iter()
            .copied()
            .filter(|l| !a.labels.contains(l))
            .collect();
        let size = |term: &Term, labels: &[Label]| -> Vec<usize> {
            labels
                .iter()
                .map(|l| term.dims[term.labels.iter().position(|x| x == l).unwrap_or(0)])
                .collect()
        };
        let (batch_dims, a_dims, b_dims) = (size(&a, &batch), size(&a, &a_free), size(&b, &b_free));
        let mut labels = batch.clone();
        labels.extend(&a_free);
        labels.extend(&b_free);
        let mut dims = batch_dims.clone();
        dims.extend(&a_dims);
        dims.extend(&b_dims);
        let value = if summed.is_empty() {
            // No contraction: a broadcasting product.
            let a_t = self.transpose(&a, &[batch.clone(), a_free.clone()].concat());
            let b_t = self.transpose(&b, &[batch.clone(), b_free.clone()].concat());
            let ones = |n: usize| std::iter::repeat_n(1, n);
            let a_shape: Vec<usize> = batch_dims
                .iter()
                .copied()
                .chain(a_dims.iter().copied())
                .chain(ones(b_free.len()))
                .collect();
            let b_shape: Vec<usize> = batch_dims
                .iter()
                .copied()
                .chain(ones(a_free.len()))
                .chain(b_dims.iter().copied())
                .collect();
            let (x, y) = (self.reshape(&a_t, &a_shape), self.reshape(&b_t, &b_shape));
            self.push(map_op(&Math::Mul([Id::from(0); 2])), &[x, y])
        } else {
            let a_t = self.transpose(
                &a,
                &[batch.clone(), a_free.clone(), summed.clone()].concat(),
            );
            let b_t = self.transpose(
                &b,
                &[batch.clone(), summed.clone(), b_free.clone()].concat(),
            );
            let product = |d: &[usize]| d.iter().product::<usize>();
            let (nb, nc) = (product(&batch_dims), product(&size(&a, &summed)));
            let (na, nf) = (product(&a_dims), product(&b_dims));
            let (a_shape, b_shape) = if batch.is_empty() {
                (vec![na, nc], vec![nc, nf])
            } else {
                (vec![nb, na, nc], vec![nb, nc, nf])
            };
            let (x, y) = (self.reshape(&a_t, &a_shape), self.reshape(&b_t, &b_shape));
            let m = self.push(TOp::MatMul, &[x, y]);
            let mut out_dims = a_shape[..a_shape.len() - 1].to_vec();
            out_dims.push(nf);
            let made = Term {
                value: m,
                labels: Vec::new(),
                dims: out_dims,
            };
            self.reshape(&made, &dims)
        };
        Term {
            value,
            labels,
            dims,
        }
    }
}

/// The first label that occurs twice, as two positions.
fn repeated(labels: &[Label]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|p| {
        labels[p + 1..]
            .iter()
            .position(|&l| l == labels[p])
            .map(|d| (p, p + 1 + d))
    })
}

/// The next pair of terms to contract: of the pairs that share an index,
/// the one with the smallest result (the first such pair on ties); the
/// first two terms when none share one.
fn next_pair(terms: &[Term]) -> (usize, usize) {
    let mut best: Option<(usize, usize, usize)> = None;
    for i in 0..terms.len() {
        for j in i + 1..terms.len() {
            let (a, b) = (&terms[i], &terms[j]);
            if !a.labels.iter().any(|l| b.labels.contains(l)) {
                continue;
            }
            let size = a
                .dims
                .iter()
                .chain(
                    b.labels
                        .iter()
                        .zip(&b.dims)
                        .filter(|(l, _)| !a.labels.contains(l))
                        .map(|(_, n)| n),
                )
                .fold(1usize, |acc, &n| acc.saturating_mul(n));
            if best.is_none_or(|(_, _, s)| size < s) {
                best = Some((i, j, size));
            }
        }
    }
    best.map_or((0, 1), |(i, j, _)| (i, j))
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

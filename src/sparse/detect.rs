//! The non-zero pattern of a Jacobian read from a tensor program, element
//! by element: which elements of the inputs being differentiated each
//! element of each node depends on, followed through the program.
//! Elementwise operations keep positions (through broadcasts), data
//! movements follow their sources (`egraph::tensor::movement`), a
//! reduction joins the positions it reduces, a matrix product the row and
//! the column it reads; comparisons, rounding and `stop-gradient` depend
//! on nothing (their derivative is zero). Any other operation is taken to
//! mix all its operands' elements (a loop, a solve): the pattern stays
//! correct, only less sparse.

use super::Pattern;
use crate::egraph::tensor::movement::Movement;
use crate::egraph::tensor::{Shape, TNode, TOp};
use egg::Id;

/// The positions (among the differentiated inputs' elements, numbered
/// one input after another) one element may depend on, sorted.
type Deps = Vec<u32>;

/// The pattern of the Jacobian of node `output` (its elements, row-major,
/// are the rows) with respect to the inputs `wrt` (by input index; their
/// elements, one input after another, are the columns) of the program
/// `nodes` with `shapes`. An error when the pattern would hold more than
/// `max_nnz` entries (a dense Jacobian is better computed densely).
pub fn jacobian_pattern(
    nodes: &[TNode],
    shapes: &[Shape],
    output: Id,
    wrt: &[u32],
    max_nnz: usize,
) -> Result<Pattern, String> {
    let numel = |s: &Shape| s.iter().product::<usize>();
    let mut offsets = Vec::with_capacity(wrt.len());
    let mut columns = 0usize;
    for &input in wrt {
        let shape = nodes
            .iter()
            .zip(shapes)
            .find(|(n, _)| matches!(n.op, TOp::Input { index, .. } if index == input))
            .map(|(_, s)| numel(s))
            .unwrap_or(0);
        offsets.push(columns);
        columns += shape;
    }
    if columns > u32::MAX as usize {
        return Err(format!(
            "{columns} differentiated elements are too many for a pattern"
        ));
    }
    let last = usize::from(output);
    // How many later nodes read each node (its dependencies are dropped
    // after the last).
    let mut readers = vec![0usize; last + 1];
    for node in &nodes[..=last] {
        for &c in &node.children {
            readers[usize::from(c)] += 1;
        }
    }
    let mut deps: Vec<Option<Vec<Deps>>> = vec![None; last + 1];
    for (i, node) in nodes[..=last].iter().enumerate() {
        let shape = &shapes[i];
        let n = numel(shape);
        let computed = {
            let operand = |c: &Id| deps[usize::from(*c)].as_deref().unwrap_or(&[]);
            match &node.op {
                TOp::Input { index, .. } => match wrt.iter().position(|w| w == index) {
                    Some(k) => (0..n).map(|e| vec![(offsets[k] + e) as u32]).collect(),
                    None => vec![Vec::new(); n],
                },
                _ if !node.is_differentiable() => vec![Vec::new(); n],
                TOp::Map(_) | TOp::Where => {
                    // A `where`'s condition has no derivative.
                    let from = usize::from(matches!(node.op, TOp::Where));
                    let operands: Vec<(&[Deps], &Shape)> = node.children[from..]
                        .iter()
                        .map(|c| (operand(c), &shapes[usize::from(*c)]))
                        .collect();
                    elementwise(shape, &operands)
                }
                TOp::Reshape(_) | TOp::Tag(_) => operand(&node.children[0]).to_vec(),
                TOp::Reduce { axes, .. } => {
                    let c = node.children[0];
                    reduce(operand(&c), &shapes[usize::from(c)], axes, n)
                }
                TOp::MatMul => {
                    let (a, b) = (node.children[0], node.children[1]);
                    let (sa, sb) = (&shapes[usize::from(a)], &shapes[usize::from(b)]);
                    match matmul(operand(&a), sa, operand(&b), sb, max_nnz)? {
                        Some(d) => d,
                        None => mixed(&node.children, &deps, n, max_nnz)?,
                    }
                }
                op => {
                    let operand_shapes: Vec<&[usize]> = node
                        .children
                        .iter()
                        .map(|c| &shapes[usize::from(*c)][..])
                        .collect();
                    match Movement::new(op, &operand_shapes) {
                        Some(movement) => moved(&movement, &node.children, &deps, shape),
                        None => mixed(&node.children, &deps, n, max_nnz)?,
                    }
                }
            }
        };
        within(computed.iter().map(Vec::len).sum(), max_nnz)?;
        deps[i] = Some(computed);
        for &c in &node.children {
            let c = usize::from(c);
            readers[c] -= 1;
            if readers[c] == 0 && c != last {
                deps[c] = None;
            }
        }
    }
    let rows = deps[last].take().unwrap_or_default();
    let rows = rows
        .into_iter()
        .map(|d| d.into_iter().map(|c| c as usize).collect())
        .collect();
    Pattern::new(columns, rows).map_err(|e| e.to_string())
}

/// Refuses `total` entries past `max_nnz`.
fn within(total: usize, max_nnz: usize) -> Result<(), String> {
    match total > max_nnz {
        true => Err(format!(
            "the Jacobian has more than {max_nnz} non-zeros (at least {total} in one value of the program): compute it densely (jacobian)"
        )),
        false => Ok(()),
    }
}

/// The sorted union of `a` and `b`.
fn union(a: &[u32], b: &[u32]) -> Deps {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The flat position in an operand of `from` shape broadcast to `shape`
/// of the element at `index`.
fn broadcast_position(index: &[usize], from: &[usize]) -> usize {
    let lead = index.len() - from.len();
    from.iter().enumerate().fold(0, |at, (d, &extent)| {
        at * extent + if extent == 1 { 0 } else { index[lead + d] }
    })
}

/// Calls `f` with each row-major index of `shape` and its flat position.
fn each_index(shape: &[usize], mut f: impl FnMut(&[usize], usize)) {
    let n: usize = shape.iter().product();
    let mut index = vec![0usize; shape.len()];
    for flat in 0..n {
        f(&index, flat);
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// An elementwise operation's: each element's operands' at its position.
fn elementwise(shape: &[usize], operands: &[(&[Deps], &Shape)]) -> Vec<Deps> {
    let mut out = Vec::with_capacity(shape.iter().product());
    each_index(shape, |index, _| {
        let mut element = Deps::new();
        for (deps, from) in operands {
            if let Some(d) = deps.get(broadcast_position(index, from)) {
                element = union(&element, d);
            }
        }
        out.push(element);
    });
    out
}

/// A reduction's over `axes` of an operand of `shape`: each result
/// element joins the elements it reduces.
fn reduce(deps: &[Deps], shape: &[usize], axes: &[u8], n: usize) -> Vec<Deps> {
    let mut out = vec![Deps::new(); n];
    if deps.is_empty() {
        return out;
    }
    let kept: Vec<usize> = (0..shape.len())
        .filter(|d| !axes.contains(&(*d as u8)))
        .collect();
    each_index(shape, |index, flat| {
        let at = kept.iter().fold(0, |at, &d| at * shape[d] + index[d]);
        let joined = union(&out[at], &deps[flat]);
        out[at] = joined;
    });
    out
}

/// A 2-D (or matrix-vector) product's: element `(i, j)` joins row `i` of
/// `a` and column `j` of `b`. `None` for other ranks.
fn matmul(
    a: &[Deps],
    sa: &[usize],
    b: &[Deps],
    sb: &[usize],
    max_nnz: usize,
) -> Result<Option<Vec<Deps>>, String> {
    let (m, k) = match sa {
        [k] => (1, *k),
        [m, k] => (*m, *k),
        _ => return Ok(None),
    };
    let n = match sb {
        [kb] if *kb == k => 1,
        [kb, n] if *kb == k => *n,
        _ => return Ok(None),
    };
    fn at(deps: &[Deps], p: usize) -> &[u32] {
        deps.get(p).map_or(&[][..], Vec::as_slice)
    }
    let rows: Vec<Deps> = (0..m)
        .map(|i| (0..k).fold(Deps::new(), |u, l| union(&u, at(a, i * k + l))))
        .collect();
    let cols: Vec<Deps> = (0..n)
        .map(|j| (0..k).fold(Deps::new(), |u, l| union(&u, at(b, l * n + j))))
        .collect();
    let widest = |d: &[Deps]| d.iter().map(Vec::len).max().unwrap_or(0);
    within(m * n * (widest(&rows) + widest(&cols)), max_nnz)?;
    Ok(Some(
        (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| union(&rows[i], &cols[j]))
            .collect(),
    ))
}

/// A data movement's: each element's source's (nothing for a padded
/// zero).
fn moved(
    movement: &Movement,
    children: &[Id],
    deps: &[Option<Vec<Deps>>],
    shape: &[usize],
) -> Vec<Deps> {
    let mut out = Vec::with_capacity(shape.iter().product());
    each_index(shape, |index, _| {
        let element = movement
            .source(index)
            .and_then(|(k, at)| {
                deps[usize::from(children[k as usize])]
                    .as_ref()?
                    .get(at)
                    .cloned()
            })
            .unwrap_or_default();
        out.push(element);
    });
    out
}

/// An operation taken to mix all its operands' elements: every element
/// depends on all they depend on.
fn mixed(
    children: &[Id],
    deps: &[Option<Vec<Deps>>],
    n: usize,
    max_nnz: usize,
) -> Result<Vec<Deps>, String> {
    let all = children
        .iter()
        .filter_map(|c| deps[usize::from(*c)].as_ref())
        .flatten()
        .fold(Deps::new(), |u, d| union(&u, d));
    within(all.len().saturating_mul(n), max_nnz)?;
    Ok(vec![all; n])
}

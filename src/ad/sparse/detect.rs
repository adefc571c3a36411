//! The non-zero pattern of a Jacobian read from a tensor program, element
//! by element: which elements of the inputs being differentiated each
//! element of each node depends on, followed through the program.
//! Elementwise operations keep positions (through broadcasts), data
//! movements follow their sources (`ir::movement`), a
//! reduction joins the positions it reduces, a matrix product the row and
//! the column it reads; comparisons, rounding and `stop-gradient` depend
//! on nothing (their derivative is zero); an operation of the table says
//! what each of its elements reads (`ops::Definition::reads`: a gather
//! its lane, a cumulative sum its prefix, a solve or a factorization its
//! own matrix of a stack). Any other operation is taken to mix all its
//! operands' elements (a loop): the pattern stays correct, only less
//! sparse.

use super::Pattern;
use crate::ir::movement::Movement;
use crate::ir::{Shape, TNode, TOp};
use egg::Id;
use std::rc::Rc;

/// The positions (among the differentiated inputs' elements, numbered
/// one input after another) each element of a value may depend on,
/// sorted, one element after another: element `e`'s are
/// `items[offsets[e]..offsets[e + 1]]`.
#[derive(Clone)]
pub(super) struct Deps {
    pub(super) offsets: Vec<usize>,
    pub(super) items: Vec<u32>,
}

impl Deps {
    /// `n` elements depending on nothing.
    pub(super) fn none(n: usize) -> Deps {
        Deps {
            offsets: vec![0; n + 1],
            items: Vec::new(),
        }
    }

    /// Room for `n` elements, none written yet.
    pub(super) fn with_elements(n: usize) -> Deps {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        Deps {
            offsets,
            items: Vec::new(),
        }
    }

    /// Element `e`'s positions (none past the end).
    pub(super) fn get(&self, e: usize) -> &[u32] {
        match (self.offsets.get(e), self.offsets.get(e + 1)) {
            (Some(&a), Some(&b)) => &self.items[a..b],
            _ => &[],
        }
    }

    /// Appends an element depending on `positions` (sorted and made
    /// distinct here).
    pub(super) fn push(&mut self, positions: &mut Vec<u32>) {
        if !positions.is_sorted() {
            positions.sort_unstable();
        }
        positions.dedup();
        self.items.extend_from_slice(positions);
        self.offsets.push(self.items.len());
    }

    pub(super) fn total(&self) -> usize {
        self.items.len()
    }
}

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
    let Found {
        columns, mut kept, ..
    } = dependencies(nodes, shapes, wrt, &[output], max_nnz)?;
    let rows = kept.pop().unwrap_or_else(|| Rc::new(Deps::none(0)));
    // Each element's positions are sorted, distinct and below `columns`.
    Ok(Pattern::from_rows(
        columns,
        rows.offsets.len() - 1,
        |e, into| into.extend(rows.get(e).iter().map(|&c| c as usize)),
    ))
}

/// The elements of inputs a program's nodes depend on: `columns` of
/// them, input `wrt[k]`'s starting at `starts[k]` (an input the program
/// never reads has none).
pub(super) struct Found {
    pub columns: usize,
    pub starts: Vec<usize>,
    /// The dependencies of each kept node's elements.
    pub kept: Vec<Rc<Deps>>,
}

/// The dependencies of each element of the nodes `keep` on the elements
/// of the inputs `wrt` (numbered one input after another).
pub(super) fn dependencies(
    nodes: &[TNode],
    shapes: &[Shape],
    wrt: &[u32],
    keep: &[Id],
    max_nnz: usize,
) -> Result<Found, String> {
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
    let last = keep.iter().map(|&k| usize::from(k)).max().unwrap_or(0);
    // How many later nodes read each node (its dependencies are dropped
    // after the last, unless kept).
    let mut readers = vec![0usize; last + 1];
    for node in &nodes[..=last] {
        for &c in &node.children {
            readers[usize::from(c)] += 1;
        }
    }
    for &k in keep {
        readers[usize::from(k)] += 1;
    }
    // Shared: a reshape's elements depend on what its operand's do.
    let mut deps: Vec<Option<Rc<Deps>>> = vec![None; last + 1];
    for (i, node) in nodes[..=last].iter().enumerate() {
        let shape = &shapes[i];
        let n = numel(shape);
        let computed: Rc<Deps> = {
            let none = Deps::none(0);
            let operand = |c: &Id| deps[usize::from(*c)].as_deref().unwrap_or(&none);
            match &node.op {
                TOp::Input { index, .. } => Rc::new(match wrt.iter().position(|w| w == index) {
                    Some(k) => Deps {
                        offsets: (0..=n).collect(),
                        items: (0..n).map(|e| (offsets[k] + e) as u32).collect(),
                    },
                    None => Deps::none(n),
                }),
                _ if !node.is_differentiable() => Rc::new(Deps::none(n)),
                TOp::Map(_) | TOp::Where => {
                    // A `where`'s condition has no derivative.
                    let from = usize::from(matches!(node.op, TOp::Where));
                    // Operands that depend on something; one of the
                    // result's shape (or several sharing one set) is the
                    // result's own: shared, not copied.
                    let mut active: Vec<Id> = node.children[from..]
                        .iter()
                        .copied()
                        .filter(|c| operand(c).total() > 0)
                        .collect();
                    // The same positions read at the same places once (a
                    // reshape shares its operand's, read differently).
                    let key = |c: &Id| {
                        let c = usize::from(*c);
                        (deps[c].as_ref().map(Rc::as_ptr), shapes[c].clone())
                    };
                    active.sort_by_key(key);
                    active.dedup_by_key(|c| key(c));
                    let whole = |c: &Id| shapes[usize::from(*c)] == *shape;
                    match &active[..] {
                        [] => Rc::new(Deps::none(n)),
                        [one] if whole(one) => {
                            Rc::clone(deps[usize::from(*one)].as_ref().expect("active"))
                        }
                        _ => {
                            let operands: Vec<(&Deps, &Shape)> = active
                                .iter()
                                .map(|c| (operand(c), &shapes[usize::from(*c)]))
                                .collect();
                            Rc::new(elementwise(shape, &operands, max_nnz)?)
                        }
                    }
                }
                TOp::Reshape(_) | TOp::Tag(_) | TOp::Cast(_) => {
                    match &deps[usize::from(node.children[0])] {
                        Some(shared) => Rc::clone(shared),
                        None => Rc::new(Deps::none(n)),
                    }
                }
                TOp::Reduce { axes, .. } => {
                    let c = node.children[0];
                    Rc::new(reduce(operand(&c), &shapes[usize::from(c)], axes, n))
                }
                TOp::MatMul => {
                    let (a, b) = (node.children[0], node.children[1]);
                    let (sa, sb) = (&shapes[usize::from(a)], &shapes[usize::from(b)]);
                    Rc::new(match matmul(operand(&a), sa, operand(&b), sb, max_nnz)? {
                        Some(d) => d,
                        None => mixed(&node.children, &deps, n, max_nnz)?,
                    })
                }
                op => {
                    let operand_shapes: Vec<&[usize]> = node
                        .children
                        .iter()
                        .map(|c| &shapes[usize::from(*c)][..])
                        .collect();
                    let table = match op {
                        TOp::Op(op) => {
                            read_by(op, &operand_shapes, &node.children, &deps, shape, max_nnz)?
                        }
                        TOp::Scan(spec) => {
                            Some(super::loops::looped(spec, &node.children, &deps, max_nnz)?)
                        }
                        TOp::ScanVjp(spec) => Some(super::loops::looped_reverse(
                            spec,
                            &node.children,
                            &deps,
                            max_nnz,
                        )?),
                        _ => None,
                    };
                    Rc::new(match (table, Movement::new(op, &operand_shapes)) {
                        (Some(d), _) => d,
                        (None, Some(movement)) => {
                            moved(&movement, &node.children, &deps, shape, max_nnz)?
                        }
                        (None, None) => mixed(&node.children, &deps, n, max_nnz)?,
                    })
                }
            }
        };
        within(computed.total(), max_nnz)?;
        deps[i] = Some(computed);
        for &c in &node.children {
            let c = usize::from(c);
            readers[c] -= 1;
            if readers[c] == 0 {
                deps[c] = None;
            }
        }
    }
    let kept = keep
        .iter()
        .map(|&k| {
            deps[usize::from(k)]
                .clone()
                .unwrap_or_else(|| Rc::new(Deps::none(0)))
        })
        .collect();
    Ok(Found {
        columns,
        starts: offsets,
        kept,
    })
}

/// Refuses `total` entries past `max_nnz`.
pub(super) fn within(total: usize, max_nnz: usize) -> Result<(), String> {
    match total > max_nnz {
        true => Err(format!(
            "the Jacobian has more than {max_nnz} non-zeros (at least {total} in one value of the program): compute it densely (jacobian)"
        )),
        false => Ok(()),
    }
}

/// The flat position in an operand of `from` shape broadcast to `shape`
/// of the element at `index`.
fn broadcast_position(index: &[usize], from: &[usize]) -> usize {
    let lead = index.len() - from.len();
    from.iter().enumerate().fold(0, |at, (d, &extent)| {
        at * extent + if extent == 1 { 0 } else { index[lead + d] }
    })
}

/// Calls `f` with each row-major index of `shape` and its flat position,
/// until it returns false.
fn each_index(shape: &[usize], mut f: impl FnMut(&[usize], usize) -> bool) {
    let n: usize = shape.iter().product();
    let mut index = vec![0usize; shape.len()];
    for flat in 0..n {
        if !f(&index, flat) {
            return;
        }
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// An elementwise operation's: each element's operands' at its position
/// (an error past `max_nnz` entries, found as they are made).
fn elementwise(
    shape: &[usize],
    operands: &[(&Deps, &Shape)],
    max_nnz: usize,
) -> Result<Deps, String> {
    let mut out = Deps::with_elements(shape.iter().product());
    let mut positions = Vec::new();
    let whole: Vec<bool> = operands
        .iter()
        .map(|(_, from)| from[..] == *shape)
        .collect();
    each_index(shape, |index, flat| {
        positions.clear();
        for ((deps, from), &whole) in operands.iter().zip(&whole) {
            let at = match whole {
                true => flat,
                false => broadcast_position(index, from),
            };
            positions.extend(deps.get(at).iter().copied());
        }
        out.push(&mut positions);
        out.total() <= max_nnz
    });
    within(out.total(), max_nnz)?;
    Ok(out)
}

/// A reduction's over `axes` of an operand of `shape`: each result
/// element joins the elements it reduces.
fn reduce(deps: &Deps, shape: &[usize], axes: &[u8], n: usize) -> Deps {
    let mut joined: Vec<Vec<u32>> = vec![Vec::new(); n];
    let kept: Vec<usize> = (0..shape.len())
        .filter(|d| !axes.contains(&(*d as u8)))
        .collect();
    each_index(shape, |index, flat| {
        let at = kept.iter().fold(0, |at, &d| at * shape[d] + index[d]);
        joined[at].extend_from_slice(deps.get(flat));
        true
    });
    let mut out = Deps::with_elements(n);
    for mut positions in joined {
        out.push(&mut positions);
    }
    out
}

/// A 2-D (or matrix-vector) product's: element `(i, j)` joins row `i` of
/// `a` and column `j` of `b`. `None` for other ranks.
fn matmul(
    a: &Deps,
    sa: &[usize],
    b: &Deps,
    sb: &[usize],
    max_nnz: usize,
) -> Result<Option<Deps>, String> {
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
    let joined = |deps: &Deps, at: &dyn Fn(usize) -> usize| {
        let mut positions: Vec<u32> = (0..k)
            .flat_map(|l| deps.get(at(l)).iter().copied())
            .collect();
        positions.sort_unstable();
        positions.dedup();
        positions
    };
    let rows: Vec<Vec<u32>> = (0..m).map(|i| joined(a, &|l| i * k + l)).collect();
    let cols: Vec<Vec<u32>> = (0..n).map(|j| joined(b, &|l| l * n + j)).collect();
    let widest = |d: &[Vec<u32>]| d.iter().map(Vec::len).max().unwrap_or(0);
    within(m * n * (widest(&rows) + widest(&cols)), max_nnz)?;
    let mut out = Deps::with_elements(m * n);
    let mut positions = Vec::new();
    for row in &rows {
        for col in &cols {
            positions.clear();
            positions.extend_from_slice(row);
            positions.extend_from_slice(col);
            out.push(&mut positions);
        }
    }
    Ok(Some(out))
}

/// A data movement's: each element's source's (nothing for a padded
/// zero); an error past `max_nnz` entries (a broadcast repeats them).
fn moved(
    movement: &Movement,
    children: &[Id],
    deps: &[Option<Rc<Deps>>],
    shape: &[usize],
    max_nnz: usize,
) -> Result<Deps, String> {
    let mut out = Deps::with_elements(shape.iter().product());
    let mut positions = Vec::new();
    each_index(shape, |index, _| {
        positions.clear();
        if let Some((k, at)) = movement.source(index)
            && let Some(source) = &deps[usize::from(children[k as usize])]
        {
            positions.extend(source.get(at).iter().copied());
        }
        out.push(&mut positions);
        out.total() <= max_nnz
    });
    within(out.total(), max_nnz)?;
    Ok(out)
}

/// A table operation's, by what each element reads
/// (`ops::Definition::reads`); `None` where it does not say (every element
/// reads everything).
fn read_by(
    op: &crate::ir::ops::Op,
    operand_shapes: &[&[usize]],
    children: &[Id],
    deps: &[Option<Rc<Deps>>],
    shape: &[usize],
    max_nnz: usize,
) -> Result<Option<Deps>, String> {
    let n: usize = shape.iter().product();
    let mut out = Deps::with_elements(n);
    let mut reads = Vec::new();
    let mut positions = Vec::new();
    for e in 0..n {
        reads.clear();
        if !op.reads(operand_shapes, shape, e, &mut reads) {
            return Ok(None);
        }
        positions.clear();
        for &(k, at) in &reads {
            if op.differentiable(k)
                && let Some(source) = &deps[usize::from(children[k])]
            {
                positions.extend(source.get(at).iter().copied());
            }
        }
        out.push(&mut positions);
        within(out.total(), max_nnz)?;
    }
    Ok(Some(out))
}

/// An operation taken to mix all its operands' elements: every element
/// depends on all they depend on.
fn mixed(
    children: &[Id],
    deps: &[Option<Rc<Deps>>],
    n: usize,
    max_nnz: usize,
) -> Result<Deps, String> {
    let mut all: Vec<u32> = children
        .iter()
        .filter_map(|c| deps[usize::from(*c)].as_ref())
        .flat_map(|d| d.items.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    within(all.len().saturating_mul(n), max_nnz)?;
    let mut out = Deps::with_elements(n);
    for _ in 0..n {
        out.items.extend_from_slice(&all);
        out.offsets.push(out.items.len());
    }
    Ok(out)
}

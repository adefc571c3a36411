//! The tensor reverse sweep: cotangents of chosen nodes, appended to the
//! graph as ordinary nodes (so a gradient can be differentiated again).
//!
//! Elementwise operators take their local partials from the scalar table
//! (`ir::math::partials`); a contribution whose operand was broadcast is summed
//! back to the operand's shape. Structural operators (reductions, reshapes,
//! matrix products, slices, ...) have their adjoints here.

use crate::ir::graph::TensorGraph;
use crate::ir::math::functions::NO_FUNCTIONS;
use crate::ir::math::partials::{PartialBuilder, local_partials};
use crate::ir::op::{ReduceOp, TOp};
use egg::Id;
use smallvec::SmallVec;

/// Which nodes depend, through differentiable operations, on one of `from`.
/// (A slice of a loop's packed result depends on them only when a part
/// of the loop's state that does is in it: see `scan::Activity`.)
pub fn active_nodes(graph: &TensorGraph, from: &[Id], upto: usize) -> Vec<bool> {
    let mut activity = crate::ir::loops::Activity::new(upto);
    let start = from.iter().map(|&id| usize::from(id)).min().unwrap_or(upto);
    let mut sources = vec![false; upto];
    for &id in from {
        if let Some(flag) = sources.get_mut(usize::from(id)) {
            *flag = true;
        }
    }
    for (index, &source) in sources.iter().enumerate().skip(start) {
        match source {
            true => activity.flags[index] = true,
            false => activity.set(index, graph.node(Id::from(index))),
        }
    }
    activity.flags
}

/// Appends the vector-Jacobian product: for each `(output, cotangent)` pair
/// the output's cotangent (same shape), the sum over outputs of
/// cotangent · d output / d `wrt[i]`. A `wrt` node the outputs do not
/// depend on gets zeros of its shape.
pub fn vjp(graph: &mut TensorGraph, seeds: &[(Id, Id)], wrt: &[Id]) -> Vec<Id> {
    let upto = seeds
        .iter()
        .map(|&(output, _)| usize::from(output) + 1)
        .max()
        .unwrap_or(0);
    let active = active_nodes(graph, wrt, upto);
    graph.reserve(2 * upto);
    // Each node's adjoint accumulates as its consumers are visited (all
    // consumers come later in the program, so it is complete when the
    // sweep reaches the node).
    let mut adjoints: Vec<Option<Id>> = vec![None; upto];
    // Adjoints that are zero wherever a selection (`where`, `max`, `min`)
    // did not take their node: multiplying them by a partial must give
    // zero there even where the partial is infinite or NaN (the branch not
    // taken never poisons the gradient).
    let mut masked = vec![false; upto];
    let accumulate = |graph: &mut TensorGraph, slot: &mut Option<Id>, term: Id| {
        *slot = Some(match *slot {
            Some(sum) => graph.add2(sum, term),
            None => term,
        });
    };
    for &(output, cotangent) in seeds {
        accumulate(graph, &mut adjoints[usize::from(output)], cotangent);
    }
    for index in (0..upto).rev() {
        let Some(adjoint) = adjoints[index].filter(|_| active[index]) else {
            continue;
        };
        let id = Id::from(index);
        let children = graph.node(id).children.clone();
        let outer = graph.set_deriving(Some((id, true)));
        let pulled = match &graph.node(id).op {
            // A loop's sequences nothing differentiated flows from get no
            // cotangent: its reverse step leaves their products out; and
            // its state leaves that carry no derivative (a step size, a
            // time) are constants to its reverse.
            TOp::Scan(scan) => {
                let leaves = scan.leaves.len();
                let xs_end = leaves + scan.xs.len();
                let is_active = |c: &Id| active[usize::from(*c)];
                let idle: Vec<bool> = children[leaves..xs_end]
                    .iter()
                    .map(|c| !is_active(c))
                    .collect();
                let mut scan = if idle.iter().any(|i| *i) {
                    std::sync::Arc::new(scan.with_idle_xs(idle.clone()))
                } else {
                    scan.clone()
                };
                let initial: Vec<bool> = children[..leaves].iter().map(is_active).collect();
                let xs: Vec<bool> = idle.iter().map(|i| !i).collect();
                let captures: Vec<bool> = children[xs_end..]
                    .iter()
                    .zip(&scan.differentiable)
                    .map(|(c, d)| *d && is_active(c))
                    .collect();
                let carried = scan.active_leaves(&initial, &xs, &captures);
                if carried.iter().any(|a| !a) {
                    let constant = carried.iter().map(|a| !a).collect();
                    scan = std::sync::Arc::new(scan.with_constant(constant));
                }
                scan_pullback(graph, &scan, &children, adjoint)
            }
            TOp::Custom(rule) => {
                let rule = rule.clone();
                let wanted: Vec<bool> = children.iter().map(|&c| active[usize::from(c)]).collect();
                super::custom_sweep::pull(graph, &rule, id, &children, adjoint, &wanted)
            }
            _ => pullback(graph, id, adjoint, masked[index]),
        };
        let selects = super::forward::selects(&graph.node(id).op);
        for (&child, contribution) in children.iter().zip(pulled) {
            if let (true, Some(contribution)) = (active[usize::from(child)], contribution) {
                accumulate(graph, &mut adjoints[usize::from(child)], contribution);
                masked[usize::from(child)] |= selects || masked[index];
            }
        }
        graph.set_deriving(outer);
    }
    // A cotangent has its variable's number type.
    wrt.iter()
        .map(|&target| {
            let adjoint = match adjoints.get(usize::from(target)).copied().flatten() {
                Some(adjoint) => adjoint,
                None => {
                    let shape = graph.shape(target).clone();
                    graph.full(0.0, &shape)
                }
            };
            super::forward::strong_as(graph, adjoint, target)
        })
        .collect()
}

/// Which sweeps a request runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modes {
    /// A reverse sweep.
    pub reverse: bool,
    /// A forward sweep.
    pub forward: bool,
}

impl Modes {
    /// The sweeps of either.
    pub fn union(self, other: Modes) -> Modes {
        Modes {
            reverse: self.reverse || other.reverse,
            forward: self.forward || other.forward,
        }
    }
}

/// Why derivatives of `outputs` with respect to `wrt` cannot be built in
/// `modes`, if they cannot: a loop whose step holds a loop's reverse (a
/// gradient taken inside the step) is not differentiated again, and a
/// custom rule that could not be transposed has one mode only. Every
/// other loop and loop reverse has a forward, a batched forward and a
/// reverse rule, to any order.
pub fn refusal(graph: &TensorGraph, outputs: &[Id], wrt: &[Id], modes: Modes) -> Option<String> {
    let upto = outputs
        .iter()
        .map(|&o| usize::from(o) + 1)
        .max()
        .unwrap_or(0);
    let active = active_nodes(graph, wrt, upto);
    let custom = (0..upto).find_map(|i| match &graph.node(Id::from(i)).op {
        TOp::Custom(rule) if active[i] => {
            crate::ir::custom::missing_mode(rule, modes.reverse, modes.forward)
        }
        TOp::Scan(scan) | TOp::ScanVjp(scan) if active[i] => {
            scan.custom_refusal(modes.reverse, modes.forward)
        }
        _ => None,
    });
    if custom.is_some() {
        return custom;
    }
    let blocked = (0..upto).find(|&i| {
        active[i]
            && match &graph.node(Id::from(i)).op {
                TOp::Scan(scan) | TOp::ScanVjp(scan) => scan.holds_reverse(),
                _ => false,
            }
    });
    blocked.map(|_| {
        "a derivative of a loop whose step takes a gradient (grad inside a scan step) is not supported: differentiate the step's gradient outside the loop"
            .to_string()
    })
}

/// A loop's reverse: one `ScanVjp` node computes all cotangents, flat;
/// each operand's is a slice of it.
fn scan_pullback(
    graph: &mut TensorGraph,
    scan: &crate::ir::loops::Scan,
    children: &[Id],
    g: Id,
) -> SmallVec<[Option<Id>; 3]> {
    let mut operands: SmallVec<[Id; 8]> = SmallVec::from_slice(children);
    operands.push(g);
    // Leaves whose cotangent is known to be zero and that feed no other
    // leaf are left out of the reverse (an unused part of the state must
    // not turn `0 * inf` into NaN).
    let scan = if scan.leaves.len() > 1 || !scan.ys.is_empty() {
        let nonzero = nonzero_leaves(graph, g, scan);
        let live = scan.live_leaves(&nonzero);
        if live.iter().all(|l| *l) {
            scan.clone()
        } else {
            std::sync::Arc::new(scan.with_dead(live.iter().map(|l| !l).collect()))
        }
    } else {
        scan.clone()
    };
    let packed = graph.add_valid(TOp::ScanVjp(scan.clone()), &operands);
    let mut offset = 0;
    let mut pieces = scan.adjoint_shapes().into_iter().map(|shape| {
        let len: usize = shape.iter().product();
        let piece = graph.add_valid(
            TOp::Slice {
                axis: 0,
                start: offset,
                end: offset + len,
            },
            &[packed],
        );
        offset += len;
        graph.reshape(piece, &shape)
    });
    let mut pulled: SmallVec<[Option<Id>; 3]> = SmallVec::new();
    for k in 0..scan.leaves.len() {
        let piece = pieces.next();
        pulled.push(piece.filter(|_| !scan.constant[k]));
    }
    for _ in &scan.xs {
        pulled.push(pieces.next());
    }
    for &differentiable in &scan.differentiable {
        pulled.push(if differentiable { pieces.next() } else { None });
    }
    pulled
}

/// The reverse of a loop's reverse (a gradient of a gradient through a
/// loop). The node computes `J^T c` (`J` the loop's Jacobian, `c` its
/// cotangent operand) from the loop's operands `x`; given the cotangent
/// `w` of that, `c` receives `J w`, the tangent part of the tangent loop
/// run in the direction `w`, and `x` receives the gradient of
/// `<c, J w>`, the reverse of that tangent loop given `c` on its
/// tangent half and zero on its primal half.
fn scan_vjp_pullback(
    graph: &mut TensorGraph,
    scan: &crate::ir::loops::Scan,
    children: &[Id],
    w: Id,
) -> SmallVec<[Option<Id>; 3]> {
    let leaves = scan.leaves.len();
    let captures_from = leaves + scan.xs.len();
    let operand_count = children.len() - 1;
    let c = children[operand_count];
    // The direction `w`, split into the operands it is a cotangent of.
    let mut pieces = scan.adjoint_shapes().into_iter().scan(0, |offset, shape| {
        let len: usize = shape.iter().product();
        let start = *offset;
        *offset += len;
        Some((start, shape))
    });
    let mut direction: Vec<Option<Id>> = Vec::with_capacity(operand_count);
    for _ in 0..captures_from {
        direction.push(
            pieces
                .next()
                .map(|(start, shape)| piece(graph, w, start, &shape)),
        );
    }
    for &differentiable in &scan.differentiable {
        direction.push(if differentiable {
            pieces
                .next()
                .map(|(start, shape)| piece(graph, w, start, &shape))
        } else {
            None
        });
    }
    let marks: Vec<bool> = direction[leaves..].iter().map(Option::is_some).collect();
    let second = crate::ir::loops::Scan::new(super::loops::second_order(scan, &marks));
    let mut operands: Vec<Id> = children[..leaves].to_vec();
    operands.extend(direction[..leaves].iter().flatten());
    operands.extend(&children[leaves..captures_from]);
    operands.extend(direction[leaves..captures_from].iter().flatten());
    operands.extend(&children[captures_from..operand_count]);
    operands.extend(direction[captures_from..].iter().flatten());
    let forward = graph.add_valid(TOp::Scan(second.clone()), &operands);
    let to_c = scan.tangent_part(graph, forward);
    let zero = {
        let shape = graph.shape(c).clone();
        graph.full(0.0, &shape)
    };
    let cotangent = scan.interleave(graph, zero, c);
    operands.push(cotangent);
    let reverse = graph.add_valid(TOp::ScanVjp(second), &operands);
    let to_x = scan.primal_cotangents(graph, reverse, &marks);
    let mut pulled: SmallVec<[Option<Id>; 3]> = SmallVec::new();
    let mut offset = 0;
    let shapes = scan.adjoint_shapes();
    let mut shapes = shapes.iter();
    for k in 0..operand_count {
        let differentiable = k < captures_from || scan.differentiable[k - captures_from];
        if differentiable {
            let shape = shapes
                .next()
                .expect("one cotangent per differentiable operand");
            pulled.push(Some(piece(graph, to_x, offset, shape)));
            offset += shape.iter().product::<usize>();
        } else {
            pulled.push(None);
        }
    }
    pulled.push(Some(to_c));
    pulled
}

/// Elements `start..` of the vector `of`, as many as `shape` holds, in
/// that shape.
fn piece(graph: &mut TensorGraph, of: Id, start: usize, shape: &[usize]) -> Id {
    let len: usize = shape.iter().product();
    let part = graph.add_valid(
        TOp::Slice {
            axis: 0,
            start,
            end: start + len,
        },
        &[of],
    );
    graph.reshape(part, shape)
}

/// Which leaves of a packed loop state the cotangent `g` may be nonzero
/// on: it is read through pads (the adjoints of the slices that unpack the
/// state) and sums of them; anything else may be nonzero anywhere.
fn nonzero_leaves(graph: &TensorGraph, g: Id, scan: &crate::ir::loops::ScanSpec) -> Vec<bool> {
    let total: usize = scan
        .output_parts()
        .iter()
        .map(|s| s.iter().product::<usize>())
        .sum();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut stack = vec![g];
    while let Some(id) = stack.pop() {
        let node = graph.node(id);
        match &node.op {
            TOp::Pad {
                axis: 0,
                before,
                after,
            } if graph.shape(id).len() == 1 => {
                ranges.push((*before, total - after));
            }
            TOp::Map(crate::ir::math::language::Math::Add(_)) => {
                stack.extend(node.children.iter().copied());
            }
            _ if graph.constant(id) == Some(0.0) => {}
            TOp::Broadcast(_) if graph.constant(node.children[0]) == Some(0.0) => {}
            _ => ranges.push((0, total)),
        }
    }
    let mut offset = 0;
    scan.leaves
        .iter()
        .map(|shape| {
            let (start, end) = (offset, offset + shape.iter().product::<usize>());
            offset = end;
            ranges.iter().any(|&(a, b)| a < end && start < b)
        })
        .collect()
}

/// `g * partial`, but zero wherever `g` is zero (whatever the partial
/// there, infinite or NaN included).
pub(super) fn masked_product(graph: &mut TensorGraph, g: Id, partial: Id) -> Id {
    let zero = graph.num(0.0);
    let product = graph.mul(g, partial);
    let untaken = graph.add_valid(TOp::Compare(crate::ir::op::CmpOp::Eq), &[g, zero]);
    let shape = graph.shape(product).clone();
    let zeros = graph.full(0.0, &shape);
    let untaken = graph.expand_to(untaken, &shape);
    graph.add_valid(TOp::Where, &[untaken, zeros, product])
}

/// The cotangent each operand of node `id` receives from the node's
/// cotangent `g` (`None`: no dependence); `masked`: `g` is zero where a
/// selection did not take the node, and stays zero through partials.
fn pullback(graph: &mut TensorGraph, id: Id, g: Id, masked: bool) -> SmallVec<[Option<Id>; 3]> {
    let node = graph.node(id).clone();
    let children = node.children.clone();
    let shape_of = |graph: &TensorGraph, id: Id| graph.shape(id).clone();
    let out_shape = shape_of(graph, id);
    match &node.op {
        TOp::Input { .. } | TOp::Scalar(_) | TOp::Placeholder { .. } => SmallVec::new(),
        TOp::Custom(rule) => {
            let wanted = vec![true; children.len()];
            super::custom_sweep::pull(graph, rule, id, &children, g, &wanted)
        }
        TOp::Compare(_) | TOp::Round(_) | TOp::ArgExtreme { .. } | TOp::StopGradient => {
            children.iter().map(|_| None).collect()
        }
        TOp::Scan(scan) => scan_pullback(graph, scan, &children, g),
        // The cotangent of a conversion is converted back.
        TOp::Cast(_) => {
            let dtype = graph.dtype(children[0]);
            SmallVec::from_slice(&[Some(graph.cast(g, dtype))])
        }
        TOp::Op(op) => op.vjp(graph, id, g),
        TOp::ScanVjp(scan) => scan_vjp_pullback(graph, scan, &children, g),
        TOp::Map(_) => {
            let math = node.math().expect("a Map node has a scalar operator");
            let partials = local_partials(&math, id, graph, &NO_FUNCTIONS);
            let selection = super::forward::selects(&node.op);
            children
                .iter()
                .zip(partials)
                .map(|(&child, partial)| {
                    let partial = partial?;
                    // A finite constant partial keeps a zero cotangent zero
                    // by itself (a sum, a difference, a fixed coefficient).
                    let finite = graph.constant(partial).is_some_and(f64::is_finite);
                    let term = if finite {
                        graph.mul(g, partial)
                    } else if selection {
                        // An operand the selection did not take gets 0,
                        // even from an infinite cotangent (`sqrt` of a
                        // clamped value at 0).
                        masked_product(graph, partial, g)
                    } else if masked {
                        masked_product(graph, g, partial)
                    } else {
                        graph.mul(g, partial)
                    };
                    let term = graph.expand_to(term, &out_shape);
                    let target = shape_of(graph, child);
                    Some(graph.sum_to(term, &target))
                })
                .collect()
        }
        TOp::Where => {
            let zero = graph.num(0.0);
            let (cond, a, b) = (children[0], children[1], children[2]);
            let to_a = graph.add_valid(TOp::Where, &[cond, g, zero]);
            let to_b = graph.add_valid(TOp::Where, &[cond, zero, g]);
            let (shape_a, shape_b) = (shape_of(graph, a), shape_of(graph, b));
            let to_a = graph.sum_to(to_a, &shape_a);
            let to_b = graph.sum_to(to_b, &shape_b);
            SmallVec::from_slice(&[None, Some(to_a), Some(to_b)])
        }
        TOp::Reduce { op, axes, keepdims } => {
            let x = children[0];
            let x_shape = shape_of(graph, x);
            let kept: SmallVec<[usize; 4]> = x_shape
                .iter()
                .enumerate()
                .map(|(i, &d)| if axes.contains(&(i as u8)) { 1 } else { d })
                .collect();
            let spread = |graph: &mut TensorGraph, v: Id| {
                let v = if *keepdims {
                    v
                } else {
                    graph.reshape(v, &kept)
                };
                graph.broadcast(v, &x_shape)
            };
            let g_x = spread(graph, g);
            let result = match op {
                ReduceOp::Sum => g_x,
                ReduceOp::Prod => {
                    let others = graph.product_of_others(x, axes);
                    graph.mul(g_x, others)
                }
                ReduceOp::Max | ReduceOp::Min => {
                    // Ties share the cotangent evenly.
                    let this = spread(graph, id);
                    let hit = graph.add_valid(TOp::Compare(crate::ir::op::CmpOp::Eq), &[x, this]);
                    let count = graph.sum_axes(hit, axes, true);
                    let count = graph.broadcast(count, &x_shape);
                    let share = graph.div(hit, count);
                    graph.mul(g_x, share)
                }
            };
            SmallVec::from_slice(&[Some(result)])
        }
        TOp::Broadcast(_) => {
            let target = shape_of(graph, children[0]);
            SmallVec::from_slice(&[Some(graph.sum_to(g, &target))])
        }
        TOp::Tag(_) => SmallVec::from_slice(&[Some(g)]),
        TOp::Linearized => {
            // Each argument gets g * its partial, summed back to its shape
            // where it was broadcast; the value and the partials get none.
            let n = TOp::linearized_arity(children.len());
            let mut pulled: SmallVec<[Option<Id>; 3]> = SmallVec::new();
            pulled.push(None);
            for k in 0..n {
                let (x, partial) = (children[1 + k], children[1 + n + k]);
                let term = graph.mul(g, partial);
                let term = graph.expand_to(term, &out_shape);
                let target = shape_of(graph, x);
                pulled.push(Some(graph.sum_to(term, &target)));
            }
            pulled.extend((0..n).map(|_| None));
            pulled
        }
        TOp::Reshape(_) => {
            let target = shape_of(graph, children[0]);
            SmallVec::from_slice(&[Some(graph.reshape(g, &target))])
        }
        TOp::Transpose(perm) => {
            let mut inverse: SmallVec<[u8; 4]> = SmallVec::from_elem(0, perm.len());
            for (i, &p) in perm.iter().enumerate() {
                inverse[usize::from(p)] = i as u8;
            }
            SmallVec::from_slice(&[Some(graph.add_valid(TOp::Transpose(inverse), &[g]))])
        }
        TOp::MatMul => {
            let (a, b) = (children[0], children[1]);
            let (sa, sb) = (shape_of(graph, a), shape_of(graph, b));
            let (da, db) = matmul_pullback(graph, a, b, &sa, &sb, g);
            SmallVec::from_slice(&[Some(da), Some(db)])
        }
        TOp::Slice { axis, start, end } => {
            let length = shape_of(graph, children[0])[usize::from(*axis)];
            let padded = graph.add_valid(
                TOp::Pad {
                    axis: *axis,
                    before: *start,
                    after: length - end,
                },
                &[g],
            );
            SmallVec::from_slice(&[Some(padded)])
        }
        TOp::Pad { axis, before, .. } => {
            let length = shape_of(graph, children[0])[usize::from(*axis)];
            let sliced = graph.add_valid(
                TOp::Slice {
                    axis: *axis,
                    start: *before,
                    end: before + length,
                },
                &[g],
            );
            SmallVec::from_slice(&[Some(sliced)])
        }
        TOp::Concat(axis) => {
            let mut offset = 0;
            children
                .iter()
                .map(|&child| {
                    let length = graph.shape(child)[usize::from(*axis)];
                    let part = graph.add_valid(
                        TOp::Slice {
                            axis: *axis,
                            start: offset,
                            end: offset + length,
                        },
                        &[g],
                    );
                    offset += length;
                    Some(part)
                })
                .collect()
        }
        TOp::Roll { axis, shift } => {
            let length = out_shape[usize::from(*axis)];
            let back = (length - shift) % length.max(1);
            let roll = TOp::Roll {
                axis: *axis,
                shift: back,
            };
            // A cotangent scaled by a number is rolled before it is scaled:
            // the roll then reads the unscaled cotangent in place and the
            // scaling fuses with what reads the roll (a stencil's reverse
            // step stores no scaled copy to roll).
            let node = graph.node(g);
            let scaled = match (&node.op, &node.children[..]) {
                (TOp::Map(crate::ir::math::language::Math::Mul(_)), &[p, q]) => {
                    [(p, q), (q, p)].into_iter().find(|&(factor, x)| {
                        graph.shape(factor).is_empty() && graph.shape(x) == graph.shape(g)
                    })
                }
                _ => None,
            };
            let rolled = match scaled {
                Some((factor, x)) => {
                    let rolled = graph.add_valid(roll, &[x]);
                    graph.mul(factor, rolled)
                }
                None => graph.add_valid(roll, &[g]),
            };
            SmallVec::from_slice(&[Some(rolled)])
        }
    }
}

/// Adjoints of `a @ b` (ranks 1 and 2) for the product's cotangent `g`.
fn matmul_pullback(
    graph: &mut TensorGraph,
    a: Id,
    b: Id,
    sa: &[usize],
    sb: &[usize],
    g: Id,
) -> (Id, Id) {
    let t = |graph: &mut TensorGraph, x: Id| {
        graph.add_valid(TOp::Transpose(SmallVec::from_slice(&[1, 0])), &[x])
    };
    let mm = |graph: &mut TensorGraph, x: Id, y: Id| graph.add_valid(TOp::MatMul, &[x, y]);
    match (sa.len(), sb.len()) {
        (ra, rb) if ra > 2 || rb > 2 => {
            // Stacks of matrices: transpose the last two axes, and sum
            // each adjoint over the batch axes its operand was broadcast
            // along.
            let swap = |graph: &mut TensorGraph, x: Id| {
                let rank = graph.shape(x).len() as u8;
                let perm: SmallVec<[u8; 4]> = (0..rank - 2).chain([rank - 1, rank - 2]).collect();
                graph.add_valid(TOp::Transpose(perm), &[x])
            };
            let bt = swap(graph, b);
            let da = mm(graph, g, bt);
            if rb == 2 {
                // One matrix shared by the stack: its adjoint is one
                // product over the stacked rows (aᵀ g with the batch
                // folded into the contracted axis), not a stack of
                // products summed.
                let (k, n) = (sb[0], sb[1]);
                let rows = sa.iter().product::<usize>() / k.max(1);
                let stacked = graph.reshape(a, &[rows, k]);
                let cotangents = graph.reshape(g, &[rows, n]);
                let at = t(graph, stacked);
                return (graph.sum_to(da, sa), mm(graph, at, cotangents));
            }
            let at = swap(graph, a);
            let db = mm(graph, at, g);
            (graph.sum_to(da, sa), graph.sum_to(db, sb))
        }
        (2, 2) => {
            let bt = t(graph, b);
            let at = t(graph, a);
            (mm(graph, g, bt), mm(graph, at, g))
        }
        (2, 1) => {
            // out[m] = A[m,k] x[k]: dA = g ⊗ x, dx = Aᵀ g = g A.
            let column = graph.reshape(g, &[sa[0], 1]);
            let row = graph.reshape(b, &[1, sb[0]]);
            (mm(graph, column, row), mm(graph, g, a))
        }
        (1, 2) => {
            // out[n] = x[k] B[k,n]: dx = B g, dB = x ⊗ g.
            let column = graph.reshape(a, &[sa[0], 1]);
            let row = graph.reshape(g, &[1, sb[1]]);
            (mm(graph, b, g), mm(graph, column, row))
        }
        _ => {
            // The dot product of two vectors: g is a scalar.
            (graph.mul(g, b), graph.mul(g, a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ir::math::language::Math;

    /// The cotangent of `roll(x)` when the incoming cotangent is `s * c`
    /// (`s` a number) is `s * roll(c)`: the roll reads `c` in place and the
    /// scaling fuses with its reader, so no scaled copy is stored to roll.
    #[test]
    fn a_scaled_cotangent_is_rolled_before_it_is_scaled() {
        let mut graph = TensorGraph::new();
        let x = graph.input(0, &[5], DType::F64);
        let c = graph.input(1, &[5], DType::F64);
        let s = graph.input(2, &[], DType::F64);
        let rolled = graph.add_valid(TOp::Roll { axis: 0, shift: 1 }, &[x]);
        let g = graph.mul(s, c);
        let dx = vjp(&mut graph, &[(rolled, g)], &[x])[0];
        let node = graph.node(dx).clone();
        assert!(matches!(node.op, TOp::Map(Math::Mul(_))), "{:?}", node.op);
        let back = node.children[1];
        assert_eq!(node.children[0], s);
        assert_eq!(graph.node(back).op, TOp::Roll { axis: 0, shift: 4 });
        assert_eq!(graph.node(back).children[..], [c]);
        // An array-valued factor is not moved: the roll takes the product.
        let w = graph.input(3, &[5], DType::F64);
        let g = graph.mul(w, c);
        let dx = vjp(&mut graph, &[(rolled, g)], &[x])[0];
        assert_eq!(graph.node(dx).op, TOp::Roll { axis: 0, shift: 4 });
        assert_eq!(graph.node(dx).children[..], [g]);
    }
}

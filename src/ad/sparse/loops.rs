//! Sparsity patterns through loops: a loop (`TOp::Scan`) applies its
//! step's dependencies step after step; a loop's reverse (`TOp::ScanVjp`,
//! met in the gradient program a Hessian's pattern is read from) applies
//! its reverse step's dependencies from the last step back to the first,
//! each step reading the forward state of that step.
//!
//! A counted loop stops early where its state's dependencies stop
//! changing and nothing runs over sequences or stacks outputs. A
//! `while-loop`, whose number of steps is not known, gathers its state's
//! dependencies over any number of steps (until they stop growing), and
//! its reverse gathers the cotangents' likewise, each step reading the
//! gathered state.

use super::detect::{Deps, Found, dependencies, within};
use crate::ir::loops::{Body, ScanSpec};
use egg::Id;
use std::rc::Rc;

/// A step's dependencies: for each root, each element's columns among the
/// step's inputs (`inputs[k]`'s elements starting at `starts[k]`).
struct Step {
    inputs: Vec<u32>,
    found: Found,
}

impl Step {
    /// The step `body` over its inputs `0..count` but the step index.
    fn of(body: &Body, count: usize, index: usize, max_nnz: usize) -> Result<Step, String> {
        let inputs: Vec<u32> = (0..count as u32).filter(|&i| i as usize != index).collect();
        let found = dependencies(&body.nodes, &body.shapes, &inputs, &body.roots, max_nnz)?;
        Ok(Step { inputs, found })
    }

    /// Each root's dependencies, its columns resolved by `source(input,
    /// element, into)`; `also(root, element, into)` adds more (a gathered
    /// state's own).
    fn apply(
        &self,
        mut source: impl FnMut(usize, usize, &mut Vec<u32>),
        mut also: impl FnMut(usize, usize, &mut Vec<u32>),
        max_nnz: usize,
    ) -> Result<Vec<Deps>, String> {
        let starts = &self.found.starts;
        let mut positions = Vec::new();
        let mut out = Vec::with_capacity(self.found.kept.len());
        for (k, root) in self.found.kept.iter().enumerate() {
            let elements = root.offsets.len() - 1;
            let mut made = Deps::with_elements(elements);
            for e in 0..elements {
                positions.clear();
                for &col in root.get(e) {
                    let col = col as usize;
                    let which = starts.partition_point(|&s| s <= col) - 1;
                    source(
                        self.inputs[which] as usize,
                        col - starts[which],
                        &mut positions,
                    );
                }
                also(k, e, &mut positions);
                made.push(&mut positions);
            }
            within(made.total(), max_nnz)?;
            out.push(made);
        }
        Ok(out)
    }
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn same(a: &[Deps], b: &[Deps]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.offsets == y.offsets && x.items == y.items)
}

/// Deps made of `parts`' elements one after another.
fn packed<'a>(parts: impl IntoIterator<Item = &'a Deps>, max_nnz: usize) -> Result<Deps, String> {
    let mut out = Deps::with_elements(0);
    let mut positions = Vec::new();
    for part in parts {
        for e in 0..part.offsets.len() - 1 {
            positions.clear();
            positions.extend_from_slice(part.get(e));
            out.push(&mut positions);
        }
    }
    within(out.total(), max_nnz)?;
    Ok(out)
}

/// The loop's operands' dependencies.
struct Operands<'a> {
    children: &'a [Id],
    deps: &'a [Option<Rc<Deps>>],
    none: Deps,
}

impl<'a> Operands<'a> {
    /// The operands `children` of a loop node, with their dependencies.
    fn new(children: &'a [Id], deps: &'a [Option<Rc<Deps>>]) -> Operands<'a> {
        Operands {
            children,
            deps,
            none: Deps::none(0),
        }
    }
}

impl Operands<'_> {
    fn get(&self, k: usize) -> &Deps {
        self.deps[usize::from(self.children[k])]
            .as_deref()
            .unwrap_or(&self.none)
    }

    /// The dependencies of element `e` of step input `input` (a state
    /// leaf, a sequence's row `t`, a capture; not the index) given the
    /// state's, `state`.
    fn step_input<'a>(
        &'a self,
        spec: &ScanSpec,
        state: &'a [Deps],
        t: usize,
        input: usize,
        e: usize,
    ) -> &'a [u32] {
        let (n_leaves, n_xs) = (spec.leaves.len(), spec.xs.len());
        if input < n_leaves {
            state[input].get(e)
        } else if input <= n_leaves + n_xs {
            let k = input - n_leaves - 1;
            self.get(n_leaves + k).get(t * numel(&spec.xs[k]) + e)
        } else {
            self.get(input - 1).get(e)
        }
    }
}

/// The states' dependencies before each step (`0..n`, and after the last
/// as the last entry), or for a `while-loop` one gathered over any number
/// of steps; with each step's stacked outputs (counted loops).
fn forward(
    spec: &ScanSpec,
    operands: &Operands<'_>,
    keep_states: bool,
    max_nnz: usize,
) -> Result<(Vec<Vec<Deps>>, Vec<Deps>), String> {
    let (n_leaves, n_xs) = (spec.leaves.len(), spec.xs.len());
    let step = Step::of(&spec.body, spec.body_inputs(), n_leaves, max_nnz)?;
    let gathering = spec.condition.is_some();
    let mut state: Vec<Deps> = (0..n_leaves).map(|k| operands.get(k).clone()).collect();
    let mut states = Vec::new();
    // Grown as the steps run (no room reserved for `n` steps up front).
    let mut stacked: Vec<Deps> = spec.ys.iter().map(|_| Deps::with_elements(0)).collect();
    let mut positions = Vec::new();
    let mut t = 0usize;
    while gathering || t < spec.n {
        if keep_states && !gathering {
            states.push(state.clone());
        }
        let current = &state;
        let made = step.apply(
            |input, e, into| {
                into.extend_from_slice(operands.step_input(spec, current, t, input, e));
            },
            |k, e, into| {
                if gathering && k < n_leaves {
                    into.extend_from_slice(current[k].get(e));
                }
            },
            max_nnz,
        )?;
        let mut made = made.into_iter();
        let next: Vec<Deps> = made.by_ref().take(n_leaves).collect();
        for (into, output) in stacked.iter_mut().zip(made) {
            for e in 0..output.offsets.len() - 1 {
                positions.clear();
                positions.extend_from_slice(output.get(e));
                into.push(&mut positions);
            }
            within(into.total(), max_nnz)?;
        }
        t += 1;
        let settled = same(&next, &state);
        state = next;
        if settled && (gathering || (spec.ys.is_empty() && n_xs == 0)) {
            break;
        }
    }
    // A counted loop that settled early: the remaining steps see the
    // same state.
    states.push(state);
    Ok((states, stacked))
}

/// A loop's (`TOp::Scan`) result's dependencies.
pub(super) fn looped(
    spec: &ScanSpec,
    children: &[Id],
    deps: &[Option<Rc<Deps>>],
    max_nnz: usize,
) -> Result<Deps, String> {
    let operands = Operands::new(children, deps);
    let (mut states, stacked) = forward(spec, &operands, false, max_nnz)?;
    let last = states.pop().unwrap_or_default();
    if let ([one], []) = (&last[..], &spec.ys[..]) {
        return Ok(one.clone());
    }
    packed(last.iter().chain(&stacked), max_nnz)
}

/// A loop's reverse's (`TOp::ScanVjp`: operands the loop's, then the
/// cotangent of its result) result's dependencies: the cotangents of the
/// initial state's leaves, of the sequences (stacked) and of the
/// differentiable captures.
pub(super) fn looped_reverse(
    spec: &ScanSpec,
    children: &[Id],
    deps: &[Option<Rc<Deps>>],
    max_nnz: usize,
) -> Result<Deps, String> {
    let operands = Operands::new(children, deps);
    let (n_leaves, n_xs, n_ys) = (spec.leaves.len(), spec.xs.len(), spec.ys.len());
    let g = operands.get(children.len() - 1);
    let gathering = spec.condition.is_some();
    let (states, _) = forward(spec, &operands, true, max_nnz)?;
    // The cotangent's parts: the final state's leaves, then each output
    // stacked over the steps.
    let mut part_starts = Vec::with_capacity(n_leaves + n_ys);
    let mut at = 0usize;
    for shape in spec.leaves.iter().chain(&spec.ys) {
        part_starts.push(at);
        at += numel(shape);
    }
    let ys_starts: Vec<usize> = (0..n_ys)
        .map(|m| {
            let before: usize = spec.leaves.iter().map(|s| numel(s)).sum();
            before
                + spec.ys[..m]
                    .iter()
                    .map(|y| spec.n * numel(y))
                    .sum::<usize>()
        })
        .collect();
    let mut cotangent: Vec<Deps> = (0..n_leaves)
        .map(|k| {
            let mut d = Deps::with_elements(numel(&spec.leaves[k]));
            let mut positions = Vec::new();
            for e in 0..numel(&spec.leaves[k]) {
                positions.clear();
                positions.extend_from_slice(g.get(part_starts[k] + e));
                d.push(&mut positions);
            }
            d
        })
        .collect();
    let body_inputs = spec.body_inputs();
    let reverse = Step::of(
        &crate::ad::loops::adjoint(spec),
        body_inputs + n_leaves + n_ys,
        n_leaves,
        max_nnz,
    )?;
    let row_len: Vec<usize> = spec.xs.iter().map(|x| numel(x)).collect();
    let y_len: Vec<usize> = spec.ys.iter().map(|y| numel(y)).collect();
    // A while-loop has no sequences (its `n` is a step limit, perhaps
    // unbounded): rows are made only for counted loops over sequences.
    let mut xs_rows: Vec<Vec<Option<Deps>>> = (0..n_xs).map(|_| vec![None; spec.n]).collect();
    let mut captured: Vec<Vec<Vec<u32>>> = Vec::new();
    let steps: Box<dyn Iterator<Item = usize>> = if gathering {
        Box::new(std::iter::repeat(0))
    } else {
        Box::new((0..spec.n).rev())
    };
    for t in steps {
        let state = if gathering {
            &states[0]
        } else {
            &states[t.min(states.len() - 1)]
        };
        let current = &cotangent;
        let made = reverse.apply(
            |input, e, into| {
                let from = if input < body_inputs {
                    operands.step_input(spec, state, t, input, e)
                } else if input < body_inputs + n_leaves {
                    current[input - body_inputs].get(e)
                } else {
                    let m = input - body_inputs - n_leaves;
                    g.get(ys_starts[m] + t * y_len[m] + e)
                };
                into.extend_from_slice(from);
            },
            |k, e, into| {
                if gathering && k < n_leaves {
                    into.extend_from_slice(current[k].get(e));
                }
            },
            max_nnz,
        )?;
        let mut made = made.into_iter();
        let next: Vec<Deps> = made.by_ref().take(n_leaves).collect();
        for (k, row) in made.by_ref().take(n_xs).enumerate() {
            xs_rows[k][t] = Some(row);
        }
        for (c, part) in made.enumerate() {
            if captured.len() <= c {
                captured.push(vec![Vec::new(); part.offsets.len() - 1]);
            }
            for (e, into) in captured[c].iter_mut().enumerate() {
                into.extend_from_slice(part.get(e));
                into.sort_unstable();
                into.dedup();
            }
        }
        let settled = same(&next, &cotangent);
        cotangent = next;
        if gathering && settled {
            break;
        }
    }
    // The differentiable captures' cotangents, summed over the steps.
    let captures: Vec<Deps> = captured
        .into_iter()
        .map(|mut elements| {
            let mut d = Deps::with_elements(elements.len());
            for positions in &mut elements {
                d.push(positions);
            }
            d
        })
        .collect();
    let rows: Vec<Deps> = xs_rows
        .into_iter()
        .zip(&row_len)
        .map(|(rows, &len)| {
            let filled: Vec<Deps> = rows
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Deps::none(len)))
                .collect();
            packed(filled.iter(), max_nnz)
        })
        .collect::<Result<_, _>>()?;
    packed(cotangent.iter().chain(&rows).chain(&captures), max_nnz)
}

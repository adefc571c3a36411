//! What a differentiation request asks of a traced program: the function's
//! value, a gradient, a vector-Jacobian or Jacobian-vector product, a
//! Hessian(-vector) product, a dense Jacobian, batches of directional
//! derivatives, or Taylor coefficients; which sweeps each runs and which arguments it
//! differentiates; and the derivative nodes it appends to a recorded
//! program (`derivative_roots`, over any [`Recording`]).

use super::forward::jvp;
use super::reverse::{Modes, refusal, vjp};
use super::taylor::{derivative_scales, taylor};
use crate::ir::math::partials::PartialBuilder;
use crate::ir::shape::show;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use smallvec::SmallVec;

/// What to compute from a traced function.
#[derive(Clone, Debug)]
pub enum Request {
    /// The function's results (`jit`).
    Value,
    /// Gradients of a scalar result with respect to argument positions.
    Grad {
        /// Argument positions.
        wrt: Vec<usize>,
        /// Whether the result itself is wanted too (`value-and-grad`); a
        /// tape for the gradient alone need not compute it.
        value: bool,
    },
    /// A vector-Jacobian product with a cotangent of the result's shape
    /// (given as the seed), for all arguments.
    Vjp,
    /// A Jacobian-vector product with tangents for every argument.
    Jvp,
    /// A Hessian-vector product for the first argument.
    Hvp,
    /// The dense Hessian for the first argument: forward over reverse with
    /// all unit directions as one batch.
    Hessian,
    /// The dense Jacobian for the first argument by forward mode, all unit
    /// directions as one batch.
    JacobianForward,
    /// Jacobian-vector products for the first argument along a batch of
    /// directions (the seed, of shape `[p] ++ shape(x)`), in one forward
    /// pass: `[p] ++ shape(result)` (a sparse Jacobian's compressed
    /// columns).
    JvpBatch,
    /// Hessian-vector products for the first argument along a batch of
    /// directions (`[p] ++ shape(x)`), forward over one reverse sweep:
    /// `[p] ++ shape(x)` (a sparse Hessian's compressed columns).
    HvpBatch,
    /// Taylor mode (`jet`): for every argument leaf a series of up to
    /// `order` terms (the seed; the same number for every leaf, the rest
    /// zero), the derivatives `x^(k)(0)` of a curve `x(t)` through it
    /// (JAX's convention); the results are the derivatives of each output
    /// along the curve, `order` of them per output.
    Jet {
        /// The highest derivative (at least 1).
        order: usize,
    },
}

impl Request {
    /// Whether the function's own result is computed (everything but a
    /// bare gradient).
    pub fn wants_value(&self) -> bool {
        !matches!(self, Request::Grad { value: false, .. })
    }

    /// The sweeps the request runs.
    pub fn modes(&self) -> Modes {
        match self {
            Request::Value => Modes::default(),
            Request::Grad { .. } | Request::Vjp => Modes {
                reverse: true,
                forward: false,
            },
            Request::Jvp | Request::JacobianForward | Request::JvpBatch | Request::Jet { .. } => {
                Modes {
                    reverse: false,
                    forward: true,
                }
            }
            Request::Hvp | Request::Hessian | Request::HvpBatch => Modes {
                reverse: true,
                forward: true,
            },
        }
    }

    /// The argument positions whose leaves are differentiated.
    pub fn differentiated(&self, arity: usize) -> Vec<usize> {
        match self {
            Request::Value => Vec::new(),
            Request::Grad { wrt, .. } => wrt.clone(),
            Request::Vjp | Request::Jvp | Request::Jet { .. } => (0..arity).collect(),
            Request::Hvp
            | Request::Hessian
            | Request::JacobianForward
            | Request::JvpBatch
            | Request::HvpBatch => {
                vec![0]
            }
        }
    }
}

/// Why a request cannot be made of a program, by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// Shapes that do not fit the request.
    Shape(String),
    /// A value of the wrong kind.
    Type(String),
    /// A value out of range (a derivative of too many axes, a pattern too
    /// dense).
    Range(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Shape(m) | RequestError::Type(m) | RequestError::Range(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for RequestError {}

/// Which of a request's seeds a part belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// The cotangent of a `Vjp`, one part per output.
    Cotangent,
    /// The tangents of a `Jvp`, one part per argument leaf.
    Tangents,
    /// The vector of an `Hvp`, one part per leaf of the first argument.
    Vector,
    /// The series of a `Jet`: for each argument leaf in turn, its `order`
    /// terms.
    Series,
}

/// The program a request is recorded into, and where its seeds come from:
/// the Lisp layer implements it over a trace and Lisp values; a Rust
/// program over its own graph and nodes.
pub trait Recording {
    /// The recorder's errors, which carry the request's own too.
    type Error: From<RequestError>;
    /// The program.
    fn graph(&mut self) -> &mut TensorGraph;
    /// How many parts the seed has.
    fn seed_parts(&mut self, seed: Seed) -> Result<usize, Self::Error>;
    /// Part `k` of the seed as a node of the program.
    fn seed_node(&mut self, seed: Seed, k: usize) -> Result<Id, Self::Error>;
    /// A batch of directions (`JvpBatch`, `HvpBatch`) as one node.
    fn directions(&mut self) -> Result<Id, Self::Error>;
    /// The identity as a batch of tangents for `x` (`[n] ++ shape(x)`,
    /// direction k the k-th unit vector) as a new input, with n.
    fn identity(&mut self, x: Id) -> Result<(usize, Id), Self::Error>;
}

/// The arguments of the function a request differentiates: the nodes of
/// all argument leaves, and the leaves of each argument position.
#[derive(Clone, Copy)]
pub struct Arguments<'a> {
    /// The argument leaves' nodes.
    pub leaves: &'a [Id],
    /// For each argument position, the indices of its leaves.
    pub ranges: &'a [Vec<usize>],
}

/// What a group of derivative roots is shaped like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Group {
    /// The argument at this position.
    Argument(usize),
    /// Every argument, each a group of its own.
    Arguments,
    /// The function's outputs (`count` of them: one, or a list).
    Outputs(usize),
    /// One tensor.
    One,
    /// The series of each of `outputs` outputs (`order` terms each, output
    /// by output).
    Series {
        /// How many outputs.
        outputs: usize,
        /// Terms per output.
        order: usize,
    },
}

/// The most axes a tensor may have (a derivative's result included).
pub use crate::ir::shape::MAX_RANK;

/// Refuses a derivative of a `result`-shaped value by an `x`-shaped one
/// whose result would have more than [`MAX_RANK`] axes.
pub fn check_derivative_rank(
    form: &str,
    result: &[usize],
    x: &[usize],
) -> Result<(), RequestError> {
    let rank = result.len() + x.len();
    if rank > MAX_RANK {
        return Err(RequestError::Range(format!(
            "{form}: the derivative of a {}-axis result by a {}-axis argument would have {rank} axes; a tensor may have at most {MAX_RANK} axes",
            result.len(),
            x.len(),
        )));
    }
    Ok(())
}

/// Appends the derivative nodes of `request` to the recorded program whose
/// results are `outputs`; returns all roots (the results first, when the
/// request wants them) and how each group of derivatives is shaped.
pub fn derivative_roots<R: Recording>(
    rec: &mut R,
    request: &Request,
    outputs: &[Id],
    arguments: Arguments<'_>,
) -> Result<(Vec<Id>, Vec<Group>), R::Error> {
    let Arguments { leaves, ranges } = arguments;
    let mut roots: Vec<Id> = if request.wants_value() {
        outputs.to_vec()
    } else {
        Vec::new()
    };
    let mut groups = Vec::new();
    let single_output = |graph: &TensorGraph| -> Result<Id, RequestError> {
        match outputs {
            [single] if graph.shape(*single).is_empty() => Ok(*single),
            [single] => Err(RequestError::Shape(format!(
                "grad needs a function returning a number, this one returned shape {} (use jacobian or vjp)",
                show(graph.shape(*single))
            ))),
            _ => Err(RequestError::Shape(
                "grad needs a function returning a number, this one returned a list (use jacobian or vjp)".into(),
            )),
        }
    };
    let differentiated: Vec<Id> = request
        .differentiated(ranges.len())
        .iter()
        .flat_map(|&position| ranges[position].iter().map(|&i| leaves[i]))
        .collect();
    if let Some(message) = refusal(rec.graph(), outputs, &differentiated, request.modes()) {
        return Err(RequestError::Type(message).into());
    }
    match request {
        Request::Value => {}
        Request::Grad { wrt, .. } => {
            let output = single_output(rec.graph())?;
            let graph = rec.graph();
            let one = graph.num(1.0);
            // One reverse sweep for all the arguments (each loop in it
            // then computes the cotangents of all of them at once).
            let targets: Vec<Id> = wrt
                .iter()
                .flat_map(|&position| ranges[position].iter().map(|&i| leaves[i]))
                .collect();
            roots.extend(vjp(graph, &[(output, one)], &targets));
            groups.extend(wrt.iter().map(|&position| Group::Argument(position)));
        }
        Request::Vjp => {
            let parts = rec.seed_parts(Seed::Cotangent)?;
            if parts != outputs.len() {
                return Err(RequestError::Shape(format!(
                    "the cotangent has {parts} parts, the function returned {}",
                    outputs.len()
                ))
                .into());
            }
            let mut pairs = Vec::new();
            for (k, &output) in outputs.iter().enumerate() {
                let id = rec.seed_node(Seed::Cotangent, k)?;
                let graph = rec.graph();
                if graph.shape(id) != graph.shape(output) {
                    return Err(RequestError::Shape(format!(
                        "the cotangent has shape {}, the result has shape {}",
                        show(graph.shape(id)),
                        show(graph.shape(output))
                    ))
                    .into());
                }
                pairs.push((output, id));
            }
            let targets: Vec<Id> = ranges.iter().flatten().map(|&i| leaves[i]).collect();
            roots.extend(vjp(rec.graph(), &pairs, &targets));
            groups.push(Group::Arguments);
        }
        Request::Jvp => {
            let parts = rec.seed_parts(Seed::Tangents)?;
            if parts != leaves.len() {
                return Err(RequestError::Shape(format!(
                    "{parts} tangents for {} argument parts",
                    leaves.len()
                ))
                .into());
            }
            let mut pairs = Vec::new();
            for (k, &leaf) in leaves.iter().enumerate() {
                let id = rec.seed_node(Seed::Tangents, k)?;
                check_same(rec.graph(), id, leaf, "a tangent")?;
                pairs.push((leaf, id));
            }
            roots.extend(jvp(rec.graph(), &pairs, outputs, None));
            groups.push(Group::Outputs(outputs.len()));
        }
        Request::Hvp => {
            let output = single_output(rec.graph())?;
            let graph = rec.graph();
            let one = graph.num(1.0);
            let first = ranges.first().cloned().unwrap_or_default();
            let targets: Vec<Id> = first.iter().map(|&i| leaves[i]).collect();
            let gradient = vjp(graph, &[(output, one)], &targets);
            let parts = rec.seed_parts(Seed::Vector)?;
            if parts != targets.len() {
                return Err(RequestError::Shape(
                    "the vector must have the structure of the first argument".into(),
                )
                .into());
            }
            let mut pairs = Vec::new();
            for (k, &target) in targets.iter().enumerate() {
                let id = rec.seed_node(Seed::Vector, k)?;
                check_same(rec.graph(), id, target, "the vector")?;
                pairs.push((target, id));
            }
            roots.extend(jvp(rec.graph(), &pairs, &gradient, None));
            groups.push(Group::Argument(0));
        }
        Request::Hessian => {
            let output = single_output(rec.graph())?;
            let x = single_leaf(ranges, leaves, "hessian")?;
            let x_shape = rec.graph().shape(x).clone();
            check_derivative_rank("hessian", &x_shape, &x_shape)?;
            let graph = rec.graph();
            let one = graph.num(1.0);
            let gradient = vjp(graph, &[(output, one)], &[x]);
            let (n, identity) = rec.identity(x)?;
            let graph = rec.graph();
            let columns = jvp(graph, &[(x, identity)], &gradient, Some(n));
            // [n] ++ shape(x) is shape(x) ++ shape(x) in row-major order.
            let full: Shape = x_shape.iter().chain(x_shape.iter()).copied().collect();
            roots.push(graph.reshape(columns[0], &full));
            groups.push(Group::One);
        }
        Request::JacobianForward => {
            let x = single_leaf(ranges, leaves, "jacobian")?;
            let [output] = outputs else {
                return Err(RequestError::Shape(
                    "jacobian needs a function returning one number or tensor".into(),
                )
                .into());
            };
            let out_shape = rec.graph().shape(*output).clone();
            let x_shape = rec.graph().shape(x).clone();
            check_derivative_rank("jacobian", &out_shape, &x_shape)?;
            let (n, identity) = rec.identity(x)?;
            let graph = rec.graph();
            let columns = jvp(graph, &[(x, identity)], &[*output], Some(n))[0];
            // [n] ++ shape(out) → shape(out) ++ shape(x).
            let rank = out_shape.len() as u8;
            let perm: SmallVec<[u8; 4]> = (1..=rank).chain([0]).collect();
            let moved = graph.add_valid(TOp::Transpose(perm), &[columns]);
            let full: Shape = out_shape.iter().chain(x_shape.iter()).copied().collect();
            roots.push(graph.reshape(moved, &full));
            groups.push(Group::One);
        }
        Request::JvpBatch => {
            let x = single_leaf(ranges, leaves, "sparse-jacobian")?;
            let [output] = outputs else {
                return Err(RequestError::Shape(
                    "sparse-jacobian needs a function returning one number or tensor".into(),
                )
                .into());
            };
            let directions = rec.directions()?;
            roots.push(batched_jvp(rec.graph(), x, *output, directions)?);
            groups.push(Group::One);
        }
        Request::HvpBatch => {
            let output = single_output(rec.graph())?;
            let x = single_leaf(ranges, leaves, "sparse-hessian")?;
            let graph = rec.graph();
            let one = graph.num(1.0);
            let gradient = vjp(graph, &[(output, one)], &[x])[0];
            let directions = rec.directions()?;
            roots.push(batched_jvp(rec.graph(), x, gradient, directions)?);
            groups.push(Group::One);
        }
        Request::Jet { order } => {
            let order = *order;
            let parts = rec.seed_parts(Seed::Series)?;
            // Each leaf's series may stop before `order` (the rest zero).
            let terms = parts / leaves.len().max(1);
            if terms * leaves.len() != parts || terms == 0 || terms > order {
                return Err(RequestError::Shape(format!(
                    "jet: {parts} series terms for {} argument parts of order {order}",
                    leaves.len()
                ))
                .into());
            }
            // Derivatives in, normalized coefficients (x^(k) / k!) inside,
            // derivatives out.
            let scales = derivative_scales(order);
            let mut seeds = Vec::with_capacity(leaves.len());
            for (i, &leaf) in leaves.iter().enumerate() {
                let mut series = Vec::with_capacity(terms);
                for (k, factorial) in scales.iter().enumerate().skip(1).take(terms) {
                    let id = rec.seed_node(Seed::Series, i * terms + k - 1)?;
                    check_same(rec.graph(), id, leaf, "a series term")?;
                    let graph = rec.graph();
                    let scale = graph.num(1.0 / factorial);
                    series.push(graph.mul(scale, id));
                }
                seeds.push((leaf, series));
            }
            let graph = rec.graph();
            for series in taylor(graph, &seeds, outputs, order) {
                for (k, coefficient) in series.into_iter().enumerate() {
                    let scale = graph.num(scales[k + 1]);
                    roots.push(graph.mul(scale, coefficient));
                }
            }
            groups.push(Group::Series {
                outputs: outputs.len(),
                order,
            });
        }
    }
    Ok((roots, groups))
}

/// The products of the batch `directions` (`[p] ++ shape(x)`): `[p] ++
/// shape(output)`.
fn batched_jvp(
    graph: &mut TensorGraph,
    x: Id,
    output: Id,
    directions: Id,
) -> Result<Id, RequestError> {
    let (seed_shape, x_shape) = (graph.shape(directions).clone(), graph.shape(x).clone());
    if seed_shape.len() != x_shape.len() + 1 || seed_shape[1..] != x_shape[..] {
        return Err(RequestError::Shape(format!(
            "a batch of directions has shape [p] ++ {}, this one has shape {}",
            show(&x_shape),
            show(&seed_shape)
        )));
    }
    Ok(jvp(graph, &[(x, directions)], &[output], Some(seed_shape[0]))[0])
}

/// The one leaf of the first argument (dense Hessians and Jacobians are
/// taken with respect to a single number or tensor).
fn single_leaf(ranges: &[Vec<usize>], leaves: &[Id], form: &str) -> Result<Id, RequestError> {
    match ranges.first().map(Vec::as_slice) {
        Some([one]) => Ok(leaves[*one]),
        _ => Err(RequestError::Type(format!(
            "{form} is taken with respect to the first argument, which must be a number or a tensor"
        ))),
    }
}

fn check_same(graph: &TensorGraph, id: Id, like: Id, what: &str) -> Result<(), RequestError> {
    if graph.shape(id) != graph.shape(like) {
        return Err(RequestError::Shape(format!(
            "{what} has shape {}, the argument has shape {}",
            show(graph.shape(id)),
            show(graph.shape(like))
        )));
    }
    Ok(())
}

//! The differentiation driver: traced programs in, numbers out, with no
//! Lisp values in between. It compiles a program with its derivative roots
//! to a tape (or finds the tape compiled before, `tapes`; loop bodies and
//! loops likewise, `loops`), runs it on the
//! chosen backend, decides when a straight-line program serves instead of
//! a tape (`straight`), reads sparsity patterns of derivatives
//! (`patterns`), and traces a non-finite number back to the operation whose derivative
//! made it (`nan_origin`).
//!
//! A Rust program builds a `TensorGraph` (the IR), asks the AD layer for
//! derivative nodes (`ad::vjp`, `ad::jvp`) or for a whole gradient here
//! ([`Driver::value_and_grad`]), and runs it. The Lisp layer traces Lisp
//! functions into such graphs and calls the same driver.
//!
//! **Architecture invariant:** the driver sits between the backends and
//! the Lisp layer: it knows programs, tapes and backends, never Lisp
//! values or the interpreter.

pub mod loops;
pub mod patterns;
pub mod straight;
pub mod tapes;

pub use loops::LoopCache;
pub use patterns::{PatternCache, SparseKind};
pub use tapes::{Compiled, MAX_CACHED_TAPES, TapeCache};

pub use crate::ad::request::RequestError;
use crate::ad::vjp;
use crate::backends::cpu::Buf;
use crate::backends::{self, BackendError};
use crate::egraph::tensor::optimize::TensorLimits;
use crate::ir::{Shape, TOp, TensorGraph};
use egg::Id;
use std::fmt;
use std::rc::Rc;

/// Why a program cannot be differentiated or run.
#[derive(Debug)]
pub enum DriverError {
    /// The request does not fit the program.
    Request(RequestError),
    /// Running the tape failed.
    Backend(BackendError),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Request(e) => write!(f, "{e}"),
            DriverError::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DriverError {}

impl From<RequestError> for DriverError {
    fn from(error: RequestError) -> Self {
        DriverError::Request(error)
    }
}

/// How tapes are made: the optimizer's limits and the memory budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings {
    /// The tensor optimizer's limits (`None`: sharing and folding only).
    pub limits: Option<TensorLimits>,
    /// The most bytes a tape may hold live (`None`: no budget).
    pub budget: Option<usize>,
}

/// The caches of a differentiating program: tapes, loops and sparsity
/// patterns.
#[derive(Default)]
pub struct Driver {
    /// Compiled tapes by program.
    pub tapes: TapeCache,
    /// Optimized loop bodies and compiled loops.
    pub loops: LoopCache,
    /// Sparsity patterns by program.
    pub patterns: PatternCache,
}

impl Driver {
    /// The tape computing `roots` of the program in `graph` (whose inputs
    /// have `input_shapes`), from the cache or compiled now, and whether it
    /// came from the cache.
    pub fn compile(
        &mut self,
        graph: &TensorGraph,
        roots: &[Id],
        input_shapes: &[Shape],
        settings: Settings,
    ) -> (Rc<Compiled>, bool) {
        self.tapes.compiled_for(
            graph.nodes(),
            roots,
            input_shapes,
            settings.budget,
            settings.limits,
        )
    }

    /// Runs `roots` of the program in `graph` on `inputs` (one buffer per
    /// input of the graph, in input order) on the chosen backend.
    pub fn run(
        &mut self,
        graph: &TensorGraph,
        roots: &[Id],
        inputs: &[Buf],
        settings: Settings,
    ) -> Result<Vec<Buf>, DriverError> {
        let shapes: Vec<Shape> = inputs.iter().map(|b| b.shape().into()).collect();
        let (compiled, _) = self.compile(graph, roots, &shapes, settings);
        backends::run(&compiled.tape, inputs).map_err(DriverError::Backend)
    }

    /// The value of the program's one number `output` and its gradient
    /// with respect to the inputs numbered `wrt`, at `inputs`: the reverse
    /// sweep is appended to `graph`, and the program compiled (once per
    /// structure) and run.
    pub fn value_and_grad(
        &mut self,
        graph: &mut TensorGraph,
        output: Id,
        wrt: &[u32],
        inputs: &[Buf],
        settings: Settings,
    ) -> Result<(f64, Vec<Buf>), DriverError> {
        if !graph.shape(output).is_empty() {
            return Err(RequestError::Shape(format!(
                "a gradient needs a program returning a number, this one returns shape {}",
                crate::ir::shape::show(graph.shape(output))
            ))
            .into());
        }
        let mut sources = Vec::with_capacity(wrt.len());
        for &index in wrt {
            let input = graph
                .nodes()
                .iter()
                .position(|n| matches!(n.op, TOp::Input { index: i, .. } if i == index))
                .ok_or_else(|| {
                    RequestError::Range(format!("the program has no input number {index}"))
                })?;
            sources.push(Id::from(input));
        }
        let one = graph.num(1.0);
        let gradients = vjp(graph, &[(output, one)], &sources);
        let roots: Vec<Id> = std::iter::once(output).chain(gradients).collect();
        let mut results = self.run(graph, &roots, inputs, settings)?.into_iter();
        let value = results
            .next()
            .map(|b| b.to_array().iter().copied().next().unwrap_or(f64::NAN))
            .unwrap_or(f64::NAN);
        Ok((value, results.collect()))
    }
}

/// The node a non-finite number came from, followed back from `node`
/// through derivative nodes to the traced operation they differentiate
/// (the first node `recorded` says was recorded from a call), with the
/// pass that made it: `None` the program's own, `Some(true)` the reverse,
/// `Some(false)` the forward-mode pass.
pub fn nan_origin(
    graph: &TensorGraph,
    node: Id,
    recorded: impl Fn(Id) -> bool,
) -> (Id, Option<bool>) {
    let mut origin = node;
    let mut pass: Option<bool> = None;
    while !recorded(origin) {
        match graph.derived_from(origin) {
            Some((primal, reverse)) => {
                pass.get_or_insert(reverse);
                origin = primal;
            }
            None => break,
        }
    }
    (origin, pass)
}

//! Loops on a tape: a `scan`'s body (and, for its reverse, the body's
//! reverse) compiled to sub-tapes, with the checkpoint schedule the
//! reverse follows.

use super::checkpoint::{Schedule, schedule};
use super::{Tape, compile};
use crate::ir::loops::{Body, Scan};
use egg::RecExpr;
use std::sync::OnceLock;

/// A `scan` (or its reverse) ready to run.
#[derive(Debug)]
pub struct LoopTapes {
    /// What the loop is.
    pub spec: Scan,
    /// Whether this runs the loop's reverse (`ScanVjp`).
    pub reverse: bool,
    /// The step.
    pub body: Tape,
    /// The step's reverse (for `reverse`).
    pub adjoint: Option<Tape>,
    /// A `while-loop`'s condition, over the step's inputs.
    pub condition: Option<Tape>,
    /// Under store-all, the step and reverse step rewritten to keep the
    /// step's products rather than recompute them (`residuals`).
    pub residuals: Option<super::residuals::Residuals>,
    /// A number no other `LoopTapes` of this process has (backends key
    /// what they prepare for a loop by it).
    pub id: u64,
    schedule: OnceLock<Schedule>,
}

/// The next `LoopTapes::id`.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl LoopTapes {
    /// Compiles the loop's body (and, for `reverse`, the body's reverse).
    pub fn new(spec: &Scan, reverse: bool) -> LoopTapes {
        let inputs: Vec<_> = (0..spec.body_inputs())
            .map(|i| spec.input_shape(i))
            .collect();
        let body = compile_body(&spec.body, &inputs);
        let mut adjoint_inputs = inputs.clone();
        adjoint_inputs.extend(spec.leaves.iter().chain(&spec.ys).cloned());
        let adjoint_body = reverse.then(|| crate::ad::loops::adjoint(spec));
        let adjoint = adjoint_body
            .as_ref()
            .map(|body| compile_body(body, &adjoint_inputs));
        let store_all = matches!(spec.strategy, crate::tape::checkpoint::Strategy::StoreAll);
        let residuals = adjoint_body
            .as_ref()
            .filter(|_| store_all && spec.condition.is_none() && keep_products())
            .and_then(|adjoint_body| {
                super::residuals::residuals(
                    &spec.body,
                    &inputs,
                    adjoint_body,
                    &adjoint_inputs,
                    spec.captures_from(),
                )
            });
        let condition = spec
            .condition
            .as_ref()
            .map(|condition| compile_body(condition, &inputs));
        LoopTapes {
            spec: spec.clone(),
            reverse,
            body,
            adjoint,
            condition,
            residuals,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            schedule: OnceLock::new(),
        }
    }

    /// The checkpoint schedule of the reverse.
    pub fn schedule(&self) -> &Schedule {
        self.schedule
            .get_or_init(|| schedule(self.spec.n, self.spec.strategy))
    }

    /// Floating-point operations of one run: the steps run forward, and
    /// for the reverse the reversed steps too. A `while-loop`'s number of steps is known only as it runs: its
    /// count is of one step (with its condition, and its reverse).
    pub fn flops(&self) -> u64 {
        if let Some(condition) = &self.condition {
            let reverse = self.adjoint.as_ref().map_or(0, |a| a.stats.flops);
            return self.body.stats.flops + condition.stats.flops + reverse;
        }
        let n = self.spec.n as u64;
        let body = self.body.stats.flops;
        match &self.adjoint {
            None => n * body,
            Some(adjoint) => {
                let forward =
                    (self.spec.n.saturating_sub(1) + self.schedule().recomputed_steps) as u64;
                forward * body + n * adjoint.stats.flops
            }
        }
    }
}

/// Whether store-all loops keep their products (`EPSILON_RESIDUALS=0`
/// turns it off, to compare).
fn keep_products() -> bool {
    static KEEP: OnceLock<bool> = OnceLock::new();
    *KEEP.get_or_init(|| std::env::var("EPSILON_RESIDUALS").map_or(true, |v| v != "0"))
}

fn compile_body(body: &Body, inputs: &[crate::ir::Shape]) -> Tape {
    let program = RecExpr::from(body.nodes.clone());
    compile(&program, &body.shapes, &body.roots, inputs)
}

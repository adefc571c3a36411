//! Loops by program: optimized loop bodies (by the traced step's program)
//! and compiled loops (by the loop), so a loop traced again is neither
//! optimized nor compiled again.

use crate::egraph::tensor::optimize::{TensorLimits, optimize_body};
use crate::ir::TNode;
use crate::ir::loops::{Body, ScanSpec};
use crate::tape::loops::LoopTapes;
use egg::Id;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;

/// Loop bodies and compiled loops kept (each cache is emptied when it grows
/// past this).
const MAX_CACHED_LOOPS: usize = 256;

/// A traced step's program and roots, with its optimized body.
type CachedBody = (Vec<TNode>, Vec<Id>, Body);

/// A loop with its compiled tapes.
type CachedLoop = (Arc<ScanSpec>, Rc<LoopTapes>);

/// The bodies and loops seen so far.
#[derive(Default)]
pub struct LoopCache {
    bodies: FxHashMap<u64, Vec<CachedBody>>,
    compiled: FxHashMap<u64, Vec<CachedLoop>>,
}

impl LoopCache {
    /// `roots` of the step `nodes` optimized as a loop body, from the cache
    /// when this program was seen before.
    pub fn body(&mut self, nodes: &[TNode], roots: &[Id], limits: Option<TensorLimits>) -> Body {
        let mut hasher = FxHasher::default();
        nodes.hash(&mut hasher);
        roots.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(entries) = self.bodies.get(&key)
            && let Some((_, _, body)) = entries
                .iter()
                .find(|(n, r, _)| n[..] == *nodes && r[..] == *roots)
        {
            return body.clone();
        }
        let body = optimize_body(nodes, roots, limits);
        if self.bodies.len() >= MAX_CACHED_LOOPS {
            self.bodies.clear();
        }
        self.bodies
            .entry(key)
            .or_default()
            .push((nodes.to_vec(), roots.to_vec(), body.clone()));
        body
    }

    /// The loop compiled (forward only), from the cache when an equal loop
    /// was compiled.
    pub fn compiled(&mut self, spec: &Arc<ScanSpec>) -> Rc<LoopTapes> {
        let mut hasher = FxHasher::default();
        spec.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(entries) = self.compiled.get(&key)
            && let Some((_, tapes)) = entries.iter().find(|(s, _)| s == spec)
        {
            return Rc::clone(tapes);
        }
        let tapes = Rc::new(LoopTapes::new(spec, false));
        if self.compiled.len() >= MAX_CACHED_LOOPS {
            self.compiled.clear();
        }
        self.compiled
            .entry(key)
            .or_default()
            .push((Arc::clone(spec), Rc::clone(&tapes)));
        tapes
    }
}

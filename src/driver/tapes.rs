//! Compiled tapes by program: a program compiled once is found again by
//! its structure (its nodes up to the roots, the roots, the input shapes
//! and the memory budget), so a function called again on arguments of the
//! same shapes runs its tape without tracing's later stages.

use crate::egraph::tensor::optimize::{TensorLimits, TensorReport, optimize};
use crate::ir::{Shape, TNode};
use crate::tape::{Tape, compile, compile_within};
use egg::Id;
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Compiled tapes kept at most (the oldest is dropped first): a closure
/// over a changing number or a changing static argument compiles a new tape
/// per value.
pub const MAX_CACHED_TAPES: usize = 256;

/// A compiled program and what compiling it found.
pub struct Compiled {
    /// The tape.
    pub tape: Tape,
    /// Nodes of the traced program with its derivatives.
    pub program_nodes: usize,
    /// What the optimizer did.
    pub report: TensorReport,
}

struct CacheEntry {
    nodes: Vec<TNode>,
    roots: Vec<Id>,
    compiled: Rc<Compiled>,
}

/// The tapes compiled so far, by program.
#[derive(Default)]
pub struct TapeCache {
    cache: FxHashMap<u64, Vec<CacheEntry>>,
    /// Keys in the order their entries were made (oldest first), for
    /// eviction past `MAX_CACHED_TAPES`.
    order: VecDeque<u64>,
    /// Requests that found their tape here.
    pub hits: u64,
    /// Requests that compiled a tape.
    pub misses: u64,
}

impl TapeCache {
    /// The tape computing `roots` of the program `nodes` (whose inputs have
    /// `input_shapes`, inputs the roots do not reach included), from the
    /// cache or optimized under `limits` and compiled now (within
    /// `budget` bytes when given); and whether it came from the cache.
    pub fn compiled_for(
        &mut self,
        nodes: &[TNode],
        roots: &[Id],
        input_shapes: &[Shape],
        budget: Option<usize>,
        limits: Option<TensorLimits>,
    ) -> (Rc<Compiled>, bool) {
        let upto = roots.iter().map(|&r| usize::from(r) + 1).max().unwrap_or(0);
        let nodes = &nodes[..upto];
        let mut hasher = FxHasher::default();
        nodes.hash(&mut hasher);
        roots.hash(&mut hasher);
        input_shapes.hash(&mut hasher);
        budget.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(entries) = self.cache.get(&key)
            && let Some(entry) = entries.iter().find(|e| {
                e.roots == roots
                    && e.compiled.tape.stats.memory_budget == budget
                    && e.compiled.tape.input_shapes == input_shapes
                    && e.nodes[..] == *nodes
            })
        {
            self.hits += 1;
            return (Rc::clone(&entry.compiled), true);
        }
        self.misses += 1;
        let optimized = optimize(nodes, roots, limits);
        let tape = match budget {
            None => compile(
                &optimized.expr,
                &optimized.shapes,
                &optimized.roots,
                input_shapes,
            ),
            Some(budget) => compile_within(
                &optimized.expr,
                &optimized.shapes,
                &optimized.roots,
                input_shapes,
                budget,
            ),
        };
        let compiled = Rc::new(Compiled {
            tape,
            program_nodes: upto,
            report: optimized.report,
        });
        if self.order.len() >= MAX_CACHED_TAPES
            && let Some(oldest) = self.order.pop_front()
            && let Some(entries) = self.cache.get_mut(&oldest)
        {
            entries.remove(0);
            if entries.is_empty() {
                self.cache.remove(&oldest);
            }
        }
        self.order.push_back(key);
        self.cache.entry(key).or_default().push(CacheEntry {
            nodes: nodes.to_vec(),
            roots: roots.to_vec(),
            compiled: Rc::clone(&compiled),
        });
        (compiled, false)
    }
}

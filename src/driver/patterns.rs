//! Sparsity patterns of derivatives by program: the non-zero pattern of a
//! Jacobian, or of a Hessian, read from a traced program, with its
//! colouring; the same program asked again finds them here.

use crate::ad::request::RequestError;
use crate::ad::sparse::{Compression, jacobian_pattern};
use crate::ad::vjp;
use crate::ir::shape::show;
use crate::ir::{TNode, TOp, TensorGraph};
use egg::Id;
use rustc_hash::FxHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Which derivative matrix a sparsity pattern is read for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SparseKind {
    /// The Jacobian of the one result.
    Jacobian,
    /// The Hessian of the one number returned: the Jacobian pattern of
    /// its gradient program, made symmetric.
    Hessian,
}

impl SparseKind {
    /// The built-in's name, for messages.
    pub fn form(self) -> &'static str {
        match self {
            SparseKind::Jacobian => "sparse-jacobian",
            SparseKind::Hessian => "sparse-hessian",
        }
    }
}

/// Sparsity entries kept (the oldest dropped first).
const MAX_CACHED_PATTERNS: usize = 16;

/// A pattern and colouring, and the program they were read from (its
/// nodes up to the result, the result, the inputs differentiated and
/// which matrix).
struct Entry {
    key: u64,
    nodes: Vec<TNode>,
    output: Id,
    wrt: Vec<u32>,
    kind: SparseKind,
    compression: Rc<Compression>,
}

/// The patterns read so far.
#[derive(Default)]
pub struct PatternCache {
    entries: VecDeque<Entry>,
}

impl PatternCache {
    /// The pattern and colouring of the `kind` matrix of `output` of the
    /// program in `graph` with respect to the inputs numbered `wrt`
    /// (for a Hessian, exactly one: a number or tensor), refused past
    /// `max_nnz` entries. A Hessian's gradient nodes are appended to
    /// `graph`.
    pub fn pattern(
        &mut self,
        graph: &mut TensorGraph,
        output: Id,
        wrt: &[u32],
        kind: SparseKind,
        max_nnz: usize,
    ) -> Result<Rc<Compression>, RequestError> {
        let form = kind.form();
        let nodes = &graph.nodes()[..=usize::from(output)];
        let mut hasher = FxHasher::default();
        (nodes, output, wrt, kind).hash(&mut hasher);
        let key = hasher.finish();
        if let Some(entry) = self.entries.iter().find(|e| {
            e.key == key
                && e.output == output
                && e.wrt == wrt
                && e.kind == kind
                && e.nodes[..] == *nodes
        }) {
            return Ok(Rc::clone(&entry.compression));
        }
        let nodes = nodes.to_vec();
        let of = match kind {
            SparseKind::Jacobian => output,
            SparseKind::Hessian => {
                if !graph.shape(output).is_empty() {
                    return Err(RequestError::Shape(format!(
                        "sparse-hessian needs a function returning a number, this one returned shape {}",
                        show(graph.shape(output))
                    )));
                }
                let x = graph.nodes().iter().position(
                    |n| matches!(n.op, TOp::Input { index, .. } if wrt.first() == Some(&index)),
                );
                let Some(x) = x.filter(|_| wrt.len() == 1) else {
                    return Err(RequestError::Type(
                        "sparse-hessian is taken with respect to the first argument, which must be a number or a tensor".into(),
                    ));
                };
                let one = graph.num(1.0);
                vjp(graph, &[(output, one)], &[Id::from(x)])[0]
            }
        };
        let pattern = jacobian_pattern(graph.nodes(), graph.shapes(), of, wrt, max_nnz)
            .map_err(|message| RequestError::Range(format!("{form}: {message}")))?;
        let compression = Rc::new(match kind {
            SparseKind::Jacobian => Compression::jacobian(pattern),
            SparseKind::Hessian => Compression::hessian(&pattern)
                .expect("a gradient has x's shape, so its pattern is square"),
        });
        if self.entries.len() >= MAX_CACHED_PATTERNS {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            key,
            nodes,
            output,
            wrt: wrt.to_vec(),
            kind,
            compression: Rc::clone(&compression),
        });
        Ok(compression)
    }
}

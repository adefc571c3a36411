//! What a differentiation request asks of a traced program: the function's
//! value, a gradient, a vector-Jacobian or Jacobian-vector product, a
//! Hessian(-vector) product, a dense Jacobian, or batches of directional
//! derivatives; which sweeps each runs and which arguments it
//! differentiates.

use super::reverse::Modes;

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
            Request::Jvp | Request::JacobianForward | Request::JvpBatch => Modes {
                reverse: false,
                forward: true,
            },
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
            Request::Vjp | Request::Jvp => (0..arity).collect(),
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

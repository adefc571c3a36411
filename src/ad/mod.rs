//! Automatic differentiation of tensor programs: the sweeps that append
//! derivative nodes to a `TensorGraph`, and the program transformations
//! built on them.
//!
//! - `reverse`: the reverse sweep (`vjp`), which modes a request needs
//!   (`Modes`) and why a program cannot be differentiated (`refusal`).
//! - `forward`: the forward sweep (`jvp`), batched over tangents.
//! - `taylor`: Taylor mode, the coefficients of a curve through the
//!   program (`jet`); `collapse`: a sum over a batch of directions pushed
//!   up through the linear operations (the collapsed Laplacian).
//! - `custom_sweep`: calls of functions with their own rules (`defvjp`,
//!   `defjvp`), each rule transposed into the other mode.
//! - `request`: what a differentiation request asks (`Request`).
//! - `loops`: loops' adjoint bodies (a table keyed by the loop), tangent
//!   loops and second-order loops.
//! - `vmap`: batching a program along a new axis.
//! - `sparse`: sparsity patterns of Jacobians and Hessians, and their
//!   colouring and recovery.
//!
//! **Architecture invariant:** the AD layer works on IR programs only. It
//! imports the IR and the tensor optimizer (loop bodies are optimized
//! after differentiation), never tapes, backends or the Lisp layer.

pub mod collapse;
pub mod custom_sweep;
pub mod forward;
pub mod loops;
pub mod request;
pub mod reverse;
pub mod sparse;
pub mod taylor;
pub mod taylor_loop;
pub mod vmap;

pub use forward::jvp;
pub use reverse::vjp;

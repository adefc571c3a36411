//! Unit tests that span the layers, inside the crate for its private
//! items: the CUDA executor on the simulated device against the CPU, its
//! device programs, and straight-line programs against tapes.

#[cfg(feature = "cuda")]
mod device_linalg;
#[cfg(feature = "cuda")]
mod device_programs;
#[cfg(feature = "cuda")]
mod simulated_device;
mod straight_line;

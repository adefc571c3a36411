//! Data files without the Lisp layer: whole files written atomically and
//! read with their size checked (`files`), NumPy's `.npy` arrays of any
//! number kind (`npy`), CSV tables (`table`) and parameter trees as `.npz`
//! or JSON (`tree`). The Lisp built-ins (`read-file`, `load-npy`,
//! `read-csv`, `save`, `load-tree`) turn these into values.

pub mod files;
pub mod npy;
pub mod npz;
pub mod table;
pub mod tree;

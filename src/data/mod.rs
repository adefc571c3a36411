//! Data files without the Lisp layer: CSV tables (`table`) and parameter
//! trees as `.npz` or JSON (`tree`). The Lisp built-ins (`read-csv`,
//! `save`, `load-tree`) turn these into values.

pub mod table;
pub mod tree;

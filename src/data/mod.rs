//! Data files without the Lisp layer: CSV tables (`table`). The Lisp
//! built-ins (`read-csv`, `save`, `load-tree`) turn these into values.

pub mod table;

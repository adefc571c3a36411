//! Sparse derivatives (issue 19, item 3): the non-zero pattern of a
//! Jacobian or Hessian, the colourings that compress it, and the recovery
//! of its entries from the compressed products.
//!
//! A Jacobian whose columns split into groups that share no row (one
//! colour each) is recovered from one forward pass per group: the sum of a
//! group's columns, `J s`, holds each of their entries in its own row.
//! Columns are coloured greedily, distance-1 on the graph of columns that
//! share a row (`column_colouring`); a symmetric Hessian needs fewer
//! colours by a star colouring of its adjacency graph (`star_colouring`,
//! after Gebremedhin, Manne and Pothen, "What color is your Jacobian?",
//! SIAM Review 2005), whose entries come back from one Hessian-vector
//! product per colour (`recover_symmetric`).
//!
//! Patterns are read from a tensor program (`jacobian_pattern`, over the
//! nodes of `egraph::tensor`); nothing here knows about Lisp or tapes.
//! Compressed products come in as dense rows.

mod colouring;
mod detect;
mod loops;
mod pattern;

pub use colouring::{
    Colouring, column_colouring, is_column_colouring, is_star_colouring, star_colouring,
};
pub use detect::jacobian_pattern;
pub use pattern::{Pattern, PatternError};

/// A pattern with the colouring that compresses it: what a sparse
/// derivative needs before its products run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compression {
    /// Which entries may be non-zero.
    pub pattern: Pattern,
    /// The colours of its columns.
    pub colouring: Colouring,
}

impl Compression {
    /// A Jacobian's: columns coloured distance-1.
    pub fn jacobian(pattern: Pattern) -> Compression {
        let colouring = column_colouring(&pattern);
        Compression { pattern, colouring }
    }

    /// A Hessian's: the pattern made symmetric, star-coloured. `None` for
    /// a pattern that is not square.
    pub fn hessian(pattern: &Pattern) -> Option<Compression> {
        let pattern = pattern.symmetrized()?;
        let colouring = star_colouring(&pattern)?;
        Some(Compression { pattern, colouring })
    }
}

/// The entries of a sparse matrix, row-major: `(rows, cols, values)` of
/// each non-zero of its pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Triplets {
    /// Each entry's row.
    pub rows: Vec<usize>,
    /// Each entry's column.
    pub cols: Vec<usize>,
    /// Each entry's value.
    pub values: Vec<f64>,
}

impl Triplets {
    /// No entries yet, room for `n`.
    pub fn with_capacity(n: usize) -> Triplets {
        Triplets {
            rows: Vec::with_capacity(n),
            cols: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
        }
    }

    /// Appends the entry `(row, col)`.
    pub fn push(&mut self, row: usize, col: usize, value: f64) {
        self.rows.push(row);
        self.cols.push(col);
        self.values.push(value);
    }
}

/// The entries of a matrix with `pattern` from its compressed columns
/// `compressed[i * count + c]` (row `i` of `J S`, `S` the colouring's seed
/// matrix with `count` columns, row-major): each entry is read where its
/// column's colour put it.
pub fn recover_columns(pattern: &Pattern, colouring: &Colouring, compressed: &[f64]) -> Triplets {
    let count = colouring.count;
    let mut out = Triplets::with_capacity(pattern.nnz());
    for (i, row) in pattern.rows().enumerate() {
        for &j in row {
            out.push(i, j, compressed[i * count + colouring.colours[j]]);
        }
    }
    out
}

/// The entries of a symmetric matrix with `pattern` (its diagonal
/// included where non-zero) from `compressed[i * count + c]`, row `i` of
/// `H S` (row-major) under a star colouring with `count` colours: an
/// off-diagonal entry `(i, j)` is read in row `i` where `j` is the only
/// neighbour of `i` with its colour, else in row `j` (a star colouring
/// makes one of the two hold).
pub fn recover_symmetric(pattern: &Pattern, colouring: &Colouring, compressed: &[f64]) -> Triplets {
    let colours = &colouring.colours;
    let count = colouring.count;
    // How many neighbours of `i` have colour `c` (the diagonal left out).
    let unique = |i: usize, c: usize| {
        pattern
            .row(i)
            .iter()
            .filter(|&&k| k != i && colours[k] == c)
            .count()
            == 1
    };
    let mut out = Triplets::with_capacity(pattern.nnz());
    for (i, row) in pattern.rows().enumerate() {
        for &j in row {
            let value = if i == j || unique(i, colours[j]) {
                compressed[i * count + colours[j]]
            } else {
                compressed[j * count + colours[i]]
            };
            out.push(i, j, value);
        }
    }
    out
}

#[cfg(test)]
mod tests;

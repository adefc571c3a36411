//! The non-zero pattern of a matrix: for each row, its columns.

use std::fmt;

/// Which entries of a `rows` x `cols` matrix may be non-zero: each row's
/// column indices, sorted, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    cols: usize,
    row_cols: Vec<Vec<usize>>,
}

/// A pattern that names a column out of range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    /// The row naming it.
    pub row: usize,
    /// The column named.
    pub col: usize,
    /// The matrix's number of columns.
    pub cols: usize,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "row {} names column {} of a matrix with {} columns",
            self.row, self.col, self.cols
        )
    }
}

impl std::error::Error for PatternError {}

impl Pattern {
    /// The pattern with `row_cols[i]` the columns of row `i` (in any
    /// order, repeats allowed); an error names a column out of range.
    pub fn new(cols: usize, row_cols: Vec<Vec<usize>>) -> Result<Pattern, PatternError> {
        let mut row_cols = row_cols;
        for (row, columns) in row_cols.iter_mut().enumerate() {
            if let Some(&col) = columns.iter().find(|&&c| c >= cols) {
                return Err(PatternError { row, col, cols });
            }
            columns.sort_unstable();
            columns.dedup();
        }
        Ok(Pattern { cols, row_cols })
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.row_cols.len()
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.cols
    }

    /// The columns of row `i`.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.row_cols[i]
    }

    /// Each row's columns, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[usize]> {
        self.row_cols.iter().map(Vec::as_slice)
    }

    /// The number of entries that may be non-zero.
    pub fn nnz(&self) -> usize {
        self.row_cols.iter().map(Vec::len).sum()
    }

    /// The most entries in one row: no column colouring has fewer colours.
    pub fn max_row_degree(&self) -> usize {
        self.row_cols.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The pattern of the transpose: each column's rows.
    pub fn transpose(&self) -> Pattern {
        let mut col_rows = vec![Vec::new(); self.cols];
        for (i, row) in self.row_cols.iter().enumerate() {
            for &j in row {
                col_rows[j].push(i);
            }
        }
        Pattern {
            cols: self.row_cols.len(),
            row_cols: col_rows,
        }
    }

    /// Whether the pattern is square and symmetric.
    pub fn is_symmetric(&self) -> bool {
        self.cols == self.row_cols.len() && self.transpose() == *self
    }
}

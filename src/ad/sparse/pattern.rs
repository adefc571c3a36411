//! The non-zero pattern of a matrix: for each row, its columns.

use std::fmt;

/// Which entries of a `rows` x `cols` matrix may be non-zero: each row's
/// column indices, sorted, without repeats, one row after another (row
/// `i`'s are `columns[offsets[i]..offsets[i + 1]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    cols: usize,
    offsets: Vec<usize>,
    columns: Vec<usize>,
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
        let mut offsets = Vec::with_capacity(row_cols.len() + 1);
        offsets.push(0);
        let mut columns = Vec::new();
        for (row, mut these) in row_cols.into_iter().enumerate() {
            these.sort_unstable();
            these.dedup();
            if let Some(&col) = these.last().filter(|&&c| c >= cols) {
                return Err(PatternError { row, col, cols });
            }
            columns.extend_from_slice(&these);
            offsets.push(columns.len());
        }
        Ok(Pattern {
            cols,
            offsets,
            columns,
        })
    }

    /// The pattern of `rows` rows whose columns `row_columns(i, into)`
    /// appends (sorted, distinct, below `cols`: the caller's promise).
    pub(crate) fn from_rows(
        cols: usize,
        rows: usize,
        mut row_columns: impl FnMut(usize, &mut Vec<usize>),
    ) -> Pattern {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        let mut columns = Vec::new();
        for i in 0..rows {
            row_columns(i, &mut columns);
            offsets.push(columns.len());
        }
        Pattern {
            cols,
            offsets,
            columns,
        }
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.cols
    }

    /// The columns of row `i`.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.columns[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Each row's columns, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[usize]> {
        self.offsets.windows(2).map(|w| &self.columns[w[0]..w[1]])
    }

    /// The number of entries that may be non-zero.
    pub fn nnz(&self) -> usize {
        self.columns.len()
    }

    /// The most entries in one row: no column colouring has fewer colours.
    pub fn max_row_degree(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// The pattern of the transpose: each column's rows.
    pub fn transpose(&self) -> Pattern {
        let mut counts = vec![0usize; self.cols + 1];
        for &j in &self.columns {
            counts[j + 1] += 1;
        }
        for j in 0..self.cols {
            counts[j + 1] += counts[j];
        }
        let offsets = counts.clone();
        let mut next = counts;
        let mut columns = vec![0usize; self.columns.len()];
        for (i, row) in self.rows().enumerate() {
            for &j in row {
                columns[next[j]] = i;
                next[j] += 1;
            }
        }
        Pattern {
            cols: self.nrows(),
            offsets,
            columns,
        }
    }

    /// The union of a square pattern and its transpose (`None` where it is
    /// not square): a Hessian's pattern read one-sidedly made symmetric.
    pub fn symmetrized(&self) -> Option<Pattern> {
        if self.cols != self.nrows() {
            return None;
        }
        let transposed = self.transpose();
        let mut merged = Vec::new();
        Some(Pattern::from_rows(self.cols, self.nrows(), |i, into| {
            merged.clear();
            merged.extend_from_slice(self.row(i));
            merged.extend_from_slice(transposed.row(i));
            merged.sort_unstable();
            merged.dedup();
            into.extend_from_slice(&merged);
        }))
    }

    /// Whether the pattern is square and symmetric.
    pub fn is_symmetric(&self) -> bool {
        self.cols == self.nrows() && self.transpose() == *self
    }
}

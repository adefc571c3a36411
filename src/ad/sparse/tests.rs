//! The colourings against their definitions (checked by brute force on
//! random patterns), their counts against the bounds, and the entries
//! recovered from compressed products against the matrices themselves.

use super::*;
use proptest::prelude::*;

/// A tridiagonal pattern of order `n`.
fn tridiagonal(n: usize) -> Pattern {
    let rows = (0..n)
        .map(|i| (i.saturating_sub(1)..(i + 2).min(n)).collect())
        .collect();
    Pattern::new(n, rows).expect("in range")
}

/// `A S`: each row of the `rows` x `cols` matrix given by its triplets,
/// summed over each colour's columns.
fn compress(entries: &[(usize, usize, f64)], rows: usize, colouring: &Colouring) -> Vec<f64> {
    let mut out = vec![0.0; colouring.count * rows];
    for &(i, j, v) in entries {
        out[i * colouring.count + colouring.colours[j]] += v;
    }
    out
}

fn triplets_of(entries: &[(usize, usize, f64)]) -> Triplets {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|&(i, j, _)| (i, j));
    Triplets {
        rows: sorted.iter().map(|e| e.0).collect(),
        cols: sorted.iter().map(|e| e.1).collect(),
        values: sorted.iter().map(|e| e.2).collect(),
    }
}

#[test]
fn a_tridiagonal_jacobian_needs_three_colours() {
    let pattern = tridiagonal(1000);
    let colouring = column_colouring(&pattern);
    assert!(is_column_colouring(&pattern, &colouring));
    assert_eq!(colouring.count, 3);
    assert_eq!(colouring.groups().iter().map(Vec::len).sum::<usize>(), 1000);
}

#[test]
fn an_arrow_hessian_needs_two_star_colours_where_its_columns_need_all() {
    // The first row and column full, the diagonal: columns all share row 0.
    let n = 50;
    let rows = (0..n)
        .map(|i| if i == 0 { (0..n).collect() } else { vec![0, i] })
        .collect();
    let pattern = Pattern::new(n, rows).expect("in range");
    assert_eq!(column_colouring(&pattern).count, n);
    let star = star_colouring(&pattern).expect("symmetric");
    assert!(is_star_colouring(&pattern, &star));
    assert_eq!(star.count, 2);
}

#[test]
fn bad_patterns_are_refused() {
    let error = Pattern::new(3, vec![vec![0, 3]]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "row 0 names column 3 of a matrix with 3 columns"
    );
    let lower = Pattern::new(2, vec![vec![0], vec![0, 1]]).expect("in range");
    assert!(star_colouring(&lower).is_none());
}

#[test]
fn the_star_check_finds_a_two_coloured_path() {
    // The path 0 - 1 - 2 - 3 coloured a b a b is not a star colouring.
    let rows = vec![vec![1], vec![0, 2], vec![1, 3], vec![2]];
    let pattern = Pattern::new(4, rows).expect("in range");
    let two = Colouring {
        colours: vec![0, 1, 0, 1],
        count: 2,
    };
    assert!(!is_star_colouring(&pattern, &two));
    let three = Colouring {
        colours: vec![0, 1, 2, 0],
        count: 3,
    };
    assert!(is_star_colouring(&pattern, &three));
}

/// A random sparse `rows` x `cols` matrix: (row, col, value) entries.
fn sparse_matrix() -> impl Strategy<Value = (usize, usize, Vec<(usize, usize, f64)>)> {
    (1usize..30, 1usize..30).prop_flat_map(|(rows, cols)| {
        let entry = (0..rows, 0..cols, -2.0f64..2.0);
        (Just(rows), Just(cols), prop::collection::vec(entry, 0..80))
    })
}

/// A random sparse symmetric matrix of order `n`, its diagonal full.
fn symmetric_matrix() -> impl Strategy<Value = (usize, Vec<(usize, usize, f64)>)> {
    (1usize..30).prop_flat_map(|n| {
        let entry = (0..n, 0..n, -2.0f64..2.0);
        (Just(n), prop::collection::vec(entry, 0..60)).prop_map(|(n, upper)| {
            let mut all: std::collections::BTreeMap<(usize, usize), f64> =
                (0..n).map(|i| ((i, i), 1.0 + i as f64)).collect();
            for (i, j, v) in upper {
                all.insert((i, j), v);
                all.insert((j, i), v);
            }
            (n, all.into_iter().map(|((i, j), v)| (i, j, v)).collect())
        })
    })
}

fn pattern_of(rows: usize, cols: usize, entries: &[(usize, usize, f64)]) -> Pattern {
    let mut row_cols = vec![Vec::new(); rows];
    for &(i, j, _) in entries {
        row_cols[i].push(j);
    }
    Pattern::new(cols, row_cols).expect("in range")
}

/// Entries at one position summed (the random matrices repeat some).
fn merged(entries: &[(usize, usize, f64)]) -> Vec<(usize, usize, f64)> {
    let mut all: std::collections::BTreeMap<(usize, usize), f64> = Default::default();
    for &(i, j, v) in entries {
        *all.entry((i, j)).or_default() += v;
    }
    all.into_iter().map(|((i, j), v)| (i, j, v)).collect()
}

#[test]
fn a_one_sided_pattern_is_made_symmetric() {
    // An upper bidiagonal pattern becomes tridiagonal; a rectangular one
    // has no symmetric form.
    let upper = Pattern::new(4, vec![vec![0, 1], vec![1, 2], vec![2, 3], vec![3]]).unwrap();
    let both = upper.symmetrized().unwrap();
    assert!(both.is_symmetric());
    assert_eq!(both, tridiagonal(4));
    let compression = Compression::hessian(&upper).unwrap();
    assert!(is_star_colouring(
        &compression.pattern,
        &compression.colouring
    ));
    assert_eq!(compression.colouring.count, 3);
    let wide = Pattern::new(3, vec![vec![0, 2]]).unwrap();
    assert!(wide.symmetrized().is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn column_colourings_are_proper_and_recover_the_matrix((rows, cols, entries) in sparse_matrix()) {
        let entries = merged(&entries);
        let pattern = pattern_of(rows, cols, &entries);
        let colouring = column_colouring(&pattern);
        prop_assert!(is_column_colouring(&pattern, &colouring));
        prop_assert!(colouring.count >= pattern.max_row_degree());
        // Greedy never needs more than one more than a column's conflicts.
        let by_column = pattern.transpose();
        let most_conflicts = (0..cols)
            .map(|j| {
                let mut others: Vec<usize> = by_column
                    .row(j)
                    .iter()
                    .flat_map(|&i| pattern.row(i).iter().copied())
                    .filter(|&k| k != j)
                    .collect();
                others.sort_unstable();
                others.dedup();
                others.len()
            })
            .max()
            .unwrap_or(0);
        prop_assert!(colouring.count <= most_conflicts + 1);
        let compressed = compress(&entries, rows, &colouring);
        prop_assert_eq!(recover_columns(&pattern, &colouring, &compressed), triplets_of(&entries));
    }

    #[test]
    fn star_colourings_are_stars_and_recover_the_hessian((n, entries) in symmetric_matrix()) {
        let pattern = pattern_of(n, n, &entries);
        let colouring = star_colouring(&pattern).expect("symmetric");
        prop_assert!(is_star_colouring(&pattern, &colouring));
        // Greedy refuses at most the colours within distance two.
        let degree = (0..n).map(|v| pattern.row(v).iter().filter(|&&w| w != v).count()).max().unwrap_or(0);
        prop_assert!(colouring.count <= degree * degree + 1);
        let compressed = compress(&entries, n, &colouring);
        prop_assert_eq!(recover_symmetric(&pattern, &colouring, &compressed), triplets_of(&entries));
    }
}

mod detected {
    use super::super::jacobian_pattern;
    use crate::ir::math::language::Math;
    use crate::ir::{CmpOp, ReduceOp, TOp, TensorGraph};
    use egg::Id;

    fn any() -> [Id; 2] {
        [Id::from(0usize); 2]
    }

    fn pattern_rows(graph: &TensorGraph, output: Id, wrt: &[u32]) -> Vec<Vec<usize>> {
        let pattern = jacobian_pattern(graph.nodes(), graph.shapes(), output, wrt, 1_000_000)
            .expect("within the limit");
        pattern.rows().map(<[usize]>::to_vec).collect()
    }

    #[test]
    fn a_periodic_stencil_is_cyclic_tridiagonal() {
        let n = 7;
        let mut g = TensorGraph::new();
        let u = g.input(0, &[n], crate::dtype::DType::F64);
        let left = g.add_valid(TOp::Roll { axis: 0, shift: 1 }, &[u]);
        let right = g.add_valid(
            TOp::Roll {
                axis: 0,
                shift: n - 1,
            },
            &[u],
        );
        let two = g.num(-2.0);
        let centre = g.map(Math::Mul(any()), &[two, u]);
        let square = g.map(Math::Mul(any()), &[u, u]);
        let sides = g.map(Math::Add(any()), &[left, right]);
        let lap = g.map(Math::Add(any()), &[sides, centre]);
        let r = g.map(Math::Add(any()), &[lap, square]);
        let rows = pattern_rows(&g, r, &[0]);
        for (i, row) in rows.iter().enumerate() {
            let mut want = vec![(i + n - 1) % n, i, (i + 1) % n];
            want.sort_unstable();
            assert_eq!(row, &want, "row {i}");
        }
    }

    #[test]
    fn slices_selections_and_reductions_keep_positions() {
        let n = 6;
        let mut g = TensorGraph::new();
        let u = g.input(0, &[n], crate::dtype::DType::F64);
        // u[1:] - u[:-1]: row i reads i and i + 1.
        let ahead = g.add_valid(
            TOp::Slice {
                axis: 0,
                start: 1,
                end: n,
            },
            &[u],
        );
        let behind = g.add_valid(
            TOp::Slice {
                axis: 0,
                start: 0,
                end: n - 1,
            },
            &[u],
        );
        let diff = g.map(Math::Sub(any()), &[ahead, behind]);
        let rows = pattern_rows(&g, diff, &[0]);
        assert_eq!(rows, (0..n - 1).map(|i| vec![i, i + 1]).collect::<Vec<_>>());
        // where(u > 0, u * u, 0): the condition has no derivative.
        let zero = g.num(0.0);
        let positive = g.add_valid(TOp::Compare(CmpOp::Gt), &[u, zero]);
        let square = g.map(Math::Mul(any()), &[u, u]);
        let picked = g.add_valid(TOp::Where, &[positive, square, zero]);
        assert_eq!(
            pattern_rows(&g, picked, &[0]),
            (0..n).map(|i| vec![i]).collect::<Vec<_>>()
        );
        // The row sums of a 2 x 3 matrix.
        let m = g.input(1, &[2, 3], crate::dtype::DType::F64);
        let sums = g.add_valid(
            TOp::Reduce {
                op: ReduceOp::Sum,
                axes: [1u8].into_iter().collect(),
                keepdims: false,
            },
            &[m],
        );
        assert_eq!(
            pattern_rows(&g, sums, &[1]),
            vec![vec![0, 1, 2], vec![3, 4, 5]]
        );
        // Columns run over both inputs: u's first, then m's.
        let total = g.add_valid(
            TOp::Reduce {
                op: ReduceOp::Sum,
                axes: [0u8, 1].into_iter().collect(),
                keepdims: false,
            },
            &[m],
        );
        let scaled = g.map(Math::Mul(any()), &[u, total]);
        let rows = pattern_rows(&g, scaled, &[0, 1]);
        assert_eq!(rows[2], vec![2, 6, 7, 8, 9, 10, 11]);
    }

    #[test]
    fn products_join_rows_and_columns_and_large_patterns_are_refused() {
        let mut g = TensorGraph::new();
        let w = g.input(1, &[3, 4], crate::dtype::DType::F64);
        let x = g.input(0, &[4], crate::dtype::DType::F64);
        // W x with W constant: every row reads all of x.
        let wx = g.add_valid(TOp::MatMul, &[w, x]);
        assert_eq!(pattern_rows(&g, wx, &[0]), vec![vec![0, 1, 2, 3]; 3]);
        // Differentiated in W: row i reads row i of W.
        assert_eq!(
            pattern_rows(&g, wx, &[1]),
            (0..3)
                .map(|i| (4 * i..4 * i + 4).collect::<Vec<usize>>())
                .collect::<Vec<_>>()
        );
        let error = jacobian_pattern(g.nodes(), g.shapes(), wx, &[0], 5).unwrap_err();
        assert!(error.contains("more than 5 non-zeros"), "{error}");
    }
}

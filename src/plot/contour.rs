//! Marching squares: the iso-lines of a grid of samples at one level, as
//! line segments in grid coordinates (x is the column index, y the row
//! index). Each square of four neighbouring samples is classified by which
//! corners lie at or above the level; the line crosses the edges between
//! a corner above and one below, at the linearly interpolated point. The
//! two ambiguous "saddle" squares are resolved by the mean of the four
//! corners. A square with a non-finite corner gets no line.

/// A point in grid coordinates: (column, row).
pub type Point = (f64, f64);

/// A piece of an iso-line.
pub type Segment = (Point, Point);

/// The edges of a square, where a line may cross it.
#[derive(Clone, Copy)]
enum Edge {
    Bottom,
    Right,
    Top,
    Left,
}

/// Which edges the line crosses for each case (bit 0: bottom-left corner
/// above, 1: bottom-right, 2: top-right, 3: top-left); saddles (5 and 10)
/// are handled apart.
const CASES: [&[(Edge, Edge)]; 16] = {
    use Edge::*;
    [
        &[],
        &[(Left, Bottom)],
        &[(Bottom, Right)],
        &[(Left, Right)],
        &[(Right, Top)],
        &[],
        &[(Bottom, Top)],
        &[(Left, Top)],
        &[(Left, Top)],
        &[(Bottom, Top)],
        &[],
        &[(Right, Top)],
        &[(Left, Right)],
        &[(Bottom, Right)],
        &[(Left, Bottom)],
        &[],
    ]
};

/// The segments of the iso-line at `level` of the `rows` × `cols` grid
/// `values` (row-major; row 0 is y = 0).
pub fn segments(values: &[f64], rows: usize, cols: usize, level: f64) -> Vec<Segment> {
    debug_assert_eq!(
        values.len(),
        rows * cols,
        "the grid holds rows * cols values"
    );
    let at = |r: usize, c: usize| values[r * cols + c];
    let mut out = Vec::new();
    for r in 0..rows.saturating_sub(1) {
        for c in 0..cols.saturating_sub(1) {
            let corners = [at(r, c), at(r, c + 1), at(r + 1, c + 1), at(r + 1, c)];
            if corners.iter().any(|v| !v.is_finite()) {
                continue;
            }
            let [a, b, cc, d] = corners;
            let case = corners
                .iter()
                .enumerate()
                .fold(0, |bits, (k, &v)| bits | (usize::from(v >= level) << k));
            let point = |edge: Edge| -> Point {
                let cross = |from: f64, to: f64| (level - from) / (to - from);
                let (x, y) = (c as f64, r as f64);
                match edge {
                    Edge::Bottom => (x + cross(a, b), y),
                    Edge::Right => (x + 1.0, y + cross(b, cc)),
                    Edge::Top => (x + cross(d, cc), y + 1.0),
                    Edge::Left => (x, y + cross(a, d)),
                }
            };
            let center_above = (a + b + cc + d) / 4.0 >= level;
            let pairs: &[(Edge, Edge)] = match (case, center_above) {
                // Corners a and c above: joined through an upper centre,
                // the line cuts off b and d; otherwise it cuts off a and c.
                (5, true) | (10, false) => &[(Edge::Bottom, Edge::Right), (Edge::Left, Edge::Top)],
                (5, false) | (10, true) => &[(Edge::Left, Edge::Bottom), (Edge::Right, Edge::Top)],
                _ => CASES[case],
            };
            out.extend(pairs.iter().map(|&(from, to)| (point(from), point(to))));
        }
    }
    out
}

/// `n` levels evenly spaced strictly between `lo` and `hi` (a line at
/// either end would be a lone point); none when the span is empty.
pub fn even_levels(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if lo.is_nan() || hi.is_nan() || hi <= lo {
        return Vec::new();
    }
    (1..=n)
        .map(|k| lo + (hi - lo) * (k as f64 / (n + 1) as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segments with each one's ends in order and the list sorted, so sets
    /// of segments compare equal whatever order they were found in.
    fn normalized(mut segments: Vec<Segment>) -> Vec<Segment> {
        for s in &mut segments {
            if s.1 < s.0 {
                *s = (s.1, s.0);
            }
        }
        segments.sort_by(|p, q| p.partial_cmp(q).expect("finite points"));
        segments
    }

    #[test]
    fn a_peak_is_circled_by_a_diamond() {
        let grid = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
        let found = normalized(segments(&grid, 3, 3, 0.5));
        let expected = normalized(vec![
            ((1.0, 0.5), (0.5, 1.0)),
            ((1.0, 0.5), (1.5, 1.0)),
            ((0.5, 1.0), (1.0, 1.5)),
            ((1.5, 1.0), (1.0, 1.5)),
        ]);
        assert_eq!(found, expected);
    }

    #[test]
    fn a_ramp_gives_a_straight_line_at_the_interpolated_place() {
        // Values equal to the column index: the line x = 1.25 crosses both
        // rows of squares.
        let grid: Vec<f64> = (0..12).map(|k| (k % 4) as f64).collect();
        let found = normalized(segments(&grid, 3, 4, 1.25));
        assert_eq!(
            found,
            vec![((1.25, 0.0), (1.25, 1.0)), ((1.25, 1.0), (1.25, 2.0))]
        );
    }

    #[test]
    fn saddles_follow_the_centre() {
        // Bottom-left and top-right high: the mean (0.5) is at the level,
        // counted above, so the high corners are joined.
        let grid = [1.0, 0.0, 0.0, 1.0];
        let found = normalized(segments(&grid, 2, 2, 0.5));
        assert_eq!(
            found,
            normalized(vec![((0.5, 0.0), (1.0, 0.5)), ((0.0, 0.5), (0.5, 1.0))])
        );
        // Higher level: the centre is below and the high corners are cut off.
        let grid = [1.0, 0.0, 0.2, 1.0];
        let found = segments(&grid, 2, 2, 0.6);
        assert_eq!(found.len(), 2);
        let near_corner = |(p, q): &Segment, corner: Point| {
            [p, q]
                .iter()
                .all(|(x, y)| (x - corner.0).abs() <= 0.5 && (y - corner.1).abs() <= 0.5)
        };
        assert!(found.iter().any(|s| near_corner(s, (0.0, 0.0))));
        assert!(found.iter().any(|s| near_corner(s, (1.0, 1.0))));
    }

    #[test]
    fn squares_with_a_nan_corner_and_flat_grids_give_no_lines() {
        let grid = [0.0, 1.0, f64::NAN, 1.0];
        assert!(segments(&grid, 2, 2, 0.5).is_empty());
        assert!(segments(&[2.0; 9], 3, 3, 2.0).is_empty());
        assert!(segments(&[0.0, 1.0], 1, 2, 0.5).is_empty());
    }

    #[test]
    fn even_levels_skip_the_ends() {
        assert_eq!(even_levels(0.0, 4.0, 3), vec![1.0, 2.0, 3.0]);
        assert!(even_levels(1.0, 1.0, 5).is_empty());
    }
}

//! Histograms: values counted into equal-width bins by NumPy's rules, and
//! the bars drawn from them. Bins are half-open, `[edge_k, edge_k+1)`,
//! except the last, which also holds its right edge; values outside the
//! range and non-finite values are left out. The default range runs from
//! the smallest to the largest finite value (widened by 0.5 either way when
//! those are equal).

use super::axis::Axis;
use super::chart::{Frame, PlotError};
use super::frame::{AxisRange, cartesian};
use super::render::COLORS;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Counts of values per bin.
#[derive(Clone, Debug, PartialEq)]
pub struct Bins {
    /// The bin edges, one more than the bins, increasing.
    pub edges: Vec<f64>,
    /// How many values fell in each bin.
    pub counts: Vec<u64>,
}

impl Bins {
    /// Counts the finite values of `data` into `n_bins` equal bins over
    /// `range` (default: the data's finite extent).
    pub fn new(data: &[f64], n_bins: usize, range: Option<(f64, f64)>) -> Result<Bins, PlotError> {
        if n_bins == 0 {
            return Err(PlotError::data("a histogram needs at least 1 bin"));
        }
        if data.is_empty() {
            return Err(PlotError::data("the data is empty: nothing to plot"));
        }
        let (lo, hi) = match range {
            Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo < hi => (lo, hi),
            Some((lo, hi)) => {
                return Err(PlotError::data(format!(
                    "the range must be two finite numbers, the lower first, got ({lo} {hi})"
                )));
            }
            None => finite_extent(data)
                .ok_or_else(|| PlotError::data("nothing to plot: the data has no finite value"))?,
        };
        let edges: Vec<f64> = (0..=n_bins)
            .map(|k| {
                let t = k as f64 / n_bins as f64;
                // Interpolated without hi - lo, which may overflow.
                if k == n_bins {
                    hi
                } else {
                    lo * (1.0 - t) + hi * t
                }
            })
            .collect();
        let mut counts = vec![0u64; n_bins];
        let half_span = hi * 0.5 - lo * 0.5;
        for &v in data {
            if !(v.is_finite() && lo <= v && v <= hi) {
                continue;
            }
            let guess = ((v * 0.5 - lo * 0.5) / half_span * n_bins as f64) as usize;
            let mut k = guess.min(n_bins - 1);
            // Rounding may put the guess one bin off: the edges decide.
            while k > 0 && v < edges[k] {
                k -= 1;
            }
            while k + 1 < n_bins && v >= edges[k + 1] {
                k += 1;
            }
            counts[k] += 1;
        }
        Ok(Bins { edges, counts })
    }

    /// Each bin's count divided by the total count and the bin's width,
    /// so the bars' area is 1 (all zero when no value was counted).
    pub fn densities(&self) -> Vec<f64> {
        let total: u64 = self.counts.iter().sum();
        self.counts
            .iter()
            .zip(self.edges.windows(2))
            .map(|(&count, edge)| {
                let width = edge[1] - edge[0];
                if total == 0 || width <= 0.0 {
                    0.0
                } else {
                    count as f64 / total as f64 / width
                }
            })
            .collect()
    }
}

/// The smallest and largest finite values, widened when equal.
fn finite_extent(data: &[f64]) -> Option<(f64, f64)> {
    let (lo, hi) = data
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return None;
    }
    if lo < hi {
        return Some((lo, hi));
    }
    let (below, above) = (lo - 0.5, lo + 0.5);
    if below < above {
        Some((below, above))
    } else {
        // Too large for ±0.5 to change it.
        let half = lo.abs() * 1e-9;
        Some((lo - half, lo + half))
    }
}

/// A histogram chart.
pub struct HistogramChart {
    pub bins: Bins,
    /// Bars of density (area 1) instead of counts.
    pub density: bool,
}

impl HistogramChart {
    /// Draws the bars on `area`.
    pub fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        frame: &Frame,
    ) -> Result<(), PlotError> {
        let heights: Vec<f64> = if self.density {
            self.bins.densities()
        } else {
            self.bins.counts.iter().map(|&c| c as f64).collect()
        };
        let (lo, hi) = (
            self.bins.edges[0],
            self.bins.edges[self.bins.edges.len() - 1],
        );
        let x = Axis::for_values(false, &[lo, hi]);
        let tallest = heights.iter().copied().fold(0.0f64, f64::max);
        let y = Axis::linear(tallest);
        let top = if tallest > 0.0 { tallest * 1.05 } else { 1.0 };
        let mut context = cartesian(
            area,
            frame,
            &AxisRange {
                axis: x,
                range: x.padded_range(lo, hi, "x")?,
            },
            &AxisRange {
                axis: y,
                range: y.exact_range(0.0, top, "y")?,
            },
            true,
        )?;
        let bars = self
            .bins
            .edges
            .windows(2)
            .zip(&heights)
            .filter(|&(_, &h)| h > 0.0)
            .map(|(edge, &h)| {
                Rectangle::new(
                    [
                        (x.position(edge[0]), 0.0),
                        (x.position(edge[1]), y.position(h)),
                    ],
                    COLORS[0].filled(),
                )
            });
        context.draw_series(bars).map_err(PlotError::drawing)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_on_an_inner_edge_go_right_and_on_the_last_edge_go_left() {
        let bins = Bins::new(&[0.0, 1.0, 1.0, 2.0, 3.0, 4.0], 4, None).unwrap();
        assert_eq!(bins.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        // NumPy: np.histogram([0, 1, 1, 2, 3, 4], bins=4) counts [1, 2, 1, 2].
        assert_eq!(bins.counts, vec![1, 2, 1, 2]);
    }

    #[test]
    fn edges_decide_where_rounding_would_not() {
        // Each value lands in the bin whose edges hold it, whatever the
        // rounding of the first guess: values on edges (k / 10, computed
        // the way the edges are) and near them (0.1 * k, 1 / 3, ...).
        let mut values: Vec<f64> = (0..=10).map(|k| k as f64 / 10.0).collect();
        values.extend((0..=10).map(|k| 0.1 * k as f64).filter(|&v| v <= 1.0));
        values.extend((0..=3).map(|k| k as f64 / 3.0));
        for v in values {
            let bins = Bins::new(&[v], 10, Some((0.0, 1.0))).unwrap();
            let k = bins.counts.iter().position(|&c| c == 1).expect("counted");
            let (lo, hi) = (bins.edges[k], bins.edges[k + 1]);
            assert!(lo <= v && (v < hi || k == 9 && v == 1.0), "{v} in bin {k}");
        }
        let bins = Bins::new(&[0.3, 0.7, 1.0, 0.0], 10, Some((0.0, 1.0))).unwrap();
        assert_eq!(bins.counts, vec![1, 0, 0, 1, 0, 0, 0, 1, 0, 1]);
    }

    #[test]
    fn non_finite_and_out_of_range_values_are_left_out() {
        let data = [f64::NAN, 0.5, f64::INFINITY, 1.5, -7.0, f64::NEG_INFINITY];
        let bins = Bins::new(&data, 2, Some((0.0, 2.0))).unwrap();
        assert_eq!(bins.counts, vec![1, 1]);
        let bins = Bins::new(&data, 1, None).unwrap();
        assert_eq!(bins.edges, vec![-7.0, 1.5]);
        assert_eq!(bins.counts, vec![3]);
    }

    #[test]
    fn equal_values_get_a_unit_range_like_numpy() {
        let bins = Bins::new(&[2.0, 2.0], 2, None).unwrap();
        assert_eq!(bins.edges, vec![1.5, 2.0, 2.5]);
        assert_eq!(bins.counts, vec![0, 2]);
        let huge = Bins::new(&[1e300], 1, None).unwrap();
        assert!(huge.edges[0] < 1e300 && huge.edges[1] > 1e300);
        assert_eq!(huge.counts, vec![1]);
    }

    #[test]
    fn densities_integrate_to_one() {
        let bins = Bins::new(&[0.0, 0.1, 0.2, 3.0], 4, Some((0.0, 4.0))).unwrap();
        let densities = bins.densities();
        assert_eq!(densities, vec![0.75, 0.0, 0.0, 0.25]);
        let area: f64 = densities.iter().sum::<f64>() * 1.0;
        assert!((area - 1.0).abs() < 1e-12);
    }

    #[test]
    fn huge_ranges_do_not_overflow() {
        let bins = Bins::new(&[-1.7e308, 0.0, 1.7e308], 2, None).unwrap();
        assert!(bins.edges.iter().all(|e| e.is_finite()));
        assert_eq!(bins.counts, vec![1, 2]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(Bins::new(&[1.0], 0, None).is_err());
        assert!(Bins::new(&[], 3, None).is_err());
        assert!(Bins::new(&[f64::NAN], 3, None).is_err());
        assert!(Bins::new(&[1.0], 3, Some((2.0, 1.0))).is_err());
        assert!(Bins::new(&[1.0], 3, Some((0.0, f64::INFINITY))).is_err());
    }
}

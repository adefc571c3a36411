//! One axis: where a value sits on it (itself, its log10 on a log axis, or
//! itself in units of a power of ten when all values are tiny), its range
//! with a margin, where its ticks go, and short, distinct tick labels. (Log axes are drawn as
//! linear axes of decades with 10^t tick labels: plotters' own log axis
//! drops ticks under 2.2e-16 and never finishes its tick search past ~300
//! decades. plotters' linear tick search fails on spans far below 1, hence
//! the scale.)

use super::chart::PlotError;
use plotters::coord::ranged1d::{BoldPoints, LightPoints, Ranged};
use plotters::coord::types::RangedCoordf64;
use std::ops::Range;

/// Most tick labels an axis gets.
pub const MAX_TICKS: usize = 10;

/// How values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// A logarithmic axis: positions are log10 of the values.
    pub log: bool,
    /// A power of ten linear values are divided by before layout.
    pub scale: f64,
}

impl Axis {
    /// A linear axis for values of largest magnitude `largest`.
    pub fn linear(largest: f64) -> Axis {
        Axis {
            log: false,
            scale: layout_scale(largest),
        }
    }

    /// A logarithmic axis.
    pub fn log() -> Axis {
        Axis {
            log: true,
            scale: 1.0,
        }
    }

    /// A linear axis, or a log one when `log`, for `values`.
    pub fn for_values<'a>(log: bool, values: impl IntoIterator<Item = &'a f64>) -> Axis {
        if log {
            return Axis::log();
        }
        let largest = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        Axis::linear(largest)
    }

    /// Whether `v` can be drawn: finite, and positive on a log axis.
    pub fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// Where `v` sits on the axis.
    pub fn position(&self, v: f64) -> f64 {
        if self.log { v.log10() } else { v / self.scale }
    }

    /// The label of the tick at position `t` on an axis spanning `span`
    /// positions.
    pub fn tick(&self, t: f64, span: f64) -> String {
        if !self.log {
            return tick_label(t * self.scale, span * self.scale);
        }
        let v = 10f64.powf(t);
        if v > 0.0 && v.is_finite() {
            // Labelled to its own magnitude; on an axis narrower than about
            // half a decade, to the spacing of values between ticks.
            tick_label(v, v * (span * std::f64::consts::LN_10).min(1.0))
        } else {
            format!("1e{}", trim_zeros(&format!("{t:.2}")))
        }
    }

    /// The tick positions over `range` (labelled, with a grid line each
    /// when there are grid lines) and the positions of light grid lines.
    /// A log axis of two or more decades has a tick at each decade
    /// (thinned to at most [`MAX_TICKS`]); a narrower one has ticks where
    /// matplotlib's log locator puts them, at 1, 2 and 5 times powers of
    /// ten (every whole multiple of a power of ten under half a decade),
    /// with light lines at the others, and, where fewer than two of those
    /// fall in the range (a fraction of a decade), evenly spaced round
    /// values as on a linear axis.
    pub fn key_points(&self, range: &Range<f64>) -> (Vec<f64>, Vec<f64>) {
        let span = range.end - range.start;
        let linear = |range: Range<f64>| {
            let count = self.tick_count(span);
            let coordinate = RangedCoordf64::from(range);
            (
                coordinate.key_points(BoldPoints(count)),
                coordinate.key_points(LightPoints::new(count, count * MAX_TICKS)),
            )
        };
        if !self.log || span >= 2.0 {
            return linear(range.clone());
        }
        let multiples: &[f64] = if span >= 0.5 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        };
        let every = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let ticks = decade_multiples(range, multiples);
        if ticks.len() >= 2 {
            let light = decade_multiples(range, &every)
                .into_iter()
                .filter(|t| !ticks.contains(t))
                .collect();
            return (ticks, light);
        }
        // Round values evenly spaced between the ends, at their positions
        // (laid out in a power of ten when tiny, as a linear axis is).
        let (lo, hi) = (10f64.powf(range.start), 10f64.powf(range.end));
        let scale = layout_scale(hi);
        let (values, _) = Axis::linear(1.0).key_points(&(lo / scale..hi / scale));
        let ticks = values
            .into_iter()
            .map(|v| v * scale)
            .filter(|v| *v > 0.0)
            .map(f64::log10)
            .filter(|t| range.contains(t))
            .collect();
        (ticks, Vec::new())
    }

    /// How many ticks to ask for: whole decades on a log axis of two or
    /// more decades.
    pub fn tick_count(&self, span: f64) -> usize {
        let decades = span.floor() as usize;
        if self.log && decades >= 2 {
            (decades + 1).min(MAX_TICKS)
        } else {
            MAX_TICKS
        }
    }

    /// The positions from the lowest to the highest drawn value, padded
    /// (see [`padded`]); `what` names the axis in the error.
    pub fn padded_range(&self, lo: f64, hi: f64, what: &str) -> Result<Range<f64>, PlotError> {
        padded(self.position(lo), self.position(hi)).ok_or_else(|| too_wide(what))
    }

    /// The positions from `lo` to `hi` exactly (a span too small to lay
    /// out is widened as by [`padded`]).
    pub fn exact_range(&self, lo: f64, hi: f64, what: &str) -> Result<Range<f64>, PlotError> {
        let (lo, hi) = (self.position(lo), self.position(hi));
        if hi - lo > lo.abs().max(hi.abs()) * 1e-10 && (hi - lo).is_finite() {
            Ok(lo..hi)
        } else {
            padded(lo, hi).ok_or_else(|| too_wide(what))
        }
    }
}

/// The positions (log10) of `multiples` of each power of ten that lie in
/// `range`, in order.
fn decade_multiples(range: &Range<f64>, multiples: &[f64]) -> Vec<f64> {
    let first = range.start.floor() as i32;
    let last = range.end.ceil() as i32;
    (first..=last)
        .flat_map(|k| multiples.iter().map(move |m| m.log10() + f64::from(k)))
        // A whisker of rounding off an end keeps an end tick.
        .filter(|t| *t >= range.start - 1e-12 && *t <= range.end + 1e-12)
        .collect()
}

/// The error for values whose span does not fit in a float.
pub fn too_wide(axis: &str) -> PlotError {
    PlotError::data(format!(
        "the {axis} values are too large in magnitude to lay out an axis"
    ))
}

/// The power of ten to lay out linear values of largest magnitude
/// `magnitude` in: 1 unless they are all tiny.
fn layout_scale(magnitude: f64) -> f64 {
    if magnitude > 0.0 && magnitude < 1e-8 {
        10f64.powi(magnitude.log10().floor() as i32)
    } else {
        1.0
    }
}

/// `lo..hi` widened by 5% on each side; a single value, or a span under
/// 1e-10 of the values' magnitude (which plotters' tick search cannot
/// resolve), gets ±10% of its magnitude, or ±1 at zero. `None` when the
/// result does not fit in finite floats.
pub fn padded(lo: f64, hi: f64) -> Option<Range<f64>> {
    let span = hi - lo;
    let magnitude = lo.abs().max(hi.abs());
    let (lo, hi) = if span <= magnitude * 1e-10 {
        let center = lo / 2.0 + hi / 2.0;
        let half = if center == 0.0 {
            1.0
        } else {
            center.abs() * 0.1
        };
        (center - half, center + half)
    } else {
        (lo - span * 0.05, hi + span * 0.05)
    };
    (lo.is_finite() && hi.is_finite() && (hi - lo).is_finite() && lo < hi).then_some(lo..hi)
}

/// A tick label for `v` on an axis spanning `span`: as many decimals as
/// tell ticks apart, trailing zeros dropped, scientific notation outside
/// [1e-4, 1e6), and "0" for zero (no "-0.0" from rounding).
pub fn tick_label(v: f64, span: f64) -> String {
    let magnitude = v.abs();
    if magnitude <= span * 1e-9 || magnitude == 0.0 {
        return "0".to_string();
    }
    let step_digits = (-span.log10()).ceil() as i32 + 2;
    if !(1e-4..1e6).contains(&magnitude) {
        let digits = (magnitude.log10().floor() as i32 + step_digits).clamp(0, 15) as usize;
        let text = format!("{v:.digits$e}");
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
            None => text,
        };
    }
    let decimals = step_digits.clamp(0, 15) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// "2.50" → "2.5", "3.000" → "3".
fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_widens_ranges_and_handles_single_values() {
        let r = padded(0.0, 10.0).unwrap();
        assert_eq!((r.start, r.end), (-0.5, 10.5));
        let r = padded(5.0, 5.0).unwrap();
        assert_eq!((r.start, r.end), (4.5, 5.5));
        let r = padded(0.0, 0.0).unwrap();
        assert_eq!((r.start, r.end), (-1.0, 1.0));
        assert!(padded(-f64::MAX, f64::MAX).is_none());
        assert!(padded(f64::MAX, f64::MAX).is_none());
    }

    #[test]
    fn exact_ranges_keep_their_ends() {
        let axis = Axis::linear(2.0);
        let r = axis.exact_range(-2.0, 2.0, "x").unwrap();
        assert_eq!((r.start, r.end), (-2.0, 2.0));
        let r = axis.exact_range(3.0, 3.0, "x").unwrap();
        assert!(r.start < 3.0 && r.end > 3.0);
    }

    #[test]
    fn log_axes_take_positive_values_only() {
        let axis = Axis::log();
        assert!(axis.accepts(1e-300) && !axis.accepts(0.0) && !axis.accepts(-1.0));
        assert_eq!(axis.position(1000.0), 3.0);
        assert_eq!(axis.tick(-2.0, 6.0), "0.01");
        assert_eq!(axis.tick_count(6.2), 7);
        assert!(!Axis::linear(1.0).accepts(f64::NAN));
    }

    #[test]
    fn tiny_values_are_laid_out_in_a_power_of_ten() {
        let axis = Axis::for_values(false, &[1e-20, 3e-20]);
        assert_eq!(axis.scale, 1e-20);
        assert!((axis.position(3e-20) - 3.0).abs() < 1e-12);
        assert_eq!(axis.tick(2.0, 2.0), "2e-20");
        assert_eq!(Axis::for_values(false, &[0.5, f64::NAN]).scale, 1.0);
    }

    #[test]
    fn tick_labels_are_short_and_distinct() {
        assert_eq!(tick_label(-0.0, 2.0), "0");
        assert_eq!(tick_label(1e-17, 2.0), "0");
        assert_eq!(tick_label(0.30000000000000004, 2.0), "0.3");
        assert_eq!(tick_label(0.25, 1.1), "0.25");
        assert_eq!(tick_label(2.0, 10.0), "2");
        assert_eq!(tick_label(10000.0, 10000.0), "10000");
        assert_eq!(tick_label(1.0000000002, 2e-9), "1.0000000002");
        assert_eq!(tick_label(1e6, 1e6), "1e6");
        assert_eq!(tick_label(2.5e-5, 2.5e-5), "2.5e-5");
        assert_eq!(tick_label(0.1, 0.1), "0.1");
        assert_eq!(tick_label(-3.5e7, 1e8), "-3.5e7");
    }
}

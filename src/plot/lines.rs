//! Line and scatter charts: each series drawn as a line, as markers or as
//! both, with an optional error band (a translucent area between a lower
//! and an upper curve) and a legend. Points with a coordinate an axis
//! cannot show (non-finite, or not positive on a log axis) are skipped: a
//! line breaks there, and so does a band.

use super::axis::Axis;
use super::chart::{Frame, PlotError};
use super::frame::{AxisRange, cartesian, label_font};
use super::render::COLORS;
use plotters::chart::SeriesAnno;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Style {
    /// A line through the points (a lone point as a dot).
    Line,
    /// A marker at each point.
    Scatter,
    /// Both.
    Both,
}

impl Style {
    /// The style a name ("line", "scatter", "both") gives.
    pub fn parse(name: &str) -> Option<Style> {
        match name {
            "line" => Some(Style::Line),
            "scatter" => Some(Style::Scatter),
            "both" => Some(Style::Both),
            _ => None,
        }
    }
}

/// One series: its legend label, its points, how it is drawn and its band.
pub struct Series {
    pub label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub style: Style,
    /// The lower and upper edge of an error band, one value per point.
    pub band: Option<(Vec<f64>, Vec<f64>)>,
}

/// A chart of series.
pub struct LineChart {
    pub series: Vec<Series>,
    /// Whether to draw a legend of the series' labels.
    pub legend: bool,
    pub log_x: bool,
    pub log_y: bool,
}

/// Marker radius in pixels.
const MARKER: i32 = 3;

impl LineChart {
    /// The two axes, scaled for the values drawn on them.
    fn axes(&self) -> (Axis, Axis) {
        let x = Axis::for_values(self.log_x, self.series.iter().flat_map(|s| &s.xs));
        let y = Axis::for_values(
            self.log_y,
            self.series.iter().flat_map(|s| {
                let band = s.band.iter().flat_map(|(lo, hi)| lo.iter().chain(hi));
                s.ys.iter().chain(band)
            }),
        );
        (x, y)
    }

    /// The axis ranges: the drawn points and bands with a 5% margin (on a
    /// log axis, 5% of the decades spanned).
    fn ranges(&self, x: &Axis, y: &Axis) -> Result<(Range<f64>, Range<f64>), PlotError> {
        let mut x_bounds = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y_bounds = (f64::INFINITY, f64::NEG_INFINITY);
        let mut take = |px: f64, py: f64| {
            x_bounds = (x_bounds.0.min(px), x_bounds.1.max(px));
            y_bounds = (y_bounds.0.min(py), y_bounds.1.max(py));
        };
        for series in &self.series {
            for (&px, &py) in series.xs.iter().zip(&series.ys) {
                if x.accepts(px) && y.accepts(py) {
                    take(px, py);
                }
            }
            for (px, lo, hi) in band_points(series) {
                if x.accepts(px) && y.accepts(lo) && y.accepts(hi) {
                    take(px, lo);
                    take(px, hi);
                }
            }
        }
        if x_bounds.0 > x_bounds.1 {
            return Err(PlotError::data(match (self.log_x, self.log_y) {
                (false, false) => "nothing to plot: no point has finite x and y values",
                (false, true) => {
                    "nothing to plot: no point has a finite x and a positive finite y (:log-y skips y <= 0)"
                }
                (true, false) => {
                    "nothing to plot: no point has a positive finite x and a finite y (:log-x skips x <= 0)"
                }
                (true, true) => {
                    "nothing to plot: no point has positive finite x and y values (:log-x and :log-y skip values <= 0)"
                }
            }));
        }
        Ok((
            x.padded_range(x_bounds.0, x_bounds.1, "x")?,
            y.padded_range(y_bounds.0, y_bounds.1, "y")?,
        ))
    }

    /// Draws the chart on `area`.
    pub fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        frame: &Frame,
    ) -> Result<(), PlotError> {
        let (x, y) = self.axes();
        let (x_range, y_range) = self.ranges(&x, &y)?;
        let mut context = cartesian(
            area,
            frame,
            &AxisRange {
                axis: x,
                range: x_range,
            },
            &AxisRange {
                axis: y,
                range: y_range,
            },
            true,
        )?;
        // Bands first, so that every line lies on top of every band.
        for (index, series) in self.series.iter().enumerate() {
            let color = COLORS[index % COLORS.len()];
            for run in runs(band_points(series), |&(px, lo, hi)| {
                x.accepts(px) && y.accepts(lo) && y.accepts(hi)
            }) {
                if run.len() < 2 {
                    continue;
                }
                let upper = run
                    .iter()
                    .map(|&(px, _, hi)| (x.position(px), y.position(hi)));
                let lower = run
                    .iter()
                    .rev()
                    .map(|&(px, lo, _)| (x.position(px), y.position(lo)));
                let outline: Vec<(f64, f64)> = upper.chain(lower).collect();
                context
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        color.mix(0.25).filled(),
                    )))
                    .map_err(PlotError::drawing)?;
            }
        }
        for (index, series) in self.series.iter().enumerate() {
            let color = COLORS[index % COLORS.len()];
            let points = series.xs.iter().copied().zip(series.ys.iter().copied());
            let mut labelled = false;
            for run in runs(points, |&(px, py)| x.accepts(px) && y.accepts(py)) {
                let run: Vec<(f64, f64)> = run
                    .into_iter()
                    .map(|(px, py)| (x.position(px), y.position(py)))
                    .collect();
                let line = series.style != Style::Scatter && run.len() > 1;
                let markers = series.style != Style::Line || run.len() == 1;
                if line {
                    let annotation = context
                        .draw_series(LineSeries::new(run.clone(), color.stroke_width(2)))
                        .map_err(PlotError::drawing)?;
                    if self.legend && !labelled {
                        labelled = true;
                        add_legend(annotation, series, color);
                    }
                }
                if markers {
                    let circles = run.iter().map(|&p| Circle::new(p, MARKER, color.filled()));
                    let annotation = context.draw_series(circles).map_err(PlotError::drawing)?;
                    if self.legend && !labelled {
                        labelled = true;
                        add_legend(annotation, series, color);
                    }
                }
            }
        }
        if self.legend {
            context
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .label_font(label_font())
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(PlotError::drawing)?;
        }
        Ok(())
    }
}

/// Labels the first thing drawn of `series` in the legend, with a sample
/// of its style.
fn add_legend<'a, DB: DrawingBackend + 'a>(
    annotation: &mut SeriesAnno<'a, DB>,
    series: &Series,
    color: RGBColor,
) {
    let annotation = annotation.label(series.label.as_str());
    match series.style {
        Style::Line => annotation.legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
        }),
        Style::Scatter => {
            annotation.legend(move |(x, y)| Circle::new((x + 10, y), MARKER, color.filled()))
        }
        Style::Both => annotation.legend(move |(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (20, 0)], color.stroke_width(2))
                + Circle::new((10, 0), MARKER, color.filled())
        }),
    };
}

/// The band of `series` as (x, lower, upper) triples (none without one).
fn band_points(series: &Series) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
    series.band.iter().flat_map(|(lo, hi)| {
        series
            .xs
            .iter()
            .zip(lo.iter().zip(hi))
            .map(|(&px, (&l, &h))| (px, l, h))
    })
}

/// The runs of consecutive items that `drawn` keeps.
fn runs<T>(items: impl Iterator<Item = T>, drawn: impl Fn(&T) -> bool) -> Vec<Vec<T>> {
    let mut runs: Vec<Vec<T>> = vec![Vec::new()];
    for item in items {
        if drawn(&item) {
            runs.last_mut().expect("runs starts non-empty").push(item);
        } else if runs.last().is_some_and(|run| !run.is_empty()) {
            runs.push(Vec::new());
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_break_at_skipped_points() {
        let values = [1.0, f64::NAN, 2.0, 3.0, f64::NAN, f64::NAN, 4.0];
        let runs = runs(values.iter().copied(), |v| v.is_finite());
        assert_eq!(runs, vec![vec![1.0], vec![2.0, 3.0], vec![4.0]]);
    }

    #[test]
    fn styles_have_names() {
        assert_eq!(Style::parse("scatter"), Some(Style::Scatter));
        assert_eq!(Style::parse("both"), Some(Style::Both));
        assert_eq!(Style::parse("dots"), None);
    }

    #[test]
    fn bands_widen_the_vertical_range() {
        let chart = LineChart {
            series: vec![Series {
                label: String::new(),
                xs: vec![0.0, 1.0],
                ys: vec![0.0, 1.0],
                style: Style::Line,
                band: Some((vec![-10.0, 0.0], vec![1.0, 10.0])),
            }],
            legend: false,
            log_x: false,
            log_y: false,
        };
        let (x, y) = chart.axes();
        let (_, y_range) = chart.ranges(&x, &y).unwrap();
        assert_eq!((y_range.start, y_range.end), (-11.0, 11.0));
    }
}
